//! One seed's run: the model cluster on turmoil's `cluster` host, the real
//! client and the soak's workload on the `app` host, the soak's nemesis
//! drawing its events from the seed, and the soak's checker judging the
//! history against the cluster's final state. Everything the run does is
//! decided by the seed: turmoil's network, the client's draws
//! (`zaris_client::sim_seed`), the model's, and the nemesis's schedule.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use zaris_tests::soak::workload::{self, Clients, Control};
use zaris_tests::soak::{judge, Churn, Clock, Config, Event, History, Nemesis, Report};

use crate::churn::SimCluster;
use crate::model::{Counts, Model};
use crate::trace::{json, Trace};

/// What to run.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The seed.
    pub seed: u64,
    /// How long the workload runs (simulated seconds).
    pub seconds: u64,
    /// Each workload task's pause before each operation.
    pub pace: Duration,
    /// Keep every trace line (for `just sim-trace`), not only the hash.
    pub keep_trace: bool,
    /// A known bug planted in the client (`zaris_client::sim_plant`), for
    /// the test that the checker catches it.
    pub plant: Option<String>,
}

impl Setup {
    /// The campaign's run of `seed`: a minute of the soak's workload, each
    /// task paced at 350 ms.
    #[must_use]
    pub fn campaign(seed: u64) -> Self {
        Self {
            seed,
            seconds: 60,
            pace: Duration::from_millis(350),
            keep_trace: false,
            plant: None,
        }
    }
}

/// What a run came to.
#[derive(Debug)]
pub struct Outcome {
    /// Its seed.
    pub seed: u64,
    /// Operations of the workload.
    pub operations: u64,
    /// Simulated time, workload and convergence included.
    pub simulated: Duration,
    /// Every check that failed (sorted), and what stopped the run if it
    /// did not finish.
    pub violations: Vec<String>,
    /// The events the nemesis ran.
    pub events: Vec<Event>,
    /// What the faults did.
    pub counts: Counts,
    /// Each event, and what it did while it ran.
    pub took: Vec<(zaris_tests::soak::EventKind, Counts)>,
    /// The hash of the trace.
    pub trace_sha256: String,
    /// The trace's lines, when kept.
    pub trace: Vec<String>,
    /// The checker's report.
    pub report: Option<Report>,
}

/// What the `app` host hands back: the checker's report, the events, the
/// operations.
type Driven = (Report, Vec<Event>, u64);

/// The cluster's seeds as the client is given them.
fn seeds(model: &Model) -> Vec<String> {
    (0..3).map(|i| model.addr(i)).collect()
}

/// The simulation every run uses: seeded, 5 ms ticks (a tick each way is
/// the least a message takes), up to `lasting`.
#[must_use]
pub fn simulation(seed: u64, lasting: Duration) -> turmoil::Builder {
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .simulation_duration(lasting)
        .tick_duration(Duration::from_millis(5))
        .min_message_latency(Duration::ZERO)
        .max_message_latency(Duration::from_millis(1));
    builder
}

