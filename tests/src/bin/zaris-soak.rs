//! `just soak [SECONDS] [SEED]`: the seeded nemesis soak (see
//! `zaris_tests::soak`) on `$ZARIS_REDIS_SERVER` (default `redis-server`).
//! Prints the verdict and exits 1 if a check failed. With `--record`, the
//! report and the timeline also go to `bench/soak/` for the dashboard's
//! Reliability page, with a summary line in `bench/soak/history.jsonl`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use zaris_tests::soak::{default_out, draw, run, Config, Report};

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `zaris-soak redraw REPORT SVG`: the timeline again, from a report.
    if let [verb, report, svg] = &args[..] {
        if verb == "redraw" {
            let report: Report = serde_json::from_str(&std::fs::read_to_string(report)?)?;
            return draw(&report, Path::new(svg));
        }
    }
    let record = args.iter().any(|a| a == "--record");
    args.retain(|a| a != "--record");
    let mut args = args.into_iter();
    let seconds = args.next().map_or(Ok(60), |s| s.parse())?;
    let seed = match args.next().filter(|s| !s.is_empty()) {
        Some(seed) => seed.parse()?,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs(),
    };
    let server = std::env::var("ZARIS_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let out = default_out();
    let report = run(&Config {
        seconds,
        seed,
        server,
        out: out.clone(),
        script: Vec::new(),
    })?;
    println!("==> soak, seed {seed}: {}", report.summary());
    println!("    report: {}", out.join("report.json").display());
    println!("    timeline: {}", out.join("timeline.svg").display());
    for violation in &report.violations {
        println!("    VIOLATION: {violation}");
    }
    if record {
        let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/soak");
        keep(&report, &out, &kept)?;
        println!(
            "    recorded in {} (just dashboard shows it)",
            kept.display()
        );
    }
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}

/// The report and timeline into `kept`, and its summary line appended.
fn keep(report: &Report, out: &Path, kept: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(kept)?;
    for file in ["report.json", "timeline.svg"] {
        std::fs::copy(out.join(file), kept.join(file)).with_context(|| file.to_owned())?;
    }
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |c| c.trim().to_owned());
    let line = serde_json::json!({
        "commit": commit,
        "server": report.server,
        "seconds": report.seconds,
        "seed": report.seed,
        "operations": report.all.operations,
        "succeeded_percent": report.all.ratio * 100.0,
        "kill_window_percent": report.in_kill_windows.ratio * 100.0,
        "lost_durable_writes": report.lost_durable_writes,
        "violations": report.violations.len(),
    });
    let mut history = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(kept.join("history.jsonl"))?;
    writeln!(history, "{line}")?;
    Ok(())
}
