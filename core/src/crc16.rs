//! CRC-16/XMODEM, the checksum behind Redis Cluster's hash slots.
//!
//! Polynomial 0x1021, initial value 0, no reflection, no final xor
//! (catalogue check value `crc16(b"123456789") == 0x31C3`).
//!
//! Three implementations share one state convention, so any of them can pick
//! up where another stopped:
//! - [`crc16_bitwise`]: the reference, one bit at a time;
//! - the portable path: slicing-by-16 over `static` tables built by `const fn`
//!   (on wasm, each 16-byte step in two halves over 8 tables, for size);
//! - the carry-less-multiply path in [`crate::simd`], for long inputs on CPUs
//!   that have it.
//!
//! The state after a message `M` is `M(x) * x^16 mod P(x)`. Feeding more
//! bytes from a state `s` gives `s * x^(8n) + D(x) * x^16 mod P(x)`, which is
//! what lets the SIMD path hand a folded 128-bit remainder back to the tables.

/// The generator polynomial, without its x^16 term.
pub(crate) const POLY: u16 = 0x1021;

/// How many bytes the widest table step consumes at once.
const SLICE: usize = 16;

/// `TABLES[k][b]` is the CRC of byte `b` followed by `k` zero bytes, so one
/// slicing step over 16 bytes is 16 independent look-ups xored together.
static TABLES: [[u16; 256]; TABLE_COUNT] = build_tables();

/// How many tables there are: 16 (8 KiB) natively. A wasm module is
/// downloaded, its tables barely compress, and it has no carry-less multiply
/// to spare them, so there 8 tables (4 KiB) take a 16-byte step in two
/// halves: 4.7 KB less gzipped, 10% slower at hashing 100,000 keys in
/// Chromium.
const TABLE_COUNT: usize = if cfg!(target_arch = "wasm32") {
    8
} else {
    SLICE
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

/// `x^n mod P(x)`, for folding constants and zero-byte shifts.
pub(crate) const fn x_pow_mod(n: u32) -> u16 {
    // Start from x^0 = 1 and multiply by x n times, reducing as we go.
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & 0x1_0000 != 0 {
            r ^= 0x1_0000 | POLY as u32;
        }
        i += 1;
    }
    r as u16
}

/// CRC-16/XMODEM of `bytes`, one shot.
///
/// ```
/// assert_eq!(zaris_core::crc16(b"123456789"), 0x31C3);
/// ```
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    update(0, bytes)
}

/// Streaming CRC-16/XMODEM: feeding a message in any split gives the same
/// value as [`crc16`] over the whole.
///
/// ```
/// use zaris_core::{crc16, Crc16};
/// let mut c = Crc16::new();
/// c.update(b"1234");
/// c.update(b"56789");
/// assert_eq!(c.finish(), crc16(b"123456789"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crc16 {
    state: u16,
}

impl Crc16 {
    /// A fresh checksum (initial value 0).
    #[must_use]
    pub const fn new() -> Self {
        Self { state: 0 }
    }

    /// Feeds more bytes.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.state = update(self.state, bytes);
    }

    /// The checksum of everything fed so far. The state is kept, so more
    /// bytes may follow.
    #[must_use]
    pub const fn finish(&self) -> u16 {
        self.state
    }
}

/// A way of computing CRC steps: the portable tables, or the
/// carry-less-multiply token of [`crate::simd`]. Placement is written once,
/// generic over the engine, and each public entry point picks the engine
/// once per call, so the whole computation inlines into one function.
pub(crate) trait Engine: Copy {
    /// Keys up to this long take [`Engine::short_key_crc`].
    const SHORT_KEY: usize;

    /// CRC from state 0 of a zero-padded block of at most 16 bytes; `wide`
    /// when bytes beyond the low eight may be set.
    fn crc_of_block(self, block: u128, wide: bool) -> u16;

