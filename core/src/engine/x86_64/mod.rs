//! x86_64: one file per instruction-set tier, each wider one building on
//! the 128-bit one for short keys and reductions, and below them all the
//! SSE2 baseline (`sse2.rs`), which also finds a key's braces for the
//! portable tables (`tables.rs`). `engine/mod.rs` detects
//! the tiers and dispatches; nothing here picks.

/// A tier's `crc`: the CRC of any bytes from state 0, from the 128-bit
/// tier's root for short input and the tier's `update_root`.
macro_rules! crc_from_zero {
    ($short:path, $short_len:expr) => {
        /// The CRC of any bytes from state 0 (`crc16`). Short input goes to
        /// the 128-bit tier's small function here, where the call is:
        /// `update_root` sets up a frame for its long path (a register
        /// array, a kilobyte on the 512-bit tier, and five saved registers)
        /// before its own test (measured: 8-64-byte input 16-32% faster
        /// this way). Only the one-shot CRC takes this path: the same test
        /// inlined into the UTF-16 encoder's loop made 256-unit keys 9-12%
        /// slower, so streaming updates call `update_root` as they did.
        ///
        /// # Safety
        /// The CPU has this tier's features.
        #[inline(always)]
        pub(crate) unsafe fn crc(bytes: &[u8]) -> u16 {
            // SAFETY: the caller's; every tier's features include the
            // 128-bit tier's.
            unsafe {
                if bytes.len() <= $short_len {
                    $short(bytes)
                } else {
                    update_root(0, bytes)
                }
            }
        }
    };
}

pub(crate) mod avx512;
pub(crate) mod pclmul;
pub(crate) mod sse2;
pub(crate) mod tables;
pub(crate) mod vpclmul256;
