// The playground's page logic. Every slot, tag span, segment, route and
// retry decision comes from the Zaris core (wasm); this file only moves text
// in and draws what comes back.
import init, * as zaris from './pkg/zaris_wasm.js';
import { encodeUtf8Into } from './utf8.js';
import { $ } from './dom.js';
import { colours, drawBand, drawDensity } from './slots.js';

const SAMPLE_KEYS = 10_000;
/** Busiest node above this multiple of the mean share is flagged as skew. */
const SKEW_RATIO = 1.25;

let map = null;
let nodes = [];
/** Where the key, the command's keys and a picked slot land: marks on the band. */
const marks = { key: [], cmd: [], pick: [] };
/** The last analysis's keys per slot, for the density strip. */
let perSlotOfKeys = null;
let picked = null;
let wasm = null;

let batch = null;

/** Slots of newline-separated keys: the text is encoded straight into a
 * reused buffer in wasm memory (one pass), then hashed in one call. */
function slotsOfText(text) {
  const bytes = textIntoWasm(text);
  return batch.slots(bytes);
}

/** Encodes `text` as UTF-8 into the batch buffer in wasm memory; its length.
 * `encode` is the encoder: ours by default, or the platform's to compare. */
function textIntoWasm(text, encode = encodeUtf8Into) {
  const need = text.length * 3; // UTF-8 never needs more per UTF-16 unit
  if (!batch || batch.capacity() < need) {
    batch?.free();
    batch = new zaris.KeyBatch(need);
  }
  return encode(text, new Uint8Array(wasm.memory.buffer, batch.ptr(), need));
}

/** A JS string as its UTF-16 code units, for the core's UTF-16 path. */
function toUnits(text) {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
  return units;
}

