// The npm package `zaris` (target/npm, `just npm-pack`): its slots equal a
// real redis-server's CLUSTER KEYSLOT on thousands of random keys (strings
// of every UTF-8 width and with lone surrogates, sent as Node clients send
// them; Buffers of any bytes; tags and empty tags), it is a drop-in for
// cluster-key-slot where that one is right, and its tarball installs in a
// fresh directory and works with both `require` and `import`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const zaris = require(path.join(root, 'target/npm/package/index.cjs'));
const clusterKeySlot = require('cluster-key-slot');
const version = JSON.parse(readFileSync(path.join(root, 'wasm/npm/package.json'), 'utf8')).version;
const tarball = path.join(root, `target/npm/zaris-${version}.tgz`);

let server;
let port;
let workdir;

/** A port free a moment ago (0: any), or null when taken. */
function probePort(wanted) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(null));
    probe.listen(wanted, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** A free port whose cluster bus port (+10000) is free too: redis-server
 * refuses cluster mode above port 55535. */
async function freePort() {
  for (let i = 0; i < 100; i++) {
    const port = await probePort(0);
    if (port !== null && port <= 55535 && (await probePort(port + 10000)) !== null) return port;
  }
  throw new Error('no free port pair below 55536');
}

before(async () => {
  port = await freePort();
  workdir = mkdtempSync(path.join(tmpdir(), 'zaris-npm-'));
  server = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--cluster-enabled', 'yes',
    '--cluster-config-file', 'nodes.conf', '--save', '', '--appendonly', 'no'], { cwd: workdir, stdio: 'ignore' });
  let exited = null;
  server.on('exit', (code) => { exited = code; });
  for (let i = 0; i < 100; i++) {
    if (exited !== null) throw new Error(`redis-server exited (${exited}) on port ${port}`);
    try {
      await keyslots([Buffer.from('ping')]);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error('redis-server did not start');
});

after(() => {
  server?.kill();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

/** CLUSTER KEYSLOT of each key (Buffers), pipelined over raw RESP. */
function keyslots(keys) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const parts = [];
    for (const key of keys) {
      parts.push(Buffer.from(`*3\r\n$7\r\nCLUSTER\r\n$7\r\nKEYSLOT\r\n$${key.length}\r\n`), key, Buffer.from('\r\n'));
    }
    let input = '';
    const slots = [];
    socket.on('connect', () => socket.end(Buffer.concat(parts)));
    socket.on('data', (chunk) => {
      input += chunk.toString('latin1');
      let at;
      while ((at = input.indexOf('\r\n')) >= 0) {
        const line = input.slice(0, at);
        input = input.slice(at + 2);
        if (line[0] !== ':') return reject(new Error(`unexpected reply ${line}`));
        slots.push(Number(line.slice(1)));
      }
      if (slots.length === keys.length) {
        socket.destroy();
        resolve(slots);
      }
    });
    socket.on('error', reject);
  });
}

/** Deterministic pseudo-random numbers (xorshift). */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

const ALPHABET = ['a', 'z', '0', ':', '{', '}', 'é', 'κ', 'ж', '键', 'ｱ', '😀', '𝄞', '\uD800', '\uDFFF'];

function randomKeys(count) {
  const below = rng(0x5eed);
  const keys = [];
  for (let i = 0; i < count; i++) {
    switch (i % 4) {
      case 0: {
        const len = below(8) === 0 ? below(4097) : below(64);
        keys.push(Uint8Array.from({ length: len }, () => below(256)));
        break;
      }
      case 1:
        keys.push(Array.from({ length: below(16) }, () => ALPHABET[below(ALPHABET.length)]).join(''));
        break;
      case 2:
        keys.push(`prefix{user${below(100000)}}:suffix${below(10)}`);
        break;
      default:
        keys.push('{}' + Array.from({ length: below(8) }, () => ALPHABET[below(ALPHABET.length)]).join(''));
    }
  }
  return keys;
}

/** What a Node client sends for a key. */
const wire = (key) => (typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key));

