// zaris (the npm package in target/npm) against cluster-key-slot, in one
// Node process: ns per key for string and Buffer keys of 8, 32 and 256
// bytes, and a batch of 100,000 keys. The two take turns, five rounds,
// and the best round of each counts (the machine is shared and noisy).
// Also where zaris's time goes: the call into wasm alone, the copy or
// encoding into wasm memory, the hash. `just bench-node`. Not a test.
import { createRequire } from 'node:module';
import path from 'node:path';

const root = new URL('../', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const zaris = require(path.join(root, 'target/npm/package/index.cjs'));
const clusterKeySlot = require('cluster-key-slot');

let sink = 0;

/** ns per call of `fn` over `keys` (cycled), best of the rounds given. */
function perCall(fn, keys, calls) {
  const n = keys.length;
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) sink ^= fn(keys[i % n]);
  return Number(process.hrtime.bigint() - start) / calls;
}

function compare(label, keys, calls = 400_000) {
  const ours = [];
  const theirs = [];
  for (let round = 0; round < 5; round++) {
    ours.push(perCall(zaris.generate, keys, calls));
    theirs.push(perCall(clusterKeySlot, keys, calls));
  }
  const z = Math.min(...ours);
  const c = Math.min(...theirs);
  console.log(`${label.padStart(24)} ${z.toFixed(1).padStart(9)} ${c.toFixed(1).padStart(17)} ${(c / z).toFixed(2).padStart(7)}x`);
}

function keysOf(length, count, kind) {
  const out = [];
  for (let i = 0; i < count; i++) {
    const text = `k${i}:`.padEnd(length, 'abcdefghijklmnopqrstuvwxyz0123456789').slice(0, length);
    out.push(kind === 'string' ? text : Buffer.from(text));
  }
  return out;
}

console.log(`zaris ${require(path.join(root, 'target/npm/package/package.json')).version} vs cluster-key-slot, Node ${process.version}`);
console.log(`${'key'.padStart(24)} ${'zaris ns'.padStart(9)} ${'cluster-key-slot ns'.padStart(17)} ${'ratio'.padStart(8)}`);
for (const kind of ['string', 'Buffer']) {
  for (const length of [8, 32, 256]) {
    compare(`${length}-byte ${kind}`, keysOf(length, 1024, kind), length > 100 ? 100_000 : 400_000);
  }
}

// The batch: 100,000 keys in one call against one call per key.
const batch = keysOf(24, 100_000, 'string');
const ours = [];
const theirs = [];
for (let round = 0; round < 5; round++) {
  let start = process.hrtime.bigint();
  sink ^= zaris.generateBatch(batch)[7];
  ours.push(Number(process.hrtime.bigint() - start) / 1e6);
  start = process.hrtime.bigint();
  for (let i = 0; i < batch.length; i++) sink ^= clusterKeySlot(batch[i]);
  theirs.push(Number(process.hrtime.bigint() - start) / 1e6);
}
const z = Math.min(...ours);
const c = Math.min(...theirs);
console.log(`${'batch of 100,000 strings'.padStart(24)} ${(z.toFixed(2) + ' ms').padStart(9)} ${(c.toFixed(2) + ' ms').padStart(17)} ${(c / z).toFixed(2).padStart(7)}x`);

// Where zaris's time goes, per 8-byte key: the call alone (a length into
// the scratch, nothing written), the call with the bytes written, the
// whole generate for a string.
const scratch = new zaris.KeyScratch(64, 1);
const empty = [0];
const eight = keysOf(8, 1024, 'string');
const parts = {
  'wasm call only (len 0)': () => perCall((n) => scratch.slot(n), empty, 1_000_000),
  'call + hash (8 bytes)': () => perCall(() => scratch.slot(8), empty, 1_000_000),
  'generate, 8-byte string': () => perCall(zaris.generate, eight, 1_000_000),
  'glue slotForBytes (8 B)': () => perCall(zaris.slotForBytes, keysOf(8, 1024, 'Buffer'), 200_000),
};
console.log('where the time goes (ns per call, best of 5):');
for (const [label, run] of Object.entries(parts)) {
  const best = Math.min(...Array.from({ length: 5 }, run));
  console.log(`${label.padStart(24)} ${best.toFixed(1).padStart(9)}`);
}
if (sink === 0.5) console.log(sink);
