// The playground's benchmark: 100,000 mixed keys, string in, slots out,
// the Zaris batch call against npm's cluster-key-slot (what ioredis uses),
// and where the time goes. Loaded on the first click, with its peer.

import { $ } from './dom.js';

const textEncoder = new TextEncoder();
const BENCH_KEYS = 100_000;
const BENCH_RUNS = 5;

/** Reads every character of `text` once, as cheaply as JS can (four
 * independent chains): the least any string-in approach pays. */
function readEveryCharacter(text) {
  let a = 0, b = 0, c = 0, d = 0;
  const whole = text.length & ~3;
  for (let i = 0; i < whole; i += 4) {
    a ^= text.charCodeAt(i); b ^= text.charCodeAt(i + 1);
    c ^= text.charCodeAt(i + 2); d ^= text.charCodeAt(i + 3);
  }
  for (let i = whole; i < text.length; i++) a ^= text.charCodeAt(i);
  return a ^ b ^ c ^ d;
}

/** The peer the benchmark runs against, loaded when it first runs: it is
 * not part of the page's download. */
let clusterKeySlot = null;

/** Lets the page paint (the progress bar) between two timed steps. */
const breathe = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Runs the benchmark into the page: `page` lends the playground's own
 * functions (sample keys, the batch path into wasm, HTML escaping). */
export async function runBenchmark({ sampleKeys, slotsOfText, textIntoWasm, batchSlots, escapeHtml }) {
  const button = $('bench-run');
  const progress = $('bench-progress');
  button.disabled = true;
  progress.hidden = false;
  clusterKeySlot ??= (await import('./vendor/cluster-key-slot.js')).default;
  const keys = sampleKeys(BENCH_KEYS, 7);
  const text = keys.join('\n');
  const peerSlots = (list) => {
    const out = new Uint16Array(list.length);
    for (let i = 0; i < list.length; i++) out[i] = clusterKeySlot(list[i]);
    return out;
  };
  let bytes = 0;
  // Each step is timed alone, best of BENCH_RUNS; the page breathes
  // between runs, so it never freezes for the whole benchmark.
  const steps = [
    ['Zaris, text in', () => slotsOfText(text)],
    ['cluster-key-slot, text in', () => peerSlots(text.split('\n'))],
    ['moving the text into wasm', () => { bytes = textIntoWasm(text); return bytes; }],
    ['hashing in wasm', () => batchSlots(bytes)],
    ['TextEncoder.encodeInto', () => textIntoWasm(text, (t, view) => textEncoder.encodeInto(t, view).written)],
    ['reading every character', () => readEveryCharacter(text)],
    ['Zaris, array in', () => slotsOfText(keys.join('\n'))],
    ['cluster-key-slot, array in', () => peerSlots(keys)],
  ];
  progress.max = steps.length * BENCH_RUNS;
  progress.value = 0;
  const best = [];
  const outs = [];
  for (const [name, f] of steps) {
    let fastest = Infinity;
    for (let run = 0; run < BENCH_RUNS; run++) {
      $('bench-step').textContent = `${name}, run ${run + 1} of ${BENCH_RUNS}`;
      await breathe();
      const t0 = performance.now();
      outs[best.length] = f();
      fastest = Math.min(fastest, performance.now() - t0);
      progress.value += 1;
    }
    best.push(fastest);
  }
  const [ours, theirs, moving, hashing, platform, floor, oursArray, theirsArray] = best;
  const [slots, peer] = outs;
  progress.hidden = true;
  button.disabled = false;
  $('bench-step').textContent = '';
  const differ = [];
  for (let i = 0; i < keys.length; i++) if (slots[i] !== peer[i]) differ.push(i);
  // JSON.stringify writes a lone surrogate as its \uXXXX escape (ES2019's
  // well-formed stringify), so no key shows as an empty box.
  const shown = differ.slice(0, 20).map((i) => `<li><code>${escapeHtml(JSON.stringify(keys[i]))}</code>:
    Zaris ${slots[i]}, cluster-key-slot ${peer[i]}</li>`).join('');
  $('bench-out').innerHTML = `
    <p><strong>Newline-separated text in</strong>: Zaris <span id="bench-zaris">${ours.toFixed(2)}</span> ms ·
       cluster-key-slot <span id="bench-peer">${theirs.toFixed(2)}</span> ms ·
       Zaris is <span id="bench-ratio">${(theirs / ours).toFixed(1)}</span>× faster.</p>
    <p><strong>Array of strings in</strong> (Zaris joins them first): Zaris ${oursArray.toFixed(2)} ms ·
       cluster-key-slot ${theirsArray.toFixed(2)} ms · ${(theirsArray / oursArray).toFixed(1)}×.</p>
    <p><strong>Where the time goes</strong>: moving the text into wasm memory as UTF-8
       <span id="bench-moving">${moving.toFixed(2)}</span> ms (with <code>TextEncoder.encodeInto</code>:
       <span id="bench-platform">${platform.toFixed(2)}</span> ms), hashing it there
       <span id="bench-hashing">${hashing.toFixed(2)}</span> ms. Only reading every character once in JS
       takes <span id="bench-floor">${floor.toFixed(2)}</span> ms: even with hashing free, a string-in
       approach could beat cluster-key-slot by <span id="bench-ceiling">${(theirs / floor).toFixed(1)}</span>× at most here.</p>
    <p class="hint">Best of ${BENCH_RUNS} runs, ${keys.length.toLocaleString('en')} keys, ${(text.length / 1e6).toFixed(1)} M characters.
       Keys are shown as JSON; a lone surrogate (a key cut inside a pair) shows as its <code>\\uXXXX</code> escape.</p>
    <p><span id="bench-differ">${differ.length}</span> keys differ${differ.length ? ' (the first 20)' : ''}:</p>
    <ul class="differ">${shown}</ul>`;
}

