//! x86_64 with PCLMULQDQ and SSSE3: 128-bit carry-less multiplies.
//!
//! Keys of at most 64 bytes never leave the xmm registers: overlapping
//! loads, the hash-tag search as byte compares and move-masks, the tag cut
//! out by a shuffle, then one Barrett reduction (three multiplies). The
//! wider tiers take their short keys here too. Longer input is folded by
//! the shared algorithm in `fold.rs` on eight xmm accumulators.

use core::arch::x86_64::{
    __m128i, _mm_clmulepi64_si128, _mm_cmpeq_epi8, _mm_cvtsi128_si32, _mm_cvtsi64_si128,
    _mm_loadl_epi64, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x,
    _mm_setzero_si128, _mm_shuffle_epi8, _mm_srli_si128, _mm_unpacklo_epi64, _mm_xor_si128,
};

use super::sse2::{self, load16, tag_span};
use crate::engine::fold::{self, end_keys, Lanes};
use crate::engine::generic::{self, Engine};
use crate::engine::gf2::{BARRETT_MU, POLY, X80};
use crate::engine::swar::load_padded;
use crate::engine::tag;

/// Proof that this CPU has PCLMULQDQ, SSSE3 and SSE2: only the dispatch
/// makes one, after detecting them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pclmul(());

impl Pclmul {
    /// # Safety
    /// The CPU has PCLMULQDQ, SSSE3 and SSE2.
    pub(crate) const unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

impl Engine for Pclmul {
    /// Up to four 16-byte loads, overlapping.
    const SHORT_KEY: usize = 64;

    #[inline(always)]
    fn crc_of_block(self, block: u128, wide: bool) -> u16 {
        // SAFETY: a `Pclmul` exists only where its features were detected.
        unsafe { barrett(_mm_set_epi64x((block >> 64) as i64, block as i64), wide) }
    }

    #[inline(always)]
    fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        // SAFETY: as above.
        unsafe { fold::update_blocks::<__m128i>(crc, bytes, stop) }
    }

    #[inline(always)]
    fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
        if bytes.len() <= Self::SHORT_KEY {
            // SAFETY: as above.
            unsafe { plain_crc(bytes) }
        } else {
            generic::update_with(self, 0, bytes)
        }
    }

    #[inline(always)]
    fn short_key_crc(self, key: &[u8]) -> u16 {
        // SAFETY: as above.
        unsafe { sse::short_key_crc(key) }
    }

    #[inline(always)]
    fn find_byte(self, hay: &[u8], needle: u8) -> Option<usize> {
        // SAFETY: as above (SSE2 is part of it).
        unsafe { sse2::find_byte(hay, needle) }
    }
}

/// A tier wider than [`Pclmul`], whose features include its own: a
/// block, a short key and a byte search are [`Pclmul`]'s work, and only
/// the runs of whole blocks ([`Wide::update_wide`]) are the tier's own.
/// Every wide tier is an [`Engine`] through this, forwarding once.
pub(crate) trait Wide: Copy {
    /// [`Engine::update_blocks`] on the tier's wide registers.
    fn update_wide(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize);

    /// The 128-bit tier, which this one's features include.
    #[inline(always)]
    fn narrow(self) -> Pclmul {
        // SAFETY: a wide tier exists only where the 128-bit tier's
        // features were detected with its own.
        unsafe { Pclmul::new_unchecked() }
    }
}

impl<W: Wide> Engine for W {
    const SHORT_KEY: usize = Pclmul::SHORT_KEY;

    #[inline(always)]
    fn crc_of_block(self, block: u128, wide: bool) -> u16 {
        self.narrow().crc_of_block(block, wide)
    }

    #[inline(always)]
    fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        self.update_wide(crc, bytes, stop)
    }

    #[inline(always)]
    fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
        if bytes.len() <= Self::SHORT_KEY {
            self.narrow().crc_of_bytes(bytes)
        } else {
            generic::update_with(self, 0, bytes)
        }
    }

    #[inline(always)]
    fn short_key_crc(self, key: &[u8]) -> u16 {
        self.narrow().short_key_crc(key)
    }

    #[inline(always)]
    fn find_byte(self, hay: &[u8], needle: u8) -> Option<usize> {
        self.narrow().find_byte(hay, needle)
    }
}

