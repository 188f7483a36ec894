// The benchmark dashboard in headless Chromium, read as a newcomer would:
// reached from the playground; every chart a real SVG whose text never
// collides, with its bars drawn; verdicts first, conclusions in view, and
// worse-than-peer figures flagged; soaks that broke a check flagged; every
// table fitting at 1280 and 375 px, in light and dark; nothing fetched
// from off the machine. `just dashboard` (or `just bench`) must have
// rendered web/dashboard/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  contrast, launchChromium, overflowingTables, overlappingText, seriousViolations, serveStatic,
} from './browser.mjs';

const root = new URL('../../', import.meta.url).pathname;
const IMG_CHARTS = ['slot-ascii.svg', 'slot-tagged.svg', 'slot-utf8.svg', 'slot-binary.svg',
  'speedup.svg', 'route.svg'];
const PAGES = ['index.html', 'client.html', 'reliability.html'];
const WIDTHS = [[1280, 'light'], [1280, 'dark'], [375, 'light'], [375, 'dark']];
/** How many of the latest runs a chart over runs shows (bench/src/trend.rs). */
const RUNS_SHOWN = 10;

const jsonLines = (file) => {
  try {
    return readFileSync(join(root, file), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
};

let server;
let browser;
let page;
const requests = [];
const failed = [];

before(async () => {
  server = await serveStatic(join(root, 'web'));
  browser = await launchChromium({ width: 1280, height: 900 });
  page = browser.page;
  page.on('request', (r) => requests.push(r.url()));
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const open = (name) => page.goto(new URL(`dashboard/${name}`, server.url).href);

test('the playground links to the dashboard', async () => {
  await page.goto(server.url);
  await page.click('#dashboard-link');
  await page.waitForURL(/\/dashboard\/index\.html$/);
  assert.equal(await page.textContent('h1'), 'Zaris benchmark dashboard');
});

test('every chart is a real SVG that renders its data, and draws its bars', async () => {
  await open('index.html');
  for (const file of IMG_CHARTS) {
    const img = page.locator(`figure img[src="${file}"]`);
    assert.equal(await img.count(), 1, `${file} is on the page`);
    const size = await img.evaluate(async (el) => {
      await el.decode();
      return { width: el.naturalWidth, height: el.naturalHeight, shown: el.getBoundingClientRect().height };
    });
    assert.equal(size.width, 760, `${file} decodes as an image`);
    assert.ok(size.height >= 440, `${file}: ${size.height} px tall`);
    assert.ok(size.shown > 100, `${file} is laid out visibly`);
    const response = await page.request.get(new URL(file, page.url()).href);
    assert.equal(response.headers()['content-type'], 'image/svg+xml');
    const svg = await response.text();
    assert.match(svg, /^<svg class="chart" [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const marks = (svg.match(/<(polyline|rect|circle|line|path)\b/g) ?? []).length;
    assert.ok(marks > 10, `${file} draws its data (${marks} marks)`);
  }
  // Each bar to meet is drawn on the chart of what it judges, named after
  // whom it holds against.
  const text = async (file) => (await page.request.get(new URL(file, page.url()).href)).text();
  const speedup = await text('speedup.svg');
  for (const bar of ['bar vs crc16 and redis-protocol', 'bar vs crc-slice16 and crc-fast (no slower)',
    'bar vs crc-fast (1.5x)', '≥2x', '≥20x']) {
    assert.ok(speedup.includes(bar), `speed-up chart: ${bar}`);
  }
  assert.match(await text('route.svg'), /bar for zaris-table: slot_for_key \+ 2 ns/);
  assert.match(await text('slot-tagged.svg'), /bar for zaris: untagged \+ 1 ns/);
});

test('no chart\'s text collides, drawn as the page shows it', async () => {
  // The image charts, each drawn inline in a page of its own.
  await open('index.html');
  for (const file of [...IMG_CHARTS, 'soak-timeline.svg']) {
    const svg = await (await page.request.get(new URL(file, page.url()).href)).text();
    await page.setContent(`<!doctype html><link rel="icon" href="data:,"><body style="margin:0">${svg}</body>`);
    assert.deepEqual(await overlappingText(page, 'svg'), [], file);
  }
  // The charts over runs, inline in their pages.
  for (const name of ['index.html', 'client.html']) {
    await open(name);
    const charts = await page.locator('figure svg.chart').count();
    assert.ok(charts >= 1, `${name} draws its charts over runs inline`);
    assert.deepEqual(await overlappingText(page, 'figure svg.chart'), [], name);
  }
});

test('the commit axis: the last runs, each with its commit and date on hover', async () => {
  const runs = jsonLines('bench/history.jsonl');
  await open('index.html');
  const trend = page.locator('figure svg.chart[aria-label="Zaris medians over recorded runs"]');
  assert.equal(await trend.count(), 1);
  const tips = await trend.locator('rect.run > title').allTextContents();
  const shown = runs.slice(-RUNS_SHOWN);
  assert.equal(tips.length, shown.length, 'a hover band per run shown');
  tips.forEach((tip, i) => {
    assert.ok(tip.startsWith(`${shown[i].commit} · ${shown[i].date}`), tip);
    const median = shown[i].medians_ns['slot-ascii/zaris/8'];
    if (median != null) assert.match(tip, /\nslot-ascii\/zaris\/8: [\d.]+/);
  });
  // The latest run is labelled under the axis.
  const labels = await trend.locator('text').allTextContents();
  assert.ok(labels.some((l) => l.trim() === runs.at(-1).commit.slice(0, 7)), 'the latest commit is labelled');
  // A hover band covers its run's point: the browser shows its title there.
  const band = trend.locator('rect.run').last();
  const box = await band.boundingBox();
  assert.ok(box.width > 20 && box.height > 100, JSON.stringify(box));
});

test('the bars table: its verdicts, and no rule drawn through it', async () => {
  await open('index.html');
  // Ten bars, and four for each CRC engine the latest run measured.
  const latest = jsonLines('bench/history.jsonl').at(-1);
  const expected = 10 + 4 * (latest.engines ?? []).length;
  assert.equal(await page.locator('#bars tbody tr').count(), expected);
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
  // The verdict's left rule is the paragraph's, not the column's.
  const rules = await page.locator('#bars col').evaluateAll((cols) => cols.map((c) => getComputedStyle(c).borderLeftWidth));
  assert.deepEqual([...new Set(rules)], ['0px']);
  assert.match(await page.textContent('#machine'), /Commit \S+, \d{4}-\d\d-\d\dT.*CPU: .+ \(\d+ logical CPUs\), CRC engine: .+rustc \d+\.\d+/s);
  // Seven key lengths for each key kind, a median in every cell.
  for (const kind of ['ascii', 'tagged', 'utf8', 'binary']) {
    const cells = await page.locator(`#slot-${kind} td:nth-child(2)`).allTextContents();
    assert.equal(cells.length, 7, kind);
    for (const cell of cells) assert.match(cell, /^\d+(\.\d+)?$/, `${kind}: ${cell}`);
  }
  if ((latest.engines ?? []).length) {
    assert.equal(await page.locator('#engines-ascii tbody tr').count(), 7, 'seven key lengths');
  }
  assert.equal(await page.locator('#route tbody tr').count(), 6, 'six route lookups');
  assert.ok(await page.locator('#history tbody tr').count() >= 1, 'at least one recorded run');
});

test('the client page: verdicts first, conclusions in view, worse figures flagged', async () => {
  await open('client.html');
  const recorded = jsonLines('bench/client-history.jsonl');
  // A run may have measured the write pause alone: the counts are the
  // other runs'.
  const runs = recorded.filter((r) => r.rows.length > 0);
  if (runs.length === 0) {
    assert.match(await page.textContent('#no-runs'), /just bench-client/);
    return;
  }
  const latest = runs.at(-1);
  const row = (scenario, client) => latest.rows.find((r) => r.scenario === scenario && r.client === client);
  const scenarios = [...new Set(latest.rows.map((r) => r.scenario))];
  // The contents lead somewhere real.
  for (const href of await page.locator('nav.toc a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))) {
    assert.equal(await page.locator(href).count(), 1, href);
  }
  assert.equal(await page.locator('nav.toc ol ol li').count(), scenarios.length);
  // The verdicts come before the detail, and their every column is in view
  // at 1280 px without scrolling sideways.
  const order = await page.evaluate(() => ['verdict', 'client-verdicts', 'client-latest']
    .map((id) => document.getElementById(id).getBoundingClientRect().top));
  assert.ok(order[0] < order[1] && order[1] < order[2], `${order}`);
  const right = await page.locator('#client-verdicts th').last().evaluate((th) => th.getBoundingClientRect().right);
  assert.ok(right <= 1280, `the verdict column ends at ${right} px`);
  // Each verdict, judged here from the recorded run: Zaris over the best
  // peer, CPU within 10%, system calls within 5%, instructions not over.
  const bars = [['CPU', 'cpu_us_per_op', 1.10], ['syscalls', 'syscalls_per_op', 1.05],
    ['instructions', 'instructions_per_op', 1.00]];
  const table = await page.locator('#client-verdicts tbody tr').evaluateAll((trs) => trs.map((tr) =>
    Object.fromEntries([...tr.cells].map((td) => [td.dataset.label, { text: td.textContent, worse: td.classList.contains('worse') }]))));
  let missedBars = 0;
  for (const r of table) {
    const ours = row(r.scenario.text, r.client.text);
    const missed = [];
    for (const [name, key, most] of bars) {
      const peerRows = ['fred', 'redis-rs'].map((c) => row(r.scenario.text, c)).filter((p) => p?.[key] > 0);
      if (ours[key] == null || peerRows.length === 0) continue;
      const best = peerRows.reduce((a, b) => (b[key] < a[key] ? b : a));
      const ratio = ours[key] / best[key];
      assert.ok(r[name].text.includes(`${ratio.toFixed(2)}x`), `${r.scenario.text} ${r.client.text} ${name}: ${r[name].text}`);
      // Against a peer that blocks in recv (no epoll_wait), system calls
      // are judged without Zaris's epoll_waits.
      const blocking = key === 'syscalls_per_op' && best.epoll_waits_per_op != null
        && best.epoll_waits_per_op <= best.syscalls_per_op / 1000 && ours.epoll_waits_per_op != null;
      const judged = blocking ? (ours[key] - ours.epoll_waits_per_op) / best[key] : ratio;
      if (blocking) assert.ok(r[name].text.includes(`${judged.toFixed(2)}x`), `${r.scenario.text}: ${r[name].text}`);
      assert.equal(r[name].worse, judged > most, `${r.scenario.text} ${r.client.text} ${name} flagged`);
      if (judged > most) missed.push(name);
    }
    missedBars += missed.length;
    assert.equal(r.verdict.text.startsWith('met'), missed.length === 0, `${r.scenario.text} ${r.client.text}: ${r.verdict.text}`);
  }
  const verdict = await page.textContent('#verdict');
  if (missedBars === 0) assert.match(verdict, /^All \d+ bars are met/);
  else assert.match(verdict, new RegExp(`^${missedBars} of \\d+ bars are NOT met`));
  // The detail: a Zaris figure more than 2% worse than the best peer's is
  // flagged, and none other.
  const cells = await page.locator('#client-latest tbody tr').evaluateAll((trs) => trs.map((tr) =>
    Object.fromEntries([...tr.cells].map((td) => [td.dataset.label, { text: td.textContent, worse: td.classList.contains('worse') }]))));
  assert.equal(cells.length, latest.rows.length, 'a row per scenario and client');
  for (const c of cells) {
    const ours = row(c.scenario.text, c.client.text);
    if (['fred', 'redis-rs'].includes(c.client.text)) {
      assert.ok(Object.values(c).every((v) => !v.worse), 'peers are not flagged');
      continue;
    }
    for (const [label, key, more] of [['CPU µs/op', 'cpu_us_per_op', false], ['syscalls', 'syscalls_per_op', false],
      ['instructions', 'instructions_per_op', false], ['ops/s', 'ops_per_sec', true]]) {
      const peers = ['fred', 'redis-rs'].map((p) => row(c.scenario.text, p)?.[key]).filter((v) => v > 0);
      if (ours[key] == null || peers.length === 0) continue;
      const best = more ? Math.max(...peers) : Math.min(...peers);
      const digits = key === 'instructions_per_op' || key === 'ops_per_sec' ? 0 : 2;
      const differs = ours[key].toFixed(digits) !== best.toFixed(digits);
      const worse = differs && (more ? ours[key] < best / 1.02 : ours[key] > best * 1.02);
      assert.equal(c[label].worse, worse, `${c.scenario.text} ${c.client.text} ${label}: ${c[label].text} vs ${best}`);
      assert.ok(c[label].text.endsWith(ours[key].toFixed(digits)), `${label}: ${c[label].text}`);
    }
  }
  // One inline figure of six panels per scenario, each with its runs.
  assert.equal(await page.locator('figure svg.chart').count(), scenarios.length);
  const bands = await page.locator('figure svg.chart').first().locator('rect.run').count();
  assert.equal(bands, 6 * Math.min(runs.length, RUNS_SHOWN));
  // The write pause: the latest run that measured one, a row a client and
  // pause, Zaris's figures past their bars (250 ms, none failed, none
  // applied twice or lost) flagged, the peers' never.
  const paused = recorded.filter((r) => (r.pauses ?? []).length > 0).at(-1);
  if (paused) {
    const pauseRows = await page.locator('#client-pause tbody tr').evaluateAll((trs) => trs.map((tr) =>
      Object.fromEntries([...tr.cells].map((td) => [td.dataset.label, { text: td.textContent, worse: td.classList.contains('worse') }]))));
    assert.equal(pauseRows.length, paused.pauses.length);
    paused.pauses.forEach((p, i) => {
      const r = pauseRows[i];
      assert.equal(r.client.text, p.client);
      assert.ok(r['longest read'].text.endsWith(`${p.paused_max_read_ms.toFixed(0)} ms`), r['longest read'].text);
      const ours = p.client === 'zaris';
      assert.equal(r['longest read'].worse, ours && p.paused_max_read_ms > 250, `${p.client} ${p.pause_ms}`);
      assert.equal(r['applied twice'].worse, ours && p.applied_twice > 0);
      assert.equal(r.errors.worse, ours && p.errors > 0);
    });
  } else {
    assert.equal(await page.locator('#no-pause').count(), 1);
  }
  // The cache hits: the latest run that measured them, a row a client and
  // read, Zaris's hits held to 250 ns and to half of redis-rs's hit of the
  // same read (a row that mostly missed fails both).
  const hitRun = recorded.filter((r) => (r.hits ?? []).length > 0).at(-1);
  if (hitRun) {
    assert.equal(await page.locator('#hit-rows tbody tr').count(), hitRun.hits.length);
    const verdicts = await page.locator('#hit-verdicts tbody tr').evaluateAll((trs) => trs.map((tr) =>
      Object.fromEntries([...tr.cells].map((td) => [td.dataset.label, td.textContent]))));
    const ours = hitRun.hits.filter((h) => h.client === 'zaris' && h.read.startsWith('cache hit'));
    const expected = ours.flatMap((h) => {
      const hits = h.cached_share >= 0.99;
      const theirs = hitRun.hits.find((t) => t.client === 'redis-rs' && t.read === h.read);
      const out = [hits && h.cpu_ns_per_read <= 250];
      if (theirs) out.push(hits && theirs.cached_share >= 0.99 && h.cpu_ns_per_read / theirs.cpu_ns_per_read <= 0.5);
      return out;
    });
    assert.deepEqual(verdicts.map((v) => v.verdict === 'met'), expected);
  } else {
    assert.equal(await page.locator('#no-hits').count(), 1);
  }
  // Lighter than it was: the page and its charts in one file.
  const bytes = (await (await page.request.get(page.url())).body()).length;
  assert.ok(bytes < 600_000, `client.html is ${bytes} bytes`);
});

test('the Reliability page flags every soak that broke a check', async () => {
  await open('reliability.html');
  const soaks = jsonLines('bench/soak/history.jsonl');
  if (soaks.length === 0) return;
  const broken = soaks.filter((s) => s.lost_durable_writes > 0 || s.violations > 0).map((s) => s.commit).reverse();
  const flagged = await page.locator('#history tr.bad td:first-child').allTextContents();
  assert.deepEqual(flagged, broken);
  const said = await page.textContent('#history-verdict');
  if (broken.length) assert.match(said, new RegExp(`^${broken.length} of ${soaks.length} recorded soaks broke a check: ${broken[0]}`));
  else assert.match(said, /^Every check held/);
  // The violations column is in view at 1280 px.
  const right = await page.locator('#history th').last().evaluate((th) => th.getBoundingClientRect().right);
  assert.equal(await page.locator('#history th').last().textContent(), 'violations');
  assert.ok(right <= 1280, `violations end at ${right} px`);
});

// Figures as the page writes them: 1,262,345,678 and 3,432.1.
const grouped = (n, decimals = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });

test('the Reliability page shows every simulated campaign, per commit, with its figures', async () => {
  await open('reliability.html');
  const campaigns = jsonLines('bench/sim/history.jsonl');
  if (campaigns.length === 0) {
    assert.match(await page.textContent('main'), /No campaign is recorded yet/);
    return;
  }
  const said = await page.textContent('#sim-verdict');
  const broken = campaigns.filter((c) => c.violations > 0);
  if (broken.length) assert.match(said, new RegExp(`^${broken.length} of ${campaigns.length} recorded campaigns broke a check`));
  else assert.match(said, new RegExp(`^Every check held in all ${campaigns.length} recorded campaigns`));
  // Newest first: each row's commit, seeds, operations and simulated hours
  // are the recorded ones.
  const rows = await page.locator('#campaigns tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.equal(rows.length, campaigns.length);
  campaigns.slice().reverse().forEach((c, i) => {
    assert.equal(rows[i][0], c.commit);
    assert.equal(rows[i][3], grouped(c.seeds));
    assert.equal(rows[i][4], grouped(c.operations));
    assert.equal(rows[i][5], grouped(c.simulated_hours, 1));
    assert.equal(rows[i][6], String(c.violations));
  });
  // The newest campaign's events by kind: every kind drawn, and how many took effect.
  const newest = campaigns.at(-1);
  if (newest) {
    const kinds = await page.locator('#campaign-kinds tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
    assert.deepEqual(kinds.map((k) => k[0]), Object.keys(newest.events_drawn));
    for (const [kind, drawn, took] of kinds) {
      assert.equal(drawn, grouped(newest.events_drawn[kind]));
      assert.equal(took, grouped(newest.events_by_kind[kind] ?? 0));
    }
  }
});

test('every page at 1280 and 375 px, light and dark: tables fit, words stay whole, text is readable', async () => {
  for (const [width, scheme] of WIDTHS) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width, height: 900 });
    for (const name of PAGES) {
      await open(name);
      const where = `${name} at ${width} px, ${scheme}`;
      assert.deepEqual(await overflowingTables(page), [], where);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${where}: ${overflow} px of sideways scroll`);
      // A short word in a cell never breaks across lines ("me/t").
      const broken = await page.locator('td').evaluateAll((tds) => tds.flatMap((td) => {
        const words = [];
        const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
          const text = node.textContent.trim();
          if (!text || /\s/.test(text) || text.length > 12) continue;
          const range = document.createRange();
          range.selectNodeContents(node);
          const tops = [...range.getClientRects()].map((r) => r.top);
          if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 4) words.push(text);
        }
        return words;
      }));
      assert.deepEqual(broken, [], `${where}: words broken mid-word`);
      for (const selector of ['h1', 'main p', 'a', 'td']) {
        const ratio = await contrast(page, selector);
        assert.ok(ratio >= 4.5, `${where}: ${selector} contrast ${ratio.toFixed(2)}:1`);
      }
      for (const selector of ['td.worse', 'td.missed', 'td.met', 'p.verdict']) {
        if (await page.locator(selector).count() === 0) continue;
        const ratio = await contrast(page, selector);
        assert.ok(ratio >= 4.5, `${where}: ${selector} contrast ${ratio.toFixed(2)}:1`);
      }
    }
    // The charts follow the scheme: their background is the page's panel;
    // at phone width they keep a readable size and scroll in their frame.
    await open('index.html');
    const label = await page.locator('figure svg.chart text').last().evaluate((t) => t.getBoundingClientRect().height);
    assert.ok(label >= 10, `${width} px: chart labels ${label.toFixed(1)} px tall`);
    const fill = await page.locator('figure svg.chart rect').first().evaluate((r) => getComputedStyle(r).fill);
    assert.equal(fill, scheme === 'dark' ? 'rgb(22, 27, 34)' : 'rgb(255, 255, 255)', scheme);
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
});

test('accessibility: axe-core finds no serious or critical violation on any page', async () => {
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const name of PAGES) {
      await open(name);
      assert.deepEqual(await seriousViolations(page), [], `${name}, ${scheme}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

test('nothing is fetched from off the machine; screenshots for the record', async () => {
  assert.ok(requests.length > IMG_CHARTS.length);
  for (const url of requests) assert.ok(url.startsWith(server.url), url);
  mkdirSync(join(root, 'target', 'e2e'), { recursive: true });
  for (const name of PAGES) {
    await open(name);
    await page.screenshot({ path: join(root, 'target', 'e2e', `dashboard-${name.replace('.html', '')}.png`), fullPage: true });
  }
  assert.deepEqual(failed, [], 'every request is answered');
  assert.deepEqual(page.problems, []);
});
