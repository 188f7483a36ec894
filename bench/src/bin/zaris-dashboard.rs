//! Records a benchmark run, renders the dashboard, compares runs.
//!
//! ```text
//! zaris-dashboard record --since <unix seconds> [--quick]
//! zaris-dashboard render [--quick]
//! zaris-dashboard compare
//! ```
//! `just bench` and `just bench-compare` call it; paths are the
//! workspace's: `bench/history.jsonl`, `target/criterion`,
//! `target/zaris-bench/`, `web/dashboard/`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use zaris_bench::{bars, charts, compare, criterion, history, page, Record};

struct Paths {
    history: PathBuf,
    criterion: PathBuf,
    allocs: PathBuf,
    interleaved: PathBuf,
    quick: PathBuf,
    dashboard: PathBuf,
    /// The recorded soaks (`just soak`): the latest report and timeline,
    /// and a summary line of each.
    soak: PathBuf,
    /// The recorded simulated campaigns (`just sim`): a summary line of
    /// each.
    sim: PathBuf,
    /// The recorded client benchmark runs (`just bench-client`).
    clients: PathBuf,
}

impl Paths {
    fn new() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("bench/ sits in the workspace")
            .to_owned();
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        Self {
            history: root.join("bench/history.jsonl"),
            soak: root.join("bench/soak"),
            sim: root.join("bench/sim/history.jsonl"),
            clients: root.join("bench/client-history.jsonl"),
            criterion: target.join("criterion"),
            allocs: target.join("zaris-bench/allocs.json"),
            interleaved: target.join("zaris-bench/interleaved.json"),
            quick: target.join("zaris-bench/quick-record.json"),
            dashboard: root.join("web/dashboard"),
        }
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("zaris-dashboard: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<()> {
    let paths = Paths::new();
    let quick = args.iter().any(|a| a == "--quick");
    match args.first().map(String::as_str) {
        Some("record") => {
            let since = flag_value(args, "--since")?.context("record needs --since <unix seconds>")?;
            let since: u64 = since.parse().with_context(|| format!("--since {since:?} is not a number of seconds"))?;
            record(&paths, SystemTime::UNIX_EPOCH + Duration::from_secs(since), quick)
        }
        Some("render") => render(&paths, quick),
        Some("compare") => {
            let history = history::load(&paths.history)?;
            match compare::last_pair_on_one_cpu(&history) {
                Some((previous, latest)) => {
                    print!("{}", compare::report(previous, latest));
                    Ok(())
                }
                None => match history.last() {
                    Some(latest) => {
                        println!(
                            "the last run ({}) is the first recorded on {}: nothing to compare it with \
                             (runs on other CPUs are not comparable)",
                            latest.commit, latest.cpu
                        );
                        Ok(())
                    }
                    None => bail!("{} holds no runs: nothing to compare", paths.history.display()),
                },
            }
        }
        _ => bail!("usage: zaris-dashboard record --since <unix seconds> [--quick] | render [--quick] | compare"),
    }
}

fn flag_value<'a>(args: &'a [String], flag: &str) -> Result<Option<&'a str>> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .map(|v| Some(v.as_str()))
            .with_context(|| format!("{flag} needs a value")),
    }
}

