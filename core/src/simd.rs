//! Carry-less-multiply CRC-16: the only `unsafe` in the crate.
//!
//! The CPU-specific path is chosen here and nowhere else: x86_64 with
//! PCLMULQDQ and SSSE3 (plus a 512-bit path with AVX-512 VPCLMULQDQ), or
//! aarch64 with PMULL, detected at run time (with the `std` feature; the
//! answer is cached by `std` after the first call) or fixed at compile time
//! by target features (without it). Everywhere else the functions answer
//! `None` and the caller takes the portable tables.
//!
//! Polynomials are held with bit `i` the coefficient of `x^i`, so the first
//! message byte is the top byte of a big-endian 128-bit block.
//!
//! - Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
//!   PCLMULQDQ"): a 128-bit remainder `A` followed by a block `B` is
//!   congruent to `A_hi * (x^(d+64) mod P) ^ A_lo * (x^d mod P) ^ B`, where
//!   `d` is the distance folded. Every product has degree below 79, so no
//!   reduction is needed until the end. Four lanes fold 64 bytes a step.
//! - The end is a Barrett reduction of `A * x^16` (three multiplies), not a
//!   table walk, so short inputs pay a few instructions.
//! - From state 0 (every slot computation) the input is zero-padded in
//!   front to whole 16-byte blocks: leading zeros do not change the CRC, so
//!   no tail is left for the tables.

const PORTABLE: &str = "portable slicing-by-16";

/// The constants both carry-less-multiply engines (x86_64, aarch64) share.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod consts {
    use crate::crc16::{x_pow_mod, POLY};

    /// `floor(x^80 / P)` without its `x^64` term: Barrett's constant for
    /// reducing a polynomial of degree below 80.
    pub(super) const BARRETT_MU: u64 = {
        let mut rem: u128 = 1 << 80;
        let mut quotient: u128 = 0;
        let divisor: u128 = 0x1_0000 | POLY as u128;
        let mut bit = 80;
        while bit >= 16 {
            if rem >> bit & 1 == 1 {
                rem ^= divisor << (bit - 16);
                quotient |= 1 << (bit - 16);
            }
            bit -= 1;
        }
        quotient as u64
    };

    /// Fold constants for a distance of `d` bits, as one vector:
    /// `[x^d mod P, x^(d+64) mod P]` for the low and high 64-bit halves.
    pub(super) const fn fold_keys(d: u32) -> [i64; 2] {
        [x_pow_mod(d) as i64, x_pow_mod(d + 64) as i64]
    }
    pub(super) const FOLD_128: [i64; 2] = fold_keys(128);
    /// `x^80 mod P`: folds the high half of a block into the low half.
    pub(super) const X80: u64 = x_pow_mod(80) as u64;
}

/// Whether the carry-less-multiply path runs on this CPU.
#[inline]
pub(crate) fn available() -> bool {
    imp::available()
}

/// The CRC engine this CPU runs, in words (for benchmark records and logs).
pub(crate) fn engine() -> &'static str {
    imp::engine()
}

/// [`crate::crc16::update`] on the carry-less-multiply engine, or `None`
/// where this CPU has none.
#[inline]
pub(crate) fn update(crc: u16, bytes: &[u8]) -> Option<u16> {
    imp::update(crc, bytes)
}

/// [`crate::slot_for_key`] on the carry-less-multiply engine, or `None`
/// where this CPU has none.
#[inline]
pub(crate) fn slot_for_key(key: &[u8]) -> Option<u16> {
    imp::slot_for_key(key)
}

/// The CRC from state 0 of a zero-padded block of at most 16 bytes on the
/// carry-less-multiply engine, or `None` where this CPU has none.
#[cfg(test)]
pub(crate) fn crc_of_block(block: u128, wide: bool) -> Option<u16> {
    use crate::crc16::Engine;
    imp::Clmul::detect().map(|c| c.crc_of_block(block, wide))
}

#[cfg(target_arch = "x86_64")]
mod imp {
    #![allow(unsafe_code)]

    use super::consts::{fold_keys, BARRETT_MU, FOLD_128, X80};
    use crate::crc16::{update_with, Engine, POLY};
    use crate::placement::long_key_crc;
    use core::arch::x86_64::{
        __m128i, __m512i, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_xor_si256,
        _mm512_broadcast_i32x4, _mm512_castsi128_si512, _mm512_castsi512_si256,
        _mm512_clmulepi64_epi128, _mm512_cmpeq_epi8_mask, _mm512_extracti64x4_epi64,
        _mm512_inserti32x4, _mm512_loadu_si512, _mm512_set1_epi8, _mm512_set_epi64,
        _mm512_setzero_si512, _mm512_shuffle_epi8, _mm512_ternarylogic_epi64, _mm_and_si128,
        _mm_clmulepi64_si128, _mm_cmpeq_epi8, _mm_cvtsi128_si32, _mm_cvtsi128_si64,
        _mm_cvtsi64_si128, _mm_loadl_epi64, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi8, _mm_srli_si128,
        _mm_unpacklo_epi64, _mm_xor_si128,
    };