function parseHex(text) {
  const digits = text.replace(/\s+/g, '');
  if (!/^[0-9a-fA-F]*$/.test(digits)) throw new Error('hex keys use only 0-9 and a-f');
  if (digits.length % 2) throw new Error('hex keys need an even number of digits');
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** "1 key", "2 keys": a count with its noun, singular or plural. */
function count(n, singular, plural = `${singular}s`) {
  return `${n.toLocaleString('en')} ${n === 1 ? singular : plural}`;
}

function showError(id, error) {
  const el = $(id);
  el.hidden = !error;
  el.textContent = error ? String(error.message ?? error) : '';
}

function lines(text) {
  const all = text.split(/\r?\n/);
  if (all.length && all[all.length - 1] === '') all.pop();
  return all;
}

function ownerText(slot) {
  const owner = map.ownerOfSlot(slot);
  if (owner < 0) return 'no node serves this slot';
  const node = nodes[owner];
  return `#${owner} ${node.id.slice(0, 8)} ${node.addr}`;
}

// ---- one key ---------------------------------------------------------------

function updateKey() {
  const raw = $('key').value;
  const segments = Number($('segments').value) || 1;
  let slot;
  let marked;
  let hashed;
  try {
    if ($('key-hex').checked) {
      const bytes = parseHex(raw);
      slot = zaris.slotForBytes(bytes);
      const span = zaris.hashTagSpanBytes(bytes);
      const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0'));
      marked = span
        ? `${hex.slice(0, span[0]).join(' ')} <mark>${hex.slice(span[0], span[1]).join(' ')}</mark> ${hex.slice(span[1]).join(' ')}`
        : `<mark>${hex.join(' ')}</mark>`;
      hashed = span ? `bytes ${span[0]}..${span[1]} (hash tag)` : `all ${bytes.length} bytes`;
    } else {
      const units = toUnits(raw);
      slot = zaris.slotForUtf16(units);
      const span = zaris.hashTagSpanUtf16(units);
      marked = span
        ? `${escapeHtml(raw.slice(0, span[0]))}<mark>${escapeHtml(raw.slice(span[0], span[1]))}</mark>${escapeHtml(raw.slice(span[1]))}`
        : `<mark>${escapeHtml(raw)}</mark>`;
      hashed = span ? `“${raw.slice(span[0], span[1])}” (hash tag)` : 'the whole key';
    }
    showError('key-error', null);
  } catch (error) {
    showError('key-error', error);
    for (const id of ['slot', 'segment', 'hashed', 'owner']) $(id).textContent = '–';
    $('key-marked').textContent = '';
    return;
  }
  const empty = $('key-hex').checked ? parseHex(raw).length === 0 : raw.length === 0;
  $('key-marked').innerHTML = empty ? '<em>(empty key: it hashes to slot 0)</em>' : marked;
  $('slot').textContent = String(slot);
  $('segment').textContent = `${zaris.segmentForSlot(slot, segments)} of ${Math.min(Math.max(segments, 1), 16384)}`;
  $('hashed').textContent = hashed;
  $('owner').textContent = ownerText(slot);
  marks.key = [{ slot, kind: 'key', short: 'key', label: `the key: slot ${slot}` }];
  redrawBand();
  saveView();
}

// ---- one command -------------------------------------------------------------

const TARGETS = {
  'slot': (r) => `Runs on ${r.owner}: every key is in slot ${r.slot}.`,
  'any-node': () => 'No keys: any node can run it.',
  'all-masters': (r) => `No keys: it goes to every master, and the answer is ${r.reply}.`,
  'all-nodes': (r) => `No keys: it goes to every node, replicas too, and the answer is ${r.reply}.`,
  'none': (r) => `Cannot be sent: ${r.error}.`,
};

function routeCommand() {
  let route;
  try {
    route = JSON.parse(zaris.routeCommand($('cmd').value, map));
    showError('cmd-error', null);
  } catch (error) {
    showError('cmd-error', error);
    $('cmd-verdict').textContent = '';
    $('cmd-keys').querySelector('tbody').replaceChildren();
    marks.cmd = [];
    redrawBand();
    return;
  }
  // One mark per slot: co-located keys share one; a cross-slot command's
  // keys show apart, in the warning colour.
  const slots = [...new Set(route.keys.map((k) => k.slot))];
  const cross = slots.length > 1;
  marks.cmd = slots.map((slot) => {
    const here = route.keys.filter((k) => k.slot === slot);
    return {
      slot,
      kind: cross ? 'cross' : 'cmd',
      short: here.map((k) => `#${k.index}`).join(' '),
      label: `the command's ${here.map((k) => k.key).join(', ')}: slot ${slot}`,
    };
  });
  redrawBand();
  saveView();
  $('cmd-verdict').textContent = TARGETS[route.target](route);
  $('cmd-verdict').className = route.target === 'none' ? 'warn' : '';
  $('cmd-keys').querySelector('tbody').replaceChildren(...route.keys.map((k) => {
    const row = document.createElement('tr');
    for (const cell of [`#${k.index}`, k.key, String(k.slot), k.owner]) {
      const td = document.createElement('td');
      td.textContent = cell;
      row.append(td);
    }
    return row;
  }));
}

// ---- the map ---------------------------------------------------------------

/** What the status line says of the map in force. */
function mapStatus(demo) {
  const masters = nodes.filter((n) => !n.replica_of).length;
  const what = demo ? 'the demo map' : 'your map';
  $('status').textContent = `Core loaded. Routing with ${what}: ${count(masters, 'master')}, ${count(nodes.length - masters, 'replica')}.`;
}

function applyMap(text) {
  const trimmed = text.trim();
  const next = trimmed.startsWith('{') ? zaris.ClusterMap.fromJson(text) : zaris.ClusterMap.fromClusterNodes(text);
  map?.free();
  map = next;
  nodes = JSON.parse(map.nodesJson());
  const body = $('nodes').querySelector('tbody');
  body.replaceChildren(...nodes.map((node, i) => {
    const row = document.createElement('tr');
    const role = node.replica_of ? `replica of ${node.master_addr ?? node.replica_of.slice(0, 12)}` : 'master';
    const ranges = node.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(', ');
    for (const cell of [`#${i}`, node.id.slice(0, 12), node.addr, role + (node.failing ? ' (failing)' : ''),
      node.slots ? `${node.slots} (${ranges})` : '0']) {
      const td = document.createElement('td');
      td.textContent = cell;
      row.append(td);
    }
    return row;
  }));
  $('band-legend').innerHTML = [...colours(nodes)].filter(([i]) => !nodes[i].replica_of)
    .map(([i, c]) => `<span><i style="background:${c}"></i>#${i} ${escapeHtml(nodes[i].addr)} (${nodes[i].slots} slots)</span>`)
    .join('');
  mapStatus(text === zaris.ClusterMap.demoClusterNodes());
  redrawBand();
  updateKey();
  routeCommand();
  if ($('keys').value) analyze();
}

/** The band as the map and the marks stand now. */
function redrawBand() {
  if (!map) return;
  drawBand($('band'), nodes, [...marks.pick, ...marks.cmd, ...marks.key], (text) => {
    $('band-detail').textContent = text;
  });
  if (perSlotOfKeys) {
    const colour = colours(nodes);
    drawDensity($('density'), perSlotOfKeys, picked, (slot) => colour.get(map.ownerOfSlot(slot)) ?? 'var(--muted)');
  }
}

/** The view (key, command, a pasted map, the churn run) in the URL, so a link reproduces it. */
function saveView() {
  if (!document.body.dataset.ready) return;
  const state = new URLSearchParams(location.hash.slice(1));
  state.set('key', $('key').value);
  if ($('key-hex').checked) state.set('hex', '1'); else state.delete('hex');
  state.set('cmd', $('cmd').value);
  const text = $('map-text').value;
  if (text.trim() && text !== zaris.ClusterMap.demoClusterNodes()) state.set('map', text); else state.delete('map');
  history.replaceState(null, '', `#${state}`);
}

/** The view from the URL, where it has one. */
function viewFromUrl() {
  const state = new URLSearchParams(location.hash.slice(1));
  if (state.has('key')) $('key').value = state.get('key');
  $('key-hex').checked = state.get('hex') === '1';
  if (state.has('cmd')) $('cmd').value = state.get('cmd');
  if (state.has('map')) {
    $('map-text').value = state.get('map');
    useMapFromText();
  } else if ($('map-text').value !== zaris.ClusterMap.demoClusterNodes()) {
    useDemoMap();
  }
}

function useMapFromText() {
  try {
    applyMap($('map-text').value);
    showError('map-error', null);
    saveView();
  } catch (error) {
    // The previous map stays in force: a bad paste never breaks routing.
    showError('map-error', error);
  }
}

function useDemoMap() {
  $('map-text').value = zaris.ClusterMap.demoClusterNodes();
  useMapFromText();
}

// ---- many keys ---------------------------------------------------------------

/** Deterministic pseudo-random numbers (xorshift32), so runs compare. */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x % n;
  };
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_-.';
const WORDS = ['κλειδί', 'ключ', '键', 'clé', '😀', 'naïve', 'straße', 'ÆØÅ'];

