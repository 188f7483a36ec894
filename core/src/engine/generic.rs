//! The key algorithms, written once over [`Engine`]: how a CRC continues
//! over any bytes, and how a key's hashed part is found and hashed in one
//! pass. Each engine (tables, carry-less multiplies of some width) supplies
//! only block steps, and may override the key-level entry points with
//! versions that keep short keys in vector registers.

use super::gf2::shift;
use super::swar::{find_byte, load_padded};
use super::tag;

/// A way of computing CRC steps. Each public entry point picks an engine
/// once per call and runs it in a function compiled for that engine's CPU
/// features, so the whole computation inlines into it.
pub(crate) trait Engine: Copy {
    /// Keys up to this long take [`Engine::short_key_crc`].
    const SHORT_KEY: usize;

    /// The CRC from state 0 of a zero-padded block of at most 16 bytes;
    /// `wide` when bytes beyond the low eight may be set.
    fn crc_of_block(self, block: u128, wide: bool) -> u16;

    /// Continues `crc` over a prefix of `bytes` made of whole blocks that do
    /// not hold `stop`, returning the state and the prefix's length. It may
    /// stop early (a block that may hold `stop`, or a tail shorter than its
    /// block); the caller finishes with [`update_with`].
    fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize);

    /// The CRC from state 0 of `bytes`, braces or not (a hash tag's bytes).
    #[inline(always)]
    fn crc_of_bytes(self, bytes: &[u8]) -> u16 {
        update_with(self, 0, bytes)
    }

    /// The CRC of the hashed part of a key of at most `SHORT_KEY` bytes.
    #[inline(always)]
    fn short_key_crc(self, key: &[u8]) -> u16 {
        short_key_crc_in_block(self, key)
    }

    /// The CRC of the hashed part of a longer key.
    #[inline(always)]
    fn long_key_crc(self, key: &[u8]) -> u16 {
        long_key_crc(self, key)
    }
}

/// How many bytes a block step takes: one 128-bit register.
pub(crate) const BLOCK: usize = 16;

/// The CRC of the hashed part of `key`, on engine `e`.
#[inline(always)]
pub(crate) fn key_crc<E: Engine>(e: E, key: &[u8]) -> u16 {
    if key.len() <= E::SHORT_KEY {
        e.short_key_crc(key)
    } else {
        e.long_key_crc(key)
    }
}

/// The CRC of the hashed part of a key of at most 16 bytes, held as one
/// zero-padded block: the tag is cut out of the block by shifts, so no
/// byte is read twice.
#[inline(always)]
pub(crate) fn short_key_crc_in_block<E: Engine>(e: E, key: &[u8]) -> u16 {
    let block = load_padded(key);
    match tag::span_in_block(block) {
        // Positions count from the top byte of the block.
        Some((open, close)) => {
            // Slide the tag down to the bottom and clear what was before it.
            let len = close - open - 1;
            let tag = (block >> (8 * (16 - close))) & ((1u128 << (8 * len)) - 1);
            e.crc_of_block(tag, len > 8)
        }
        None => e.crc_of_block(block, key.len() > 8),
    }
}

/// Tags up to this long (after a `{` found in a long key) are found by a
/// direct scan before any hashing; longer ones by the single-pass path.
const SHORT_TAG: usize = 32;

/// Below this many bytes after an unclosed `{`, hashing them again (a few
/// ns on a folding engine) costs less than joining two CRCs with
/// [`shift`] (a chain of bitwise multiplies, about 80 ns at 64 bytes).
const REHASH_MAX: usize = 1024;

/// The CRC of the hashed part of a key longer than one block, in one pass:
/// blocks are hashed until one may hold a `{`; a short tag after it is
/// found by a direct scan; a long one is hashed from a fresh state while
/// the search for its `}` rides along.
#[inline(always)]
pub(crate) fn long_key_crc<E: Engine>(e: E, key: &[u8]) -> u16 {
    let (crc, hashed) = e.update_blocks(0, key, Some(b'{'));
    let rest = &key[hashed..];
    let Some(open) = find_byte(rest, b'{') else {
        return update_with(e, crc, rest);
    };
    let after = &rest[open + 1..];
    // The usual shape, a short tag (`{user1000}`), is found by a direct scan
    // and hashed at once.
    match find_byte(&after[..after.len().min(SHORT_TAG)], b'}') {
        Some(0) => return update_with(e, crc, rest),
        Some(close) => return e.crc_of_bytes(&after[..close]),
        None => {}
    }
    let through_open = update_with(e, crc, &rest[..=open]);
    // Hash what follows the '{' from a fresh state, betting on a tag.
    let (tag_crc, hashed) = e.update_blocks(0, after, Some(b'}'));
    let tail = &after[hashed..];
    match find_byte(tail, b'}') {
        Some(close) if hashed + close > 0 => update_with(e, tag_crc, &tail[..close]),
        // `{}`: the whole key counts, and nothing after the '{' was hashed.
        Some(_) => update_with(e, through_open, after),
        // No tag after all. Up to REHASH_MAX bytes, hashing them again from
        // the state through the '{' is cheaper than joining the halves.
        None if hashed <= REHASH_MAX => update_with(e, through_open, after),
        // Beyond, join the two halves without reading them again, since
        // crc(s, D) = shift(s, |D|) ^ crc(0, D).
        None => update_with(e, shift(through_open, hashed) ^ tag_crc, tail),
    }
}

/// Continues a CRC from `crc` over `bytes` with engine `e`.
#[inline(always)]
pub(crate) fn update_with<E: Engine>(e: E, crc: u16, bytes: &[u8]) -> u16 {
    let (crc, done) = if bytes.len() > BLOCK {
        e.update_blocks(crc, bytes, None)
    } else {
        (crc, 0)
    };
    let rest = bytes.get(done..).unwrap_or_default();
    if rest.len() <= BLOCK {
        return update_upto16(e, crc, rest);
    }
    // Only an engine that made no progress gets here; finish a block a step.
    rest.chunks(BLOCK)
        .fold(crc, |crc, chunk| update_upto16(e, crc, chunk))
}

/// Continues `crc` over at most 16 bytes in one step. The state enters as
/// an xor over the first two bytes: `s * x^(8n) = s * x^16 * x^(8(n-2))`,
/// the CRC of `s` placed at those bytes.
#[inline(always)]
pub(crate) fn update_upto16<E: Engine>(e: E, crc: u16, bytes: &[u8]) -> u16 {
    match *bytes {
        [] => crc,
        // One byte: `s * x^8 + b * x^16 = (s_hi ^ b) * x^16 + s_lo * x^8`;
        // the second term has degree below 16 and needs no reduction.
        [b] => (crc << 8) ^ e.crc_of_block(u128::from((crc >> 8) as u8 ^ b), false),
        _ => {
            let n = bytes.len();
            let block = load_padded(bytes) ^ u128::from(crc) << (8 * n - 16);
            e.crc_of_block(block, n > 8)
        }
    }
}
