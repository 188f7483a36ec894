//! Counters a user can log: what the churn cost.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use zaris_core::KvStatus;

const STATUSES: [KvStatus; 8] = KvStatus::ALL;

/// Why a map refresh was started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefreshCause {
    /// A `MOVED` reply: the map is stale.
    Moved,
    /// A status or connection failure the retry machine refreshes after
    /// (`CLUSTERDOWN`, a dead node, a time-out, no owner mapped).
    Failure,
    /// Redirects that go round in circles (a `MOVED` back to the node
    /// asked, or between two nodes): the refresh asks other nodes first.
    RedirectLoop,
    /// The periodic poll.
    Poll,
    /// [`crate::Client::refresh_map`].
    Requested,
}

impl RefreshCause {
    /// Every cause, in the order [`Stats::refreshes_by_cause`] lists them.
    pub const ALL: [RefreshCause; 5] = [
        RefreshCause::Moved,
        RefreshCause::Failure,
        RefreshCause::RedirectLoop,
        RefreshCause::Poll,
        RefreshCause::Requested,
    ];

    /// Its name, as the metrics label it (`moved`, `failure`,
    /// `redirect_loop`, `poll`, `requested`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            RefreshCause::Moved => "moved",
            RefreshCause::Failure => "failure",
            RefreshCause::RedirectLoop => "redirect_loop",
            RefreshCause::Poll => "poll",
            RefreshCause::Requested => "requested",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
}

#[derive(Default)]
pub(crate) struct Counters {
    pub attempts: AtomicU64,
    retries_by_status: [AtomicU64; 8],
    pub retries_after_transport_failure: AtomicU64,
    pub moved_redirects: AtomicU64,
    pub ask_redirects: AtomicU64,
    pub refreshes_started: AtomicU64,
    refreshes_by_cause: [AtomicU64; 5],
    pub redirect_loops: AtomicU64,
    pub refreshes_coalesced: AtomicU64,
    pub refreshes_debounced: AtomicU64,
    pub refreshes_failed: AtomicU64,
    pub pushes_applied: AtomicU64,
    pub watch_conflicts: AtomicU64,
    pub attempts_abandoned: AtomicU64,
    pub owner_waits: AtomicU64,
    pub node_full_waits: AtomicU64,
    pub noscript_fallbacks: AtomicU64,
    pub function_loads: AtomicU64,
    pub scan_rescans: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    /// A refresh started, for `cause`.
    pub(crate) fn refresh_started(&self, cause: RefreshCause) {
        Self::bump(&self.refreshes_started);
        Self::bump(&self.refreshes_by_cause[cause.index()]);
        crate::metrics::refresh(cause.name());
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
            refreshes_by_cause: RefreshCause::ALL
                .iter()
                .zip(&self.refreshes_by_cause)
                .map(|(c, n)| (*c, get(n)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            redirect_loops: get(&self.redirect_loops),
            refreshes_coalesced: get(&self.refreshes_coalesced),
            refreshes_debounced: get(&self.refreshes_debounced),
            refreshes_failed: get(&self.refreshes_failed),
            pushes_applied: get(&self.pushes_applied),
            watch_conflicts: get(&self.watch_conflicts),
            attempts_abandoned: get(&self.attempts_abandoned),
            owner_waits: get(&self.owner_waits),
            node_full_waits: get(&self.node_full_waits),
            noscript_fallbacks: get(&self.noscript_fallbacks),
            function_loads: get(&self.function_loads),
            scan_rescans: get(&self.scan_rescans),
            // The nodes count these two, the cache its own (Client::stats
            // adds them up).
            nodes_opened: 0,
            reconnect_backoffs: 0,
            connections_held: 0,
            reads_moved: 0,
            writes_moved: 0,
            cache_hits: 0,
            cache_misses: 0,
            cache_invalidations: 0,
            cache_flushes: 0,
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
    /// Refreshes started, by cause (zero counts left out).
    pub refreshes_by_cause: Vec<(RefreshCause, u64)>,
    /// `MOVED` replies that went round in circles (back to the node asked,
    /// or between two nodes for one slot): not followed; the map is
    /// refreshed from other nodes instead.
    pub redirect_loops: u64,
    /// Callers that rode a refresh already in flight instead of starting one.
    pub refreshes_coalesced: u64,
    /// Refresh requests dropped because the map was refreshed within the
    /// minimum interval (`Builder::refresh_min_interval`, default 500 ms).
    pub refreshes_debounced: u64,
    /// Refreshes in which no node answered with a usable map.
    pub refreshes_failed: u64,
    /// Ownership changes applied by push (`apply_ownership_change`, `MOVED` hints).
    pub pushes_applied: u64,
    /// Watched transactions run again because a watched key changed.
    pub watch_conflicts: u64,
    /// Attempts on a node that had stopped answering (a request to it timed
    /// out) given up before their time-out because the map moved their
    /// slot to another owner meanwhile; retried there.
    pub attempts_abandoned: u64,
    /// Requests that waited, unsent, for their slot to have an owner able
    /// to answer (a dead master not yet failed over, a slot without an
    /// owner): waits, not attempts.
    pub owner_waits: u64,
    /// Requests that found their node holding `max_in_flight_per_node`
    /// requests already and waited, unsent, for room.
    pub node_full_waits: u64,
    /// Scripts a node did not have (`NOSCRIPT` to `EVALSHA`), sent again
    /// as their source (`EVAL`) to the same owner.
    pub noscript_fallbacks: u64,
    /// Function libraries loaded on every master because a node did not
    /// have the function called (`FCALL`: "Function not found").
    pub function_loads: u64,
    /// Nodes a [`crate::Client::scan`] scanned again for slots that moved
    /// (or were moving) while it ran.
    pub scan_rescans: u64,
    /// Times a node was opened (its requests kept timing out: new ones
    /// wait for the map instead of queueing on it).
    pub nodes_opened: u64,
    /// Connection attempts not made because the node's last ones failed
    /// moments ago (reconnects back off, per node).
    pub reconnect_backoffs: u64,
    /// Times a node held one of its connections (a paused write or a
    /// `WAIT` at its head, while it answered on another): reads then went
    /// on a side connection, writes to slots not held on a write lane, and
    /// writes already sent waited on, never sent again.
    pub connections_held: u64,
    /// Reads sent on a node's side connection because its shared one was
    /// held (those already waiting there, and those that came after).
    pub reads_moved: u64,
    /// Writes sent on a node's write lane because its shared one was held
    /// and their slot was not known to be (docs/behaviour.md §5).
    pub writes_moved: u64,
    /// Reads the client cache answered (`Builder::client_cache`).
    pub cache_hits: u64,
    /// Cacheable reads it could not answer: sent to the node.
    pub cache_misses: u64,
    /// Keys the nodes invalidated (each `invalidate` push counts its keys).
    pub cache_invalidations: u64,
    /// Times a slot's, a node's or every entry went at once (the map
    /// moved a slot, a connection ended, a node turned out no master).
    pub cache_flushes: u64,
}

impl Stats {
    /// Refreshes started for `cause`.
    #[must_use]
    pub fn refreshes(&self, cause: RefreshCause) -> u64 {
        self.refreshes_by_cause
            .iter()
            .find(|(c, _)| *c == cause)
            .map_or(0, |(_, n)| *n)
    }

    /// Retries caused by `status`.
    #[must_use]
    pub fn retries(&self, status: KvStatus) -> u64 {
        self.retries_by_status
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    }
}
