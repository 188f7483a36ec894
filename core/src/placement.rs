//! Where a key lives: hash tag, slot and segment, exactly as Redis Cluster.
//!
//! `slot = crc16(tag_or_key) % 16384`. The tag is the bytes between the
//! first `{` and the first `}` after it, when at least one byte lies between;
//! otherwise the whole key is hashed. A segment is a contiguous range of
//! slots: `segment = slot * segments / 16384`.

use core::ops::Range;

use crate::engine;

/// How many hash slots a Redis Cluster has.
pub const SLOT_COUNT: u16 = 16384;

/// `slot & SLOT_MASK == slot % SLOT_COUNT`, since the count is a power of two.
pub(crate) const SLOT_MASK: u16 = SLOT_COUNT - 1;

/// The bytes of `key` that decide its slot: the hash tag if it has one,
/// otherwise the whole key.
///
/// ```
/// use zaris_core::hash_tag;
/// assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
/// assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
/// assert_eq!(hash_tag(b"foo{{bar}}"), b"{bar");
/// assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
/// ```
#[must_use]
pub fn hash_tag(key: &[u8]) -> &[u8] {
    match hash_tag_span(key) {
        Some(span) => &key[span],
        None => key,
    }
}

/// Where the hash tag lies inside `key` (byte offsets), or `None` when the
/// whole key is hashed. For showing a person which bytes count.
#[must_use]
pub fn hash_tag_span(key: &[u8]) -> Option<Range<usize>> {
    engine::tag::span(key)
}

/// The hash slot of `key`, equal to Redis `CLUSTER KEYSLOT` for every byte
/// string, binary keys included.
///
/// Keys of up to 64 bytes (16 on aarch64 and the portable tables) are
/// handled in registers: overlapping loads, the tag search as bit masks,
/// one reduction. Longer keys are hashed block by block with the tag search
/// riding along, so each byte is read once.
///
/// ```
/// use zaris_core::slot_for_key;
/// assert_eq!(slot_for_key(b"123456789"), 12739);
/// assert_eq!(slot_for_key(b"{user1000}.following"), slot_for_key(b"{user1000}.followers"));
/// ```
#[must_use]
#[inline]
pub fn slot_for_key(key: &[u8]) -> u16 {
    engine::key_crc(key) & SLOT_MASK
}

/// The segment of `slot` when the cluster has `segments` segments: the
/// 16384 slots map proportionally, so each segment is a contiguous slot range
/// and 16384 segments make the segment the slot itself.
///
/// Out-of-range arguments are defined, not rejected, so routing never panics:
/// `slot` is taken modulo 16384 (as the slot of a key always is), and
/// `segments` is clamped to `1..=16384` (zero segments cannot hold a key, and
/// more segments than slots cannot be told apart), so 0 behaves as 1 and
/// anything above 16384 as 16384. Use [`SegmentCount::new`] to reject such
/// counts where they enter the system instead.
///
/// ```
/// use zaris_core::segment_for_slot;
/// assert_eq!(segment_for_slot(16383, 4), 3);
/// assert_eq!(segment_for_slot(4096, 4), 1);
/// assert_eq!(segment_for_slot(9000, 16384), 9000);
/// ```
#[must_use]
pub const fn segment_for_slot(slot: u16, segments: u16) -> u16 {
    let segments = SegmentCount::clamped(segments).get();
    let slot = slot & SLOT_MASK;
    // 16383 * 16384 < 2^32: no overflow in u32.
    (slot as u32 * segments as u32 / SLOT_COUNT as u32) as u16
}

/// The segment of `key`: [`segment_for_slot`] of [`slot_for_key`].
#[must_use]
pub fn segment_for_key(key: &[u8], segments: u16) -> u16 {
    segment_for_slot(slot_for_key(key), segments)
}

/// A segment count known to lie in `1..=16384`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "u16", into = "u16"))]
pub struct SegmentCount(u16);

impl SegmentCount {
    /// One segment per slot, Redis Cluster's own granularity.
    pub const SLOTS: Self = Self(SLOT_COUNT);

    /// Checks a segment count.
    ///
    /// # Errors
    /// [`SegmentCountError`] when `segments` is 0 or above 16384.
    pub const fn new(segments: u16) -> Result<Self, SegmentCountError> {
        if segments == 0 || segments > SLOT_COUNT {
            Err(SegmentCountError { segments })
        } else {
            Ok(Self(segments))
        }
    }

    /// The count, clamped into range (see [`segment_for_slot`]).
    #[must_use]
    pub const fn clamped(segments: u16) -> Self {
        if segments == 0 {
            Self(1)
        } else if segments > SLOT_COUNT {
            Self::SLOTS
        } else {
            Self(segments)
        }
    }