/** Mixed keys: ASCII, UTF-8, hash-tagged, 4 to 256 characters, a few edge forms. */
function sampleKeys(count, seed) {
  const next = rng(seed);
  const ascii = (len) => Array.from({ length: len }, () => ALNUM[next(ALNUM.length)]).join('');
  const keys = new Array(count);
  for (let i = 0; i < count; i++) {
    const len = 4 + next(253);
    // One key in 64 is an edge form; the rest split between ASCII, UTF-8
    // and hash-tagged keys.
    switch (i % 64 === 63 ? 7 : i % 7) {
      case 0: case 1: case 2: keys[i] = ascii(len); break;
      case 3: case 4: {
        let key = '';
        while (key.length < len) key += WORDS[next(WORDS.length)] + ascii(1 + next(6));
        keys[i] = key.slice(0, len);
        break;
      }
      case 5: case 6: keys[i] = `{user${next(5000)}}:${ascii(Math.max(1, len - 12))}`; break;
      default: // edge forms where hash-tag readers disagree
        keys[i] = [`foo{}{bar${next(99)}}`, `{}{x${next(99)}}`, `k{${next(99)}`, `a\uD800b${next(99)}`][next(4)];
    }
  }
  return keys;
}

/** A share as a percentage, to the precision that shows it (0.01%, not 0.0%). */
function percent(n, total) {
  const share = (100 * n) / Math.max(total, 1);
  return `${share.toFixed(share > 0 && share < 1 ? 2 : 1)}%`;
}

/** Bars as wide as each entry's share of the total (a full bar is all of
 * it), so a few keys of 10,000 draw a sliver, not a full bar. */
function bars(title, entries, total, intro = '') {
  const rows = entries.map(([label, n]) => `
    <div class="bar-row"><span class="bar-label">${escapeHtml(label)}</span>
      <span class="bar-track"><span class="bar" style="width:${(100 * n) / Math.max(total, 1)}%"></span></span>
      <span class="bar-value">${n.toLocaleString('en')} (${percent(n, total)})</span></div>`);
  return `<h3>${escapeHtml(title)}</h3>${intro}<div class="bars">${rows.join('')}</div>`;
}

