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