    /// The count.
    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }

    /// The first slot of `segment` (the range is `first_slot(s)..first_slot(s + 1)`).
    #[must_use]
    pub const fn first_slot(self, segment: u16) -> u16 {
        // Smallest slot with slot * n / 16384 >= segment: ceil(segment * 16384 / n).
        let n = self.0 as u32;
        let slot = (segment as u32 * SLOT_COUNT as u32).div_ceil(n);
        if slot > SLOT_COUNT as u32 {
            SLOT_COUNT
        } else {
            slot as u16
        }
    }
}

impl From<SegmentCount> for u16 {
    fn from(count: SegmentCount) -> u16 {
        count.0
    }
}

impl TryFrom<u16> for SegmentCount {
    type Error = SegmentCountError;
    fn try_from(segments: u16) -> Result<Self, Self::Error> {
        Self::new(segments)
    }
}

/// A segment count outside `1..=16384`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentCountError {
    /// The count that was refused.
    pub segments: u16,
}

impl core::fmt::Display for SegmentCountError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "segment count {} is outside 1..={SLOT_COUNT}",
            self.segments
        )
    }
}

impl core::error::Error for SegmentCountError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_slot(key: &[u8]) -> u16 {
        crate::crc16_bitwise(hash_tag(key)) % SLOT_COUNT
    }

    #[test]
    fn redis_documented_slots() {
        assert_eq!(slot_for_key(b"123456789"), 12739);
        assert_eq!(slot_for_key(b"{user1000}.following"), 3443);
        assert_eq!(slot_for_key(b"foo"), 12182);
        assert_eq!(slot_for_key(b""), 0);
    }

    #[test]
    fn hash_tag_edge_forms() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"{}", b"{}"),
            (b"{a}", b"a"),
            (b"a{b}c", b"b"),
            (b"{{a}}", b"{a"),
            (b"}{a}", b"a"),
            (b"{a", b"{a"),
            (b"a}", b"a}"),
            (b"{a}{b}", b"a"),
            (b"{}{a}", b"{}{a}"),
            (b"key{tag}", b"tag"),
            (b"key{", b"key{"),
            (b"foo{}{bar}", b"foo{}{bar}"),
            (b"foo{{bar}}", b"{bar"),
            (b"foo{bar}{zap}", b"bar"),
        ];
        for &(key, tag) in cases {
            assert_eq!(hash_tag(key), tag, "key {:?}", core::str::from_utf8(key));
            assert_eq!(slot_for_key(key), crate::crc16_bitwise(tag) % SLOT_COUNT);
        }
    }

    #[test]
    fn tags_in_every_block_position_of_long_keys() {
        // Put the braces at every offset around the 16- and 64-byte block
        // edges of both fast paths.
        let mut key = [b'x'; 600];
        for open in (0..300).step_by(7) {
            for width in [0usize, 1, 15, 16, 17, 63, 64, 65, 200] {
                let mut k = key;
                k[open] = b'{';
                if open + 1 + width < k.len() {
                    k[open + 1 + width] = b'}';
                }
                assert_eq!(
                    slot_for_key(&k),
                    reference_slot(&k),
                    "open {open} width {width}"
                );
            }
        }
        key[599] = b'{';
        assert_eq!(slot_for_key(&key), reference_slot(&key));
    }

    #[test]
    fn every_single_byte_key() {
        for b in 0..=255u8 {
            assert_eq!(slot_for_key(&[b]), crate::crc16_bitwise(&[b]) % SLOT_COUNT);
        }
    }

    #[test]
    fn segments() {
        assert_eq!(segment_for_slot(0, 1), 0);
        assert_eq!(segment_for_slot(16383, 1), 0);
        assert_eq!(segment_for_slot(16383, 16384), 16383);
        assert_eq!(segment_for_slot(8191, 2), 0);
        assert_eq!(segment_for_slot(8192, 2), 1);
        // Out-of-range counts clamp; slots wrap like key slots do.
        assert_eq!(segment_for_slot(16383, 0), 0);
        assert_eq!(segment_for_slot(16383, u16::MAX), 16383);
        assert_eq!(segment_for_slot(16384 + 5, 16384), 5);
        assert!(SegmentCount::new(0).is_err());
        assert!(SegmentCount::new(16385).is_err());
        assert_eq!(SegmentCount::new(3).map(SegmentCount::get), Ok(3));
    }

    #[test]
    fn first_slot_inverts_segment_for_slot() {
        for n in [1u16, 2, 3, 7, 100, 1000, 16383, 16384] {
            let count = SegmentCount::new(n).unwrap();
            for seg in 0..n {
                let first = count.first_slot(seg);
                assert_eq!(segment_for_slot(first, n), seg, "n {n} seg {seg}");
                if first > 0 {
                    assert_eq!(segment_for_slot(first - 1, n), seg - 1);
                }
            }
            assert_eq!(count.first_slot(n), SLOT_COUNT);
        }
    }
}
