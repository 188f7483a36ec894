//! The Reliability page, `web/dashboard/reliability.html`: the latest
//! recorded soak (`just soak`, kept in `bench/soak/`): its figures, its
//! timeline and its verdict, and every soak recorded before it; then the
//! simulated campaigns (`just sim`, kept in `bench/sim/history.jsonl`):
//! per commit, seeds, operations, simulated hours, violations and the
//! events that took effect, by kind.
//!
//! The report is read as plain JSON (the soak lives in the test harness,
//! which this crate does not depend on); a field the page expects and the
//! report lacks shows as "–".

use std::fmt::Write;

use serde_json::Value;

use crate::page::{start, Cell, Table};
use crate::svg::escape;

/// A number at `path` in `report`, formatted, or "–".
fn number(report: &Value, path: &[&str], decimals: usize) -> String {
    scaled(report, path, 1.0, decimals)
}

/// A ratio at `path` as a percentage.
fn percent(report: &Value, path: &[&str], decimals: usize) -> String {
    format!("{} %", scaled(report, path, 100.0, decimals))
}

fn scaled(report: &Value, path: &[&str], by: f64, decimals: usize) -> String {
    let mut v = report;
    for key in path {
        v = match key.parse::<usize>() {
            Ok(i) if v.is_array() => &v[i],
            _ => &v[*key],
        };
    }
    match v.as_f64() {
        Some(n) => grouped(n * by, decimals),
        None => "–".into(),
    }
}

/// `n` with `decimals` decimals and its whole part in groups of three
/// digits: 1,262,345,678 operations read at a glance; 1262345678 do not.
fn grouped(n: f64, decimals: usize) -> String {
    let plain = format!("{n:.decimals$}");
    let (sign, rest) = plain.split_at(usize::from(plain.starts_with('-')));
    let (whole, fraction) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
    let mut out = String::from(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out + fraction
}

fn text<'a>(report: &'a Value, key: &str) -> &'a str {
    report[key].as_str().unwrap_or("–")
}

