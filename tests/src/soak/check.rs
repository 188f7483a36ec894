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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use plotters::prelude::*;
use zaris_client::{RefreshCause, Stats};

use super::nemesis::{Event, EventKind};
use super::workload::{Finals, Sample, CACHE_LEASE, DEADLINE, QUEUE, TX_KEYS};
use super::Config;

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

/// One line of the history.
struct Op<'a> {
    kind: &'a str,
    key: &'a str,
    value: &'a str,
    invoked: f64,
    completed: f64,
    outcome: &'a str,
    ok: bool,
    conflict: bool,
}

fn parse(line: &str) -> Option<Op<'_>> {
    let mut f = line.split('\t');
    let (kind, key, value) = (f.next()?, f.next()?, f.next()?);
    let invoked = f.next()?.parse().ok()?;
    let completed = f.next()?.parse().ok()?;
    let outcome = f.next()?;
    Some(Op {
        kind,
        key,
        value,
        invoked,
        completed,
        outcome,
        ok: outcome == "ok",
        conflict: outcome == "err:conflict",
    })
}

/// `w.n` → `(w, n)`.
fn sequence(value: &str) -> Option<(&str, u64)> {
    let (writer, n) = value.rsplit_once('.')?;
    Some((writer, n.parse().ok()?))
}

#[derive(Default)]
struct Register {
    durable: bool,
    /// The highest acknowledged `n`, and when it was acknowledged.
    acked: Option<(u64, f64)>,
    /// Every acknowledged `n`, with when.
    acks: Vec<(u64, f64)>,
    written: HashSet<String>,
}

/// A read through the client cache: key, value, invoked (ms).
struct CachedRead {
    key: String,
    value: String,
    invoked: f64,
}

/// A list's values ever appended, and the acknowledged ones with when.
type Appended = (HashSet<String>, Vec<(String, f64, f64)>);