fn record(paths: &Paths, since: SystemTime, quick: bool) -> Result<()> {
    let medians_ns = criterion::collect(&paths.criterion, since)?;
    let allocations_per_op: BTreeMap<String, f64> = match fs::read_to_string(&paths.allocs) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", paths.allocs.display()))?,
        Err(e) => {
            tracing::warn!(
                "no allocation counts ({}: {e}); run the allocs bench",
                paths.allocs.display()
            );
            BTreeMap::new()
        }
    };
    let interleaved_ns: BTreeMap<String, f64> = match fs::read_to_string(&paths.interleaved) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", paths.interleaved.display()))?,
        Err(e) => {
            tracing::warn!(
                "no per-engine figures ({}: {e}); run the tiers bench",
                paths.interleaved.display()
            );
            BTreeMap::new()
        }
    };
    let engines = zaris_core::CrcEngine::ALL
        .into_iter()
        .filter(|e| e.is_supported())
        .map(|e| e.name().to_owned())
        .collect();
    let record = Record {
        commit: history::this_commit(),
        date: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        rustc: history::first_line_of(
            &std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()),
            &["-V"],
        ),
        cpu: history::this_cpu(),
        cpus: std::thread::available_parallelism().map_or(1, usize::from),
        crc_engine: zaris_core::crc_engine().description().to_owned(),
        quick,
        medians_ns,
        allocations_per_op,
        engines,
        interleaved_ns,
    };
    if quick {
        fs::create_dir_all(paths.quick.parent().expect("a file in a directory"))?;
        fs::write(&paths.quick, serde_json::to_string_pretty(&record)?)?;
        tracing::info!(
            "quick run: {} medians kept in {} (not in the history)",
            record.medians_ns.len(),
            paths.quick.display()
        );
    } else {
        history::append(&paths.history, &record)?;
        tracing::info!(
            "recorded {} medians into {}",
            record.medians_ns.len(),
            paths.history.display()
        );
    }
    for bar in bars::evaluate(&record) {
        let verdict = bar.verdict();
        println!(
            "{verdict:>8}  {} (needed {}, measured {})",
            bar.what,
            bar.needed,
            bar.measured.as_deref().unwrap_or("nothing")
        );
    }
    Ok(())
}

fn render(paths: &Paths, quick: bool) -> Result<()> {
    let mut history = history::load(&paths.history)?;
    if quick {
        let text = fs::read_to_string(&paths.quick)
            .with_context(|| format!("reading {}", paths.quick.display()))?;
        history.push(serde_json::from_str(&text)?);
    }
    let charts = if history.is_empty() {
        Vec::new()
    } else {
        charts::render_all(&history, &paths.dashboard)?
    };
    fs::create_dir_all(&paths.dashboard)?;
    let index = paths.dashboard.join("index.html");
    fs::write(&index, page::render(&history, &charts))
        .with_context(|| format!("writing {}", index.display()))?;
    render_reliability(paths)?;
    let client_runs = zaris_bench::clients::load(&paths.clients)?;
    let client_page = paths.dashboard.join("client.html");
    // The client charts are drawn inline now: the files earlier renders
    // wrote beside the page go.
    for entry in fs::read_dir(&paths.dashboard)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("client-") && name.ends_with(".svg") {
            fs::remove_file(&path)?;
        }
    }
    fs::write(&client_page, zaris_bench::clients::render(&client_runs)?)
        .with_context(|| format!("writing {}", client_page.display()))?;
    tracing::info!(
        "dashboard: {} charts and {} ({} runs)",
        charts.len(),
        index.display(),
        history.len()
    );
    Ok(())
}

/// `reliability.html` from the recorded soaks, the timeline beside it.
fn render_reliability(paths: &Paths) -> Result<()> {
    let read_json = |name: &str| -> Result<Option<serde_json::Value>> {
        let path = paths.soak.join(name);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("reading {}", path.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    };
    let latest = read_json("report.json")?;
    let history: Vec<serde_json::Value> = match fs::read_to_string(paths.soak.join("history.jsonl"))
    {
        Ok(text) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?,
        Err(_) => Vec::new(),
    };
    let timeline = paths.soak.join("timeline.svg");
    let shown = if timeline.exists() {
        // The soak draws it; the dashboard gives it its dark style.
        let svg = fs::read_to_string(&timeline)
            .with_context(|| format!("reading {}", timeline.display()))?;
        fs::write(
            paths.dashboard.join("soak-timeline.svg"),
            zaris_bench::svg::themed(&svg),
        )?;
        Some("soak-timeline.svg")
    } else {
        None
    };
    let campaigns: Vec<serde_json::Value> = match fs::read_to_string(&paths.sim) {
        Ok(text) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading {}", paths.sim.display()))?,
        Err(_) => Vec::new(),
    };
    let page = paths.dashboard.join("reliability.html");
    fs::write(
        &page,
        zaris_bench::reliability::render(latest.as_ref(), &history, shown, &campaigns),
    )
    .with_context(|| format!("writing {}", page.display()))?;
    Ok(())
}
