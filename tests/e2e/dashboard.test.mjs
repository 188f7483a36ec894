// The benchmark dashboard in headless Chromium: reached from the
// playground, every chart a real SVG that renders, the tables and the
// verdict on the bars present, nothing fetched from off the machine.
// `just dashboard` (or `just bench`) must have rendered web/dashboard/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, seriousViolations, serveStatic } from './browser.mjs';

const root = new URL('../../', import.meta.url).pathname;
const CHARTS = ['slot-ascii.svg', 'slot-tagged.svg', 'slot-utf8.svg', 'slot-binary.svg',
  'speedup.svg', 'route.svg', 'trend.svg'];

let server;
let browser;
let page;
const requests = [];

before(async () => {
  server = await serveStatic(join(root, 'web'));
  browser = await launchChromium({ width: 1000, height: 900 });
  page = browser.page;
  page.on('request', (r) => requests.push(r.url()));
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('the playground links to the dashboard', async () => {
  await page.goto(server.url);
  await page.click('#dashboard-link');
  await page.waitForURL(/\/dashboard\/index\.html$/);
  assert.equal(await page.textContent('h1'), 'Zaris benchmark dashboard');
});

test('every chart is a real SVG that renders with its data', async () => {
  for (const file of CHARTS) {
    const img = page.locator(`figure img[src="${file}"]`);
    assert.equal(await img.count(), 1, `${file} is on the page`);
    const size = await img.evaluate(async (el) => {
      await el.decode();
      return { width: el.naturalWidth, height: el.naturalHeight, shown: el.getBoundingClientRect().height };
    });
    assert.deepEqual([size.width, size.height], [760, 440], `${file} decodes as an image`);
    assert.ok(size.shown > 100, `${file} is laid out visibly`);
    const response = await page.request.get(new URL(file, page.url()).href);
    assert.equal(response.headers()['content-type'], 'image/svg+xml');
    const svg = await response.text();
    assert.match(svg, /^<svg[^>]+xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const marks = (svg.match(/<(polyline|rect|circle|line|path)\b/g) ?? []).length;
    assert.ok(marks > 10, `${file} draws its data (${marks} marks)`);
  }
});

test('the latest medians, the bars and the machine are shown', async () => {
  // Ten bars, and four for each CRC engine the latest run measured.
  const runs = readFileSync(join(root, 'bench', 'history.jsonl'), 'utf8').trim().split('\n');
  const latest = JSON.parse(runs[runs.length - 1]);
  const expected = 10 + 4 * (latest.engines ?? []).length;
  const bars = await page.locator('#bars tr').count();
  assert.equal(bars, expected + 1, `a header and ${expected} bars`);
  assert.match(await page.textContent('#verdict'),
    new RegExp(`^(All ${expected} bars are met|\\d+ of ${expected} bars are (NOT )?met) in the latest run`));
  // Red is for a miss with no floor to show: a bar out of its engine's
  // reach reads "at the floor", with the floor's figure.
  const verdicts = await page.locator('#bars td:nth-child(4)').evaluateAll((tds) => tds.map((td) => [td.className, td.textContent]));
  for (const [klass, text] of verdicts) {
    if (klass === 'missed') assert.equal(text, 'NOT met');
    else if (klass === 'floor') assert.match(text, /^at the floor.*ns at this clock/);
    else assert.deepEqual([klass, text], ['met', 'met']);
  }
  for (const engine of latest.engines ?? []) {
    assert.ok(await page.locator('#bars td', { hasText: `${engine} engine` }).count() >= 4, engine);
  }
  if ((latest.engines ?? []).length) {
    const rows = await page.locator('#engines-ascii tr').count();
    assert.equal(rows, 8, 'a header and seven key lengths');
  }
  assert.match(await page.textContent('#machine'), /Commit \S+, \d{4}-\d\d-\d\dT.*CPU: .+ \(\d+ logical CPUs\), CRC engine: .+rustc \d+\.\d+/s);
  // Seven key lengths for each key kind, a median in every cell.
  for (const kind of ['ascii', 'tagged', 'utf8', 'binary']) {
    const cells = await page.locator(`#slot-${kind} td:nth-child(2)`).allTextContents();
    assert.equal(cells.length, 7, kind);
    for (const cell of cells) assert.match(cell, /^\d+(\.\d+)?$/, `${kind}: ${cell}`);
  }
  const route = await page.locator('#route tr').count();
  assert.equal(route, 7, 'six route lookups');
  assert.ok(await page.locator('#history tr').count() >= 2, 'at least one recorded run');
});

test('the bars table fits at 1280 px and at 375 px', async () => {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 900 });
    const fit = await page.evaluate(() => {
      const table = document.getElementById('bars');
      return {
        table: table.getBoundingClientRect().right - document.querySelector('main').getBoundingClientRect().right,
        page: document.documentElement.scrollWidth - window.innerWidth,
      };
    });
    assert.ok(fit.table <= 1, `${width} px: the bars table overflows its column by ${fit.table} px`);
    assert.ok(fit.page <= 0, `${width} px: the page scrolls sideways by ${fit.page} px`);
  }
  await page.setViewportSize({ width: 1000, height: 900 });
});

