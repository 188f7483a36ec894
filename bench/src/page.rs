//! The dashboard page, `web/dashboard/index.html`: the charts, the latest
//! medians and ratios, the bars with their verdicts, and the machine the
//! numbers came from. Static HTML with no script and no network.

use std::fmt::Write;

use crate::bars::{self, Bar};
use crate::charts::{Chart, ROUTE_IMPLS, SLOT_IMPLS};
use crate::keys::{KeyKind, LENGTHS};
use crate::tiers;
use crate::Record;

/// Escapes text for HTML element content and attribute values.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "–".into(),
    }
}

/// The whole page for `history` (the last record is the latest run).
#[must_use]
pub fn render(history: &[Record], charts: &[Chart]) -> String {
    let mut html = start("Zaris benchmark dashboard");
    html.push_str(HEADER);
    let Some(latest) = history.last() else {
        html.push_str("<p>No benchmark run is recorded yet: run <code>just bench</code>.</p>\n</main></body></html>\n");
        return html;
    };
    bars_section(&mut html, &bars::evaluate(latest));
    machine_section(&mut html, latest);
    for chart in charts {
        let _ = writeln!(
            html,
            "<figure><img src=\"{0}\" alt=\"{1}\" width=\"760\" height=\"440\"><figcaption>{1}</figcaption></figure>",
            escape(&chart.file),
            escape(&chart.title)
        );
    }
    slot_tables(&mut html, latest);
    engines_section(&mut html, latest);
    simple_table(
        &mut html,
        "Route lookup (ns per key)",
        "route",
        &ROUTE_IMPLS,
        latest,
    );
    let retry: Vec<&str> = latest
        .medians_ns
        .keys()
        .filter_map(|id| id.strip_prefix("retry/"))
        .collect();
    simple_table(
        &mut html,
        "The retry brain (ns per operation)",
        "retry",
        &retry,
        latest,
    );
    allocations(&mut html, latest);
    history_section(&mut html, history);
    html.push_str("</main>\n</body>\n</html>\n");
    html
}

