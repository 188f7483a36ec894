//! The history read back: each operation, what the registers, lists,
//! counters and cached reads saw, and the windows that excuse a failure.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use super::*;
use crate::soak::nemesis::{Event, EventKind};
use crate::soak::workload::{Sample, DEADLINE};
use crate::soak::Config;

/// One line of the history.
pub(super) struct Op<'a> {
    pub(super) kind: &'a str,
    pub(super) key: &'a str,
    pub(super) value: &'a str,
    pub(super) invoked: f64,
    pub(super) completed: f64,
    pub(super) outcome: &'a str,
    pub(super) ok: bool,
    pub(super) conflict: bool,
}

pub(super) fn parse(line: &str) -> Option<Op<'_>> {
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
pub(super) fn sequence(value: &str) -> Option<(&str, u64)> {
    let (writer, n) = value.rsplit_once('.')?;
    Some((writer, n.parse().ok()?))
}

#[derive(Default)]
pub(super) struct Register {
    pub(super) durable: bool,
    /// The highest acknowledged `n`, and when it was acknowledged.
    pub(super) acked: Option<(u64, f64)>,
    /// Every acknowledged `n`, with when.
    pub(super) acks: Vec<(u64, f64)>,
    pub(super) written: HashSet<String>,
}

/// A read through the client cache: key, value, invoked (ms).
pub(super) struct CachedRead {
    pub(super) key: String,
    pub(super) value: String,
    pub(super) invoked: f64,
}

/// A list's values ever appended, and the acknowledged ones with when.
pub(super) type Appended = (HashSet<String>, Vec<(String, f64, f64)>);

#[derive(Default)]
pub(super) struct Counted {
    pub(super) acked: u64,
    /// Of which acknowledged inside a lossy event's window.
    pub(super) acked_in_lossy: u64,
    pub(super) unknown: u64,
    pub(super) acked_versions: Vec<u64>,
}

/// How long after an event its effects may still reach the client (a
/// connection dropped at once is found closed by the next request).
pub(super) const EFFECTS_ARRIVE_MS: f64 = 100.0;

/// Whether operation `op` overlapped an event that may fail operations
/// (see `EventKind::may_fail_operations`), or began as its effects were
/// still arriving; or is a request of several keys that a step-by-step
/// migration ran out of attempts by the rules alone: `ASK` at the source,
/// `TRYAGAIN` at the target (its keys split between the two), and, the
/// migration over during the `Migrating` wait (docs/behaviour.md §3),
/// `MOVED` at the third and last attempt.
pub(super) fn excused(events: &[Event], op: &Op) -> bool {
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
pub(super) fn in_lossy_window(events: &[Event], at: f64) -> bool {
    events.iter().any(|e| {
        e.kind.may_lose_plain_writes() && at >= e.start_ms - REPLICATION_LAG_MS && at <= e.end_ms
    })
}

/// Whether an operation from `invoked` to `completed` (ms) ran while a
/// node held requests without losing any (a write pause, an atomic
/// migration's), and met no event that could lose one: a write it sent
/// could not have been lost, so it may not land twice.
pub(super) fn held_without_losing(events: &[Event], invoked: f64, completed: f64) -> bool {
    let met: Vec<&Event> = events
        .iter()
        .filter(|e| invoked <= e.end_ms + EFFECTS_ARRIVE_MS && completed >= e.start_ms)
        .collect();
    !met.is_empty() && met.iter().all(|e| e.kind.holds_without_losing())
}

/// What the history says, read once: each kind of operation by key, and
/// the tallies the report draws.
pub(super) struct Observed {
    pub(super) registers: HashMap<String, Register>,
    pub(super) reads: Vec<(String, String)>,
    pub(super) cached_reads: Vec<CachedRead>,
    pub(super) appends: HashMap<String, Appended>,
    pub(super) counters: HashMap<String, Counted>,
    pub(super) multi_written: HashSet<String>,
    pub(super) multi_reads: Vec<String>,
    pub(super) popped: HashMap<String, u64>,
    pub(super) timeline: Vec<Second>,
    pub(super) all: Tally,
    pub(super) in_kills: Tally,
    pub(super) worst: f64,
    pub(super) pubsub: [u64; 3],
    /// Operations that failed with no fault to excuse them.
    pub(super) unexcused: u64,
}

impl Observed {
    /// Reads `history`; what is wrong on its face (an unreadable line, an
    /// operation past its deadline, a subscription that failed) goes to
    /// `violations`.
    pub(super) fn read(
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
    pub(super) fn count_refreshes(&mut self, samples: &[Sample]) {
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
