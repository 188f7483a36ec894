//! Counters a user can log: what the churn cost.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use zaris_core::KvStatus;

const STATUSES: [KvStatus; 8] = KvStatus::ALL;

#[derive(Default)]
pub(crate) struct Counters {
    pub attempts: AtomicU64,
    retries_by_status: [AtomicU64; 8],
    pub retries_after_transport_failure: AtomicU64,
    pub moved_redirects: AtomicU64,
    pub ask_redirects: AtomicU64,
    pub refreshes_started: AtomicU64,
    pub refreshes_coalesced: AtomicU64,
    pub refreshes_debounced: AtomicU64,
    pub refreshes_failed: AtomicU64,
    pub pushes_applied: AtomicU64,
    pub watch_conflicts: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    pub(crate) fn retried(&self, status: KvStatus) {
        let i = STATUSES.iter().position(|s| *s == status).unwrap_or(0);
        Self::bump(&self.retries_by_status[i]);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Relaxed);
        Stats {
            attempts: get(&self.attempts),
            retries_by_status: STATUSES
                .iter()
                .zip(&self.retries_by_status)
                .map(|(s, c)| (*s, get(c)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            retries_after_transport_failure: get(&self.retries_after_transport_failure),
            moved_redirects: get(&self.moved_redirects),
            ask_redirects: get(&self.ask_redirects),
            refreshes_started: get(&self.refreshes_started),
            refreshes_coalesced: get(&self.refreshes_coalesced),
            refreshes_debounced: get(&self.refreshes_debounced),
            refreshes_failed: get(&self.refreshes_failed),
            pushes_applied: get(&self.pushes_applied),
            watch_conflicts: get(&self.watch_conflicts),
        }
    }
}

/// A point-in-time copy of the client's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Attempts sent (first tries, retries and redirects).
    pub attempts: u64,
    /// Retries, by the status that caused them (zero counts left out).
    pub retries_by_status: Vec<(KvStatus, u64)>,
    /// Retries after a connection failure or time-out.
    pub retries_after_transport_failure: u64,
    /// `MOVED` replies followed.
    pub moved_redirects: u64,
    /// `ASK` redirects followed.
    pub ask_redirects: u64,
    /// Map refreshes started (at most one in flight).
    pub refreshes_started: u64,
    /// Callers that rode a refresh already in flight instead of starting one.
    pub refreshes_coalesced: u64,
    /// Refresh requests dropped because the map was refreshed < 500 ms ago.
    pub refreshes_debounced: u64,
    /// Refreshes in which no node answered with a usable map.
    pub refreshes_failed: u64,
    /// Ownership changes applied by push (`apply_ownership_change`, `MOVED` hints).
    pub pushes_applied: u64,
    /// Watched transactions run again because a watched key changed.
    pub watch_conflicts: u64,
}

impl Stats {
    /// Retries caused by `status`.
    #[must_use]
    pub fn retries(&self, status: KvStatus) -> u64 {
        self.retries_by_status
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    }
}