/// The CRC of the hashed part of a longer key.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline(never)]
pub(crate) fn long_key_root(key: &[u8]) -> u16 {
    // SAFETY: this function runs only where its features are.
    generic::long_key_crc(unsafe { Pclmul::new_unchecked() }, key)
}

/// `Engine::update_blocks` compiled for this tier, for the tests.
#[cfg(test)]
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
pub(crate) fn update_blocks_root(crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
    // SAFETY: this function runs only where its features are.
    unsafe { Pclmul::new_unchecked() }.update_blocks(crc, bytes, stop)
}

/// The CRC from state 0 of at most 64 bytes, braces or not.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
pub(crate) fn plain_root(bytes: &[u8]) -> u16 {
    plain_crc(bytes)
}

/// [`plain_crc`] of the rare tag that ends past a key's first 16 bytes,
/// out of line, so that the tag cut that calls it stays small enough to
/// be inlined.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline(never)]
fn far_tag_crc(tag: &[u8]) -> u16 {
    plain_crc(tag)
}

crc_from_zero!(plain_root, Pclmul::SHORT_KEY);

/// The CRC of any bytes, continued from `crc`.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
pub(crate) fn update_root(crc: u16, bytes: &[u8]) -> u16 {
    if crc == 0 && bytes.len() <= Pclmul::SHORT_KEY {
        return plain_crc(bytes);
    }
    // SAFETY: as above.
    generic::update_with(unsafe { Pclmul::new_unchecked() }, crc, bytes)
}

