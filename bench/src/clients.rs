//! The client benchmark's runs (`just bench-client`: Zaris, fred and
//! redis-rs on one local cluster), recorded per commit as the criterion
//! runs are (`bench/client-history.jsonl`, JSON Lines, oldest first), and
//! the dashboard's client page that charts them: ops/s, client CPU, system
//! calls, context switches and user-space instructions per operation for
//! each client, at each concurrency and pipeline size.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::charts::trend;
use crate::page::{escape, start};

/// The clients, in chart order: Zaris, Zaris through redis-rs's API
/// ([`COMPAT`]), then the peers.
pub const CLIENTS: [&str; 4] = ["zaris", COMPAT, "fred", "redis-rs"];

/// Zaris behind redis-rs's `ConnectionLike` (the `redis-compat` feature),
/// run where a redis-rs user's code would notice it: 16 tasks and the
/// pipelines.
pub const COMPAT: &str = "zaris (redis-rs API)";

/// The clients Zaris is measured against.
pub const PEERS: [&str; 2] = ["fred", "redis-rs"];

/// One run of the client benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientRun {
    /// The commit benchmarked (`git describe --always --dirty`).
    pub commit: String,
    /// When the run ended, RFC 3339 UTC.
    pub date: String,
    /// The CPU model (as the criterion record names it).
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// The server the cluster ran (`redis-server`, `valkey-server`).
    pub server: String,
    /// One row per scenario and client.
    pub rows: Vec<ClientRow>,
}

/// One client in one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientRow {
    /// `1 task`, `16 tasks`, `pipelines 100 x 1`, ...
    pub scenario: String,
    /// `zaris`, `fred` or `redis-rs`.
    pub client: String,
    /// Operations a second, the median of the rounds.
    pub ops_per_sec: f64,
    /// Client CPU per operation, µs (user + system, this process alone).
    pub cpu_us_per_op: f64,
    /// Its user-space part.
    pub user_us_per_op: f64,
    /// Its kernel part.
    pub system_us_per_op: f64,
    /// System calls per operation, every kind (runs before these were
    /// counted have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_per_op: Option<f64>,
    /// Of those, writes (`sendto`, `sendmsg`, `write`, `writev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends_per_op: Option<f64>,
    /// Reads (`recvfrom`, `recvmsg`, `read`, `readv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recvs_per_op: Option<f64>,
    /// Readiness waits (`epoll_wait` and its variants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoll_waits_per_op: Option<f64>,
    /// Thread parks and wake-ups (`futex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub futexes_per_op: Option<f64>,
    /// Sleeping threads the client's threads woke per operation (the
    /// servers' and its own; `sched:sched_waking`): not system calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups_per_op: Option<f64>,
    /// Context switches per operation, voluntary and involuntary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches_per_op: Option<f64>,
    /// User-space instructions per operation under callgrind (one
    /// current-thread runtime, warm-up excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_per_op: Option<f64>,
}

impl ClientRun {
    /// The commit, shortened for chart labels.
    #[must_use]
    pub fn short_commit(&self) -> &str {
        crate::history::short_commit(&self.commit)
    }

    /// The scenarios, in the order the run measured them.
    #[must_use]
    pub fn scenarios(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for row in &self.rows {
            if !out.contains(&row.scenario.as_str()) {
                out.push(&row.scenario);
            }
        }
        out
    }

    fn row(&self, scenario: &str, client: &str) -> Option<&ClientRow> {
        self.rows
            .iter()
            .find(|r| r.scenario == scenario && r.client == client)
    }
}

/// The runs recorded in `path` (none when it does not exist).
///
/// # Errors
/// A line that is not a run.
pub fn load(path: &Path) -> Result<Vec<ClientRun>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{} line {}: not a client run", path.display(), i + 1))
        })
        .collect()
}

/// Appends `run` to `path`.
///
/// # Errors
/// The file cannot be written.
pub fn append(path: &Path, run: &ClientRun) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(file, "{}", serde_json::to_string(run)?)?;
    Ok(())
}

/// A count of a row, where the run has it.
type Metric = fn(&ClientRow) -> Option<f64>;

/// The counts the page sets Zaris against its best peer in, lower better.
const COUNTS: [(&str, Metric); 3] = [
    ("CPU", |r| Some(r.cpu_us_per_op)),
    ("syscalls", |r| r.syscalls_per_op),
    ("instructions", |r| r.instructions_per_op),
];

