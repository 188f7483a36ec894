//! Every engine this CPU supports against the portable tables and the
//! bitwise reference: at every length, from any state, with stops, and with
//! braces at every position pair. `just test` also runs the whole core suite
//! once per engine (`ZARIS_CRC_ENGINE`), so everything above is exercised
//! on each tier too.

use super::*;

/// Every engine this CPU runs, the portable one included.
fn engines() -> impl Iterator<Item = CrcEngine> {
    CrcEngine::ALL.into_iter().filter(|e| e.is_supported())
}

fn bytes(len: usize, seed: u32) -> impl Iterator<Item = u8> {
    (0..len as u32).map(move |i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8 | 1)
}

/// `just test` builds these tests with `ZARIS_EXPECT_CLMUL` set where a
/// carry-less engine must run (x86_64 CI machines, aarch64 under qemu), so
/// the tests below cannot pass by finding no engine to test; and with
/// `ZARIS_CRC_ENGINE` the engine in use must be the one named.
#[test]
fn the_expected_engine_runs() {
    if option_env!("ZARIS_EXPECT_CLMUL").is_some() {
        assert!(
            engines().any(|e| e != CrcEngine::Portable),
            "no carry-less multiply here"
        );
    }
    if let Some(forced) = FORCED {
        assert_eq!(crc_engine(), forced, "ZARIS_CRC_ENGINE is not what runs");
    }
    assert!(crc_engine().is_supported());
    assert_eq!(
        CrcEngine::from_name("VPCLMULQDQ512"),
        Some(CrcEngine::Vpclmulqdq512)
    );
    assert_eq!(CrcEngine::from_name("avx"), None);
}

#[test]
fn every_engine_matches_the_reference_at_every_length() {
    let data: heapless::Vec<u8, 9000> = bytes(9000, 7).collect();
    let lengths = (0..1100).chain([
        2047, 2048, 2049, 4095, 4096, 4097, 4111, 4352, 5000, 8191, 8192, 9000,
    ]);
    for len in lengths {
        let data = &data[..len];
        for state in [0u16, 0xBEEF] {
            let want = update_slicing(state, data);
            for engine in engines() {
                assert_eq!(
                    update_on(engine, state, data),
                    Some(want),
                    "{engine} len {len} state {state:#x}"
                );
                if state == 0 {
                    assert_eq!(crc_on(engine, data), Some(want), "{engine} len {len}");
                }
            }
        }
        assert_eq!(update_slicing(0, data), crc_bitwise(data), "len {len}");
    }
}

#[test]
fn every_single_byte_and_the_check_value() {
    for engine in engines() {
        assert_eq!(update_on(engine, 0, b"123456789"), Some(0x31C3), "{engine}");
        assert_eq!(crc_on(engine, b"123456789"), Some(0x31C3), "{engine}");
        for b in 0..=255u8 {
            assert_eq!(update_on(engine, 0, &[b]), Some(crc_bitwise(&[b])));
            assert_eq!(key_crc_on(engine, &[b]), Some(crc_bitwise(&[b])));
        }
    }
}

#[test]
fn stops_are_conservative_and_exact() {
    // Any stop byte, and `{` (which a tier may look for in marked blocks),
    // in data that holds neither (every byte even).
    for (engine, stop) in engines().flat_map(|e| [(e, 1), (e, b'{')]) {
        for len in [
            16usize, 63, 64, 100, 127, 128, 129, 255, 256, 300, 511, 512, 700, 1500,
        ] {
            for at in (0..len).step_by(5) {
                let mut data: heapless::Vec<u8, 1500> = bytes(len, 3).map(|b| b & !1).collect();
                data[at] = stop;
                let Some((crc, done)) = update_blocks_on(engine, 0, &data, Some(stop)) else {
                    continue;
                };
                assert!(
                    done <= at,
                    "{engine} len {len}: consumed {done} past the stop {stop} at {at}"
                );
                assert_eq!(
                    crc,
                    crc_bitwise(&data[..done]),
                    "{engine} len {len} stop {stop} at {at}"
                );
            }
        }
    }
}

#[test]
fn braces_at_every_position_pair() {
    // Keys up to 72 bytes (past the 64-byte register path), every engine.
    for len in 0..=72usize {
        let base: heapless::Vec<u8, 72> = bytes(len, 11).map(|b| b'a' + b % 26).collect();
        for open in 0..=len {
            for close in 0..=len {
                let mut key = base.clone();
                if let Some(b) = key.get_mut(open) {
                    *b = b'{';
                }
                if let Some(b) = key.get_mut(close) {
                    *b = b'}';
                }
                let want = crc_bitwise(hash_tag(&key));
                for engine in engines() {
                    assert_eq!(
                        key_crc_on(engine, &key),
                        Some(want),
                        "{engine} {:?}",
                        key.escape_ascii()
                    );
                }
                // The tables on their own, as CPUs without SSE2 run them
                // (on x86_64 the dispatcher finds braces with SSE2).
                let tables = portable::Portable;
                let alone = if key.len() <= <portable::Portable as generic::Engine>::SHORT_KEY {
                    generic::Engine::short_key_crc(tables, &key)
                } else {
                    generic::Engine::long_key_crc(tables, &key)
                };
                assert_eq!(alone, want, "tables alone {:?}", key.escape_ascii());
            }
        }
    }
}

#[test]
fn tags_in_long_keys_at_every_block_edge() {
    // Braces around the register and stride edges of every engine, and
    // tags long enough to take the single-pass path and the join by shift.
    let mut key = [b'x'; 3000];
    for open in (0..1300).step_by(7).chain([255, 256, 511, 512, 1023, 1024]) {
        for width in [
            0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 1100, 1500,
        ] {
            let mut k = key;
            k[open] = b'{';
            if open + 1 + width < k.len() {
                k[open + 1 + width] = b'}';
            }
            let want = crc_bitwise(hash_tag(&k));
            for engine in engines() {
                assert_eq!(
                    key_crc_on(engine, &k),
                    Some(want),
                    "{engine} open {open} width {width}"
                );
            }
        }
    }
    key[2999] = b'{';
    for engine in engines() {
        assert_eq!(key_crc_on(engine, &key), Some(crc_bitwise(&key)));
    }
}

fn hash_tag(key: &[u8]) -> &[u8] {
    match tag::span(key) {
        Some(span) => &key[span],
        None => key,
    }
}

/// `Engine::update_blocks` on a given engine, or `None` where this CPU
/// lacks it.
fn update_blocks_on(
    engine: CrcEngine,
    crc: u16,
    bytes: &[u8],
    stop: Option<u8>,
) -> Option<(u16, usize)> {
    use generic::Engine;
    if !engine.is_supported() {
        return None;
    }
    Some(match engine {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `engine` is supported, checked above.
        CrcEngine::Pclmulqdq => unsafe { x86_64::pclmul::update_blocks_root(crc, bytes, stop) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq256 => unsafe {
            x86_64::vpclmul256::update_blocks_root(crc, bytes, stop)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        CrcEngine::Vpclmulqdq512 => unsafe { x86_64::avx512::update_blocks_root(crc, bytes, stop) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        CrcEngine::Pmull => unsafe { aarch64::update_blocks_root(crc, bytes, stop) },
        _ => portable::Portable.update_blocks(crc, bytes, stop),
    })
}
