//! x86_64: one file per instruction-set tier, each wider one building on
//! the 128-bit one for short keys and reductions, and below them all the
//! SSE2 baseline (`sse2.rs`), which the portable tables use too. `engine/mod.rs` detects
//! the tiers and dispatches; nothing here picks.

pub(crate) mod avx512;
pub(crate) mod pclmul;
pub(crate) mod sse2;
pub(crate) mod vpclmul256;
