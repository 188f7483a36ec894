//! Carry-less folding, written once over [`Lanes`]: a register of one, two
//! or four 128-bit lanes (PCLMULQDQ on xmm, VPCLMULQDQ on ymm or zmm, PMULL
//! on aarch64). Each tier's file supplies the register operations; this
//! file decides which block goes where.
//!
//! The message is a polynomial whose first byte holds the top coefficients.
//! Cut into 16-byte blocks `b_0 .. b_{m-1}`, its CRC from state 0 is
//! `(sum of b_i * x^(128 (m-1-i))) * x^16 mod P`. Two ways to build that
//! sum, both with independent multiplies only:
//!
//! - **Direct.** Up to [`MAX_DISTANCE`] blocks: each block is multiplied by
//!   the constant that moves it to the end (`x^(128 d) mod P`, `d` blocks
//!   away), all at once, and the products are xored. No multiply waits for
//!   another.
//! - **Lanes.** Longer: `ACCUMULATORS` registers of lanes take a stride of
//!   consecutive blocks at a time, each lane folding its own chain (`acc *
//!   x^(128 stride) + next`); the chains are independent, so the multiplier
//!   stays busy. What is left after the last whole stride is then moved to
//!   the end directly, lanes included.
//!
//! Products of a 64-bit half and a 16-bit constant have degree below 80,
//! so nothing is reduced until one Barrett step at the very end.

use core::mem::MaybeUninit;

use super::gf2::{fold_keys, mul_mod, solve_mul, x_pow_mod, X_INVERSE};
use super::swar::{byte_hits, load_padded};

/// A register of `LANES` 128-bit lanes and the carry-less operations on it.
///
/// # Safety
/// Every method requires the CPU features of the implementing tier, which
/// the caller proves by holding that tier's token; methods that read bytes
/// say how many they read.
pub(crate) trait Lanes: Copy {
    /// 128-bit lanes per register.
    const LANES: usize;
    /// Registers the main loop keeps folding side by side: enough
    /// independent chains to cover the multiplier's latency.
    const ACCUMULATORS: usize;
    /// Whether lanes hold their polynomials bit-reflected (bit `i` the
    /// coefficient of `x^(127-i)`), which [`Lanes::reverse`] produces by
    /// reversing the bits of each byte instead of the bytes of each lane.
    /// The keys then come reflected too ([`reflect_keys`]).
    const REFLECTED: bool;

    /// All zeros.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn zero() -> Self;

    /// `16 * LANES` raw message bytes from the front of `bytes`.
    ///
    /// # Safety
    /// The tier's CPU features, and `bytes.len() >= 16 * LANES`.
    unsafe fn load(bytes: &[u8]) -> Self;

    /// The whole 16-byte blocks of `bytes` (fewer than `LANES`, at least
    /// one) in the low lanes, raw; zeros above.
    ///
    /// # Safety
    /// The tier's CPU features, and `16 <= bytes.len() < 16 * LANES`.
    unsafe fn load_partial(bytes: &[u8]) -> Self;

    /// `byte` in every byte.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn splat(byte: u8) -> Self;

    /// Whether any byte of any of `raw` equals the same byte of `needle`.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn any_equal(raw: &[Self], needle: Self) -> bool;

    /// Each lane's bytes reversed, so that its first message byte is on top
    /// (or, when `REFLECTED`, the bits of each byte reversed: the lane's
    /// polynomial bit-reflected).
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn reverse(raw: Self) -> Self;

    /// `a ^ b`.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn xor(a: Self, b: Self) -> Self;

    /// Whether the lane path looks for a `{` in each stride as
    /// [`Lanes::reverse_marking_braces`] leaves it (where that is one
    /// instruction and a zero-byte test is cheaper than a compare per
    /// register), rather than in the raw bytes.
    const MARKS_BRACES: bool = false;

