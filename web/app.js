// The playground's page logic. Every slot, tag span, segment, route and
// retry decision comes from the Zaris core (wasm); this file only moves text
// in and draws what comes back.
import init, * as zaris from './pkg/zaris_wasm.js';
import { encodeUtf8Into } from './utf8.js';
import { colours, drawBand, drawDensity } from './slots.js';

const $ = (id) => document.getElementById(id);
const textEncoder = new TextEncoder();
const BENCH_KEYS = 100_000;
const BENCH_RUNS = 5;
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
  $('key-marked').innerHTML = marked || '<em>(empty key)</em>';
  $('slot').textContent = String(slot);
  $('segment').textContent = `${zaris.segmentForSlot(slot, segments)} of ${Math.min(Math.max(segments, 1), 16384)}`;
  $('hashed').textContent = hashed;
  $('owner').textContent = ownerText(slot);
  marks.key = [{ slot, kind: 'key', label: `the key: slot ${slot}` }];
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
  marks.cmd = slots.map((slot) => ({
    slot,
    kind: cross ? 'cross' : 'cmd',
    label: `the command's ${route.keys.filter((k) => k.slot === slot).map((k) => k.key).join(', ')}: slot ${slot}`,
  }));
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
  redrawBand();
  updateKey();
  routeCommand();
}

