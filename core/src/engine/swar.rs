//! SIMD within a register: byte searches and short loads in plain integer
//! arithmetic, for every CPU (the portable engine, and the parts of the
//! carry-less engines that run before any vector register is touched).

/// Whether any byte of `word` is `needle`: the classic "has zero byte" bit
/// trick on `word ^ needle-splat`, exact (no false positives).
#[inline(always)]
pub(crate) const fn word_has_byte(word: u64, needle: u8) -> bool {
    byte_hits(word, needle) != 0
}

/// The "has zero byte" test on `word ^ needle-splat`, for one integer width.
macro_rules! byte_hits_of {
    ($(#[$doc:meta])* $name:ident, $int:ty) => {
        $(#[$doc])*
        #[inline(always)]
        pub(crate) const fn $name(word: $int, needle: u8) -> $int {
            const LOW: $int = <$int>::MAX / 0xFF;
            const HIGH: $int = LOW << 7;
            let x = word ^ (LOW * needle as $int);
            x.wrapping_sub(LOW) & !x & HIGH
        }
    };
}

byte_hits_of!(
    /// Nonzero exactly when some byte of `word` is `needle`, so that several
    /// words' hits can be or-ed and tested with one branch. Each matching
    /// byte's top bit is set; the borrow may also mark bytes above a match
    /// (never below one), so the lowest mark is exact.
    byte_hits,
    u64
);
byte_hits_of!(
    /// [`byte_hits`] over a 16-byte block.
    block_byte_hits,
    u128
);

/// Position of the first `needle` in `hay`, eight bytes a step.
#[inline]
pub(crate) fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    let (words, rest) = hay.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        if word_has_byte(u64::from_le_bytes(*w), needle) {
            return w.iter().position(|&b| b == needle).map(|p| i * 8 + p);
        }
    }
    rest.iter()
        .position(|&b| b == needle)
        .map(|p| words.len() * 8 + p)
}

/// At most 8 bytes as one big-endian word, zero-padded in front; more read
/// as their last 8 (the low half of [`load_padded`], whose 128-bit
/// arithmetic folds away once truncated).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
#[inline(always)]
pub(crate) fn load_padded_word(bytes: &[u8]) -> u64 {
    load_padded(bytes) as u64
}

/// At most 8 bytes as one little-endian word, the last byte on top and
/// zeros below the first: [`load_padded_word`] byte-reversed, which is what
/// a plain load of 8 bytes gives, with no byte swap (wasm has none: an
/// `i64` swap there is a dozen instructions).
#[inline(always)]
pub(crate) fn load_word_on_top(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let le4 = |b: Option<&[u8; 4]>| u64::from(b.map_or(0, |b| u32::from_le_bytes(*b)));
    match *bytes {
        [] => 0,
        // Byte `p` goes to byte `8 - n + p`.
        [a, ..] if n < 4 => {
            let (mid, last) = (bytes[n / 2], bytes[n - 1]);
            u64::from(a) << (64 - 8 * n)
                | u64::from(mid) << (64 - 8 * (n - n / 2))
                | u64::from(last) << 56
        }
        _ if n < 8 => le4(bytes.last_chunk()) << 32 | le4(bytes.first_chunk()) << (64 - 8 * n),
        _ => bytes.last_chunk().map_or(0, |b| u64::from_le_bytes(*b)),
    }
}

/// At most 16 bytes as one big-endian number, zero-padded in front. The CRC
/// from state 0 of the padded block equals the CRC of the bytes, since
/// leading zeros leave a zero state untouched; more than 16 bytes read as
/// their last 16.
#[inline(always)]
pub(crate) fn load_padded(bytes: &[u8]) -> u128 {
    // Two overlapping loads cover any length; shared bytes land in the same
    // place in both, so or-ing them is exact.
    let n = bytes.len();
    match *bytes {
        [] => 0,
        [a, ..] if n < 4 => {
            let (mid, last) = (bytes[n / 2], bytes[n - 1]);
            u128::from(
                u32::from(a) << (8 * (n - 1))
                    | u32::from(mid) << (8 * (n - 1 - n / 2))
                    | u32::from(last),
            )
        }
        _ if n < 8 => {
            let head = read_be::<4>(bytes, 0);
            let tail = read_be::<4>(bytes, n - 4);
            u128::from(head << (8 * (n - 4)) | tail)
        }
        _ if n <= 16 => {
            let head = u128::from(read_be::<8>(bytes, 0));
            let tail = u128::from(read_be::<8>(bytes, n - 8));
            head << (8 * (n - 8)) | tail
        }
        _ => u128::from_be_bytes(*bytes.last_chunk().unwrap_or(&[0; 16])),
    }
}

/// `N` bytes at `at` as a big-endian number (`N` is 4 or 8). A slice too
/// short reads as zero rather than panicking; callers check lengths.
#[inline(always)]
fn read_be<const N: usize>(bytes: &[u8], at: usize) -> u64 {
    let Some(b) = bytes.get(at..at + N) else {
        return 0;
    };
    match N {
        4 => b.try_into().map_or(0, |w| u64::from(u32::from_be_bytes(w))),
        _ => b.try_into().map_or(0, u64::from_be_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_tests_are_exact() {
        for needle in [0u8, b'{', b'}', 0x7f, 0x80, 0xff] {
            for b in 0..=255u8 {
                for at in [0usize, 5, 7] {
                    let mut w = [b'a'; 8];
                    w[at] = b;
                    let expect = w.contains(&needle);
                    assert_eq!(word_has_byte(u64::from_le_bytes(w), needle), expect);
                }
            }
        }
    }

    #[test]
    fn find_byte_finds_the_first() {
        let hay: [u8; 40] = core::array::from_fn(|i| i as u8);
        for i in 0..40u8 {
            assert_eq!(find_byte(&hay, i), Some(usize::from(i)));
        }
        assert_eq!(find_byte(&hay, 200), None);
        assert_eq!(find_byte(b"a{b{c", b'{'), Some(1));
        assert_eq!(find_byte(b"", b'{'), None);
    }

    #[test]
    fn padded_loads() {
        let msg: [u8; 20] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xA5);
        for n in 0..=20 {
            let keep = n.min(16);
            let want = msg[n - keep..n]
                .iter()
                .fold(0u128, |a, &b| a << 8 | u128::from(b));
            assert_eq!(load_padded(&msg[..n]), want, "n {n}");
            assert_eq!(load_padded_word(&msg[..n]), want as u64, "n {n}");
            if n <= 8 {
                let on_top = msg[..n]
                    .iter()
                    .enumerate()
                    .fold(0u64, |a, (p, &b)| a | u64::from(b) << (8 * (8 - n + p)));
                assert_eq!(load_word_on_top(&msg[..n]), on_top, "n {n}");
                assert_eq!(on_top, (want as u64).swap_bytes(), "n {n}");
            }
        }
    }
}