    /// Continues `crc` over a prefix of `bytes` made of whole blocks that do
    /// not contain `stop`, returning the state and the prefix length. It may
    /// stop early (a block that may hold `stop`, or a tail shorter than a
    /// block); the caller finishes with [`update_with`].
    fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize);

    /// The CRC from state 0 of `bytes`, braces or not (a hash tag's bytes).
    fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
        update_with(self, 0, bytes)
    }

    /// The CRC of the hashed part of a key of at most `SHORT_KEY` bytes.
    fn short_key_crc(self, key: &[u8]) -> u16;

    /// The CRC of the hashed part of a longer key.
    fn long_key_crc(self, key: &[u8]) -> u16;
}

/// The top bit of each byte of `block` that equals `byte` (exact: no carry
/// crosses a byte, unlike the cheaper "has zero byte" trick).
#[inline(always)]
const fn bytes_equal(block: u128, byte: u8) -> u128 {
    const LOW7: u128 = u128::from_ne_bytes([0x7F; 16]);
    let x = block ^ u128::from_ne_bytes([byte; 16]);
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// The tables, on any CPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Engine for Portable {
    /// One 128-bit register.
    const SHORT_KEY: usize = 16;

    // Plain `inline` for the portable engine: size-optimised builds (wasm)
    // keep one copy of the table walk instead of one per caller.
    #[inline]
    fn crc_of_block(self, block: u128, wide: bool) -> u16 {
        if wide {
            step16(0, &block.to_be_bytes())
        } else {
            update_short(0, &(block as u64).to_be_bytes())
        }
    }

    #[inline]
    fn update_blocks(self, mut crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        let (blocks, _) = bytes.as_chunks::<SLICE>();
        let mut done = 0;
        for block in blocks {
            if stop.is_some_and(|b| contains_byte(block, b)) {
                break;
            }
            crc = step16(crc, block);
            done += SLICE;
        }
        (crc, done)
    }

    #[inline(always)]
    fn short_key_crc(self, key: &[u8]) -> u16 {
        short_key_crc_in_block(self, key)
    }

    #[inline(never)]
    fn long_key_crc(self, key: &[u8]) -> u16 {
        crate::placement::long_key_crc(self, key)
    }
}

/// The CRC of the hashed part of a key of at most 16 bytes, held as one
/// zero-padded 128-bit block, with engine `e` hashing the block.
#[inline(always)]
pub(crate) fn short_key_crc_in_block<E: Engine>(e: E, key: &[u8]) -> u16 {
    let block = load_padded(key);
    match tag_bounds(block) {
        // Positions count from the top byte of the block.
        Some((open, close)) if close > open + 1 => {
            // Slide the tag down to the bottom and clear what was before it.
            let len = close - open - 1;
            let tag = (block >> (8 * (16 - close))) & ((1u128 << (8 * len)) - 1);
            e.crc_of_block(tag, len > 8)
        }
        _ => e.crc_of_block(block, key.len() > 8),
    }
}

/// In a zero-padded block of at most 16 bytes, the positions (counted from
/// the top byte) of the first `{` and of the first `}` after it.
#[inline(always)]
fn tag_bounds(block: u128) -> Option<(u32, u32)> {
    // Padding bytes are zero and never match a brace.
    let opens = bytes_equal(block, b'{');
    if opens == 0 {
        return None;
    }
    let open = opens.leading_zeros() / 8;
    let after_open = (1u128 << (120 - 8 * open)) - 1;
    let closes = bytes_equal(block, b'}') & after_open;
    (closes != 0).then(|| (open, closes.leading_zeros() / 8))
}

/// Continues a CRC from `crc` over `bytes` with engine `e`.
// Forced only where a SIMD engine must inline into its feature-enabled
// caller; elsewhere size-optimised builds keep one copy.
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), inline(always))]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), inline)]
pub(crate) fn update_with<E: Engine>(e: E, crc: u16, bytes: &[u8]) -> u16 {
    let (crc, done) = if bytes.len() > SLICE {
        e.update_blocks(crc, bytes, None)
    } else {
        (crc, 0)
    };
    let rest = &bytes[done..];
    if rest.len() <= SLICE {
        update_upto16(e, crc, rest)
    } else {
        // Only an engine that made no progress gets here; finish in 16s.
        let (blocks, tail) = rest.as_chunks::<SLICE>();
        let crc = blocks.iter().fold(crc, step16);
        update_upto16(e, crc, tail)
    }
}

