// The npm package as a drop-in, tried as a user would: cluster-key-slot's
// own test cases run against it through the callable main export, and
// ioredis, given zaris in place of cluster-key-slot by npm `overrides` and
// nothing else, runs against a real 3+3 Redis cluster. The servers count
// every MOVED they answer (INFO errorstats): with zaris there are none on
// keys with empty hash tags and lone surrogates; stock ioredis, on the same
// keys, is redirected for most of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const version = JSON.parse(readFileSync(path.join(root, 'wasm/npm/package.json'), 'utf8')).version;
const tarball = path.join(root, `target/npm/zaris-${version}.tgz`);
const ioredisVersion = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).devDependencies.ioredis;

let cluster;
let seeds;
let workdir;

/** Starts the harness's 3+3 cluster (target/debug/zaris-cluster) and reads its seeds. */
before(async () => {
  execFileSync('cargo', ['build', '-q', '-p', 'zaris-tests', '--bin', 'zaris-cluster'], { cwd: root, stdio: 'inherit' });
  workdir = mkdtempSync(path.join(tmpdir(), 'zaris-dropin-'));
  const seedsFile = path.join(workdir, 'seeds');
  cluster = spawn(path.join(root, 'target/debug/zaris-cluster'), ['redis-server', seedsFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  let exited = null;
  cluster.on('exit', (code) => { exited = code; });
  for (let i = 0; i < 1200 && !existsSync(seedsFile); i++) {
    if (exited !== null) throw new Error(`zaris-cluster exited (${exited})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  seeds = readFileSync(seedsFile, 'utf8').trim().split(/\s+/).map((addr) => {
    const [host, port] = addr.split(':');
    return { host, port: Number(port) };
  });
});

after(() => {
  cluster?.kill();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

// cluster-key-slot's test suite (test/hash.spec.js): key -> slot, and a
// generateMulti case. Its 'foobar{}' is an empty tag, where the package
// must equal the server instead (checked below against CLUSTER KEYSLOT).
const SUITE = {
  123465: 1492,
  foobar: 12325,
  abcdefghijklmnopqrstuvwxyz: 9132,
  'gsdfhan$%^&*(sdgsdnhshcs': 15532,
  'abc{foobar}': 12325,
  '{foobar}': 12325,
  'h8a9sd{foobar}}{asd}}': 12325,
  '{foobar': 16235,
};
const EMPTY_TAGS = ['foobar{}', 'foo{}{bar}', '{}', 'a{}b{c}'];

/** The package installed from its tarball into a fresh directory (once), with ioredis told to use it. */
let installed = null;
function installWithOverride() {
  if (installed) return installed;
  const dir = path.join(workdir, 'app');
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({
    name: 'app',
    private: true,
    dependencies: { ioredis: ioredisVersion },
    overrides: { 'cluster-key-slot': `file:${tarball}` },
  }));
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--silent'], { cwd: dir, stdio: 'pipe' });
  installed = dir;
  return dir;
}

/** MOVED replies every node has sent so far (INFO errorstats). */
async function movedCount(Redis) {
  let total = 0;
  for (const seed of seeds) {
    const node = new Redis({ host: seed.host, port: seed.port, lazyConnect: true, enableOfflineQueue: true });
    const info = await node.info('errorstats');
    node.disconnect();
    const match = /errorstat_MOVED:count=(\d+)/.exec(info);
    total += match ? Number(match[1]) : 0;
  }
  return total;
}

/** 1,000 keys that cluster-key-slot gets wrong: empty tags and lone surrogates. */
const KEYS = Array.from({ length: 1000 }, (_, i) => (i % 2 ? `user{}{${i}}` : `a\uD800${i}`));

/** SET then GET of every key (2,000 commands) through `Redis.Cluster`; MOVED counted and values checked. */
async function drive(Redis) {
  const client = new Redis.Cluster(seeds.slice(0, 1), { redisOptions: { connectTimeout: 5000 } });
  await new Promise((resolve, reject) => { client.once('ready', resolve); client.once('error', reject); });
  const before = await movedCount(Redis);
  for (const [i, key] of KEYS.entries()) assert.equal(await client.set(key, `v${i}`), 'OK');
  for (const [i, key] of KEYS.entries()) assert.equal(await client.get(key), `v${i}`);
  const moved = (await movedCount(Redis)) - before;
  await client.quit();
  return moved;
}

test("cluster-key-slot's own cases pass through the callable main export", async () => {
  const dir = installWithOverride();
  const generate = require(path.join(dir, 'node_modules/cluster-key-slot'));
  const { generateMulti } = generate;
  assert.equal(typeof generate, 'function');
  for (const [key, slot] of Object.entries(SUITE)) assert.equal(generate(key), slot, key);
  assert.equal(generateMulti(Array(8).fill('abcdefghijklmnopqrstuvwxyz')), 9132);
  assert.equal(generateMulti(Object.keys(SUITE)), -1);
  // A number key is the decimal text ioredis sends (cluster-key-slot: 0).
  assert.equal(generate(123465), 1492);
  assert.equal(generate(-7), generate('-7'));
  assert.equal(generate(12n), generate('12'));
  // The empty tags: CLUSTER KEYSLOT is the judge.
  const Redis = require(path.join(dir, 'node_modules/ioredis'));
  const node = new Redis({ host: seeds[0].host, port: seeds[0].port });
  for (const key of EMPTY_TAGS) assert.equal(generate(key), await node.cluster('KEYSLOT', key), key);
  node.disconnect();
  // The named exports stay.
  assert.equal(typeof generate.generateBatch, 'function');
  assert.equal(typeof generate.ClusterMap, 'function');
});

test('ioredis with zaris through npm overrides: 2,000 commands, no MOVED; stock ioredis is redirected', async () => {
  const dir = installWithOverride();
  // The override took: ioredis's own cluster-key-slot is zaris.
  const resolved = createRequire(path.join(dir, 'node_modules/ioredis/package.json')).resolve('cluster-key-slot');
  assert.equal(JSON.parse(readFileSync(path.join(path.dirname(resolved), 'package.json'), 'utf8')).name, 'zaris');
  const withZaris = await drive(require(path.join(dir, 'node_modules/ioredis')));
  assert.equal(withZaris, 0, 'MOVED replies to ioredis with zaris');
  // The control: the same keys through stock ioredis (cluster-key-slot).
  const stock = await drive(require('ioredis'));
  console.log(`MOVED over 2,000 commands: ioredis with zaris ${withZaris}, stock ioredis ${stock}`);
  assert.ok(stock > 200, `stock ioredis got only ${stock} MOVED`);
});
