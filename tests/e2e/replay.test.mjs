// The playground's seed replay in headless Chromium, checked against the
// trace files it plays (web/traces/, written by `just replay-traces`):
// a seed from the address, every node a lane, every redirect drawn, the
// checker's verdict as the trace gives it; stepping, scrubbing, playing and
// zooming; a planted bug's violation shown; bad addresses and bad files
// answered in words; light and dark at 1280 and 375 px.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { launchChromium, overlappingText, seriousViolations, serveStatic } from './browser.mjs';

const root = new URL('../../', import.meta.url).pathname;
const shots = join(root, 'target', 'e2e');
const trace = (name) => gunzipSync(readFileSync(join(root, 'web', 'traces', `${name}.jsonl.gz`)))
  .toString('utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

let server;
let browser;
let page;

before(async () => {
  mkdirSync(shots, { recursive: true });
  server = await serveStatic(join(root, 'web'));
  browser = await launchChromium({ width: 1280, height: 900 });
  page = browser.page;
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the playground at `query` and waits for the replay's trace. */
async function open(query, p = page) {
  await p.goto(`${server.url}${query}`);
  await p.waitForSelector('body[data-ready]');
  await p.locator('#replay').scrollIntoViewIfNeeded();
  await p.waitForSelector('#replay-player[data-ready]', { state: 'attached' });
}

test('a seed from the address is played as its trace says', async () => {
  const lines = trace('seed-13');
  await open('?seed=13');
  assert.equal(await page.locator('#replay-player').getAttribute('data-loaded'), 'seed-13.jsonl');
  const verdict = lines.find((l) => l.kind === 'verdict');
  const ops = lines.filter((l) => l.kind === 'op');
  assert.equal(verdict.operations, ops.length);
  const text = await page.locator('#replay-verdict').textContent();
  assert.match(text, /^Seed 13: every check held\./);
  assert.match(text, new RegExp(`${ops.length.toLocaleString('en')} operations`));
  const failed = ops.filter((o) => !/\t(ok|err:conflict)$/.test(o.line)).length;
  assert.match(text, new RegExp(`; ${failed} failed`));
  // A lane per node the trace names, between the events and the workload.
  const nodes = new Set(lines.filter((l) => 'node' in l && l.kind !== 'event').map((l) => l.node));
  const lanes = await page.locator('#replay-lanes .lane-name').allTextContents();
  assert.deepEqual(lanes.filter((n) => n.startsWith('node ')), [...nodes].sort((a, b) => a - b).map((n) => `node ${n}`));
  assert.equal(lanes[0], 'events');
  // Every redirect of the run, drawn on its node's lane.
  for (const reply of ['MOVED', 'ASK', 'TRYAGAIN']) {
    const n = lines.filter((l) => l.kind === 'attempt' && l.reply === reply).length;
    assert.equal(await page.locator(`#replay-lanes [data-mark="${reply}"]`).count(), n, reply);
  }
  // The node that could not hear one master: its partial maps, marked.
  const partial = lines.filter((l) => l.kind === 'attempt' && l.reply === 'partial map').length;
  assert.ok(partial >= 1);
  assert.equal(await page.locator('#replay-lanes [data-mark="partial map"]').count(), partial);
  assert.ok(lines.some((l) => l.kind === 'bus-blocked'));
  // The events the seed drew, each a button; the nemesis lane a span each.
  const events = lines.filter((l) => l.kind === 'event');
  assert.equal(await page.locator('#replay-mix button').count(), events.length);
  assert.ok(events.some((e) => e.event === 'NodesReplaced'));
  assert.deepEqual(page.problems, []);
});

test('stepping, scrubbing, playing, pausing and zooming move one cursor', async () => {
  const lines = trace('seed-13');
  await open('?seed=13&t=0');
  const firstStop = Math.round(Math.min(
    ...lines.filter((l) => l.kind === 'event').map((e) => e.start_ms),
    ...lines.filter((l) => !['attempt', 'op', 'event', 'violation', 'verdict'].includes(l.kind)).map((l) => l.t / 1000),
    ...lines.filter((l) => l.kind === 'attempt' && !['data', 'OK', 'array', 'nil', 'QUEUED', 'push'].includes(l.reply)
      && !/^-?\d+$/.test(l.reply) && l.cmd !== 'CLUSTER').map((l) => l.t / 1000),
  ));
  await page.locator('#replay-step').click();
  assert.equal(Number(await page.locator('#replay-time').inputValue()), firstStop);
  assert.equal(await page.locator('#replay-clock').textContent(), `${(firstStop / 1000).toFixed(3)} s`);
  assert.ok((await page.locator('#replay-log li').count()) >= 1);
  // Scrubbed past the first operation that failed: the tally and the log
  // count what the trace holds up to there.
  const failed = lines.filter((l) => l.kind === 'op').map((l) => l.line.split('\t'))
    .filter((f) => f[5] !== 'ok' && f[5] !== 'err:conflict');
  assert.ok(failed.length > 0);
  const [kind, key, , , completed, outcome] = failed[0];
  const at = Math.ceil(Number(completed));
  await page.locator('#replay-time').fill(String(at));
  const upTo = lines.filter((l) => l.kind === 'attempt' && l.t / 1000 <= at);
  const moved = upTo.filter((l) => l.reply === 'MOVED').length;
  const tally = await page.locator('#replay-tally').textContent();
  assert.match(tally, new RegExp(`^Up to ${(at / 1000).toFixed(3).replace('.', '\\.')} s: `));
  assert.match(tally, new RegExp(`${moved} MOVED`));
  const said = `failed, excused: ${kind} ${key}: ${outcome.replace(/^err:/, '')}`;
  assert.ok((await page.locator('#replay-log').textContent()).includes(said), said);
  assert.match(new URL(page.url()).search, new RegExp(`seed=13.*t=${at}`));
  // Zoomed to 2 s around the cursor.
  await page.locator('#replay-zoom').selectOption('2000');
  const svg = page.locator('#replay-lanes svg');
  assert.equal(Number(await svg.getAttribute('data-to')) - Number(await svg.getAttribute('data-from')), 2000);
  assert.deepEqual(await overlappingText(page, '#replay-lanes svg'), []);
  // Played, then paused: time went on, and stopped.
  await page.locator('#replay-toggle').click();
  assert.equal(await page.locator('#replay-toggle').getAttribute('aria-pressed'), 'true');
  await page.waitForTimeout(400);
  await page.locator('#replay-toggle').click();
  assert.equal(await page.locator('#replay-toggle').getAttribute('aria-pressed'), 'false');
  const paused = Number(await page.locator('#replay-time').inputValue());
  assert.ok(paused > at, `${paused}`);
  await page.waitForTimeout(200);
  assert.equal(Number(await page.locator('#replay-time').inputValue()), paused);
  // The keyboard: the lanes take the arrows.
  await page.locator('#replay-lanes').focus();
  await page.keyboard.press('ArrowLeft');
  assert.ok(Number(await page.locator('#replay-time').inputValue()) < paused);
  assert.deepEqual(page.problems, []);
});

test('a planted bug is shown as the violation the checker found', async () => {
  const lines = trace('seed-13-map-from-fewer-slots');
  const violations = lines.filter((l) => l.kind === 'violation');
  assert.ok(violations.length >= 1);
  await open('?seed=13&plant=map-from-fewer-slots');
  const verdict = page.locator('#replay-verdict');
  assert.equal(await verdict.getAttribute('data-passed'), 'false');
  const broken = `${violations.length} check${violations.length === 1 ? '' : 's'} broken`;
  assert.match(await verdict.textContent(), new RegExp(`“map-from-fewer-slots” planted in the client: ${broken}\\.`));
  // The first five in the checker's words, then how many more.
  const listed = Math.min(violations.length, 5);
  assert.equal(await page.locator('#replay-verdict li:not(.more)').count(), listed);
  if (violations.length > 5) {
    assert.equal(await page.locator('#replay-verdict li.more').textContent(), `and ${violations.length - 5} more: each is a red bar beneath the lanes.`);
  }
  assert.equal(await page.locator('#replay-lanes .op.violation').count(), violations.length);
  // The nodes that gave a map without every master's slots: marked.
  const partial = lines.filter((l) => l.kind === 'attempt' && l.reply === 'partial map').length;
  assert.ok(partial > 0);
  assert.equal(await page.locator('#replay-lanes [data-mark="partial map"]').count(), partial);
  assert.deepEqual(page.problems, []);
});

test('bad addresses and bad files are answered in words', async () => {
  await open('?seed=abc');
  assert.match(await page.locator('#replay-error').textContent(), /“abc” is not a seed/);
  assert.equal(await page.locator('#replay-toggle').isDisabled(), true);
  await open('?seed=987654');
  assert.match(await page.locator('#replay-error').textContent(), /just replay 987654/);
  // The 404 of the missing trace is the only complaint.
  assert.ok(page.problems.every((p) => /404/.test(p)), page.problems.join('\n'));
  page.problems.length = 0;
  const junk = join(shots, 'junk.jsonl');
  writeFileSync(junk, 'not json\n{"kind":1}\n\u0000\u00ff');
  await page.locator('#replay-file').setInputFiles(junk);
  await page.waitForFunction(() => !document.getElementById('replay-error').hidden);
  assert.match(await page.locator('#replay-error').textContent(), /junk\.jsonl cannot be replayed: no line of it is a simulation trace/);
  assert.deepEqual(page.problems, []);
});

for (const [width, scheme] of [[1280, 'light'], [1280, 'dark'], [375, 'light'], [375, 'dark']]) {
  test(`the replay reads at ${width} px, ${scheme}`, async () => {
    const view = await launchChromium({ width, height: 900 });
    try {
      await view.page.emulateMedia({ colorScheme: scheme });
      await open('?seed=13', view.page);
      const section = view.page.locator('#replay');
      const overflow = await section.evaluate((s) => [...s.querySelectorAll('*')]
        .filter((e) => e.getBoundingClientRect().right > s.getBoundingClientRect().right + 1).map((e) => e.id || e.tagName));
      assert.deepEqual(overflow, []);
      assert.deepEqual(await overlappingText(view.page, '#replay-lanes svg'), []);
      await section.screenshot({ path: join(shots, `replay-${width}-${scheme}.png`) });
      if (width === 1280 && scheme === 'light') assert.deepEqual(await seriousViolations(view.page), []);
      assert.deepEqual(view.page.problems, []);
    } finally {
      await view.close();
    }
  });
}