/// The page for the latest report (`None`: no soak recorded yet) and the
/// summary lines of all of them (`bench/soak/history.jsonl`), newest last.
#[must_use]
pub fn render(
    latest: Option<&Value>,
    history: &[Value],
    timeline: Option<&str>,
    campaigns: &[Value],
) -> String {
    let mut html = start("Zaris reliability: the nemesis soak");
    html.push_str(HEADER);
    let Some(report) = latest else {
        html.push_str("<p>No soak is recorded yet: run <code>just soak 1800</code>.</p>\n");
        campaigns_section(&mut html, campaigns);
        html.push_str("</main></body></html>\n");
        return html;
    };
    let violations: Vec<&str> = report["violations"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let _ = writeln!(
        html,
        "<h2>Latest soak: {} s on {}, seed {}</h2>",
        number(report, &["seconds"], 0),
        escape(text(report, "server")),
        number(report, &["seed"], 0)
    );
    if violations.is_empty() {
        html.push_str("<p class=\"verdict met\" id=\"verdict\">Every check held.</p>\n");
    } else {
        let _ = writeln!(
            html,
            "<p class=\"verdict missed\" id=\"verdict\">{} checks failed:</p>\n<ul>",
            violations.len()
        );
        for v in violations.iter().take(20) {
            let _ = writeln!(html, "<li>{}</li>", escape(v));
        }
        html.push_str("</ul>\n");
    }
    if let Some(file) = timeline {
        let _ = writeln!(
            html,
            "<figure tabindex=\"0\"><img src=\"{}\" alt=\"Operations a second (succeeded and failed) and map \
             refreshes a second over the soak, each nemesis event shaded and named\" width=\"1100\" \
             height=\"600\"><figcaption>Throughput, failures and refreshes over the soak; each \
             event shaded.</figcaption></figure>",
            escape(file)
        );
    }
    let mut rows: Vec<(&str, String)> = vec![
        ("operations", number(report, &["all", "operations"], 0)),
        ("succeeded", percent(report, &["all", "ratio"], 4)),
        (
            "operations in kill -9 windows",
            number(report, &["in_kill_windows", "operations"], 0),
        ),
        (
            "succeeded in kill -9 windows (goal 99.9 %)",
            percent(report, &["in_kill_windows", "ratio"], 3),
        ),
        (
            "lost durable writes",
            number(report, &["lost_durable_writes"], 0),
        ),
        (
            "lost plain writes (inside lossy windows / elsewhere)",
            format!(
                "{} / {}",
                number(report, &["lost_plain_writes", "inside_lossy_windows"], 0),
                number(report, &["lost_plain_writes", "elsewhere"], 0)
            ),
        ),
        (
            "lost appends (inside lossy windows / elsewhere)",
            format!(
                "{} / {}",
                number(report, &["lost_appends", "inside_lossy_windows"], 0),
                number(report, &["lost_appends", "elsewhere"], 0)
            ),
        ),
        (
            "values appended twice",
            number(report, &["duplicated_appends"], 0),
        ),
        (
            "attempts with an unknown outcome",
            number(report, &["unknown_outcomes"], 0),
        ),
        (
            "worst operation (ms; deadline 10,000)",
            number(report, &["worst_operation_ms"], 0),
        ),
        ("map refreshes", number(report, &["refreshes"], 0)),
        (
            "refreshes per event (bound: see below)",
            number(report, &["refreshes_per_event"], 1),
        ),
        (
            "memory 10 s in / at the end (KiB)",
            format!(
                "{} / {}",
                number(report, &["memory_kib", "0"], 0),
                number(report, &["memory_kib", "1"], 0)
            ),
        ),
    ];
    // Soaks recorded before the client cache had readers say nothing of it.
    if report["cache"].is_object() {
        rows.push((
            "reads through the client cache (hits / misses)",
            format!(
                "{} ({} / {})",
                number(report, &["cache", "reads"], 0),
                number(report, &["cache", "hits"], 0),
                number(report, &["cache", "misses"], 0)
            ),
        ));
        rows.push((
            "cached reads inside the lease that saw an older value / past it (bound: 0)",
            format!(
                "{} / {}",
                number(report, &["cache", "stale_inside_lease"], 0),
                number(report, &["cache", "violations"], 0)
            ),
        ));
    }
    rows.push(("violations", violations.len().to_string()));

    let mut table = Table::new("figures", &["figure", "value"], "");
    for (what, value) in rows {
        table.row(None, [Cell::text(what), Cell::text(&value)]);
    }
    html.push_str(&table.html());
    html.push_str("<h2>Events</h2>\n");
    let mut table = Table::new("events", &["event", "count"], "");
    if let Some(kinds) = report["events_by_kind"].as_object() {
        for (kind, n) in kinds {
            table.row(
                None,
                [
                    Cell::text(kind),
                    Cell::html(n.as_u64().unwrap_or(0).to_string()),
                ],
            );
        }
    }
    html.push_str(&table.html());
    html.push_str(CHECKS);
    if !history.is_empty() {
        history_section(&mut html, history);
    }
    campaigns_section(&mut html, campaigns);
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// What a recorded soak broke, in words (`None`: every check held).
fn broken(run: &Value) -> Option<String> {
    let count = |key: &str| run[key].as_u64().unwrap_or(0);
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut what = Vec::new();
    let lost = count("lost_durable_writes");
    if lost > 0 {
        what.push(plural(lost, "lost durable write", "lost durable writes"));
    }
    let violations = count("violations");
    if violations > 0 {
        what.push(plural(violations, "violation", "violations"));
    }
    (!what.is_empty()).then(|| what.join(", "))
}

/// Every recorded soak, newest first, those that broke a check flagged
/// and said first.
fn history_section(html: &mut String, history: &[Value]) {
    html.push_str("<h2>Every soak recorded</h2>\n");
    let failed: Vec<String> = history
        .iter()
        .rev()
        .filter_map(|run| Some(format!("{} ({})", text(run, "commit"), broken(run)?)))
        .collect();
    if failed.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"verdict met\" id=\"history-verdict\">Every check held in all {} recorded soaks.</p>",
            history.len()
        );
    } else {
        let _ = writeln!(
            html,
            "<p class=\"verdict missed\" id=\"history-verdict\">{} of {} recorded soaks broke a check: {}. Their rows are marked ✗.</p>",
            failed.len(),
            history.len(),
            escape(&failed.join("; "))
        );
    }
    let mut table = Table::new(
        "history",
        &[
            "commit",
            "verdict",
            "server",
            "seconds",
            "seed",
            "operations",
            "succeeded %",
            "kill -9 windows %",
            "lost durable",
            "violations",
        ],
        "",
    );
    for run in history.iter().rev() {
        let verdict = broken(run).map_or_else(
            || Cell::text("held").class("met"),
            |what| Cell::html(format!("✗ {}", escape(&what))).class("missed"),
        );
        let bad = broken(run).is_some();
        table.row(
            bad.then_some("bad"),
            [
                Cell::html(format!("<code>{}</code>", escape(text(run, "commit")))),
                verdict,
                Cell::text(text(run, "server")),
                Cell::text(&number(run, &["seconds"], 0)),
                Cell::text(&number(run, &["seed"], 0)),
                Cell::text(&number(run, &["operations"], 0)),
                Cell::text(&number(run, &["succeeded_percent"], 4)),
                Cell::text(&number(run, &["kill_window_percent"], 3)),
                Cell::text(&number(run, &["lost_durable_writes"], 0)),
                Cell::text(&number(run, &["violations"], 0)),
            ],
        );
    }
    html.push_str(&table.html());
}

