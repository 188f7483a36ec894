//! x86_64 with AVX2 and VPCLMULQDQ: carry-less multiplies on 256-bit
//! registers, two 16-byte lanes each (AMD Zen 3 and 4, Intel Alder Lake and
//! later cores without AVX-512). Short keys take the 128-bit register path,
//! built with VEX encodings (`pclmul::vex`); longer input is folded by
//! `fold.rs` on four ymm accumulators.

use core::arch::x86_64::{
    __m256i, _mm256_broadcastsi128_si256, _mm256_castsi256_si128, _mm256_clmulepi64_epi128,
    _mm256_cmpeq_epi8, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_movemask_epi8,
    _mm256_or_si256, _mm256_set1_epi8, _mm256_set_epi64x, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_xor_si256, _mm256_zextsi128_si256, _mm_loadu_si128, _mm_xor_si128,
};

use super::pclmul::{self, window, REVERSED};
use crate::engine::fold::{self, Lanes};
use crate::engine::generic::{self, Engine};

/// Proof that this CPU has AVX2 and VPCLMULQDQ, besides PCLMULQDQ, SSSE3
/// and SSE2: only the dispatch makes one, after detecting them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vpclmul256(());

impl Vpclmul256 {
    /// # Safety
    /// The CPU has AVX2, VPCLMULQDQ, PCLMULQDQ, SSSE3 and SSE2.
    pub(crate) const unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

impl pclmul::Wide for Vpclmul256 {
    #[inline(always)]
    fn update_wide(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        // SAFETY: a `Vpclmul256` exists only where its features were detected.
        unsafe { fold::update_blocks::<__m256i>(crc, bytes, stop) }
    }
}

/// The CRC of the hashed part of a key longer than 64 bytes.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
#[inline(never)]
pub(crate) fn long_key_root(key: &[u8]) -> u16 {
    // SAFETY: this function runs only where its features are.
    generic::long_key_crc(unsafe { Vpclmul256::new_unchecked() }, key)
}

/// `Engine::update_blocks` compiled for this tier, for the tests.
#[cfg(test)]
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
pub(crate) fn update_blocks_root(crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
    // SAFETY: this function runs only where its features are.
    unsafe { Vpclmul256::new_unchecked() }.update_blocks(crc, bytes, stop)
}

crc_from_zero!(pclmul::plain_root, pclmul::Pclmul::SHORT_KEY);

/// The CRC of any bytes, continued from `crc`.
#[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
pub(crate) fn update_root(crc: u16, bytes: &[u8]) -> u16 {
    if crc == 0 && bytes.len() <= pclmul::Pclmul::SHORT_KEY {
        // This tier's features include the 128-bit tier's.
        return pclmul::plain_root(bytes);
    }
    // SAFETY: as above.
    generic::update_with(unsafe { Vpclmul256::new_unchecked() }, crc, bytes)
}

/// Two lanes a register, four registers side by side: a 128-byte stride.
impl Lanes for __m256i {
    const LANES: usize = 2;
    const ACCUMULATORS: usize = 4;
    const REFLECTED: bool = false;

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn zero() -> Self {
        _mm256_setzero_si256()
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load(bytes: &[u8]) -> Self {
        // SAFETY: the caller guarantees 32 readable bytes; unaligned loads
        // are allowed.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load_partial(bytes: &[u8]) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes (one block, the
        // only partial register of two lanes).
        let block = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
        _mm256_zextsi128_si256(block)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat(byte: u8) -> Self {
        _mm256_set1_epi8(byte as i8)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn any_equal(raw: &[Self], needle: Self) -> bool {
        let hits = raw.iter().fold(_mm256_setzero_si256(), |acc, &x| {
            _mm256_or_si256(acc, _mm256_cmpeq_epi8(x, needle))
        });
        _mm256_movemask_epi8(hits) != 0
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reverse(raw: Self) -> Self {
        _mm256_shuffle_epi8(raw, _mm256_broadcastsi128_si256(window(&REVERSED, 0)))
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn xor(a: Self, b: Self) -> Self {
        _mm256_xor_si256(a, b)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn fold(acc: Self, keys: Self, next: Self) -> Self {
        let lo = _mm256_clmulepi64_epi128(acc, keys, 0x00);
        let hi = _mm256_clmulepi64_epi128(acc, keys, 0x11);
        _mm256_xor_si256(_mm256_xor_si256(lo, hi), next)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat_keys(keys: [u64; 2]) -> Self {
        let [lo, hi] = keys.map(|k| k as i64);
        _mm256_set_epi64x(hi, lo, hi, lo)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn lane_keys(keys: &[[u64; 2]]) -> Self {
        match keys.first_chunk::<2>() {
            // SAFETY: two key pairs are 32 readable bytes, lane 0 first.
            Some(pairs) => unsafe { _mm256_loadu_si256(pairs.as_ptr().cast()) },
            None => _mm256_setzero_si256(),
        }
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn low_lane(value: u128) -> Self {
        _mm256_set_epi64x(0, 0, (value >> 64) as i64, value as i64)
    }

    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reduce(v: Self) -> u16 {
        let lanes = _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        pclmul::reduce80(lanes)
    }
}
