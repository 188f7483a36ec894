//! CRC-16/XMODEM, the checksum behind Redis Cluster's hash slots.
//!
//! Polynomial 0x1021, initial value 0, no reflection, no final xor
//! (catalogue check value `crc16(b"123456789") == 0x31C3`). The engine that
//! computes it (tables, or carry-less multiplies of the widest register
//! this CPU has) is picked once; [`crate::crc_engine`] names it.

use crate::engine;

/// CRC-16/XMODEM of `bytes`, one shot.
///
/// ```
/// assert_eq!(zaris_core::crc16(b"123456789"), 0x31C3);
/// ```
#[inline]
#[must_use]
pub fn crc16(bytes: &[u8]) -> u16 {
    engine::crc(bytes)
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
        self.state = engine::update(self.state, bytes);
    }

    /// The checksum of everything fed so far. The state is kept, so more
    /// bytes may follow.
    #[must_use]
    pub const fn finish(&self) -> u16 {
        self.state
    }
}

/// The reference: one bit at a time, straight from the definition. Every
/// fast path is tested against it.
///
/// ```
/// assert_eq!(zaris_core::crc16_bitwise(b"123456789"), 0x31C3);
/// ```
#[must_use]
pub fn crc16_bitwise(bytes: &[u8]) -> u16 {
    engine::crc_bitwise(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn every_single_byte_matches_the_reference() {
        for b in 0..=255u8 {
            assert_eq!(crc16(&[b]), crc16_bitwise(&[b]), "byte {b:#04x}");
        }
    }

    #[test]
    fn split_updates_equal_one_shot() {
        let msg: [u8; 700] = core::array::from_fn(|i| (i as u8).wrapping_mul(101) ^ 0x5A);
        for split in (0..=msg.len()).step_by(13) {
            let mut c = Crc16::new();
            c.update(&msg[..split]);
            c.update(&msg[split..]);
            assert_eq!(c.finish(), crc16(&msg), "split {split}");
        }
        assert_eq!(crc16(&msg), crc16_bitwise(&msg));
    }
}
