// The wasm build as Node loads it (wasm-pack --target nodejs) and as the
// browser gets it (web/pkg): what it computes, what it imports, its size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utf16Units } from './utf16.mjs';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const root = new URL('../../', import.meta.url);
const zaris = createRequire(import.meta.url)(new URL('target/pkg-node/zaris_wasm.js', root).pathname);
/**
 * The budget for the optimized module, gzipped: 40,000 bytes for placement,
 * maps and the retry simulator; 10,000 for the command table (which
 * arguments of each of 241 commands and 170 subcommands are keys; about
 * 9 KB gzipped), so that the playground routes whole command lines; and
 * 1,800 for the npm package's fast path (keys written straight into wasm
 * memory), the table's name index (names read, lowered and compared a word
 * at a time) and the route of a command's one key at a fixed place,
 * which skips the key search; 7,000 for the churn simulation the
 * playground plays out (`simulateChurn`: the core's request stream through
 * an ownership event, about 6.5 KB gzipped); 2,000 for its player (who
 * owns each slot at a moment, `churnOwnersAt`; the event's milestones;
 * each request's start and slot; an error of its own for each way a
 * scenario can be wrong: about 1.9 KB gzipped).
 */
const GZIP_BUDGET = 60_800;
/** The playground's first download, wasm, JS and CSS, gzipped (the
 * benchmark with its peer, and the churn player with its styles, load on
 * demand): `just web-build` prints it too. */
const DOWNLOAD_BUDGET = 80 * 1024;
const DOWNLOAD = ['web/pkg/zaris_wasm_bg.wasm', 'web/pkg/zaris_wasm.js', 'web/app.js', 'web/dom.js',
  'web/slots.js', 'web/utf8.js', 'web/style.css'];

const units = utf16Units;

test('slots from the nodejs package', () => {
  assert.equal(zaris.slotForUtf16(units('{user1000}.following')), 3443);
  assert.equal(zaris.slotForUtf16(units('123456789')), 12739);
  assert.equal(zaris.slotForBytes(new TextEncoder().encode('123456789')), 12739);
  const utf8 = (s) => new TextEncoder().encode(s);
  assert.deepEqual([...zaris.slotsForUtf8Lines(utf8('123456789\n{user1000}.x\n'))], [12739, 3443]);
  assert.deepEqual([...zaris.slotsForUtf8Lines(new Uint8Array([0xff, 0x0a, 0x7b]))],
    [zaris.slotForBytes(new Uint8Array([0xff])), zaris.slotForBytes(new Uint8Array([0x7b]))]);
  assert.deepEqual([...zaris.hashTagSpanUtf16(units('a{b}c'))], [2, 3]);
  assert.equal(zaris.hashTagSpanUtf16(units('foo{}{bar}')), undefined);
});

test('astral characters and lone surrogates: both string paths agree', () => {
  const emoji = '😀κλειδί\uD83D';
  const bytes = new TextEncoder().encode(emoji);
  assert.equal(zaris.slotForUtf16(units(emoji)), zaris.slotForBytes(bytes));
  assert.deepEqual([...zaris.slotsForUtf8Lines(bytes)], [zaris.slotForBytes(bytes)]);
});

test('a lone surrogate hashes as U+FFFD on both string paths', () => {
  const lone = 'a\uD800b';
  const replaced = 'a\uFFFDb';
  assert.equal(zaris.slotForUtf16(units(lone)), zaris.slotForUtf16(units(replaced)));
  assert.deepEqual([...zaris.slotsForUtf16Lines(units(lone))], [...zaris.slotsForUtf8Lines(new TextEncoder().encode(lone))]);
});

test('cluster maps and the retry brain from Node', () => {
  const map = zaris.ClusterMap.fromClusterNodes(zaris.ClusterMap.demoClusterNodes());
  assert.equal(map.nodeCount(), 6);
  assert.equal(map.ownerOfSlot(12739), 2);
  assert.throws(() => zaris.ClusterMap.fromClusterNodes('garbage'), /line 1: expected at least 8 fields/);
  const events = JSON.parse(zaris.simulateRetries('Moved', 3, 100, 60000, 1));
  const end = events.at(-1);
  assert.deepEqual([end.attempts, end.refreshes, end.last], [3, 2, 'Moved']);
});

test('the module imports nothing from env', () => {
  for (const file of ['target/pkg-node/zaris_wasm_bg.wasm', 'web/pkg/zaris_wasm_bg.wasm']) {
    const module = new WebAssembly.Module(readFileSync(new URL(file, root)));
    const modules = new Set(WebAssembly.Module.imports(module).map((i) => i.module));
    assert.ok(!modules.has('env'), `${file} imports from env: ${[...modules]}`);
  }
});

test(`the optimized module is at most ${GZIP_BUDGET} bytes gzipped`, () => {
  const bytes = readFileSync(new URL('web/pkg/zaris_wasm_bg.wasm', root));
  const gzipped = gzipSync(bytes, { level: 9 }).length;
  assert.ok(gzipped <= GZIP_BUDGET, `${gzipped} bytes gzipped`);
});

test(`the playground's download is at most ${DOWNLOAD_BUDGET} bytes gzipped`, () => {
  const sizes = DOWNLOAD.map((file) => [file, gzipSync(readFileSync(new URL(file, root)), { level: 9 }).length]);
  const total = sizes.reduce((n, [, size]) => n + size, 0);
  console.log('# playground download, gzipped:', JSON.stringify(Object.fromEntries(sizes)), total);
  assert.ok(total <= DOWNLOAD_BUDGET, `${total} bytes gzipped: ${JSON.stringify(sizes)}`);
  // The page's own imports are all counted (nothing else is fetched at load).
  const app = readFileSync(new URL('web/app.js', root), 'utf8');
  for (const [, file] of app.matchAll(/^import .* from '\.\/(.+)';$/gm)) {
    assert.ok(DOWNLOAD.includes(`web/${file}`), `${file} is imported by the page but not counted`);
  }
});
