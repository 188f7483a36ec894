// What the page modules share: an element by its id, an SVG element made
// and placed, and the colours of a request's marks (the churn player's
// lanes and the seed replay's).

export const SVG = 'http://www.w3.org/2000/svg';

/** The element whose id is `id`. */
export const $ = (id) => document.getElementById(id);

/** A new SVG element `name` with `attrs`, appended to `parent` if given. */
export function svg(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  parent?.appendChild(node);
  return node;
}

/** Each mark's colour, by the core's mark names. */
export const MARK_COLOURS = {
  served: '#2e8b57', moved: '#d9822b', ask: '#8e44ad', refused: '#b3261e',
  loop: '#c2185b', refresh: '#0b63ce', wait: '#7f8c8d', failed: '#6b0f0b', tryagain: '#00838f',
};
