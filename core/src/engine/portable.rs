//! The portable engine: slicing-by-16 over `static` tables built by
//! `const fn`, for any CPU. It is also the reference the carry-less engines
//! are tested against at every length.

use super::generic::{Engine, BLOCK};
use super::gf2::POLY;
use super::swar::load_padded;
#[cfg(not(target_arch = "wasm32"))]
use super::swar::load_padded_word;
use super::swar::{byte_hits, load_word_on_top};
use super::tag;

/// `TABLES[k][b]` is the CRC of byte `b` followed by `k` zero bytes, so one
/// slicing step over 16 bytes is 16 independent look-ups xored together.
static TABLES: [[u16; 256]; TABLE_COUNT] = build_tables();

/// How many tables there are: 16 (8 KiB) natively. A wasm module is
/// downloaded, its tables barely compress, and it has no carry-less
/// multiply to spare them, so there 8 tables (4 KiB) take a 16-byte step in
/// two halves: 4.7 KB less gzipped, 10% slower at hashing 100,000 keys in
/// Chromium.
const TABLE_COUNT: usize = if cfg!(target_arch = "wasm32") {
    8
} else {
    BLOCK
};

const fn build_tables() -> [[u16; 256]; TABLE_COUNT] {
    let mut tables = [[0u16; 256]; TABLE_COUNT];
    let mut b = 0;
    while b < 256 {
        let mut crc = (b as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            bit += 1;
        }
        tables[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < TABLE_COUNT {
        let mut b = 0;
        while b < 256 {
            let prev = tables[k - 1][b];
            tables[k][b] = (prev << 8) ^ tables[0][(prev >> 8) as usize];
            b += 1;
        }
        k += 1;
    }
    tables
}

/// The tables, on any CPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Engine for Portable {
    /// One 128-bit block.
    const SHORT_KEY: usize = BLOCK;

    // Plain `inline` for the portable engine: size-optimised builds (wasm)
    // keep one copy of the table walk instead of one per caller.
    #[inline]
    fn crc_of_block(self, block: u128, wide: bool) -> u16 {
        if wide {
            step16(0, (block >> 64) as u64, block as u64)
        } else {
            step8(0, block as u64)
        }
    }

    // Inlined natively (the key paths call it once each); size-optimised
    // builds keep one copy.
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    #[cfg_attr(target_arch = "wasm32", inline)]
    fn update_blocks(self, mut crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        let (blocks, _) = bytes.as_chunks::<BLOCK>();
        let mut done = 0;
        for block in blocks {
            let (first, second) = halves(block);
            if let Some(stop) = stop {
                // The words as loaded: a byte test needs no particular order.
                if byte_hits(first, stop) | byte_hits(second, stop) != 0 {
                    break;
                }
            }
            crc = step16_bytes(crc, block);
            done += BLOCK;
        }
        (crc, done)
    }

    /// Natively: 16 bytes a step from memory, then what is left in one
    /// step of exactly as many look-ups (no padding to a block).
    #[cfg(not(target_arch = "wasm32"))]
    #[inline(always)]
    fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
        if bytes.len() <= BLOCK {
            crc_of_short(bytes)
        } else {
            update_native(0, bytes)
        }
    }

    /// Tables walk a block in about sixteen dependent loads, so testing
    /// each block for a `{` on the way costs a tenth more: the key is
    /// searched first (`memchr`: SSE2 or AVX2 on x86_64, a word at a time
    /// elsewhere), then walked once without a test. On x86_64 the
    /// dispatcher runs the tables through `x86_64::tables` instead, which
    /// finds both braces of a key up to 64 bytes at once.
    #[inline]
    fn long_key_crc(self, key: &[u8]) -> u16 {
        if let Some(open) = memchr::memchr(b'{', key) {
            let after = key.get(open + 1..).unwrap_or_default();
            if let Some(close) = memchr::memchr(b'}', after).filter(|&c| c > 0) {
                return self.crc_of_bytes(after.get(..close).unwrap_or_default());
            }
        }
        self.crc_of_bytes(key)
    }

    #[inline]
    fn short_key_crc(self, key: &[u8]) -> u16 {
        // A key of one word is hashed without 128-bit arithmetic or byte
        // swaps; the tag is cut out of the loaded key by shifts.
        if key.len() <= 8 {
            let word = load_word_on_top(key);
            return match tag::tag_in_word_on_top(word) {
                None => word_crc(word),
                // A tag within 8 bytes is at most 6: two look-ups fewer.
                Some(tag) => top6_crc(tag),
            };
        }
        let block = load_padded(key);
        if byte_hits((block >> 64) as u64, b'{') | byte_hits(block as u64, b'{') == 0 {
            return self.crc_of_block(block, true);
        }
        // A tag: found by the reference rule (a word at a time), then
        // hashed as a block of its own.
        match tag::span(key) {
            Some(span) => {
                let tag = key.get(span).unwrap_or_default();
                self.crc_of_block(load_padded(tag), tag.len() > 8)
            }
            None => self.crc_of_block(block, true),
        }
    }
}

