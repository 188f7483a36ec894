//! `slot_for_key` and `slot_for_utf16` against a real server's
//! `CLUSTER KEYSLOT`, on thousands of binary, UTF-8 and hash-tagged keys.

use zaris_core::{slot_for_key, slot_for_utf16};
use zaris_tests::{binary_available, server_binary, Frame, RedisNode};

/// Deterministic pseudo-random numbers (SplitMix64), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Keys of every kind: binary of all lengths up to 4096 (so both CRC paths
/// run), UTF-8 text, hash-tagged, and degenerate tags.
fn keys(count: usize) -> Vec<Vec<u8>> {
    const TEXT: [&str; 8] = ["user", "κλειδί", "ключ", "键", "😀", "{", "}", ":"];
    let mut rng = Rng(0x5EED);
    (0..count)
        .map(|i| match i % 4 {
            0 => {
                let len = if rng.below(8) == 0 {
                    rng.below(4097)
                } else {
                    rng.below(64)
                };
                (0..len).map(|_| rng.next() as u8).collect()
            }
            1 => (0..rng.below(12))
                .map(|_| TEXT[rng.below(TEXT.len())])
                .collect::<String>()
                .into_bytes(),
            2 => format!(
                "prefix{{user{}}}:suffix{}",
                rng.below(100_000),
                rng.below(10)
            )
            .into_bytes(),
            _ => {
                let mut key: Vec<u8> = (0..rng.below(300))
                    .map(|_| b'a' + rng.below(26) as u8)
                    .collect();
                for _ in 0..rng.below(4) {
                    let at = rng.below(key.len() + 1);
                    key.insert(at, if rng.below(2) == 0 { b'{' } else { b'}' });
                }
                key
            }
        })
        .collect()
}

fn check_against(binary: &str) {
    let node = RedisNode::start_cluster_node(binary, &[]).expect("start server");
    let mut conn = node.connect().expect("connect");
    let keys = keys(8_000);
    let commands: Vec<[&[u8]; 3]> = keys
        .iter()
        .map(|k| [&b"CLUSTER"[..], b"KEYSLOT", k])
        .collect();
    let replies = conn
        .pipeline(commands.iter().map(|c| &c[..]))
        .expect("pipeline");
    assert_eq!(replies.len(), keys.len());
    let mut tagged = 0;
    for (key, reply) in keys.iter().zip(&replies) {
        let Frame::Integer(server) = *reply else {
            panic!(
                "CLUSTER KEYSLOT {:?} answered {reply:?}",
                key.escape_ascii().to_string()
            );
        };
        assert_eq!(
            i64::from(slot_for_key(key)),
            server,
            "key {:?}",
            key.escape_ascii().to_string()
        );
        if let Ok(text) = std::str::from_utf8(key) {
            let units: Vec<u16> = text.encode_utf16().collect();
            assert_eq!(i64::from(slot_for_utf16(&units)), server, "utf16 {text:?}");
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