/// The simulated campaigns (`bench/sim/history.jsonl`, oldest first):
/// the newest first, with what broke said first, and the newest one's
/// events by kind.
fn campaigns_section(html: &mut String, campaigns: &[Value]) {
    html.push_str("<h2 id=\"simulation\">Simulated campaigns</h2>\n");
    html.push_str(SIMULATION);
    let Some(newest) = campaigns.last() else {
        html.push_str("<p>No campaign is recorded yet: run <code>just sim 200000</code>.</p>\n");
        return;
    };
    let count = |run: &Value, key: &str| run[key].as_u64().unwrap_or(0);
    let failed: Vec<String> = campaigns
        .iter()
        .rev()
        .filter(|run| count(run, "violations") > 0)
        .map(|run| {
            let fixed = run["fixed_in"]
                .as_str()
                .map(|fix| format!(", fixed in {fix}"))
                .unwrap_or_default();
            format!(
                "{} (seeds {}{fixed})",
                text(run, "commit"),
                run["failed_seeds"]
            )
        })
        .collect();
    let total: u64 = campaigns.iter().map(|run| count(run, "seeds")).sum();
    if failed.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"verdict met\" id=\"sim-verdict\">Every check held in all {} recorded campaigns ({} seeds).</p>",
            campaigns.len(),
            grouped(total as f64, 0)
        );
    } else {
        let _ = writeln!(
            html,
            "<p class=\"verdict missed\" id=\"sim-verdict\">{} of {} recorded campaigns broke a check: {}. Each seed replays with <code>just sim-trace SEED FILE</code>.</p>",
            failed.len(),
            campaigns.len(),
            escape(&failed.join("; "))
        );
    }
    let mut table = Table::new(
        "campaigns",
        &[
            "commit",
            "date",
            "verdict",
            "seeds",
            "operations",
            "simulated hours",
            "violations",
            "events that took effect",
        ],
        "",
    );
    for run in campaigns.iter().rev() {
        let violations = count(run, "violations");
        let took: u64 = run["events_by_kind"]
            .as_object()
            .map(|kinds| kinds.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0);
        let verdict = if violations == 0 {
            Cell::text("held").class("met")
        } else {
            // A campaign's line may say, once it is fixed, where (added by
            // hand: the campaign cannot know).
            let fixed = run["fixed_in"]
                .as_str()
                .map(|fix| format!(", fixed in <code>{}</code>", escape(fix)))
                .unwrap_or_default();
            Cell::html(format!(
                "✗ seeds {}{fixed}",
                escape(&run["failed_seeds"].to_string())
            ))
            .class("missed")
        };
        table.row(
            (violations > 0).then_some("bad"),
            [
                Cell::html(format!("<code>{}</code>", escape(text(run, "commit")))),
                Cell::text(text(run, "date")),
                verdict,
                Cell::text(&number(run, &["seeds"], 0)),
                Cell::text(&number(run, &["operations"], 0)),
                Cell::text(&number(run, &["simulated_hours"], 1)),
                Cell::text(&violations.to_string()),
                Cell::text(&grouped(took as f64, 0)),
            ],
        );
    }
    html.push_str(&table.html());
    let _ = writeln!(
        html,
        "<h3>Events of the newest campaign ({}), by kind</h3>",
        escape(text(newest, "commit"))
    );
    let mut kinds = Table::new("campaign-kinds", &["event", "drawn", "took effect"], "");
    if let Some(drawn) = newest["events_drawn"].as_object() {
        for (kind, n) in drawn {
            kinds.row(
                None,
                [
                    Cell::text(kind),
                    Cell::text(&grouped(n.as_f64().unwrap_or(0.0), 0)),
                    Cell::text(&grouped(
                        newest["events_by_kind"][kind].as_f64().unwrap_or(0.0),
                        0,
                    )),
                ],
            );
        }
    }
    html.push_str(&kinds.html());
}