#[derive(Default)]
struct Counted {
    acked: u64,
    /// Of which acknowledged inside a lossy event's window.
    acked_in_lossy: u64,
    unknown: u64,
    acked_versions: Vec<u64>,
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

/// How long after an event its effects may still reach the client (a
/// connection dropped at once is found closed by the next request).
const EFFECTS_ARRIVE_MS: f64 = 100.0;

/// Whether operation `op` overlapped an event that may fail operations
/// (see `EventKind::may_fail_operations`), or began as its effects were
/// still arriving; or is a request of several keys that a step-by-step
/// migration ran out of attempts by the rules alone: `ASK` at the source,
/// `TRYAGAIN` at the target (its keys split between the two), and, the
/// migration over during the `Migrating` wait (docs/behaviour.md §3),
/// `MOVED` at the third and last attempt.
fn excused(events: &[Event], op: &Op) -> bool {
    let several_keys = matches!(op.kind, "inc" | "mw" | "mr" | "tx");
    events.iter().any(|e| {
        let overlaps = op.invoked <= e.end_ms + EFFECTS_ARRIVE_MS && op.completed >= e.start_ms;
        let budget_spent = e.kind == EventKind::MigrateRange
            && several_keys
            && op.outcome.starts_with("err:Moved after 3 attempt(s)");
        overlaps && (e.kind.may_fail_operations() || budget_spent)
    })
}

/// Whether an operation that ended at `at` (ms) did so inside a window in
/// which an event may lose plain writes (from the replication lag before
/// it to its end).
fn in_lossy_window(events: &[Event], at: f64) -> bool {
    events.iter().any(|e| {
        e.kind.may_lose_plain_writes() && at >= e.start_ms - REPLICATION_LAG_MS && at <= e.end_ms
    })
}

/// Whether an operation from `invoked` to `completed` (ms) ran while a
/// node held requests without losing any (a write pause, an atomic
/// migration's), and met no event that could lose one: a write it sent
/// could not have been lost, so it may not land twice.
fn held_without_losing(events: &[Event], invoked: f64, completed: f64) -> bool {
    let met: Vec<&Event> = events
        .iter()
        .filter(|e| invoked <= e.end_ms + EFFECTS_ARRIVE_MS && completed >= e.start_ms)
        .collect();
    !met.is_empty() && met.iter().all(|e| e.kind.holds_without_losing())
}

/// What the history says, read once: each kind of operation by key, and
/// the tallies the report draws.
struct Observed {
    registers: HashMap<String, Register>,
    reads: Vec<(String, String)>,
    cached_reads: Vec<CachedRead>,
    appends: HashMap<String, Appended>,
    counters: HashMap<String, Counted>,
    multi_written: HashSet<String>,
    multi_reads: Vec<String>,
    popped: HashMap<String, u64>,
    timeline: Vec<Second>,
    all: Tally,
    in_kills: Tally,
    worst: f64,
    pubsub: [u64; 3],
    /// Operations that failed with no fault to excuse them.
    unexcused: u64,
}

impl Observed {
    /// Reads `history`; what is wrong on its face (an unreadable line, an
    /// operation past its deadline, a subscription that failed) goes to
    /// `violations`.
    fn read(
        config: &Config,
        history: impl BufRead,
        events: &[Event],
        violations: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
        let kills: Vec<(f64, f64)> = events
            .iter()
            .filter(|e| e.kind == EventKind::KillMaster)
            .map(|e| (e.start_ms, e.end_ms))
            .collect();
        let deadline_ms = DEADLINE.as_secs_f64() * 1000.0;
        let mut seen = Observed {
            registers: HashMap::new(),
            reads: Vec::new(),
            cached_reads: Vec::new(),
            appends: HashMap::new(),
            counters: HashMap::new(),
            multi_written: HashSet::from(["-".to_owned()]),
            multi_reads: Vec::new(),
            popped: HashMap::new(),
            timeline: vec![Second::default(); config.seconds as usize + 30],
            all: Tally::default(),
            in_kills: Tally::default(),
            worst: 0.0,
            pubsub: [0; 3],
            unexcused: 0,
        };
        for line in history.lines() {
            let line = line?;
            let Some(op) = parse(&line) else {
                violations.push(format!("an unreadable history line: {line:?}"));
                continue;
            };
            match op.kind {
                "recv" => {
                    seen.pubsub[1] += 1;
                    continue;
                }
                "gap" => {
                    seen.pubsub[2] += 1;
                    continue;
                }
                "sub" => {
                    violations.push(format!("could not subscribe: {line}"));
                    continue;
                }
                "pub" if op.ok => seen.pubsub[0] += 1,
                _ => {}
            }
            // A conflict is an answer: the operation worked as asked.
            let ok = op.ok || op.conflict;
            if !ok && !excused(events, &op) {
                seen.unexcused += 1;
                if seen.unexcused <= 20 {
                    violations.push(format!(
                        "failed with no fault to excuse it (the client must hide this churn): {line}"
                    ));
                }
            }
            seen.all.add(ok);
            if kills
                .iter()
                .any(|&(a, b)| op.invoked >= a && op.invoked <= b)
            {
                seen.in_kills.add(ok);
            }
            let took = op.completed - op.invoked;
            seen.worst = seen.worst.max(took);
            if took > deadline_ms + DEADLINE_SLACK_MS {
                violations.push(format!(
                    "past its deadline by {:.0} ms: {line}",
                    took - deadline_ms
                ));
            }
            let second = (op.completed / 1000.0) as usize;
            if let Some(s) = seen.timeline.get_mut(second) {
                if ok {
                    s.succeeded += 1;
                } else {
                    s.failed += 1;
                }
            }
            match op.kind {
                "dw" | "pw" => {
                    let r = seen.registers.entry(op.key.to_owned()).or_default();
                    r.durable = op.kind == "dw";
                    r.written.insert(op.value.to_owned());
                    if op.ok {
                        if let Some((_, n)) = sequence(op.value) {
                            if r.acked.is_none_or(|(m, _)| n > m) {
                                r.acked = Some((n, op.completed));
                            }
                            r.acks.push((n, op.completed));
                        }
                    }
                }
                "dr" | "pr" if op.ok => seen.reads.push((op.key.to_owned(), op.value.to_owned())),
                "cr" if op.ok => {
                    seen.reads.push((op.key.to_owned(), op.value.to_owned()));
                    seen.cached_reads.push(CachedRead {
                        key: op.key.to_owned(),
                        value: op.value.to_owned(),
                        invoked: op.invoked,
                    });
                }
                "ap" | "push" => {
                    let (written, acked) = seen.appends.entry(op.key.to_owned()).or_default();
                    written.insert(op.value.to_owned());
                    if op.ok {
                        acked.push((op.value.to_owned(), op.invoked, op.completed));
                    }
                }
                "pop" if op.ok => *seen.popped.entry(op.value.to_owned()).or_default() += 1,
                "inc" | "tx" => {
                    let c = seen.counters.entry(op.key.to_owned()).or_default();
                    if op.ok {
                        c.acked += 1;
                        c.acked_in_lossy += u64::from(in_lossy_window(events, op.completed));
                    } else {
                        c.unknown += 1;
                    }
                }
                "cas" => {
                    let c = seen.counters.entry(op.key.to_owned()).or_default();
                    if op.ok {
                        c.acked += 1;
                        c.acked_versions.push(op.value.parse().unwrap_or(0));
                    } else if op.value != "-" {
                        // A conflict too: it may answer a retry of an attempt
                        // that timed out after it applied.
                        c.unknown += 1;
                    }
                }
                "mw" => {
                    seen.multi_written.insert(op.value.to_owned());
                }
                "mr" if op.ok => seen.multi_reads.push(op.value.to_owned()),
                _ => {}
            }
        }
        Ok(seen)
    }