/// The style every dashboard page shares.
const STYLE: &str = r"body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1b1b1b; background: #fafafa; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
header a { color: #1f5fbf; }
figure { margin: 1.5rem 0; background: #fff; border: 1px solid #ddd; }
figure img { display: block; width: 100%; height: auto; }
figcaption { padding: .25rem .5rem; font-size: .9rem; color: #555; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; background: #fff; }
th, td { border: 1px solid #ddd; padding: .2rem .5rem; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.met { color: #1e7b34; } .missed { color: #b3261e; font-weight: bold; } .floor { color: #7a5200; }
.verdict { padding: .5rem .75rem; border-left: 4px solid; background: #fff; }
.verdict.met { border-color: #1e7b34; } .verdict.missed { border-color: #b3261e; } .verdict.floor { border-color: #c99a2e; }
.scroll:focus-visible { outline: 3px solid #8ab4f8; }
table#bars { width: 100%; table-layout: fixed; }
#bars td, #bars th { white-space: normal; overflow-wrap: anywhere; text-align: left; vertical-align: top; }
#bars col.what { width: 38%; } #bars col.needed { width: 14%; } #bars col.measured { width: 34%; } #bars col.verdict { width: 14%; }
#bars td.floor small { display: block; color: #555; font-weight: normal; }
";

/// The start of a dashboard page titled `title`: its head, with the
/// shared style, up to the opening of `<main>`.
#[must_use]
pub fn start(title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n{STYLE}</style>\n\
         </head>\n<body>\n<main>\n",
        escape(title)
    )
}

const HEADER: &str = r#"<header>
<h1>Zaris benchmark dashboard</h1>
<p>What routing one request costs: <code>slot_for_key</code> and route lookup against the peers a Redis Cluster client would use instead, from one criterion run (<code>just bench</code>), tracked per commit. <a href="client.html">The client: Zaris, fred and redis-rs per commit</a> · <a href="reliability.html">Reliability: the nemesis soak</a> · <a href="../index.html">back to the playground</a>.</p>
</header>
"#;

fn bars_section(html: &mut String, bars: &[Bar]) {
    let missed: Vec<&Bar> = bars.iter().filter(|b| b.missed()).collect();
    let at_floor = bars.iter().filter(|b| !b.met && b.floor.is_some()).count();
    html.push_str("<h2>Bars</h2>\n");
    if missed.is_empty() && at_floor == 0 {
        let _ = writeln!(
            html,
            "<p class=\"verdict met\" id=\"verdict\">All {} bars are met in the latest run.</p>",
            bars.len()
        );
    } else if missed.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"verdict floor\" id=\"verdict\">{} of {} bars are met in the latest run; {at_floor} \
             {} at the engine's physical floor (below what its bar asks; the floor's figure is given).</p>",
            bars.len() - at_floor,
            bars.len(),
            if at_floor == 1 { "is" } else { "are" }
        );
    } else {
        let names: Vec<String> = missed.iter().map(|b| escape(&b.what)).collect();
        let _ = writeln!(
            html,
            "<p class=\"verdict missed\" id=\"verdict\">{} of {} bars are NOT met in the latest run: {}.</p>",
            missed.len(),
            bars.len(),
            names.join("; ")
        );
    }
    html.push_str("<table id=\"bars\"><colgroup><col class=\"what\"><col class=\"needed\"><col class=\"measured\"><col class=\"verdict\"></colgroup>\n<tr><th>bar</th><th>needed</th><th>measured</th><th>verdict</th></tr>\n");
    for bar in bars {
        let class = match bar.verdict() {
            "met" => "met",
            "at the floor" => "floor",
            _ => "missed",
        };
        let floor = bar
            .floor
            .as_deref()
            .map(|f| format!("<small>{}</small>", escape(f)))
            .unwrap_or_default();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}{floor}</td></tr>",
            escape(&bar.what),
            escape(&bar.needed),
            escape(bar.measured.as_deref().unwrap_or("not measured")),
            bar.verdict(),
        );
    }
    html.push_str("</table>\n");
}

fn machine_section(html: &mut String, r: &Record) {
    let quick = if r.quick {
        " (criterion <code>--quick</code>: noisier, not recorded in the history)"
    } else {
        ""
    };
    let _ = writeln!(
        html,
        "<h2>Latest run</h2>\n<p id=\"machine\">Commit <code>{}</code>, {}{quick}.<br>CPU: {} ({} logical CPUs), CRC engine: {}.<br>{}.</p>",
        escape(&r.commit),
        escape(&r.date),
        escape(&r.cpu),
        r.cpus,
        escape(&r.crc_engine),
        escape(&r.rustc)
    );
}

fn slot_tables(html: &mut String, r: &Record) {
    for kind in KeyKind::ALL {
        let group = format!("slot-{}", kind.name());
        let _ = writeln!(
            html,
            "<h2>slot_for_key, {} keys (median ns per key; speed-up in brackets)</h2>",
            kind.name()
        );
        let _ = write!(
            html,
            "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{group} table\"><table id=\"{group}\"><tr><th>bytes</th>"
        );
        for imp in SLOT_IMPLS {
            let _ = write!(html, "<th>{imp}</th>");
        }
        html.push_str("</tr>\n");
        for len in LENGTHS {
            let _ = write!(
                html,
                "<tr><td>{len}</td><td>{}</td>",
                ns(r.median(&format!("{group}/zaris/{len}")))
            );
            for peer in &SLOT_IMPLS[1..] {
                let ratio = bars::speedup(r, &group, peer, len)
                    .map_or_else(String::new, |x| format!(" ({x:.1}x)"));
                let _ = write!(
                    html,
                    "<td>{}{ratio}</td>",
                    ns(r.median(&format!("{group}/{peer}/{len}")))
                );
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table></div>\n");
    }
    let _ = writeln!(
        html,
        "<h2>slot_for_utf16, 256-byte text (median ns per key)</h2>"
    );
    let utf16: Vec<&str> = r
        .medians_ns
        .keys()
        .filter_map(|id| id.strip_prefix("slot-utf16/"))
        .collect();
    simple_rows(html, "slot-utf16", &utf16, r);
}

/// Every CRC engine against the peers, from the interleaved run.
fn engines_section(html: &mut String, r: &Record) {
    if r.engines.is_empty() || r.interleaved_ns.is_empty() {
        return;
    }
    html.push_str(
        "<h2>Every CRC engine, interleaved with the peers (ns per key in the quiet phases)</h2>\n",
    );
    html.push_str("<p>One run in which every candidate takes turns in batches of about a millisecond, so that all of them see the same moments of a shared machine; a figure is the 5th percentile of its batches. The speed bars above are judged on these. <code>crc-fast</code> runs its widest engine on this CPU throughout.</p>\n");
    for kind in ["ascii", "tagged"] {
        let mut columns: Vec<(String, String)> = r
            .engines
            .iter()
            .map(|e| (tiers::candidate(r, e), format!("zaris {e}")))
            .collect();
        if kind == "ascii" {
            columns.extend(tiers::PEERS.map(|p| (p.to_owned(), p.to_owned())));
        }
        let _ = write!(
            html,
            "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{kind} keys by engine\"><table id=\"engines-{kind}\"><tr><th>{} keys, bytes</th>",
            if kind == "ascii" {
                "untagged"
            } else {
                "hash-tagged"
            }
        );
        for (_, title) in &columns {
            let _ = write!(html, "<th>{}</th>", escape(title));
        }
        html.push_str("</tr>\n");
        for len in LENGTHS {
            let _ = write!(html, "<tr><td>{len}</td>");
            for (candidate, _) in &columns {
                let figure = r
                    .interleaved_ns
                    .get(&tiers::id(kind, candidate, len))
                    .copied();
                let _ = write!(html, "<td>{}</td>", ns(figure));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table></div>\n");
    }
    if let Some(clock) = r.interleaved_ns.get("clock/imul-64") {
        let _ = writeln!(
            html,
            "<p id=\"clock\">Clock in the quiet phases: {:.2} GHz (64 dependent multiplies in {clock:.1} ns).</p>",
            64.0 * 3.0 / clock
        );
    }
}

fn simple_table(html: &mut String, title: &str, group: &str, names: &[&str], r: &Record) {
    let _ = writeln!(html, "<h2>{}</h2>", escape(title));
    simple_rows(html, group, names, r);
}

fn simple_rows(html: &mut String, group: &str, names: &[&str], r: &Record) {
    let _ = writeln!(
        html,
        "<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{group} table\"><table id=\"{group}\"><tr><th>benchmark</th><th>median ns</th></tr>"
    );
    for name in names {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(name),
            ns(r.median(&format!("{group}/{name}")))
        );
    }
    html.push_str("</table></div>\n");
}

fn allocations(html: &mut String, r: &Record) {
    html.push_str("<h2>Heap allocations per operation (counting allocator)</h2>\n");
    html.push_str("<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"allocations table\"><table id=\"allocations\"><tr><th>operation</th><th>allocations</th></tr>\n");
    for (op, n) in &r.allocations_per_op {
        let _ = writeln!(html, "<tr><td>{}</td><td>{n}</td></tr>", escape(op));
    }
    html.push_str("</table></div>\n");
}

fn history_section(html: &mut String, history: &[Record]) {
    html.push_str("<h2>Recorded runs</h2>\n<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"recorded runs\"><table id=\"history\"><tr><th>commit</th><th>date</th><th>CPU</th><th>zaris 256 B ns</th></tr>\n");
    for r in history.iter().rev() {
        let _ = writeln!(
            html,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.commit),
            escape(&r.date),
            escape(&r.cpu),
            ns(r.median("slot-ascii/zaris/256"))
        );
    }
    html.push_str("</table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::record;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn shows_charts_medians_machine_and_missed_bars() {
        let mut latest = record(
            "<b>abc</b>",
            &[
                ("slot-ascii/zaris/8", 2.0),
                ("slot-ascii/crc16/8", 5.0),
                ("route/zaris-table", 3.25),
            ],
        );
        latest.cpu = "AMD EPYC <test>".into();
        latest.engines = vec!["portable".into(), "pclmulqdq".into()];
        for (id, v) in [
            ("tiers-ascii/zaris@portable/8", 7.5),
            ("tiers-ascii/zaris/8", 3.25),
            ("tiers-ascii/crc-fast/8", 30.0),
            ("tiers-tagged/zaris/8", 4.0),
            ("clock/imul-64", 64.0),
        ] {
            latest.interleaved_ns.insert(id.into(), v);
        }
        let charts = [Chart {
            file: "speedup.svg".into(),
            title: "speed-up".into(),
        }];
        let html = render(&[record("old", &[]), latest], &charts);
        assert!(html.contains(r#"<img src="speedup.svg" alt="speed-up""#));
        assert!(
            html.contains("<tr><td>8</td><td>2.00</td><td>5.00 (2.5x)</td>"),
            "ratios sit next to medians"
        );
        assert!(html.contains("<tr><td>zaris-table</td><td>3.25</td></tr>"));
        // Every engine, the one in use through slot_for_key.
        assert!(html.contains("<th>zaris portable</th><th>zaris pclmulqdq</th><th>crc-fast</th>"));
        assert!(
            html.contains("<tr><td>8</td><td>7.50</td><td>3.25</td><td>30.00</td>"),
            "{html}"
        );
        assert!(html.contains(r#"id="engines-tagged""#));
        assert!(html.contains("Clock in the quiet phases: 3.00 GHz"));
        assert!(html.contains("AMD EPYC &lt;test&gt;") && html.contains("&lt;b&gt;abc&lt;/b&gt;"));
        assert!(
            html.contains("bars are NOT met in the latest run"),
            "a miss is said plainly"
        );
        assert!(
            html.contains(r#"href="../index.html""#),
            "links back to the playground"
        );
        assert!(!html.contains("<script"), "a static page");
        assert_eq!(
            html.matches("<code>old</code>").count(),
            1,
            "every run is listed"
        );
    }

    #[test]
    fn an_empty_history_says_how_to_fill_it() {
        let html = render(&[], &[]);
        assert!(html.contains("No benchmark run is recorded yet"));
    }
}
