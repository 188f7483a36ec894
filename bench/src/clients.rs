//! The client benchmark's runs (`just bench-client`: Zaris, fred and
//! redis-rs on one local cluster), recorded per commit as the criterion
//! runs are (`bench/client-history.jsonl`, JSON Lines, oldest first), and
//! the dashboard's client page that charts them: ops/s, client CPU, system
//! calls, context switches and user-space instructions per operation for
//! each client, at each concurrency and pipeline size.

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::page::start;
use crate::svg::{escape, inline};
use crate::trend::{self, Line, Panel, Run, RUNS_SHOWN};

/// The clients, in chart order: Zaris, Zaris through redis-rs's API
/// ([`COMPAT`]), then the peers.
pub const CLIENTS: [&str; 4] = ["zaris", COMPAT, "fred", "redis-rs"];

/// Zaris behind redis-rs's `ConnectionLike` (the `redis-compat` feature),
/// run where a redis-rs user's code would notice it: 16 tasks and the
/// pipelines.
pub const COMPAT: &str = "zaris (redis-rs API)";

/// What the scenarios run on tokio's current-thread runtime are named
/// after (`16 tasks, one thread`); the multi-thread runtime's keep their
/// names.
pub const ONE_THREAD: &str = ", one thread";

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
    /// A client-side cache's hits against an uncached read, per client
    /// (runs before this phase have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hits: Vec<HitRow>,
    /// A write pause under load, per client and pause (runs before the
    /// pause phase have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pauses: Vec<PauseRow>,
}

/// One client's reads of one kind on one current-thread runtime: a cache
/// hit (`GET` or `HGET`) or an uncached `GET`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitRow {
    /// `zaris` or `redis-rs`.
    pub client: String,
    /// `cache hit: GET`, `cache hit: HGET` or `uncached GET`.
    pub read: String,
    /// The thread's CPU time per read, ns (the median over the batches).
    pub cpu_ns_per_read: f64,
    /// The share of the reads the client's cache answered, by its own
    /// counters (0 for uncached reads).
    pub cached_share: f64,
    /// User-space instructions per read under callgrind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_per_read: Option<f64>,
}

/// The most a cache hit may cost Zaris, CPU ns per read.
pub const HIT_NS_BAR: f64 = 250.0;

/// The most a Zaris hit may cost against redis-rs's hit of the same read.
pub const HIT_RATIO_BAR: f64 = 0.5;

/// A hit row counts as hits only when its cache answered this share of
/// its reads: a row that missed measures misses.
const HIT_SHARE: f64 = 0.99;

/// One verdict on Zaris's hits: the read, the bar, the figure, whether
/// it is met.
#[derive(Clone, Debug, PartialEq)]
pub struct HitVerdict {
    /// `cache hit: GET` or `cache hit: HGET`.
    pub read: String,
    /// What is judged, in words, with its bar.
    pub bar: String,
    /// Zaris's figure against the bar, in words.
    pub figure: String,
    /// Whether the bar is met.
    pub met: bool,
}

impl std::fmt::Display for HitVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.met { "met" } else { "NOT met" };
        write!(
            f,
            "{}: {}: {} ({verdict})",
            self.read, self.bar, self.figure
        )
    }
}

/// Zaris's hits against the bars: at most [`HIT_NS_BAR`] of CPU a hit,
/// and at most [`HIT_RATIO_BAR`] of redis-rs's hit of the same read. A
/// row whose cache answered less than 99% of its reads fails its bars.
#[must_use]
pub fn hit_verdicts(rows: &[HitRow]) -> Vec<HitVerdict> {
    let row = |client: &str, read: &str| rows.iter().find(|r| r.client == client && r.read == read);
    let mut out = Vec::new();
    for ours in rows
        .iter()
        .filter(|r| r.client == CLIENTS[0] && r.read.starts_with("cache hit"))
    {
        let hits = ours.cached_share >= HIT_SHARE;
        let missed = if hits {
            String::new()
        } else {
            format!(
                ", but only {:.1}% of its reads were hits",
                100.0 * ours.cached_share
            )
        };
        out.push(HitVerdict {
            read: ours.read.clone(),
            bar: format!("CPU per hit ≤ {HIT_NS_BAR:.0} ns"),
            figure: format!("{:.0} ns{missed}", ours.cpu_ns_per_read),
            met: hits && ours.cpu_ns_per_read <= HIT_NS_BAR,
        });
        if let Some(theirs) = row("redis-rs", &ours.read) {
            let ratio = ours.cpu_ns_per_read / theirs.cpu_ns_per_read;
            out.push(HitVerdict {
                read: ours.read.clone(),
                bar: format!("≤ {HIT_RATIO_BAR:.1}x redis-rs's hit"),
                figure: format!(
                    "{ratio:.3}x ({:.0} ns against {:.0} ns){missed}",
                    ours.cpu_ns_per_read, theirs.cpu_ns_per_read
                ),
                met: hits && theirs.cached_share >= HIT_SHARE && ratio <= HIT_RATIO_BAR,
            });
        }
    }
    out
}

