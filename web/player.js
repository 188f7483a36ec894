// "Churn, played out": one run of the core's churn simulation for each of
// three clients (Zaris and two naive loops), drawn as lanes and played back.
// The core decides everything (every attempt, redirect, refresh and wait,
// who owns each slot at each moment, the event's milestones); this file
// only reads the fields, draws, and moves a cursor through time.
import { $, svg, MARK_COLOURS } from './dom.js';
import { drawBand } from './slots.js';
import { Playback } from './playback.js';

// Its styles come with it, not with the page's first download.
document.head.append(Object.assign(document.createElement('link'), {
  rel: 'stylesheet', href: new URL('./player.css', import.meta.url).href,
}));

/** The clients compared, Zaris first. */
export const MODELS = ['zaris', 'deadline-only', 'attempts-only'];
const MODEL_NAMES = { zaris: 'Zaris', 'deadline-only': 'deadline only', 'attempts-only': 'attempts only' };
/** What each mark means, for the legend. */
const MARK_MEANINGS = {
  served: 'answered', moved: 'MOVED: the map was stale', ask: 'ASK: this key has moved already',
  refused: 'connection refused', loop: 'MOVED closing a loop', refresh: 'map refresh done',
  wait: 'waits, unsent, for an owner', failed: 'gave up: an error', tryagain: 'TRYAGAIN: keys split mid-migration',
};
/** A request answered later than this after it began counts as late. */
const LATE_MS = 50;
/** The fields of the scenario and the policy, as `played-<id>`. */
export const FIELDS = ['event', 'master', 'to', 'first', 'last', 'attempts', 'backoff', 'timeout', 'interval'];
/** Which scenario fields each event uses (the others are hidden). */
const EVENT_FIELDS = {
  kill: ['master'], failover: ['master'], migrate: ['master', 'to', 'first', 'last'], bounce: ['to', 'first'],
};
/** Each event's defaults: a scenario that shows something with them. Slot
 * 7 holds key 0; master 0 owns slots 0-5460. */
export const EVENT_DEFAULTS = {
  kill: { master: 2 }, failover: { master: 2 },
  migrate: { master: 0, to: 1, first: 0, last: 1023 }, bounce: { first: 7, to: 1 },
};

const seconds = (ms) => `${(ms / 1000).toFixed(3)} s`;

/** A milestone (`[at_us, kind, fields...]`, as the core gives it) in
 * words; nodes named as the lanes are. */
function milestoneText([, kind, a, b, c, d, e], lanes) {
  switch (kind) {
    case 0: return `${lanes[a]} is killed: no one serves its slots until its replica takes over`;
    case 1: return `${lanes[b]} takes over the slots of ${lanes[a]}`;
    case 2: return `slots ${c}-${d} leave ${lanes[a]} for ${lanes[b]}: the ${d - c + 1 - e} without keys at once, `
      + `the ${e} with keys one step at a time`;
    case 3: return `slot ${a} starts migrating from ${lanes[b]} to ${lanes[c]}: moved keys answer ASK, `
      + 'split two-key commands TRYAGAIN';
    default: return `slot ${a} moves from ${lanes[b]} to ${lanes[c]}`;
  }
}

/** Each request of `run` as `{start, slot, end, served, marks: [entry]}`. */
function requestsOf(run) {
  const out = run.requests.map(([startUs, slot]) => ({ start: startUs / 1000, slot, end: null, served: false, marks: [] }));
  const refreshes = [];
  for (const entry of run.entries) {
    const [atUs, , mark, id] = entry;
    const name = run.marks[mark];
    if (name === 'refresh') { refreshes.push(atUs / 1000); continue; }
    const r = out[id];
    if (!r) continue;
    r.marks.push(entry);
    if (name === 'served' || name === 'failed') {
      r.end = atUs / 1000;
      r.served = name === 'served';
    }
  }
  return { requests: out, refreshes };
}

/** One request's story: "request 812, slot 263: MOVED by master 2 →
 * refresh → served by replica of 2, +802 ms". */
function story(run, req, id, refreshes) {
  const where = (lane) => run.lanes[lane];
  const step = {
    served: (l) => `served by ${where(l)}`, moved: (l) => `MOVED by ${where(l)}`, ask: (l) => `ASK from ${where(l)}`,
    refused: (l) => `refused by ${where(l)}`, loop: (l) => `MOVED by ${where(l)} closes a loop`,
    wait: () => 'waits, unsent, for the owner', failed: () => 'gives up', tryagain: (l) => `TRYAGAIN from ${where(l)}`,
  };
  const parts = [];
  let last = req.start;
  for (const [atUs, lane, mark] of req.marks) {
    const at = atUs / 1000;
    if (refreshes.some((r) => r > last && r <= at)) parts.push('refresh');
    parts.push(step[run.marks[mark]](lane));
    last = at;
  }
  const took = req.end === null ? '' : `, +${Math.round(req.end - req.start)} ms`;
  return `request ${id}, slot ${req.slot}, at ${seconds(req.start)}: ${parts.join(' → ')}${took}`;
}

