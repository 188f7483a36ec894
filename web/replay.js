// "A seed, replayed": one run of the deterministic simulation (the real
// zaris-client against the model cluster, `just sim-trace SEED FILE`),
// read from its trace and drawn as the churn player draws: a lane per
// node with each attempt it received and each fault it suffered, the
// nemesis's events above, the workload's failed operations beneath, and
// the checker's verdict. Nothing here decides anything: the trace says
// what happened, this file reads it, draws it and moves a cursor.
//
// Why a trace file and not the simulator in wasm: the simulation runs the
// real client, which needs tokio's network and rustls (neither builds for
// wasm32-unknown-unknown), on turmoil, which needs threads.
import { $, svg, MARK_COLOURS } from './dom.js';
import { Playback } from './playback.js';

const seconds = (ms) => `${(ms / 1000).toFixed(3)} s`;

/** Replies that are answers, drawn faint; the rest are marks of their own. */
const ORDINARY = new Set(['data', 'OK', 'array', 'nil', 'QUEUED', 'push']);
/** Each notable reply's mark: its colour and what it means. */
export const REPLY_MARKS = {
  refresh: [MARK_COLOURS.refresh, 'the client asks for the map (CLUSTER SHARDS)'],
  'partial map': ['#e040fb', 'a map from a node that has not heard of every master'],
  MOVED: [MARK_COLOURS.moved, 'MOVED: the client\'s map was stale'],
  ASK: [MARK_COLOURS.ask, 'ASK: the key has left, mid-migration'],
  TRYAGAIN: [MARK_COLOURS.tryagain, 'TRYAGAIN: keys split mid-migration'],
  UNBLOCKED: ['#6d4c41', 'UNBLOCKED: a blocked command let go by a demotion'],
  CLUSTERDOWN: [MARK_COLOURS.refused, 'CLUSTERDOWN: the node serves no one that slot'],
  error: [MARK_COLOURS.failed, 'another error reply (NOSCRIPT, EXECABORT...)'],
};
/** The model's notes of faults and reconfigurations, in words. */
const NOTES = {
  kill: 'killed (kill -9)', restart: 'restarted', freeze: 'frozen (SIGSTOP)', thaw: 'thawed (SIGCONT)',
  partition: 'network', fault: 'network faults', drop: 'connections dropped', failover: 'manual failover',
  takeover: 'forced takeover', promoted: 'promoted', demoted: 'now a replica', join: 'joined', forget: 'forgotten',
  migrating: 'migrating', 'slot-moved': 'slot handed over', 'bus-blocked': 'bus blocked', failed: 'failed (detected)',
};
/** Seeds of the simulation the page carries (web/traces/index.json says
 * which); others are written by `just replay SEED`. */
const TRACES = new URL('./traces/', import.meta.url);

/** What a reply means for drawing: `null` for an ordinary answer. */
function markOf({ cmd, arg, reply }) {
  if (reply === 'partial map') return 'partial map';
  if (cmd === 'CLUSTER' && (arg === 'SHARDS' || arg === 'SLOTS')) return 'refresh';
  if (ORDINARY.has(reply) || /^-?\d+$/.test(reply)) return null;
  return REPLY_MARKS[reply] ? reply : 'error';
}

/**
 * A trace's lines, read: `{ attempts, notes, events, ops, violations,
 * verdict, nodes, durationMs, unreadable }`. Any text is read: a line that
 * is not the trace's JSON is counted in `unreadable`, never thrown.
 * Throws only when nothing in `text` is a trace.
 */