/// Continues `crc` over `bytes`.
#[inline(always)]
pub(crate) fn update(crc: u16, bytes: &[u8]) -> u16 {
    #[cfg(not(target_arch = "wasm32"))]
    return update_native(crc, bytes);
    #[cfg(target_arch = "wasm32")]
    return super::generic::update_with(Portable, crc, bytes);
}

/// Continues `crc` over `bytes` natively: 16-byte steps from memory, then
/// the rest in one step.
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
fn update_native(crc: u16, bytes: &[u8]) -> u16 {
    let (blocks, rest) = bytes.as_chunks::<BLOCK>();
    let mut crc = crc;
    for block in blocks {
        crc = step16_bytes(crc, block);
    }
    let n = rest.len();
    let [hi, lo] = crc.to_be_bytes();
    let moved = match n {
        0 => return crc,
        // `s * x^8`: the low byte moves up, the high one is reduced.
        1 => crc << 8 ^ TABLES[0][usize::from(hi)],
        // `s * x^(8n)`: the state's bytes as the rest's first two.
        _ => {
            let table = |k: usize| TABLES.get(k).unwrap_or(&TABLES[0]);
            table(n - 1)[usize::from(hi)] ^ table(n - 2)[usize::from(lo)]
        }
    };
    moved ^ crc_of_short(rest)
}

/// The CRC from state 0 of at most 16 bytes in one step of as many
/// look-ups: the last 8 indexed by bytes loaded from memory, those before
/// them cut out of one word by shifts (which spreads the work over the
/// load and arithmetic ports, as in [`step16_bytes`]).
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
fn crc_of_short(bytes: &[u8]) -> u16 {
    let Some((head, last)) = bytes.split_last_chunk::<8>() else {
        return step8(0, load_padded_word(bytes));
    };
    let t = |k: usize, i: usize| TABLES[k][usize::from(last[i])];
    let low = t(7, 0) ^ t(6, 1) ^ t(5, 2) ^ t(4, 3) ^ t(3, 4) ^ t(2, 5) ^ t(1, 6) ^ t(0, 7);
    if head.is_empty() {
        return low;
    }
    // The bytes before the last 8, zero-padded in front: byte `j` of the
    // word from the top sits `15 - j` bytes from the end.
    let w = load_padded_word(head);
    low ^ entry(15, w, 0)
        ^ entry(14, w, 1)
        ^ entry(13, w, 2)
        ^ entry(12, w, 3)
        ^ entry(11, w, 4)
        ^ entry(10, w, 5)
        ^ entry(9, w, 6)
        ^ entry(8, w, 7)
}

/// A 16-byte block as two native-endian words (one load each).
#[inline(always)]
fn halves(block: &[u8; BLOCK]) -> (u64, u64) {
    let (words, _) = block.as_chunks::<8>();
    (u64::from_ne_bytes(words[0]), u64::from_ne_bytes(words[1]))
}

