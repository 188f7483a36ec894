//! The hash-tag rule, once as the reference and then in the shapes the fast
//! paths hold a key in. Every variant is tested here against [`span`].
//!
//! The rule: find the first `{`; if a `}` follows it with at least one byte
//! between them, only the bytes between that `{` and the first `}` after it
//! are hashed; otherwise the whole key is.

use core::ops::Range;

use super::swar::{block_byte_hits, byte_hits, find_byte};

/// The reference: where the hash tag lies in `key`, or `None` when the
/// whole key is hashed.
#[inline]
pub(crate) fn span(key: &[u8]) -> Option<Range<usize>> {
    let open = find_byte(key, b'{')?;
    let close = open + 1 + find_byte(&key[open + 1..], b'}')?;
    (close > open + 1).then_some(open + 1..close)
}

/// The rule on a key of at most 16 bytes held as one zero-padded
/// big-endian number: the tag slid down to the bottom and its length, or
/// `None` when the whole key is hashed. The braces are found with the cheap
/// "has zero byte" test on the number byte-reversed (first key byte
/// lowest): its stray marks only ever sit above a true match, so the lowest
/// mark is the first brace, and once the marks up to the `{` are cleared,
/// the lowest `}` mark is exact too (a stray one would need a true `}`
/// right below it, through the `{`).
///
/// The tag is cut out by masks built from the two lowest marks, not from
/// their positions: only the final shift waits for a bit count, so a
/// tagged key's CRC starts a few cycles after an untagged one's.
#[inline(always)]
pub(crate) fn tag_in_block(padded: u128) -> Option<(u128, u32)> {
    let first_lowest = padded.swap_bytes();
    let opens = block_byte_hits(first_lowest, b'{');
    if opens == 0 {
        return None;
    }
    // `x ^ -x`: the bits above the lowest set bit of `x`.
    let closes = block_byte_hits(first_lowest, b'}') & (opens ^ opens.wrapping_neg());
    if closes == 0 {
        return None;
    }
    // The marks (top bits) of the `{` and of the first `}` after it, and a
    // byte mask of the bytes strictly between them.
    let open = opens & opens.wrapping_neg();
    let close = closes & closes.wrapping_neg();
    let between = (close >> 7).wrapping_sub(open << 1);
    if between == 0 {
        return None;
    }
    // In `padded` the tag is masked out, then slid down past the bytes
    // from the `}` on (`close_bit` is the `}` byte's top bit).
    let close_bit = close.trailing_zeros();
    let tag = (padded & between.swap_bytes()) >> (u128::BITS + 7 - close_bit);
    let len = (close_bit - open.trailing_zeros()) / 8 - 1;
    Some((tag, len))
}

/// The rule on a key of at most 8 bytes held as by
/// [`load_word_on_top`](super::swar::load_word_on_top) (little-endian, the
/// last byte on top): the tag slid up so that its last byte is on top, or
/// `None` when the whole key is hashed. Marks as in [`tag_in_block`], but in
/// this order they need no byte swap, and the tag needs no mask of its own:
/// the bytes up to the `{` are cleared by the mask that cleared the `}`
/// marks, and those from the `}` on fall off the top.
#[inline(always)]
pub(crate) fn tag_in_word_on_top(word: u64) -> Option<u64> {
    let opens = byte_hits(word, b'{');
    if opens == 0 {
        return None;
    }
    let above_open = opens ^ opens.wrapping_neg();
    let closes = byte_hits(word, b'}') & above_open;
    let open = opens & opens.wrapping_neg();
    let close = closes & closes.wrapping_neg();
    // One test for both: no `}` after the `{` (no mark), or `{}` (the `}`
    // one byte up; a `{` on top makes that a zero, as `close` must be).
    if close <= open << 8 {
        return None;
    }
    // The `}` is byte `c` (`close` is its top bit, `8c + 7`): the tag
    // moves up by `8 - c` bytes.
    Some(up_past(word & above_open, close))
}

/// `word` moved up by `64 - 8c` bits, for the `c` whose top bit `close` is.
/// Natively a multiply by `close` byte-swapped, moved up a bit (no bit
/// count, no shift by a register); wasm has no byte swap (an `i64` one is a
/// dozen instructions) but counts bits natively.
#[inline(always)]
fn up_past(word: u64, close: u64) -> u64 {
    if cfg!(target_arch = "wasm32") {
        up_past_by_count(word, close)
    } else {
        up_past_by_multiply(word, close)
    }
}

#[inline(always)]
fn up_past_by_count(word: u64, close: u64) -> u64 {
    word << (u64::BITS + 7 - close.trailing_zeros())
}

/// `close` is `2^(8c + 7)`; byte-swapped, `2^(63 - 8c)`.
#[inline(always)]
fn up_past_by_multiply(word: u64, close: u64) -> u64 {
    word.wrapping_mul(close.swap_bytes() << 1)
}

/// The rule on move-masks of a zero-padded 16-byte block in a vector
/// register, where bit `j` stands for the byte `15 - j` from the top (so the
/// earliest byte is the highest bit): `(skip, distance)` such that, with the
/// `}` mask shifted left by `skip`, the first `{` sits at bit 31 and the
/// first `}` after it `distance` bits below, the tag being the bits
/// between. Shifting the `{` to the top drops every `}` before it, so the
/// rule takes two bit counts and a shift, and no mask is built.
#[cfg_attr(not(any(target_arch = "x86_64", test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn span_in_block_masks(opens: u32, closes: u32) -> Option<(u32, u32)> {
    if opens == 0 {
        return None;
    }
    let skip = opens.leading_zeros();
    // Bit 31 is now the `{`'s byte, which is no `}`: the distance is at
    // least 1 (an empty tag), and 32 when no `}` follows.
    let distance = (closes << skip).leading_zeros();
    (distance.wrapping_sub(2) < 30).then_some((skip, distance))
}