/// One xmm register: one lane. Eight accumulators keep enough folds in
/// flight to cover the multiplier's latency.
impl Lanes for __m128i {
    const LANES: usize = 1;
    const ACCUMULATORS: usize = 8;
    const REFLECTED: bool = false;

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn zero() -> Self {
        _mm_setzero_si128()
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load(bytes: &[u8]) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes; unaligned loads
        // are allowed.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load_partial(_: &[u8]) -> Self {
        // A one-lane register has no partial load: `fold` never asks.
        _mm_setzero_si128()
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat(byte: u8) -> Self {
        _mm_set1_epi8(byte as i8)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn any_equal(raw: &[Self], needle: Self) -> bool {
        sse2::any_equal(raw, needle)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reverse(raw: Self) -> Self {
        _mm_shuffle_epi8(raw, window(&REVERSED, 0))
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn xor(a: Self, b: Self) -> Self {
        _mm_xor_si128(a, b)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn fold(acc: Self, keys: Self, next: Self) -> Self {
        fold_into(acc, next, keys)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat_keys(keys: [u64; 2]) -> Self {
        _mm_set_epi64x(keys[1] as i64, keys[0] as i64)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn lane_keys(keys: &[[u64; 2]]) -> Self {
        match keys.first() {
            Some(&k) => _mm_set_epi64x(k[1] as i64, k[0] as i64),
            None => _mm_setzero_si128(),
        }
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn low_lane(value: u128) -> Self {
        _mm_set_epi64x((value >> 64) as i64, value as i64)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reduce(v: Self) -> u16 {
        reduce80(v)
    }
}

/// `pshufb` controls turning two overlapping loads into a zero-padded
/// block: entry `n` is for an `n`-byte key, loaded as `key[..w]` in the
/// low lane and `key[n - w..]` in the next `w` bytes (`w` = 8 for `n >= 8`,
/// else 4). Output byte `j` is key byte `n - 1 - j`.
const fn load_controls(w: usize) -> [[u8; 16]; 17] {
    let mut t = [[0x80u8; 16]; 17];
    let mut n = w;
    while n <= 16 && n < 2 * w + 1 {
        let mut j = 0;
        while j < n {
            t[n][j] = if j < w {
                (2 * w - 1 - j) as u8
            } else {
                (n - 1 - j) as u8
            };
            j += 1;
        }
        n += 1;
    }
    t
}
static LOAD8: [[u8; 16]; 17] = load_controls(8);
static LOAD4: [[u8; 16]; 17] = load_controls(4);

/// Sliding windows: 16 bytes from `REVERSED[16 - r..]` take the first
/// `r` message bytes of a raw load, reversed, into the low `r` bytes.
pub(crate) static REVERSED: [u8; 32] = {
    let mut t = [0x80u8; 32];
    let mut i = 0;
    while i < 16 {
        t[i] = 15 - i as u8;
        i += 1;
    }
    t
};

/// Shuffle controls that cut a tag out of a padded block in one step,
/// indexed by [`tag::span_in_block_masks`]'s `(skip, distance)` (taken mod
/// 16: `skip` is 16 to 31 there, `distance` 2 to 16): the tag's bytes move
/// to the bottom, in order, and the rest become zeros.
static CUT: [[[u8; 16]; 16]; 16] = {
    let mut t = [[[0x80u8; 16]; 16]; 16];
    let mut skip = 16;
    while skip < 32 {
        // The `{` is byte `31 - skip`; the tag the `distance - 1` below it.
        let mut distance = 2;
        while distance <= 32 - skip {
            let len = distance - 1;
            let mut i = 0;
            while i < len {
                t[skip % 16][distance % 16][i] = (31 - skip - len + i) as u8;
                i += 1;
            }
            distance += 1;
        }
        skip += 1;
    }
    t
};

/// Shuffle controls that cut a tag out of a raw 16-byte load in one step:
/// `TAG_IN_LOAD[open][distance]`, for a `{` at byte `open` and its `}`
/// `distance` bytes after it, reverses the bytes between into the bottom
/// (the last one lowest) and zeroes the rest.
static TAG_IN_LOAD: [[[u8; 16]; 16]; 16] = {
    let mut t = [[[0x80u8; 16]; 16]; 16];
    let mut open = 0;
    while open < 16 {
        // The `}` at most at byte 16, just past the load (taken mod 16).
        let mut distance = 2;
        while open + distance <= 16 {
            let mut i = 0;
            while i + 1 < distance {
                t[open][distance % 16][i] = (open + distance - 1 - i) as u8;
                i += 1;
            }
            distance += 1;
        }
        open += 1;
    }
    t
};

/// 16 bytes of a 32-byte table from `at` (clamped into the table).
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn window(table: &[u8; 32], at: usize) -> __m128i {
    load16(table, at.min(16))
}

/// A key of at most 16 bytes as a zero-padded block, without leaving the
/// vector registers (see `LOAD8`).
#[target_feature(enable = "ssse3,sse2")]
#[inline]
fn load_block(key: &[u8]) -> __m128i {
    let n = key.len().min(16);
    let half = |b: Option<&[u8; 4]>| u64::from(b.map_or(0, |b| u32::from_le_bytes(*b)));
    if n == 8 {
        // Exactly 8 bytes (a common key size) are the block read as a
        // big-endian number: one load and a byte swap, no shuffle.
        let word = key.first_chunk().map_or(0, |b| u64::from_be_bytes(*b));
        _mm_cvtsi64_si128(word as i64)
    } else if n == 16 {
        _mm_shuffle_epi8(load16(key, 0), window(&REVERSED, 0))
    } else if n > 8 {
        let load8 = |b: Option<&[u8; 8]>| match b {
            // SAFETY: `b` is 8 readable bytes; `movq` loads exactly 8.
            Some(b) => unsafe { _mm_loadl_epi64(b.as_ptr().cast()) },
            None => _mm_setzero_si128(),
        };
        let v = _mm_unpacklo_epi64(load8(key.first_chunk()), load8(key.last_chunk()));
        _mm_shuffle_epi8(v, load16(&LOAD8[n], 0))
    } else if n >= 4 {
        let v = half(key.last_chunk()) << 32 | half(key.first_chunk());
        _mm_shuffle_epi8(_mm_cvtsi64_si128(v as i64), load16(&LOAD4[n], 0))
    } else {
        _mm_cvtsi64_si128(load_padded(key) as i64)
    }
}

/// The short-key path (keys of at most 64 bytes) once per instruction
/// encoding, from one source: the helpers below it are inlined into each.
macro_rules! short_key_paths {
    ($(#[$doc:meta])* $name:ident, $features:literal) => {
        $(#[$doc])*
        pub(crate) mod $name {
            use super::*;

            /// The CRC of the hashed part of a key of at most 64 bytes.
            #[target_feature(enable = $features)]
            pub(crate) fn short_key_root(key: &[u8]) -> u16 {
                short_key_crc(key)
            }

            /// The short-key CRC (at most 64 bytes), all in vector registers: brace
            /// positions by byte compare and move-mask, then the CRC of the tag or of
            /// the key with no further look at braces.
            #[target_feature(enable = $features)]
            #[inline]
            pub(crate) fn short_key_crc(key: &[u8]) -> u16 {
                let n = key.len();
                if n > 16 {
                    return mid_key_crc(key);
                }
                // Longer keys leave on the first test (testing `n >= 16`
                // first cost them one more taken jump: 5-9%). LLVM tests
                // for 8 bytes next, whatever the order here: a 16-byte key
                // pays one untaken compare (0.1 ns on the 128-bit tier). Its
                // load is written out, not left to `load_block`, so that it
                // is the path that falls through (measured: tagged 16-byte
                // keys on the wider tiers 2.54 ns with a jump, 2.41 without).
                let v = if n == 16 {
                    _mm_shuffle_epi8(load16(key, 0), window(&REVERSED, 0))
                } else if let Some(word) = key.first_chunk().filter(|_| n == 8) {
                    return eight_byte_key_crc(word);
                } else {
                    load_block(key)
                };
                let mask =
                    |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u32;
                // In the padded block bit `j` is the byte `15 - j` from the top.
                let opens = mask(b'{');
                if opens != 0 {
                    if let Some((skip, distance)) = tag::span_in_block_masks(opens, mask(b'}')) {
                        return tag_of_block_crc(v, skip, distance);
                    }
                }
                barrett(v, n > 8)
            }

            /// The CRC of the tag that [`tag::span_in_block_masks`] found in `block`.
            /// Out of line (a tail call), so that its CRC is not merged with the
            /// untagged key's, which then falls through to its own (measured: an
            /// 8-byte untagged key took 0.4 ns longer, one more taken jump).
            #[target_feature(enable = $features)]
            #[inline(never)]
            fn tag_of_block_crc(block: __m128i, skip: u32, distance: u32) -> u16 {
                let cut = &CUT[skip as usize % 16][distance as usize % 16];
                // SAFETY: `cut` is 16 readable bytes; unaligned loads are allowed.
                let tag = _mm_shuffle_epi8(block, unsafe { _mm_loadu_si128(cut.as_ptr().cast()) });
                barrett(tag, distance > 9)
            }

            /// [`short_key_crc`] of exactly 8 bytes (a common key size): the
            /// braces are looked for in the load as it is, in key order, so
            /// the test does not wait for the byte swap, and a tag is found
            /// by trailing-zero counts, one instruction even without BMI
            /// (leading zeros take the 128-bit tier two and a fallback).
            /// Measured against the padded block's masks: untagged 8 bytes
            /// 9-15% faster, tagged 19-24%.
            #[target_feature(enable = $features)]
            #[inline]
            fn eight_byte_key_crc(word: &[u8; 8]) -> u16 {
                // SAFETY: `word` is 8 readable bytes; `movq` loads exactly 8.
                let raw = unsafe { _mm_loadl_epi64(word.as_ptr().cast()) };
                let mask =
                    |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(raw, _mm_set1_epi8(b as i8))) as u64;
                let opens = mask(b'{');
                if opens != 0 {
                    if let Some(tag) = tag::span_in_masks(opens, mask(b'}')) {
                        // A tag in 8 bytes ends within them, and is at most 6.
                        return barrett(cut_near_tag(raw, &tag), false);
                    }
                }
                barrett(load_block(word), false)
            }

            /// [`short_key_crc`] of 17 to 64 bytes, kept out of line so that the
            /// 16-byte path stays a small leaf with nothing to spill.
            #[target_feature(enable = $features)]
            #[inline(never)]
            fn mid_key_crc(key: &[u8]) -> u16 {
                let n = key.len();
                let first = load16(key, 0);
                // One call of `tag_crc`, so that it is inlined.
                let tag = if n > 32 {
                    // The third load reads zeros below 48 bytes; the last
                    // overlaps.
                    let loads = [first, load16(key, 16), load16(key, 32), load16(key, n - 16)];
                    match tag_span(loads, n) {
                        Some(tag) => tag,
                        None => return crc_of_blocks(key),
                    }
                } else {
                    let last = load16(key, n - 16);
                    match tag_span([first, last], n) {
                        Some(tag) => tag,
                        None => return crc_of_two(first, last, n),
                    }
                };
                tag_crc(key, first, tag)
            }
        }
    };
}

short_key_paths!(
    /// For the 128-bit tier: SSE encodings.
    sse,
    "pclmulqdq,ssse3,sse2"
);
short_key_paths!(
    /// For the 256- and 512-bit tiers, whose CPUs all have AVX2, BMI1, BMI2
    /// and LZCNT (the dispatch checks): three-operand encodings and shifts
    /// by any register spare the moves (measured: short keys 2 to 10%
    /// faster).
    vex,
    "pclmulqdq,ssse3,sse2,avx2,bmi1,bmi2,lzcnt"
);

/// CRC of the tag at `tag` in `key`, whose first 16 bytes are `first`
/// (raw). A tag that ends within them (the usual `{user:1000}:...`) is cut
/// out of the register by one shuffle.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline]
fn tag_crc(key: &[u8], first: __m128i, tag: core::ops::Range<usize>) -> u16 {
    if tag.end > 16 {
        return far_tag_crc(key.get(tag).unwrap_or_default());
    }
    near_tag_crc(first, tag)
}

/// CRC of the tag at `tag`, which ends within the 16 bytes `first` (raw):
/// one shuffle cuts it out.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline]
fn near_tag_crc(first: __m128i, tag: core::ops::Range<usize>) -> u16 {
    barrett(
        cut_near_tag(first, &tag),
        tag.end.wrapping_sub(tag.start) > 8,
    )
}

/// The tag at `tag`, which ends within the 16 bytes `first` (raw), as a
/// zero-padded block: one shuffle.
#[target_feature(enable = "ssse3,sse2")]
#[inline]
fn cut_near_tag(first: __m128i, tag: &core::ops::Range<usize>) -> __m128i {
    let len = tag.end.wrapping_sub(tag.start);
    let cut = &TAG_IN_LOAD[tag.start.wrapping_sub(1) % 16][(len + 1) % 16];
    // SAFETY: `cut` is 16 readable bytes; unaligned loads are allowed.
    _mm_shuffle_epi8(first, unsafe { _mm_loadu_si128(cut.as_ptr().cast()) })
}

/// CRC from state 0 of at most 64 bytes, braces or not.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline]
fn plain_crc(bytes: &[u8]) -> u16 {
    let n = bytes.len();
    if n > 32 {
        crc_of_blocks(bytes)
    } else if n > 16 {
        crc_of_two(load16(bytes, 0), load16(bytes, n - 16), n)
    } else {
        barrett(load_block(bytes), n > 8)
    }
}

/// CRC from state 0 of `n` (17 to 32) bytes loaded raw as their first and
/// last 16: the first `n - 16` padded in front, each block moved to the end
/// (and times `x^16`) by its own multiplies, then reduced.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline]
fn crc_of_two(first: __m128i, last: __m128i, n: usize) -> u16 {
    let head = _mm_shuffle_epi8(first, window(&REVERSED, 32 - n));
    let tail = _mm_shuffle_epi8(last, window(&REVERSED, 0));
    let tail = fold_into(tail, _mm_setzero_si128(), keys(end_keys(0)));
    reduce80(fold_into(head, tail, keys(end_keys(1))))
}

/// CRC from state 0 of `n` (33 to 64) bytes: the first `n` mod 16 (or 16)
/// padded in front, then every block moved to the end at once.
#[target_feature(enable = "pclmulqdq,ssse3,sse2")]
#[inline]
fn crc_of_blocks(bytes: &[u8]) -> u16 {
    let n = bytes.len();
    let reverse = window(&REVERSED, 0);
    // The whole block `d` blocks from the end.
    let block = |d: usize| _mm_shuffle_epi8(load16(bytes, n - 16 - 16 * d), reverse);
    // Independent multiplies: each block moves straight to the end. Two or
    // three of them, written out: left to the unroller, one build of this
    // function kept a loop (64 bytes: 6.8 to 9.4 ns).
    let acc = fold_into(block(0), _mm_setzero_si128(), keys(end_keys(0)));
    let acc = fold_into(block(1), acc, keys(end_keys(1)));
    let (acc, whole) = if n > 48 {
        (fold_into(block(2), acc, keys(end_keys(2))), 3)
    } else {
        (acc, 2)
    };
    let head = n - 16 * whole;
    let first = _mm_shuffle_epi8(load16(bytes, 0), window(&REVERSED, 16 - head));
    reduce80(fold_into(first, acc, keys(end_keys(whole))))
}

#[target_feature(enable = "sse2")]
#[inline]
fn keys(k: [u64; 2]) -> __m128i {
    _mm_set_epi64x(k[1] as i64, k[0] as i64)
}

/// `acc * x^d + next`, folded with the keys for distance `d`.
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
pub(crate) fn fold_into(acc: __m128i, next: __m128i, k: __m128i) -> __m128i {
    let lo = _mm_clmulepi64_si128(acc, k, 0x00);
    let hi = _mm_clmulepi64_si128(acc, k, 0x11);
    _mm_xor_si128(_mm_xor_si128(lo, hi), next)
}

/// `v mod P` for `v` of degree below 80: Barrett's two multiplies.
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
pub(crate) fn reduce80(v: __m128i) -> u16 {
    let consts = _mm_set_epi64x(BARRETT_MU as i64, X80 as i64);
    // q = floor(v / P) = floor(floor(v / x^16) * mu / x^64), exact in
    // GF(2) for deg v < 80; mu = x^64 + BARRETT_MU.
    let quot_in = _mm_srli_si128(v, 2);
    let t = _mm_clmulepi64_si128(quot_in, consts, 0x10);
    let q = _mm_xor_si128(_mm_srli_si128(t, 8), quot_in);
    // v mod P = low 16 bits of v ^ q*P.
    let qp = _mm_clmulepi64_si128(q, _mm_set_epi64x(0, i64::from(POLY)), 0x00);
    (_mm_cvtsi128_si32(v) ^ _mm_cvtsi128_si32(qp)) as u16
}

/// `(v * x^16) mod P` for a 128-bit `v` (only its low half when `!wide`).
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
pub(crate) fn barrett(v: __m128i, wide: bool) -> u16 {
    let consts = _mm_set_epi64x(BARRETT_MU as i64, X80 as i64);
    // v*x^16 = hi*x^80 + lo*x^16, and hi*x^80 = hi*(x^80 mod P) =: b, of
    // degree below 79. What is left to reduce is A = b ^ lo*x^16.
    let (quot_in, low16) = if wide {
        let b = _mm_clmulepi64_si128(v, consts, 0x01);
        // floor(A / x^16) = (b >> 16) ^ lo; A's low 16 bits are b's.
        (
            _mm_xor_si128(_mm_srli_si128(b, 2), v),
            _mm_cvtsi128_si32(b) as u16,
        )
    } else {
        (v, 0)
    };
    // q = floor(A / P) = floor(floor(A / x^16) * mu / x^64), exact in GF(2)
    // for deg A < 80; mu = x^64 + BARRETT_MU.
    let t = _mm_clmulepi64_si128(quot_in, consts, 0x10);
    let q = _mm_xor_si128(_mm_srli_si128(t, 8), quot_in);
    // A mod P = low 16 bits of A ^ q*P (q*x^16 has none there).
    let qp = _mm_clmulepi64_si128(q, _mm_set_epi64x(0, i64::from(POLY)), 0x00);
    low16 ^ _mm_cvtsi128_si32(qp) as u16
}