    const FOLD_256: [i64; 2] = fold_keys(256);
    const FOLD_384: [i64; 2] = fold_keys(384);
    const FOLD_512: [i64; 2] = fold_keys(512);
    /// `DIRECT[t]` moves a block `15 - t` blocks before the end to the end:
    /// the fold keys for `128 * (15 - t)` bits, so that consecutive entries
    /// serve consecutive lanes.
    static DIRECT: [[i64; 2]; 16] = {
        let mut t = [[0; 2]; 16];
        let mut i = 0;
        while i < 16 {
            t[i] = fold_keys(128 * (15 - i as u32));
            i += 1;
        }
        t
    };

    /// From this many bytes four lanes beat one: their merge costs three
    /// extra multiplies, but one lane's folds are a serial chain.
    const FOUR_LANES_MIN: usize = 128;

    /// From this many bytes the 512-bit path wins; below it, entering it
    /// costs more than it saves (measured: `crc16-paths` in the slot bench).
    const ZMM_MIN: usize = 128;

    /// What this CPU offers: nothing, PCLMULQDQ with SSSE3, or that plus
    /// AVX-512 (F, BW) with VPCLMULQDQ, four multiplies per instruction.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Level {
        None = 1,
        Clmul = 2,
        Zmm = 3,
    }

    /// 0 until asked, then the `Level`: one load per call instead of
    /// several feature look-ups.
    #[cfg(feature = "std")]
    static DETECTED: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

    #[cfg(feature = "std")]
    #[inline(always)]
    fn level() -> Level {
        match DETECTED.load(core::sync::atomic::Ordering::Relaxed) {
            1 => Level::None,
            2 => Level::Clmul,
            3 => Level::Zmm,
            _ => detect_level(),
        }
    }

    #[cfg(feature = "std")]
    #[cold]
    fn detect_level() -> Level {
        let level = if !(std::is_x86_feature_detected!("pclmulqdq")
            && std::is_x86_feature_detected!("ssse3"))
        {
            Level::None
        } else if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("vpclmulqdq")
        {
            Level::Zmm
        } else {
            Level::Clmul
        };
        DETECTED.store(level as u8, core::sync::atomic::Ordering::Relaxed);
        level
    }

    #[cfg(not(feature = "std"))]
    fn level() -> Level {
        if !cfg!(all(target_feature = "pclmulqdq", target_feature = "ssse3")) {
            Level::None
        } else if cfg!(all(
            target_feature = "avx512f",
            target_feature = "avx512bw",
            target_feature = "vpclmulqdq"
        )) {
            Level::Zmm
        } else {
            Level::Clmul
        }
    }

    pub(super) fn available() -> bool {
        level() >= Level::Clmul
    }

    pub(super) fn engine() -> &'static str {
        match level() {
            Level::None => super::PORTABLE,
            Level::Clmul => "pclmulqdq (128-bit)",
            Level::Zmm => "pclmulqdq + avx512 vpclmulqdq (512-bit)",
        }
    }

    /// Proof that this CPU has PCLMULQDQ, SSSE3 and SSE2 (and, when `zmm`,
    /// AVX-512 F and BW with VPCLMULQDQ): only [`Clmul::detect`] makes one.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Clmul {
        zmm: bool,
    }

    impl Clmul {
        #[inline]
        pub(crate) fn detect() -> Option<Self> {
            match level() {
                Level::None => None,
                level => Some(Self {
                    zmm: level == Level::Zmm,
                }),
            }
        }

        /// The same engine limited to 128-bit multiplies, to test and
        /// measure that path on CPUs that have more.
        #[cfg(test)]
        pub(crate) fn without_zmm(self) -> Self {
            Self { zmm: false }
        }
    }

    impl Engine for Clmul {
        /// Up to four 128-bit loads, overlapping.
        const SHORT_KEY: usize = 64;

        #[inline(always)]
        fn crc_of_block(self, block: u128, wide: bool) -> u16 {
            // SAFETY: a `Clmul` exists only where `detect` found the features
            // `reduce_block` is compiled for.
            unsafe { reduce_block(block, wide) }
        }

        #[inline(always)]
        fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
            if bytes.len() < 16 {
                return (crc, 0);
            }
            // SAFETY: as above; and `fold` gets the 16 bytes it needs.
            unsafe { fold(self, crc, bytes, stop) }
        }

        #[inline(always)]
        fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
            if bytes.len() <= Self::SHORT_KEY {
                // SAFETY: as above.
                unsafe { plain_crc(bytes) }
            } else {
                update_with(self, 0, bytes)
            }
        }

        #[inline(always)]
        fn short_key_crc(self, key: &[u8]) -> u16 {
            // SAFETY: as above.
            unsafe { short_key_crc(key) }
        }

        #[inline(always)]
        fn long_key_crc(self, key: &[u8]) -> u16 {
            // SAFETY: as above.
            unsafe { long_key_crc_clmul(self, key) }
        }
    }

    /// `pshufb` controls turning two overlapping loads into a zero-padded
    /// block: entry `n` is for an `n`-byte key, loaded as `key[..w]` in the
    /// low lane and `key[n - w..]` in the next `w` bytes (`w` = 8 for
    /// `n >= 8`, else 4). Output byte `j` is key byte `n - 1 - j`.
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

    /// Sliding windows: 16 bytes from `SLIDE[s..]` move byte `j + s` to `j`
    /// (zero past the end); from `KEEP[16 - len..]` keep the low `len`
    /// bytes; from `REVERSED[16 - r..]` take the first `r` message bytes of
    /// a raw load, reversed, into the low `r` bytes.
    static SLIDE: [u8; 32] = {
        let mut t = [0x80u8; 32];
        let mut i = 0;
        while i < 16 {
            t[i] = i as u8;
            i += 1;
        }
        t
    };
    static KEEP: [u8; 32] = {
        let mut t = [0u8; 32];
        let mut i = 0;
        while i < 16 {
            t[i] = 0xFF;
            i += 1;
        }
        t
    };
    static REVERSED: [u8; 32] = {
        let mut t = [0x80u8; 32];
        let mut i = 0;
        while i < 16 {
            t[i] = 15 - i as u8;
            i += 1;
        }
        t
    };

    /// The 16 bytes of `bytes` at `at`: message blocks, and windows into the
    /// shuffle tables (zeros past the end, which callers never ask for).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn load16(bytes: &[u8], at: usize) -> __m128i {
        let block: &[u8; 16] = match bytes.get(at..).and_then(|b| b.first_chunk()) {
            Some(b) => b,
            None => &[0; 16],
        };
        // SAFETY: `block` is 16 readable bytes; unaligned loads are allowed.
        unsafe { _mm_loadu_si128(block.as_ptr().cast::<__m128i>()) }
    }

    /// Whether any byte of `raw` equals the splatted `needle`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn any_equal(raw: &[__m128i], needle: __m128i) -> bool {
        let hits = raw.iter().fold(_mm_setzero_si128(), |acc, &x| {
            _mm_or_si128(acc, _mm_cmpeq_epi8(x, needle))
        });
        _mm_movemask_epi8(hits) != 0
    }

    /// 16 bytes of a 32-byte table from `at` (clamped into the table).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn window(table: &[u8; 32], at: usize) -> __m128i {
        load16(table, at.min(16))
    }

    /// A key of at most 16 bytes as a zero-padded block, without leaving
    /// the vector registers (see `LOAD8`).
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
            _mm_cvtsi64_si128(crate::crc16::load_padded(key) as i64)
        }
    }

    /// The short-key slot CRC (at most 64 bytes), all in vector registers:
    /// brace positions by byte compare and move-mask over two overlapping
    /// loads (bit `p` of a mask is key byte `p`), then the CRC of the tag or
    /// of the key with no further look at braces.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    fn short_key_crc(key: &[u8]) -> u16 {
        let n = key.len();
        if n > 16 {
            return mid_key_crc(key);
        }
        let v = load_block(key);
        let mask = |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u32;
        // In the padded block bit `j` is position `15 - j` from the top, so
        // the earliest byte is the highest set bit.
        let opens = mask(b'{');
        if opens != 0 {
            let open_bit = 31 - opens.leading_zeros();
            let closes = mask(b'}') & ((1 << open_bit) - 1);
            if closes != 0 {
                let close_bit = 31 - closes.leading_zeros();
                let len = (open_bit - close_bit - 1) as usize;
                if len > 0 && open_bit <= 8 {
                    // The tag lies in the low word: two shifts cut it out.
                    let word = _mm_cvtsi128_si64(v) as u64;
                    let tag = (word << (64 - 8 * open_bit)) >> (64 - 8 * len);
                    return barrett(_mm_cvtsi64_si128(tag as i64), false);
                }
                if len > 0 {
                    let slid = _mm_shuffle_epi8(v, window(&SLIDE, close_bit as usize + 1));
                    let tag = _mm_and_si128(slid, window(&KEEP, 16 - len));
                    return barrett(tag, len > 8);
                }
            }
        }
        barrett(v, n > 8)
    }

    /// [`short_key_crc`] of 17 to 64 bytes, kept out of line so that the
    /// 16-byte path stays a small leaf with nothing to spill.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline(never)]
    fn mid_key_crc(key: &[u8]) -> u16 {
        let n = key.len();
        if n > 32 {
            // The third load reads zeros below 48 bytes; the last overlaps.
            let loads = [
                load16(key, 0),
                load16(key, 16),
                load16(key, 32),
                load16(key, n - 16),
            ];
            return match tag_span(loads, n) {
                Some(tag) => tag_crc(key, loads[0], tag),
                None => crc_of_blocks(key),
            };
        }
        let loads = [load16(key, 0), load16(key, n - 16)];
        match tag_span(loads, n) {
            Some(tag) => tag_crc(key, loads[0], tag),
            None => crc_of_two(loads[0], loads[1], n),
        }
    }

    /// CRC of the tag at `tag` in `key`, whose first 16 bytes are `first`
    /// (raw). A tag that ends within them (the usual `{user:1000}:...`) is
    /// cut out of the register: reversed into place, then masked.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    fn tag_crc(key: &[u8], first: __m128i, tag: core::ops::Range<usize>) -> u16 {
        if tag.end > 16 {
            return plain_crc(key.get(tag).unwrap_or_default());
        }
        let len = tag.len();
        let reversed = _mm_shuffle_epi8(first, window(&REVERSED, 16 - tag.end));
        barrett(_mm_and_si128(reversed, window(&KEEP, 16 - len)), len > 8)
    }

    /// The hash tag of a key of `n` (17 to 64) bytes loaded as `loads`: 16
    /// bytes from offsets 0, 16, ... and the last 16 from `n - 16`. Brace
    /// positions come from byte compares and move-masks (bit `p` is key
    /// byte `p`; overlapping loads set the same bits).
    #[target_feature(enable = "sse2")]
    #[inline]
    fn tag_span<const L: usize>(loads: [__m128i; L], n: usize) -> Option<core::ops::Range<usize>> {
        let mask = |b8: u8| {
            let needle = _mm_set1_epi8(b8 as i8);
            let hits = |v| u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, needle)) as u16);
            let mut bits = hits(loads[L - 1]) << (n - 16);
            for (i, &v) in loads[..L - 1].iter().enumerate() {
                bits |= hits(v) << (16 * i);
            }
            bits
        };
        let opens = mask(b'{');
        if opens == 0 {
            return None;
        }
        let open = opens.trailing_zeros() as usize;
        // Bits past `open` (none when `open` is the last byte).
        let closes = mask(b'}') & u64::MAX.checked_shl(open as u32 + 1).unwrap_or(0);
        let close = closes.trailing_zeros() as usize;
        (closes != 0 && close > open + 1).then_some(open + 1..close)
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

    /// CRC from state 0 of `n` (17 to 32) bytes loaded raw as their first
    /// and last 16: the first `n - 16` padded in front, then one fold.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    fn crc_of_two(first: __m128i, last: __m128i, n: usize) -> u16 {
        let head = _mm_shuffle_epi8(first, window(&REVERSED, 32 - n));
        let tail = _mm_shuffle_epi8(last, window(&REVERSED, 0));
        barrett(fold_into(head, tail, keys(FOLD_128)), true)
    }

    /// CRC from state 0 of `n` (33 to 64) bytes: the first `n` mod 16 (or
    /// 16) padded in front, then each whole block folded in.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    fn crc_of_blocks(bytes: &[u8]) -> u16 {
        let n = bytes.len();
        let head = n - 16 * (n.div_ceil(16) - 1);
        let mut acc = _mm_shuffle_epi8(load16(bytes, 0), window(&REVERSED, 16 - head));
        let mut at = head;
        while at < n {
            let block = _mm_shuffle_epi8(load16(bytes, at), window(&REVERSED, 0));
            acc = fold_into(acc, block, keys(FOLD_128));
            at += 16;
        }
        barrett(acc, true)
    }

    /// The engine-generic code, compiled whole for these CPU features so
    /// that every step inlines.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    fn update_clmul(engine: Clmul, crc: u16, bytes: &[u8]) -> u16 {
        update_with(engine, crc, bytes)
    }

    /// The two slot roots: split by length before entering either, so the
    /// short one stays a small leaf function with no spills.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    fn short_slot_clmul(key: &[u8]) -> u16 {
        short_key_crc(key) & (crate::SLOT_COUNT - 1)
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline(never)]
    fn long_key_crc_clmul(engine: Clmul, key: &[u8]) -> u16 {
        long_key_crc(engine, key)
    }

    #[inline]
    pub(super) fn update(crc: u16, bytes: &[u8]) -> Option<u16> {
        let engine = Clmul::detect()?;
        // SAFETY: `engine` proves the CPU has the features.
        Some(unsafe { update_clmul(engine, crc, bytes) })
    }

    #[inline]
    pub(super) fn slot_for_key(key: &[u8]) -> Option<u16> {
        let engine = Clmul::detect()?;
        // SAFETY: `engine` proves the CPU has the features.
        Some(unsafe {
            if key.len() <= Clmul::SHORT_KEY {
                short_slot_clmul(key)
            } else {
                long_key_crc_clmul(engine, key) & (crate::SLOT_COUNT - 1)
            }
        })
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    #[inline]
    fn reduce_block(block: u128, wide: bool) -> u16 {
        barrett(_mm_set_epi64x((block >> 64) as i64, block as i64), wide)
    }

    /// The four lanes of `fold` in one 512-bit register: two multiplies
    /// per 64 bytes instead of eight. `head` is the padded first group when
    /// the input is not a whole number of groups (then `pos` is where the
    /// whole groups start); without it the first group is loaded here.
    /// Callers make sure the CPU has AVX-512 F and BW with VPCLMULQDQ.
    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline(never)]
    fn fold_zmm(
        head: Option<[__m128i; 4]>,
        bytes: &[u8],
        mut pos: usize,
        stop: Option<u8>,
    ) -> (u16, usize) {
        let per_lane = |keys: [[i64; 2]; 4]| {
            _mm512_set_epi64(
                keys[3][1], keys[3][0], keys[2][1], keys[2][0], keys[1][1], keys[1][0], keys[0][1],
                keys[0][0],
            )
        };
        let k512 = per_lane([FOLD_512; 4]);
        let reverse = _mm512_broadcast_i32x4(window(&REVERSED, 0));
        let needle = _mm512_set1_epi8(stop.unwrap_or(0) as i8);
        let fold = |acc: __m512i, k: __m512i, next: __m512i| {
            let lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
            let hi = _mm512_clmulepi64_epi128(acc, k, 0x11);
            _mm512_ternarylogic_epi64::<0x96>(lo, hi, next)
        };
        let group = |at: usize| -> Option<__m512i> {
            let block = bytes.get(at..).and_then(|b| b.first_chunk::<64>())?;
            // SAFETY: `block` is 64 readable bytes; unaligned loads are allowed.
            let raw = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
            if stop.is_some() && _mm512_cmpeq_epi8_mask(raw, needle) != 0 {
                return None;
            }
            Some(_mm512_shuffle_epi8(raw, reverse))
        };
        let mut acc = match head {
            Some(lanes) => {
                let mut acc = _mm512_castsi128_si512(lanes[0]);
                acc = _mm512_inserti32x4::<1>(acc, lanes[1]);
                acc = _mm512_inserti32x4::<2>(acc, lanes[2]);
                _mm512_inserti32x4::<3>(acc, lanes[3])
            }
            None => match group(pos) {
                Some(first) => first,
                None => return (0, 0),
            },
        };
        if head.is_none() {
            pos += 64;
        }
        // Fold step by step while more than the last three groups remain...
        while bytes.len() - pos > 3 * 64 {
            let Some(next) = group(pos) else { break };
            acc = fold(acc, k512, next);
            pos += 64;
        }
        // ...then move every lane to the end at once: independent
        // multiplies instead of a serial chain.
        let mut tail = [_mm512_setzero_si512(); 3];
        let mut groups = 0;
        while groups < 3 {
            let Some(next) = group(pos) else { break };
            tail[groups] = next;
            groups += 1;
            pos += 64;
        }
        let blocks = 4 * (groups + 1);
        let distance = |g: usize| {
            // Lanes of group g sit at block distances blocks-1-4g .. blocks-4-4g
            // from the end; `DIRECT` lists them in that (descending) order.
            let keys: &[[i64; 2]; 4] = match DIRECT
                .get(16 - blocks + 4 * g..)
                .and_then(|k| k.first_chunk())
            {
                Some(k) => k,
                None => &[[0; 2]; 4],
            };
            // SAFETY: `keys` is 64 readable bytes, laid out lane by lane (low
            // half first) as the register wants them.
            unsafe { _mm512_loadu_si512(keys.as_ptr().cast()) }
        };
        let mut m = fold(acc, distance(0), _mm512_setzero_si512());
        for (g, &next) in tail[..groups].iter().enumerate() {
            m = fold(next, distance(g + 1), m);
        }
        let y = _mm256_xor_si256(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64::<1>(m));
        let x = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256::<1>(y));
        (barrett(x, true), pos)
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn keys(k: [i64; 2]) -> __m128i {
        _mm_set_epi64x(k[1], k[0])
    }

    /// `acc * x^d + next`, folded with the keys for distance `d`.
    #[target_feature(enable = "pclmulqdq,sse2")]
    #[inline]
    fn fold_into(acc: __m128i, next: __m128i, k: __m128i) -> __m128i {
        let lo = _mm_clmulepi64_si128(acc, k, 0x00);
        let hi = _mm_clmulepi64_si128(acc, k, 0x11);
        _mm_xor_si128(_mm_xor_si128(lo, hi), next)
    }

    /// `(v * x^16) mod P` for a 128-bit `v` (only its low half when `!wide`).
    #[target_feature(enable = "pclmulqdq,sse2")]
    #[inline]
    fn barrett(v: __m128i, wide: bool) -> u16 {
        {
            let consts = _mm_set_epi64x(BARRETT_MU as i64, X80 as i64);
            // v*x^16 = hi*x^80 + lo*x^16, and hi*x^80 = hi*(x^80 mod P) =: b,
            // of degree below 79. What is left to reduce is A = b ^ lo*x^16.
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
            // q = floor(A / P) = floor(floor(A / x^16) * mu / x^64), exact
            // in GF(2) for deg A < 80; mu = x^64 + BARRETT_MU.
            let t = _mm_clmulepi64_si128(quot_in, consts, 0x10);
            let q = _mm_xor_si128(_mm_srli_si128(t, 8), quot_in);
            // A mod P = low 16 bits of A ^ q*P (q*x^16 has none there).
            let qp = _mm_clmulepi64_si128(q, _mm_set_epi64x(0, i64::from(POLY)), 0x00);
            low16 ^ _mm_cvtsi128_si32(qp) as u16
        }
    }

    /// Whole blocks of `bytes` (at least 16 of them); see
    /// [`Engine::update_blocks`]. From state 0 the first block is the
    /// `len % 16` leading bytes, zero-padded, so the rest is whole blocks.
    /// Callers must make sure the CPU has PCLMULQDQ, SSSE3 and SSE2.
    #[target_feature(enable = "pclmulqdq,ssse3,sse2")]
    fn fold(engine: Clmul, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        // Reversing the bytes of a 16-byte load puts the first message byte
        // in the top bits.
        let reverse = window(&REVERSED, 0);
        let needle = _mm_set1_epi8(stop.unwrap_or(0) as i8);
        let stopping = stop.is_some();
        let load = |at: usize| load16(bytes, at);
        let has_stop = |raw: &[__m128i]| stopping && any_equal(raw, needle);
        // The first `r` message bytes at `at`, zero-padded in front.
        let padded = |at: usize, r: usize| _mm_shuffle_epi8(load(at), window(&REVERSED, 16 - r));
        let n = bytes.len();
        // Checks may look past a partial block: stopping early is allowed.
        if has_stop(&[load(0)]) {
            return (crc, 0);
        }

        let (mut acc, mut pos) = if crc == 0 && n >= FOUR_LANES_MIN {
            // Pad the head to a whole 64-byte block, so four lanes run from
            // the first byte and no lone 16-byte folds trail them.
            let head = n % 64;
            let (partial, full) = (head % 16, head / 16);
            let mut lanes = [_mm_setzero_si128(); 4];
            let mut at = 0;
            let mut next = 4 - full - usize::from(partial > 0);
            if partial > 0 && next < 4 {
                lanes[next] = padded(0, partial);
                at = partial;
                next += 1;
            }
            while next < 4 && head > 0 {
                let raw = load(at);
                if has_stop(&[raw]) {
                    return (crc, 0);
                }
                lanes[next] = _mm_shuffle_epi8(raw, reverse);
                at += 16;
                next += 1;
            }
            if engine.zmm && n >= ZMM_MIN {
                let lanes = (head > 0).then_some(lanes);
                // SAFETY: `engine.zmm` is set only where `level` found the
                // AVX-512 features `fold_zmm` is compiled for.
                return unsafe { fold_zmm(lanes, bytes, head, stop) };
            }
            let mut pos = head;
            if head == 0 {
                let raw = [load(0), load(16), load(32), load(48)];
                if has_stop(&raw) {
                    return (crc, 0);
                }
                lanes = raw.map(|v| _mm_shuffle_epi8(v, reverse));
                pos = 64;
            }
            while n - pos >= 64 {
                let raw = [load(pos), load(pos + 16), load(pos + 32), load(pos + 48)];
                if has_stop(&raw) {
                    break;
                }
                for (lane, v) in lanes.iter_mut().zip(raw) {
                    *lane = fold_into(*lane, _mm_shuffle_epi8(v, reverse), keys(FOLD_512));
                }
                pos += 64;
            }
            // Merge as a tree: every lane moves to the end in one multiply.
            let a = fold_into(lanes[0], lanes[3], keys(FOLD_384));
            let b = fold_into(lanes[1], _mm_setzero_si128(), keys(FOLD_256));
            let c = fold_into(lanes[2], _mm_setzero_si128(), keys(FOLD_128));
            (_mm_xor_si128(a, _mm_xor_si128(b, c)), pos)
        } else {
            // From state 0, the `n % 16` leading bytes padded in front (so
            // the rest is whole blocks); otherwise 16 bytes with the state
            // xored over the first two (the state convention in `crc16`).
            let first = if crc == 0 && !n.is_multiple_of(16) {
                n % 16
            } else {
                16
            };
            let state = _mm_set_epi64x((u64::from(crc) << 48) as i64, 0);
            (_mm_xor_si128(padded(0, first), state), first)
        };
        while n - pos >= 16 {
            let raw = load(pos);
            if has_stop(&[raw]) {
                break;
            }
            acc = fold_into(acc, _mm_shuffle_epi8(raw, reverse), keys(FOLD_128));
            pos += 16;
        }
        (barrett(acc, true), pos)
    }
}