    /// [`Lanes::reverse`], then every byte xored with `{` as `reverse`
    /// leaves it: a `{` becomes a zero byte.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn reverse_marking_braces(raw: Self) -> Self {
        let brace = if Self::REFLECTED {
            b'{'.reverse_bits()
        } else {
            b'{'
        };
        // SAFETY: the tier's features are the caller's.
        unsafe { Self::xor(Self::reverse(raw), Self::splat(brace)) }
    }

    /// Whether any byte of any of `v` is zero.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn any_zero_byte(v: &[Self]) -> bool {
        // SAFETY: the tier's features are the caller's.
        unsafe { Self::any_equal(v, Self::zero()) }
    }

    /// Per lane: `acc.lo * keys.lo ^ acc.hi * keys.hi ^ next`, carry-less.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn fold(acc: Self, keys: Self, next: Self) -> Self;

    /// The same key pair in every lane.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn splat_keys(keys: [u64; 2]) -> Self;

    /// `keys[l]` in lane `l`.
    ///
    /// # Safety
    /// The tier's CPU features, and `keys.len() >= LANES`.
    unsafe fn lane_keys(keys: &[[u64; 2]]) -> Self;

    /// A polynomial of degree below 128 in lane 0 (reflected when
    /// `REFLECTED`), zeros above.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn low_lane(value: u128) -> Self;

    /// The xor of the lanes, a polynomial of degree below 80, reduced
    /// modulo `P`: a CRC.
    ///
    /// # Safety
    /// The tier's CPU features.
    unsafe fn reduce(v: Self) -> u16;
}

/// How many blocks apart a block may be moved in one multiply. The direct
/// path takes regions up to this many blocks; the lane path leaves at most
/// this many (lanes included) for its final move. Two strides of the
/// widest tier: four registers of four lanes.
pub(crate) const MAX_DISTANCE: usize = 32;

/// Key pairs for the final move, in descending distance (`MAX_DISTANCE -
/// 1` blocks first, then down to 0), then three zero pairs: a register
/// whose lane 0 is `d` blocks from the end loads its keys from one place
/// (`MAX_DISTANCE - 1 - d`), and lanes past the end (zeros in a partial
/// register) read zero keys instead of running off the table. Each pair
/// also multiplies by `x^16`, the last step of a CRC, so that the sum of
/// the products (degree below 80) only needs reducing.
static TO_THE_END: [[u64; 2]; MAX_DISTANCE + 3] = end_table(false);
/// [`TO_THE_END`] for reflected lanes.
static TO_THE_END_REFLECTED: [[u64; 2]; MAX_DISTANCE + 3] = end_table(true);

const fn end_table(reflected: bool) -> [[u64; 2]; MAX_DISTANCE + 3] {
    let mut t = [[0; 2]; MAX_DISTANCE + 3];
    let mut i = 0;
    while i < MAX_DISTANCE {
        let keys = fold_keys(128 * (MAX_DISTANCE - 1 - i) as u32 + 16);
        t[i] = if reflected { reflect_keys(keys) } else { keys };
        i += 1;
    }
    t
}

/// Fold keys for reflected lanes. A reflected lane `a` holds `rev(A_hi)` in
/// its low half and `rev(A_lo)` in its high half, and a carry-less product
/// of reflected operands comes out reflected but one bit short:
/// `rev128(X * Y) = (rev64(X) * rev64(Y)) << 1`. Multiplying by `K / x`
/// instead of `K` takes that bit back, so the keys are, low half first,
/// `[rev64(K_hi / x), rev64(K_lo / x)]` (division by `x` modulo `P`: `P`
/// has a constant term, so `x` is invertible).
pub(crate) const fn reflect_keys(keys: [u64; 2]) -> [u64; 2] {
    [
        (mul_mod(keys[1] as u16, X_INVERSE) as u64).reverse_bits(),
        (mul_mod(keys[0] as u16, X_INVERSE) as u64).reverse_bits(),
    ]
}

/// The keys that move a block `d` blocks further, for `V`'s lanes.
const fn move_keys<V: Lanes>(d: u32) -> [u64; 2] {
    if V::REFLECTED {
        reflect_keys(fold_keys(128 * d))
    } else {
        fold_keys(128 * d)
    }
}

/// The plain keys that move a block `d < MAX_DISTANCE` blocks to the end
/// of a message and multiply it by `x^16`: the products of a short key's
/// blocks by these sum to a value that only needs reducing.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(crate) fn end_keys(d: usize) -> [u64; 2] {
    TO_THE_END
        .get((MAX_DISTANCE - 1).wrapping_sub(d))
        .copied()
        .unwrap_or([0; 2])
}

