//! A campaign: seeds run on every core (each alone on its thread, so its
//! outcome does not depend on how many ran beside it), summed up as
//! `target/sim/report.json` says them. Each seed's [`Summary`] is all the
//! report needs of it, so a long campaign can keep its summaries as they
//! come and be taken up again where it stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use zaris_tests::soak::EventKind;

use crate::effect::Effect;
use crate::run::{run, Outcome, Setup};

/// The effect that shows an event of `kind` did what it is for: a
/// partition that never held a connection, a kill that never led to a
/// failover, proves nothing.
#[must_use]
pub fn proof_of(kind: EventKind) -> Effect {
    match kind {
        EventKind::ManualFailover => Effect::ManualFailovers,
        EventKind::ForcedTakeover => Effect::ForcedTakeovers,
        EventKind::MigrateRange => Effect::KeysMigrated,
        EventKind::BackAndForth => Effect::AtomicSlotHandOvers,
        EventKind::ScaleOutAndIn => Effect::MastersAdded,
        EventKind::KillMaster | EventKind::FreezeLong => Effect::AutomaticFailovers,
        EventKind::KillReplica => Effect::WritesADeadReplicaMissed,
        EventKind::FreezeShort => Effect::ConnectionsHeldByAFreeze,
        EventKind::Latency => Effect::RepliesDelayedByLatency,
        EventKind::DropConnections => Effect::ConnectionsDropped,
        EventKind::Partition => Effect::ConnectionsHeldByAPartition,
        EventKind::CutOneWay => Effect::RepliesHeldByAOneWayCut,
        EventKind::Trickle => Effect::BytesTrickled,
        EventKind::NodesReplaced => Effect::NodesJoinedAtANewAddress,
        EventKind::WritePause | EventKind::WritePauseLong => Effect::WritesHeldByAPause,
        EventKind::AtomicMigration => Effect::AtomicSlotMigrations,
    }
}

/// `target/sim/report.json`.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    /// Seeds run.
    pub seeds: u64,
    /// The first.
    pub from: u64,
    /// Workload operations, all seeds.
    pub operations: u64,
    /// Simulated seconds, all seeds.
    pub simulated_seconds: f64,
    /// The same in microseconds, summed exactly: in whatever order seeds
    /// come, their sum is the same.
    #[serde(skip)]
    simulated_us: u64,
    /// Wall seconds the campaign took, and on how many threads.
    pub wall_seconds: f64,
    /// See `wall_seconds`.
    pub jobs: usize,
    /// Seeds taken as they were from an interrupted campaign, not run
    /// again: `wall_seconds` is the time the others took.
    pub resumed: u64,
    /// Every broken check: the seed and what.
    pub violations: Vec<Violation>,
    /// The nemesis's events that took effect (their kind's proof, see
    /// [`proof_of`], counted at least once while they ran), by kind.
    pub events_by_kind: BTreeMap<EventKind, u64>,
    /// Events drawn, by kind, whether or not they took effect.
    pub events_drawn: BTreeMap<EventKind, u64>,
    /// What each kind of event did while it ran (messages held,
    /// connections cut, writes lost, redirects...).
    pub effects_by_kind: BTreeMap<EventKind, BTreeMap<String, u64>>,
    /// Every effect, all kinds (and between events).
    pub effects: BTreeMap<String, u64>,
    /// Each seed, in order.
    pub runs: Vec<Run>,
}

/// One broken check.
#[derive(Debug, serde::Serialize)]
pub struct Violation {
    /// The seed that broke it.
    pub seed: u64,
    /// What the checker said.
    pub what: String,
}

/// One seed's run.
#[derive(Debug, serde::Serialize)]
pub struct Run {
    /// The seed.
    pub seed: u64,
    /// The hash of its trace.
    pub trace_sha256: String,
    /// Its workload's operations.
    pub operations: u64,
    /// Checks it broke.
    pub violations: usize,
}

/// What a campaign keeps of one seed's outcome: a line of a long
/// campaign's `runs.jsonl`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// The seed.
    pub seed: u64,
    /// The hash of its trace.
    pub trace_sha256: String,
    /// Its workload's operations.
    pub operations: u64,
    /// Simulated seconds.
    pub simulated_seconds: f64,
    /// What the checker said.
    pub violations: Vec<String>,
    /// Each event, and what it did while it ran.
    pub took: Vec<(EventKind, BTreeMap<String, u64>)>,
    /// Every effect, events or not.
    pub counts: BTreeMap<String, u64>,
}

impl From<&Outcome> for Summary {
    fn from(outcome: &Outcome) -> Self {
        let owned = |counts: &crate::model::Counts| {
            counts
                .iter()
                .map(|(what, n)| ((*what).to_owned(), *n))
                .collect()
        };
        Self {
            seed: outcome.seed,
            trace_sha256: outcome.trace_sha256.clone(),
            operations: outcome.operations,
            simulated_seconds: outcome.simulated.as_secs_f64(),
            violations: outcome.violations.clone(),
            took: outcome.took.iter().map(|(k, c)| (*k, owned(c))).collect(),
            counts: owned(&outcome.counts),
        }
    }
}