/** What the run came to, per model: failures and their window, the slowest. */
function summary({ model, requests, run }) {
  const failed = requests.filter((r) => r.end !== null && !r.served);
  const slowest = Math.max(0, ...requests.filter((r) => r.served).map((r) => r.end - r.start));
  const name = MODEL_NAMES[model];
  const window = failed.length
    ? `, begun between ${(Math.min(...failed.map((r) => r.start)) / 1000).toFixed(1)} and ${(Math.max(...failed.map((r) => r.start)) / 1000).toFixed(1)} s`
    : '';
  return {
    failed: failed.length,
    text: `${name}: ${failed.length.toLocaleString('en')} failed${window}; slowest answer +${Math.round(slowest).toLocaleString('en')} ms; ${run.totals.attempts.toLocaleString('en')} attempts`,
  };
}

/** The playback: runs, cursor, timer. */
export class Player extends Playback {
  constructor(zaris) {
    super('play-toggle');
    this.zaris = zaris;
    this.runs = null;
  }

  duration() { return this.runs ? this.runs[0].run.duration_ms : null; }

  /** The scenario as the fields hold it. */
  scenario() {
    const v = (id) => $(`played-${id}`).value;
    const n = (id) => Number(v(id)) || 0;
    const event = v('event');
    // Bounce takes its slot from "first"; the master is not asked for.
    return { event, master: n('master'), to: n('to'), first: n('first'), last: event === 'bounce' ? n('first') : n('last') };
  }

  /** Shows only the fields the chosen event uses. */
  showFields() {
    const used = EVENT_FIELDS[$('played-event').value] ?? [];
    for (const id of ['master', 'to', 'first', 'last']) $(`played-${id}`).closest('label').hidden = !used.includes(id);
    const bounce = $('played-event').value === 'bounce';
    $('played-first-name').textContent = bounce ? 'Slot' : 'First slot';
    $('played-master-name').textContent = $('played-event').value === 'migrate' ? 'From master' : 'Master';
  }

  /** Fills in the chosen event's defaults. */
  useDefaults() {
    for (const [id, value] of Object.entries(EVENT_DEFAULTS[$('played-event').value] ?? {})) $(`played-${id}`).value = value;
    this.showFields();
  }

  /** Runs the three clients; on an error, says it and clears the old run. */
  run() {
    this.pause();
    const s = this.scenario();
    const n = (id) => Number($(`played-${id}`).value) || 0;
    const timeout = n('timeout');
    let runs;
    try {
      runs = MODELS.map((model) => {
        const run = JSON.parse(this.zaris.simulateChurn(s.event, s.master, s.to, s.first, s.last, model,
          Math.max(1, n('attempts')), n('backoff'), timeout > 0 ? timeout : undefined, n('interval')));
        run.milestones = run.milestones.map((m) => [m[0], milestoneText(m, run.lanes)]);
        return { model, run, ...requestsOf(run) };
      });
      $('played-error').hidden = true;
    } catch (error) {
      $('played-error').hidden = false;
      $('played-error').textContent = `This scenario cannot run: ${error.message ?? error}.`;
      this.runs = null;
      for (const id of ['played-lanes', 'played-map', 'played-log', 'played-story', 'played-tally']) $(id).replaceChildren();
      $('played-totals').tBodies[0].replaceChildren();
      for (const id of ['play-toggle', 'play-step', 'play-back', 'play-time']) $(id).disabled = true;
      return false;
    }
    this.runs = runs;
    // The map at the cursor is the run's, whatever the fields say since.
    this.ran = s;
    const zaris = runs[0];
    // Steps: each milestone, and each moment the Zaris client met churn.
    const stops = new Set(zaris.run.milestones.map(([at]) => Math.round(at / 1000)));
    for (const [atUs, , mark] of zaris.run.entries) if (zaris.run.marks[mark] !== 'served') stops.add(Math.round(atUs / 1000));
    this.stops = [...stops].sort((a, b) => a - b);
    for (const id of ['play-toggle', 'play-step', 'play-back', 'play-time']) $(id).disabled = false;
    $('play-time').max = zaris.run.duration_ms;
    this.totals();
    this.draw();
    this.seek(Math.min(this.t, zaris.run.duration_ms));
    return true;
  }