export function readTrace(text) {
  const out = { attempts: [], notes: [], events: [], ops: [], violations: [], verdict: null, unreadable: 0 };
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let j;
    try {
      j = JSON.parse(line);
    } catch {
      out.unreadable++;
      continue;
    }
    if (!j || typeof j !== 'object') { out.unreadable++; continue; }
    const ms = Number(j.t) / 1000;
    switch (j.kind) {
      case 'attempt': {
        const a = { ms, node: j.node | 0, conn: j.conn, cmd: String(j.cmd), arg: String(j.arg ?? ''), reply: String(j.reply) };
        // Read once here: drawing, stepping and the log at every frame use it.
        a.mark = markOf(a);
        out.attempts.push(a);
        break;
      }
      case 'op': {
        const [kind, key, value, invoked, completed, outcome = ''] = String(j.line).split('\t');
        out.ops.push({ kind, key, value, invoked: Number(invoked), completed: Number(completed), outcome, line: j.line });
        break;
      }
      case 'event':
        out.events.push({ kind: String(j.event), node: j.node, start: Number(j.start_ms), end: Number(j.end_ms), trouble: String(j.trouble ?? '') });
        break;
      case 'violation': out.violations.push(String(j.what)); break;
      case 'verdict': out.verdict = j; break;
      default:
        if (typeof j.kind === 'string' && Number.isFinite(ms)) {
          out.notes.push({ ms, kind: j.kind, node: j.node | 0, what: String(j.what ?? '') });
        } else {
          out.unreadable++;
        }
    }
  }
  if (!out.attempts.length && !out.verdict) {
    throw new Error('no line of it is a simulation trace (`just sim-trace SEED FILE` writes one)');
  }
  out.failed = out.ops.filter((o) => o.outcome !== 'ok' && o.outcome !== 'err:conflict');
  const blamed = new Set(out.violations.map((v) => v.split(': ').slice(1).join(': ')));
  for (const o of out.failed) o.violation = blamed.has(o.line);
  const ends = [...out.attempts.map((a) => a.ms), ...out.notes.map((n) => n.ms), ...out.ops.map((o) => o.completed),
    ...out.events.map((e) => e.end)].filter(Number.isFinite);
  out.durationMs = Math.ceil(Math.max(1000, ...ends) / 1000) * 1000;
  out.nodes = [...new Set([...out.attempts.map((a) => a.node), ...out.notes.map((n) => n.node)])]
    .filter((n) => n >= 0 && n < 1000).sort((a, b) => a - b);
  return out;
}

/** The trace file of `seed` (with `plant`), as `just replay` names it. */
export function traceName(seed, plant) {
  return `seed-${seed}${plant ? `-${plant}` : ''}.jsonl`;
}