/// The keys for a register whose lane 0 is `MAX_DISTANCE - 1 - at` blocks
/// from the end (lane `l` reading pair `at + l`).
///
/// # Safety
/// The tier's CPU features.
#[inline(always)]
unsafe fn keys_at<V: Lanes>(at: usize) -> V {
    let table = if V::REFLECTED {
        &TO_THE_END_REFLECTED
    } else {
        &TO_THE_END
    };
    match table.get(at..at + V::LANES) {
        // SAFETY: the tier's features are the caller's; the slice holds
        // `LANES` pairs.
        Some(keys) => unsafe { V::lane_keys(keys) },
        // Unreachable for registers within `MAX_DISTANCE` blocks of the end
        // and `LANES <= 4`.
        // SAFETY: the tier's features are the caller's.
        None => unsafe { V::zero() },
    }
}

/// What the accumulators of `V`'s lane path carry beyond the true sum while
/// it folds blocks marked by [`Lanes::reverse_marking_braces`], in every
/// lane (reflected where `V`'s lanes are).
///
/// Each marked block is its message block plus `C`, 16 `{` bytes. Started
/// at the true sum plus `D`, a lane folds `(sum + D) * X + block + C`, `X`
/// being `x^(128 stride)`, which is the true next sum plus `D` again when
/// `D * (X + 1) = C mod P`. So the marks cost nothing per stride: `D` is
/// added once before the loop and taken off once after it. (`X + 1` shares
/// the factor `x + 1` with `P`; `C`, 96 set bits, is a multiple of it, so
/// `D` exists.)
const fn brace_bias<V: Lanes>() -> u128 {
    let x = x_pow_mod(128 * (V::ACCUMULATORS * V::LANES) as u32);
    let (x8, mut c, mut i) = (x_pow_mod(8), 0u16, 0);
    while i < 16 {
        c = mul_mod(c, x8) ^ b'{' as u16;
        i += 1;
    }
    let Some(d) = solve_mul(x ^ 1, c) else {
        panic!("no bias for this stride");
    };
    if V::REFLECTED {
        (d as u128).reverse_bits()
    } else {
        d as u128
    }
}

/// The shortest region whose lane path marks braces, where the tier does.
const MARKS_FROM: usize = 2048;

/// Accumulator registers a tier may ask for.
const MAX_ACCUMULATORS: usize = 8;

/// Registers the direct path may hold: 16 one-lane registers cover the
/// 15 blocks a one-lane tier leaves to it (its lane path starts at 16);
/// wider tiers need fewer.
const MAX_TAIL: usize = 16;

