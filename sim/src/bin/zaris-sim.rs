//! `just sim [SEEDS] [FROM]`: a campaign of seeded runs on every core, and
//! `just sim-trace SEED FILE`: one run's whole trace.
//!
//! ```text
//! zaris-sim campaign SEEDS FROM [--jobs N] [--out DIR] [--resume] [--record]
//! zaris-sim trace SEED FILE [--plant NAME]
//! ```
//!
//! A campaign prints its progress (seeds done, seeds per second, simulated
//! seconds per wall second), the command that replays each failing seed,
//! and writes `report.json` (see `zaris_sim::Report`) to `DIR`
//! (`target/sim/`). It fails when any seed broke a check. Each seed's
//! summary is appended to `DIR/runs.jsonl` as it finishes; `--resume`
//! takes up the campaign those lines began (same build, same seeds) and
//! runs only the seeds they lack, so a campaign of days survives being
//! stopped. `--record` appends the campaign's summary to
//! `bench/sim/history.jsonl`, which the dashboard's Reliability page shows
//! per commit.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use zaris_sim::{run, Outcome, Setup, Summary};

fn main() -> anyhow::Result<()> {
    // `RUST_LOG=zaris_client=debug just sim-trace ...` shows the client's
    // own account of a run (its retries, refreshes and maps).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
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
    let file = PathBuf::from(
        args.get(1)
            .context("usage: zaris-sim trace SEED FILE [--plant NAME]")?,
    );
    let plant = match args.get(2).map(String::as_str) {
        Some("--plant") => Some(args.get(3).context("--plant NAME")?.clone()),
        Some(other) => bail!("unknown option {other:?}"),
        None => None,
    };
    let outcome = run(&Setup {
        keep_trace: true,
        plant,
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

/// Appends the campaign's summary line to `path`: the commit, when, and
/// the figures the Reliability page shows.
fn keep(report: &zaris_sim::Report, path: &std::path::Path) -> anyhow::Result<()> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map_or_else(|| "unknown".to_owned(), |c| c.trim().to_owned())
    };
    let line = serde_json::json!({
        "commit": git(&["rev-parse", "--short", "HEAD"]),
        "date": git(&["log", "-1", "--format=%cs"]),
        "seeds": report.seeds,
        "from": report.from,
        "operations": report.operations,
        "simulated_hours": report.simulated_seconds / 3600.0,
        "wall_seconds": report.wall_seconds,
        "jobs": report.jobs,
        "violations": report.violations.len(),
        "failed_seeds": report.violations.iter().map(|v| v.seed).collect::<std::collections::BTreeSet<_>>(),
        "events_by_kind": report.events_by_kind,
        "events_drawn": report.events_drawn,
    });
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut history = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(history, "{line}")?;
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

/// The summaries `runs.jsonl` in `out` holds, and the file opened to add
/// more: emptied first unless `resume`. A line cut short by the
/// interruption is dropped.
fn kept_runs(out: &std::path::Path, resume: bool) -> anyhow::Result<(Vec<Summary>, std::fs::File)> {
    std::fs::create_dir_all(out)?;
    let path = out.join("runs.jsonl");
    let mut done = Vec::new();
    let mut good = 0;
    if resume {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.split_inclusive('\n') {
            match serde_json::from_str::<Summary>(line) {
                Ok(summary) if line.ends_with('\n') => {
                    done.push(summary);
                    good += line.len();
                }
                _ => break,
            }
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("{}", path.display()))?;
    file.set_len(good as u64)?;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))?;
    Ok((done, file))
}

fn campaign(args: &[String]) -> anyhow::Result<()> {
    let seeds = number(args.first(), "SEEDS", 2_000)?;
    let from = number(args.get(1), "FROM", 1)?;
    let mut jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let mut out = PathBuf::from("target/sim");
    let mut record = false;
    let mut resume = false;
    let mut rest = args.iter().skip(2);
    while let Some(flag) = rest.next() {
        match flag.as_str() {
            "--jobs" => jobs = number(rest.next(), "--jobs", 1)?.max(1) as usize,
            "--out" => out = PathBuf::from(rest.next().context("--out DIR")?),
            "--resume" => resume = true,
            "--record" => record = true,
            other => bail!("unknown option {other:?}"),
        }
    }
    let (done, mut runs) = kept_runs(&out, resume)?;
    // As the report counts them: a seed the file holds twice, once.
    let done = zaris_sim::ours(done, seeds, from);
    eprintln!(
        "==> {seeds} seeds from {from} on {jobs} threads (each seed replays exactly: `just sim-trace SEED FILE`){}",
        if done.is_empty() {
            String::new()
        } else {
            format!("; {} already run, kept in {}", done.len(), out.join("runs.jsonl").display())
        }
    );
    let started = Instant::now();
    let mut last = Instant::now();
    let mut failed: Vec<u64> = done
        .iter()
        .filter(|s| !s.violations.is_empty())
        .map(|s| s.seed)
        .collect();
    // What the campaign resumed with is not this run's speed.
    let before = done.len() as u64;
    let simulated_before: f64 = done.iter().map(|s| s.simulated_seconds).sum();
    let report = zaris_sim::campaign(seeds, from, jobs, done, |outcome, report| {
        if let Ok(line) = serde_json::to_string(outcome) {
            let _ = writeln!(runs, "{line}");
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
        let n = report.runs.len() as u64;
        if last.elapsed() >= Duration::from_secs(1) || n == seeds {
            last = Instant::now();
            progress(
                (n, before),
                seeds,
                started.elapsed(),
                report.simulated_seconds - simulated_before,
                failed.len(),
            );
        }
    });
    eprintln!();
    let path = out.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    let ran = seeds - report.resumed;
    let simulated_now = report.simulated_seconds - simulated_before;
    eprintln!(
        "==> {seeds} seeds, {} operations, {:.1} simulated hours; {ran} seeds run in {:.0} s ({:.1} seeds/s, {:.0} simulated s per wall s); {} violations; {}",
        report.operations,
        report.simulated_seconds / 3600.0,
        report.wall_seconds,
        ran as f64 / report.wall_seconds,
        simulated_now / report.wall_seconds,
        report.violations.len(),
        path.display()
    );
    if record {
        let kept = PathBuf::from("bench/sim/history.jsonl");
        keep(&report, &kept)?;
        eprintln!(
            "    recorded in {} (just dashboard shows it)",
            kept.display()
        );
    }
    let idle = report.idle_kinds();
    if !idle.is_empty() {
        bail!("event kinds drawn that never took effect (a fault that does nothing proves nothing): {idle:?}");
    }
    if !failed.is_empty() {
        failed.sort_unstable();
        bail!("{} seeds broke a check: {failed:?}", failed.len());
    }
    Ok(())
}

/// `[#####     ] 1234/2000 seeds  8.5 seeds/s  320 simulated s per wall
/// s  0 failed`: redrawn in place on a terminal, a line every 10 s in a
/// log.
/// `done` counts the seeds an interrupted campaign had run (`.1`), which
/// `wall` and `simulated` leave out.
fn progress(done: (u64, u64), of: u64, wall: Duration, simulated: f64, failed: usize) {
    let (done, before) = done;
    use std::io::IsTerminal as _;
    const WIDTH: u64 = 30;
    let terminal = std::io::stderr().is_terminal();
    let secs = wall.as_secs_f64().max(1e-9);
    if !terminal && done != of && !(secs as u64).is_multiple_of(10) {
        return;
    }
    let filled = (done * WIDTH / of.max(1)) as usize;
    let bar = format!(
        "{}{}",
        "#".repeat(filled),
        " ".repeat(WIDTH as usize - filled)
    );
    let line = format!(
        "    [{bar}] {done}/{of} seeds  {:.1} seeds/s  {:.0} simulated s per wall s  {failed} failed ",
        (done - before) as f64 / secs,
        simulated / secs
    );
    if terminal {
        eprint!("\r{line}");
    } else {
        eprintln!("{line}");
    }
    let _ = std::io::stderr().flush();
}
