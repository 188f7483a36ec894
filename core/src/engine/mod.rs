//! The CRC-16 engines under the public placement functions, and the one
//! place that picks among them.
//!
//! Every import in here points down, and nothing here imports the public
//! files above (`crc16.rs`, `placement.rs`, `utf16.rs`):
//!
//! ```text
//! mod.rs ─── dispatch: which engine runs, on what CPU
//!  ├─ x86_64/avx512.rs ─┐  (512-bit VPCLMULQDQ)
//!  ├─ x86_64/vpclmul256.rs ─┤  (256-bit VPCLMULQDQ, AVX2)
//!  │                    └─ x86_64/pclmul.rs  (128-bit; short keys in registers for all three)
//!  ├─ aarch64.rs           (PMULL)
//!  ├─ portable.rs          (slicing-by-16 tables)
//!  │   └─ x86_64/sse2.rs   (x86_64's baseline: brace masks and byte search, for all tiers)
//!  └─ below them all: fold.rs (carry-less folding over any register width),
//!     generic.rs (the key algorithms over any engine), tag.rs (the hash-tag
//!     rule and its fast variants), swar.rs, gf2.rs (the polynomial)
//! ```
//!
//! The engine is detected once (with `std`, at run time; without it, from
//! the target features at compile time) and cached in one atomic byte.
//! Setting `ZARIS_CRC_ENGINE` when building (`portable`, `pclmulqdq`,
//! `vpclmulqdq256`, `vpclmulqdq512`, `pmull`) caps the choice at that engine,
//! so that one machine runs its whole test suite on every tier it has.
#![allow(unsafe_code)]

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod fold;
mod generic;
mod gf2;
mod portable;
mod swar;
pub(crate) mod tag;
#[cfg(target_arch = "x86_64")]
mod x86_64;

use core::fmt;
#[cfg(feature = "std")]
use core::sync::atomic::{AtomicU8, Ordering};

#[cfg(not(target_arch = "x86_64"))]
use generic::Engine as _;

pub(crate) use gf2::crc_bitwise;
pub(crate) use portable::update_slicing;

/// A way of computing CRC-16: the portable tables, or carry-less multiplies
/// of some register width. [`crc_engine`] names the one this CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CrcEngine {
    /// Slicing-by-16 tables (8 on wasm), on any CPU.
    Portable = 1,
    /// x86_64 with PCLMULQDQ and SSSE3: 128-bit registers.
    Pclmulqdq = 2,
    /// x86_64 with AVX2, VPCLMULQDQ, BMI1, BMI2 and LZCNT: 256-bit
    /// registers, two lanes.
    Vpclmulqdq256 = 3,
    /// x86_64 with AVX-512 (F, BW), VPCLMULQDQ, GFNI, AVX2, BMI1, BMI2 and
    /// LZCNT: 512-bit registers, four lanes.
    Vpclmulqdq512 = 4,
    /// aarch64 with PMULL: 128-bit registers.
    Pmull = 5,
}

impl CrcEngine {
    /// Every engine, narrowest first.
    pub const ALL: [CrcEngine; 5] = [
        CrcEngine::Portable,
        CrcEngine::Pclmulqdq,
        CrcEngine::Vpclmulqdq256,
        CrcEngine::Vpclmulqdq512,
        CrcEngine::Pmull,
    ];

    /// Its name in benchmark records and logs, and in `ZARIS_CRC_ENGINE`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            CrcEngine::Portable => "portable",
            CrcEngine::Pclmulqdq => "pclmulqdq",
            CrcEngine::Vpclmulqdq256 => "vpclmulqdq256",
            CrcEngine::Vpclmulqdq512 => "vpclmulqdq512",
            CrcEngine::Pmull => "pmull",
        }
    }

    /// What it runs on, in words.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            CrcEngine::Portable => "portable slicing-by-16 tables",
            CrcEngine::Pclmulqdq => "pclmulqdq (128-bit)",
            CrcEngine::Vpclmulqdq256 => "avx2 vpclmulqdq (256-bit)",
            CrcEngine::Vpclmulqdq512 => "avx512 vpclmulqdq + gfni (512-bit)",
            CrcEngine::Pmull => "pmull (128-bit)",
        }
    }

    /// Whether this CPU (with `std`) or this build's target features
    /// (without) can run it.
    #[must_use]
    pub fn is_supported(self) -> bool {
        supported(self)
    }

    const fn from_name(name: &str) -> Option<CrcEngine> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if eq_ignore_case(Self::ALL[i].name(), name) {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }
}