/// The CRC from state 0 of `prefix` (a block of at most 16 bytes, the
/// message's first, zero-padded in front) followed by the whole 16-byte
/// blocks at the front of `region` that hold no `stop`; and how many bytes
/// of `region` that was. It may stop early (before a register that may hold
/// `stop`, or before the blocks past the direct path's reach); the caller
/// continues from there.
///
/// # Safety
/// The CPU features of `V`'s tier.
#[inline(always)]
pub(crate) unsafe fn fold<V: Lanes>(prefix: u128, region: &[u8], stop: Option<u8>) -> (u16, usize) {
    // SAFETY: the tier's features are the caller's (every `V::` call needs
    // them), and every load reads a slice at least as long as the load:
    // `&region[a..b]` and the chunk lengths are checked before each load.
    unsafe {
        const { assert!(V::ACCUMULATORS <= MAX_ACCUMULATORS && V::LANES <= 4) };
        let reg = 16 * V::LANES;
        let stride = reg * V::ACCUMULATORS;
        let stride_blocks = stride / 16;
        // The direct path's reach must cover what the lane path leaves: its
        // lanes and less than a stride after them.
        const { assert!(2 * 16 * V::ACCUMULATORS * V::LANES / 16 <= MAX_DISTANCE) };
        let blocks = region.len() / 16;
        let needle = V::splat(stop.unwrap_or(0));
        let stopping = stop.is_some();
        let mut acc = [(V::zero()); MAX_ACCUMULATORS];
        let acc = &mut acc[..V::ACCUMULATORS];
        let mut lanes = false;
        let mut pos = 0;

        // The lane path, for regions past the direct path's reach.
        if blocks >= MAX_DISTANCE.min(2 * stride_blocks) {
            for (r, lane) in acc.iter_mut().enumerate() {
                *lane = V::load(&region[r * reg..]);
            }
            if !(stopping && (V::any_equal(acc, needle))) {
                lanes = true;
                // Adding and taking off the bias costs about two strides'
                // worth of what the marks save in each (measured on the
                // 512-bit tier: 1 KiB 5% slower with marks, 4 KiB 6% faster).
                let marking = V::MARKS_BRACES && stop == Some(b'{') && region.len() >= MARKS_FROM;
                let bias = const { brace_bias::<V>() };
                // The same 128 bits in every lane.
                let bias = V::splat_keys([bias as u64, (bias >> 64) as u64]);
                for lane in acc.iter_mut() {
                    *lane = V::reverse(*lane);
                    if marking {
                        *lane = V::xor(*lane, bias);
                    }
                }
                // The prefix is the block before lane 0's first: fold it in
                // (none where the length is whole blocks).
                if prefix != 0 {
                    let one_block = V::splat_keys(const { move_keys::<V>(1) });
                    acc[0] = V::fold(V::low_lane(prefix), one_block, acc[0]);
                }
                // Computed at compile time: `x_pow_mod` is a loop of `d` steps.
                let step =
                    V::splat_keys(const { move_keys::<V>((V::ACCUMULATORS * V::LANES) as u32) });
                let body = &region[stride..];
                let folded = if marking {
                    fold_strides::<V, true>(acc, body, step, None)
                } else if stopping {
                    fold_strides::<V, false>(acc, body, step, Some(needle))
                } else {
                    fold_strides::<V, false>(acc, body, step, None)
                };
                pos = stride + folded;
                if marking {
                    for lane in acc.iter_mut() {
                        *lane = V::xor(*lane, bias);
                    }
                }
            }
        }

        // The blocks left, up to the direct path's reach: lane 0 of the lanes
        // (or the prefix, one block before block 0) must stay within
        // `MAX_DISTANCE - 1` blocks of the end. They are loaded once, checked
        // for the stop byte with one branch, and kept in registers.
        let first = if lanes { (pos - stride) / 16 } else { 0 };
        let reach = if lanes {
            first + MAX_DISTANCE
        } else {
            MAX_DISTANCE - 1
        };
        let tail_start = pos;
        let end = (blocks.min(reach) * 16).max(tail_start);
        // Left uninitialised: zeroing all of it cost every long key 16
        // stores, 1 KiB on the 512-bit tier (measured: 256-byte and 1-KiB
        // keys on the 256-bit tier 5% faster without).
        let mut tail = [const { MaybeUninit::<V>::uninit() }; MAX_TAIL];
        let mut count = 0;
        let mut at = tail_start;
        while at < end && count < MAX_TAIL {
            let chunk = &region[at..end.min(at + reg)];
            tail[count] = MaybeUninit::new(if chunk.len() == reg {
                V::load(chunk)
            } else {
                V::load_partial(chunk)
            });
            count += 1;
            at += chunk.len();
        }
        // (Within the function's `unsafe`:) `MaybeUninit<V>` has `V`'s
        // layout, and the first `count` registers were just written.
        let tail = core::slice::from_raw_parts(tail.as_ptr().cast::<V>(), count);
        let mut end = at;
        if stopping && (V::any_equal(tail, needle)) {
            // Rare: find the first register that may hold the stop byte.
            let clean = tail
                .iter()
                .take_while(|&&raw| !(V::any_equal(&[raw], needle)))
                .count();
            count = clean;
            end = tail_start + clean * reg;
        }

        // Every lane moves to the end in one multiply; none waits for another.
        // The registers (the lanes, then the tail) hold consecutive blocks,
        // so their keys are consecutive in the table: the first register's
        // lane 0 is `end / 16 - base` blocks before the end.
        let base = if lanes { first } else { 0 };
        let mut at = (MAX_DISTANCE + base).wrapping_sub(end / 16);
        let mut sum = V::zero();
        if lanes {
            for &lane in acc.iter() {
                sum = V::fold(lane, keys_at::<V>(at), sum);
                at += V::LANES;
            }
        } else if prefix != 0 {
            // One block before block 0.
            sum = V::fold(V::low_lane(prefix), keys_at::<V>(at.wrapping_sub(1)), sum);
        }
        for &raw in &tail[..count] {
            sum = V::fold(V::reverse(raw), keys_at::<V>(at), sum);
            at += V::LANES;
        }
        ((V::reduce(sum)), end)
    }
}