/// One client through a write pause of one master (`CLIENT PAUSE ms
/// WRITE`) under load: 4 readers and 4 `INCR` writers on that master, 4
/// readers elsewhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PauseRow {
    /// `zaris`, `fred` or `redis-rs`.
    pub client: String,
    /// How long the writes were paused.
    pub pause_ms: u64,
    /// The longest read of the paused master.
    pub paused_max_read_ms: f64,
    /// Its 99th percentile.
    pub paused_p99_read_ms: f64,
    /// The other masters' longest read.
    pub other_max_read_ms: f64,
    /// Calls that failed.
    pub errors: u64,
    /// Increments applied beyond those acknowledged and those that failed:
    /// writes sent again while the first copy waited in the pause.
    pub applied_twice: u64,
    /// Acknowledged increments missing at the end.
    pub lost: u64,
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

/// One count the page judges Zaris by against its best peer: its name,
/// how to read it from a row, the most Zaris may take over the best peer
/// (cost counts; lower is better) and why that much.
struct Judged {
    name: &'static str,
    metric: Metric,
    most: f64,
}

/// The client's bars: in every scenario, no more CPU, system calls or
/// user-space instructions per operation than the best peer. CPU time and
/// system calls move with timing from run to run (how many writes a flush
/// gathers), so they get 10% and 5%; instructions under callgrind do not.
const JUDGED: [Judged; 3] = [
    Judged {
        name: "CPU",
        metric: |r| Some(r.cpu_us_per_op),
        most: 1.10,
    },
    Judged {
        name: "syscalls",
        metric: |r| r.syscalls_per_op,
        most: 1.05,
    },
    Judged {
        name: "instructions",
        metric: |r| r.instructions_per_op,
        most: 1.00,
    },
];

/// Every column of the latest run's table: header, how to read it, the
/// digits shown, and whether more is better.
const COLUMNS: [(&str, Metric, usize, bool); 12] = [
    ("ops/s", |r| Some(r.ops_per_sec), 0, true),
    ("CPU µs/op", |r| Some(r.cpu_us_per_op), 2, false),
    ("user", |r| Some(r.user_us_per_op), 2, false),
    ("system", |r| Some(r.system_us_per_op), 2, false),
    ("syscalls", |r| r.syscalls_per_op, 2, false),
    ("send", |r| r.sends_per_op, 2, false),
    ("recv", |r| r.recvs_per_op, 2, false),
    ("epoll", |r| r.epoll_waits_per_op, 2, false),
    ("futex", |r| r.futexes_per_op, 2, false),
    ("switches", |r| r.switches_per_op, 2, false),
    ("woken", |r| r.wakeups_per_op, 2, false),
    ("instructions", |r| r.instructions_per_op, 0, false),
];

/// The best peer's value of `metric` in `scenario` (the lowest, or the
/// highest where more is better), and who it is.
fn best_peer(
    run: &ClientRun,
    scenario: &str,
    metric: Metric,
    more_is_better: bool,
) -> Option<(f64, &'static str)> {
    PEERS
        .iter()
        .filter_map(|&c| Some((metric(run.row(scenario, c)?)?, c)))
        .filter(|(v, _)| *v > 0.0)
        .reduce(|a, b| {
            let better = if more_is_better { b.0 > a.0 } else { b.0 < a.0 };
            if better {
                b
            } else {
                a
            }
        })
}

/// The latest run's table flags a Zaris figure worse than the best peer's
/// by more than this factor (run-to-run noise is about this size).
const WORSE_BY: f64 = 1.02;

/// One verdict: `client` in `scenario` on each judged count.
struct Verdict<'a> {
    scenario: &'a str,
    client: &'static str,
    /// Zaris over the best peer in ops/s (more is better; not a bar).
    throughput: Option<f64>,
    /// Per judged count: Zaris over the best peer, and who that is.
    ratios: Vec<Option<(f64, &'static str)>>,
    /// Where the peer with the fewest system calls made no `epoll_wait`
    /// (it blocks in `recv`: redis-rs's sync pipeline), Zaris's system
    /// calls without its `epoll_wait`s over the peer's: what the bar holds
    /// an async client to. An async client learns that a socket is
    /// readable from the kernel's readiness call; a blocking one, by
    /// sleeping in `recv`. Its floor is one readiness wait per wait, which
    /// the peer pays inside `recv` (`just bench-client` prints the bare
    /// async client's figure beside).
    without_epoll: Option<f64>,
}

/// Whether a client waits by blocking in `recv`, not on readiness: at
/// most one `epoll_wait` in a thousand of its calls (the process's other
/// threads, its runtime's, may wait now and then).
fn blocks(row: &ClientRow) -> bool {
    matches!((row.epoll_waits_per_op, row.syscalls_per_op), (Some(e), Some(all)) if e <= all / 1000.0)
}

/// The judged count that is system calls.
const SYSCALLS: &str = "syscalls";