const SIMULATION: &str = r"<p>The same workload, nemesis and checker as the soak, with the real <code>zaris-client</code> in a deterministic simulation (<code>just sim SEEDS</code>): a model Redis Cluster in turmoil's simulated time, one seed a run, each replayed to the byte. An event <em>took effect</em> when what it is for was counted while it ran (a partition that held a connection, a kill that led to a failover, a trickle that slowed bytes): a kind drawn that never did fails the campaign.</p>
";

const CHECKS: &str = r"<h2>What is checked</h2>
<p>Every operation of the workload is recorded (invoke, complete, outcome, value) and judged at the end, key by key, against the cluster's final state: every acknowledged durable write (<code>WAIT 1</code>) is present; plain writes and list appends are lost only inside the window of an event that can lose them (a <code>kill -9</code>, a long freeze, a partition, a forced takeover), and are counted; no read returns a value never written; a value appears twice only when some attempt's outcome was unknown; counters end between their acknowledged increments and those plus the unknown ones; compare-and-set chains have no fork and no gap; a transaction's two counters stay equal; no operation ends more than 100 ms past its deadline; map refreshes stay under one per refresh interval (500 ms) each event lasts, plus two, per client, plus the polls; the process's memory at the end is at most 1.25x what it was 10 s in, plus 16 MiB; and every read through the client cache that starts more than its lease (250 ms) after a durable write was acknowledged returns that write or a later one.</p>
";

