//! Refreshes under the bound of docs/behaviour.md §5.

use zaris_client::{RefreshCause, Stats};

use super::*;
use crate::soak::nemesis::Event;

/// Refreshes: under the bound (two a client per event's refresh intervals,
/// plus the polls).
pub(super) fn check_refreshes(
    events: &[Event],
    stats: [&Stats; 4],
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let polls: u64 = stats.iter().map(|s| s.refreshes(RefreshCause::Poll)).sum();
    report.refreshes = stats.iter().map(|s| s.refreshes_started).sum();
    let per_client: f64 = events
        .iter()
        .map(|e| (e.end_ms - e.start_ms) / REFRESH_INTERVAL_MS + 2.0)
        .sum::<f64>()
        + 2.0;
    report.refresh_bound = (stats.len() as f64 * per_client) as u64 + polls;
    report.refreshes_per_event =
        report.refreshes.saturating_sub(polls) as f64 / events.len().max(1) as f64;
    if report.refreshes > report.refresh_bound {
        violations.push(format!(
            "{} refreshes, over the bound of {}",
            report.refreshes, report.refresh_bound
        ));
    }
}