impl Verdict<'_> {
    /// The judged counts this row misses.
    fn missed(&self) -> Vec<&'static str> {
        JUDGED
            .iter()
            .zip(&self.ratios)
            .filter(|(j, r)| {
                let ratio = match (j.name, self.without_epoll) {
                    (SYSCALLS, Some(without)) => Some(without),
                    _ => r.map(|(r, _)| r),
                };
                ratio.is_some_and(|r| r > j.most)
            })
            .map(|(j, _)| j.name)
            .collect()
    }
}

/// Zaris (and Zaris through redis-rs's API) against the best peer in each
/// scenario of `run`.
fn verdicts(run: &ClientRun) -> Vec<Verdict<'_>> {
    let mut out = Vec::new();
    for scenario in run.scenarios() {
        for client in [CLIENTS[0], COMPAT] {
            let Some(row) = run.row(scenario, client) else {
                continue;
            };
            let ratio = |metric: Metric, more: bool| {
                let (best, who) = best_peer(run, scenario, metric, more)?;
                Some((metric(row)? / best, who))
            };
            let without_epoll =
                best_peer(run, scenario, |r| r.syscalls_per_op, false).and_then(|(best, who)| {
                    let peer = run.row(scenario, who)?;
                    blocks(peer)
                        .then(|| Some((row.syscalls_per_op? - row.epoll_waits_per_op?) / best))?
                });
            out.push(Verdict {
                scenario,
                client,
                throughput: ratio(|r| Some(r.ops_per_sec), true).map(|(r, _)| r),
                ratios: JUDGED.iter().map(|j| ratio(j.metric, false)).collect(),
                without_epoll,
            });
        }
    }
    out
}

/// A scenario's name as an id.
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

const INTRO: &str = "<header>\n<h1>Client benchmark</h1>\n<p>Zaris's client against fred and \
    redis-rs on one local 3+3 cluster (<code>just bench-client</code>), at 1, 16 and 256 \
    concurrent tasks and pipelines of 100 and 1,000, recorded per commit. Throughput on this \
    machine is bound by the servers sharing its cores, so Zaris is judged by what each operation \
    costs the client: CPU time, system calls and user-space instructions. \
    <a href=\"index.html\">Routing benchmarks</a> · \
    <a href=\"reliability.html\">Reliability: the nemesis soak</a> · \
    <a href=\"../index.html\">the playground</a>.</p>\n</header>\n";

