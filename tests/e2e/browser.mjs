// What the browser tests share: a static server for a directory on
// 127.0.0.1 (stopped by the test), and Debian's Chromium, headless, with a
// fresh profile, driven by playwright-core. Never a downloaded browser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export { serveStatic } from '../../tools/serve.mjs';

/**
 * Headless Chromium with one page: `{ page, close() }`. `page.problems`
 * collects page errors and console errors, for tests to assert empty.
 */
export async function launchChromium(viewport) {
  const profile = mkdtempSync(join(tmpdir(), 'zaris-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
  });
  const page = context.pages()[0] ?? await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.problems = problems;
  return {
    page,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * The serious and critical accessibility violations axe-core (from npm)
 * finds on the page as it stands: `[{id, impact, nodes: [selector]}]`.
 */
export async function seriousViolations(page) {
  const axe = new URL('../../node_modules/axe-core/axe.min.js', import.meta.url).pathname;
  await page.addScriptTag({ path: axe });
  const violations = await page.evaluate(async () => (await window.axe.run(document)).violations);
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
}

/** Text boxes in `selector`'s SVGs that overlap another's: `[[a, b]]`. */
export async function overlappingText(p, selector) {
  return p.locator(selector).evaluateAll((svgs) => {
    const out = [];
    for (const svg of svgs) {
      const boxes = [...svg.querySelectorAll('text')].filter((t) => t.getAttribute('display') !== 'none' && t.textContent)
        .map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, p] = boxes[i], [b, q] = boxes[j];
          if (p.left < q.right - 0.5 && q.left < p.right - 0.5 && p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5) out.push([a, b]);
        }
      }
    }
    return out;
  });
}

/**
 * Tables wider than their box (content cut off or scrolled) or than the
 * box they sit in (only a sideways scroll would show it): `[id]`.
 */
export async function overflowingTables(p) {
  return p.locator('table').evaluateAll((ts) => ts.filter((t) => t.offsetParent && (t.scrollWidth > t.clientWidth + 1
    || t.getBoundingClientRect().right > t.parentElement.getBoundingClientRect().right + 1))
    .map((t) => t.id || t.className));
}

/** The contrast ratio of an element's text on its background. */
export async function contrast(p, selector) {
  return p.locator(selector).first().evaluate((el) => {
    const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    // The background is the nearest one drawn: the element's or an ancestor's.
    let back = el;
    while (back.parentElement && /^rgba\(.*, 0\)$|^transparent$/.test(getComputedStyle(back).backgroundColor)) {
      back = back.parentElement;
    }
    const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(getComputedStyle(back).backgroundColor))];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  });
}