/** The band as the map and the marks stand now. */
function redrawBand() {
  if (!map) return;
  drawBand($('band'), nodes, [...marks.pick, ...marks.cmd, ...marks.key], (text) => {
    $('band-detail').textContent = text;
  });
  if (perSlotOfKeys && $('density')) drawDensity($('density'), perSlotOfKeys, picked);
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

function bars(title, entries, total) {
  const max = Math.max(1, ...entries.map(([, n]) => n));
  const rows = entries.map(([label, n]) => `
    <div class="bar-row"><span class="bar-label">${escapeHtml(label)}</span>
      <span class="bar" style="width:${(100 * n) / max}%"></span>
      <span class="bar-value">${n} (${((100 * n) / Math.max(total, 1)).toFixed(1)}%)</span></div>`);
  return `<h3>${escapeHtml(title)}</h3><div class="bars">${rows.join('')}</div>`;
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
    <h3>Keys over the slot space</h3>
    <div id="density" class="density"></div>
    <p id="imbalance">Imbalance (busiest master over the mean): <strong>${imbalance.toFixed(2)}</strong></p>
    <p>${count(keys.length, 'key')}.
      ${skewed
    ? `<strong class="warn">Skewed:</strong> node #${busiest} holds ${count(busiestCount, 'key')}, ${(busiestCount / mean).toFixed(2)}× its fair share.`
    : 'Balanced across the masters.'}
      ${unserved ? `<strong class="warn">${count(unserved, 'key')} ${unserved === 1 ? 'lands' : 'land'} on slots no node serves.</strong>` : ''}</p>
    ${bars('Keys per node', perNode.map((n, i) => [`#${i} ${nodes[i].addr}`, n]), keys.length)}
    ${bars(`Busiest segments (of ${segments})`, top(perSegment, 12).map(([s, n]) => [`segment ${s}`, n]), keys.length)}
    ${bars('Hottest slots', top(perSlot, 10).map(([s, n]) => [`slot ${s}`, n]), keys.length)}
    <p class="hint">Mark a hot slot: ${top(perSlot, 10).map(([s]) => `<button type="button" class="link" data-pick="${s}">slot ${s}</button>`).join(' ')}</p>
    <h3>Keys sharing a hash tag</h3>
    <ul class="tags">${top([...tags].filter(([, n]) => n > 1), 10)
    .map(([tag, n]) => `<li><button type="button" class="link" data-pick="${zaris.slotForUtf16(toUnits(tag))}" data-tag="${escapeHtml(tag)}"><code>{${escapeHtml(tag)}}</code></button>: ${count(n, 'key')}, one slot</li>`).join('') || '<li>none</li>'}</ul>`;
  perSlotOfKeys = perSlot;
  for (const button of $('analysis').querySelectorAll('[data-pick]')) {
    button.addEventListener('click', () => pick(Number(button.dataset.pick), button.textContent));
  }
  redrawBand();
}

/** Marks `slot` (a hot slot, a shared tag's) on the band and the strip. */
function pick(slot, what) {
  picked = slot;
  marks.pick = [{ slot, kind: 'pick', label: `${what}: slot ${slot}` }];
  $('band-detail').textContent = `${what} is slot ${slot}, on ${ownerText(slot)}`;
  redrawBand();
}

// ---- churn, played out ------------------------------------------------------

const SVG = 'http://www.w3.org/2000/svg';
/** Each mark's color, by the core's mark names. */
const MARK_COLORS = {
  served: '#2e8b57', moved: '#d9822b', ask: '#8e44ad', refused: '#b3261e',
  loop: '#c2185b', refresh: '#0b63ce', wait: '#7f8c8d', failed: '#000000', tryagain: '#00838f',
};
const PLAYED = ['event', 'master', 'to', 'first', 'last', 'attempts', 'backoff', 'timeout', 'interval'];

/** One run of the core's simulation: the parsed JSON. */
function playRun(model) {
  const v = (id) => $(`played-${id}`).value;
  const n = (id) => Number(v(id)) || 0;
  const timeout = n('timeout');
  return JSON.parse(zaris.simulateChurn(
    v('event'), n('master'), n('to'), n('first'), n('last'), model,
    Math.max(1, n('attempts')), n('backoff'), timeout > 0 ? timeout : undefined, n('interval'),
  ));
}

function svg(name, attrs, parent) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  parent?.appendChild(el);
  return el;
}

/** The run as swimlanes: one per node, the client's last; a tick per entry. */
function drawLanes(run) {
  const width = 960, laneH = 22, left = 96, top = 8;
  const height = top + run.lanes.length * laneH + 24;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, 'data-duration-ms': run.duration_ms });
  const x = (ms) => left + (ms / run.duration_ms) * (width - left - 8);
  run.lanes.forEach((name, i) => {
    const y = top + i * laneH;
    svg('rect', { x: left, y, width: width - left - 8, height: laneH - 4, fill: i % 2 ? 'transparent' : 'rgba(127,127,127,.08)' }, root);
    svg('text', { x: 4, y: y + laneH / 2 + 2, class: 'lane-name' }, root).textContent = name;
  });
  const event = svg('line', { x1: x(run.event_ms), x2: x(run.event_ms), y1: top, y2: height - 20, stroke: '#b3261e', 'stroke-dasharray': '4 3' }, root);
  event.setAttribute('data-event', 'true');
  for (let s = 0; s <= run.duration_ms / 1000; s++) {
    svg('text', { x: x(s * 1000) - 6, y: height - 6, class: 'lane-name' }, root).textContent = `${s}s`;
  }
  // Served attempts are many: drawn faint, the rest on top.
  const order = (e) => (run.marks[e[2]] === 'served' ? 0 : 1);
  for (const e of [...run.entries].sort((a, b) => order(a) - order(b))) {
    const [atUs, lane, mark] = e;
    const at = atUs / 1000;
    const name = run.marks[mark];
    svg('rect', {
      x: x(at), y: top + lane * laneH + (name === 'served' ? 6 : 1), width: name === 'served' ? 1 : 2.5,
      height: name === 'served' ? laneH - 16 : laneH - 6, fill: MARK_COLORS[name],
      opacity: name === 'served' ? 0.35 : 1, 'data-mark': name,
    }, root);
  }
  $('played-lanes').replaceChildren(root);
  $('played-legend').innerHTML = Object.entries(MARK_COLORS)
    .map(([name, color]) => `<span><i style="background:${color}"></i>${name}</span>`).join('');
}

function play() {
  let runs;
  try {
    runs = ['zaris', 'deadline-only', 'attempts-only'].map((model) => [model, playRun(model)]);
    showError('played-error', null);
  } catch (error) {
    showError('played-error', error);
    return;
  }
  drawLanes(runs[0][1]);
  const label = { zaris: 'Zaris (the policy above)', 'deadline-only': 'deadline only (60 s)', 'attempts-only': 'attempts only (3)' };
  $('played-totals').tBodies[0].replaceChildren(...runs.map(([model, run]) => {
    const tr = document.createElement('tr');
    tr.dataset.model = model;
    const t = run.totals;
    tr.innerHTML = `<th scope="row">${label[model]}</th><td>${t.served}</td><td>${t.failed}</td>`
      + `<td>${t.worst_ms}</td><td>${t.attempts}</td><td>${t.refreshes}</td>`;
    return tr;
  }));
  // The view in the URL: a link reproduces it.
  const state = new URLSearchParams(location.hash.slice(1));
  for (const id of PLAYED) state.set(`churn.${id}`, $(`played-${id}`).value);
  history.replaceState(null, '', `#${state}`);
}

/** The churn fields from the URL, if it carries them. */
function playedFromUrl() {
  const state = new URLSearchParams(location.hash.slice(1));
  for (const id of PLAYED) {
    const value = state.get(`churn.${id}`);
    if (value !== null) $(`played-${id}`).value = value;
  }
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

/** The peer the benchmark runs against, loaded when it first runs: it is
 * not part of the page's download. */
let clusterKeySlot = null;

async function benchmark() {
  clusterKeySlot ??= (await import('./vendor/cluster-key-slot.js')).default;
  const keys = sampleKeys(BENCH_KEYS, 7);
  const text = keys.join('\n');
  const time = (f) => {
    let best = Infinity;
    let out;
    for (let run = 0; run < BENCH_RUNS; run++) {
      const t0 = performance.now();
      out = f();
      best = Math.min(best, performance.now() - t0);
    }
    return [best, out];
  };
  const peerSlots = (list) => {
    const out = new Uint16Array(list.length);
    for (let i = 0; i < list.length; i++) out[i] = clusterKeySlot(list[i]);
    return out;
  };
  // Text in (what the page holds): one batch call against a call per key.
  const [ours, slots] = time(() => slotsOfText(text));
  const [theirs, peer] = time(() => peerSlots(text.split('\n')));
  // Where the batch's time goes, and the floor under any string-in approach.
  const [moving, bytes] = time(() => textIntoWasm(text));
  const [hashing] = time(() => batch.slots(bytes));
  const [platform] = time(() => textIntoWasm(text, (t, view) => textEncoder.encodeInto(t, view).written));
  const [floor] = time(() => readEveryCharacter(text));
  // An array of strings in: the batch pays for joining them first.
  const [oursArray] = time(() => slotsOfText(keys.join('\n')));
  const [theirsArray] = time(() => peerSlots(keys));
  const differ = [];
  for (let i = 0; i < keys.length; i++) if (slots[i] !== peer[i]) differ.push(i);
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
    <p class="hint">Best of ${BENCH_RUNS} runs, ${keys.length.toLocaleString('en')} keys, ${(text.length / 1e6).toFixed(1)} M characters.</p>
    <p><span id="bench-differ">${differ.length}</span> keys differ${differ.length ? ' (the first 20)' : ''}:</p>
    <ul class="differ">${shown}</ul>`;
}

// ---- start -----------------------------------------------------------------

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
$('segments').addEventListener('input', updateKey);
$('map-apply').addEventListener('click', useMapFromText);
$('map-demo').addEventListener('click', useDemoMap);
$('keys-sample').addEventListener('click', () => {
  $('keys').value = sampleKeys(SAMPLE_KEYS, 42).join('\n');
  analyze();
});
$('keys-analyze').addEventListener('click', analyze);
$('churn-run').addEventListener('click', simulate);
$('played-run').addEventListener('click', play);
$('played-event').addEventListener('change', play);
$('bench-run').addEventListener('click', benchmark);
useDemoMap();
simulate();
viewFromUrl();
playedFromUrl();
play();
$('status').textContent = 'Core loaded. Routing with the demo map.';
document.body.dataset.ready = 'true';
updateKey();
routeCommand();
