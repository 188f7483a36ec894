//! The Reliability page, `web/dashboard/reliability.html`: the latest
//! recorded soak (`just soak`, kept in `bench/soak/`): its figures, its
//! timeline and its verdict, and every soak recorded before it.
//!
//! The report is read as plain JSON (the soak lives in the test harness,
//! which this crate does not depend on); a field the page expects and the
//! report lacks shows as "–".

use std::fmt::Write;

use serde_json::Value;

use crate::page::{escape, start};

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
        Some(n) => format!("{:.decimals$}", n * by),
        None => "–".into(),
    }
}

fn text<'a>(report: &'a Value, key: &str) -> &'a str {
    report[key].as_str().unwrap_or("–")
}

/// The page for the latest report (`None`: no soak recorded yet) and the
/// summary lines of all of them (`bench/soak/history.jsonl`), newest last.
#[must_use]
pub fn render(latest: Option<&Value>, history: &[Value], timeline: Option<&str>) -> String {
    let mut html = start("Zaris reliability: the nemesis soak");
    html.push_str(HEADER);
    let Some(report) = latest else {
        html.push_str(
            "<p>No soak is recorded yet: run <code>just soak 1800</code>.</p>\n</main></body></html>\n",
        );
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
            "<figure><img src=\"{}\" alt=\"Operations a second (succeeded and failed) and map \
             refreshes a second over the soak, each nemesis event shaded and named\" width=\"1100\" \
             height=\"520\"><figcaption>Throughput, failures and refreshes over the soak; each \
             event shaded.</figcaption></figure>",
            escape(file)
        );
    }
    let rows: [(&str, String); 14] = [
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
        ("violations", violations.len().to_string()),
    ];
    html.push_str("<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Figures\"><table id=\"figures\">\n<tr><th>figure</th><th>value</th></tr>\n");
    for (what, value) in rows {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(what),
            escape(&value)
        );
    }
    html.push_str("</table></div>\n<h2>Events</h2>\n<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Events by kind\"><table id=\"events\">\n<tr><th>event</th><th>count</th></tr>\n");
    if let Some(kinds) = report["events_by_kind"].as_object() {
        for (kind, n) in kinds {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td></tr>",
                escape(kind),
                n.as_u64().unwrap_or(0)
            );
        }
    }
    html.push_str("</table></div>\n");
    html.push_str(CHECKS);
    if !history.is_empty() {
        html.push_str("<h2>Every soak recorded</h2>\n<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"Soak history\"><table id=\"history\">\n<tr><th>commit</th><th>server</th><th>seconds</th><th>seed</th><th>operations</th><th>succeeded %</th><th>kill -9 windows %</th><th>lost durable</th><th>violations</th></tr>\n");
        for run in history.iter().rev() {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(text(run, "commit")),
                escape(text(run, "server")),
                number(run, &["seconds"], 0),
                number(run, &["seed"], 0),
                number(run, &["operations"], 0),
                number(run, &["succeeded_percent"], 4),
                number(run, &["kill_window_percent"], 3),
                number(run, &["lost_durable_writes"], 0),
                number(run, &["violations"], 0),
            );
        }
        html.push_str("</table></div>\n");
    }
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

const CHECKS: &str = r"<h2>What is checked</h2>
<p>Every operation of the workload is recorded (invoke, complete, outcome, value) and judged at the end, key by key, against the cluster's final state: every acknowledged durable write (<code>WAIT 1</code>) is present; plain writes and list appends are lost only inside the window of an event that can lose them (a <code>kill -9</code>, a long freeze, a partition, a forced takeover), and are counted; no read returns a value never written; a value appears twice only when some attempt's outcome was unknown; counters end between their acknowledged increments and those plus the unknown ones; compare-and-set chains have no fork and no gap; a transaction's two counters stay equal; no operation ends more than 100 ms past its deadline; map refreshes stay under one per refresh interval (500 ms) each event lasts, plus two, per client, plus the polls; and the process's memory at the end is at most 1.25x what it was 10 s in, plus 16 MiB.</p>
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
        let html = render(Some(&report), &[], Some("soak-timeline.svg"));
        assert!(html.contains("seed 42"), "{html}");
        assert!(html.contains("<td>operations</td><td>1000</td>"), "{html}");
        assert!(html.contains("<td>kill-master</td><td>2</td>"), "{html}");
        assert!(html.contains("1 checks failed"), "{html}");
        assert!(html.contains("preg:0:1 &lt;lost&gt;"), "{html}");
        assert!(html.contains("<td>memory 10 s in / at the end (KiB)</td><td>100 / 120</td>"));
        assert!(html.contains(r#"src="soak-timeline.svg""#));
        assert!(render(None, &[], None).contains("No soak is recorded yet"));
    }
}
