//! aarch64 with PMULL (the `aes` target feature): 64-bit carry-less
//! multiplies on 128-bit NEON registers. Short keys are one block, reduced
//! by Barrett; longer input is folded by `fold.rs` on eight accumulators.
//! The algebra and constants are the x86_64 engines'.

use core::arch::aarch64::{
    uint64x2_t, vceqq_u8, vcombine_u64, vcreate_u64, vdupq_n_u8, veorq_u64, vextq_u8,
    vgetq_lane_u64, vld1q_u64, vld1q_u8, vmaxvq_u8, vmull_high_p64, vmull_p64, vorrq_u8,
    vreinterpretq_p64_u64, vreinterpretq_u64_p128, vreinterpretq_u64_u8, vreinterpretq_u8_u64,
    vrev64q_u8,
};

use super::fold::{self, Lanes};
use super::generic::{self, Engine, BLOCK};
use super::gf2::{BARRETT_MU, POLY, X80};

/// Proof that this CPU has PMULL (and NEON): only the dispatch makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pmull(());

impl Pmull {
    /// # Safety
    /// The CPU has NEON and PMULL (`aes`).
    pub(crate) const unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

impl Engine for Pmull {
    /// One block, as with the tables.
    const SHORT_KEY: usize = BLOCK;

    #[inline(always)]
    fn crc_of_block(self, block: u128, wide: bool) -> u16 {
        // SAFETY: a `Pmull` exists only where PMULL was detected.
        unsafe { barrett(block, wide) }
    }

    #[inline(always)]
    fn update_blocks(self, crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
        // SAFETY: as above.
        unsafe { fold::update_blocks::<uint64x2_t>(crc, bytes, stop) }
    }

    #[inline(always)]
    fn find_byte(self, hay: &[u8], needle: u8) -> Option<usize> {
        // SAFETY: as above (NEON is part of it).
        unsafe { find_byte(hay, needle) }
    }
}

/// Where `needle` first occurs in `hay`: 16 bytes a step, then byte by byte.
#[target_feature(enable = "neon")]
#[inline]
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    let splat = vdupq_n_u8(needle);
    let (blocks, tail) = hay.as_chunks::<16>();
    for (b, block) in blocks.iter().enumerate() {
        // SAFETY: `block` is 16 readable bytes; `ld1` has no alignment needs.
        let v = unsafe { vld1q_u8(block.as_ptr()) };
        if vmaxvq_u8(vceqq_u8(v, splat)) != 0 {
            return block.iter().position(|&x| x == needle).map(|p| 16 * b + p);
        }
    }
    let base = 16 * blocks.len();
    tail.iter().position(|&b| b == needle).map(|p| base + p)
}

/// The CRC of the hashed part of a key of at most 16 bytes.
#[target_feature(enable = "neon,aes")]
pub(crate) fn short_key_root(key: &[u8]) -> u16 {
    // SAFETY: this function runs only where its features are.
    generic::short_key_crc_in_block(unsafe { Pmull::new_unchecked() }, key)
}

/// The CRC of the hashed part of a longer key.
#[target_feature(enable = "neon,aes")]
#[inline(never)]
pub(crate) fn long_key_root(key: &[u8]) -> u16 {
    // SAFETY: as above.
    generic::long_key_crc(unsafe { Pmull::new_unchecked() }, key)
}

/// `Engine::update_blocks` compiled for this tier, for the tests.
#[cfg(test)]
#[target_feature(enable = "neon,aes")]
pub(crate) fn update_blocks_root(crc: u16, bytes: &[u8], stop: Option<u8>) -> (u16, usize) {
    // SAFETY: this function runs only where its features are.
    unsafe { Pmull::new_unchecked() }.update_blocks(crc, bytes, stop)
}

/// The CRC of any bytes, continued from `crc`.
#[target_feature(enable = "neon,aes")]
pub(crate) fn update_root(crc: u16, bytes: &[u8]) -> u16 {
    // SAFETY: as above.
    generic::update_with(unsafe { Pmull::new_unchecked() }, crc, bytes)
}