/// The plain slicing-by-16 walk from any state (the reference the other
/// engines are held to, and a bench baseline).
pub(crate) fn update_slicing(crc: u16, bytes: &[u8]) -> u16 {
    let (blocks, rest) = bytes.as_chunks::<BLOCK>();
    let crc = blocks.iter().fold(crc, |crc, block| {
        let (first, second) = halves(block);
        step16(crc, first.to_be(), second.to_be())
    });
    let (words, rest) = rest.as_chunks::<8>();
    let crc = words
        .iter()
        .fold(crc, |crc, word| step8(crc, u64::from_be_bytes(*word)));
    rest.iter().fold(crc, |crc, &b| {
        (crc << 8) ^ TABLES[0][usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// One slicing-by-16 step over a block in memory: each look-up indexed by
/// a byte loaded on its own (`movzx` from memory), which costs fewer
/// instructions than cutting bytes out of two loaded words.
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
pub(crate) fn step16_bytes(crc: u16, b: &[u8; BLOCK]) -> u16 {
    let t = |k: usize, i: usize| TABLES[k][usize::from(b[i])];
    // Bytes 8 to 15 come out of two 32-bit loads instead: the low two
    // bytes of a register are indexes without a shift (`movzx r, cl/ch`).
    let (words, _) = b.as_chunks::<4>();
    let u = |w: usize| u32::from_le_bytes(words[w]);
    let s = |k: usize, w: u32, j: u32| TABLES[k][usize::from((w >> (8 * j)) as u8)];
    let (a, c, d) = (u(1), u(2), u(3));
    let independent = t(13, 2)
        ^ t(12, 3)
        ^ s(11, a, 0)
        ^ s(10, a, 1)
        ^ s(9, a, 2)
        ^ s(8, a, 3)
        ^ s(7, c, 0)
        ^ s(6, c, 1)
        ^ s(5, c, 2)
        ^ s(4, c, 3)
        ^ s(3, d, 0)
        ^ s(2, d, 1)
        ^ s(1, d, 2)
        ^ s(0, d, 3);
    let [hi, lo] = crc.to_be_bytes();
    independent ^ TABLES[15][usize::from(hi ^ b[0])] ^ TABLES[14][usize::from(lo ^ b[1])]
}

#[cfg(target_arch = "wasm32")]
#[inline(always)]
pub(crate) fn step16_bytes(crc: u16, b: &[u8; BLOCK]) -> u16 {
    let (first, second) = halves(b);
    step16(crc, first.to_be(), second.to_be())
}

/// Table `k`'s entry for byte `j` (counted from the top) of `word`.
#[inline(always)]
fn entry(k: usize, word: u64, j: u32) -> u16 {
    TABLES[k][usize::from((word >> (56 - 8 * j)) as u8)]
}

/// The CRC from state 0 of a key held as by [`load_word_on_top`]: the
/// byte `k` from the top has `k` bytes after it.
#[inline(always)]
fn word_crc(word: u64) -> u16 {
    top6_crc(word) ^ entry(6, word, 6) ^ entry(7, word, 7)
}

/// [`word_crc`] of the top 6 bytes of `word` (the two below taken as
/// zeros).
#[inline(always)]
fn top6_crc(word: u64) -> u16 {
    entry(0, word, 0)
        ^ entry(1, word, 1)
        ^ entry(2, word, 2)
        ^ entry(3, word, 3)
        ^ entry(4, word, 4)
        ^ entry(5, word, 5)
}

/// One slicing-by-8 step over the big-endian `word`: 8 independent
/// look-ups, the state xored over its first two bytes. The six look-ups
/// that do not depend on the state come first, so that they overlap the
/// previous step: only the last two wait for it.
#[inline(always)]
fn step8(crc: u16, word: u64) -> u16 {
    let independent = entry(5, word, 2)
        ^ entry(4, word, 3)
        ^ entry(3, word, 4)
        ^ entry(2, word, 5)
        ^ entry(1, word, 6)
        ^ entry(0, word, 7);
    let head = word ^ u64::from(crc) << 48;
    independent ^ entry(7, head, 0) ^ entry(6, head, 1)
}

/// A 16-byte step with only 8 tables (see [`TABLE_COUNT`]); natively it is
/// compiled for the tests, which hold it to the 16-table step.
#[cfg(any(test, target_arch = "wasm32"))]
#[inline(always)]
fn step16_in_halves(crc: u16, first: u64, second: u64) -> u16 {
    step8(step8(crc, first), second)
}

#[cfg(target_arch = "wasm32")]
use step16_in_halves as step16;

/// One slicing-by-16 step over two big-endian words: 16 independent
/// look-ups, byte indexes taken out of registers by shifts (one load per
/// word, not per byte). The 14 look-ups that do not depend on the state
/// come first, so that they overlap the previous step's chain; putting the
/// state's two first made every step wait for all 16 (measured: twice as
/// slow as the `crc` crate's slicing-by-16, which orders them this way).
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
fn step16(crc: u16, first: u64, second: u64) -> u16 {
    let (a, b) = (first, second);
    let independent = entry(13, a, 2)
        ^ entry(12, a, 3)
        ^ entry(11, a, 4)
        ^ entry(10, a, 5)
        ^ entry(9, a, 6)
        ^ entry(8, a, 7)
        ^ entry(7, b, 0)
        ^ entry(6, b, 1)
        ^ entry(5, b, 2)
        ^ entry(4, b, 3)
        ^ entry(3, b, 4)
        ^ entry(2, b, 5)
        ^ entry(1, b, 6)
        ^ entry(0, b, 7);
    let head = a ^ u64::from(crc) << 48;
    independent ^ entry(15, head, 0) ^ entry(14, head, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gf2::crc_bitwise;

    #[test]
    fn tables_are_a_byte_then_zeros() {
        for (k, table) in TABLES.iter().enumerate() {
            for b in [0u8, 1, 0x5a, 0x80, 0xff] {
                let mut msg = [0u8; BLOCK];
                msg[0] = b;
                assert_eq!(table[usize::from(b)], crc_bitwise(&msg[..=k]));
            }
        }
        for b in 0..=255u8 {
            assert_eq!(TABLES[0][usize::from(b)], crc_bitwise(&[b]));
        }
    }

    #[test]
    fn the_wasm_step_in_halves_equals_the_16_table_step() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            // xorshift64: blocks and states all over the space.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (first, second) = (x, x.rotate_left(29));
            let crc = (x >> 48) as u16;
            assert_eq!(
                step16_in_halves(crc, first, second),
                step16(crc, first, second)
            );
        }
    }

    #[test]
    fn the_slicing_walk_is_the_reference() {
        let msg: [u8; 100] = core::array::from_fn(|i| (i as u8).wrapping_mul(151) ^ 0x3C);
        for n in 0..=msg.len() {
            assert_eq!(
                update_slicing(0, &msg[..n]),
                crc_bitwise(&msg[..n]),
                "n {n}"
            );
        }
        assert_eq!(update_slicing(0, b"123456789"), 0x31C3);
    }
}
