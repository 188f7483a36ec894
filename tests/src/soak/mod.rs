//! `just soak`: a seeded nemesis soak. A real 3+3 cluster behind the
//! fault-injecting proxies is driven through `zaris-client` by a mixed
//! workload while a nemesis draws a churn event every few seconds; every
//! operation goes to a history file (invoke, complete, outcome, value),
//! and a checker reads it back at the end and judges it key by key against
//! the final state of the cluster (what it checks: [`Report`]).
//!
//! The seed decides the event schedule (kinds, nodes, slots, pauses); the
//! same seed replays it. Output: `report.json`, `timeline.svg` and
//! `history.tsv` in the output directory.

mod check;
mod nemesis;
pub mod workload;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

pub use check::{draw, judge, Report};
pub use nemesis::{Churn, Draw, Event, EventKind, Nemesis, Schedule};

use crate::cluster::Cluster;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long the workload runs.
    pub seconds: u64,
    /// The event schedule's seed.
    pub seed: u64,
    /// `redis-server` or `valkey-server`.
    pub server: String,
    /// Where the report, the timeline and the history go.
    pub out: PathBuf,
    /// Empty: events drawn from the seed for `seconds`. Otherwise these,
    /// in order, 2 s apart, then 2 s more of workload (`seconds` unused).
    pub script: Vec<EventKind>,
}

pub use crate::keys::Rng;

/// Milliseconds since the soak began, on tokio's clock (turmoil's, in the
/// simulation).
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Clock {
    /// A clock that starts now.
    #[must_use]
    pub fn start() -> Self {
        Self(Instant::now())
    }

    /// Milliseconds since it started.
    #[must_use]
    pub fn ms(self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

/// Where every operation is written as it completes: a line a record, to
/// whoever holds the other end (a thread writing a file in the soak, a
/// buffer in the simulation), so the workload never waits on disk.
#[derive(Clone)]
pub struct History {
    lines: mpsc::Sender<String>,
    clock: Clock,
}

impl History {
    /// A history sending its lines to `lines`, timed by `clock`.
    #[must_use]
    pub fn new(lines: mpsc::Sender<String>, clock: Clock) -> Self {
        Self { lines, clock }
    }

    /// One operation: its kind, key, value (the one written, or read),
    /// when it was invoked (ms), and its outcome (`ok` or the error).
    pub(crate) fn record<E: std::fmt::Display>(
        &self,
        kind: &str,
        key: &str,
        value: &str,
        invoked: f64,
        outcome: Result<(), E>,
    ) {
        let completed = self.clock.ms();
        let outcome = match outcome {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("err:{}", e.to_string().replace(['\t', '\n'], " ")),
        };
        let _ = self.lines.send(format!(
            "{kind}\t{key}\t{value}\t{invoked:.1}\t{completed:.1}\t{outcome}\n"
        ));
    }
}

/// Runs the soak and judges it.
///
/// # Errors
/// The cluster did not start, or the output could not be written.
pub fn run(config: &Config) -> anyhow::Result<Report> {
    std::fs::create_dir_all(&config.out)?;
    tracing::info!(seed = config.seed, seconds = config.seconds, server = %config.server, "soak");
    eprintln!(
        "==> soak: {} s on {}, seed {} (the same seed replays the same events)",
        config.seconds, config.server, config.seed
    );
    let cluster = Cluster::start_proxied(&config.server, 3, 1)?;
    let seeds = cluster.addrs();
    let clock = Clock::start();
    let history_path = config.out.join("history.tsv");
    let (lines, written) = mpsc::channel::<String>();
    let writer = std::thread::spawn({
        let path = history_path.clone();
        move || -> io::Result<u64> {
            let mut file = BufWriter::new(std::fs::File::create(path)?);
            let mut n = 0;
            for line in written {
                file.write_all(line.as_bytes())?;
                n += 1;
            }
            file.flush()?;
            Ok(n)
        }
    });
    let history = History { lines, clock };
    let rt = crate::runtime();
    let stop = workload::Control::new(None);
    let clients = rt.block_on(workload::Clients::connect(&seeds))?;
    let samples = Arc::new(Mutex::new(Vec::new()));
    let tasks = {
        let _inside = rt.enter();
        workload::spawn(&clients, &history, &stop)
    };
    let sampler = rt.spawn(workload::sample(
        clients.clone(),
        clock,
        stop.clone(),
        samples.clone(),
    ));

    // The nemesis owns the cluster on this thread while the workload runs;
    // its steps block, on a runtime of their own.
    let steps = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let mut nemesis = nemesis::Nemesis::new(cluster, config.seed, clock);
    let until = Duration::from_secs(config.seconds);
    let started = std::time::Instant::now();
    let mut last_progress = std::time::Instant::now();
    let mut told = 0;
    for &kind in &config.script {
        steps.block_on(nemesis.play(kind, Duration::from_secs(2)));
        told = tell(nemesis.events(), told);
    }
    if !config.script.is_empty() {
        std::thread::sleep(Duration::from_secs(2));
    }
    while config.script.is_empty() && started.elapsed() < until {
        steps.block_on(nemesis.next_event(until.saturating_sub(started.elapsed())));
        told = tell(nemesis.events(), told);
        if last_progress.elapsed() >= Duration::from_secs(10) {
            last_progress = std::time::Instant::now();
            let stats = clients.plain.stats();
            eprintln!(
                "    {:>5.0} s: {} events, {} attempts so far",
                started.elapsed().as_secs_f64(),
                nemesis.events().len(),
                stats.attempts
            );
        }
    }
    stop.stop();
    for task in tasks {
        let _ = rt.block_on(task);
    }
    let _ = rt.block_on(sampler);
    let (cluster, events) = nemesis.finish();
    cluster.wait_healthy()?;
    let finals = rt.block_on(workload::read_back(&clients))?;
    let stats = clients.plain.stats();
    let durable_stats = clients.durable.stats();
    let cached_stats = clients.cached.stats();
    let rare_stats = clients.cached_rare.stats();
    drop(history);
    drop(clients);
    let operations = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the history writer panicked"))??;
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
    tracing::info!(operations, "history written");
    let report = check::judge(
        config,
        io::BufReader::new(std::fs::File::open(&history_path)?),
        &events,
        &finals,
        &samples,
        [&stats, &durable_stats, &cached_stats, &rare_stats],
    )?;
    std::fs::write(
        config.out.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    check::draw(&report, &config.out.join("timeline.svg"))?;
    Ok(report)
}

/// Prints the events after the first `told`; how many are told now.
fn tell(events: &[Event], told: usize) -> usize {
    for (n, event) in events.iter().enumerate().skip(told) {
        eprintln!(
            "    event {:>3}: {:?} on node {} at {:.1} s, {:.1} s long{}",
            n + 1,
            event.kind,
            event.node,
            event.start_ms / 1000.0,
            (event.end_ms - event.start_ms) / 1000.0,
            if event.trouble.is_empty() {
                String::new()
            } else {
                format!(" ({})", event.trouble)
            }
        );
    }
    events.len()
}

/// The default output directory, under the workspace's `target`.
#[must_use]
pub fn default_out() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/soak")
}
