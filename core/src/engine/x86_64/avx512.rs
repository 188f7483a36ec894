//! x86_64 with AVX-512 (F and BW) and VPCLMULQDQ: carry-less multiplies on
//! 512-bit registers, four 16-byte lanes each (Intel Ice Lake and later
//! servers, AMD Zen 4 and 5). Short keys take the 128-bit register path,
//! built with VEX encodings (`pclmul::vex`); longer input is folded by
//! `fold.rs` on four zmm accumulators, 256 bytes a step, with three-way
//! xors in one instruction.

use core::arch::x86_64::{
    __m128i, __m256i, __m512i, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_xor_si256,
    _mm512_broadcast_i32x4, _mm512_castsi512_si256, _mm512_clmulepi64_epi128,
    _mm512_cmpeq_epi8_mask, _mm512_extracti64x4_epi64, _mm512_gf2p8affine_epi64_epi8,
    _mm512_inserti32x4, _mm512_loadu_si512, _mm512_min_epu8, _mm512_set1_epi64, _mm512_set1_epi8,
    _mm512_setzero_si512, _mm512_ternarylogic_epi64, _mm512_testn_epi8_mask, _mm512_xor_si512,
    _mm512_zextsi128_si512, _mm_gf2p8affine_epi64_epi8, _mm_loadu_si128, _mm_set1_epi64x,
    _mm_set_epi64x, _mm_shuffle_epi8, _mm_xor_si128,
};

use super::pclmul::{self, window, REVERSED};
use crate::engine::fold::{self, Lanes};
use crate::engine::generic::{self, Engine};

/// Proof that this CPU has AVX-512 F and BW, VPCLMULQDQ and GFNI, besides
/// PCLMULQDQ, SSSE3 and SSE2: only the dispatch makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512(());

