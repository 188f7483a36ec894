//! Every CRC engine this CPU has, each against the peers, interleaved (see
//! `zaris_bench::interleave`): the figures the per-tier speed bars are
//! judged on. `just bench` runs it and records the result.

use std::hint::black_box;

use zaris_bench::interleave::{self, Case, Settings};
use zaris_bench::keys::{self, KeyKind};
use zaris_core::_benchable::slot_for_key_on;
use zaris_core::{CrcEngine, SLOT_COUNT};

const CRC_SLICE16: crc::Crc<u16, crc::Table<16>> =
    crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);

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
    let mut cases = Vec::new();
    for kind in [KeyKind::Ascii, KeyKind::Tagged] {
        for len in keys::LENGTHS {
            let key = kind.key(len);
            let group = format!("tiers-{}", kind.name());
            cases.push(Case::new(
                format!("{group}/zaris/{len}"),
                key.clone(),
                |k| zaris_core::slot_for_key(k),
            ));
            for &engine in &engines {
                cases.push(Case::new(
                    format!("{group}/zaris@{engine}/{len}"),
                    key.clone(),
                    move |k| slot_for_key_on(engine, k),
                ));
            }
            cases.push(Case::new(
                format!("{group}/crc-fast/{len}"),
                key.clone(),
                |k| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc16Xmodem, k) as u16 % SLOT_COUNT,
            ));
            cases.push(Case::new(
                format!("{group}/crc16/{len}"),
                key.clone(),
                |k| crc16::State::<crc16::XMODEM>::calculate(k) % SLOT_COUNT,
            ));
            cases.push(Case::new(
                format!("{group}/redis-protocol/{len}"),
                key.clone(),
                |k| redis_protocol::redis_keyslot(k),
            ));
            cases.push(Case::new(
                format!("{group}/crc-slice16/{len}"),
                key.clone(),
                |k| CRC_SLICE16.checksum(k) % SLOT_COUNT,
            ));
            if kind == KeyKind::Ascii {
                for &engine in &engines {
                    cases.push(Case::new(
                        format!("{group}/crc16@{engine}/{len}"),
                        key.clone(),
                        move |k| zaris_core::_benchable::crc16_on(engine, k),
                    ));
                }
            }
        }
    }
    // Words that are not flags filter the cases by id, as criterion's do.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    cases.retain(|case| filters.is_empty() || filters.iter().any(|f| case.id.contains(f.as_str())));
    for t in interleave::run(&mut cases, settings) {
        println!("{:45} {:10.2} {:10.2}", t.id, t.quiet_ns, t.median_ns);
    }
    black_box(());
}