/// One NEON register: one lane. Eight accumulators cover PMULL's latency.
impl Lanes for uint64x2_t {
    const LANES: usize = 1;
    const ACCUMULATORS: usize = 8;
    const REFLECTED: bool = false;

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn zero() -> Self {
        vcombine_u64(vcreate_u64(0), vcreate_u64(0))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn load(bytes: &[u8]) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes; `ld1` has no
        // alignment needs.
        vreinterpretq_u64_u8(unsafe { vld1q_u8(bytes.as_ptr()) })
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn load_partial(_: &[u8]) -> Self {
        // A one-lane register has no partial load: `fold` never asks.
        vcombine_u64(vcreate_u64(0), vcreate_u64(0))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn splat(byte: u8) -> Self {
        vreinterpretq_u64_u8(vdupq_n_u8(byte))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn any_equal(raw: &[Self], needle: Self) -> bool {
        let needle = vreinterpretq_u8_u64(needle);
        let hits = raw.iter().fold(vdupq_n_u8(0), |acc, &x| {
            vorrq_u8(acc, vceqq_u8(vreinterpretq_u8_u64(x), needle))
        });
        vmaxvq_u8(hits) != 0
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn reverse(raw: Self) -> Self {
        let r = vrev64q_u8(vreinterpretq_u8_u64(raw));
        vreinterpretq_u64_u8(vextq_u8::<8>(r, r))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn xor(a: Self, b: Self) -> Self {
        veorq_u64(a, b)
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn fold(acc: Self, keys: Self, next: Self) -> Self {
        let lo = vmull_p64(vgetq_lane_u64::<0>(acc), vgetq_lane_u64::<0>(keys));
        let hi = vmull_high_p64(vreinterpretq_p64_u64(acc), vreinterpretq_p64_u64(keys));
        let both = veorq_u64(vreinterpretq_u64_p128(lo), vreinterpretq_u64_p128(hi));
        veorq_u64(both, next)
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn splat_keys(keys: [u64; 2]) -> Self {
        vcombine_u64(vcreate_u64(keys[0]), vcreate_u64(keys[1]))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn lane_keys(keys: &[[u64; 2]]) -> Self {
        match keys.first() {
            // SAFETY: one key pair is two readable u64s, low first.
            Some(pair) => unsafe { vld1q_u64(pair.as_ptr()) },
            None => vcombine_u64(vcreate_u64(0), vcreate_u64(0)),
        }
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn low_lane(value: u128) -> Self {
        vcombine_u64(vcreate_u64(value as u64), vcreate_u64((value >> 64) as u64))
    }

    #[target_feature(enable = "neon,aes")]
    #[inline]
    unsafe fn reduce(v: Self) -> u16 {
        let value = u128::from(vgetq_lane_u64::<0>(v)) | u128::from(vgetq_lane_u64::<1>(v)) << 64;
        reduce80(value)
    }
}

/// `v mod P` for `v` of degree below 80: Barrett's two multiplies.
#[target_feature(enable = "neon,aes")]
#[inline]
fn reduce80(v: u128) -> u16 {
    let quot_in = (v >> 16) as u64;
    let q = (vmull_p64(quot_in, BARRETT_MU) >> 64) as u64 ^ quot_in;
    v as u16 ^ vmull_p64(q, u64::from(POLY)) as u16
}

/// `(v * x^16) mod P` for a 128-bit `v` (only its low half when `!wide`):
/// the x86_64 engines' Barrett reduction, step for step.
#[target_feature(enable = "neon,aes")]
#[inline]
fn barrett(v: u128, wide: bool) -> u16 {
    let (lo, hi) = (v as u64, (v >> 64) as u64);
    let (quot_in, low16) = if wide {
        let b = vmull_p64(hi, X80);
        (((b >> 16) as u64) ^ lo, b as u16)
    } else {
        (lo, 0)
    };
    let q = (vmull_p64(quot_in, BARRETT_MU) >> 64) as u64 ^ quot_in;
    low16 ^ vmull_p64(q, u64::from(POLY)) as u16
}
