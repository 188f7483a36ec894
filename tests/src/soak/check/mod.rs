//! The soak's checker: reads the history back and judges it key by key
//! against the final state, then draws the timeline.
//!
//! What it holds the client to (each miss is a violation):
//! - every acknowledged durable write (`WAIT 1`) is present: its value or
//!   a later one from the same writer;
//! - acknowledged plain writes are lost only in the window of an event
//!   that can lose them (a `kill -9`, a long freeze, a partition, a forced
//!   takeover: the replica that took over never had them), and are counted;
//! - no read returns a value that was never written;
//! - every acknowledged list append is present, except in such a window;
//!   a value appears twice only when some attempt's outcome was unknown (a
//!   time-out retried), and both are counted;
//! - counters end between their acknowledged increments and those plus the
//!   unknown ones; compare-and-set chains have no fork (a version
//!   acknowledged twice) and no gap (a version no operation made);
//! - the two counters a transaction increments together stay equal (the
//!   transactions are plain: their acknowledged increments may be lost only
//!   as plain writes are, counted with them);
//! - no operation ran past its deadline by more than 100 ms;
//! - no operation failed unless its window overlapped a fault that may
//!   fail one (a node lost, a takeover, replies held past the attempt
//!   time-out, connections cut); a manual failover, a migration, a short
//!   freeze or latency must be hidden;
//! - refreshes stay under the bound of docs/behaviour.md §5: per client,
//!   one per refresh interval (500 ms) an event lasts, plus two, plus the
//!   polls;
//! - the process's memory does not grow: at the end at most 1.25x what it
//!   was 10 s in, plus 16 MiB.
//!
//! One rule a file: `registers.rs` (durable and plain writes, reads of
//! values never written), `cache.rs` (cached reads within the bound),
//! `lists.rs` (appends, duplicates), `counters.rs` (counters, compare-and-
//! set chains, transactions), `refreshes.rs` (the refresh bound),
//! `memory.rs` (no growth); `history.rs` reads the history into what they
//! judge, `draw.rs` draws the timeline.

use std::collections::BTreeMap;
use std::io::BufRead;

use zaris_client::Stats;

use super::nemesis::{Event, EventKind};
use super::workload::{Finals, Sample};
use super::Config;

mod cache;
mod counters;
mod draw;
mod history;
mod lists;
mod memory;
mod refreshes;
mod registers;

use cache::check_cache;
use counters::check_counters;
pub use draw::draw;
use history::{in_lossy_window, Observed};
use lists::check_lists;
use memory::check_memory;
use refreshes::check_refreshes;
use registers::check_registers;

/// How much later than its deadline an operation may end.
const DEADLINE_SLACK_MS: f64 = 100.0;
/// A write acknowledged this long before a lossy event may still be in
/// flight to the replica that takes over.
const REPLICATION_LAG_MS: f64 = 1_000.0;
/// The refresh interval (docs/behaviour.md §5).
const REFRESH_INTERVAL_MS: f64 = 500.0;

/// Operations and how many succeeded.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// Operations.
    pub operations: u64,
    /// Of which succeeded.
    pub succeeded: u64,
    /// `succeeded / operations` (1 with none).
    pub ratio: f64,
}

impl Tally {
    fn add(&mut self, ok: bool) {
        self.operations += 1;
        self.succeeded += u64::from(ok);
    }

    fn close(mut self) -> Self {
        self.ratio = if self.operations == 0 {
            1.0
        } else {
            self.succeeded as f64 / self.operations as f64
        };
        self
    }
}

/// Acknowledged writes found missing, by where.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Lost {
    /// Inside the window of an event that may lose them.
    pub inside_lossy_windows: u64,
    /// Anywhere else (a violation).
    pub elsewhere: u64,
    /// The keys (up to 20).
    pub keys: Vec<String>,
}

impl Lost {
    fn note(&mut self, key: &str, inside: bool) {
        if inside {
            self.inside_lossy_windows += 1;
        } else {
            self.elsewhere += 1;
        }
        if self.keys.len() < 20 {
            self.keys.push(key.to_owned());
        }
    }

    fn total(&self) -> u64 {
        self.inside_lossy_windows + self.elsewhere
    }
}

/// One second of the run.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Second {
    /// Operations that succeeded, completed in that second.
    pub succeeded: u64,
    /// Operations that failed.
    pub failed: u64,
    /// Map refreshes started.
    pub refreshes: u64,
}

/// What the cached readers did, and how the bound held.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CacheTally {
    /// Reads through the cache that were answered.
    pub reads: u64,
    /// Of the cached client's cacheable reads: answered from memory, and
    /// sent to a node.
    pub hits: u64,
    /// See `hits`.
    pub misses: u64,
    /// Keys the nodes invalidated, and flushes of a slot, node or all.
    pub invalidations: u64,
    /// See `invalidations`.
    pub flushes: u64,
    /// Reads inside the lease after a write that returned an older value:
    /// allowed, and what shows the bound is not vacuous.
    pub stale_inside_lease: u64,
    /// Reads that broke the bound.
    pub violations: u64,
}