/// Continues a CRC from `crc` over `bytes`, with the fastest engine here.
#[inline]
pub(crate) fn update(crc: u16, bytes: &[u8]) -> u16 {
    match crate::simd::update(crc, bytes) {
        Some(crc) => crc,
        None => update_with(Portable, crc, bytes),
    }
}

/// At most 16 bytes as one big-endian number, zero-padded in front: the
/// CRC from state 0 of the padded block equals the CRC of the bytes, since
/// leading zeros leave a zero state untouched.
#[inline(always)]
pub(crate) fn load_padded(bytes: &[u8]) -> u128 {
    // Two overlapping loads cover any length; shared bytes land in the
    // same place in both, so or-ing them is exact.
    match *bytes {
        [] => 0,
        [a, ..] if bytes.len() < 4 => {
            let n = bytes.len();
            let (mid, last) = (bytes[n / 2], bytes[n - 1]);
            u128::from(
                u32::from(a) << (8 * (n - 1))
                    | u32::from(mid) << (8 * (n - 1 - n / 2))
                    | u32::from(last),
            )
        }
        _ if bytes.len() < 8 => {
            let n = bytes.len();
            let head = read_be::<4>(bytes, 0);
            let tail = read_be::<4>(bytes, n - 4);
            u128::from(head << (8 * (n - 4)) | tail)
        }
        _ => {
            let n = bytes.len();
            let head = u128::from(read_be::<8>(bytes, 0));
            let tail = u128::from(read_be::<8>(bytes, n - 8));
            head << (8 * (n - 8)) | tail
        }
    }
}

/// `N` bytes at `at` as a big-endian number (N is 4 or 8; callers check the
/// length, and a short slice reads as zero rather than panicking).
#[inline(always)]
fn read_be<const N: usize>(bytes: &[u8], at: usize) -> u64 {
    let Some(b) = bytes.get(at..at + N) else {
        return 0;
    };
    match N {
        4 => b.try_into().map_or(0, |w| u64::from(u32::from_be_bytes(w))),
        _ => b.try_into().map_or(0, u64::from_be_bytes),
    }
}

/// Continues `crc` over at most 16 bytes in one step: the state enters as an
/// xor over the first two bytes (see the state convention above).
// Forced only where a SIMD engine must inline into its feature-enabled
// caller; elsewhere size-optimised builds keep one copy.
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), inline(always))]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), inline)]
pub(crate) fn update_upto16<E: Engine>(e: E, crc: u16, bytes: &[u8]) -> u16 {
    let n = bytes.len();
    if n < 2 {
        return update_short(crc, bytes);
    }
    let block = load_padded(bytes) ^ u128::from(crc) << (8 * n - 16);
    e.crc_of_block(block, n > 8)
}

/// `crc * x^(8 * len) mod P`: the state `crc` carried over `len` zero bytes.
/// With `crc(s, D) = shift(s, |D|) ^ crc(0, D)`, two CRCs computed apart are
/// joined without reading the bytes again.
pub(crate) fn shift(crc: u16, len: usize) -> u16 {
    let mut acc = crc;
    let mut len = len;
    let mut k = 0;
    while len != 0 && acc != 0 {
        if len & 1 == 1 {
            acc = mul_mod(acc, ZERO_BYTES_POW2[k]);
        }
        len >>= 1;
        k += 1;
    }
    acc
}

/// `ZERO_BYTES_POW2[k] = x^(8 * 2^k) mod P`.
static ZERO_BYTES_POW2: [u16; usize::BITS as usize] = {
    let mut t = [0u16; usize::BITS as usize];
    t[0] = x_pow_mod(8);
    let mut k = 1;
    while k < t.len() {
        t[k] = mul_mod(t[k - 1], t[k - 1]);
        k += 1;
    }
    t
};

/// `a * b mod P` for two remainders.
const fn mul_mod(a: u16, b: u16) -> u16 {
    let mut acc: u16 = 0;
    let mut bit = 16;
    while bit > 0 {
        bit -= 1;
        acc = if acc & 0x8000 != 0 {
            (acc << 1) ^ POLY
        } else {
            acc << 1
        };
        if b >> bit & 1 == 1 {
            acc ^= a;
        }
    }
    acc
}

