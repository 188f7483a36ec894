//! Counters between their acknowledged and possible increments;
//! compare-and-set chains without a fork or a gap; transactions' pairs equal.

use super::history::*;
use super::*;
use crate::soak::workload::{Finals, TX_KEYS};

/// Counters, transactions and compare-and-set chains: no acknowledged
/// increment lost but where the servers may lose it, no fork, no gap, no
/// half-applied transaction.
pub(super) fn check_counters(
    seen: &Observed,
    finals: &Finals,
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let counters = &seen.counters;
    let value_of = |key: &str| -> u64 {
        finals
            .values
            .get(key)
            .cloned()
            .flatten()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    for (key, c) in counters {
        if key.starts_with("cas:") {
            let version = finals.versions.get(key).copied().unwrap_or(0);
            let mut acked = c.acked_versions.clone();
            acked.sort_unstable();
            let forks = acked.windows(2).filter(|w| w[0] == w[1]).count();
            if forks > 0 {
                violations.push(format!(
                    "{key}: {forks} version(s) acknowledged twice (a fork)"
                ));
            }
            if acked.last().is_some_and(|&m| version < m) {
                report.lost_durable_writes += 1;
                violations.push(format!(
                    "{key}: at version {version}, {acked:?} acknowledged"
                ));
            }
            if version > c.acked + c.unknown {
                violations.push(format!(
                    "{key}: at version {version}, only {} operations could have made it (a gap)",
                    c.acked + c.unknown
                ));
            }
            continue;
        }
        let value = value_of(key);
        let slack = report.unknown_outcomes;
        let missing = c.acked.saturating_sub(value);
        if key.starts_with("ctr:") && missing > 0 {
            // Increments made durable (`WAIT 1`).
            report.lost_durable_writes += missing;
            violations.push(format!(
                "{key}: {value}, below its {} acknowledged increments",
                c.acked
            ));
        } else if missing > 0 {
            // A transaction's plain increments: lost only in lossy windows,
            // at most as many as were acknowledged in them.
            let inside = missing.min(c.acked_in_lossy);
            for _ in 0..inside {
                report.lost_plain_writes.note(key, true);
            }
            for _ in inside..missing {
                report.lost_plain_writes.note(key, false);
            }
        }
        // An increment through `incr_by` is applied once however often it
        // is sent (its marker records the first run's result): a counter
        // goes past its acknowledged increments only by those that failed.
        // A transaction's increments may repeat on a retry after a lost
        // reply, up to the unknown outcomes.
        let slack = if key.starts_with("ctr:") { 0 } else { slack };
        if value > c.acked + c.unknown + slack {
            violations.push(format!(
                "{key}: {value}, above its {} acknowledged and {} unknown increments",
                c.acked, c.unknown
            ));
        }
    }
    if value_of(TX_KEYS[0]) != value_of(TX_KEYS[1]) {
        violations.push(format!(
            "a transaction half applied: {} is {}, {} is {}",
            TX_KEYS[0],
            value_of(TX_KEYS[0]),
            TX_KEYS[1],
            value_of(TX_KEYS[1])
        ));
    }
    if report.lost_plain_writes.elsewhere > 0 {
        violations.push(format!(
            "{} plain writes lost outside any lossy event's window: {:?}",
            report.lost_plain_writes.elsewhere, report.lost_plain_writes.keys
        ));
    }
    if report.lost_appends.elsewhere > 0 {
        violations.push(format!(
            "{} appends lost outside any lossy event's window: {:?}",
            report.lost_appends.elsewhere, report.lost_appends.keys
        ));
    }
}