#[cfg(target_arch = "aarch64")]
mod imp {
    //! PMULL (the `aes` target feature): one 128-bit lane, folded 16 bytes a
    //! step; short keys are one block, reduced by Barrett. The same algebra
    //! as the x86_64 engine, with 64-bit operands.
    #![allow(unsafe_code)]

    use core::arch::aarch64::{
        uint64x2_t, uint8x16_t, vceqq_u8, vcombine_u64, vcreate_u64, vdupq_n_u8, veorq_u64,
        vextq_u8, vgetq_lane_u64, vld1q_u8, vmaxvq_u8, vmull_high_p64, vmull_p64,
        vreinterpretq_p64_u64, vreinterpretq_u64_p128, vreinterpretq_u64_u8, vrev64q_u8,
    };

    use super::consts::{BARRETT_MU, FOLD_128, X80};
    use crate::crc16::{short_key_crc_in_block, update_with, Engine, POLY};
    use crate::placement::long_key_crc;

    /// Whether this CPU has PMULL: asked once (with `std`) or fixed by the
    /// target features (without).
    #[cfg(feature = "std")]
    fn has_pmull() -> bool {
        std::arch::is_aarch64_feature_detected!("pmull")
    }

    #[cfg(not(feature = "std"))]
    fn has_pmull() -> bool {
        cfg!(target_feature = "aes")
    }

