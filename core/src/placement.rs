//! Where a key lives: hash tag, slot and segment, exactly as Redis Cluster.
//!
//! `slot = crc16(tag_or_key) % 16384`. The tag is the bytes between the
//! first `{` and the first `}` after it, when at least one byte lies between;
//! otherwise the whole key is hashed. A segment is a contiguous range of
//! slots: `segment = slot * segments / 16384`.

use core::ops::Range;

use crate::crc16::{self, update_with, Engine, Portable};

/// How many hash slots a Redis Cluster has.
pub const SLOT_COUNT: u16 = 16384;

/// `slot & SLOT_MASK == slot % SLOT_COUNT`, since the count is a power of two.
const SLOT_MASK: u16 = SLOT_COUNT - 1;

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
    let open = find_byte(key, b'{')?;
    let close = open + 1 + find_byte(&key[open + 1..], b'}')?;
    (close > open + 1).then_some(open + 1..close)
}

/// The hash slot of `key`, equal to Redis `CLUSTER KEYSLOT` for every byte
/// string, binary keys included.
///
/// Short keys (16 bytes, or 32 with carry-less multiply) are handled in
/// registers: overlapping loads, the tag search as bit masks, one reduction. Longer keys are hashed block by
/// block with the tag search riding along, so each byte is read once.
///
/// ```
/// use zaris_core::slot_for_key;
/// assert_eq!(slot_for_key(b"123456789"), 12739);
/// assert_eq!(slot_for_key(b"{user1000}.following"), slot_for_key(b"{user1000}.followers"));
/// ```
#[must_use]
#[inline]
pub fn slot_for_key(key: &[u8]) -> u16 {
    match crate::simd::slot_for_key(key) {
        Some(slot) => slot,
        None => portable_slot(key),
    }
}

/// [`slot_for_key`] on the tables. Where a carry-less engine usually runs,
/// this stays out of line, so that the fast path saves no registers for it
/// (measured: about 0.3 ns of an 8-byte key's 2.2 ns).
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), inline(never))]
fn portable_slot(key: &[u8]) -> u16 {
    slot_with(Portable, key)
}

/// [`slot_for_key`] on a given CRC engine.
#[inline(always)]
pub(crate) fn slot_with<E: Engine>(e: E, key: &[u8]) -> u16 {
    let crc = if key.len() <= E::SHORT_KEY {
        e.short_key_crc(key)
    } else {
        e.long_key_crc(key)
    };
    crc & SLOT_MASK
}

/// Tags up to this long (after a `{` found in a long key) are found by a
/// direct scan before any hashing; longer ones by the single-pass path.
const SHORT_TAG: usize = 32;

/// Below this many bytes after an unclosed '{', a second pass over them
/// (a few ns on the folding path) costs less than `crc16::shift` (a chain
/// of bitwise multiplies, ~80 ns at 64 bytes; measured by `slot-binary`).
const REHASH_MAX: usize = 1024;

/// CRC of the hashed part of a key longer than 16 bytes, in one pass.
#[cfg_attr(target_arch = "x86_64", inline(always))]
#[cfg_attr(not(target_arch = "x86_64"), inline)]
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
        None => update_with(e, crc16::shift(through_open, hashed) ^ tag_crc, tail),
    }
}

/// The hash slot of a UTF-16 string (JS, JVM, .NET), without converting it
/// first: always equal to [`slot_for_key`] of its UTF-8 encoding, with lone
/// surrogates encoded as U+FFFD (what `String::from_utf16_lossy` does).
///
/// All-ASCII runs are hashed unit-as-byte; other characters are encoded to
/// UTF-8 on the fly into a small stack buffer. Never allocates.
///
/// ```
/// use zaris_core::{slot_for_key, slot_for_utf16};
/// let units: Vec<u16> = "{δ}:κλειδί".encode_utf16().collect();
/// assert_eq!(slot_for_utf16(&units), slot_for_key("{δ}:κλειδί".as_bytes()));
/// ```
#[must_use]
pub fn slot_for_utf16(units: &[u16]) -> u16 {
    let hashed = match hash_tag_span_utf16(units) {
        Some(span) => &units[span],
        None => units,
    };
    crc16_utf16(hashed) & SLOT_MASK
}

/// [`hash_tag_span`] for UTF-16 input, in code-unit offsets. `{` and `}` are
/// ASCII and never occur inside a UTF-8 multi-byte sequence, so the tag found
/// here is the UTF-16 image of the tag in the UTF-8 encoding.
#[must_use]
pub fn hash_tag_span_utf16(units: &[u16]) -> Option<Range<usize>> {
    let open = find_unit(units, u16::from(b'{'))?;
    let close = open + 1 + find_unit(&units[open + 1..], u16::from(b'}'))?;
    (close > open + 1).then_some(open + 1..close)
}

/// The first index of `unit` in `units`: 32 units a step with a branch-free
/// compare the compiler vectorizes, then the exact place in that step.
fn find_unit(units: &[u16], unit: u16) -> Option<usize> {
    const STEP: usize = 32;
    let mut chunks = units.chunks_exact(STEP);
    let mut base = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |hit, &u| hit | (u == unit)) {
            return chunk.iter().position(|&u| u == unit).map(|i| base + i);
        }
        base += STEP;
    }
    chunks
        .remainder()
        .iter()
        .position(|&u| u == unit)
        .map(|i| base + i)
}