/// The rule on move-masks of a key of at most 64 bytes, bit `p` standing for
/// key byte `p` (loads in key order, overlapping ones setting the same bits).
#[cfg_attr(not(any(target_arch = "x86_64", test)), allow(dead_code))]
#[inline(always)]
pub(crate) fn span_in_masks(opens: u64, closes: u64) -> Option<Range<usize>> {
    if opens == 0 {
        return None;
    }
    let open = opens.trailing_zeros();
    // Shifted down to the `{` (bit 0, no `}`), the mask drops every `}`
    // before it, and the first one after it is the trailing zeros away.
    // A tag is at least one byte: a distance of 2 to 63 (64 when no `}`
    // follows).
    let distance = (closes >> open).trailing_zeros() as usize;
    let open = open as usize;
    (distance.wrapping_sub(2) < 62).then_some(open + 1..open + distance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::swar::load_word_on_top;

    fn mask(key: &[u8], byte: u8) -> u64 {
        key.iter()
            .enumerate()
            .filter(|(_, &b)| b == byte)
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Keys of every length up to `max` with a `{` and a `}` at every pair
    /// of positions (or absent), over a filler that holds neither.
    fn brace_placements(max: usize, mut check: impl FnMut(&[u8])) {
        for len in 0..=max {
            for open in 0..=len {
                for close in 0..=len {
                    let mut key = [b'x'; 64];
                    key[..len]
                        .iter_mut()
                        .enumerate()
                        .for_each(|(i, b)| *b = b'a' + (i % 26) as u8);
                    if open < len {
                        key[open] = b'{';
                    }
                    if close < len {
                        key[close] = b'}';
                    }
                    check(&key[..len]);
                }
            }
        }
        for key in [
            &b"{{a}}"[..],
            b"{}{a}",
            b"}{a}",
            b"{a}{b}",
            b"a{{}",
            b"{}}",
            b"{{}}",
        ] {
            check(key);
        }
    }

    #[test]
    fn the_reference_on_documented_forms() {
        let cases: &[(&[u8], Option<Range<usize>>)] = &[
            (b"{user1000}.following", Some(1..9)),
            (b"foo{}{bar}", None),
            (b"foo{{bar}}", Some(4..8)),
            (b"foo{bar}{zap}", Some(4..7)),
            (b"{}", None),
            (b"{", None),
            (b"}{a}", Some(2..3)),
        ];
        for (key, want) in cases {
            assert_eq!(span(key), *want, "{:?}", key.escape_ascii());
        }
    }

    #[test]
    fn word_and_block_variants_match_the_reference() {
        let padded = |bytes: &[u8]| bytes.iter().fold(0u128, |a, &b| a << 8 | u128::from(b));
        let check = |key: &[u8]| {
            let want = span(key).map(|s| (padded(&key[s.clone()]), s.len() as u32));
            assert_eq!(tag_in_block(padded(key)), want, "{:?}", key.escape_ascii());
            if key.len() <= 8 {
                // The tag as the word of a key of its own.
                let want = span(key).map(|s| load_word_on_top(&key[s]));
                let got = tag_in_word_on_top(load_word_on_top(key));
                assert_eq!(got, want, "{:?}", key.escape_ascii());
            }
        };
        brace_placements(16, check);
        // Bytes one above a brace (`|`, `|` ^ 1) next to braces, where the
        // cheap test leaves stray marks.
        for key in [
            &b"}|{a}"[..],
            b"{|}|",
            b"a}||{b}",
            b"{z||}",
            b"||{}|}",
            b"{{||}}",
        ] {
            check(key);
        }
    }

    #[test]
    fn both_ways_up_past_a_brace_agree() {
        let mut word = 0x0123_4567_89ab_cdefu64;
        for c in 1..8 {
            let close = 1u64 << (8 * c + 7);
            for _ in 0..100 {
                word = word.rotate_left(13).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let want = word << (64 - 8 * c);
                assert_eq!(up_past_by_count(word, close), want, "c {c}");
                assert_eq!(up_past_by_multiply(word, close), want, "c {c}");
            }
        }
    }

    #[test]
    fn block_mask_variant_matches_the_reference() {
        brace_placements(16, |key| {
            // Bit j is the byte 15 - j from the top of the padded block.
            let pad = 16 - key.len();
            let rev = |m: u64| {
                (0..key.len())
                    .filter(|&p| m >> p & 1 == 1)
                    .fold(0u32, |r, p| r | 1 << (15 - (p + pad)))
            };
            let opens = rev(mask(key, b'{'));
            let got = span_in_block_masks(opens, rev(mask(key, b'}'))).map(|(skip, distance)| {
                // The `{` is bit `31 - skip`, key byte `skip - 16 - pad`.
                let start = skip as usize + 1 - 16 - pad;
                start..start + distance as usize - 1
            });
            assert_eq!(got, span(key), "{:?}", key.escape_ascii());
        });
    }

    #[test]
    fn mask_variant_matches_the_reference() {
        brace_placements(64, |key| {
            assert_eq!(
                span_in_masks(mask(key, b'{'), mask(key, b'}')),
                span(key),
                "{:?}",
                key.escape_ascii()
            );
        });
    }
}