async function gunzip(response) {
  const stream = response.body.pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

/** The playback of one trace. */
export class Replay extends Playback {
  constructor() {
    super('replay-toggle');
    this.trace = null;
    this.zoom = 0;
    this.window = [0, 0];
  }

  duration() { return this.trace ? this.trace.durationMs : null; }

  speed() { return Number($('replay-speed').value) || 1; }

  /** Loads `seed`'s trace from web/traces/ (plain, or gzipped as the page
   * ships it); says why not when it cannot. */
  async load(seed, plant) {
    const name = traceName(seed, plant);
    this.say(`Loading ${name}…`);
    // The page's own traces are gzipped; one `just replay` wrote is not.
    const shipped = (this.index ?? []).some((s) => s.seed === seed && (s.plant ?? null) === (plant ?? null));
    const [file, read] = shipped ? [`${name}.gz`, gunzip] : [name, (r) => r.text()];
    const response = await fetch(new URL(file, TRACES)).catch(() => null);
    const text = response?.ok ? await read(response).catch(() => null) : null;
    if (text === null) {
      this.fail(`No trace of seed ${seed}${plant ? ` with ${plant} planted` : ''} here. Write one with `
        + `\`just replay ${seed}${plant ? ` ${plant}` : ''}\` (it runs that seed and puts ${name} in web/traces/), then reload.`);
      return false;
    }
    return this.show(text, name, { seed, plant });
  }

  /** Shows a trace's text (`name` for the words). */
  show(text, name, wanted = {}) {
    let trace;
    try {
      trace = readTrace(text);
    } catch (error) {
      this.fail(`${name} cannot be replayed: ${error.message ?? error}.`);
      return false;
    }
    this.trace = trace;
    this.name = name;
    this.wanted = wanted;
    $('replay-error').hidden = true;
    for (const id of ['replay-toggle', 'replay-step', 'replay-back', 'replay-time', 'replay-zoom', 'replay-speed']) $(id).disabled = false;
    $('replay-time').max = trace.durationMs;
    this.stops = this.stopsOf(trace);
    this.verdict();
    this.mix();
    const made = (this.index ?? []).find((s) => s.seed === wanted.seed && (s.plant ?? null) === (wanted.plant ?? null));
    this.say(`${name}${made ? `, recorded at commit ${made.commit}` : ''}: ${trace.attempts.length.toLocaleString('en')} attempts `
      + `on ${trace.nodes.length} nodes, ${trace.notes.length} faults and reconfigurations, ${trace.events.length} events.`);
    this.t = Math.min(this.t, trace.durationMs);
    this.frame(true);
    $('replay-player').dataset.loaded = name;
    return true;
  }

  say(text) { $('replay-status').textContent = text; }

  fail(text) {
    this.pause();
    this.trace = null;
    $('replay-error').hidden = false;
    $('replay-error').textContent = text;
    this.say('');
    for (const id of ['replay-lanes', 'replay-log', 'replay-mix']) $(id).replaceChildren();
    $('replay-verdict').textContent = '';
    for (const id of ['replay-toggle', 'replay-step', 'replay-back', 'replay-time', 'replay-zoom', 'replay-speed']) $(id).disabled = true;
    delete $('replay-player').dataset.loaded;
  }

  /** Where stepping stops: each fault and reconfiguration, each event's
   * start and end, each failed operation, and each first redirect or
   * error of a burst. */
  stopsOf(trace) {
    const stops = new Set();
    for (const n of trace.notes) stops.add(Math.round(n.ms));
    for (const e of trace.events) { stops.add(Math.round(e.start)); stops.add(Math.round(e.end)); }
    for (const o of trace.failed) stops.add(Math.round(o.completed));
    let last = -Infinity;
    for (const a of trace.attempts) {
      const { mark } = a;
      if (mark && mark !== 'refresh' && a.ms - last > 50) stops.add(Math.round(a.ms));
      if (mark && mark !== 'refresh') last = a.ms;
    }
    return [...stops].filter(Number.isFinite).sort((a, b) => a - b);
  }

  /** The checker's verdict, first: what a reader came for. */
  verdict() {
    const { verdict, violations, ops, failed, unreadable } = this.trace;
    const box = $('replay-verdict');
    const plant = this.wanted.plant ? ` with the bug “${this.wanted.plant}” planted in the client` : '';
    const seed = verdict?.seed ?? this.wanted.seed ?? '?';
    const excused = failed.filter((o) => !o.violation).length;
    const head = verdict?.passed
      ? `Seed ${seed}${plant}: every check held.`
      : `Seed ${seed}${plant}: ${violations.length} check${violations.length === 1 ? '' : 's'} broken.`;
    box.dataset.passed = String(Boolean(verdict?.passed));
    box.replaceChildren();
    const strong = document.createElement('strong');
    strong.textContent = head;
    box.append(strong, ` ${ops.length.toLocaleString('en')} operations; ${failed.length} failed`
      + (failed.length ? `, ${excused} of them excused (a fault in their window that may fail operations, or attempts spent by the rules)` : '')
      + '.'
      + (unreadable ? ` (${unreadable} lines of the file were not understood and are left out.)` : ''));
    if (violations.length) {
      const list = document.createElement('ul');
      list.className = 'violations';
      for (const v of violations.slice(0, 5)) {
        const li = document.createElement('li');
        li.textContent = v.replaceAll('\t', ' ');
        list.append(li);
      }
      if (violations.length > 5) {
        const li = document.createElement('li');
        li.className = 'more';
        li.textContent = `and ${violations.length - 5} more: each is a red bar beneath the lanes.`;
        list.append(li);
      }
      box.append(list);
    }
  }

  /** The run's scenario: the events the seed drew, in order. */
  mix() {
    const list = $('replay-mix');
    list.replaceChildren(...this.trace.events.map((e) => {
      const li = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = `${e.kind} ${(e.start / 1000).toFixed(1)}–${(e.end / 1000).toFixed(1)} s`;
      button.title = `node ${e.node}${e.trouble ? `; went wrong: ${e.trouble}` : ''}`;
      button.addEventListener('click', () => { this.pause(); this.seek(e.start); this.detail(`${seconds(e.start)}: ${e.kind} begins at node ${e.node}, ends at ${seconds(e.end)}`); });
      li.append(button);
      return li;
    }));
  }

  /** The time shown: the whole run, or a window around the cursor. */
  windowAround(t) {
    const span = this.zoom || this.trace.durationMs;
    const from = Math.max(0, Math.min(this.trace.durationMs - span, t - span / 2));
    return [from, from + span];
  }

  /** Draws the lanes for the window. */
  draw() {
    const trace = this.trace;
    const [from, to] = this.window;
    const container = $('replay-lanes');
    const width = Math.max(320, Math.round(container.clientWidth || 960));
    const left = width < 600 ? 64 : 96, laneH = 18, top = 4;
    const rows = ['events', ...trace.nodes.map((n) => `node ${n}`), 'workload'];
    const height = top + rows.length * laneH + 20;
    const x = (ms) => left + ((ms - from) / (to - from)) * (width - left - 8);
    this.x = x;
    this.left = left;
    this.plotWidth = width - left - 8;
    const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, 'aria-hidden': 'true', 'data-from': from, 'data-to': to });
    const laneY = (i) => top + i * laneH;
    rows.forEach((name, i) => {
      svg('rect', { x: left, y: laneY(i), width: width - left - 8, height: laneH - 3, class: i % 2 ? 'lane' : 'lane alt' }, root);
      svg('text', { x: 4, y: laneY(i) + laneH / 2 + 4, class: 'lane-name' }, root).textContent = name;
    });
    const inView = (ms) => ms >= from && ms <= to;
    // Ticks at least 44 px apart: seconds, or parts of one when zoomed in.
    const pxPerMs = (width - left - 8) / (to - from);
    const step = [50, 100, 250, 500, 1000, 2000, 5000, 10000, 20000].find((s) => s * pxPerMs >= 44) ?? 30000;
    for (let s = Math.ceil(from / step) * step; s <= to; s += step) {
      svg('text', { x: x(s), y: height - 4, class: 'lane-name', 'text-anchor': 'middle' }, root).textContent = step >= 1000 ? `${s / 1000} s` : `${(s / 1000).toFixed(2)}`;
    }
    // The events: a span each, named when it fits.
    const events = svg('g', { class: 'events' }, root);
    trace.events.forEach((e, i) => {
      if (e.end < from || e.start > to) return;
      const a = x(Math.max(from, e.start)), b = Math.max(a + 2, x(Math.min(to, e.end)));
      const rect = svg('rect', { x: a, y: laneY(0) + 1, width: b - a, height: laneH - 5, class: 'event-span', 'data-e': i }, events);
      svg('title', {}, rect).textContent = `${e.kind}, node ${e.node}: ${seconds(e.start)} to ${seconds(e.end)}`;
      if (b - a > 8 * e.kind.length) svg('text', { x: a + 3, y: laneY(0) + laneH / 2 + 3, class: 'event-name' }, events).textContent = e.kind;
    });
    const row = new Map(trace.nodes.map((n, i) => [n, i + 1]));
    // Answers are many: one faint path a lane.
    const faint = new Map();
    const marks = svg('g', { class: 'marks' }, root);
    trace.attempts.forEach((a, i) => {
      if (!inView(a.ms)) return;
      const r = row.get(a.node);
      if (r === undefined) return;
      const { mark } = a;
      if (!mark) {
        const px = Math.round(x(a.ms));
        const set = faint.get(r) ?? new Set();
        set.add(px);
        faint.set(r, set);
        return;
      }
      svg('rect', {
        x: x(a.ms) - 1, y: laneY(r) + 1, width: 2.5, height: laneH - 5, fill: REPLY_MARKS[mark][0], 'data-mark': mark, 'data-i': i,
      }, marks);
    });
    for (const [r, pxs] of faint) {
      const d = [...pxs].map((px) => `M${px} ${laneY(r) + 5}v${laneH - 13}`).join('');
      svg('path', { d, class: 'answers' }, root);
    }
    root.appendChild(marks);
    // Faults and reconfigurations: a diamond on the node's lane.
    const notes = svg('g', { class: 'notes' }, root);
    trace.notes.forEach((n, i) => {
      const r = row.get(n.node);
      if (r === undefined || !inView(n.ms)) return;
      const cx = x(n.ms), cy = laneY(r) + laneH / 2 - 1.5;
      svg('path', { d: `M${cx} ${cy - 6}l5 6l-5 6l-5 -6z`, class: `note note-${n.kind}`, 'data-n': i }, notes);
    });
    // The workload's failed operations: excused, or a violation.
    const w = rows.length - 1;
    const failed = svg('g', { class: 'failed' }, root);
    trace.failed.forEach((o, i) => {
      if (o.completed < from || o.invoked > to) return;
      const a = x(Math.max(from, o.invoked)), b = Math.max(a + 2.5, x(Math.min(to, o.completed)));
      svg('rect', { x: a, y: laneY(w) + 1, width: b - a, height: laneH - 5, class: o.violation ? 'op violation' : 'op excused', 'data-o': i }, failed);
    });
    this.cursor = svg('line', { x1: left, x2: left, y1: 0, y2: height - 16, class: 'cursor', 'data-cursor': 'true' }, root);
    root.addEventListener('mousemove', (e) => this.explain(e.target));
    root.addEventListener('click', (e) => {
      const box = root.getBoundingClientRect();
      const px = ((e.clientX - box.left) / box.width) * width;
      if (px >= left) { this.pause(); this.seek(from + ((px - left) / this.plotWidth) * (to - from)); }
      this.explain(e.target);
    });
    container.replaceChildren(root);
  }

  /** What the mark under the pointer is. */
  explain(target) {
    const d = target?.dataset ?? {};
    const trace = this.trace;
    if (!trace) return;
    if (d.i !== undefined) {
      const a = trace.attempts[Number(d.i)];
      const { mark } = a;
      this.detail(`${seconds(a.ms)}, node ${a.node} (connection ${a.conn}): ${a.cmd} ${a.arg.slice(0, 60)} → ${a.reply}`
        + (mark ? `: ${REPLY_MARKS[mark][1]}` : ''));
    } else if (d.n !== undefined) {
      const n = trace.notes[Number(d.n)];
      this.detail(`${seconds(n.ms)}, node ${n.node}: ${NOTES[n.kind] ?? n.kind}${n.what ? `: ${n.what}` : ''}`);
    } else if (d.o !== undefined) {
      const o = trace.failed[Number(d.o)];
      this.detail(`${o.violation ? 'A violation' : 'Failed, excused by a fault in its window'}: ${o.kind} ${o.key} from ${seconds(o.invoked)} to ${seconds(o.completed)}: ${o.outcome.replace(/^err:/, '')}`);
    } else if (d.e !== undefined) {
      const e = trace.events[Number(d.e)];
      this.detail(`${e.kind} at node ${e.node}, ${seconds(e.start)} to ${seconds(e.end)}${e.trouble ? `; went wrong: ${e.trouble}` : ''}`);
    }
  }

  detail(text) { $('replay-detail').textContent = text; }

  /** Moves the cursor to `ms`. */
  seek(ms) {
    if (!this.trace) return;
    this.t = Math.max(0, Math.min(this.trace.durationMs, Math.round(ms)));
    this.frame(false);
  }

  /** The cursor, the window (redrawn when the cursor left it), the log. */
  frame(redraw) {
    const [from, to] = this.window;
    if (redraw || this.t < from || this.t > to || !this.cursor) {
      this.window = this.windowAround(this.t);
      this.draw();
    }
    this.showTime('replay-time', 'replay-clock');
    this.log();
    if (!this.timer) this.remember();
  }

  /** What happened up to the cursor: the last faults, redirects and
   * failures, and a tally. */
  log() {
    const trace = this.trace;
    const t = this.t;
    const items = [];
    for (const n of trace.notes) if (n.ms <= t) items.push([n.ms, `node ${n.node}: ${NOTES[n.kind] ?? n.kind}${n.what ? ` (${n.what})` : ''}`, 'fault']);
    for (const e of trace.events) if (e.start <= t) items.push([e.start, `${e.kind} begins`, 'event']);
    const counts = {};
    let shown = 0;
    for (const a of trace.attempts) {
      if (a.ms > t) break;
      const { mark } = a;
      if (!mark || mark === 'refresh') continue;
      counts[mark] = (counts[mark] ?? 0) + 1;
      items.push([a.ms, `node ${a.node}: ${a.cmd} ${a.arg.slice(0, 40)} → ${a.reply}`, mark]);
      shown++;
    }
    for (const o of trace.failed) if (o.completed <= t) items.push([o.completed, `${o.violation ? 'VIOLATION' : 'failed, excused'}: ${o.kind} ${o.key}: ${o.outcome.replace(/^err:/, '')}`, o.violation ? 'violation' : 'excused']);
    items.sort((a, b) => a[0] - b[0]);
    const refreshes = trace.attempts.filter((a) => a.ms <= t && a.mark === 'refresh').length;
    const words = { error: 'other error replies', 'partial map': 'partial maps' };
    const tally = Object.entries(counts).map(([m, n]) => `${n} ${words[m] ?? m}`).join(', ');
    const failed = trace.failed.filter((o) => o.completed <= t).length;
    $('replay-tally').textContent = `Up to ${seconds(t)}: ${refreshes} map requests, ${tally || 'no redirect or error reply'}; `
      + `${failed} operation${failed === 1 ? '' : 's'} failed.`;
    $('replay-log').replaceChildren(...items.slice(-12).map(([ms, text, kind]) => {
      const li = document.createElement('li');
      li.textContent = `${seconds(ms)} · ${text}`;
      li.dataset.kind = kind;
      return li;
    }));
  }

  /** The seed (and plant) and the cursor in the URL. */
  remember() {
    if (!this.wanted?.seed || !document.body.dataset.ready) return;
    const url = new URL(location.href);
    url.searchParams.set('seed', this.wanted.seed);
    if (this.wanted.plant) url.searchParams.set('plant', this.wanted.plant); else url.searchParams.delete('plant');
    url.searchParams.set('t', String(this.t));
    history.replaceState(null, '', url);
  }

  /** To the next (or, `back`, the previous) thing that happened. */
  step(back = false) {
    this.stepTo(back);
    const last = $('replay-log').lastElementChild;
    if (last) this.detail(last.textContent);
  }

  /** The seeds the page carries, for the picker. */
  async seeds() {
    const response = await fetch(new URL('index.json', TRACES)).catch(() => null);
    const index = response?.ok ? await response.json().catch(() => []) : [];
    this.index = Array.isArray(index) ? index : [];
    const select = $('replay-seed');
    select.replaceChildren(...index.map((s) => Object.assign(document.createElement('option'), {
      value: JSON.stringify([s.seed, s.plant ?? '']), textContent: `seed ${s.seed}${s.plant ? ` (${s.plant} planted)` : ''}: ${s.why}`,
    })));
    return index;
  }

  wire() {
    $('replay-seed').addEventListener('change', () => {
      const [seed, plant] = JSON.parse($('replay-seed').value);
      this.t = 0;
      this.load(seed, plant || null);
    });
    $('replay-file').addEventListener('change', async () => {
      const file = $('replay-file').files[0];
      if (!file) return;
      const text = file.name.endsWith('.gz') ? await gunzip(new Response(file)) : await file.text();
      this.t = 0;
      this.show(text, file.name);
    });
    $('replay-toggle').addEventListener('click', () => this.toggle());
    $('replay-step').addEventListener('click', () => this.step());
    $('replay-back').addEventListener('click', () => this.step(true));
    $('replay-time').addEventListener('input', () => { this.pause(); this.seek(Number($('replay-time').value)); });
    $('replay-zoom').addEventListener('change', () => { this.zoom = Number($('replay-zoom').value); if (this.trace) this.frame(true); });
    $('replay-lanes').addEventListener('keydown', (e) => this.key(e));
    let width = 0;
    new ResizeObserver(() => {
      const now = $('replay-lanes').clientWidth;
      if (this.trace && Math.abs(now - width) > 8) { width = now; this.frame(true); }
    }).observe($('replay-lanes'));
    $('replay-legend').innerHTML = Object.entries(REPLY_MARKS)
      .map(([name, [colour, meaning]]) => `<span><i style="background:${colour}"></i>${meaning}</span>`).join('')
      + '<span><i class="answers"></i>an answer</span><span><b class="note-key">◆</b> a fault or reconfiguration of the node '
      + '(<b class="note-up">◆</b> joins, restarts or takes over; <b class="note-down">◆</b> killed, forgotten or failed)</span>'
      + '<span><i class="excused"></i>an operation failed, excused</span><span><i class="violation"></i>a violation</span>';
  }

  /** The seed in the URL (`?seed=N&plant=NAME&t=MS`), or the first the
   * page carries. */
  async fromUrl() {
    const index = await this.seeds();
    const url = new URL(location.href);
    const seed = url.searchParams.get('seed');
    const t = Number(url.searchParams.get('t'));
    if (Number.isFinite(t)) this.t = t;
    if (seed !== null && /^\d{1,20}$/.test(seed)) {
      const plant = url.searchParams.get('plant');
      const known = JSON.stringify([Number(seed), plant ?? '']);
      if ([...$('replay-seed').options].some((o) => o.value === known)) $('replay-seed').value = known;
      return this.load(Number(seed), plant && /^[a-z-]{1,40}$/.test(plant) ? plant : null);
    }
    if (seed !== null) {
      this.fail(`“${seed}” is not a seed: a seed is a whole number, as in ?seed=42.`);
      return false;
    }
    if (!index.length) { this.fail('This page carries no traces (web/traces/index.json is missing).'); return false; }
    return this.load(index[0].seed, index[0].plant ?? null);
  }
}