test('accessibility: axe-core finds no serious or critical violation on either page', async () => {
  assert.deepEqual(await seriousViolations(page), [], 'the dashboard');
  await page.click('a[href="reliability.html"]');
  await page.waitForURL(/reliability\.html$/);
  assert.deepEqual(await seriousViolations(page), [], 'the reliability page');
  await page.goBack();
});

test('the client page charts every recorded bench-client run, per scenario', async () => {
  await page.click('a[href="client.html"]');
  await page.waitForURL(/client\.html$/);
  let runs = [];
  try {
    runs = readFileSync(join(root, 'bench', 'client-history.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse);
  } catch { /* none recorded */ }
  if (runs.length === 0) {
    assert.match(await page.textContent('#no-runs'), /just bench-client/);
  } else {
    const latest = runs[runs.length - 1];
    const rows = await page.locator('#client-latest tr').count();
    assert.equal(rows, latest.rows.length + 1, 'a header and a row per scenario and client');
    const scenarios = [...new Set(latest.rows.map((r) => r.scenario))];
    // ops/s, CPU, system calls, context switches, threads woken and instructions.
    assert.equal(await page.locator('figure img').count(), scenarios.length * 6, 'six charts per scenario');
    for (const img of await page.locator('figure img').all()) {
      const size = await img.evaluate(async (el) => { await el.decode(); return [el.naturalWidth, el.naturalHeight]; });
      assert.deepEqual(size, [760, 440]);
    }
    const zaris = latest.rows.find((r) => r.client === 'zaris');
    const cell = await page.locator('#client-latest tr', { hasText: zaris.scenario }).first().locator('td').nth(3).textContent();
    assert.equal(cell, zaris.cpu_us_per_op.toFixed(2));
    // The counts, where the run has them (runs before they were counted show a dash).
    const cells = page.locator('#client-latest tr', { hasText: zaris.scenario }).first().locator('td');
    const count = (value, digits) => (value == null ? '–' : value.toFixed(digits));
    assert.equal(await cells.nth(6).textContent(), count(zaris.syscalls_per_op, 2), 'syscalls per op');
    assert.equal(await cells.nth(12).textContent(), count(zaris.wakeups_per_op, 2), 'threads woken per op');
    assert.equal(await cells.nth(13).textContent(), count(zaris.instructions_per_op, 0), 'instructions per op');
  }
  assert.deepEqual(await seriousViolations(page), [], 'the client page');
  await page.goBack();
});

test('nothing is fetched from off the machine; a screenshot for the record', async () => {
  assert.ok(requests.length > CHARTS.length);
  for (const url of requests) assert.ok(url.startsWith(server.url), url);
  mkdirSync(join(root, 'target', 'e2e'), { recursive: true });
  await page.screenshot({ path: join(root, 'target', 'e2e', 'dashboard.png'), fullPage: true });
  assert.deepEqual(page.problems, []);
});
