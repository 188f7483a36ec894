#![no_main]
//! Any UTF-16 units, lone surrogates included: same slot as the lossy UTF-8.

use libfuzzer_sys::fuzz_target;
use zaris_core::{slot_for_key, slot_for_utf16};

fuzz_target!(|data: &[u8]| {
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    let lossy = String::from_utf16_lossy(&units);
    assert_eq!(slot_for_utf16(&units), slot_for_key(lossy.as_bytes()));
});
