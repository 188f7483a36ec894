// The slot space drawn: the 16,384 slots as a band, each master's ranges in
// its colour (widths proportional to slot counts), its replicas in a strip
// beneath, slots being migrated or imported hatched, and marks where keys
// land; and the density of many keys over the same slots. Plain SVG, no
// library: what to draw comes from the core (the map's nodes as JSON).

import { svg as el } from './dom.js';

export const SLOTS = 16384;
/** Masters' colours, in map order (readable on light and dark). */
export const PALETTE = ['#0b63ce', '#2e8b57', '#d9822b', '#8e44ad', '#c2185b', '#00838f', '#6d4c41', '#607d8b'];
/** The band's width in its own units, set per drawing to the container's
 * pixels, so its text keeps its size from a phone to a wide screen. */
let WIDTH = 1000;

const x = (slot) => (slot / SLOTS) * WIDTH;

/** Each master's colour by node index (replicas take their master's). */
export function colours(nodes) {
  const out = new Map();
  let next = 0;
  nodes.forEach((node, i) => {
    if (node.slots > 0 || !node.replica_of) out.set(i, PALETTE[next++ % PALETTE.length]);
  });
  nodes.forEach((node, i) => {
    if (node.replica_of) {
      const master = nodes.findIndex((m) => m.id === node.replica_of);
      if (master >= 0 && out.has(master)) out.set(i, out.get(master));
    }
  });
  return out;
}

/**
 * The band, into `container`. `marks`: `[{slot, kind: 'key'|'cmd'|'cross'|'pick'|'tick', label, short}]`
 * (`short`: the mark's visible label; a tick is a small line beneath).
 * `onPick(text)` is told what a range the user points at, taps or focuses
 * holds. `hatchId`: the hatch pattern's id, one per band on the page.
 */