function analyze() {
  const text = $('keys').value;
  const keys = lines(text);
  const slots = slotsOfText(text);
  const owners = map.ownersOfSlots(slots);
  const perNode = new Array(nodes.length).fill(0);
  let unserved = 0;
  for (const owner of owners) owner < 0 ? unserved++ : perNode[owner]++;

  const segments = Math.min(Math.max(Number($('segments').value) || 1, 1), 16384);
  const segs = zaris.segmentsForSlots(slots, segments);
  const perSegment = new Map();
  for (const s of segs) perSegment.set(s, (perSegment.get(s) ?? 0) + 1);
  const perSlot = new Map();
  for (const s of slots) perSlot.set(s, (perSlot.get(s) ?? 0) + 1);
  const tags = new Map();
  for (const key of keys) {
    const span = zaris.hashTagSpanUtf16(toUnits(key));
    if (span) {
      const tag = key.slice(span[0], span[1]);
      tags.set(tag, (tags.get(tag) ?? 0) + 1);
    }
  }

  const masters = perNode.map((n, i) => [i, n]).filter(([i]) => nodes[i].slots > 0);
  const mean = keys.length / Math.max(masters.length, 1);
  const [busiest, busiestCount] = masters.reduce((a, b) => (b[1] > a[1] ? b : a), [0, 0]);
  const skewed = keys.length > 0 && busiestCount > SKEW_RATIO * mean;
  const top = (entries, n) => [...entries].sort((a, b) => b[1] - a[1]).slice(0, n);

  const counts = masters.map(([, n]) => n);
  const imbalance = counts.length && keys.length ? Math.max(...counts) / mean : 0;
  $('analysis').innerHTML = `
    <p id="imbalance">Imbalance (busiest master over the mean): <strong>${imbalance.toFixed(2)}</strong></p>
    <p>${count(keys.length, 'key')}.
      ${skewed
    ? `<strong class="warn">Skewed:</strong> node #${busiest} holds ${count(busiestCount, 'key')}, ${(busiestCount / mean).toFixed(2)}× its fair share.`
    : 'Balanced across the masters.'}
      ${unserved ? `<strong class="warn">${count(unserved, 'key')} ${unserved === 1 ? 'lands' : 'land'} on slots no node serves.</strong>` : ''}</p>
    ${bars('Keys per master', masters.map(([i, n]) => [`#${i} ${nodes[i].addr}`, n]), keys.length)}
    ${bars(`Busiest segments (of ${segments})`, top(perSegment, 12).map(([s, n]) => [`segment ${s}`, n]), keys.length,
    `<p class="hint">Segments as set under “One key”${segments === 16384 ? ': with 16,384, each segment is one slot' : ''}.</p>`)}
    ${bars('Hottest slots', top(perSlot, 10).map(([s, n]) => [`slot ${s}`, n]), keys.length)}
    <p class="hint">Mark a hot slot: ${top(perSlot, 10).map(([s]) => `<button type="button" class="link" data-pick="${s}">slot ${s}</button>`).join(' ')}</p>
    <h3>Keys sharing a hash tag</h3>
    <ul class="tags">${top([...tags].filter(([, n]) => n > 1), 10)
    .map(([tag, n]) => `<li><button type="button" class="link" data-pick="${zaris.slotForUtf16(toUnits(tag))}" data-tag="${escapeHtml(tag)}"><code>{${escapeHtml(tag)}}</code></button>: ${count(n, 'key')}, one slot</li>`).join('') || '<li>none</li>'}</ul>`;
  perSlotOfKeys = perSlot;
  $('density').hidden = keys.length === 0;
  $('density-legend').hidden = keys.length === 0;
  for (const button of $('analysis').querySelectorAll('[data-pick]')) {
    button.addEventListener('click', () => pick(Number(button.dataset.pick), button.textContent));
  }
  redrawBand();
}

/** Marks `slot` (a hot slot, a shared tag's) on the band and the strip. */
function pick(slot, what) {
  picked = slot;
  marks.pick = [{ slot, kind: 'pick', short: String(slot), label: `${what}: slot ${slot}` }];
  $('band-detail').textContent = `${what} is slot ${slot}, on ${ownerText(slot)}`;
  redrawBand();
}

// ---- churn simulator ---------------------------------------------------------

function simulate() {
  const timeout = Number($('churn-timeout').value);
  let events;
  try {
    events = JSON.parse(zaris.simulateRetries(
      $('churn-script').value,
      Number($('churn-attempts').value) || 1,
      Number($('churn-backoff').value) || 0,
      timeout > 0 ? timeout : undefined,
      Number($('churn-rtt').value) || 0,
    ));
    showError('churn-error', null);
  } catch (error) {
    showError('churn-error', error);
    return;
  }
  const describe = {
    attempt: (e) => `attempt ${e.attempt}: ${e.outcome}`,
    refresh: () => 'refresh the cluster map',
    ask: () => 'follow the ASK redirect at once (ASKING, same command)',
    wait: (e) => `wait ${e.ms} ms`,
    end: (e) => `${e.result}: ${e.last} after ${count(e.attempts, 'attempt')}, ${count(e.refreshes, 'map refresh', 'map refreshes')}`,
  };
  $('churn-timeline').replaceChildren(...events.filter((e) => e.event !== 'end').map((e) => {
    const li = document.createElement('li');
    li.className = e.event;
    li.textContent = `t=${e.at_ms} ms · ${describe[e.event](e)}`;
    return li;
  }));
  const end = events[events.length - 1];
  $('churn-result').textContent = `t=${end.at_ms} ms · ${describe.end(end)}`;
}

// ---- benchmark ---------------------------------------------------------------

/** Runs the benchmark: its code and its peer load on the first click, not
 * with the page. */
async function benchmark() {
  const { runBenchmark } = await import('./bench.js');
  await runBenchmark({ sampleKeys, slotsOfText, textIntoWasm, batchSlots: (n) => batch.slots(n), escapeHtml });
}

// ---- start -----------------------------------------------------------------

/** Runs `f` once typing pauses for `ms`. */
function debounced(f, ms) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(f, ms);
  };
}

/** The churn player, loaded when its section comes near the view (or a
 * link asks for it): it is not part of the page's first download. */
let player = null;
async function churnPlayer() {
  if (!player) {
    const { Player } = await import('./player.js');
    if (!player) {
      player = new Player(zaris);
      player.wire();
      player.fromUrl();
      player.run();
      $('played-player').dataset.ready = 'true';
    }
  }
  return player;
}

/** The seed replay, loaded as the churn player is (and at once when the
 * address names a seed). */
let replay = null;
async function seedReplay() {
  if (!replay) {
    const { Replay } = await import('./replay.js');
    if (!replay) {
      replay = new Replay();
      replay.wire();
      await replay.fromUrl();
      $('replay-player').dataset.ready = 'true';
    }
  }
  return replay;
}

/** The whole view from the URL: on load, and when a link changes only
 * after `#` in an open tab. */