  totals() {
    const label = { zaris: 'Zaris (the policy above)', 'deadline-only': 'deadline only (60 s)', 'attempts-only': 'attempts only (3)' };
    $('played-totals').tBodies[0].replaceChildren(...this.runs.map(({ model, run }) => {
      const tr = document.createElement('tr');
      tr.dataset.model = model;
      const t = run.totals;
      tr.innerHTML = `<th scope="row">${label[model]}</th><td>${t.served}</td><td>${t.failed}</td>`
        + `<td>${t.worst_ms}</td><td>${t.attempts}</td><td>${t.refreshes}</td>`;
      return tr;
    }));
    const [ours, ...naive] = this.runs.map(summary);
    const differs = naive.some((s) => s.failed !== ours.failed);
    const story = $('played-story');
    story.replaceChildren(...[ours, ...naive].map((s, i) => {
      const li = document.createElement('li');
      li.textContent = s.text;
      li.dataset.model = MODELS[i];
      return li;
    }));
    story.dataset.differs = String(differs);
  }

  /** The lanes: one per node, the client's, then one per client model
   * with each request at its start, coloured by how it ended. */
  draw() {
    this.mapPhase = null;
    const zaris = this.runs[0];
    const run = zaris.run;
    const container = $('played-lanes');
    const width = Math.max(320, Math.round(container.clientWidth || 960));
    const narrow = width < 600;
    const left = narrow ? 78 : 112, laneH = 20, top = 6, gapH = 12;
    const nodeLanes = run.lanes.length;
    const modelTop = top + nodeLanes * laneH + gapH;
    const height = modelTop + MODELS.length * laneH + 22;
    const x = (ms) => left + (ms / run.duration_ms) * (width - left - 8);
    this.x = x;
    this.left = left;
    this.plotWidth = width - left - 8;
    const root = svg('svg', {
      viewBox: `0 0 ${width} ${height}`, width, height, 'data-duration-ms': run.duration_ms, 'aria-hidden': 'true',
    });
    const laneName = (text, y) => { svg('text', { x: 4, y: y + laneH / 2 + 4, class: 'lane-name' }, root).textContent = text; };
    run.lanes.forEach((name, i) => {
      const y = top + i * laneH;
      svg('rect', { x: left, y, width: width - left - 8, height: laneH - 3, class: i % 2 ? 'lane' : 'lane alt' }, root);
      laneName(name, y);
    });
    svg('text', { x: 4, y: modelTop - 3, class: 'lane-group' }, root).textContent = 'each request, by when it began:';
    MODELS.forEach((model, i) => {
      const y = modelTop + i * laneH;
      svg('rect', { x: left, y, width: width - left - 8, height: laneH - 3, class: i % 2 ? 'lane' : 'lane alt' }, root);
      laneName(MODEL_NAMES[model], y);
    });
    for (let s = 0; s <= run.duration_ms / 1000; s++) {
      svg('text', { x: x(s * 1000), y: height - 6, class: 'lane-name', 'text-anchor': s === 0 ? 'start' : 'middle' }, root).textContent = `${s} s`;
    }
    for (const [atUs, what] of run.milestones) {
      const line = svg('line', { x1: x(atUs / 1000), x2: x(atUs / 1000), y1: top, y2: height - 18, class: 'milestone', 'data-event': 'true' }, root);
      svg('title', {}, line).textContent = `${seconds(atUs / 1000)}: ${what}`;
    }
    // Served attempts are many: drawn faint, the rest on top.
    const entries = run.entries.map((e, i) => [e, i]);
    const order = ([e]) => (run.marks[e[2]] === 'served' ? 0 : 1);
    const marks = svg('g', { class: 'marks' }, root);
    for (const [e, i] of entries.sort((a, b) => order(a) - order(b))) {
      const [atUs, lane, mark] = e;
      const name = run.marks[mark];
      const served = name === 'served';
      svg('rect', {
        x: x(atUs / 1000), y: top + lane * laneH + (served ? 5 : 1), width: served ? 1 : 2.5,
        height: served ? laneH - 13 : laneH - 5, fill: MARK_COLOURS[name],
        opacity: served ? 0.35 : 1, 'data-mark': name, 'data-i': i,
      }, marks);
    }
    this.runs.forEach(({ requests }, m) => {
      const y = modelTop + m * laneH;
      const g = svg('g', { class: 'outcomes', 'data-model': MODELS[m] }, root);
      requests.forEach((r, id) => {
        const late = r.served && r.end - r.start > LATE_MS;
        const kind = !r.served ? 'failed' : late ? 'late' : 'prompt';
        svg('rect', {
          x: x(r.start), y: y + (kind === 'prompt' ? 5 : 1), width: kind === 'prompt' ? 1 : 2,
          height: kind === 'prompt' ? laneH - 13 : laneH - 5, class: `outcome ${kind}`, 'data-outcome': kind, 'data-r': id,
        }, g);
      });
    });
    this.cursor = svg('line', { x1: left, x2: left, y1: 0, y2: height - 16, class: 'cursor', 'data-cursor': 'true' }, root);
    root.addEventListener('mousemove', (e) => this.explain(e.target));
    root.addEventListener('click', (e) => {
      const box = root.getBoundingClientRect();
      const px = ((e.clientX - box.left) / box.width) * width;
      if (px >= left) this.seek(((px - left) / this.plotWidth) * run.duration_ms);
      this.explain(e.target);
    });
    container.replaceChildren(root);
    $('played-legend').innerHTML = Object.entries(MARK_COLOURS)
      .map(([name, colour]) => `<span><i style="background:${colour}"></i>${name}: ${MARK_MEANINGS[name]}</span>`).join('')
      + '<span><i class="prompt"></i>answered within 50 ms</span><span><i class="late"></i>answered later</span>'
      + '<span><i class="failed"></i>failed</span>';
  }

