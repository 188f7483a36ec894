//! Every CRC engine this CPU has, each against the peers, all interleaved
//! in one run (see `zaris_bench::interleave`): the figures the per-engine
//! speed bars are judged on. Written to `target/zaris-bench/interleaved.json`
//! for `zaris-dashboard record`, and printed.
//!
//! `cargo bench -p zaris-bench --bench tiers [-- --quick] [FILTER...]`
//!
//! Ids: `tiers-{ascii,tagged}/{candidate}/{bytes}`, where a candidate is
//! `zaris` (the engine in use, through `slot_for_key`), `zaris@<engine>`
//! (that engine forced), `crc16@<engine>` (the plain CRC on it), or a peer;
//! and `clock/imul-64`, a chain of 64 dependent multiplies (3 cycles each on
//! x86_64 and aarch64 cores), which turns cycles into nanoseconds for the
//! floors the dashboard shows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use zaris_bench::interleave::{self, Case, Settings};
use zaris_bench::keys::{self, KeyKind};
use zaris_core::_benchable::{crc16_on, slot_for_key_on};
use zaris_core::{slot_for_key, CrcEngine, SLOT_COUNT};

const CRC_SLICE16: crc::Crc<u16, crc::Table<16>> =
    crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);

/// A case running `f` on `engine`, with the engine a constant in its own
/// closure: a closure taking the engine at run time would hold every
/// engine's inlined code, and one engine's code changing would move
/// another's loop (measured: a 16-byte tagged key on the 128-bit engine
/// went from 5.0 to 11.4 ns when only the portable engine changed).
macro_rules! on_engine {
    ($engine:expr, $id:expr, $key:expr, $f:path) => {
        match $engine {
            CrcEngine::Portable => Case::new($id, $key, |k| $f(CrcEngine::Portable, k)),
            CrcEngine::Pclmulqdq => Case::new($id, $key, |k| $f(CrcEngine::Pclmulqdq, k)),
            CrcEngine::Vpclmulqdq256 => Case::new($id, $key, |k| $f(CrcEngine::Vpclmulqdq256, k)),
            CrcEngine::Vpclmulqdq512 => Case::new($id, $key, |k| $f(CrcEngine::Vpclmulqdq512, k)),
            other => Case::new($id, $key, move |k| $f(other, k)),
        }
    };
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let settings = if quick {
        Settings::QUICK
    } else {
        Settings::DEFAULT
    };
    let engines: Vec<CrcEngine> = CrcEngine::ALL
        .into_iter()
        .filter(|e| e.is_supported())
        .collect();
    // The chain carries from one iteration to the next (through a cell), so
    // iterations cannot overlap: its time is latency, 3 cycles a multiply.
    let mut cases = vec![Case::new(
        "clock/imul-64",
        std::cell::Cell::new(0x9E37_79B9_7F4A_7C15u64),
        |state| {
            let x = (0..64).fold(state.get(), |x, _| {
                std::hint::black_box(x).wrapping_mul(0x2545_F491_4F6C_DD1D)
            });
            state.set(x);
            x
        },
    )];
    for kind in [KeyKind::Ascii, KeyKind::Tagged] {
        for len in keys::LENGTHS {
            // One copy that every candidate hashes: the same bytes at the
            // same address, so that no candidate's figure depends on where
            // its own copy happened to start in a cache line (measured: a
            // 4 KiB key 16 bytes into a line took crc-fast 76.3 ns against
            // 73.8 from a line's start, the 512-bit plain CRC 44 against 39).
            let key: &'static [u8] = Box::leak(kind.key(len).into_boxed_slice());
            let group = format!("tiers-{}", kind.name());
            let id = |candidate: &str| format!("{group}/{candidate}/{len}");
            cases.push(Case::new(id("zaris"), key, |k| slot_for_key(k)));
            for &engine in &engines {
                let zaris = id(&format!("zaris@{engine}"));
                cases.push(on_engine!(engine, zaris, key, slot_for_key_on));
                if kind == KeyKind::Ascii {
                    let crc = id(&format!("crc16@{engine}"));
                    cases.push(on_engine!(engine, crc, key, crc16_on));
                }
            }
            cases.push(Case::new(id("crc-fast"), key, |k| {
                crc_fast::checksum(crc_fast::CrcAlgorithm::Crc16Xmodem, k) as u16 % SLOT_COUNT
            }));
            cases.push(Case::new(id("crc16"), key, |k| {
                crc16::State::<crc16::XMODEM>::calculate(k) % SLOT_COUNT
            }));
            cases.push(Case::new(id("redis-protocol"), key, |k| {
                redis_protocol::redis_keyslot(k)
            }));
            cases.push(Case::new(id("crc-slice16"), key, |k| {
                CRC_SLICE16.checksum(k) % SLOT_COUNT
            }));
        }
    }
    // Words that are not flags filter the cases by id, as criterion's do.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    cases.retain(|case| filters.is_empty() || filters.iter().any(|f| case.id.contains(f.as_str())));
    eprintln!(
        "interleaving {} candidates, {} rounds of ~1 ms batches each (about {} s)",
        cases.len(),
        settings.rounds,
        cases.len() * settings.rounds / 1000 + 1
    );
    let timings = interleave::run(&mut cases, settings);
    let mut figures = BTreeMap::new();
    for t in &timings {
        println!(
            "{:45} {:10.2} ns (median {:.2})",
            t.id, t.quiet_ns, t.median_ns
        );
        figures.insert(t.id.clone(), t.quiet_ns);
    }
    let out: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "target",
        "zaris-bench",
        "interleaved.json",
    ]
    .iter()
    .collect();
    std::fs::create_dir_all(out.parent().expect("a directory"))
        .expect("creating target/zaris-bench");
    std::fs::write(&out, serde_json::to_string_pretty(&figures).expect("JSON"))
        .expect("writing interleaved.json");
    eprintln!("wrote {}", out.display());
}