impl Avx512 {
    /// # Safety
    /// The CPU has AVX-512 F and BW, VPCLMULQDQ, GFNI, PCLMULQDQ, SSSE3 and
    /// SSE2.
    pub(crate) const unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

impl pclmul::Wide for Avx512 {
    #[inline(always)]
    fn update_wide(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        // SAFETY: an `Avx512` exists only where its features were detected,
        // and they include the 256-bit tier's (AVX-512 F implies AVX2).
        unsafe {
            if bytes.len() < ZMM_MIN {
                fold::update_blocks::<__m256i>(crc, bytes, stop)
            } else {
                fold::update_blocks::<__m512i>(crc, bytes, stop)
            }
        }
    }
}

/// The CRC of the hashed part of a key longer than 64 bytes.
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
#[inline(never)]
pub(crate) fn long_key_root(key: &[u8]) -> u16 {
    // SAFETY: this function runs only where its features are.
    generic::long_key_crc(unsafe { Avx512::new_unchecked() }, key)
}

/// `Engine::update_blocks` compiled for this tier, for the tests.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
pub(crate) fn update_blocks_root(crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
    // SAFETY: this function runs only where its features are.
    unsafe { Avx512::new_unchecked() }.update_blocks(crc, bytes, stop)
}

crc_from_zero!(pclmul::plain_root, pclmul::Pclmul::SHORT_KEY);

/// The CRC of any bytes, continued from `crc`.
#[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
pub(crate) fn update_root(crc: u16, bytes: &[u8]) -> u16 {
    if crc == 0 && bytes.len() <= pclmul::Pclmul::SHORT_KEY {
        // This tier's features include the 128-bit tier's.
        return pclmul::plain_root(bytes);
    }
    // SAFETY: as above.
    generic::update_with(unsafe { Avx512::new_unchecked() }, crc, bytes)
}

/// Below this many bytes 256-bit registers are faster: a 512-bit multiply
/// has a longer latency, and four lanes take one more step to combine
/// (measured at 256 bytes: 20.6 ns on ymm against 28.7 ns on zmm).
const ZMM_MIN: usize = 512;

/// The GF2P8AFFINEQB matrix that reverses the bits of every byte (row `j`
/// picks input bit `j` for output bit `7 - j`).
const REVERSE_BITS: i64 = 0x8040_2010_0804_0201_u64 as i64;

/// Four lanes a register, four registers side by side: a 256-byte stride.
///
/// The lanes are bit-reflected: on Intel cores the carry-less multiplies
/// and every byte shuffle share one port (5), and reversing the bytes of
/// each 16-byte block took a third of it. Reversing the bits of each byte
/// instead (one GFNI affine transform, on port 0) leaves port 5 to the
/// multiplies; the keys are reflected to match, and the sum is turned back
/// once, at the end.
impl Lanes for __m512i {
    const LANES: usize = 4;
    const ACCUMULATORS: usize = 4;
    const REFLECTED: bool = true;

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn zero() -> Self {
        _mm512_setzero_si512()
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load(bytes: &[u8]) -> Self {
        // SAFETY: the caller guarantees 64 readable bytes; unaligned loads
        // are allowed.
        unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn load_partial(bytes: &[u8]) -> Self {
        // One to three whole blocks, each loaded on its own: nothing past
        // the slice is touched.
        let block = |i: usize| match bytes.get(16 * i..16 * i + 16) {
            // SAFETY: 16 readable bytes; unaligned loads are allowed.
            Some(b) => unsafe { _mm_loadu_si128(b.as_ptr().cast::<__m128i>()) },
            None => _mm_set_epi64x(0, 0),
        };
        let v = _mm512_zextsi128_si512(block(0));
        let v = _mm512_inserti32x4::<1>(v, block(1));
        _mm512_inserti32x4::<2>(v, block(2))
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat(byte: u8) -> Self {
        _mm512_set1_epi8(byte as i8)
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn any_equal(raw: &[Self], needle: Self) -> bool {
        raw.iter()
            .fold(0, |hits, &x| hits | _mm512_cmpeq_epi8_mask(x, needle))
            != 0
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reverse(raw: Self) -> Self {
        _mm512_gf2p8affine_epi64_epi8::<0>(raw, _mm512_set1_epi64(REVERSE_BITS))
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn xor(a: Self, b: Self) -> Self {
        _mm512_xor_si512(a, b)
    }

    /// On Intel cores the multiplies and every compare into a mask share
    /// port 5: a compare per register took four of its twelve
    /// instructions a stride. Marked, a stride takes one there (the marks
    /// ride in the bit reversal, three byte minimums merge the registers,
    /// one test finds a zero byte): 4 KiB keys 5-6% faster.
    const MARKS_BRACES: bool = true;

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reverse_marking_braces(raw: Self) -> Self {
        // The affine transform's constant is xored into every result byte.
        const BRACE: i32 = b'{'.reverse_bits() as i32;
        _mm512_gf2p8affine_epi64_epi8::<BRACE>(raw, _mm512_set1_epi64(REVERSE_BITS))
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn any_zero_byte(v: &[Self]) -> bool {
        let Some((&first, rest)) = v.split_first() else {
            return false;
        };
        let least = rest.iter().fold(first, |m, &x| _mm512_min_epu8(m, x));
        _mm512_testn_epi8_mask(least, least) != 0
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn fold(acc: Self, keys: Self, next: Self) -> Self {
        let lo = _mm512_clmulepi64_epi128(acc, keys, 0x00);
        let hi = _mm512_clmulepi64_epi128(acc, keys, 0x11);
        // 0x96: a ^ b ^ c in one instruction.
        _mm512_ternarylogic_epi64::<0x96>(lo, hi, next)
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn splat_keys(keys: [u64; 2]) -> Self {
        _mm512_broadcast_i32x4(_mm_set_epi64x(keys[1] as i64, keys[0] as i64))
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn lane_keys(keys: &[[u64; 2]]) -> Self {
        match keys.first_chunk::<4>() {
            // SAFETY: four key pairs are 64 readable bytes, lane 0 first.
            Some(pairs) => unsafe { _mm512_loadu_si512(pairs.as_ptr().cast()) },
            None => _mm512_setzero_si512(),
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn low_lane(value: u128) -> Self {
        let value = value.reverse_bits();
        _mm512_zextsi128_si512(_mm_set_epi64x((value >> 64) as i64, value as i64))
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,gfni,pclmulqdq,ssse3,sse2")]
    #[inline]
    unsafe fn reduce(v: Self) -> u16 {
        let halves = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
        let lanes = _mm_xor_si128(
            _mm256_castsi256_si128(halves),
            _mm256_extracti128_si256::<1>(halves),
        );
        // Back from reflected: the bits of each byte, then the bytes.
        let bits = _mm_gf2p8affine_epi64_epi8::<0>(lanes, _mm_set1_epi64x(REVERSE_BITS));
        pclmul::reduce80(_mm_shuffle_epi8(bits, window(&REVERSED, 0)))
    }
}