    /// The refreshes a second, from the samples, into the timeline, cut
    /// after its last second with operations.
    fn count_refreshes(&mut self, samples: &[Sample]) {
        let timeline = &mut self.timeline;
        for pair in samples.windows(2) {
            let second = (pair[1].at_ms / 1000.0) as usize;
            if let Some(s) = timeline.get_mut(second) {
                s.refreshes += pair[1].refreshes.saturating_sub(pair[0].refreshes);
            }
        }
        let last = timeline
            .iter()
            .rposition(|s| s.succeeded + s.failed > 0)
            .map_or(0, |i| i + 1);
        timeline.truncate(last);
    }
}

/// Registers: the final value is the last acknowledged one or later, and
/// every value read was written.
fn check_registers(
    seen: &Observed,
    finals: &Finals,
    lossy: &dyn Fn(f64) -> bool,
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let Observed {
        registers,
        reads,
        multi_written,
        multi_reads,
        ..
    } = seen;
    for (key, r) in registers {
        let Some((acked, at)) = r.acked else { continue };
        let last = finals
            .values
            .get(key)
            .cloned()
            .flatten()
            .and_then(|v| sequence(&v).map(|(_, n)| n))
            .unwrap_or(0);
        if last < acked {
            if r.durable {
                report.lost_durable_writes += 1;
                violations.push(format!("{key}: durable write {acked} lost (found {last})"));
            } else {
                report.lost_plain_writes.note(key, lossy(at));
            }
        }
    }
    for (key, value) in reads {
        let written = registers
            .get(key)
            .is_some_and(|r| r.written.contains(value));
        if value != "-" && !written {
            violations.push(format!("{key}: read {value:?}, never written"));
        }
    }
    for read in multi_reads {
        for value in read.split(',') {
            if !multi_written.contains(value) {
                violations.push(format!("MGET read {value:?}, never written"));
            }
        }
    }
}

/// The cached readers against the client cache's bound
/// (docs/behaviour.md §9): a read that starts more than the lease after a
/// durable write was acknowledged returns it or a later one. Reads inside
/// the lease that returned an older value are counted (the bound is not
/// vacuous when some happen), as are hits (most reads in steady state).
fn check_cache(
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

/// Lists and the queue: every acknowledged append present once, nothing
/// never appended.
fn check_lists(
    seen: &Observed,
    finals: &Finals,
    events: &[Event],
    lossy: &dyn Fn(f64) -> bool,
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let Observed {
        appends, popped, ..
    } = seen;
    for (list, (written, acked)) in appends {
        let present = finals.lists.get(list).cloned().unwrap_or_default();
        let mut seen: HashMap<&str, u64> = HashMap::new();
        for v in &present {
            *seen.entry(v.as_str()).or_default() += 1;
            if !written.contains(v) {
                violations.push(format!("{list} holds {v:?}, never appended"));
            }
        }
        report.duplicated_appends += seen
            .values()
            .filter(|&&n| n > 1)
            .map(|n| n - 1)
            .sum::<u64>();
        for (value, invoked, at) in acked {
            let found = seen.contains_key(value.as_str())
                || (list == QUEUE && popped.contains_key(value.as_str()));
            if !found {
                report
                    .lost_appends
                    .note(&format!("{list} {value}"), lossy(*at));
            }
            let copies = seen.get(value.as_str()).copied().unwrap_or(0);
            if copies > 1 && held_without_losing(events, *invoked, *at) {
                violations.push(format!(
                    "{list} holds {value:?} {copies} times, acknowledged once, sent while a node \
                     held it without losing it ({invoked:.0}-{at:.0} ms): a paused write sent again"
                ));
            }
        }
        if list == QUEUE {
            report.duplicated_appends += popped
                .values()
                .filter(|&&n| n > 1)
                .map(|n| n - 1)
                .sum::<u64>();
            for v in popped.keys() {
                if !written.contains(v) {
                    violations.push(format!("popped {v:?}, never pushed"));
                }
            }
        }
    }
    if report.duplicated_appends > report.unknown_outcomes {
        violations.push(format!(
            "{} values appended twice, but only {} attempts had an unknown outcome",
            report.duplicated_appends, report.unknown_outcomes
        ));
    }
}

/// Counters, transactions and compare-and-set chains: no acknowledged
/// increment lost but where the servers may lose it, no fork, no gap, no
/// half-applied transaction.
fn check_counters(
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

/// Refreshes: under the bound (two a client per event's refresh intervals,
/// plus the polls).
fn check_refreshes(
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

/// Memory: 10 s in against the end.
fn check_memory(samples: &[Sample], report: &mut Report, violations: &mut Vec<String>) {
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

/// Event colors (Okabe-Ito and Tol's muted: told apart by most eyes).
const PALETTE: [RGBColor; 15] = [
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(240, 228, 66),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(51, 34, 136),
    RGBColor(136, 204, 238),
    RGBColor(68, 170, 153),
    RGBColor(17, 119, 51),
    RGBColor(153, 153, 51),
    RGBColor(204, 102, 119),
    RGBColor(136, 34, 85),
    RGBColor(170, 68, 153),
];

/// An event kind's name as the report spells it (`kill-master`).
fn kind_name(kind: EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// The timeline: operations a second (succeeded, failed) and refreshes a
/// second, each event shaded and named.
pub fn draw(report: &Report, path: &Path) -> anyhow::Result<()> {
    // Sizes as plotters takes them: its SVGs show text at size / 1.24, and
    // the page shows this 1100-pixel chart about 830 wide.
    const LABELS: (&str, u32) = ("sans-serif", 19);
    let root = SVGBackend::new(path, (1100, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, rest) = root.split_vertically(340);
    let (legend, bottom) = rest.split_vertically(84);
    let seconds = report.timeline.len().max(1) as f64;
    let most = report
        .timeline
        .iter()
        .map(|s| s.succeeded.max(s.failed))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let title = format!(
        "soak on {}, seed {}: {} operations, {:.3}% succeeded, {} events",
        report.server,
        report.seed,
        report.all.operations,
        report.all.ratio * 100.0,
        report.events.len()
    );
    let mut ops = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 24))
        .margin(10)
        .margin_right(30)
        .x_label_area_size(28)
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..seconds, 0.0..most * 1.15)?;
    ops.configure_mesh()
        .y_desc("operations / s")
        .label_style(LABELS)
        .axis_desc_style(LABELS)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .disable_x_mesh()
        .draw()?;
    // One color per kind of event; names on the spans only when they fit.
    let color_of = |kind: EventKind| {
        let i = EventKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let named = report.events.len() <= 30;
    for (i, e) in report.events.iter().enumerate() {
        let (a, b) = (
            e.start_ms / 1000.0,
            (e.end_ms / 1000.0).max(e.start_ms / 1000.0 + 0.2),
        );
        let color = color_of(e.kind).mix(0.35);
        ops.draw_series(std::iter::once(Rectangle::new(
            [(a, 0.0), (b, most * 1.15)],
            color.filled(),
        )))?;
        if named {
            let label = kind_name(e.kind);
            let y = most * (1.1 - 0.08 * (i % 4) as f64);
            ops.draw_series(std::iter::once(Text::new(label, (a, y), LABELS)))?;
        }
    }
    // The kinds' colors, in a strip of their own.
    // About 9.5 pixels a character at this size, and room after each.
    let (mut x, mut y) = (88, 6);
    for kind in EventKind::ALL {
        if !report.events.iter().any(|e| e.kind == kind) {
            continue;
        }
        let name = kind_name(kind);
        let width = 44 + 10 * i32::try_from(name.len()).unwrap_or(10);
        if x + width > 1090 {
            (x, y) = (88, y + 26);
        }
        legend.draw(&Rectangle::new(
            [(x, y + 2), (x + 14, y + 16)],
            color_of(kind).filled(),
        ))?;
        legend.draw(&Text::new(name, (x + 20, y), LABELS))?;
        x += width;
    }
    let line = |f: fn(&Second) -> u64| -> Vec<(f64, f64)> {
        report
            .timeline
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64 + 0.5, f(s) as f64))
            .collect()
    };
    ops.draw_series(LineSeries::new(line(|s| s.succeeded), BLUE.stroke_width(2)))?
        .label("succeeded")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE.stroke_width(2)));
    ops.draw_series(LineSeries::new(line(|s| s.failed), RED.stroke_width(2)))?
        .label("failed")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
    ops.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font(LABELS)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let most_refreshes = report
        .timeline
        .iter()
        .map(|s| s.refreshes)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut refreshes = ChartBuilder::on(&bottom)
        .margin(10)
        .margin_right(30)
        .x_label_area_size(50)
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..seconds, 0.0..most_refreshes * 1.2)?;
    refreshes
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("refreshes / s")
        .label_style(LABELS)
        .axis_desc_style(LABELS)
        .y_labels(4)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .disable_x_mesh()
        .draw()?;
    refreshes.draw_series(report.timeline.iter().enumerate().map(|(i, s)| {
        Rectangle::new(
            [(i as f64 + 0.1, 0.0), (i as f64 + 0.9, s.refreshes as f64)],
            GREEN.mix(0.7).filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}
