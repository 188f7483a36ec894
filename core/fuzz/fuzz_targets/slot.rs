#![no_main]
//! Any byte string is a key: the fast slot equals the bitwise reference.

use libfuzzer_sys::fuzz_target;
use zaris_core::{crc16, crc16_bitwise, hash_tag, segment_for_key, slot_for_key, SLOT_COUNT};

fuzz_target!(|key: &[u8]| {
    let slot = slot_for_key(key);
    assert_eq!(slot, crc16_bitwise(hash_tag(key)) % SLOT_COUNT);
    assert_eq!(crc16(key), crc16_bitwise(key));
    let segments = key.first().map_or(1, |&b| u16::from(b) * 64);
    let _ = segment_for_key(key, segments);
});