  /** What the mark under the pointer (or at the cursor) is. */
  explain(target) {
    if (!this.runs) return;
    const detail = $('played-detail');
    if (target?.dataset?.i !== undefined) {
      const { run, requests, refreshes } = this.runs[0];
      const [atUs, lane, mark, id] = run.entries[Number(target.dataset.i)];
      const name = run.marks[mark];
      detail.textContent = name === 'refresh'
        ? `${seconds(atUs / 1000)}: a map refresh ends`
        : `${seconds(atUs / 1000)}, ${run.lanes[lane]}: ${story(run, requests[id], id, refreshes)}`;
    } else if (target?.dataset?.r !== undefined) {
      const model = target.closest('[data-model]').dataset.model;
      const { run, requests, refreshes } = this.runs[MODELS.indexOf(model)];
      const id = Number(target.dataset.r);
      detail.textContent = `${MODEL_NAMES[model]}: ${story(run, requests[id], id, refreshes)}`;
    }
  }

  /** Moves the cursor to `ms`: the lanes, the map, the log, the URL. */
  seek(ms) {
    if (!this.runs) return;
    const run = this.runs[0].run;
    this.t = Math.max(0, Math.min(run.duration_ms, Math.round(ms)));
    this.showTime('play-time', 'play-clock');
    this.drawMap();
    this.log();
    if (!this.timer) this.remember();
  }

  /** Who owns each slot at the cursor, with the keys' slots ticked. */
  drawMap() {
    const s = this.ran;
    const run = this.runs[0].run;
    // Ownership changes only at the milestones: between two, the map
    // drawn stands (playback seeks every frame).
    const phase = run.milestones.filter(([atUs]) => atUs <= this.t * 1000).length;
    const caption = (unserved) => {
      $('played-map-caption').textContent = `Who owns the slots at ${seconds(this.t)}`
        + (unserved ? `: no one serves ${unserved.toLocaleString('en')} of them (grey)` : '')
        + '. Ticks beneath: the 64 keys\' slots.';
    };
    if (phase === this.mapPhase) {
      caption(this.unserved);
      return;
    }
    const owners = this.zaris.churnOwnersAt(s.event, s.master, s.to, s.first, s.last, this.t);
    const masters = (run.lanes.length - 1) / 2;
    const SLOTS = 16384;
    // The replicas come after the masters, so the masters keep their colours.
    const nodes = run.lanes.slice(0, -1).map((addr, i) => ({
      id: `n${i}`, addr, replica_of: i >= masters ? `n${i - masters}` : null, ranges: [], slots: 0, moving: [],
    }));
    for (let slot = 0; slot < SLOTS;) {
      const owner = owners[slot];
      let end = slot;
      while (end + 1 < SLOTS && owners[end + 1] === owner) end++;
      if (owner !== 255) {
        nodes[owner].ranges.push([slot, end]);
        nodes[owner].slots += end - slot + 1;
      }
      slot = end + 1;
    }
    for (let slot = 0; slot < SLOTS; slot++) {
      const to = owners[SLOTS + slot];
      if (to !== 255 && owners[slot] !== 255) nodes[owners[slot]].moving.push([slot, 'to', `n${to}`]);
    }
    const keys = run.key_slots.map((slot) => ({ slot, kind: 'tick', label: `a key in slot ${slot}` }));
    drawBand($('played-map'), nodes, keys, (text) => { $('played-detail').textContent = text; }, 'played-hatch');
    this.mapPhase = phase;
    this.unserved = owners.subarray(0, SLOTS).filter((o) => o === 255).length;
    caption(this.unserved);
  }

