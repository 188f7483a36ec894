//! The key algorithms, written once over [`Engine`]: how a CRC continues
//! over any bytes, and how a key's hashed part is found and hashed in one
//! pass. Each engine (tables, carry-less multiplies of some width) supplies
//! only block steps, and may override the key-level entry points with
//! versions that keep short keys in vector registers.

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

    /// Where `needle` first occurs in `hay`: a word at a time, or a vector.
    #[inline(always)]
    fn find_byte(self, hay: &[u8], needle: u8) -> Option<usize> {
        find_byte(hay, needle)
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

/// The CRC of the hashed part of a key of at most 16 bytes, held as one
/// zero-padded block: the tag is cut out of the block by shifts, so no
/// byte is read twice.
#[inline(always)]
pub(crate) fn short_key_crc_in_block<E: Engine>(e: E, key: &[u8]) -> u16 {
    let block = load_padded(key);
    match tag::tag_in_block(block) {
        Some((tag, len)) => e.crc_of_block(tag, len > 8),
        None => e.crc_of_block(block, key.len() > 8),
    }
}

/// The CRC of the hashed part of a key longer than one block. Blocks are
/// hashed until one may hold a `{` (most keys hold none: one pass, done).
/// Otherwise the tag is found with the engine's byte search, and exactly
/// the bytes that count are hashed once more, with no search riding along:
/// the tag, or the rest of the key after what was already hashed.
#[inline(always)]
pub(crate) fn long_key_crc<E: Engine>(e: E, key: &[u8]) -> u16 {
    let (crc, hashed) = e.update_blocks(0, key, Some(b'{'));
    let rest = key.get(hashed..).unwrap_or_default();
    if rest.is_empty() {
        return crc;
    }
    let Some(open) = e.find_byte(rest, b'{') else {
        return update_with(e, crc, rest);
    };
    let after = rest.get(open + 1..).unwrap_or_default();
    match e.find_byte(after, b'}') {
        Some(close) if close > 0 => e.crc_of_bytes(after.get(..close).unwrap_or_default()),
        // No tag (no `}`, or `{}`): the whole key counts.
        _ => update_with(e, crc, rest),
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
