//! The dashboard page, `web/dashboard/index.html`: the charts, the latest
//! medians and ratios, the bars with their verdicts, and the machine the
//! numbers came from. Static HTML with no script and no network.

use std::fmt::Write;

use crate::bars::{self, Bar};
use crate::charts::{Chart, ROUTE_IMPLS, SLOT_IMPLS};
use crate::keys::{KeyKind, LENGTHS};
use crate::svg::{escape, inline};
use crate::tiers;
use crate::Record;

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
        match &chart.inline {
            Some(svg) => {
                let _ = writeln!(
                    html,
                    "<figure tabindex=\"0\">{}<figcaption>{}; hover a run for its commit, date and values</figcaption></figure>",
                    inline(svg, &chart.title),
                    escape(&chart.title)
                );
            }
            None => {
                let _ = writeln!(
                    html,
                    "<figure tabindex=\"0\"><img src=\"{0}\" alt=\"{1}\" width=\"{2}\" height=\"{3}\"><figcaption>{1}</figcaption></figure>",
                    escape(&chart.file),
                    escape(&chart.title),
                    chart.size.0,
                    chart.size.1
                );
            }
        }
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

/// The style every dashboard page shares: light and dark, and tables that
/// turn each row into a card on a narrow screen (see [`Table`]).
const STYLE: &str = r":root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #fafafa; --panel: #fff; --line: #d0d7de;
  --link: #1f5fbf; --ok: #1e7b34; --bad: #b3261e; --floor: #7a5200; --floor-line: #c99a2e; --bad-bg: #fdecea; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d;
    --link: #79b8ff; --ok: #56d364; --bad: #ff7b72; --floor: #e3b341; --floor-line: #e3b341; --bad-bg: #3d1d1f; }
}
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: var(--fg); background: var(--bg); }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
main > p, header p, figure { max-width: 52rem; }
a { color: var(--link); }
nav.toc { background: var(--panel); border: 1px solid var(--line); padding: .25rem 1rem; max-width: 40rem; }
nav.toc h2 { font-size: 1rem; margin: .5rem 0 0; }
nav.toc ol ol { columns: 2; }
figure { margin: 1.5rem 0; background: var(--panel); border: 1px solid var(--line); }
figure img, figure svg { display: block; width: 100%; height: auto; }
figure:focus-visible { outline: 3px solid #8ab4f8; }
figcaption { padding: .25rem .5rem; font-size: .9rem; color: var(--muted); }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; background: var(--panel); }
th, td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: right; }
td { white-space: nowrap; }
table.stack { font-size: .9rem; } table.stack th, table.stack td { padding: .2rem .4rem; }
th:first-child, td:first-child { text-align: left; }
small { color: var(--muted); font-weight: normal; }
.met { color: var(--ok); } .missed { color: var(--bad); font-weight: bold; } .floor { color: var(--floor); }
p.verdict { padding: .5rem .75rem; border-left: 4px solid; background: var(--panel); }
p.verdict.met { border-color: var(--ok); } p.verdict.missed { border-color: var(--bad); } p.verdict.floor { border-color: var(--floor-line); }
td.worse, tr.bad td { background: var(--bad-bg); color: var(--bad); font-weight: bold; }
table#bars { width: 100%; table-layout: fixed; }
#bars td, #bars th { white-space: normal; text-align: left; vertical-align: top; }
td[data-label=scenario], #hit-verdicts td { white-space: normal; text-align: left; }
#bars col.c-what { width: 38%; } #bars col.c-needed { width: 14%; } #bars col.c-measured { width: 34%; } #bars col.c-verdict { width: 14%; }
#bars td.floor small { display: block; }
@media (max-width: 40rem) {
  main { padding: .5rem; }
  td { white-space: normal; } td:first-child { overflow-wrap: anywhere; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: auto; }
  table.stack { border: 0; background: none; }
  table.stack thead, table.stack colgroup { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack tr { border: 1px solid var(--line); background: var(--panel); margin-bottom: .5rem; }
  table.stack td { border: 0; border-top: 1px solid var(--line); text-align: right; white-space: normal; overflow-wrap: break-word; }
  table.stack td:first-child { border-top: 0; font-weight: bold; }
  table.stack td::before { content: attr(data-label); float: left; max-width: 50%; margin-right: 1rem; text-align: left;
    font-weight: normal; color: var(--muted); }
  table.stack td::after { content: ''; display: block; clear: both; }
  nav.toc ol ol { columns: 1; }
  /* Charts keep a readable size and scroll sideways within their frame. */
  figure { overflow-x: auto; } figure > img, figure > svg { width: 640px; max-width: none; }
  figure > img[width='1100'] { width: 900px; }
  #bars td.floor small { display: inline; }
}
";

/// A table on a dashboard page, every cell carrying its column's name, so
/// that on a narrow screen (with more than [`CARDS_FROM`] columns) each row
/// becomes a card of named values rather than a table to scroll sideways.
pub struct Table {
    html: String,
    labels: Vec<String>,
}

/// Tables with more columns than this turn into cards on a narrow screen.
pub const CARDS_FROM: usize = 3;

/// One cell: its HTML and, if any, its class and tooltip.
#[derive(Default)]
pub struct Cell {
    /// The content, as HTML.
    pub html: String,
    /// A class (`worse`, `met`, `missed`, `floor`).
    pub class: Option<&'static str>,
    /// A tooltip.
    pub title: Option<String>,
}

impl Cell {
    /// A cell of plain text (escaped here).
    #[must_use]
    pub fn text(text: &str) -> Self {
        Self::html(escape(text))
    }

    /// A cell of HTML.
    #[must_use]
    pub fn html(html: String) -> Self {
        Self {
            html,
            ..Self::default()
        }
    }

    /// This cell with `class`.
    #[must_use]
    pub fn class(self, class: &'static str) -> Self {
        Self {
            class: Some(class),
            ..self
        }
    }

    /// This cell with a tooltip.
    #[must_use]
    pub fn title(self, title: String) -> Self {
        Self {
            title: Some(title),
            ..self
        }
    }
}

impl Table {
    /// A table `id` with these column heads (HTML; their text, without
    /// markup, names each cell on a narrow screen), after `before` (a
    /// `<colgroup>`, or nothing).
    #[must_use]
    pub fn new(id: &str, heads: &[&str], before: &str) -> Self {
        let class = if heads.len() > CARDS_FROM {
            " class=\"stack\""
        } else {
            ""
        };
        let mut html = format!("<table id=\"{id}\"{class}>{before}<thead><tr>");
        for head in heads {
            let _ = write!(html, "<th>{head}</th>");
        }
        html.push_str("</tr></thead><tbody>\n");
        let labels = heads.iter().map(|h| escape(&strip_tags(h))).collect();
        Self { html, labels }
    }

    /// Adds a row of `cells`, with `class` on the row if any.
    pub fn row(&mut self, class: Option<&str>, cells: impl IntoIterator<Item = Cell>) {
        match class {
            Some(class) => {
                let _ = write!(self.html, "<tr class=\"{class}\">");
            }
            None => self.html.push_str("<tr>"),
        }
        for (i, cell) in cells.into_iter().enumerate() {
            let label = self.labels.get(i).map_or("", String::as_str);
            let _ = write!(self.html, "<td data-label=\"{label}\"");
            if let Some(class) = cell.class {
                let _ = write!(self.html, " class=\"{class}\"");
            }
            if let Some(title) = &cell.title {
                let _ = write!(self.html, " title=\"{}\"", escape(title));
            }
            let _ = write!(self.html, ">{}</td>", cell.html);
        }
        self.html.push_str("</tr>\n");
    }

    /// The table's HTML.
    #[must_use]
    pub fn html(mut self) -> String {
        self.html.push_str("</tbody></table>\n");
        self.html
    }
}

/// `html` without its tags.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in html.chars() {
        match c {
            '<' => inside = true,
            '>' => inside = false,
            c if !inside => out.push(c),
            _ => {}
        }
    }
    out.trim().to_owned()
}

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
    let mut table = Table::new(
        "bars",
        &["bar", "needed", "measured", "verdict"],
        "<colgroup><col class=\"c-what\"><col class=\"c-needed\"><col class=\"c-measured\"><col class=\"c-verdict\"></colgroup>",
    );
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
        table.row(
            None,
            [
                Cell::text(&bar.what),
                Cell::text(&bar.needed),
                Cell::text(bar.measured.as_deref().unwrap_or("not measured")),
                Cell::html(format!("{}{floor}", bar.verdict())).class(class),
            ],
        );
    }
    html.push_str(&table.html());
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
        let heads: Vec<&str> = std::iter::once("bytes").chain(SLOT_IMPLS).collect();
        let mut table = Table::new(&group, &heads, "");
        for len in LENGTHS {
            let mut cells = vec![
                Cell::html(len.to_string()),
                Cell::html(ns(r.median(&format!("{group}/zaris/{len}")))),
            ];
            for peer in &SLOT_IMPLS[1..] {
                let ratio = bars::speedup(r, &group, peer, len)
                    .map_or_else(String::new, |x| format!(" <small>({x:.1}x)</small>"));
                cells.push(Cell::html(format!(
                    "{}{ratio}",
                    ns(r.median(&format!("{group}/{peer}/{len}")))
                )));
            }
            table.row(None, cells);
        }
        html.push_str(&table.html());
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
        let first = if kind == "ascii" {
            "untagged keys, bytes"
        } else {
            "hash-tagged keys, bytes"
        };
        let titles: Vec<String> = columns.iter().map(|(_, t)| escape(t)).collect();
        let heads: Vec<&str> = std::iter::once(first)
            .chain(titles.iter().map(String::as_str))
            .collect();
        let mut table = Table::new(&format!("engines-{kind}"), &heads, "");
        for len in LENGTHS {
            let cells = std::iter::once(Cell::html(len.to_string())).chain(columns.iter().map(
                |(candidate, _)| {
                    let figure = r
                        .interleaved_ns
                        .get(&tiers::id(kind, candidate, len))
                        .copied();
                    Cell::html(ns(figure))
                },
            ));
            table.row(None, cells);
        }
        html.push_str(&table.html());
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
    let mut table = Table::new(group, &["benchmark", "median ns"], "");
    for name in names {
        table.row(
            None,
            [
                Cell::text(name),
                Cell::html(ns(r.median(&format!("{group}/{name}")))),
            ],
        );
    }
    html.push_str(&table.html());
}