/// The portable path: slicing-by-16, then by-8, then one byte at a time.
#[inline]
pub(crate) fn update_portable(mut crc: u16, bytes: &[u8]) -> u16 {
    let (blocks, rest) = bytes.as_chunks::<SLICE>();
    for block in blocks {
        crc = step16(crc, block);
    }
    update_short(crc, rest)
}

/// CRC over fewer than 16 bytes (more is fine, just not the fast way).
#[inline]
pub(crate) fn update_short(mut crc: u16, bytes: &[u8]) -> u16 {
    let (blocks, rest) = bytes.as_chunks::<8>();
    for b in blocks {
        crc = step8(crc, b);
    }
    for &b in rest {
        crc = (crc << 8) ^ TABLES[0][usize::from((crc >> 8) as u8 ^ b)];
    }
    crc
}

/// One slicing-by-8 step: 8 independent look-ups.
#[inline(always)]
fn step8(crc: u16, b: &[u8; 8]) -> u16 {
    let t = &TABLES;
    t[7][usize::from((crc >> 8) as u8 ^ b[0])]
        ^ t[6][usize::from(crc as u8 ^ b[1])]
        ^ t[5][usize::from(b[2])]
        ^ t[4][usize::from(b[3])]
        ^ t[3][usize::from(b[4])]
        ^ t[2][usize::from(b[5])]
        ^ t[1][usize::from(b[6])]
        ^ t[0][usize::from(b[7])]
}

/// A 16-byte step with only 8 tables (see [`TABLE_COUNT`]); natively it is
/// compiled for the tests, which hold it to the 16-table step.
#[cfg(any(test, target_arch = "wasm32"))]
#[inline(always)]
fn step16_in_halves(crc: u16, b: &[u8; SLICE]) -> u16 {
    let (halves, _) = b.as_chunks::<8>();
    halves.iter().fold(crc, step8)
}

#[cfg(target_arch = "wasm32")]
use step16_in_halves as step16;

/// One slicing-by-16 step: 16 independent look-ups.
#[cfg(not(target_arch = "wasm32"))]
#[inline(always)]
fn step16(crc: u16, b: &[u8; SLICE]) -> u16 {
    let t = &TABLES;
    t[15][usize::from((crc >> 8) as u8 ^ b[0])]
        ^ t[14][usize::from(crc as u8 ^ b[1])]
        ^ t[13][usize::from(b[2])]
        ^ t[12][usize::from(b[3])]
        ^ t[11][usize::from(b[4])]
        ^ t[10][usize::from(b[5])]
        ^ t[9][usize::from(b[6])]
        ^ t[8][usize::from(b[7])]
        ^ t[7][usize::from(b[8])]
        ^ t[6][usize::from(b[9])]
        ^ t[5][usize::from(b[10])]
        ^ t[4][usize::from(b[11])]
        ^ t[3][usize::from(b[12])]
        ^ t[2][usize::from(b[13])]
        ^ t[1][usize::from(b[14])]
        ^ t[0][usize::from(b[15])]
}

/// Whether a 16-byte block holds `needle`, eight bytes at a time (SWAR).
#[inline(always)]
fn contains_byte(block: &[u8; SLICE], needle: u8) -> bool {
    let (words, _) = block.as_chunks::<8>();
    words
        .iter()
        .any(|w| word_has_byte(u64::from_le_bytes(*w), needle))
}

/// The classic "has zero byte" bit trick on `word ^ needle-splat`: exact, no
/// false positives.
#[inline(always)]
pub(crate) const fn word_has_byte(word: u64, needle: u8) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = word ^ (LOW * needle as u64);
    (x.wrapping_sub(LOW) & !x & HIGH) != 0
}