impl fmt::Display for CrcEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const fn eq_ignore_case(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !a[i].eq_ignore_ascii_case(&b[i]) {
            return false;
        }
        i += 1;
    }
    true
}

/// The engine `ZARIS_CRC_ENGINE` named at build time, if it was set. A name
/// that is not an engine's stops the build.
const FORCED: Option<CrcEngine> = match option_env!("ZARIS_CRC_ENGINE") {
    None => None,
    Some(name) => match CrcEngine::from_name(name) {
        Some(engine) => Some(engine),
        None => panic!(
            "ZARIS_CRC_ENGINE must be portable, pclmulqdq, vpclmulqdq256, vpclmulqdq512 or pmull"
        ),
    },
};

/// Whether `name`d x86_64 features are there: detected at run time with
/// `std`, read from the target features without.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
macro_rules! x86_has {
    ($($feature:tt),+) => { $(std::is_x86_feature_detected!($feature))&&+ };
}
#[cfg(all(target_arch = "x86_64", not(feature = "std")))]
macro_rules! x86_has {
    ($($feature:tt),+) => { $(cfg!(target_feature = $feature))&&+ };
}

/// Whether this CPU runs `engine`: asked once, then one load and a bit test
/// (the forced-engine entry points pay what the real dispatch pays).
#[cfg(feature = "std")]
#[inline(always)]
fn supported(engine: CrcEngine) -> bool {
    /// Bit `e` for each supported engine `e`, bit 0 once the CPU was asked.
    static SUPPORTED: AtomicU8 = AtomicU8::new(0);
    let mut bits = SUPPORTED.load(Ordering::Relaxed);
    if bits == 0 {
        bits = CrcEngine::ALL
            .iter()
            .filter(|&&e| ask_cpu(e))
            .fold(1, |bits, &e| bits | 1 << e as u8);
        SUPPORTED.store(bits, Ordering::Relaxed);
    }
    bits >> engine as u8 & 1 == 1
}

#[cfg(not(feature = "std"))]
#[inline(always)]
fn supported(engine: CrcEngine) -> bool {
    ask_cpu(engine)
}

