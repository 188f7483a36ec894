//! x86_64: one file per instruction-set tier, each wider one building on
//! the 128-bit one for short keys and reductions, and below them all the
//! SSE2 baseline (`sse2.rs`), which the portable tables use too. `engine/mod.rs` detects
//! the tiers and dispatches; nothing here picks.

/// A tier's CRC entry points, from its features, its engine type, and the
/// length up to which `$short` hashes from state 0 (`update` dispatches
/// on the state; `crc_root` keeps short input in a small function;
/// `update_root` takes the rest).
macro_rules! update_roots {
    ($features:literal, $engine:ty, $short:path, $short_len:expr) => {
        /// The CRC of any bytes, continued from `crc`: from state 0 (what
        /// `crc16` hashes) through `crc_root`, else through `update_root`.
        ///
        /// # Safety
        /// The CPU has this tier's features.
        #[inline(always)]
        pub(crate) unsafe fn update(crc: u16, bytes: &[u8]) -> u16 {
            // SAFETY: the caller's.
            unsafe {
                if crc == 0 {
                    crc_root(bytes)
                } else {
                    update_root(crc, bytes)
                }
            }
        }

        /// The CRC of any bytes from state 0. Short input stays in this
        /// small function; the rest is out of line, so that its frame (a
        /// register array, a kilobyte on the 512-bit tier, and five saved
        /// registers) is not set up for short input (measured: 8-64-byte
        /// input 20-33% faster).
        #[target_feature(enable = $features)]
        fn crc_root(bytes: &[u8]) -> u16 {
            if bytes.len() <= $short_len {
                // This tier's features include the 128-bit tier's.
                return $short(bytes);
            }
            update_root(0, bytes)
        }

        /// The CRC of any bytes, continued from `crc`.
        #[target_feature(enable = $features)]
        #[inline(never)]
        fn update_root(crc: u16, bytes: &[u8]) -> u16 {
            // SAFETY: this function runs only where its features are.
            $crate::engine::generic::update_with(unsafe { <$engine>::new_unchecked() }, crc, bytes)
        }
    };
}

pub(crate) mod avx512;
pub(crate) mod pclmul;
pub(crate) mod sse2;
pub(crate) mod vpclmul256;