async function fromUrl() {
  viewFromUrl();
  updateKey();
  routeCommand();
  if (player) {
    player.fromUrl();
    player.run();
  } else if (location.hash.includes('churn.')) {
    await churnPlayer();
  }
}

wasm = await init();
$('key').addEventListener('input', updateKey);
$('cmd').addEventListener('input', routeCommand);
for (const button of document.querySelectorAll('[data-cmd]')) {
  button.addEventListener('click', () => {
    $('cmd').value = button.dataset.cmd;
    routeCommand();
  });
}
$('key-hex').addEventListener('change', updateKey);
$('segments').addEventListener('input', () => {
  updateKey();
  if ($('keys').value) analyze();
});
$('map-apply').addEventListener('click', useMapFromText);
$('map-demo').addEventListener('click', useDemoMap);
$('keys-sample').addEventListener('click', () => {
  $('keys').value = sampleKeys(SAMPLE_KEYS, 42).join('\n');
  analyze();
});
$('keys').addEventListener('input', debounced(analyze, 150));
$('churn-run').addEventListener('click', simulate);
$('bench-run').addEventListener('click', benchmark);
// The band is drawn at its container's width: drawn again when that changes.
let bandWidth = 0;
new ResizeObserver(() => {
  const now = $('band').clientWidth;
  if (Math.abs(now - bandWidth) > 8) {
    bandWidth = now;
    redrawBand();
  }
}).observe($('band'));
new IntersectionObserver((seen, observer) => {
  if (seen.some((e) => e.isIntersecting)) {
    observer.disconnect();
    churnPlayer();
  }
}, { rootMargin: '400px' }).observe($('played-h').closest('section'));
new IntersectionObserver((seen, observer) => {
  if (seen.some((e) => e.isIntersecting)) {
    observer.disconnect();
    seedReplay();
  }
}, { rootMargin: '400px' }).observe($('replay'));
if (new URLSearchParams(location.search).has('seed')) {
  seedReplay().then(() => $('replay').scrollIntoView());
}
useDemoMap();
simulate();
await fromUrl();
// Our own replaceState never fires this: only a followed link does.
addEventListener('hashchange', fromUrl);
document.body.dataset.ready = 'true';
saveView();
player?.remember();
