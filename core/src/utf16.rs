//! UTF-16 keys (JS, the JVM, .NET): their slot without converting them
//! first, and a UTF-8 transcoder into a caller's buffer for hosts that hand
//! many keys over at once. Always equal to the slot of the string's UTF-8
//! encoding, lone surrogates encoded as U+FFFD (docs/behaviour.md §1).

use core::ops::Range;

use crate::engine;
use crate::placement::SLOT_MASK;

/// The hash slot of a UTF-16 string (JS, JVM, .NET), without converting it
/// first: always equal to [`slot_for_key`](crate::slot_for_key) of its UTF-8 encoding, with lone
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

/// [`hash_tag_span`](crate::hash_tag_span) for UTF-16 input, in code-unit offsets. `{` and `}` are
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
        crc = engine::update(crc, &buf[..written]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot_for_key;

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
    fn long_ascii_and_mixed_text_cross_the_buffer() {
        let mut text = heapless::String::<2048>::new();
        for i in 0..300 {
            let _ = text.push_str(if i % 7 == 0 { "κ" } else { "a" });
        }
        let units: heapless::Vec<u16, 2048> = text.encode_utf16().collect();
        assert_eq!(slot_for_utf16(&units), slot_for_key(text.as_bytes()));
        let ascii = [u16::from(b'x'); 1000];
        assert_eq!(slot_for_utf16(&ascii), slot_for_key(&[b'x'; 1000]));
    }
}
