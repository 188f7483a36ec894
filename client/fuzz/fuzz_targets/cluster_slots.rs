#![no_main]
//! Any reply to `CLUSTER SLOTS` (bytes decoded as the connection
//! decodes them): the parser answers with a map or an error, never a
//! panic, and a map it gives has slots in range and an owner for each.

use libfuzzer_sys::fuzz_target;
use zaris_client::_fuzz::{parse_cluster_slots, replies, value};

fuzz_target!(|data: &[u8]| {
    let (frames, _, _) = replies(&[data], 1 << 20);
    for frame in frames {
        let Ok(ranges) = parse_cluster_slots(&value(frame), "127.0.0.1:7000") else {
            continue;
        };
        for range in ranges {
            assert!(range.first <= range.last && range.last < 16384, "{range:?}");
            assert!(!range.master.is_empty(), "{range:?}");
        }
    }
});