/// CRC-16 of the UTF-8 encoding of `units`, encoded through a stack buffer.
fn crc16_utf16(units: &[u16]) -> u16 {
    /// Large enough that long strings reach the SIMD path in one flush.
    const BUF: usize = 256;
    let mut buf = [0u8; BUF];
    let mut crc = 0;
    let mut rest = units;
    while !rest.is_empty() {
        // An all-ASCII buffer's worth is one check and one narrowing copy,
        // both of which the compiler vectorizes.
        let chunk = &rest[..rest.len().min(BUF)];
        let (read, written) = if chunk.iter().fold(0, |acc, &u| acc | u) < 0x80 {
            for (dst, &unit) in buf.iter_mut().zip(chunk) {
                *dst = unit as u8;
            }
            (chunk.len(), chunk.len())
        } else {
            utf8_from_utf16_lossy(rest, &mut buf)
        };
        crc = crc16::update(crc, &buf[..written]);
        rest = &rest[read..];
    }
    crc
}

/// Encodes the start of `units` as UTF-8 into `out`, lone surrogates as
/// U+FFFD (as `String::from_utf16_lossy` does), as many whole characters as
/// fit: returns how many units were read and how many bytes written. Never
/// allocates; with 8 bytes of room it always makes progress, so a caller
/// with a small buffer encodes any text by calling again with the rest.
///
/// ASCII goes eight units a step, in a loop the compiler vectorizes. UTF-16
/// hosts (JS, the JVM, .NET) use this to hand many keys over at once.
///
/// ```
/// use zaris_core::utf8_from_utf16_lossy;
/// let units: Vec<u16> = "κ{😀}".encode_utf16().chain([0xD800]).collect();
/// let mut out = [0u8; 16];
/// assert_eq!(utf8_from_utf16_lossy(&units, &mut out), (6, 11));
/// assert_eq!(&out[..11], "κ{😀}\u{FFFD}".as_bytes());
/// ```
pub fn utf8_from_utf16_lossy(units: &[u16], out: &mut [u8]) -> (usize, usize) {
    let (mut read, mut written) = (0, 0);
    while let (Some(&first), Some(room)) = (
        units.get(read),
        out.get_mut(written..)
            .and_then(<[u8]>::first_chunk_mut::<8>),
    ) {
        if first < 0x80 {
            let step = ascii_run::<8>(&units[read..], room).unwrap_or_else(|| {
                room[0] = first as u8;
                1
            });
            read += step;
            written += step;
            continue;
        }
        read += 1;
        let c = match first {
            0xD800..=0xDBFF => match units.get(read) {
                Some(&low @ 0xDC00..=0xDFFF) => {
                    read += 1;
                    0x1_0000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
                }
                _ => 0xFFFD,
            },
            0xDC00..=0xDFFF => 0xFFFD,
            _ => u32::from(first),
        };
        // Continuation bytes carry six bits each under a 0b10 prefix.
        let cont = |shift: u32| 0x80 | ((c >> shift) as u8 & 0x3F);
        written += if c < 0x800 {
            room[..2].copy_from_slice(&[0xC0 | (c >> 6) as u8, cont(0)]);
            2
        } else if c < 0x1_0000 {
            room[..3].copy_from_slice(&[0xE0 | (c >> 12) as u8, cont(6), cont(0)]);
            3
        } else {
            room[..4].copy_from_slice(&[0xF0 | (c >> 18) as u8, cont(12), cont(6), cont(0)]);
            4
        };
    }
    (read, written)
}

/// Copies `N` ASCII units from the front of `units` to `out` as bytes, if
/// there are `N`, all ASCII, and room for them: `Some(N)`, else `None`.
#[inline(always)]
fn ascii_run<const N: usize>(units: &[u16], out: &mut [u8]) -> Option<usize> {
    let run = units.first_chunk::<N>()?;
    let room = out.first_chunk_mut::<N>()?;
    if run.iter().fold(0, |acc, &u| acc | u) >= 0x80 {
        return None;
    }
    for (dst, &unit) in room.iter_mut().zip(run) {
        *dst = unit as u8;
    }
    Some(N)
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

/// Position of the first `needle` in `hay`, eight bytes at a time.
#[inline]
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    let (words, rest) = hay.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        if crc16::word_has_byte(u64::from_le_bytes(*w), needle) {
            return w.iter().position(|&b| b == needle).map(|p| i * 8 + p);
        }
    }
    rest.iter()
        .position(|&b| b == needle)
        .map(|p| words.len() * 8 + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_slot(key: &[u8]) -> u16 {
        crc16::crc16_bitwise(hash_tag(key)) % SLOT_COUNT
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
            assert_eq!(slot_for_key(key), crc16::crc16_bitwise(tag) % SLOT_COUNT);
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
            assert_eq!(slot_for_key(&[b]), crc16::crc16_bitwise(&[b]) % SLOT_COUNT);
        }
    }

    #[test]
    fn utf16_matches_utf8() {
        for s in [
            "",
            "abc",
            "{}",
            "{a}",
            "{é}",
            "{éééééééé}xyz",
            "{😀😀😀😀😀}",
            "{δ}x",
            "κλειδί{}",
            "😀{😀}",
            "a\u{FFFD}b",
            "{\u{10FFFF}}",
        ] {
            let units: heapless::Vec<u16, 64> = s.encode_utf16().collect();
            assert_eq!(slot_for_utf16(&units), slot_for_key(s.as_bytes()), "{s}");
        }
        // Lone surrogates become U+FFFD.
        let lone = [u16::from(b'a'), 0xD800, u16::from(b'b'), 0xDC00];
        assert_eq!(
            slot_for_utf16(&lone),
            slot_for_key("a\u{FFFD}b\u{FFFD}".as_bytes())
        );
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
