//! x86_64's baseline, SSE2, which every x86_64 CPU has: the byte searches
//! and 16-byte loads that every engine on x86_64 shares, the portable
//! tables included (their CRC needs no vector, their brace search gains
//! from one). Nothing here multiplies.

use core::arch::x86_64::{
    __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    _mm_set_epi64x, _mm_setzero_si128,
};
use core::ops::Range;

use crate::engine::tag;

/// Where `needle` first occurs in `hay`: the first 16 bytes, then 64 a step
/// (four compares, one branch), then 16 at a time, then byte by byte.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    let splat = _mm_set1_epi8(needle as i8);
    let hits = |block: &[u8; 16]| {
        // SAFETY: `block` is 16 readable bytes; unaligned loads are allowed.
        let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
        _mm_movemask_epi8(_mm_cmpeq_epi8(v, splat)) as u32
    };
    let (blocks, tail) = hay.as_chunks::<16>();
    // The first block alone: tags sit near the front of keys.
    if let Some(first) = blocks.first() {
        let mask = hits(first);
        if mask != 0 {
            return Some(mask.trailing_zeros() as usize);
        }
    }
    let (groups, rest) = blocks.as_chunks::<4>();
    for (g, group) in groups.iter().enumerate() {
        let any = group.iter().fold(_mm_setzero_si128(), |acc, block| {
            // SAFETY: as above.
            let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
            _mm_or_si128(acc, _mm_cmpeq_epi8(v, splat))
        });
        if _mm_movemask_epi8(any) != 0 {
            for (b, block) in group.iter().enumerate() {
                let mask = hits(block);
                if mask != 0 {
                    return Some(64 * g + 16 * b + mask.trailing_zeros() as usize);
                }
            }
        }
    }
    let base = 64 * groups.len();
    for (b, block) in rest.iter().enumerate() {
        let mask = hits(block);
        if mask != 0 {
            return Some(base + 16 * b + mask.trailing_zeros() as usize);
        }
    }
    let base = 16 * blocks.len();
    tail.iter().position(|&b| b == needle).map(|p| base + p)
}

// Every x86_64 target enables SSE2 (its floating point needs it), so the
// functions below call its intrinsics without `#[target_feature]`, which
// would keep them from being inlined into the portable engine.
const _: () = assert!(cfg!(target_feature = "sse2"));

/// The 16 bytes of `bytes` at `at`: message blocks, and windows into the
/// shuffle tables (zeros past the end, which callers never ask for).
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn load16(bytes: &[u8], at: usize) -> __m128i {
    let block: &[u8; 16] = match bytes.get(at..).and_then(|b| b.first_chunk()) {
        Some(b) => b,
        None => &[0; 16],
    };
    // SAFETY: `block` is 16 readable bytes, and unaligned loads are
    // allowed.
    unsafe { _mm_loadu_si128(block.as_ptr().cast::<__m128i>()) }
}

/// The hash tag of a key of `n` (16 to 64) bytes loaded as `loads`: 16
/// bytes from offsets 0, 16, ... and the last 16 from `n - 16`. Brace
/// positions come from byte compares and move-masks (bit `p` is key byte
/// `p`; overlapping loads set the same bits). The usual tag opens and
/// closes within the first 16 bytes, where the first load's two masks
/// alone tell (measured: tagged 32-byte keys 14% faster, 64-byte 25%, than
/// with the whole `{` mask built first; untagged 32-byte keys, one more
/// branch, 0.1 ns slower); only the others build the whole masks.
#[inline(always)]
pub(crate) fn tag_span<const L: usize>(loads: [__m128i; L], n: usize) -> Option<Range<usize>> {
    let first_opens = key_mask([loads[0]], 16, b'{');
    if first_opens != 0 {
        if let Some(tag) = tag::span_in_masks(first_opens, key_mask([loads[0]], 16, b'}')) {
            return Some(tag);
        }
    }
    let opens = key_mask(loads, n, b'{');
    if opens == 0 {
        return None;
    }
    tag::span_in_masks(opens, key_mask(loads, n, b'}'))
}

/// Bit `p` set where byte `p` of the key loaded as `loads` (see
/// [`tag_span`]) is `byte`.
#[inline(always)]
fn key_mask<const L: usize>(loads: [__m128i; L], n: usize, byte: u8) -> u64 {
    // SAFETY: SSE2 is enabled (asserted above); nothing here reads memory.
    unsafe {
        let needle = _mm_set1_epi8(byte as i8);
        let hits = |v| u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, needle)) as u16);
        let mut bits = hits(loads[L - 1]) << (n - 16);
        for (i, &v) in loads[..L - 1].iter().enumerate() {
            bits |= hits(v) << (16 * i);
        }
        bits
    }
}

/// Whether any byte of `raw` equals the splatted `needle`: one move-mask
/// of the or-ed compares (the 128-bit fold's brace test, too).
#[inline(always)]
pub(crate) fn any_equal(raw: &[__m128i], needle: __m128i) -> bool {
    // SAFETY: SSE2 is enabled (asserted above); nothing here reads memory.
    unsafe {
        let hits = raw.iter().fold(_mm_setzero_si128(), |acc, &x| {
            _mm_or_si128(acc, _mm_cmpeq_epi8(x, needle))
        });
        _mm_movemask_epi8(hits) != 0
    }
}

/// Whether any of `loads` holds a `{`.
#[inline(always)]
fn any_open(loads: &[__m128i]) -> bool {
    // SAFETY: SSE2 is enabled (asserted above).
    any_equal(loads, unsafe { _mm_set1_epi8(b'{' as i8) })
}

/// The hash tag of a key of 9 to 64 bytes, found as [`tag_span`] finds it
/// (two 8-byte loads below 16 bytes, one 16-byte load at 16, two up to 32,
/// four above). For the portable tables, whose CRC costs more than the
/// search: most keys hold no `{`, which [`any_open`] tells with fewer
/// instructions than building the masks (the carry-less engines, whose
/// CRC is cheap, build them at once: the early test costs their tagged
/// keys 5%).
#[inline(always)]
pub(crate) fn key_tag_span(key: &[u8]) -> Option<Range<usize>> {
    let n = key.len();
    if n < 16 {
        // The first 8 bytes in the low half, the last 8 in the high half.
        let word = |w: Option<&[u8; 8]>| w.map_or(0, |w| i64::from_le_bytes(*w));
        // SAFETY: SSE2 is enabled (asserted above); nothing here reads
        // memory.
        let v = unsafe { _mm_set_epi64x(word(key.last_chunk()), word(key.first_chunk())) };
        // SAFETY: as above.
        let mask = |b: u8| unsafe {
            let m = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))) as u64;
            (m & 0xFF) | (m >> 8) << n.saturating_sub(8)
        };
        let opens = mask(b'{');
        if opens == 0 {
            return None;
        }
        return tag::span_in_masks(opens, mask(b'}'));
    }
    // SAFETY: SSE2 is enabled (asserted above).
    let load16 = |at: usize| unsafe { load16(key, at) };
    if n > 32 {
        // The third load reads zeros below 48 bytes; the last overlaps.
        let loads = [load16(0), load16(16), load16(32), load16(n - 16)];
        return any_open(&loads).then(|| tag_span(loads, n)).flatten();
    }
    if n == 16 {
        let loads = [load16(0)];
        return any_open(&loads).then(|| tag_span(loads, n)).flatten();
    }
    let loads = [load16(0), load16(n - 16)];
    any_open(&loads).then(|| tag_span(loads, n)).flatten()
}