    pub(super) fn available() -> bool {
        has_pmull()
    }

    pub(super) fn engine() -> &'static str {
        if has_pmull() {
            "pmull (128-bit)"
        } else {
            super::PORTABLE
        }
    }

    /// Proof that this CPU has PMULL: only [`Clmul::detect`] makes one.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Clmul(());

    impl Clmul {
        #[inline]
        pub(crate) fn detect() -> Option<Self> {
            has_pmull().then_some(Self(()))
        }

        /// There is no wider path here; the tests ask for it on every CPU.
        #[cfg(test)]
        pub(crate) fn without_zmm(self) -> Self {
            self
        }
    }

    impl Engine for Clmul {
        /// One block, as with the tables.
        const SHORT_KEY: usize = 16;

        #[inline(always)]
        fn crc_of_block(self, block: u128, wide: bool) -> u16 {
            // SAFETY: a `Clmul` exists only where the CPU has PMULL.
            unsafe { barrett(block, wide) }
        }

        #[inline(always)]
        fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
            // SAFETY: as above.
            unsafe { fold(crc, bytes, stop) }
        }

        #[inline(always)]
        fn short_key_crc(self, key: &[u8]) -> u16 {
            short_key_crc_in_block(self, key)
        }

        #[inline(always)]
        fn long_key_crc(self, key: &[u8]) -> u16 {
            // SAFETY: as above.
            unsafe { long_key_crc_pmull(self, key) }
        }
    }

    /// The engine-generic code compiled whole with PMULL, so every step
    /// inlines (the same roots as on x86_64).
    #[target_feature(enable = "neon,aes")]
    fn update_pmull(engine: Clmul, crc: u16, bytes: &[u8]) -> u16 {
        update_with(engine, crc, bytes)
    }

    #[target_feature(enable = "neon,aes")]
    fn short_slot_pmull(engine: Clmul, key: &[u8]) -> u16 {
        short_key_crc_in_block(engine, key) & (crate::SLOT_COUNT - 1)
    }

    #[target_feature(enable = "neon,aes")]
    #[inline(never)]
    fn long_key_crc_pmull(engine: Clmul, key: &[u8]) -> u16 {
        long_key_crc(engine, key)
    }

    #[inline]
    pub(super) fn update(crc: u16, bytes: &[u8]) -> Option<u16> {
        let engine = Clmul::detect()?;
        // SAFETY: `engine` proves the CPU has PMULL.
        Some(unsafe { update_pmull(engine, crc, bytes) })
    }

    #[inline]
    pub(super) fn slot_for_key(key: &[u8]) -> Option<u16> {
        let engine = Clmul::detect()?;
        // SAFETY: `engine` proves the CPU has PMULL.
        Some(unsafe {
            if key.len() <= Clmul::SHORT_KEY {
                short_slot_pmull(engine, key)
            } else {
                long_key_crc_pmull(engine, key) & (crate::SLOT_COUNT - 1)
            }
        })
    }

    /// `a.lo * b.lo` and `a.hi * b.hi`, carry-less, xored.
    #[target_feature(enable = "neon,aes")]
    #[inline]
    fn mul_both(a: uint64x2_t, b: uint64x2_t) -> uint64x2_t {
        let lo = vmull_p64(vgetq_lane_u64::<0>(a), vgetq_lane_u64::<0>(b));
        let hi = vmull_high_p64(vreinterpretq_p64_u64(a), vreinterpretq_p64_u64(b));
        veorq_u64(vreinterpretq_u64_p128(lo), vreinterpretq_u64_p128(hi))
    }

    /// 16 message bytes as a block: the first byte on top.
    #[target_feature(enable = "neon")]
    #[inline]
    fn reversed(raw: uint8x16_t) -> uint64x2_t {
        let r = vrev64q_u8(raw);
        vreinterpretq_u64_u8(vextq_u8::<8>(r, r))
    }

    /// The 16 bytes at `at`, raw.
    #[target_feature(enable = "neon")]
    #[inline]
    fn load(bytes: &[u8], at: usize) -> Option<uint8x16_t> {
        let block: &[u8; 16] = bytes.get(at..)?.first_chunk()?;
        // SAFETY: `block` is 16 readable bytes; `ld1` has no alignment needs.
        Some(unsafe { vld1q_u8(block.as_ptr()) })
    }

    /// `(v * x^16) mod P` for a 128-bit `v` (only its low half when `!wide`):
    /// the x86_64 engine's Barrett reduction, step for step.
    #[target_feature(enable = "neon,aes")]
    #[inline]
    fn barrett(v: u128, wide: bool) -> u16 {
        let (lo, hi) = (v as u64, (v >> 64) as u64);
        let (quot_in, low16) = if wide {
            let b = vmull_p64(hi, X80);
            (((b >> 16) as u64) ^ lo, b as u16)
        } else {
            (lo, 0)
        };
        let q = (vmull_p64(quot_in, BARRETT_MU) >> 64) as u64 ^ quot_in;
        low16 ^ vmull_p64(q, u64::from(POLY)) as u16
    }

    /// Whole blocks of `bytes`; see [`Engine::update_blocks`]. From state 0
    /// the first block is the `len % 16` leading bytes, zero-padded.
    #[target_feature(enable = "neon,aes")]
    fn fold(crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        let needle = vdupq_n_u8(stop.unwrap_or(0));
        let has_stop = |raw: uint8x16_t| stop.is_some() && vmaxvq_u8(vceqq_u8(raw, needle)) != 0;
        let n = bytes.len();
        let Some(first_raw) = load(bytes, 0) else {
            return (crc, 0);
        };
        // Checks may look past a partial block: stopping early is allowed.
        if has_stop(first_raw) {
            return (crc, 0);
        }
        let first = if crc == 0 && !n.is_multiple_of(16) {
            n % 16
        } else {
            16
        };
        // The first `first` bytes as a number; a state (only ever with a
        // whole first block) goes over its top 16 bits.
        let head = u128::from_be_bytes(bytes[..16].try_into().unwrap_or([0; 16]))
            >> (8 * (16 - first))
            ^ u128::from(crc) << 112;
        let mut acc = vcombine_u64(vcreate_u64(head as u64), vcreate_u64((head >> 64) as u64));
        let keys = vcombine_u64(
            vcreate_u64(FOLD_128[0] as u64),
            vcreate_u64(FOLD_128[1] as u64),
        );
        let mut pos = first;
        while let Some(raw) = load(bytes, pos) {
            if has_stop(raw) {
                break;
            }
            acc = veorq_u64(mul_both(acc, keys), reversed(raw));
            pos += 16;
        }
        let acc = u128::from(vgetq_lane_u64::<0>(acc)) | u128::from(vgetq_lane_u64::<1>(acc)) << 64;
        (barrett(acc, true), pos)
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    pub(super) fn available() -> bool {
        false
    }

    pub(super) fn engine() -> &'static str {
        super::PORTABLE
    }

    pub(super) fn update(_: u16, _: &[u8]) -> Option<u16> {
        None
    }

    pub(super) fn slot_for_key(_: &[u8]) -> Option<u16> {
        None
    }

    #[cfg(test)]
    pub(crate) struct Clmul;

    #[cfg(test)]
    impl Clmul {
        pub(crate) fn detect() -> Option<crate::crc16::Portable> {
            None
        }
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::imp::Clmul;
    use crate::crc16::{crc16_bitwise, update_with, Engine, Portable};
    use crate::placement::long_key_crc;
    use crate::{hash_tag, SLOT_COUNT};

    /// Every engine this CPU can run: with and without the 512-bit path, so
    /// the 128-bit four-lane path is tested on CPUs that would skip it.
    fn engines() -> impl Iterator<Item = Clmul> {
        Clmul::detect()
            .into_iter()
            .flat_map(|c| [c, c.without_zmm()])
    }

    fn bytes(len: usize, seed: u32) -> impl Iterator<Item = u8> {
        (0..len as u32)
            .map(move |i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8 | 1)
    }

    /// `just test` builds these tests with `ZARIS_EXPECT_CLMUL` set where
    /// the engine must run (x86_64 CI machines, aarch64 under qemu), so the
    /// tests below cannot pass by finding no engine to test.
    #[test]
    fn the_expected_engine_runs() {
        if option_env!("ZARIS_EXPECT_CLMUL").is_some() {
            assert!(Clmul::detect().is_some(), "no carry-less multiply here");
        }
    }

    #[test]
    fn folding_matches_reference_at_every_length() {
        for engine in engines() {
            for len in 0..1100 {
                let data: heapless::Vec<u8, 1100> = bytes(len, 7).collect();
                for state in [0u16, 0xBEEF] {
                    let want = crate::crc16::update_portable(state, &data);
                    assert_eq!(
                        update_with(engine, state, &data),
                        want,
                        "len {len} state {state:#x}"
                    );
                }
                assert_eq!(update_with(engine, 0, &data), crc16_bitwise(&data));
            }
        }
    }

    #[test]
    fn stops_are_conservative_and_exact() {
        for engine in engines() {
            for len in [16usize, 63, 64, 100, 127, 128, 129, 255, 256, 300, 700] {
                for at in (0..len).step_by(5) {
                    let mut data: heapless::Vec<u8, 700> = bytes(len, 3).map(|b| b & !1).collect();
                    data[at] = 1;
                    let (crc, done) = engine.update_blocks(0, &data, Some(1));
                    assert!(
                        done <= at,
                        "len {len}: consumed {done} past the stop at {at}"
                    );
                    assert_eq!(crc, crc16_bitwise(&data[..done]), "len {len} at {at}");
                }
            }
        }
    }

    #[test]
    fn short_and_long_key_paths_agree_with_the_portable_engine() {
        // Braces at every position pair of keys up to 72 bytes (past the
        // 64-byte register path), all engines.
        for len in 0..=72usize {
            let base: heapless::Vec<u8, 72> = bytes(len, 11).map(|b| b'a' + b % 26).collect();
            for open in 0..=len {
                for close in 0..=len {
                    let mut key = base.clone();
                    if let Some(b) = key.get_mut(open) {
                        *b = b'{';
                    }
                    if let Some(b) = key.get_mut(close) {
                        *b = b'}';
                    }
                    let want = crc16_bitwise(hash_tag(&key)) % SLOT_COUNT;
                    let slot = |crc: u16| crc % SLOT_COUNT;
                    if len <= Portable::SHORT_KEY {
                        assert_eq!(slot(Portable.short_key_crc(&key)), want);
                    }
                    assert_eq!(slot(long_key_crc(Portable, &key)), want);
                    for engine in engines() {
                        if len <= Clmul::SHORT_KEY {
                            assert_eq!(
                                slot(engine.short_key_crc(&key)),
                                want,
                                "{:?}",
                                key.escape_ascii()
                            );
                        }
                        assert_eq!(
                            slot(long_key_crc(engine, &key)),
                            want,
                            "{:?}",
                            key.escape_ascii()
                        );
                    }
                }
            }
        }
    }
}