/// The reference: one bit at a time, straight from the definition. Every
/// fast path is tested against it.
#[must_use]
pub fn crc16_bitwise(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Entry points that benches and fuzzers call directly; not a stable API.
#[doc(hidden)]
pub mod _benchable {
    /// The portable slicing-by-16 path alone.
    pub fn crc16_portable(bytes: &[u8]) -> u16 {
        super::update_with(super::Portable, 0, bytes)
    }

    /// The plain slicing-by-16 walk, without the one-step short blocks.
    pub fn crc16_slicing16(bytes: &[u8]) -> u16 {
        super::update_portable(0, bytes)
    }

    /// The carry-less-multiply path alone, or `None` where the CPU lacks it.
    pub fn crc16_simd(bytes: &[u8]) -> Option<u16> {
        crate::simd::update(0, bytes)
    }

    /// Whether this CPU takes the carry-less-multiply path.
    pub fn simd_available() -> bool {
        crate::simd::available()
    }

    /// The CRC engine this CPU runs, in words.
    pub fn engine() -> &'static str {
        crate::simd::engine()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16_bitwise(b"123456789"), 0x31C3);
        assert_eq!(update_portable(0, b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn every_single_byte_matches_reference() {
        for b in 0..=255u8 {
            assert_eq!(crc16(&[b]), crc16_bitwise(&[b]), "byte {b:#04x}");
            assert_eq!(TABLES[0][usize::from(b)], crc16_bitwise(&[b]));
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
            let block = (u128::from(x) << 64 | u128::from(x.rotate_left(29))).to_le_bytes();
            let crc = (x >> 48) as u16;
            assert_eq!(step16_in_halves(crc, &block), step16(crc, &block));
        }
    }

    #[test]
    fn slicing_tables_are_byte_then_zeros() {
        for k in 0..TABLE_COUNT {
            for b in [0u8, 1, 0x5a, 0x80, 0xff] {
                let mut msg = [0u8; SLICE];
                msg[0] = b;
                assert_eq!(TABLES[k][usize::from(b)], crc16_bitwise(&msg[..=k]));
            }
        }
    }

    #[test]
    fn x_pow_mod_agrees_with_crc_of_a_one_bit() {
        // The CRC of a single 0x80 byte followed by k zero bytes is
        // x^7 * x^(8k) * x^16 mod P.
        for k in 0..8u32 {
            let mut msg = [0u8; 8];
            msg[0] = 0x80;
            assert_eq!(
                x_pow_mod(7 + 8 * k + 16),
                crc16_bitwise(&msg[..=k as usize])
            );
        }
    }

    #[test]
    fn padded_blocks_and_shifts() {
        let msg: [u8; 16] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xA5);
        for n in 0..=16 {
            let block = load_padded(&msg[..n]);
            assert_eq!(
                block,
                msg[..n].iter().fold(0u128, |a, &b| a << 8 | u128::from(b)),
                "n {n}"
            );
            assert_eq!(Portable.crc_of_block(block, true), crc16_bitwise(&msg[..n]));
            assert_eq!(
                Portable.crc_of_block(block, n > 8),
                crc16_bitwise(&msg[..n]),
                "n {n}"
            );
            if let Some(crc) = crate::simd::crc_of_block(block, n > 8) {
                assert_eq!(crc, crc16_bitwise(&msg[..n]), "n {n}");
            }
            for state in [0u16, 1, 0x8000, 0xFFFF, 0x1234] {
                // The table walk from the same state is the reference.
                assert_eq!(
                    update_upto16(Portable, state, &msg[..n]),
                    update_portable(state, &msg[..n])
                );
                assert_eq!(update(state, &msg[..n]), update_portable(state, &msg[..n]));
                assert_eq!(shift(state, n), update_portable(state, &[0u8; 16][..n]));
                assert_eq!(
                    shift(state, n) ^ crc16_bitwise(&msg[..n]),
                    update_portable(state, &msg[..n])
                );
            }
        }
        assert_eq!(
            shift(0x1234, 100_000),
            update_portable(0x1234, &[0u8; 100_000])
        );
    }

    #[test]
    fn word_has_byte_is_exact() {
        for needle in [0u8, b'{', b'}', 0x7f, 0x80, 0xff] {
            for b in 0..=255u8 {
                let mut w = [b'a'; 8];
                w[5] = b;
                let expect = w.contains(&needle);
                assert_eq!(word_has_byte(u64::from_le_bytes(w), needle), expect);
            }
        }
    }
}