impl Report {
    /// Adds one seed's summary.
    pub fn add(&mut self, seed: &Summary) {
        self.operations += seed.operations;
        self.simulated_us += (seed.simulated_seconds * 1e6).round() as u64;
        self.simulated_seconds = self.simulated_us as f64 / 1e6;
        for (kind, effects) in &seed.took {
            *self.events_drawn.entry(*kind).or_default() += 1;
            if effects.get(proof_of(*kind).name()).is_some_and(|&n| n > 0) {
                *self.events_by_kind.entry(*kind).or_default() += 1;
            }
            let mine = self.effects_by_kind.entry(*kind).or_default();
            for (what, n) in effects {
                *mine.entry(what.clone()).or_default() += n;
            }
        }
        for (what, n) in &seed.counts {
            *self.effects.entry(what.clone()).or_default() += n;
        }
        for v in &seed.violations {
            self.violations.push(Violation {
                seed: seed.seed,
                what: v.clone(),
            });
        }
        self.runs.push(Run {
            seed: seed.seed,
            trace_sha256: seed.trace_sha256.clone(),
            operations: seed.operations,
            violations: seed.violations.len(),
        });
    }

    /// The kinds drawn of which no event took effect.
    #[must_use]
    pub fn idle_kinds(&self) -> Vec<EventKind> {
        self.events_drawn
            .keys()
            .filter(|kind| !self.events_by_kind.contains_key(*kind))
            .copied()
            .collect()
    }
}

/// Runs seeds `from..from + seeds` on `jobs` threads, each seed alone on
/// its thread (so its outcome does not depend on the others), with the
/// setup `setup` makes of it, handing every outcome to `each` as it comes
/// (in any order). Once `each` says `false`, no new seed starts; those
/// running finish and are handed on too.
fn run_seeds(
    seeds: u64,
    from: u64,
    jobs: usize,
    skip: Arc<BTreeSet<u64>>,
    setup: impl Fn(u64) -> Setup + Clone + Send + 'static,
    mut each: impl FnMut(Outcome) -> bool,
) {
    let next = Arc::new(AtomicU64::new(from));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let end = from + seeds;
    let (done, results) = mpsc::channel::<Outcome>();
    let workers: Vec<_> = (0..jobs.max(1))
        .map(|_| {
            let (next, stop, done, setup, skip) = (
                next.clone(),
                stop.clone(),
                done.clone(),
                setup.clone(),
                skip.clone(),
            );
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if skip.contains(&seed) {
                    continue;
                }
                if seed >= end
                    || stop.load(Ordering::Relaxed)
                    || done.send(run(&setup(seed))).is_err()
                {
                    break;
                }
            })
        })
        .collect();
    drop(done);
    for outcome in results {
        if !each(outcome) {
            stop.store(true, Ordering::Relaxed);
        }
    }
    for w in workers {
        let _ = w.join();
    }
}

/// Runs seeds from `from` on `jobs` threads with `plant` planted, until
/// one breaks a check (its seed and first violation) or `seeds` have run
/// (`None`): the test that the checker catches a known bug.
#[must_use]
pub fn hunt(plant: &str, seeds: u64, from: u64, jobs: usize) -> Option<(u64, String)> {
    let plant = plant.to_owned();
    let setup = move |seed| Setup {
        plant: Some(plant.clone()),
        ..Setup::campaign(seed)
    };
    let mut found: Option<(u64, String)> = None;
    run_seeds(seeds, from, jobs, Arc::default(), setup, |outcome| {
        if let Some(what) = outcome.violations.first() {
            // The lowest seed wins, whatever the threads' order.
            if found.as_ref().is_none_or(|(s, _)| outcome.seed < *s) {
                found = Some((outcome.seed, what.clone()));
            }
        }
        found.is_none()
    });
    found
}

/// The summaries of `done` that a campaign of `seeds` seeds from `from`
/// takes as run: those in its range, each seed once (the first kept).
#[must_use]
pub fn ours(mut done: Vec<Summary>, seeds: u64, from: u64) -> Vec<Summary> {
    let mut seen = BTreeSet::new();
    done.retain(|s| (from..from + seeds).contains(&s.seed) && seen.insert(s.seed));
    done
}

/// Runs `seeds` seeds from `from` on `jobs` threads, telling `each` of
/// every seed's summary as it comes (in any order); the report is in seed
/// order. The seeds of `done` (an interrupted campaign's, say) are not run
/// again: their summaries count as they are.
pub fn campaign(
    seeds: u64,
    from: u64,
    jobs: usize,
    done: Vec<Summary>,
    mut each: impl FnMut(&Summary, &Report),
) -> Report {
    let started = Instant::now();
    let mut report = Report {
        seeds,
        from,
        jobs: jobs.max(1),
        ..Report::default()
    };
    let mut skip = BTreeSet::new();
    for seed in ours(done, seeds, from) {
        skip.insert(seed.seed);
        report.add(&seed);
        report.resumed += 1;
    }
    run_seeds(
        seeds,
        from,
        jobs,
        Arc::new(skip),
        Setup::campaign,
        |outcome| {
            let summary = Summary::from(&outcome);
            report.add(&summary);
            each(&summary, &report);
            true
        },
    );
    report.runs.sort_by_key(|r| r.seed);
    report.violations.sort_by_key(|v| v.seed);
    report.wall_seconds = started.elapsed().as_secs_f64();
    report
}