/// Runs one seed.
#[must_use]
pub fn run(setup: &Setup) -> Outcome {
    let seed = setup.seed;
    zaris_client::sim_seed(seed);
    let planted = zaris_client::sim_plant(setup.plant.as_deref());
    let mut model = Model::new(3, true, 13, seed);
    if setup.keep_trace {
        model.trace = Trace::keeping();
    }
    let model = Rc::new(RefCell::new(model));
    let mut sim = simulation(seed, Duration::from_secs(setup.seconds + 600)).build();
    sim.host(crate::model::HOST, {
        let model = model.clone();
        move || crate::serve::cluster(model.clone())
    });
    let result: Rc<RefCell<Option<Driven>>> = Rc::default();
    let failure: Rc<RefCell<Option<String>>> = Rc::default();
    sim.client("app", {
        let (model, result, failure, setup) = (
            model.clone(),
            result.clone(),
            failure.clone(),
            setup.clone(),
        );
        async move {
            match drive(&setup, model).await {
                Ok(r) => *result.borrow_mut() = Some(r),
                Err(e) => *failure.borrow_mut() = Some(e.to_string()),
            }
            Ok(())
        }
    });
    if let Err(e) = sim.run() {
        *failure.borrow_mut() = Some(format!("the simulation failed: {e}"));
    }
    let simulated = sim.elapsed();
    drop(sim);
    let mut model = Rc::try_unwrap(model)
        .map(RefCell::into_inner)
        .unwrap_or_else(|_| panic!("the model outlived its simulation"));
    let (report, events, operations) = match result.take() {
        Some((report, events, operations)) => (Some(report), events, operations),
        None => (None, Vec::new(), 0),
    };
    let mut violations: Vec<String> = report
        .as_ref()
        .map(|r| r.violations.clone())
        .unwrap_or_default();
    if let Some(f) = failure.take() {
        violations.push(f);
    }
    if let Err(e) = planted {
        violations.push(e);
    }
    let _ = zaris_client::sim_plant(None);
    violations.sort();
    for v in &violations {
        model
            .trace
            .line(format!(r#"{{"kind":"violation","what":{}}}"#, json(v)));
    }
    model.trace.line(format!(
        r#"{{"kind":"verdict","seed":{seed},"operations":{operations},"violations":{},"passed":{}}}"#,
        violations.len(),
        violations.is_empty()
    ));
    Outcome {
        seed,
        operations,
        simulated,
        violations,
        events,
        counts: std::mem::take(&mut model.counts),
        took: std::mem::take(&mut model.took),
        trace_sha256: model.trace.sha256(),
        trace: model.trace.lines().to_vec(),
        report,
    }
}

/// The `app` host: the clients connect, the workload and the nemesis run,
/// the cluster settles, the final state is read and judged.
async fn drive(setup: &Setup, model: Rc<RefCell<Model>>) -> anyhow::Result<Driven> {
    let clock = Clock::start();
    let (lines, history_lines) = std::sync::mpsc::channel::<String>();
    let history = History::new(lines, clock);
    let seeds = seeds(&model.borrow());
    let clients = Clients::connect(&seeds).await?;
    let control = Control::new(Some(setup.pace));
    let tasks = workload::spawn(&clients, &history, &control);
    let mut nemesis = Nemesis::new(SimCluster::new(model.clone()), setup.seed, clock);
    let until = Duration::from_secs(setup.seconds);
    let started = tokio::time::Instant::now();
    while started.elapsed() < until {
        nemesis
            .next_event(until.saturating_sub(started.elapsed()))
            .await;
    }
    control.stop();
    for task in tasks {
        let _ = task.await;
    }
    let (cluster, events) = nemesis.finish();
    cluster.wait_healthy().await?;
    let finals = workload::read_back(&clients).await?;
    let stats = [
        clients.plain.stats(),
        clients.durable.stats(),
        clients.cached.stats(),
        clients.cached_rare.stats(),
    ];
    drop(history);
    drop(clients);
    let text: String = history_lines.try_iter().collect();
    let operations = text.lines().count() as u64;
    {
        let mut m = model.borrow_mut();
        for line in text.lines() {
            m.trace
                .line(format!(r#"{{"kind":"op","line":{}}}"#, json(line)));
        }
        for e in &events {
            m.trace.line(format!(
                r#"{{"kind":"event","event":{:?},"node":{},"start_ms":{:.1},"end_ms":{:.1},"trouble":{}}}"#,
                format!("{:?}", e.kind),
                e.node,
                e.start_ms,
                e.end_ms,
                json(&e.trouble)
            ));
        }
    }
    let config = Config {
        seconds: setup.seconds,
        seed: setup.seed,
        server: "model".into(),
        out: std::path::PathBuf::new(),
        script: Vec::new(),
    };
    let report = judge(
        &config,
        text.as_bytes(),
        &events,
        &finals,
        &[],
        [&stats[0], &stats[1], &stats[2], &stats[3]],
    )?;
    Ok((report, events, operations))
}
