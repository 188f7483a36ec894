// How long the playground takes to analyse many pasted keys, in headless
// Chromium: the keys box taking the text (the browser's own layout and
// paint of a 2 MB textarea, a floor no analysis can move), then the
// analysis after its 150 ms debounce, then painting its results.
// `just analysis-speed` (after `just web-build`).
import { launchChromium, serveStatic } from '../tests/e2e/browser.mjs';

const web = new URL('../web/', import.meta.url).pathname;
const server = await serveStatic(web);
const browser = await launchChromium({ width: 1280, height: 900 });
try {
  const page = browser.page;
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
  for (const n of [1_000, 10_000, 100_000]) {
    const ms = await page.evaluate(async (n) => {
      const keys = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? `{user${i % 500}}:cart:${i}` : `user:${i}:profile`)).join('\n');
      const area = document.getElementById('keys');
      const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
      const analysed = () => new Promise((done) => new MutationObserver((_, o) => { o.disconnect(); done(performance.now()); })
        .observe(document.getElementById('analysis'), { childList: true, subtree: true }));
      let start = performance.now();
      area.value = keys;
      area.getBoundingClientRect();
      await frame();
      const box = performance.now() - start;
      const done = analysed();
      start = performance.now();
      area.dispatchEvent(new Event('input'));
      const end = await done;
      const analysis = end - start - 150;
      await frame();
      return { box, analysis, paint: performance.now() - end };
    }, n);
    console.log(`${String(n).padStart(7)} keys: the box takes them in ${ms.box.toFixed(0)} ms; `
      + `analysis ${ms.analysis.toFixed(0)} ms after the debounce; its results painted in ${ms.paint.toFixed(0)} ms`);
  }
} finally {
  await browser.close();
  await server.close();
}
