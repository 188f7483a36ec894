//! The project's speed bars, checked against a recorded run. The dashboard
//! prints every bar with its verdict, met or not.

pub use crate::bar::Bar;
use crate::Record;

/// The key lengths with a speed-up bar, and the factor needed over each peer.
pub const SPEEDUP_BARS: [(usize, f64); 4] = [(8, 2.0), (16, 3.0), (32, 6.0), (256, 20.0)];

/// The peers the speed-up bars are held against.
pub const BAR_PEERS: [&str; 2] = ["crc16", "redis-protocol"];

/// The group the speed-up bars are measured in.
pub const BAR_GROUP: &str = "slot-ascii";

/// Route lookup may add at most this much over `slot_for_key` (ns).
pub const ROUTE_OVERHEAD_NS: f64 = 2.0;

/// The speed-up of `zaris` over `peer` in `group` at `len` bytes.
#[must_use]
pub fn speedup(record: &Record, group: &str, peer: &str, len: usize) -> Option<f64> {
    let ours = record.median(&format!("{group}/zaris/{len}"))?;
    let theirs = record.median(&format!("{group}/{peer}/{len}"))?;
    (ours > 0.0).then(|| theirs / ours)
}

/// Every bar, checked against `record`.
#[must_use]
pub fn evaluate(record: &Record) -> Vec<Bar> {
    let mut bars = Vec::new();
    for (len, needed) in SPEEDUP_BARS {
        for peer in BAR_PEERS {
            let got = speedup(record, BAR_GROUP, peer, len);
            bars.push(Bar {
                what: format!("slot_for_key vs {peer}, {len}-byte keys"),
                needed: format!("≥ {needed}x"),
                measured: got.map(|x| format!("{x:.1}x")),
                met: got.is_some_and(|x| x >= needed),
                floor: None,
            });
        }
    }
    bars.extend(crate::tiers::evaluate(record));
    let overhead = record
        .median("route/zaris-table")
        .zip(record.median("route/slot_for_key"))
        .map(|(route, slot)| route - slot);
    bars.push(Bar {
        what: "route lookup over slot_for_key".into(),
        needed: format!("≤ {ROUTE_OVERHEAD_NS} ns"),
        measured: overhead.map(|ns| format!("{ns:+.2} ns")),
        met: overhead.is_some_and(|ns| ns <= ROUTE_OVERHEAD_NS),
        floor: None,
    });
    let worst = record
        .allocations_per_op
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1));
    bars.push(Bar {
        what: format!(
            "heap allocations per operation ({} operations)",
            record.allocations_per_op.len()
        ),
        needed: "0".into(),
        measured: worst.map(|(op, n)| {
            if *n == 0.0 {
                "0".to_owned()
            } else {
                format!("{n} ({op})")
            }
        }),
        met: worst.is_some_and(|(_, n)| *n == 0.0),
        floor: None,
    });
    bars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::record;

    fn run(zaris8: f64, route: f64) -> Record {
        let mut medians = vec![("route/slot_for_key", 3.0), ("route/zaris-table", route)];
        let ids: Vec<(String, f64)> = SPEEDUP_BARS
            .iter()
            .flat_map(|&(len, needed)| {
                let ours = if len == 8 { zaris8 } else { 1.0 };
                [
                    (format!("slot-ascii/zaris/{len}"), ours),
                    (format!("slot-ascii/crc16/{len}"), needed),
                    (format!("slot-ascii/redis-protocol/{len}"), needed * 2.0),
                ]
            })
            .collect();
        medians.extend(ids.iter().map(|(id, ns)| (id.as_str(), *ns)));
        record("abc", &medians)
    }

    #[test]
    fn every_bar_is_reported_and_judged() {
        let bars = evaluate(&run(1.0, 4.5));
        // No engine measured: the eight speed-up bars, route, allocations.
        assert_eq!(bars.len(), 10);
        assert!(bars.iter().all(|b| b.met), "{bars:#?}");
        assert_eq!(bars[0].what, "slot_for_key vs crc16, 8-byte keys");
        assert_eq!(bars[0].measured.as_deref(), Some("2.0x"));
        assert_eq!(bars[8].measured.as_deref(), Some("+1.50 ns"));
        assert_eq!(bars[9].measured.as_deref(), Some("0"));
    }

    #[test]
    fn misses_are_plain() {
        let mut slow = run(1.5, 5.5);
        slow.allocations_per_op.insert("mget".into(), 2.0);
        let bars = evaluate(&slow);
        let missed: Vec<&str> = bars
            .iter()
            .filter(|b| !b.met)
            .map(|b| b.what.as_str())
            .collect();
        assert_eq!(
            missed,
            [
                "slot_for_key vs crc16, 8-byte keys",
                "route lookup over slot_for_key",
                "heap allocations per operation (2 operations)",
            ]
        );
        assert_eq!(bars[0].measured.as_deref(), Some("1.3x"));
        assert_eq!(bars[9].measured.as_deref(), Some("2 (mget)"));
        // Not measured at all: every bar fails.
        let empty = evaluate(&record("abc", &[]));
        assert!(empty.iter().take(9).all(|b| !b.met && b.measured.is_none()));
    }

    #[test]
    fn each_engine_adds_its_bars() {
        let mut r = run(1.0, 4.5);
        r.engines = vec!["portable".into(), "pclmulqdq".into()];
        assert_eq!(evaluate(&r).len(), 10 + 2 * 4);
    }
}
