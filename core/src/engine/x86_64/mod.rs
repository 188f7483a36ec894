//! x86_64: one file per instruction-set tier, each wider one building on
//! the 128-bit one for short keys and reductions. `engine/mod.rs` detects
//! the tiers and dispatches; nothing here picks.

pub(crate) mod avx512;
pub(crate) mod pclmul;
pub(crate) mod vpclmul256;
