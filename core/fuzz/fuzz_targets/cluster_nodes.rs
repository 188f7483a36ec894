#![no_main]
//! Any text pasted as a cluster map: the parser answers for every line,
//! never panics, and what it accepts is consistent with itself.

use libfuzzer_sys::fuzz_target;
use zaris_core::{parse_cluster_nodes, SlotEntry, SLOT_COUNT};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    for node in parse_cluster_nodes(text).flatten() {
        assert!(node.id.len() >= 8);
        assert!(node.flags.master || node.flags.replica);
        assert!(node.addr.ends_with(&node.port.to_string()));
        // An accepted line's slots all read.
        for slot in node.slots() {
            match slot.expect("checked when the line was accepted") {
                SlotEntry::Served { first, last } => assert!(first <= last && last < SLOT_COUNT),
                SlotEntry::Migrating { slot, .. } | SlotEntry::Importing { slot, .. } => {
                    assert!(slot < SLOT_COUNT)
                }
            }
        }
    }
});
