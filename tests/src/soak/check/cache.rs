//! Cached reads held to the cache's bound.

use zaris_client::Stats;

use super::history::*;
use super::*;
use crate::soak::workload::CACHE_LEASE;

/// The cached readers against the client cache's bound
/// (docs/behaviour.md §9): a read that starts more than the lease after a
/// durable write was acknowledged returns it or a later one. Reads inside
/// the lease that returned an older value are counted (the bound is not
/// vacuous when some happen), as are hits (most reads in steady state).
pub(super) fn check_cache(
    seen: &Observed,
    stats: &[&Stats],
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let lease = CACHE_LEASE.as_secs_f64() * 1000.0;
    let sum = |count: fn(&Stats) -> u64| stats.iter().map(|s| count(s)).sum();
    let mut tally = CacheTally {
        reads: seen.cached_reads.len() as u64,
        hits: sum(|s| s.cache_hits),
        misses: sum(|s| s.cache_misses),
        invalidations: sum(|s| s.cache_invalidations),
        flushes: sum(|s| s.cache_flushes),
        ..CacheTally::default()
    };
    for read in &seen.cached_reads {
        let Some(register) = seen.registers.get(&read.key) else {
            continue;
        };
        let got = sequence(&read.value).map_or(0, |(_, n)| n);
        // The newest write acknowledged more than the lease before the
        // read began: the read must see it or a later one.
        let due = register
            .acks
            .iter()
            .filter(|&&(_, at)| at + lease < read.invoked)
            .map(|&(n, _)| n)
            .max();
        if let Some(due) = due.filter(|&due| got < due) {
            tally.violations += 1;
            violations.push(format!(
                "{}: a cached read at {:.1} s returned {:?}, older than {due}, acknowledged more than {lease:.0} ms before",
                read.key,
                read.invoked / 1000.0,
                read.value
            ));
        }
        let inside = register
            .acks
            .iter()
            .any(|&(n, at)| n > got && at < read.invoked && read.invoked <= at + lease);
        tally.stale_inside_lease += u64::from(inside);
    }
    report.cache = tally;
}
