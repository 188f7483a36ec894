// The playground's UTF-8 encoder (web/utf8.js) writes exactly what
// TextEncoder.encodeInto writes, lone surrogates included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeUtf8Into } from '../../web/utf8.js';

const platform = new TextEncoder();

function check(text) {
  const ours = new Uint8Array(text.length * 3);
  const n = encodeUtf8Into(text, ours);
  assert.deepEqual(ours.subarray(0, n), platform.encode(text), JSON.stringify(text));
}

test('edge characters: every width, the surrogate boundaries, lone halves anywhere', () => {
  for (const text of ['', 'a', '\x7f', '\x80', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff',
    '\ud800\udc00', '\udbff\udfff', '😀', 'κλειδί:用户:😀', '\ud800', '\udc00', 'a\ud800', '\ud800a',
    '\udc00\ud800', '\ud800\ud800\udc00', 'x\udbffy\udfffz', '{user1000}.following\n']) {
    check(text);
  }
});

test('random strings of mixed widths and lone surrogates', () => {
  let x = 0x2545f491;
  const next = (n) => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x % n;
  };
  const pools = [[0x20, 0x7f], [0x80, 0x800], [0x800, 0xd800], [0xd800, 0xe000], [0xe000, 0x10000]];
  for (let round = 0; round < 2000; round++) {
    const units = Array.from({ length: next(40) }, () => {
      const [lo, hi] = pools[next(pools.length)];
      return lo + next(hi - lo);
    });
    // Some real pairs too, not only the halves the pools make by chance.
    if (round % 3 === 0) units.splice(next(units.length + 1), 0, 0xd83d, 0xde00);
    check(String.fromCharCode(...units));
  }
});