fn allocations(html: &mut String, r: &Record) {
    html.push_str("<h2>Heap allocations per operation (counting allocator)</h2>\n");
    let mut table = Table::new("allocations", &["operation", "allocations"], "");
    for (op, n) in &r.allocations_per_op {
        table.row(None, [Cell::text(op), Cell::html(n.to_string())]);
    }
    html.push_str(&table.html());
}

fn history_section(html: &mut String, history: &[Record]) {
    html.push_str("<h2>Recorded runs</h2>\n");
    let mut table = Table::new("history", &["commit", "date", "CPU", "zaris 256 B ns"], "");
    for r in history.iter().rev() {
        table.row(
            None,
            [
                Cell::html(format!("<code>{}</code>", escape(&r.commit))),
                Cell::text(&r.date),
                Cell::text(&r.cpu),
                Cell::html(ns(r.median("slot-ascii/zaris/256"))),
            ],
        );
    }
    html.push_str(&table.html());
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
            inline: None,
            size: (760, 440),
        }];
        let html = render(&[record("old", &[]), latest], &charts);
        assert!(html.contains(r#"<img src="speedup.svg" alt="speed-up""#));
        assert!(
            html.contains(
                r#"<tr><td data-label="bytes">8</td><td data-label="zaris">2.00</td><td data-label="crc16">5.00 <small>(2.5x)</small></td>"#
            ),
            "ratios sit next to medians"
        );
        assert!(html.contains(
            r#"<tr><td data-label="benchmark">zaris-table</td><td data-label="median ns">3.25</td></tr>"#
        ));
        // Every engine, the one in use through slot_for_key.
        assert!(html.contains("<th>zaris portable</th><th>zaris pclmulqdq</th><th>crc-fast</th>"));
        assert!(
            html.contains(
                r#"<td data-label="zaris portable">7.50</td><td data-label="zaris pclmulqdq">3.25</td><td data-label="crc-fast">30.00</td>"#
            ),
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
