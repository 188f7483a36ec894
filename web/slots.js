// The slot space drawn: the 16,384 slots as a band, each master's ranges in
// its colour (widths proportional to slot counts), its replicas in a strip
// beneath, slots being migrated or imported hatched, and marks where keys
// land; and the density of many keys over the same slots. Plain SVG, no
// library: what to draw comes from the core (the map's nodes as JSON).

const SVG = 'http://www.w3.org/2000/svg';
export const SLOTS = 16384;
/** Masters' colours, in map order (readable on light and dark). */
export const PALETTE = ['#0b63ce', '#2e8b57', '#d9822b', '#8e44ad', '#c2185b', '#00838f', '#6d4c41', '#607d8b'];
const WIDTH = 1000;

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  parent?.appendChild(node);
  return node;
}

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
 * The band, into `container`. `marks`: `[{slot, kind: 'key'|'cmd'|'cross'|'pick', label}]`.
 * `onPick(text)` is told what a range the user points at, taps or focuses
 * holds.
 */
export function drawBand(container, nodes, marks, onPick) {
  const colour = colours(nodes);
  const height = 74;
  const root = el('svg', {
    viewBox: `0 0 ${WIDTH} ${height}`,
    role: 'group',
    'aria-label': 'The 16,384 slots, each master\'s ranges in its colour, its replicas beneath',
  });
  const defs = el('defs', {}, root);
  const hatch = el('pattern', { id: 'hatch', width: 4, height: 4, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, defs);
  el('rect', { width: 4, height: 4, fill: 'var(--bg, #fff)' }, hatch);
  el('line', { x1: 0, y1: 0, x2: 0, y2: 4, stroke: 'var(--fg, #000)', 'stroke-width': 2 }, hatch);
  // Unassigned slots show as the empty band behind the ranges.
  el('rect', { x: 0, y: 18, width: WIDTH, height: 26, fill: 'var(--line, #ccc)', 'data-unassigned': 'true' }, root);
  const replicasOf = (i) => nodes.filter((n) => n.replica_of === nodes[i].id).map((n) => n.addr);
  nodes.forEach((node, i) => {
    for (const [first, last] of node.ranges) {
      const count = last - first + 1;
      const replicas = replicasOf(i);
      const text = `slots ${first}–${last} (${count}): master #${i} ${node.addr}; `
        + (replicas.length ? `replicas ${replicas.join(', ')}` : 'no replica');
      const range = el('rect', {
        x: x(first), y: 18, width: x(count), height: 26, fill: colour.get(i),
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
          x: x(first), y: 47, width: x(count), height: 7, fill: colour.get(i), opacity: 0.45,
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
        x: x(slot), y: 18, width: Math.max(x(1), 3), height: 26, fill: 'url(#hatch)',
        class: 'moving', tabindex: 0, 'data-moving': slot, 'data-direction': direction, 'aria-label': text,
      }, root);
      el('title', {}, moving).textContent = text;
      moving.addEventListener('click', () => onPick(text));
      moving.addEventListener('focus', () => onPick(text));
    }
  });
  for (const tick of [0, 4096, 8192, 12288, 16383]) {
    const label = el('text', { x: Math.min(x(tick), WIDTH - 30), y: 70, class: 'axis' }, root);
    label.textContent = String(tick);
  }
  drawMarks(root, marks);
  container.replaceChildren(root);
  return root;
}

const MARK_COLOURS = { key: 'var(--fg, #000)', cmd: 'var(--fg, #000)', cross: 'var(--warn, #b3261e)', pick: 'var(--accent, #0b63ce)' };

function drawMarks(root, marks) {
  for (const mark of marks) {
    const at = x(mark.slot + 0.5);
    const g = el('g', { 'data-mark': mark.kind, 'data-slot': mark.slot }, root);
    el('line', { x1: at, x2: at, y1: 8, y2: 46, stroke: MARK_COLOURS[mark.kind], 'stroke-width': 2 }, g);
    el('path', { d: `M${at - 5} 2 L${at + 5} 2 L${at} 10 Z`, fill: MARK_COLOURS[mark.kind] }, g);
    el('title', {}, g).textContent = mark.label;
  }
}

/**
 * How many of the keys land on each slot, as a heat strip over the same
 * slot space (one column per 16 slots), with `mark` (a slot) shown.
 */
export function drawDensity(container, perSlot, mark) {
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
      x: i, y: 0, width: 1, height: 24, fill: 'var(--warn, #b3261e)', opacity: (0.15 + (0.85 * n) / max).toFixed(3),
      'data-column': i, 'data-keys': n,
    }, root);
  });
  if (mark !== null && mark !== undefined) {
    const at = (mark + 0.5) / per;
    el('rect', { x: at - 1, y: 0, width: 2, height: 30, fill: 'var(--accent, #0b63ce)', 'data-mark': 'pick', 'data-slot': mark }, root);
  }
  container.replaceChildren(root);
}
