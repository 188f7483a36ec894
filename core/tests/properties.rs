//! Every fast path against the plain bitwise reference, on random input.

use proptest::prelude::*;
use zaris_core::{
    _benchable, crc16, crc16_bitwise, hash_tag, parse_error_reply, slot_for_key, slot_for_utf16,
    utf8_from_utf16_lossy, Crc16, CrcEngine, SLOT_COUNT,
};

/// Random bytes, biased so that braces (the hash tag's delimiters) are
/// common enough to put tags at every position.
fn key_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            8 => any::<u8>(),
            1 => Just(b'{'),
            1 => Just(b'}'),
        ],
        0..=max,
    )
}

/// 2,000 cases each, or what `PROPTEST_CASES` says (fewer under emulation).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000)
}

fn reference_slot(key: &[u8]) -> u16 {
    crc16_bitwise(hash_tag(key)) % SLOT_COUNT
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn crc16_matches_reference(bytes in prop::collection::vec(any::<u8>(), 0..=4096)) {
        let want = crc16_bitwise(&bytes);
        prop_assert_eq!(crc16(&bytes), want);
        prop_assert_eq!(_benchable::crc16_slicing16(&bytes), want);
        for engine in CrcEngine::ALL {
            if let Some(crc) = _benchable::crc16_on(engine, &bytes) {
                prop_assert_eq!(crc, want, "{}", engine);
            }
        }
    }

    #[test]
    fn split_updates_equal_one_shot(
        bytes in prop::collection::vec(any::<u8>(), 0..=4096),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut crc = Crc16::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            crc.update(&bytes[from..cut]);
            from = cut;
        }
        prop_assert_eq!(crc.finish(), crc16_bitwise(&bytes));
    }

    #[test]
    fn slot_matches_reference(key in key_bytes(4096)) {
        let want = reference_slot(&key);
        prop_assert_eq!(slot_for_key(&key), want);
        for engine in CrcEngine::ALL {
            if let Some(slot) = _benchable::slot_for_key_on(engine, &key) {
                prop_assert_eq!(slot, want, "{}", engine);
            }
        }
    }

    #[test]
    fn slot_of_long_plain_key_with_late_braces(
        len in 0usize..=4096,
        open in any::<prop::sample::Index>(),
        close in any::<prop::sample::Index>(),
    ) {
        // Mostly plain keys, so the braces land deep inside long keys.
        let mut key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        if len > 0 {
            key[open.index(len)] = b'{';
            key[close.index(len)] = b'}';
        }
        prop_assert_eq!(slot_for_key(&key), reference_slot(&key));
    }

    #[test]
    fn utf16_matches_lossy_utf8(units in prop::collection::vec(
        prop_oneof![
            4 => 0u16..0x80,
            1 => Just(u16::from(b'{')),
            1 => Just(u16::from(b'}')),
            2 => any::<u16>(),
            1 => 0xD800u16..0xE000,
        ],
        0..=1024,
    )) {
        let lossy = String::from_utf16_lossy(&units);
        prop_assert_eq!(slot_for_utf16(&units), slot_for_key(lossy.as_bytes()));
    }

    #[test]
    fn utf16_to_utf8_in_any_buffer_size_is_the_lossy_encoding(
        units in prop::collection::vec(
            prop_oneof![
                6 => 0u16..0x80,
                2 => any::<u16>(),
                1 => 0xD800u16..0xE000,
            ],
            0..=300,
        ),
        room in 8usize..80,
    ) {
        let mut out = vec![0u8; room];
        let (mut rest, mut utf8) = (&units[..], Vec::new());
        while !rest.is_empty() {
            let (read, written) = utf8_from_utf16_lossy(rest, &mut out);
            prop_assert!(read > 0 && written <= room);
            utf8.extend_from_slice(&out[..written]);
            rest = &rest[read..];
        }
        prop_assert_eq!(utf8, String::from_utf16_lossy(&units).into_bytes());
    }

    #[test]
    fn utf16_matches_utf8_of_any_string(s in any::<String>()) {
        let units: Vec<u16> = s.encode_utf16().collect();
        prop_assert_eq!(slot_for_utf16(&units), slot_for_key(s.as_bytes()));
    }

    #[test]
    fn reply_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse_error_reply(&bytes);
        let mut moved = b"-MOVED ".to_vec();
        moved.extend_from_slice(&bytes);
        let _ = parse_error_reply(&moved);
    }
}

/// An unclosed '{' with 1024 bytes after it is hashed again; with more, the
/// halves are joined by `shift`. Both sides of that line, on every engine
/// the CPU offers.
#[test]
fn unclosed_brace_on_both_sides_of_the_rehash_limit() {
    for after in [33, 64, 1023, 1024, 1025, 1100, 4000] {
        for open in [0, 5, 40] {
            let mut key: Vec<u8> = (0..open + 1 + after)
                .map(|i| b'a' + (i % 26) as u8)
                .collect();
            key[open] = b'{';
            assert_eq!(
                slot_for_key(&key),
                reference_slot(&key),
                "open {open}, {after} after"
            );
        }
    }
}