/// Folds the whole strides at the front of `body` into `acc` (`step` moves
/// a lane one stride on) until a stride may hold the stop byte, and says
/// how many bytes it folded. `MARKED`: the blocks are marked
/// ([`Lanes::reverse_marking_braces`]) and searched for a `{` that way, two
/// strides at a time: one zero-byte test and one branch for both, half a
/// port-5 instruction a stride less (measured on the 512-bit tier: 4 KiB
/// keys 1.4% faster); otherwise they are searched raw for `needle`, if
/// any, a stride at a time.
///
/// # Safety
/// The CPU features of `V`'s tier.
#[inline(always)]
unsafe fn fold_strides<V: Lanes, const MARKED: bool>(
    acc: &mut [V],
    body: &[u8],
    step: V,
    needle: Option<V>,
) -> usize {
    // SAFETY: the tier's features are the caller's.
    unsafe {
        let mut done = 0;
        // (Pairs where the registers fit: on every marking tier.)
        if MARKED && 2 * V::ACCUMULATORS <= MAX_ACCUMULATORS {
            let (paired, stopped) = fold_groups::<V, MARKED, 2>(acc, body, step, needle);
            if stopped {
                return paired;
            }
            done = paired;
        }
        done + fold_groups::<V, MARKED, 1>(acc, &body[done..], step, needle).0
    }
}

/// [`fold_strides`] `STRIDES` strides a test: folds each whole group of
/// them at the front of `body` until one may hold the stop byte; says how
/// many bytes it folded and whether it stopped there. Each form is its own
/// loop, testing only what it needs, with no bounds check in a group.
///
/// # Safety
/// The CPU features of `V`'s tier, and `STRIDES * V::ACCUMULATORS <=
/// MAX_ACCUMULATORS`.
#[inline(always)]
unsafe fn fold_groups<V: Lanes, const MARKED: bool, const STRIDES: usize>(
    acc: &mut [V],
    body: &[u8],
    step: V,
    needle: Option<V>,
) -> (usize, bool) {
    let reg = 16 * V::LANES;
    let group = STRIDES * reg * V::ACCUMULATORS;
    let mut done = 0;
    // SAFETY: the tier's features are the caller's; each chunk holds as
    // many registers of `reg` bytes as are loaded from it.
    unsafe {
        for chunk in body.chunks_exact(group) {
            let mut raw = [(V::zero()); MAX_ACCUMULATORS];
            let raw = &mut raw[..STRIDES * V::ACCUMULATORS];
            for (r, v) in raw.iter_mut().enumerate() {
                *v = V::load(&chunk[r * reg..]);
            }
            if MARKED {
                for v in raw.iter_mut() {
                    *v = V::reverse_marking_braces(*v);
                }
                if V::any_zero_byte(raw) {
                    return (done, true);
                }
            } else {
                if let Some(needle) = needle {
                    if V::any_equal(raw, needle) {
                        return (done, true);
                    }
                }
                for v in raw.iter_mut() {
                    *v = V::reverse(*v);
                }
            }
            for stride in raw.chunks_exact(V::ACCUMULATORS) {
                for (lane, &v) in acc.iter_mut().zip(stride) {
                    *lane = V::fold(*lane, step, v);
                }
            }
            done += group;
        }
        (done, false)
    }
}

