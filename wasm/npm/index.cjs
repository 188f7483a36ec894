'use strict';
// zaris for Node: the slot of a Redis Cluster key from Zaris's Rust core,
// compiled to wasm. `generate` and `generateMulti` answer as npm's
// cluster-key-slot does, except where it is wrong (an empty hash tag `{}`,
// a lone surrogate): there they answer as Redis does with the bytes Node
// clients send.
//
// Keys are written straight into wasm memory (a `KeyScratch` the module
// keeps for this process) and hashed with one call: no allocation, no glue
// copy per key.

const wasm = require('./node/zaris_wasm.js');

const BYTES = 64 * 1024;
const KEYS = 8 * 1024;
const scratch = new wasm.KeyScratch(BYTES, KEYS);
const memory = wasm.wasmMemory();
const encoder = new TextEncoder();
let bytes = new Uint8Array(0);
let ends = null;
let slots = null;

/** Views of the scratch (again once the module's memory has grown, which
 * detaches the old ones: their length reads 0). */
function view() {
  const buffer = memory.buffer;
  bytes = new Uint8Array(buffer, scratch.bytesPtr(), scratch.bytesCapacity());
  ends = new Uint32Array(buffer, scratch.endsPtr(), scratch.keysCapacity());
  slots = new Uint16Array(buffer, scratch.slotsPtr(), scratch.keysCapacity());
}
view();

function notAKey(key) {
  return new TypeError(`a key is a string, a number, a Buffer or a Uint8Array (or an array of bytes), not ${key === null ? 'null' : typeof key}`);
}

/**
 * A number, bigint or boolean key as the text ioredis sends for it
 * (`String(key)`: 123465 is the key "123465"); anything else as it is.
 */
function asKey(key) {
  const type = typeof key;
  return type === 'number' || type === 'bigint' || type === 'boolean' ? String(key) : key;
}

/**
 * Writes `key` into the scratch at `at`; its length in bytes, or -1 when it
 * does not fit. Strings as UTF-8 with lone surrogates as U+FFFD (what
 * `Buffer.from` sends): short ASCII ones by a loop, the rest by the native
 * `encodeInto`.
 */
function put(key, at) {
  key = asKey(key);
  if (typeof key === 'string') {
    const n = key.length;
    if (n <= 16 && at + n <= BYTES) {
      let i = 0;
      for (; i < n; i++) {
        const c = key.charCodeAt(i);
        if (c >= 0x80) break;
        bytes[at + i] = c;
      }
      if (i === n) return n;
    }
    // At most 3 bytes per UTF-16 unit.
    if (at + n * 3 > BYTES) return -1;
    return encoder.encodeInto(key, at === 0 ? bytes : bytes.subarray(at)).written;
  }
  if (key === null || typeof key !== 'object' || typeof key.length !== 'number') throw notAKey(key);
  const n = key.length;
  if (at + n > BYTES) return -1;
  if (n <= 16) {
    for (let i = 0; i < n; i++) bytes[at + i] = key[i];
  } else {
    bytes.set(key, at);
  }
  return n;
}

/** A key too large for the scratch, through the glue. */
function slowSlot(key) {
  key = asKey(key);
  return wasm.slotForBytes(typeof key === 'string' ? Buffer.from(key, 'utf8') : Uint8Array.from(key));
}

/**
 * The slot of `key` (CLUSTER KEYSLOT): a string (hashed as its UTF-8
 * bytes, a lone surrogate as U+FFFD, as Buffer.from sends it), a number,
 * bigint or boolean (as the decimal text ioredis sends), a Buffer, a
 * Uint8Array or an array of byte values.
 */
function generate(key) {
  if (bytes.length === 0) view();
  const n = put(key, 0);
  return n >= 0 ? scratch.slot(n) : slowSlot(key);
}

/**
 * String keys[from..to] as one newline-joined text, encoded in one native
 * call and split and hashed in one wasm call; false (nothing written) when
 * one is not a string, ends with a CR (the text would lose it) or holds a
 * newline (the count of lines says so), or they do not fit.
 */
function linesInto(keys, from, to, out) {
  for (let i = from; i < to; i++) {
    const key = keys[i];
    if (typeof key !== 'string' || key.charCodeAt(key.length - 1) === 13) return false;
  }
  // A final newline so a last empty key still counts.
  const text = keys.slice(from, to).join('\n') + '\n';
  if (text.length * 3 > BYTES) return false;
  const written = encoder.encodeInto(text, bytes).written;
  if (scratch.fillLines(written) !== to - from) return false;
  if (slots.length === 0) view();
  out.set(slots.subarray(0, to - from), from);
  return true;
}

/** The slots of `keys`, in one call into the module per few thousand keys. */
function generateBatch(keys) {
  const out = new Uint16Array(keys.length);
  if (bytes.length === 0) view();
  // Plain string keys: a group at a time, joined into newline-separated text.
  let from = 0;
  while (from < keys.length) {
    const to = Math.min(keys.length, from + Math.min(KEYS, 2048));
    if (!linesInto(keys, from, to, out)) break;
    from = to;
  }
  // Anything else (Buffers, keys with newlines, very long keys): each
  // key's bytes back to back, with where each ends.
  let count = 0;
  let at = 0;
  let first = from;
  const flush = () => {
    if (count > 0) {
      scratch.fill(count);
      if (slots.length === 0) view();
      out.set(slots.subarray(0, count), first);
    }
    first += count;
    count = 0;
    at = 0;
  };
  for (let i = from; i < keys.length; i++) {
    let n = put(keys[i], at);
    if (n < 0 && count > 0) {
      flush();
      n = put(keys[i], 0);
    }
    if (n < 0) {
      // Too large for the scratch on its own.
      out[i] = slowSlot(keys[i]);
      first = i + 1;
      continue;
    }
    at += n;
    ends[count++] = at;
    if (count === KEYS) flush();
  }
  flush();
  return out;
}

/**
 * The slot all `keys` share, or -1 when they do not share one. No keys
 * share no slot: -1 (cluster-key-slot throws a TypeError there, reading
 * the length of a first key that is not there).
 */
function generateMulti(keys) {
  if (keys.length === 0) return -1;
  const base = generate(keys[0]);
  for (let i = 1; i < keys.length; i++) {
    if (generate(keys[i]) !== base) return -1;
  }
  return base;
}

// The main export is `generate` itself, carrying everything else, as
// cluster-key-slot's is: `require('cluster-key-slot')(key)` and
// `.generateMulti(keys)` work unchanged with zaris in its place (npm
// `overrides`), which is how ioredis calls it.
module.exports = Object.assign(generate, wasm, { generate, generateMulti, generateBatch });