/// `client` (Zaris, or Zaris through redis-rs's API) over the best peer
/// (the lowest) in each count of `scenario`, e.g. `CPU 0.62x, syscalls
/// 1.00x, instructions 0.45x`.
fn versus_best_peer(run: &ClientRun, scenario: &str, client: &str) -> String {
    let Some(zaris) = run.row(scenario, client) else {
        return String::new();
    };
    COUNTS
        .iter()
        .filter_map(|(name, metric)| {
            let ours = metric(zaris)?;
            let best = PEERS
                .iter()
                .filter_map(|c| metric(run.row(scenario, c)?))
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min);
            best.is_finite()
                .then(|| format!("{name} {:.2}x", ours / best))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A scenario's name as a file name part.
fn slug(scenario: &str) -> String {
    scenario
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The client page for `runs` (oldest first), its charts written into
/// `out`: the latest run's table, then per scenario ops/s and CPU per
/// operation over the recorded runs, one line per client.
///
/// # Errors
/// A chart that cannot be drawn or written.
pub fn render(runs: &[ClientRun], out: &Path) -> Result<String> {
    let mut html = start("Zaris client benchmark: Zaris, fred and redis-rs per commit");
    html.push_str(
        "<header>\n<h1>Client benchmark</h1>\n<p>Zaris's client against fred and redis-rs on one \
         local 3+3 cluster (<code>just bench-client</code>): operations a second and the client's \
         own cost per operation: CPU time (user + system, <code>getrusage</code> of the client \
         process), and the counts noise cannot move (system calls, context switches, user-space \
         instructions), at 1, 16 and 256 concurrent tasks and pipelines of 100 and 1,000, recorded per commit. \
         Throughput on this machine is bound by the servers sharing its cores: judge by the cost per \
         operation. <a href=\"index.html\">Routing benchmarks</a> · \
         <a href=\"reliability.html\">Reliability: the nemesis soak</a> · \
         <a href=\"../index.html\">the playground</a>.</p>\n</header>\n",
    );
    let Some(latest) = runs.last() else {
        html.push_str(
            "<p id=\"no-runs\">No client run is recorded yet: <code>just bench-client</code> records one.</p>\n\
             </main>\n</body>\n</html>\n",
        );
        return Ok(html);
    };
    let _ = std::fmt::Write::write_fmt(
        &mut html,
        format_args!(
            "<h2>Latest run</h2>\n<p id=\"client-machine\">Commit {}, {}, {} ({} logical CPUs), {}.</p>\n",
            escape(&latest.commit),
            escape(&latest.date),
            escape(&latest.cpu),
            latest.cpus,
            escape(&latest.server)
        ),
    );
    html.push_str(
        "<p>Per operation: CPU time (this process's <code>getrusage</code>, in runs with no \
         tracepoint attached), system calls by kind (kernel tracepoints, in a run of their own: \
         they cost the kernel time per call; send = <code>sendto</code>/<code>write</code>/<code>writev</code>, \
         recv = <code>recvfrom</code>/<code>read</code>, epoll = <code>epoll_wait</code>), context \
         switches, the sleeping threads the client woke (the servers' and its own: the \
         scheduler's <code>sched_waking</code> tracepoint, in the same run; at 16 tasks these, \
         not the number of calls, set the system time), and user-space instructions under callgrind (one current-thread runtime, \
         warm-up left out). The last column is Zaris (and Zaris through redis-rs's API) over the best peer in each count.</p>\n\
         <div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"latest client run\">\
         <table id=\"client-latest\"><tr><th>scenario</th><th>client</th><th>ops/s</th>\
         <th>CPU µs/op</th><th>user</th><th>system</th><th>syscalls</th><th>send</th><th>recv</th>\
         <th>epoll</th><th>futex</th><th>switches</th><th>woken</th><th>instructions</th><th>vs best peer</th></tr>\n",
    );
    let cell = |value: Option<f64>, digits: usize| {
        value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
    };
    for scenario in latest.scenarios() {
        for client in CLIENTS {
            let Some(row) = latest.row(scenario, client) else {
                continue;
            };
            let versus = if PEERS.contains(&client) {
                String::new()
            } else {
                versus_best_peer(latest, scenario, client)
            };
            let _ = std::fmt::Write::write_fmt(
                &mut html,
                format_args!(
                    "<tr><td>{}</td><td>{client}</td><td>{:.0}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td>\
                     <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{versus}</td></tr>\n",
                    escape(scenario),
                    row.ops_per_sec,
                    row.cpu_us_per_op,
                    row.user_us_per_op,
                    row.system_us_per_op,
                    cell(row.syscalls_per_op, 2),
                    cell(row.sends_per_op, 2),
                    cell(row.recvs_per_op, 2),
                    cell(row.epoll_waits_per_op, 2),
                    cell(row.futexes_per_op, 2),
                    cell(row.switches_per_op, 2),
                    cell(row.wakeups_per_op, 2),
                    cell(row.instructions_per_op, 0),
                ),
            );
        }
    }
    html.push_str("</table></div>\n<h2>Per commit</h2>\n");
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let commits: Vec<&str> = runs.iter().map(ClientRun::short_commit).collect();
    for scenario in latest.scenarios() {
        let metrics: [(&str, &str, Metric); 6] = [
            ("ops", "ops/s", |r| Some(r.ops_per_sec)),
            ("cpu", "client CPU µs/op", |r| Some(r.cpu_us_per_op)),
            ("syscalls", "system calls per op", |r| r.syscalls_per_op),
            ("switches", "context switches per op", |r| r.switches_per_op),
            ("woken", "sleeping threads woken per op", |r| {
                r.wakeups_per_op
            }),
            ("instructions", "user-space instructions per op", |r| {
                r.instructions_per_op
            }),
        ];
        for (part, label, metric) in metrics {
            let series: Vec<(String, Vec<(f64, f64)>)> = CLIENTS
                .iter()
                .map(|&client| {
                    let points = runs
                        .iter()
                        .enumerate()
                        .filter_map(|(i, run)| {
                            Some(((i + 1) as f64, metric(run.row(scenario, client)?)?))
                        })
                        .filter(|&(_, y)| y > 0.0)
                        .collect();
                    (client.to_owned(), points)
                })
                .collect();
            let file = format!("client-{}-{part}.svg", slug(scenario));
            let title = format!("{scenario}: {label}");
            let svg = trend(&title, label, &commits, &series)?;
            let path = out.join(&file);
            fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            let _ = std::fmt::Write::write_fmt(
                &mut html,
                format_args!(
                    "<figure><img src=\"{file}\" alt=\"{}\" width=\"760\" height=\"440\"><figcaption>{}</figcaption></figure>\n",
                    escape(&title),
                    escape(&title)
                ),
            );
        }
    }
    html.push_str("</main>\n</body>\n</html>\n");
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(commit: &str, zaris_cpu: f64) -> ClientRun {
        let row = |scenario: &str, client: &str, cpu: f64| ClientRow {
            scenario: scenario.into(),
            client: client.into(),
            ops_per_sec: 1e6 / cpu,
            cpu_us_per_op: cpu,
            user_us_per_op: cpu / 2.0,
            system_us_per_op: cpu / 2.0,
            syscalls_per_op: Some(if client == "zaris" { 3.0 } else { 4.0 }),
            sends_per_op: Some(1.0),
            recvs_per_op: Some(1.0),
            epoll_waits_per_op: Some(1.0),
            futexes_per_op: Some(if client == "zaris" { 0.0 } else { 1.0 }),
            switches_per_op: Some(1.0),
            wakeups_per_op: Some(0.5),
            instructions_per_op: Some(cpu * 1000.0),
        };
        ClientRun {
            commit: commit.into(),
            date: "2026-12-02T00:00:00Z".into(),
            cpu: "test CPU".into(),
            cpus: 2,
            server: "redis-server".into(),
            rows: vec![
                row("1 task", "zaris", zaris_cpu),
                row("1 task", "fred", 17.5),
                row("1 task", "redis-rs", 20.0),
                row("pipelines 100 x 1", "zaris", 1.0),
                row("pipelines 100 x 1", "redis-rs", 0.99),
            ],
        }
    }

    #[test]
    fn runs_round_trip_and_chart_per_scenario() {
        let dir = std::env::temp_dir().join(format!("zaris-clients-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let history = dir.join("client-history.jsonl");
        assert!(load(&history).unwrap().is_empty());
        append(&history, &run("aaa", 18.0)).unwrap();
        append(&history, &run("bbb", 12.0)).unwrap();
        let runs = load(&history).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].scenarios(), ["1 task", "pipelines 100 x 1"]);
        let html = render(&runs, &dir).unwrap();
        assert!(html.contains("<td>1 task</td><td>zaris</td><td>83333</td><td>12.00</td>"));
        assert!(
            html.contains("CPU 0.69x, syscalls 0.75x, instructions 0.69x"),
            "12 over fred's 17.5, 3 syscalls over 4: {html}"
        );
        for file in [
            "client-1-task-ops.svg",
            "client-1-task-cpu.svg",
            "client-1-task-syscalls.svg",
            "client-1-task-switches.svg",
            "client-1-task-woken.svg",
            "client-1-task-instructions.svg",
            "client-pipelines-100-x-1-cpu.svg",
        ] {
            let svg = fs::read_to_string(dir.join(file)).unwrap();
            assert!(svg.starts_with("<svg"), "{file}");
            assert!(html.contains(&format!("src=\"{file}\"")));
        }
        // A run recorded before the counts were: no counts, no chart points,
        // and the page still renders.
        let old = r#"{"commit":"c0ffee","date":"2026-11-01T00:00:00Z","cpu":"x","cpus":2,"server":"redis-server","rows":[{"scenario":"1 task","client":"zaris","ops_per_sec":1.0,"cpu_us_per_op":20.0,"user_us_per_op":10.0,"system_us_per_op":10.0}]}"#;
        let old: ClientRun = serde_json::from_str(old).unwrap();
        assert_eq!(old.rows[0].syscalls_per_op, None);
        let html = render(&[old, runs[1].clone()], &dir).unwrap();
        assert!(html.contains("client-1-task-instructions.svg"));
        assert!(render(&[], &dir)
            .unwrap()
            .contains("No client run is recorded yet"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