/// [`Engine::update_blocks`](super::generic::Engine::update_blocks) on a
/// carry-less tier: from state 0 the first `len % 16` bytes are padded in
/// front, so that the rest is whole blocks; from any other state the first
/// block carries the state over its first two bytes.
///
/// # Safety
/// The CPU features of `V`'s tier.
#[inline(always)]
pub(crate) unsafe fn update_blocks<V: Lanes>(
    crc: u16,
    bytes: &[u8],
    stop: Option<u8>,
) -> (u16, usize) {
    if bytes.len() < 16 {
        return (crc, 0);
    }
    // A stop in the first block (the usual `{user1000}...` key) ends the
    // pass before any register is loaded.
    if let Some(stop) = stop {
        let first: [u8; 16] = bytes[..16].try_into().unwrap_or([0; 16]);
        let word = |i: usize| u64::from_ne_bytes(first[i..i + 8].try_into().unwrap_or([0; 8]));
        if byte_hits(word(0), stop) | byte_hits(word(8), stop) != 0 {
            return (crc, 0);
        }
    }
    // The head is within the first block, just searched.
    let head = if crc == 0 { bytes.len() % 16 } else { 16 };
    let (first, region) = bytes.split_at(head);
    let prefix = load_padded(first) ^ u128::from(crc) << 112;
    // SAFETY: the tier's features are the caller's.
    let (crc, used) = unsafe { fold::<V>(prefix, region, stop) };
    (crc, head + used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gf2::x_pow_mod;

    #[test]
    fn the_tables_move_blocks_to_the_end_and_multiply_by_x16() {
        for d in 0..MAX_DISTANCE {
            let keys = TO_THE_END[MAX_DISTANCE - 1 - d];
            assert_eq!(keys[0], u64::from(x_pow_mod(128 * d as u32 + 16)));
            assert_eq!(keys[1], u64::from(x_pow_mod(128 * d as u32 + 80)));
            assert_eq!(
                TO_THE_END_REFLECTED[MAX_DISTANCE - 1 - d],
                reflect_keys(keys)
            );
        }
        assert_eq!(TO_THE_END[MAX_DISTANCE..], [[0; 2]; 3]);
        assert_eq!(TO_THE_END_REFLECTED[MAX_DISTANCE..], [[0; 2]; 3]);
    }

    /// Every tier's marks, its own or the default ones: a `{` anywhere in
    /// a register, and only a `{`, leaves a zero byte.
    #[test]
    fn marks_turn_braces_and_only_braces_into_zero_bytes() {
        /// Whether `raw`'s first registers, marked, hold a zero byte.
        fn marked_zero<V: Lanes>(raws: &[[u8; 64]]) -> bool {
            // SAFETY: the caller checked the tier; each `raw` is 64 bytes.
            unsafe {
                let mut marked = [V::zero(); 2];
                for (m, raw) in marked.iter_mut().zip(raws) {
                    *m = V::reverse_marking_braces(V::load(raw));
                }
                V::any_zero_byte(&marked[..raws.len()])
            }
        }
        fn check<V: Lanes>() {
            let width = 16 * V::LANES;
            // Every byte value but `{` somewhere (a `|` in its place).
            for start in (0..=255usize).step_by(width) {
                let raw: [u8; 64] = core::array::from_fn(|i| match ((start + i) % 256) as u8 {
                    b'{' => b'|',
                    b => b,
                });
                assert!(!marked_zero::<V>(&[raw]), "from {start}");
            }
            let clean = [b'a'; 64];
            assert!(!marked_zero::<V>(&[clean, clean]));
            for at in 0..width {
                let mut raw = clean;
                raw[at] = b'{';
                assert!(marked_zero::<V>(&[clean, raw]), "at {at}");
                assert!(marked_zero::<V>(&[raw, clean]), "at {at}");
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            use crate::CrcEngine;
            use core::arch::x86_64::{__m128i, __m256i, __m512i};
            if CrcEngine::Pclmulqdq.is_supported() {
                check::<__m128i>();
            }
            if CrcEngine::Vpclmulqdq256.is_supported() {
                check::<__m256i>();
            }
            if CrcEngine::Vpclmulqdq512.is_supported() {
                check::<__m512i>();
            }
        }
        #[cfg(target_arch = "aarch64")]
        if crate::CrcEngine::Pmull.is_supported() {
            check::<core::arch::aarch64::uint64x2_t>();
        }
    }

    /// `clmul(rev64(a), rev64(k / x))` is `rev128(a * k)`: reflected keys
    /// fold reflected lanes exactly as plain keys fold plain ones.
    #[test]
    fn reflected_keys_fold_reflected_lanes() {
        fn clmul(a: u64, b: u64) -> u128 {
            (0..64)
                .filter(|i| b >> i & 1 == 1)
                .fold(0, |p, i| p ^ u128::from(a) << i)
        }
        let lane: u128 = 0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210;
        for d in [1u32, 5, 16, 31] {
            let keys = fold_keys(128 * d);
            let plain = clmul(lane as u64, keys[0]) ^ clmul((lane >> 64) as u64, keys[1]);
            let r = lane.reverse_bits();
            let rk = reflect_keys(keys);
            let reflected = clmul(r as u64, rk[0]) ^ clmul((r >> 64) as u64, rk[1]);
            // Not equal as numbers (K / x differs from K), but equal modulo P
            // once each is brought back to the plain domain.
            let back = reflected.reverse_bits();
            assert_eq!(reduce(back), reduce(plain), "d {d}");
        }
        fn reduce(v: u128) -> u16 {
            (0..128).rev().fold(0u16, |r, i| {
                let top = r & 0x8000 != 0;
                let r = r << 1 | (v >> i & 1) as u16;
                if top {
                    r ^ crate::engine::gf2::POLY
                } else {
                    r
                }
            })
        }
    }
}
