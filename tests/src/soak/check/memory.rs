//! The process's memory does not grow.

use super::*;
use crate::soak::workload::Sample;

/// Memory: 10 s in against the end.
pub(super) fn check_memory(samples: &[Sample], report: &mut Report, violations: &mut Vec<String>) {
    if samples.is_empty() {
        return;
    }
    let start = samples
        .iter()
        .find(|s| s.at_ms >= 10_000.0)
        .or(samples.first())
        .map_or(0, |s| s.rss_kib);
    let end = samples.last().map_or(0, |s| s.rss_kib);
    report.memory_kib = [start, end];
    if end as f64 > start as f64 * 1.25 + 16.0 * 1024.0 {
        violations.push(format!("memory grew from {start} KiB to {end} KiB"));
    }
}