  /** The events up to the cursor: milestones, then what the client met. */
  log() {
    const { run, requests, refreshes } = this.runs[0];
    const items = run.milestones.filter(([atUs]) => atUs / 1000 <= this.t)
      .map(([atUs, what]) => [atUs, `${seconds(atUs / 1000)} · ${what}`, 'milestone']);
    const met = run.entries.filter(([atUs, , mark]) => atUs / 1000 <= this.t && run.marks[mark] !== 'served');
    const counts = {};
    for (const [, , mark] of met) counts[run.marks[mark]] = (counts[run.marks[mark]] ?? 0) + 1;
    for (const [atUs, lane, mark, id] of met.slice(-6)) {
      const name = run.marks[mark];
      items.push([atUs, name === 'refresh'
        ? `${seconds(atUs / 1000)} · the client's map refresh ends`
        : `${seconds(atUs / 1000)} · ${name} at ${run.lanes[lane]}: ${story(run, requests[id], id, refreshes)}`, name]);
    }
    items.sort((a, b) => a[0] - b[0]);
    const tally = Object.entries(counts).map(([name, n]) => `${n} ${name}`).join(', ');
    $('played-tally').textContent = `Up to ${seconds(this.t)}, the Zaris client met: ${tally || 'nothing but answers'}.`;
    $('played-log').replaceChildren(...items.map(([, text, kind]) => {
      const li = document.createElement('li');
      li.textContent = text;
      li.dataset.kind = kind;
      return li;
    }));
  }

  /** The cursor in the URL, with the fields. */
  remember() {
    if (!document.body.dataset.ready) return;
    const state = new URLSearchParams(location.hash.slice(1));
    for (const id of FIELDS) state.set(`churn.${id}`, $(`played-${id}`).value);
    state.set('churn.t', String(this.t));
    history.replaceState(null, '', `#${state}`);
  }

  /** The fields and the cursor from the URL, where it has them. */
  fromUrl() {
    const state = new URLSearchParams(location.hash.slice(1));
    for (const id of FIELDS) {
      const value = state.get(`churn.${id}`);
      if (value !== null) $(`played-${id}`).value = value;
    }
    this.showFields();
    const t = Number(state.get('churn.t'));
    if (Number.isFinite(t)) this.t = t;
  }

  /** To the next (or, `back`, the previous) event. */
  step(back = false) {
    this.stepTo(back);
    // What happened there, said.
    const { run } = this.runs[0];
    const i = run.entries.findIndex(([atUs, , mark]) => Math.round(atUs / 1000) === this.t && run.marks[mark] !== 'served');
    const milestone = run.milestones.find(([atUs]) => Math.round(atUs / 1000) === this.t);
    if (milestone) $('played-detail').textContent = `${seconds(this.t)}: ${milestone[1]}`;
    else if (i >= 0) this.explain({ dataset: { i } });
  }

  /** Wires the controls. */
  wire() {
    $('played-event').addEventListener('change', () => { this.useDefaults(); this.t = 0; this.run(); });
    for (const id of FIELDS.slice(1)) $(`played-${id}`).addEventListener('change', () => this.run());
    $('played-run').addEventListener('click', () => { this.t = 0; if (this.run()) this.play(); });
    $('play-toggle').addEventListener('click', () => this.toggle());
    $('play-step').addEventListener('click', () => this.step());
    $('play-back').addEventListener('click', () => this.step(true));
    $('play-time').addEventListener('input', () => { this.pause(); this.seek(Number($('play-time').value)); });
    $('play-time').addEventListener('keydown', (e) => { if (e.key === ' ') this.key(e); });
    // The timeline's box takes the keys: it stays when a redraw replaces the drawing.
    $('played-lanes').addEventListener('keydown', (e) => this.key(e));
    let width = 0;
    new ResizeObserver(() => {
      const now = $('played-lanes').clientWidth;
      if (this.runs && Math.abs(now - width) > 8) { width = now; this.draw(); this.seek(this.t); }
    }).observe($('played-lanes'));
  }
}