fn ask_cpu(engine: CrcEngine) -> bool {
    match engine {
        CrcEngine::Portable => true,
        #[cfg(target_arch = "x86_64")]
        CrcEngine::Pclmulqdq => x86_has!("pclmulqdq", "ssse3", "sse2"),
        #[cfg(target_arch = "x86_64")]
        CrcEngine::Vpclmulqdq256 => {
            ask_cpu(CrcEngine::Pclmulqdq) && x86_has!("avx2", "vpclmulqdq") && short_keys_vex()
        }
        #[cfg(target_arch = "x86_64")]
        CrcEngine::Vpclmulqdq512 => {
            ask_cpu(CrcEngine::Pclmulqdq)
                && x86_has!("avx512f", "avx512bw", "vpclmulqdq", "gfni")
                && short_keys_vex()
        }
        #[cfg(all(target_arch = "aarch64", feature = "std"))]
        CrcEngine::Pmull => std::arch::is_aarch64_feature_detected!("pmull"),
        #[cfg(all(target_arch = "aarch64", not(feature = "std")))]
        CrcEngine::Pmull => cfg!(all(target_feature = "neon", target_feature = "aes")),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// Whether the short-key path compiled for the wider tiers runs here:
/// every CPU with VPCLMULQDQ has these, but a virtual machine may hide
/// some.
#[cfg(target_arch = "x86_64")]
fn short_keys_vex() -> bool {
    x86_has!("avx2", "bmi1", "bmi2", "lzcnt")
}

/// The widest engine this CPU supports, capped by `ZARIS_CRC_ENGINE`.
fn best() -> CrcEngine {
    if let Some(forced) = FORCED {
        return if supported(forced) {
            forced
        } else {
            CrcEngine::Portable
        };
    }
    let mut best = CrcEngine::Portable;
    for engine in CrcEngine::ALL {
        if supported(engine) {
            best = engine;
        }
    }
    best
}

/// 0 until asked, then the engine's discriminant: one load per call.
#[cfg(feature = "std")]
static DETECTED: AtomicU8 = AtomicU8::new(0);

/// The engine in use.
#[cfg(feature = "std")]
#[inline(always)]
fn engine() -> CrcEngine {
    match DETECTED.load(Ordering::Relaxed) {
        1 => CrcEngine::Portable,
        2 => CrcEngine::Pclmulqdq,
        3 => CrcEngine::Vpclmulqdq256,
        4 => CrcEngine::Vpclmulqdq512,
        5 => CrcEngine::Pmull,
        _ => detect(),
    }
}

#[cfg(feature = "std")]
#[cold]
fn detect() -> CrcEngine {
    let engine = best();
    DETECTED.store(engine as u8, Ordering::Relaxed);
    engine
}

/// The engine in use: fixed by the target features.
#[cfg(not(feature = "std"))]
#[inline(always)]
fn engine() -> CrcEngine {
    best()
}

/// The CRC-16 engine this CPU runs: the widest it supports (detected at run
/// time with the `std` feature, from the target features without), unless
/// the build capped it with `ZARIS_CRC_ENGINE`.
///
/// ```
/// let engine = zaris_core::crc_engine();
/// assert!(engine.is_supported());
/// println!("hashing with {}", engine.description());
/// ```
#[must_use]
pub fn crc_engine() -> CrcEngine {
    engine()
}

/// The CRC from state 0 of the hashed part of `key` (its hash tag, or all
/// of it), on the engine in use.
#[inline(always)]
pub(crate) fn key_crc(key: &[u8]) -> u16 {
    // SAFETY: the engine in use is one this CPU supports.
    unsafe { key_crc_unchecked(engine(), key) }
}

/// [`key_crc`] on a given engine, or `None` where this CPU lacks it. The
/// portable engine runs the function [`key_crc`] calls where it is picked
/// at run time, so a bench sees what those CPUs run.
#[inline(always)]
pub(crate) fn key_crc_on(engine: CrcEngine, key: &[u8]) -> Option<u16> {
    if engine == CrcEngine::Portable {
        return Some(portable_key_crc(key));
    }
    if !supported(engine) {
        return None;
    }
    // SAFETY: checked just before.
    Some(unsafe { key_crc_unchecked(engine, key) })
}

/// Continues a CRC from `crc` over `bytes`, on the engine in use.
#[inline]
pub(crate) fn update(crc: u16, bytes: &[u8]) -> u16 {
    // SAFETY: the engine in use is one this CPU supports.
    unsafe { update_unchecked(engine(), crc, bytes) }
}

/// The CRC from state 0 of `bytes`, on the engine in use (what
/// [`update`] from 0 gives, with short input sent to a small function
/// where the call is).
#[inline]
pub(crate) fn crc(bytes: &[u8]) -> u16 {
    // SAFETY: the engine in use is one this CPU supports.
    unsafe { crc_unchecked(engine(), bytes) }
}

/// [`crc`] on a given engine, or `None` where this CPU lacks it.
#[inline(always)]
pub(crate) fn crc_on(engine: CrcEngine, bytes: &[u8]) -> Option<u16> {
    if engine == CrcEngine::Portable {
        return Some(portable::update(0, bytes));
    }
    if !supported(engine) {
        return None;
    }
    // SAFETY: checked just before.
    Some(unsafe { crc_unchecked(engine, bytes) })
}

/// [`crc`] on `engine`.
///
/// # Safety
/// The CPU supports `engine`.
#[inline(always)]
unsafe fn crc_unchecked(engine: CrcEngine, bytes: &[u8]) -> u16 {
    match engine {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's: the CPU supports the engine.
        CrcEngine::Pclmulqdq => unsafe { x86_64::pclmul::crc(bytes) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq256 => unsafe { x86_64::vpclmul256::crc(bytes) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq512 => unsafe { x86_64::avx512::crc(bytes) },
        // SAFETY: the caller's.
        _ => unsafe { update_unchecked(engine, 0, bytes) },
    }
}

/// [`update`] on a given engine, or `None` where this CPU lacks it (the
/// portable engine inlined, as [`update`] inlines it).
#[cfg(test)]
#[inline(always)]
pub(crate) fn update_on(engine: CrcEngine, crc: u16, bytes: &[u8]) -> Option<u16> {
    if engine == CrcEngine::Portable {
        return Some(portable::update(crc, bytes));
    }
    if !supported(engine) {
        return None;
    }
    // SAFETY: checked just before.
    Some(unsafe { update_unchecked(engine, crc, bytes) })
}

/// [`key_crc`] on `engine`.
///
/// # Safety
/// The CPU supports `engine`.
#[inline(always)]
unsafe fn key_crc_unchecked(engine: CrcEngine, key: &[u8]) -> u16 {
    // The wider tiers first, so that what most CPUs run (a short key on
    // them) is the straight path, with no taken jump (measured: one cost
    // a 16-byte key 0.5 ns).
    #[cfg(target_arch = "x86_64")]
    if engine >= CrcEngine::Vpclmulqdq256 && engine <= CrcEngine::Vpclmulqdq512 {
        // SAFETY: the caller's; the wider tiers' features include the
        // 128-bit tier's, and AVX2, BMI1, BMI2 and LZCNT.
        return unsafe {
            if key.len() <= 64 {
                x86_64::pclmul::vex::short_key_root(key)
            } else if engine == CrcEngine::Vpclmulqdq512 {
                x86_64::avx512::long_key_root(key)
            } else {
                x86_64::vpclmul256::long_key_root(key)
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    if engine == CrcEngine::Pclmulqdq {
        // SAFETY: the caller's.
        return unsafe {
            if key.len() <= 64 {
                x86_64::pclmul::sse::short_key_root(key)
            } else {
                x86_64::pclmul::long_key_root(key)
            }
        };
    }
    #[cfg(target_arch = "aarch64")]
    if engine == CrcEngine::Pmull {
        // SAFETY: the caller's.
        return unsafe {
            if key.len() <= 16 {
                aarch64::short_key_root(key)
            } else {
                aarch64::long_key_root(key)
            }
        };
    }
    let _ = engine;
    portable_key_crc(key)
}

/// [`key_crc`] on the tables. Where a carry-less engine usually runs, this
/// stays out of line, so that the fast path saves no registers for it
/// (measured: about 0.3 ns of an 8-byte key's 2.2 ns).
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), inline(never))]
fn portable_key_crc(key: &[u8]) -> u16 {
    if key.len() <= Tables::SHORT_KEY {
        Tables.short_key_crc(key)
    } else {
        portable_long_key_crc(key)
    }
}

/// [`portable_key_crc`] of a key longer than 16 bytes, out of line: its
/// table walks want registers that the short path would otherwise save
/// and restore on every call (measured: an 8-byte key took 4.0 ns with
/// them, 3.4 without).
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), inline(never))]
fn portable_long_key_crc(key: &[u8]) -> u16 {
    Tables.long_key_crc(key)
}

#[cfg(not(target_arch = "x86_64"))]
use portable::Portable as Tables;
/// The tables as this CPU runs them: on x86_64 with SSE2 finding a key's
/// braces (`x86_64::tables`), elsewhere as they are.
#[cfg(target_arch = "x86_64")]
use x86_64::tables::Tables;

/// [`update`] on `engine`.
///
/// # Safety
/// The CPU supports `engine`.
#[inline]
unsafe fn update_unchecked(engine: CrcEngine, crc: u16, bytes: &[u8]) -> u16 {
    match engine {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's: the CPU supports the engine.
        CrcEngine::Pclmulqdq => unsafe { x86_64::pclmul::update_root(crc, bytes) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq256 => unsafe { x86_64::vpclmul256::update_root(crc, bytes) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq512 => unsafe { x86_64::avx512::update_root(crc, bytes) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        CrcEngine::Pmull => unsafe { aarch64::update_root(crc, bytes) },
        _ => portable::update(crc, bytes),
    }
}

#[cfg(test)]
mod tests;
