//! `just sim [SEEDS] [FROM]`: a campaign of seeded runs on every core, and
//! `just sim-trace SEED FILE`: one run's whole trace.
//!
//! ```text
//! zaris-sim campaign SEEDS FROM [--jobs N] [--out DIR]
//! zaris-sim trace SEED FILE
//! ```
//!
//! A campaign prints its progress (seeds done, seeds per second, simulated
//! seconds per wall second), the command that replays each failing seed,
//! and writes `report.json` (see [`Report`]) to `target/sim/`. It fails
//! when any seed broke a check.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use zaris_sim::{run, Outcome, Setup};

/// `target/sim/report.json`.
#[derive(serde::Serialize)]
struct Report {
    /// Seeds run.
    seeds: u64,
    /// The first.
    from: u64,
    /// Workload operations, all seeds.
    operations: u64,
    /// Simulated seconds, all seeds.
    simulated_seconds: f64,
    /// Wall seconds the campaign took, and on how many threads.
    wall_seconds: f64,
    jobs: usize,
    /// Every broken check: the seed and what.
    violations: Vec<Violation>,
    /// The nemesis's events that took effect (had at least one counted
    /// effect), by kind.
    events_by_kind: BTreeMap<String, u64>,
    /// Events drawn, by kind, whether or not they took effect.
    events_drawn: BTreeMap<String, u64>,
    /// What each kind of event did while it ran (messages held,
    /// connections cut, writes lost, redirects...).
    effects_by_kind: BTreeMap<String, BTreeMap<String, u64>>,
    /// Every effect, all kinds (and between events).
    effects: BTreeMap<String, u64>,
    /// Each seed.
    runs: Vec<Run>,
}

#[derive(serde::Serialize)]
struct Violation {
    seed: u64,
    what: String,
}

#[derive(serde::Serialize)]
struct Run {
    seed: u64,
    trace_sha256: String,
    operations: u64,
    violations: usize,
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("campaign") => campaign(&args[1..]),
        Some("trace") => trace(&args[1..]),
        _ => bail!("usage: zaris-sim campaign SEEDS FROM [--jobs N] [--out DIR] | zaris-sim trace SEED FILE"),
    }
}

fn number(arg: Option<&String>, what: &str, default: u64) -> anyhow::Result<u64> {
    arg.map_or(Ok(default), |a| {
        a.replace('_', "")
            .parse()
            .with_context(|| format!("{what}: {a:?} is not a number"))
    })
}

/// One run's trace, written as JSON lines.
fn trace(args: &[String]) -> anyhow::Result<()> {
    let seed = number(args.first(), "SEED", 0)?;
    let file = PathBuf::from(args.get(1).context("usage: zaris-sim trace SEED FILE")?);
    let outcome = run(&Setup {
        keep_trace: true,
        ..Setup::campaign(seed)
    });
    let mut text = outcome.trace.join("\n");
    text.push('\n');
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&file, text)?;
    eprintln!(
        "seed {seed}: {} operations, {} trace lines, sha256 {}, {}",
        outcome.operations,
        outcome.trace.len(),
        outcome.trace_sha256,
        verdict(&outcome)
    );
    eprintln!("==> {}", file.display());
    Ok(())
}

fn verdict(outcome: &Outcome) -> String {
    if outcome.violations.is_empty() {
        "every check held".to_owned()
    } else {
        format!(
            "{} violations: {}",
            outcome.violations.len(),
            outcome.violations.join("; ")
        )
    }
}