export function drawBand(container, nodes, marks, onPick, hatchId = 'hatch') {
  WIDTH = Math.max(280, Math.round(container.clientWidth || 1000));
  const colour = colours(nodes);
  const height = 84;
  const root = el('svg', {
    viewBox: `0 0 ${WIDTH} ${height}`,
    role: 'group',
    'aria-label': 'The 16,384 slots, each master\'s ranges in its colour, its replicas beneath',
  });
  const defs = el('defs', {}, root);
  const hatch = el('pattern', { id: hatchId, width: 4, height: 4, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
  el('rect', { width: 4, height: 4, fill: 'var(--bg, #fff)' }, hatch);
  el('line', { x1: 0, y1: 0, x2: 0, y2: 4, stroke: 'var(--fg, #000)', 'stroke-width': 2 }, hatch);
  // Unassigned slots show as the empty band behind the ranges.
  el('rect', { x: 0, y: 22, width: WIDTH, height: 26, fill: 'var(--line, #ccc)', 'data-unassigned': 'true' }, root);
  const replicasOf = (i) => nodes.filter((n) => n.replica_of === nodes[i].id).map((n) => n.addr);
  nodes.forEach((node, i) => {
    for (const [first, last] of node.ranges) {
      const count = last - first + 1;
      const replicas = replicasOf(i);
      const text = `slots ${first}–${last} (${count}): master #${i} ${node.addr}; `
        + (replicas.length ? `replicas ${replicas.join(', ')}` : 'no replica');
      const range = el('rect', {
        x: x(first), y: 22, width: x(count), height: 26, fill: colour.get(i),
        class: 'range', tabindex: 0, 'data-node': i, 'data-first': first, 'data-last': last,
        'aria-label': text,
      }, root);
      el('title', {}, range).textContent = text;
      const show = () => onPick(text);
      range.addEventListener('click', show);
      range.addEventListener('focus', show);
      range.addEventListener('mouseenter', show);
      // Replicas beside their master: a strip beneath each range.
      if (replicas.length) {
        const strip = el('rect', {
          x: x(first), y: 51, width: x(count), height: 7, fill: colour.get(i), opacity: 0.45,
          'data-replicas-of': i,
        }, root);
        el('title', {}, strip).textContent = `replicas of #${i}: ${replicas.join(', ')}`;
      }
    }
    for (const [slot, direction, other] of node.moving ?? []) {
      const peer = nodes.findIndex((n) => n.id === other);
      const text = `slot ${slot}: ${direction === 'to' ? 'migrating from' : 'importing into'} #${i} ${node.addr} `
        + `${direction === 'to' ? 'to' : 'from'} ${peer >= 0 ? `#${peer} ${nodes[peer].addr}` : other.slice(0, 12)}`;
      const moving = el('rect', {
        x: x(slot), y: 22, width: Math.max(x(1), 3), height: 26, fill: `url(#${hatchId})`,
        class: 'moving', tabindex: 0, 'data-moving': slot, 'data-direction': direction, 'aria-label': text,
      }, root);
      el('title', {}, moving).textContent = text;
      moving.addEventListener('click', () => onPick(text));
      moving.addEventListener('focus', () => onPick(text));
    }
  });
  for (const tick of [0, 4096, 8192, 12288, 16383]) {
    const anchor = tick === 0 ? 'start' : tick === 16383 ? 'end' : 'middle';
    const label = el('text', { x: x(tick === 16383 ? SLOTS : tick), y: 80, class: 'axis', 'text-anchor': anchor }, root);
    if (WIDTH < 500 && (tick === 4096 || tick === 12288)) label.setAttribute('display', 'none');
    label.textContent = String(tick);
  }
  drawMarks(root, marks);
  container.replaceChildren(root);
  return root;
}

const MARK_COLOURS = { key: 'var(--fg, #000)', cmd: 'var(--accent, #0b63ce)', cross: 'var(--warn, #b3261e)', pick: 'var(--muted, #57606a)', tick: 'var(--fg, #000)' };

/** The marks: the key a filled triangle, a command's keys diamonds, a
 * picked slot a ring, each labelled above; ticks a short line beneath. */
function drawMarks(root, marks) {
  for (const mark of marks) {
    const at = x(mark.slot + 0.5);
    const colour = MARK_COLOURS[mark.kind];
    const g = el('g', { 'data-mark': mark.kind, 'data-slot': mark.slot }, root);
    if (mark.kind === 'tick') {
      el('line', { x1: at, x2: at, y1: 60, y2: 66, stroke: colour, 'stroke-width': 1.5 }, g);
    } else {
      el('line', { x1: at, x2: at, y1: 14, y2: 50, stroke: colour, 'stroke-width': 2 }, g);
      const shape = {
        key: `M${at - 5} 6 L${at + 5} 6 L${at} 14 Z`,
        pick: `M${at - 4} 10 a4 4 0 1 0 8 0 a4 4 0 1 0 -8 0`,
      }[mark.kind] ?? `M${at} 5 L${at + 5} 10 L${at} 15 L${at - 5} 10 Z`;
      el('path', { d: shape, fill: mark.kind === 'pick' ? 'none' : colour, stroke: colour, 'stroke-width': 1.5 }, g);
      if (mark.short) {
        const left = at > WIDTH - 60;
        el('text', { x: left ? at - 7 : at + 7, y: 12, class: 'mark-label', 'text-anchor': left ? 'end' : 'start', fill: colour }, g).textContent = mark.short;
      }
    }
    el('title', {}, g).textContent = mark.label;
  }
}

/**
 * How many of the keys land on each slot, as a heat strip under the band
 * (one column per 16 slots), each column in its owner's colour (`colourOf(slot)`),
 * darker where more keys land, with `mark` (a slot) shown.
 */
export function drawDensity(container, perSlot, mark, colourOf) {
  const columns = 1024;
  const per = SLOTS / columns;
  const bins = new Uint32Array(columns);
  for (const [slot, n] of perSlot) bins[Math.floor(slot / per)] += n;
  const max = Math.max(1, ...bins);
  const root = el('svg', {
    viewBox: `0 0 ${columns} 30`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `Keys per slot: the busiest 16-slot column holds ${max}`,
  });
  bins.forEach((n, i) => {
    if (n === 0) return;
    el('rect', {
      x: i, y: 0, width: 1, height: 24, fill: colourOf(i * per), opacity: (0.15 + (0.85 * n) / max).toFixed(3),
      'data-column': i, 'data-keys': n,
    }, root);
  });
  if (mark !== null && mark !== undefined) {
    const at = (mark + 0.5) / per;
    el('rect', { x: at - 1, y: 0, width: 2, height: 30, fill: 'var(--fg, #000)', 'data-mark': 'pick', 'data-slot': mark }, root);
  }
  container.replaceChildren(root);
}
