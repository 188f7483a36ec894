//! `slot_for_key` and `slot_for_utf16` against a real server's
//! `CLUSTER KEYSLOT`, on thousands of binary, UTF-8 and hash-tagged keys.

use zaris_core::{slot_for_key, slot_for_utf16};
use zaris_tests::keys::{keys, server_slots};
use zaris_tests::{binary_available, server_binary};

fn check_against(binary: &str) {
    let keys = keys(8_000);
    let slots = server_slots(binary, &keys).expect("CLUSTER KEYSLOT from the server");
    let mut tagged = 0;
    for (key, &server) in keys.iter().zip(&slots) {
        assert_eq!(
            slot_for_key(key),
            server,
            "key {:?}",
            key.escape_ascii().to_string()
        );
        if let Ok(text) = std::str::from_utf8(key) {
            let units: Vec<u16> = text.encode_utf16().collect();
            assert_eq!(slot_for_utf16(&units), server, "utf16 {text:?}");
        }
        tagged += usize::from(zaris_core::hash_tag_span(key).is_some());
    }
    // The generator really produced tagged keys (not just whole-key hashes).
    assert!(tagged > keys.len() / 4, "only {tagged} tagged keys");
}

#[test]
fn slots_equal_redis_cluster_keyslot() {
    check_against(&server_binary());
}

/// Runs where Valkey is installed; CI installs it and sets
/// `ZARIS_REQUIRE_VALKEY=1`, so there a missing binary fails the test
/// instead of skipping it.
#[test]
fn slots_equal_valkey_cluster_keyslot() {
    if !binary_available("valkey-server") {
        let required = std::env::var("ZARIS_REQUIRE_VALKEY").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "ZARIS_REQUIRE_VALKEY=1 but valkey-server is not installed"
        );
        eprintln!("valkey-server not installed: Valkey oracle skipped");
        return;
    }
    check_against("valkey-server");
}
