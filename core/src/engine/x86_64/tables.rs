//! The portable tables on x86_64: the same slicing-by-16 walk
//! (`engine/portable.rs`), with a key's braces found by the SSE2 baseline
//! (`sse2.rs`): both at once, up to 64 bytes, by compares and move-masks.
//! `engine/mod.rs` runs the tables through this on x86_64.

use super::super::generic::{Engine, BLOCK};
use super::super::portable::{step16_bytes, Portable};
use super::sse2::key_tag_span;

/// [`Portable`] with SSE2 finding the braces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tables;

impl Tables {
    /// Keys up to this long take [`Tables::short_key_crc`].
    pub(crate) const SHORT_KEY: usize = Portable::SHORT_KEY;

    /// The CRC of the hashed part of a key of at most [`Self::SHORT_KEY`]
    /// bytes: a word's on the tables alone, longer ones as
    /// [`Tables::long_key_crc`]'s.
    #[inline]
    pub(crate) fn short_key_crc(self, key: &[u8]) -> u16 {
        if key.len() <= 8 {
            return Portable.short_key_crc(key);
        }
        self.crc_of_key_upto_64(key)
    }

    /// The CRC of the hashed part of a longer key.
    #[inline]
    pub(crate) fn long_key_crc(self, key: &[u8]) -> u16 {
        if key.len() <= 64 {
            return self.crc_of_key_upto_64(key);
        }
        Portable.long_key_crc(key)
    }

    /// A key of 9 to 64 bytes: both braces found at once by SSE2 masks,
    /// then the tag or the whole key hashed; a 16-byte key one block step
    /// from memory, without the length cases of `crc_of_bytes` (measured:
    /// 5.1 to 4.5 ns).
    #[inline(always)]
    fn crc_of_key_upto_64(self, key: &[u8]) -> u16 {
        let tag = key_tag_span(key).and_then(|tag| key.get(tag));
        if let (None, Ok(block)) = (tag, <&[u8; BLOCK]>::try_from(key)) {
            return step16_bytes(0, block);
        }
        Portable.crc_of_bytes(tag.unwrap_or(key))
    }
}