const HEADER: &str = r#"<header>
<h1>Zaris reliability</h1>
<p>A seeded nemesis soak (<code>just soak SECONDS SEED</code>): a real 3+3 cluster behind fault-injecting proxies, driven through <code>zaris-client</code> by a mixed workload while failovers, takeovers, migrations, <code>kill -9</code>, freezes and network faults happen, judged by a history checker. <a href="index.html">The benchmarks</a> · <a href="../index.html">the playground</a>.</p>
</header>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_figures_read_in_groups_of_three_digits() {
        assert_eq!(grouped(1_262_345_678.0, 0), "1,262,345,678");
        assert_eq!(grouped(200_000.0, 0), "200,000");
        assert_eq!(grouped(3_432.06, 1), "3,432.1");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(grouped(0.25, 2), "0.25");
        assert_eq!(grouped(-12_345.5, 1), "-12,345.5");
    }

    #[test]
    fn a_report_renders_its_figures_and_violations() {
        let report: Value = serde_json::json!({
            "server": "redis-server", "seed": 42, "seconds": 60,
            "all": {"operations": 1000, "succeeded": 999, "ratio": 0.999},
            "in_kill_windows": {"operations": 10, "succeeded": 10, "ratio": 1.0},
            "lost_durable_writes": 0,
            "events_by_kind": {"kill-master": 2},
            "violations": ["preg:0:1 <lost>"],
            "memory_kib": [100, 120],
        });
        let html = render(Some(&report), &[], Some("soak-timeline.svg"), &[]);
        assert!(html.contains("seed 42"), "{html}");
        assert!(
            html.contains(
                r#"<td data-label="figure">operations</td><td data-label="value">1,000</td>"#
            ),
            "{html}"
        );
        assert!(
            html.contains(
                r#"<td data-label="event">kill-master</td><td data-label="count">2</td>"#
            ),
            "{html}"
        );
        assert!(html.contains("1 checks failed"), "{html}");
        assert!(html.contains("preg:0:1 &lt;lost&gt;"), "{html}");
        assert!(html.contains(
            r#"<td data-label="figure">memory 10 s in / at the end (KiB)</td><td data-label="value">100 / 120</td>"#
        ));
        assert!(html.contains(r#"src="soak-timeline.svg""#));
        assert!(render(None, &[], None, &[]).contains("No soak is recorded yet"));
        assert!(
            !html.contains("(hits / misses)"),
            "an old report says nothing of it"
        );
        let mut cached = report.clone();
        cached["cache"] = serde_json::json!({"reads": 10, "hits": 8, "misses": 2,
            "stale_inside_lease": 1, "violations": 0});
        let html = render(Some(&cached), &[], None, &[]);
        assert!(html.contains(r#"(hits / misses)</td><td data-label="value">10 (8 / 2)</td>"#));
        assert!(html.contains(r#"(bound: 0)</td><td data-label="value">1 / 0</td>"#));
    }

    #[test]
    fn soaks_that_broke_a_check_are_flagged_first() {
        let run = |commit: &str, lost: u64, violations: u64| {
            serde_json::json!({"commit": commit, "server": "redis-server", "seconds": 1800,
                "seed": 7, "operations": 10, "succeeded_percent": 99.9,
                "kill_window_percent": 99.9, "lost_durable_writes": lost, "violations": violations})
        };
        let report = serde_json::json!({"violations": []});
        let html = render(
            Some(&report),
            &[run("old", 1, 2), run("mid", 0, 1), run("new", 0, 0)],
            None,
            &[],
        );
        assert!(
            html.contains("2 of 3 recorded soaks broke a check: mid (1 violation); old (1 lost durable write, 2 violations)."),
            "{html}"
        );
        assert!(html.contains(
            r#"<tr class="bad"><td data-label="commit"><code>old</code></td><td data-label="verdict" class="missed">✗ 1 lost durable write, 2 violations</td>"#
        ));
        assert!(html.contains(
            r#"<tr><td data-label="commit"><code>new</code></td><td data-label="verdict" class="met">held</td>"#
        ));
        assert_eq!(html.matches("<tr class=\"bad\">").count(), 2);
        let held = render(Some(&report), &[run("new", 0, 0)], None, &[]);
        assert!(held.contains("Every check held in all 1 recorded soaks."));
    }

    #[test]
    fn campaigns_are_shown_newest_first_with_what_broke_said_first() {
        let campaign = |commit: &str, violations: u64, failed: &[u64]| {
            serde_json::json!({
                "commit": commit, "date": "2026-12-06", "seeds": 2000, "from": 1,
                "operations": 12_465_209, "simulated_hours": 34.04, "violations": violations,
                "failed_seeds": failed,
                "events_by_kind": {"partition": 29, "kill-master": 32},
                "events_drawn": {"partition": 29, "kill-master": 33},
            })
        };
        let html = render(None, &[], None, &[campaign("aaa1111", 0, &[])]);
        assert!(
            html.contains("Every check held in all 1 recorded campaigns (2,000 seeds)"),
            "{html}"
        );
        assert!(
            html.contains("<td data-label=\"operations\">12,465,209</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td data-label=\"simulated hours\">34.0</td>"),
            "{html}"
        );
        // Events that took effect: 29 + 32 of 62 drawn.
        assert!(
            html.contains("<td data-label=\"events that took effect\">61</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td data-label=\"took effect\">32</td>"),
            "{html}"
        );
        let html = render(
            None,
            &[],
            None,
            &[
                campaign("aaa1111", 0, &[]),
                campaign("bbb2222", 2, &[14, 67]),
            ],
        );
        let mut fixed = campaign("ccc3333", 1, &[115150]);
        fixed["fixed_in"] = "ddd4444".into();
        let with_fix = render(None, &[], None, &[fixed]);
        assert!(
            with_fix.contains("1 of 1 recorded campaigns broke a check: ccc3333 (seeds [115150], fixed in ddd4444)"),
            "{with_fix}"
        );
        assert!(
            with_fix.contains("✗ seeds [115150], fixed in <code>ddd4444</code>"),
            "{with_fix}"
        );
        assert!(
            html.contains("1 of 2 recorded campaigns broke a check: bbb2222 (seeds [14,67])"),
            "{html}"
        );
        let newest = html.find("bbb2222</code>").expect("the newest row");
        let oldest = html.find("aaa1111</code>").expect("the oldest row");
        assert!(newest < oldest, "newest first");
        assert!(render(None, &[], None, &[]).contains("No campaign is recorded yet"));
    }
}