/// The soak's figures and verdict. The checks, each miss a violation,
/// are those of this module's own documentation: durable writes never
/// lost; plain writes and appends lost only inside a lossy event's window;
/// no read of a value never written; counters and compare-and-set chains
/// consistent; transactions whole; no operation past its deadline by more
/// than 100 ms; refreshes and memory bounded.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// `redis-server` or `valkey-server`.
    pub server: String,
    /// The seed: the same one replays the same events.
    pub seed: u64,
    /// How long the workload ran.
    pub seconds: u64,
    /// Every operation of the workload.
    pub all: Tally,
    /// Operations invoked inside a `kill -9` window (the kill to the
    /// cluster healthy again).
    pub in_kill_windows: Tally,
    /// Events by kind.
    pub events_by_kind: BTreeMap<EventKind, u64>,
    /// Every event.
    pub events: Vec<Event>,
    /// Acknowledged durable writes (registers, counters, compare-and-set)
    /// missing at the end.
    pub lost_durable_writes: u64,
    /// Acknowledged plain writes missing at the end.
    pub lost_plain_writes: Lost,
    /// Acknowledged list appends (and queue pushes) missing at the end.
    pub lost_appends: Lost,
    /// List values present twice.
    pub duplicated_appends: u64,
    /// Attempts whose outcome was unknown (timed out, retried).
    pub unknown_outcomes: u64,
    /// The longest operation (ms).
    pub worst_operation_ms: f64,
    /// Map refreshes started, both clients.
    pub refreshes: u64,
    /// Refreshes started per event, polls left out.
    pub refreshes_per_event: f64,
    /// The bound on refreshes (see the module).
    pub refresh_bound: u64,
    /// Resident memory 10 s in and at the end (KiB).
    pub memory_kib: [u64; 2],
    /// Sharded pub/sub: published, received, gaps told.
    pub pubsub: [u64; 3],
    /// The cached readers, held to the cache's bound.
    #[serde(default)]
    pub cache: CacheTally,
    /// Each second.
    pub timeline: Vec<Second>,
    /// Every check that failed.
    pub violations: Vec<String>,
}

impl Report {
    /// Whether every check held.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The figures in a few lines.
    #[must_use]
    pub fn summary(&self) -> String {
        let events: Vec<String> = self
            .events_by_kind
            .iter()
            .map(|(k, n)| format!("{k:?} {n}"))
            .collect();
        format!(
            "{} operations on {} in {} s, {:.4}% succeeded; in kill -9 windows {} of {} ({:.4}%)\n    \
             events: {}\n    \
             lost: {} durable writes, {} plain writes ({} inside lossy windows), {} appends ({} inside); \
             {} values appended twice, {} unknown outcomes\n    \
             worst operation {:.0} ms; {} refreshes ({:.1} an event, bound {}); memory {} -> {} KiB; \
             pub/sub {} published, {} received, {} gaps; {} violations",
            self.all.operations,
            self.server,
            self.seconds,
            self.all.ratio * 100.0,
            self.in_kill_windows.succeeded,
            self.in_kill_windows.operations,
            self.in_kill_windows.ratio * 100.0,
            events.join(", "),
            self.lost_durable_writes,
            self.lost_plain_writes.total(),
            self.lost_plain_writes.inside_lossy_windows,
            self.lost_appends.total(),
            self.lost_appends.inside_lossy_windows,
            self.duplicated_appends,
            self.unknown_outcomes,
            self.worst_operation_ms,
            self.refreshes,
            self.refreshes_per_event,
            self.refresh_bound,
            self.memory_kib[0],
            self.memory_kib[1],
            self.pubsub[0],
            self.pubsub[1],
            self.pubsub[2],
            self.violations.len(),
        )
    }
}

/// Reads the history (its lines as [`History`](super::History) writes
/// them) and judges it: each kind of operation against what the cluster
/// holds at the end ([`Finals`]), the refreshes against their bound, the
/// memory against its start (when sampled).
///
/// # Errors
/// The history could not be read.
pub fn judge(
    config: &Config,
    history: impl BufRead,
    events: &[Event],
    finals: &Finals,
    samples: &[Sample],
    stats: [&Stats; 4],
) -> anyhow::Result<Report> {
    let mut report = Report {
        server: config.server.clone(),
        seed: config.seed,
        seconds: config.seconds,
        events: events.to_vec(),
        ..Report::default()
    };
    let mut violations = Vec::new();
    for e in events {
        *report.events_by_kind.entry(e.kind).or_default() += 1;
        if !e.trouble.is_empty() {
            violations.push(format!(
                "the nemesis's {:?} at {:.1} s went wrong: {}",
                e.kind,
                e.start_ms / 1000.0,
                e.trouble
            ));
        }
    }
    let mut seen = Observed::read(config, history, events, &mut violations)?;
    report.unknown_outcomes = stats
        .iter()
        .map(|s| s.retries_after_transport_failure)
        .sum();
    let lossy = |at: f64| in_lossy_window(events, at);
    check_registers(&seen, finals, &lossy, &mut report, &mut violations);
    check_cache(&seen, &stats[2..], &mut report, &mut violations);
    check_lists(&seen, finals, events, &lossy, &mut report, &mut violations);
    check_counters(&seen, finals, &mut report, &mut violations);
    check_refreshes(events, stats, &mut report, &mut violations);
    check_memory(samples, &mut report, &mut violations);
    seen.count_refreshes(samples);

    report.all = seen.all.close();
    report.in_kill_windows = seen.in_kills.close();
    report.worst_operation_ms = seen.worst;
    report.pubsub = seen.pubsub;
    report.timeline = seen.timeline;
    violations.truncate(200);
    report.violations = violations;
    Ok(report)
}