/// The client page for `runs` (oldest first): the verdicts on the latest
/// run first, then its every count, then each scenario's counts per commit
/// (drawn inline, so that hovering a run shows its commit and date).
///
/// # Errors
/// A chart that cannot be drawn.
pub fn render(runs: &[ClientRun]) -> Result<String> {
    let mut html = start("Zaris client benchmark: Zaris, fred and redis-rs per commit");
    html.push_str(INTRO);
    // A run may have measured the pause alone (`--no-single
    // --no-pipeline`): the counts come from the runs that have them.
    let pause_runs = runs;
    let runs: Vec<ClientRun> = runs
        .iter()
        .filter(|r| !r.rows.is_empty())
        .cloned()
        .collect();
    let runs = &runs[..];
    let Some(latest) = runs.last() else {
        html.push_str(
            "<p id=\"no-runs\">No client run is recorded yet: <code>just bench-client</code> records one.</p>\n\
             </main>\n</body>\n</html>\n",
        );
        return Ok(html);
    };
    contents(&mut html, latest);
    verdict_section(&mut html, latest);
    hits_section(&mut html, pause_runs);
    latest_section(&mut html, latest);
    pause_section(&mut html, pause_runs);
    let _ = writeln!(
        html,
        "<h2 id=\"per-commit\">Per commit</h2>\n<p>Each scenario's counts over the last {RUNS_SHOWN} \
         recorded runs, one line per client; hover a run for its commit, date and values.</p>"
    );
    let axis: Vec<Run<'_>> = runs
        .iter()
        .map(|r| Run {
            commit: &r.commit,
            date: &r.date,
        })
        .collect();
    for scenario in latest.scenarios() {
        let metrics: [(&str, Metric); 6] = [
            ("ops/s", |r| Some(r.ops_per_sec)),
            ("client CPU µs/op", |r| Some(r.cpu_us_per_op)),
            ("system calls per op", |r| r.syscalls_per_op),
            ("context switches per op", |r| r.switches_per_op),
            ("sleeping threads woken per op", |r| r.wakeups_per_op),
            ("user-space instructions per op", |r| r.instructions_per_op),
        ];
        // On one thread, what the runtime changes: CPU and system calls
        // (its instructions are the multi-thread scenario's, counted once
        // on one thread under callgrind).
        let shown = if scenario.ends_with(ONE_THREAD) {
            &metrics[1..3]
        } else {
            &metrics[..]
        };
        let panels: Vec<Panel> = shown
            .iter()
            .map(|&(title, metric)| Panel {
                title: title.to_owned(),
                lines: CLIENTS
                    .iter()
                    .map(|&client| Line {
                        name: client.to_owned(),
                        values: runs
                            .iter()
                            .map(|run| metric(run.row(scenario, client)?))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        let title = format!("{scenario}: each client's counts per commit");
        let svg = trend::panels(&title, &axis, &panels)?;
        let _ = writeln!(
            html,
            "<h3 id=\"s-{}\">{}</h3>\n<figure tabindex=\"0\">{}</figure>",
            slug(scenario),
            escape(scenario),
            inline(&svg, &title),
        );
    }
    html.push_str("</main>\n</body>\n</html>\n");
    Ok(html)
}

/// The table of contents.
fn contents(html: &mut String, latest: &ClientRun) {
    html.push_str(
        "<nav aria-label=\"Contents\" class=\"toc\"><h2>Contents</h2><ol>\
         <li><a href=\"#verdicts\">Verdicts: Zaris against the best peer</a></li>\
         <li><a href=\"#hits\">Client-side cache hits</a></li>\
         <li><a href=\"#latest\">Every count of the latest run</a></li>\
         <li><a href=\"#pause\">A write pause: reads, errors, writes applied twice</a></li>\
         <li><a href=\"#per-commit\">Per commit</a><ol>",
    );
    for scenario in latest.scenarios() {
        let _ = write!(
            html,
            "<li><a href=\"#s-{}\">{}</a></li>",
            slug(scenario),
            escape(scenario)
        );
    }
    html.push_str("</ol></li></ol></nav>\n");
}

fn verdict_section(html: &mut String, latest: &ClientRun) {
    let verdicts = verdicts(latest);
    let judged = verdicts.len() * JUDGED.len();
    let missed: Vec<String> = verdicts
        .iter()
        .flat_map(|v| {
            v.missed()
                .into_iter()
                .map(move |m| format!("{} at {} ({})", m, v.scenario, v.client))
        })
        .collect();
    let _ = writeln!(
        html,
        "<h2 id=\"verdicts\">Verdicts</h2>\n<p id=\"client-machine\">The latest run: commit {}, {}, {} ({} logical CPUs), {}.</p>",
        escape(&latest.commit),
        escape(&latest.date),
        escape(&latest.cpu),
        latest.cpus,
        escape(&latest.server)
    );
    if missed.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"verdict met\" id=\"verdict\">All {judged} bars are met: in every scenario Zaris costs no more per operation than the best peer (against a peer that blocks in recv, in system calls other than epoll_wait).</p>"
        );
    } else {
        let _ = writeln!(
            html,
            "<p class=\"verdict missed\" id=\"verdict\">{} of {judged} bars are NOT met: {}.</p>",
            missed.len(),
            escape(&missed.join("; "))
        );
    }
    let heads: Vec<String> = JUDGED
        .iter()
        .map(|j| format!("<th>{} <small>(bar ≤ {:.2}x)</small></th>", j.name, j.most))
        .collect();
    let _ = writeln!(
        html,
        "<p>Each figure is Zaris over the best peer in that scenario: the lower of fred's and \
         redis-rs's cost per operation (their higher ops/s), so below 1.00x Zaris costs less. \
         The bars leave CPU time 10% and system calls 5% for noise between runs; instructions \
         under callgrind get none. A figure over its bar is marked <span class=\"worse\">▲</span>. \
         Where the peer with the fewest system calls made no <code>epoll_wait</code> (redis-rs's \
         sync pipeline sleeps in <code>recv</code>), Zaris's calls are compared without its \
         <code>epoll_wait</code>s: an async client must ask the kernel which socket is ready, \
         once per wait at least, which a blocking one pays inside <code>recv</code>. The bare \
         async client <code>just bench-client</code> prints beside makes as many. \
         Scenarios named <em>one thread</em> ran on tokio's current-thread runtime; the others \
         on its multi-thread runtime, a worker per core.</p>\n\
         <table id=\"client-verdicts\" class=\"stack\"><thead><tr><th>scenario</th><th>client</th>\
         <th>ops/s <small>(not a bar)</small></th>{}<th>verdict</th></tr></thead><tbody>",
        heads.join("")
    );
    for v in &verdicts {
        let _ = write!(
            html,
            "<tr><td data-label=\"scenario\">{}</td><td data-label=\"client\">{}</td><td data-label=\"ops/s\">{}</td>",
            escape(v.scenario),
            escape(v.client),
            v.throughput.map_or_else(|| "–".to_owned(), |r| format!("{r:.2}x"))
        );
        for (j, ratio) in JUDGED.iter().zip(&v.ratios) {
            if let (SYSCALLS, Some((r, who)), Some(without)) = (j.name, ratio, v.without_epoll) {
                let (class, mark) = if without > j.most {
                    (" class=\"worse\"", "▲ ")
                } else {
                    ("", "")
                };
                let _ = write!(
                    html,
                    "<td data-label=\"{0}\"{class} title=\"{who} blocks in recv: compared without epoll_wait\">{mark}{without:.2}x <small>vs {who}, without epoll_wait ({r:.2}x with)</small></td>",
                    j.name
                );
                continue;
            }
            match ratio {
                Some((r, who)) if *r > j.most => {
                    let _ = write!(
                        html,
                        "<td data-label=\"{0}\" class=\"worse\" title=\"over its bar: {r:.2}x {who}\">▲ {r:.2}x <small>vs {who}</small></td>",
                        j.name
                    );
                }
                Some((r, who)) => {
                    let _ = write!(
                        html,
                        "<td data-label=\"{}\">{r:.2}x <small>vs {who}</small></td>",
                        j.name
                    );
                }
                None => {
                    let _ = write!(html, "<td data-label=\"{}\">–</td>", j.name);
                }
            }
        }
        let missed = v.missed();
        if missed.is_empty() {
            html.push_str("<td data-label=\"verdict\" class=\"met\">met</td></tr>\n");
        } else {
            let _ = writeln!(
                html,
                "<td data-label=\"verdict\" class=\"missed\">NOT met <small>({})</small></td></tr>",
                missed.join(", ")
            );
        }
    }
    html.push_str("</tbody></table>\n");
}

/// The latest run's cache hits (of the runs that measured them): the
/// verdicts, then every row.
fn hits_section(html: &mut String, runs: &[ClientRun]) {
    html.push_str(
        "<h2 id=\"hits\">Client-side cache hits</h2>\n\
         <p>A read the client's own cache answers, against redis-rs's client-side cache \
         (<code>cache-aio</code>, on its cluster connection) and an uncached <code>GET</code>: \
         1,000 keys read in batches of 1,000 on one current-thread runtime, the thread's CPU \
         time per read taken around each batch (the median over the batches), and user-space \
         instructions per read under callgrind. Zaris's bars: a hit at most 250 ns, and at most \
         0.5x redis-rs's hit of the same read. A row whose cache answered fewer than 99% of its \
         reads fails its bars (its <em>cached</em> column says how many it answered).</p>\n",
    );
    let Some(latest) = runs.iter().rev().find(|r| !r.hits.is_empty()) else {
        html.push_str("<p id=\"no-hits\">No run has measured cache hits yet.</p>\n");
        return;
    };
    let verdicts = hit_verdicts(&latest.hits);
    let missed = verdicts.iter().filter(|v| !v.met).count();
    let _ = writeln!(
        html,
        "<p class=\"verdict {}\" id=\"hit-verdict\">{} of {} hit bars met (commit {}).</p>\n\
         <table id=\"hit-verdicts\" class=\"stack\"><thead><tr><th>read</th><th>bar</th>\
         <th>Zaris</th><th>verdict</th></tr></thead><tbody>",
        if missed == 0 { "met" } else { "missed" },
        verdicts.len() - missed,
        verdicts.len(),
        escape(latest.short_commit()),
    );
    for v in &verdicts {
        let (class, word) = if v.met {
            ("met", "met")
        } else {
            ("missed", "NOT met")
        };
        let _ = writeln!(
            html,
            "<tr><td data-label=\"read\">{}</td><td data-label=\"bar\">{}</td>\
             <td data-label=\"Zaris\">{}</td><td data-label=\"verdict\" class=\"{class}\">{word}</td></tr>",
            escape(&v.read),
            escape(&v.bar),
            escape(&v.figure)
        );
    }
    html.push_str(
        "</tbody></table>\n<table id=\"hit-rows\" class=\"stack\"><thead><tr><th>read</th>\
         <th>client</th><th>CPU ns/read</th><th>instructions/read</th><th>cached</th></tr></thead><tbody>\n",
    );
    for row in &latest.hits {
        let instructions = row
            .instructions_per_read
            .map_or_else(|| "–".to_owned(), |i| format!("{i:.0}"));
        let _ = writeln!(
            html,
            "<tr><td data-label=\"read\">{}</td><td data-label=\"client\">{}</td>\
             <td data-label=\"CPU ns/read\">{:.0}</td><td data-label=\"instructions/read\">{instructions}</td>\
             <td data-label=\"cached\">{:.1}%</td></tr>",
            escape(&row.read),
            escape(&row.client),
            row.cpu_ns_per_read,
            100.0 * row.cached_share
        );
    }
    html.push_str("</tbody></table>\n");
}

fn latest_section(html: &mut String, latest: &ClientRun) {
    html.push_str(
        "<h2 id=\"latest\">Every count of the latest run</h2>\n\
         <p>Per operation: CPU time (this process's <code>getrusage</code>, in runs with no \
         tracepoint attached), system calls by kind (kernel tracepoints, in a run of their own: \
         they cost the kernel time per call; send = <code>sendto</code>/<code>write</code>/<code>writev</code>, \
         recv = <code>recvfrom</code>/<code>read</code>, epoll = <code>epoll_wait</code>), context \
         switches, the sleeping threads the client woke (the servers' and its own: the \
         scheduler's <code>sched_waking</code> tracepoint, in the same run; at 16 tasks these, \
         not the number of calls, set the system time), and user-space instructions under callgrind \
         (one current-thread runtime, warm-up left out). A Zaris figure more than 2% worse than \
         the best peer's is marked: <span class=\"worse\">▲</span> a higher cost, \
         <span class=\"worse\">▼</span> fewer operations a second.</p>\n\
         <table id=\"client-latest\" class=\"stack\"><thead><tr><th>scenario</th><th>client</th>",
    );
    for (name, ..) in COLUMNS {
        let _ = write!(html, "<th>{name}</th>");
    }
    html.push_str("</tr></thead><tbody>\n");
    for scenario in latest.scenarios() {
        for client in CLIENTS {
            let Some(row) = latest.row(scenario, client) else {
                continue;
            };
            let _ = write!(
                html,
                "<tr><td data-label=\"scenario\">{}</td><td data-label=\"client\">{client}</td>",
                escape(scenario)
            );
            for (name, metric, digits, more) in COLUMNS {
                let Some(value) = metric(row) else {
                    let _ = write!(html, "<td data-label=\"{name}\">–</td>");
                    continue;
                };
                let shown = format!("{value:.digits$}");
                // Worse than the best peer by more than noise, and as shown.
                let worse = (!PEERS.contains(&client))
                    .then(|| best_peer(latest, scenario, metric, more))
                    .flatten()
                    .filter(|&(best, _)| {
                        let shown_best: f64 = format!("{best:.digits$}").parse().unwrap_or(best);
                        let ours: f64 = shown.parse().unwrap_or(value);
                        if more {
                            ours < shown_best && value < best / WORSE_BY
                        } else {
                            ours > shown_best && value > best * WORSE_BY
                        }
                    });
                match worse {
                    Some((best, who)) => {
                        let mark = if more { '▼' } else { '▲' };
                        let _ = write!(
                            html,
                            "<td data-label=\"{name}\" class=\"worse\" title=\"worse than {who}: {best:.digits$}\">{mark} {shown}</td>"
                        );
                    }
                    None => {
                        let _ = write!(html, "<td data-label=\"{name}\">{shown}</td>");
                    }
                }
            }
            html.push_str("</tr>\n");
        }
    }
    html.push_str("</tbody></table>\n");
}

/// The bar a paused master's reads are held to: a read waits about a
/// stall tick and a round trip, never the pause (docs/behaviour.md §5,
/// "Paused nodes").
const PAUSED_READ_BAR_MS: f64 = 250.0;

/// The write pause of the latest run that measured one: per pause and
/// client, the paused master's reads, the others', the failures and the
/// increments applied twice, with Zaris's bars.
fn pause_section(html: &mut String, runs: &[ClientRun]) {
    html.push_str(
        "<h2 id=\"pause\">A write pause: reads, errors, writes applied twice</h2>\n\
         <p>One master's writes paused (<code>CLIENT PAUSE ms WRITE</code>: what an operator's \
         maintenance, a manual failover and atomic slot migration do) for 3 s and for 12 s, \
         2 s into a load of 4 tasks reading keys of that master, 4 tasks sending <code>INCR</code> \
         to counters there and 4 tasks reading keys of the other masters, every client with its \
         defaults, in one run. A paused node is alive: a read need not wait for the pause, and \
         a write held there must not be sent again (it would be applied twice when the pause \
         ends). Zaris's bars: its paused master's longest read at most 250 ms, no failure, no \
         increment applied twice or lost; a Zaris figure past its bar is marked \
         <span class=\"worse\">▲</span>.</p>\n",
    );
    let Some(run) = runs.iter().rev().find(|r| !r.pauses.is_empty()) else {
        html.push_str(
            "<p id=\"no-pause\">No run has measured a pause yet: <code>just bench-client</code> does.</p>\n",
        );
        return;
    };
    let _ = writeln!(
        html,
        "<p>Measured at commit {}, {}, on {}.</p>\n<table id=\"client-pause\" class=\"stack\"><thead><tr>\
         <th>pause</th><th>client</th><th>longest read, paused master</th><th>p99 read, paused master</th>\
         <th>longest read, other masters</th><th>errors</th><th>increments applied twice</th>\
         <th>acknowledged increments lost</th></tr></thead><tbody>",
        escape(&run.commit),
        escape(&run.date),
        escape(&run.server)
    );
    for row in &run.pauses {
        let ours = row.client == "zaris";
        let cell = |label: &str, shown: String, missed: bool| {
            if ours && missed {
                format!("<td data-label=\"{label}\" class=\"worse\">▲ {shown}</td>")
            } else {
                format!("<td data-label=\"{label}\">{shown}</td>")
            }
        };
        let _ = writeln!(
            html,
            "<tr><td data-label=\"pause\">{} s</td><td data-label=\"client\">{}</td>{}{}{}{}{}{}</tr>",
            row.pause_ms / 1000,
            escape(&row.client),
            cell(
                "longest read",
                format!("{:.0} ms", row.paused_max_read_ms),
                row.paused_max_read_ms > PAUSED_READ_BAR_MS
            ),
            cell("p99 read", format!("{:.1} ms", row.paused_p99_read_ms), false),
            cell(
                "others' longest read",
                format!("{:.0} ms", row.other_max_read_ms),
                row.other_max_read_ms > PAUSED_READ_BAR_MS
            ),
            cell("errors", row.errors.to_string(), row.errors > 0),
            cell("applied twice", row.applied_twice.to_string(), row.applied_twice > 0),
            cell("lost", row.lost.to_string(), row.lost > 0),
        );
    }
    html.push_str("</tbody></table>\n");
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
                row("pipelines 100 x 1", "redis-rs", 0.9),
            ],
            hits: Vec::new(),
            pauses: vec![
                PauseRow {
                    client: "zaris".into(),
                    pause_ms: 12_000,
                    paused_max_read_ms: 310.0,
                    paused_p99_read_ms: 40.0,
                    other_max_read_ms: 9.0,
                    errors: 0,
                    applied_twice: 0,
                    lost: 0,
                },
                PauseRow {
                    client: "fred".into(),
                    pause_ms: 12_000,
                    paused_max_read_ms: 12_050.0,
                    paused_p99_read_ms: 11_900.0,
                    other_max_read_ms: 8.0,
                    errors: 0,
                    applied_twice: 0,
                    lost: 0,
                },
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
        let html = render(&runs).unwrap();
        assert!(html.contains(
            r#"<td data-label="scenario">1 task</td><td data-label="client">zaris</td><td data-label="ops/s">83333</td><td data-label="CPU µs/op">12.00</td>"#
        ));
        // 12 over fred's 17.5; 3 syscalls over 4; 12,000 instructions over 17,500.
        assert!(html.contains(
            r#"<td data-label="CPU">0.69x <small>vs fred</small></td><td data-label="syscalls">0.75x <small>vs fred</small></td><td data-label="instructions">0.69x <small>vs fred</small></td><td data-label="verdict" class="met">met</td>"#
        ), "{html}");
        // 1.0 µs over redis-rs's 0.9 misses the CPU bar (1.10x), and 1,000
        // instructions over 900 miss theirs; 3 syscalls over 4 do not.
        assert!(html.contains(
            r#"<td data-label="instructions" class="worse" title="over its bar: 1.11x redis-rs">▲ 1.11x <small>vs redis-rs</small></td><td data-label="verdict" class="missed">NOT met <small>(CPU, instructions)</small></td>"#
        ), "{html}");
        assert!(html.contains(
            r#"<p class="verdict missed" id="verdict">2 of 6 bars are NOT met: CPU at pipelines 100 x 1 (zaris); instructions at pipelines 100 x 1 (zaris).</p>"#
        ));
        // The detail table flags Zaris's figures worse by more than 2%: a
        // cost up, throughput down; not equal ones.
        assert!(html.contains(
            r#"<td data-label="CPU µs/op" class="worse" title="worse than redis-rs: 0.90">▲ 1.00</td>"#
        ));
        assert!(html.contains(
            r#"<td data-label="ops/s" class="worse" title="worse than redis-rs: 1111111">▼ 1000000</td>"#
        ));
        assert!(
            !html.contains(r#"<td data-label="send" class="worse""#),
            "1.00 against 1.00"
        );
        // The contents lead to each scenario's inline small multiples.
        assert!(html.contains(r##"<li><a href="#s-pipelines-100-x-1">pipelines 100 x 1</a></li>"##));
        assert!(html.find("id=\"verdicts\"") < html.find("id=\"latest\""));
        assert_eq!(html.matches("<h3 id=\"s-").count(), 2);
        assert_eq!(html.matches("<svg role=\"img\" aria-label=\"").count(), 2);
        assert!(html.contains(
            "<title>bbb · 2026-12-02T00:00:00Z\nzaris: 83.3k\nfred: 57.1k\nredis-rs: 50k</title>"
        ));
        // The pause table: every client's row, Zaris's misses marked.
        assert!(html.contains(
            r#"<tr><td data-label="pause">12 s</td><td data-label="client">zaris</td><td data-label="longest read" class="worse">▲ 310 ms</td>"#
        ), "{html}");
        assert!(html.contains(
            r#"<td data-label="client">fred</td><td data-label="longest read">12050 ms</td>"#
        ));
        // A run recorded before the counts were: no counts, no chart points,
        // and the page still renders.
        let old = r#"{"commit":"c0ffee","date":"2026-11-01T00:00:00Z","cpu":"x","cpus":2,"server":"redis-server","rows":[{"scenario":"1 task","client":"zaris","ops_per_sec":1.0,"cpu_us_per_op":20.0,"user_us_per_op":10.0,"system_us_per_op":10.0}]}"#;
        let old: ClientRun = serde_json::from_str(old).unwrap();
        assert_eq!(old.rows[0].syscalls_per_op, None);
        let html = render(&[old, runs[1].clone()]).unwrap();
        assert!(html.contains("user-space instructions per op"));
        assert!(
            !html.contains("id=\"no-pause\""),
            "the latest run with a pause is shown"
        );
        assert!(render(&[runs[0].clone()])
            .unwrap()
            .contains("id=\"client-pause\""));
        // A run that measured the pause alone: its table, and the verdicts
        // of the last run that measured the rest.
        let mut pause_only = runs[1].clone();
        pause_only.rows.clear();
        pause_only.commit = "ccc".into();
        pause_only.pauses[0].paused_max_read_ms = 90.0;
        let html = render(&[runs[1].clone(), pause_only]).unwrap();
        assert!(html.contains("<p>Measured at commit ccc,"));
        assert!(html.contains("<p id=\"client-machine\">The latest run: commit bbb,"));
        assert!(html.contains(r#"<td data-label="longest read">90 ms</td>"#));
        assert!(render(&[])
            .unwrap()
            .contains("No client run is recorded yet"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_blocking_peer_is_compared_without_readiness_waits() {
        let mut latest = run("fff", 12.0);
        let set = |run: &mut ClientRun, client: &str, syscalls: f64, epoll: f64| {
            let row = run
                .rows
                .iter_mut()
                .find(|r| r.scenario == "pipelines 100 x 1" && r.client == client)
                .unwrap();
            row.syscalls_per_op = Some(syscalls);
            row.epoll_waits_per_op = Some(epoll);
            row.cpu_us_per_op = 0.5;
            row.instructions_per_op = Some(1.0);
        };
        // redis-rs's sync pipeline blocks in recv: Zaris's 0.081 calls,
        // 0.021 of them epoll_wait, are 0.060 against its 0.061.
        set(&mut latest, "redis-rs", 0.061, 0.0);
        set(&mut latest, "zaris", 0.081, 0.021);
        let verdicts = verdicts(&latest);
        let pipelined = verdicts
            .iter()
            .find(|v| v.scenario == "pipelines 100 x 1")
            .unwrap();
        assert!(pipelined.missed().is_empty(), "{:?}", pipelined.missed());
        let html = render(std::slice::from_ref(&latest)).unwrap();
        assert!(
            html.contains(
                ">0.98x <small>vs redis-rs, without epoll_wait (1.33x with)</small></td>"
            ),
            "{html}"
        );
        // A send too many is not excused: 0.069 without its waits.
        set(&mut latest, "zaris", 0.090, 0.021);
        assert_eq!(verdicts_missed(&latest, "pipelines 100 x 1"), ["syscalls"]);
        // A peer that waits on readiness too is compared call for call.
        set(&mut latest, "redis-rs", 0.061, 0.010);
        set(&mut latest, "zaris", 0.081, 0.021);
        assert_eq!(verdicts_missed(&latest, "pipelines 100 x 1"), ["syscalls"]);
    }

    fn verdicts_missed(run: &ClientRun, scenario: &str) -> Vec<&'static str> {
        verdicts(run)
            .iter()
            .find(|v| v.scenario == scenario && v.client == "zaris")
            .map(Verdict::missed)
            .unwrap_or_default()
    }

    fn hit(client: &str, read: &str, ns: f64, cached: f64) -> HitRow {
        HitRow {
            client: client.into(),
            read: read.into(),
            cpu_ns_per_read: ns,
            cached_share: cached,
            instructions_per_read: Some(ns * 3.0),
        }
    }

    #[test]
    fn hits_are_held_to_their_bars() {
        let rows = vec![
            hit("zaris", "cache hit: GET", 180.0, 1.0),
            hit("redis-rs", "cache hit: GET", 2000.0, 1.0),
            // Fast, but over half of redis-rs's: the ratio bar misses.
            hit("zaris", "cache hit: HGET", 240.0, 1.0),
            hit("redis-rs", "cache hit: HGET", 400.0, 1.0),
            hit("zaris", "uncached GET", 9000.0, 0.0),
            hit("redis-rs", "uncached GET", 12000.0, 0.0),
        ];
        let verdicts = hit_verdicts(&rows);
        let shown: Vec<String> = verdicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "cache hit: GET: CPU per hit ≤ 250 ns: 180 ns (met)",
                "cache hit: GET: ≤ 0.5x redis-rs's hit: 0.090x (180 ns against 2000 ns) (met)",
                "cache hit: HGET: CPU per hit ≤ 250 ns: 240 ns (met)",
                "cache hit: HGET: ≤ 0.5x redis-rs's hit: 0.600x (240 ns against 400 ns) (NOT met)",
            ]
        );
        // A "hit" row that mostly missed fails, however cheap.
        let missing = [hit("zaris", "cache hit: GET", 100.0, 0.5)];
        let verdicts = hit_verdicts(&missing);
        assert!(!verdicts[0].met);
        assert!(verdicts[0]
            .figure
            .contains("only 50.0% of its reads were hits"));
        // On the page: the verdicts, then every row.
        let mut latest = run("ddd", 12.0);
        latest.hits = rows;
        let html = render(&[latest]).unwrap();
        assert!(html.contains(r#"<p class="verdict missed" id="hit-verdict">3 of 4 hit bars met (commit ddd).</p>"#), "{html}");
        assert!(html.contains(r#"<td data-label="client">redis-rs</td><td data-label="CPU ns/read">2000</td><td data-label="instructions/read">6000</td><td data-label="cached">100.0%</td>"#));
        assert!(render(&[run("eee", 12.0)])
            .unwrap()
            .contains("id=\"no-hits\""));
    }
}