fn campaign(args: &[String]) -> anyhow::Result<()> {
    let seeds = number(args.first(), "SEEDS", 2_000)?;
    let from = number(args.get(1), "FROM", 1)?;
    let mut jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let mut out = PathBuf::from("target/sim");
    let mut rest = args.iter().skip(2);
    while let Some(flag) = rest.next() {
        match flag.as_str() {
            "--jobs" => jobs = number(rest.next(), "--jobs", 1)?.max(1) as usize,
            "--out" => out = PathBuf::from(rest.next().context("--out DIR")?),
            other => bail!("unknown option {other:?}"),
        }
    }
    eprintln!("==> {seeds} seeds from {from} on {jobs} threads (each seed replays exactly: `just sim-trace SEED FILE`)");
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(from));
    let end = from + seeds;
    let (done, results) = mpsc::channel::<Outcome>();
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (next, done) = (next.clone(), done.clone());
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    break;
                }
                if done.send(run(&Setup::campaign(seed))).is_err() {
                    break;
                }
            })
        })
        .collect();
    drop(done);
    let mut report = Report {
        seeds,
        from,
        operations: 0,
        simulated_seconds: 0.0,
        wall_seconds: 0.0,
        jobs,
        violations: Vec::new(),
        events_by_kind: BTreeMap::new(),
        events_drawn: BTreeMap::new(),
        effects_by_kind: BTreeMap::new(),
        effects: BTreeMap::new(),
        runs: Vec::with_capacity(seeds as usize),
    };
    let mut last = Instant::now();
    let mut failed = Vec::new();
    for outcome in results {
        report.operations += outcome.operations;
        report.simulated_seconds += outcome.simulated.as_secs_f64();
        for &(kind, effects) in &outcome.took {
            *report.events_drawn.entry(format!("{kind:?}")).or_default() += 1;
            if effects > 0 {
                *report
                    .events_by_kind
                    .entry(format!("{kind:?}"))
                    .or_default() += 1;
            }
        }
        for (kind, counts) in &outcome.effects {
            let mine = report
                .effects_by_kind
                .entry(format!("{kind:?}"))
                .or_default();
            for (what, n) in counts {
                *mine.entry((*what).to_owned()).or_default() += n;
            }
        }
        for (what, n) in &outcome.counts {
            *report.effects.entry((*what).to_owned()).or_default() += n;
        }
        for v in &outcome.violations {
            report.violations.push(Violation {
                seed: outcome.seed,
                what: v.clone(),
            });
        }
        if !outcome.violations.is_empty() {
            failed.push(outcome.seed);
            eprintln!(
                "\n    seed {} broke {} checks: {}\n    replay: just sim-trace {} target/sim/{}.jsonl",
                outcome.seed,
                outcome.violations.len(),
                outcome.violations.first().map_or("", String::as_str),
                outcome.seed,
                outcome.seed
            );
        }
        report.runs.push(Run {
            seed: outcome.seed,
            trace_sha256: outcome.trace_sha256,
            operations: outcome.operations,
            violations: outcome.violations.len(),
        });
        let n = report.runs.len() as u64;
        if last.elapsed() >= Duration::from_secs(1) || n == seeds {
            last = Instant::now();
            progress(
                n,
                seeds,
                started.elapsed(),
                report.simulated_seconds,
                failed.len(),
            );
        }
    }
    for w in workers {
        let _ = w.join();
    }
    eprintln!();
    report.runs.sort_by_key(|r| r.seed);
    report.violations.sort_by_key(|v| v.seed);
    report.wall_seconds = started.elapsed().as_secs_f64();
    std::fs::create_dir_all(&out)?;
    let path = out.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    eprintln!(
        "==> {seeds} seeds, {} operations, {:.1} simulated hours in {:.0} s ({:.1} seeds/s, {:.0} simulated s per wall s); {} violations; {}",
        report.operations,
        report.simulated_seconds / 3600.0,
        report.wall_seconds,
        seeds as f64 / report.wall_seconds,
        report.simulated_seconds / report.wall_seconds,
        report.violations.len(),
        path.display()
    );
    let idle = idle_kinds(&report);
    if !idle.is_empty() {
        bail!("event kinds drawn that never took effect (a fault that does nothing proves nothing): {idle:?}");
    }
    if !failed.is_empty() {
        bail!("{} seeds broke a check: {failed:?}", failed.len());
    }
    Ok(())
}

/// The kinds of event drawn in the campaign of which none took effect.
fn idle_kinds(report: &Report) -> Vec<String> {
    report
        .events_drawn
        .keys()
        .filter(|kind| !report.events_by_kind.contains_key(*kind))
        .cloned()
        .collect()
}

/// `[#####     ] 1234/2000 seeds  8.5 seeds/s  320 sim-s/s  0 failed`.
fn progress(done: u64, of: u64, wall: Duration, simulated: f64, failed: usize) {
    const WIDTH: u64 = 30;
    let filled = (done * WIDTH / of.max(1)) as usize;
    let bar = format!(
        "{}{}",
        "#".repeat(filled),
        " ".repeat(WIDTH as usize - filled)
    );
    let secs = wall.as_secs_f64().max(1e-9);
    eprint!(
        "\r    [{bar}] {done}/{of} seeds  {:.1} seeds/s  {:.0} simulated s per wall s  {failed} failed ",
        done as f64 / secs,
        simulated / secs
    );
    let _ = std::io::stderr().flush();
}