test('slots equal redis-server on thousands of keys, one at a time and in batches', async () => {
  const keys = randomKeys(6000);
  const expected = await keyslots(keys.map(wire));
  assert.equal(expected.length, keys.length);
  for (let i = 0; i < keys.length; i++) {
    assert.equal(zaris.generate(keys[i]), expected[i], `key ${i}: ${JSON.stringify(String(keys[i]))}`);
    assert.equal(zaris.generate(wire(keys[i])), expected[i], `key ${i} as a Buffer`);
  }
  assert.deepEqual([...zaris.generateBatch(keys)], expected);
  assert.deepEqual([...zaris.generateBatch(keys.map(wire))], expected);
  // Larger than the scratch, alone and amid others.
  const huge = 'x'.repeat(70_000);
  const [hugeSlot] = await keyslots([wire(huge)]);
  assert.equal(zaris.generate(huge), hugeSlot);
  assert.deepEqual([...zaris.generateBatch(['a', huge, 'b'])], [zaris.generate('a'), hugeSlot, zaris.generate('b')]);
});

test('a drop-in for cluster-key-slot, exact where it is not', async () => {
  const plain = randomKeys(2000).filter((k) => typeof k !== 'string' || (!/\{\}/.test(k) && !/[\uD800-\uDFFF]/.test(k)));
  for (const key of plain) {
    if (typeof key === 'string' && /\{\}/.test(key)) continue;
    const bytes = Array.from(wire(key));
    if (bytes.join(',').includes('123,125')) continue; // an empty tag in the bytes
    assert.equal(zaris.generate(key), clusterKeySlot(typeof key === 'string' ? key : bytes));
  }
  assert.equal(zaris.generateMulti(['{u1}:a', '{u1}:b', Buffer.from('{u1}')]), zaris.generate('u1'));
  assert.equal(clusterKeySlot.generateMulti(['{u1}:a', '{u1}:b']), zaris.generateMulti(['{u1}:a', '{u1}:b']));
  assert.equal(zaris.generateMulti(['a', 'b']), -1);
  assert.equal(zaris.generateMulti([]), -1);
  // Where cluster-key-slot is wrong: the server is the judge.
  const [emptyTag, lone] = await keyslots([wire('foo{}{bar}'), wire('a\uD800b')]);
  assert.equal(zaris.generate('foo{}{bar}'), emptyTag);
  assert.notEqual(clusterKeySlot('foo{}{bar}'), emptyTag);
  assert.equal(zaris.generate('a\uD800b'), lone);
  assert.notEqual(clusterKeySlot('a\uD800b'), lone);
});

test('bad keys are typed errors', () => {
  for (const bad of [null, undefined, {}, Symbol('k')]) {
    assert.throws(() => zaris.generate(bad), TypeError);
  }
  assert.throws(() => zaris.generateBatch(['ok', null]), TypeError);
  // Numbers, bigints and booleans are the text ioredis sends for them.
  assert.equal(zaris.generate(42), zaris.generate('42'));
  assert.equal(zaris.generate(1.5), zaris.generate('1.5'));
  assert.equal(zaris.generate(true), zaris.generate('true'));
  assert.deepEqual([...zaris.generateBatch([42, 'a', 7n])], [zaris.generate('42'), zaris.generate('a'), zaris.generate('7')]);
  // The main export is generate itself.
  assert.equal(zaris('{user1000}.following'), 3443);
  assert.equal(zaris.generate, zaris);
});

test('the tarball installs in a fresh directory and works with require and import', () => {
  assert.ok(existsSync(tarball), `${tarball}: run just npm-pack`);
  const dir = mkdtempSync(path.join(tmpdir(), 'zaris-install-'));
  try {
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'fresh', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', tarball], { cwd: dir, stdio: 'pipe' });
    const cjs = execFileSync('node', ['-e', "const z = require('zaris'); console.log(z.generate('{user1000}.following'), z.generateMulti(['{a}1', '{a}2']) === z.generate('a'))"], { cwd: dir }).toString().trim();
    assert.equal(cjs, '3443 true');
    const esm = execFileSync('node', ['--input-type=module', '-e', "import { generate, ClusterMap } from 'zaris'; import z from 'zaris'; console.log(generate('{user1000}.following'), typeof ClusterMap, z.generate === generate)"], { cwd: dir }).toString().trim();
    assert.equal(esm, '3443 function true');
    const types = readFileSync(path.join(dir, 'node_modules/zaris/index.d.ts'), 'utf8');
    assert.match(types, /export function generate\(key: Key\): number;/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
