//! The dashboard's SVG charts, drawn with plotters.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue};
use plotters::prelude::*;

use crate::bars::{speedup, BAR_GROUP, SPEEDUP_BARS};
use crate::keys::{KeyKind, LENGTHS};
use crate::Record;

/// The implementations of the `slot-*` groups, Zaris first.
pub const SLOT_IMPLS: [&str; 6] = [
    "zaris",
    "crc16",
    "redis-protocol",
    "redis-rs",
    "crc-slice16",
    "crc-fast",
];

/// The route-lookup implementations, in chart order.
pub const ROUTE_IMPLS: [&str; 6] = [
    "slot_for_key",
    "zaris-table",
    "btreemap/3",
    "btreemap/100",
    "sorted-ranges/3",
    "sorted-ranges/100",
];

/// Zaris's own benchmarks tracked by the trend chart.
pub const TREND_IDS: [&str; 6] = [
    "slot-ascii/zaris/8",
    "slot-ascii/zaris/64",
    "slot-ascii/zaris/256",
    "slot-ascii/zaris/4096",
    "route/zaris-table",
    "retry/decision",
];

const SIZE: (u32, u32) = (760, 440);
const FONT: &str = "sans-serif";
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x5f, 0xbf),
    RGBColor(0xd6, 0x5a, 0x1f),
    RGBColor(0x2a, 0x9d, 0x4a),
    RGBColor(0x8e, 0x44, 0xad),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xc0, 0x39, 0x2b),
];

/// A chart file written by [`render_all`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    /// The file name inside the output directory.
    pub file: String,
    /// What it shows, for the page's `alt` text and heading.
    pub title: String,
}

/// Renders every chart for `history` (the last record is the latest run)
/// into `out`, returning what was written.
///
/// # Errors
/// An empty history, or a file that cannot be written.
pub fn render_all(history: &[Record], out: &Path) -> Result<Vec<Chart>> {
    let latest = history
        .last()
        .ok_or_else(|| anyhow!("no recorded run to chart"))?;
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut charts = Vec::new();
    // Draws one chart titled `title` into `file`.
    let mut write = |file: String, title: String, draw: &dyn Fn(&str) -> Result<String>| {
        let path: PathBuf = out.join(&file);
        let svg = draw(&title)?;
        fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        charts.push(Chart { file, title });
        Ok::<(), anyhow::Error>(())
    };
    for kind in KeyKind::ALL {
        write(
            format!("slot-{}.svg", kind.name()),
            format!("slot for {} keys: ns per key by key length", kind.name()),
            &|title| slot_chart(latest, kind, title),
        )?;
    }
    write(
        "speedup.svg".into(),
        "speed-up of slot_for_key over each peer (ASCII keys)".into(),
        &|title| speedup_chart(latest, title),
    )?;
    write(
        "route.svg".into(),
        "route lookup: key to owner, ns per key (1024 keys in turn)".into(),
        &|title| route_chart(latest, title),
    )?;
    write(
        "trend.svg".into(),
        "Zaris medians over recorded runs".into(),
        &|title| trend_chart(history, title),
    )?;
    Ok(charts)
}

/// Draws into an SVG string.
fn svg(
    draw: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        draw(root)?;
    }
    Ok(out)
}

/// A chart on an SVG page with coordinates `X` by `Y`.
type Chart2d<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// A titled chart with room for axis labels: what every chart here shares.
fn frame<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: X,
    y: Y,
) -> Result<Chart2d<'a, 'b, X::CoordDescType, Y::CoordDescType>> {
    ChartBuilder::on(root)
        .caption(title, (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)
}

/// A log range that holds every value with some room, never empty.
fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    lo / 1.5..hi * 1.5
}

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e}")
}

fn slot_chart(record: &Record, kind: KeyKind, title: &str) -> Result<String> {
    let group = format!("slot-{}", kind.name());
    let series: Vec<(&str, Vec<(f64, f64)>)> = SLOT_IMPLS
        .iter()
        .map(|&imp| {
            let points = LENGTHS
                .iter()
                .filter_map(|&len| {
                    Some((len as f64, record.median(&format!("{group}/{imp}/{len}"))?))
                })
                .collect();
            (imp, points)
        })
        .collect();
    let series = series
        .into_iter()
        .enumerate()
        .map(|(i, (imp, points))| (imp.to_owned(), points, PALETTE[i % PALETTE.len()]))
        .collect();
    by_length_chart(title, "ns per key", "", series, &[])
}

fn speedup_chart(record: &Record, title: &str) -> Result<String> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = SLOT_IMPLS[1..]
        .iter()
        .map(|&peer| {
            let points = LENGTHS
                .iter()
                .filter_map(|&len| Some((len as f64, speedup(record, BAR_GROUP, peer, len)?)))
                .collect();
            (peer, points)
        })
        .collect();
    let bars: Vec<(f64, f64)> = SPEEDUP_BARS
        .iter()
        .map(|&(len, x)| (len as f64, x))
        .collect();
    let series = series
        .into_iter()
        .enumerate()
        .map(|(i, (peer, points))| {
            (
                format!("vs {peer}"),
                points,
                PALETTE[(i + 1) % PALETTE.len()],
            )
        })
        .collect();
    by_length_chart(title, "times faster than the peer", "x", series, &bars)
}

/// A named line of points, and its colour.
type Series = (String, Vec<(f64, f64)>, RGBColor);

/// A log-log chart against key length: a line per series, and `marks`
/// (the bars to meet) as crosses.
fn by_length_chart(
    title: &str,
    y_desc: &str,
    y_unit: &str,
    series: Vec<Series>,
    marks: &[(f64, f64)],
) -> Result<String> {
    let values = series.iter().flat_map(|(_, p, _)| p).chain(marks);
    let y = log_range(values.map(|&(_, y)| y));
    svg(|root| {
        let mut chart = frame(&root, title, (6f64..5500f64).log_scale(), y.log_scale())?;
        chart
            .configure_mesh()
            .x_desc("key length (bytes)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y}{y_unit}"))
            .draw()
            .map_err(plot_err)?;
        for (name, points, color) in series {
            line_with_points(&mut chart, &name, points, color)?;
        }
        if !marks.is_empty() {
            chart
                .draw_series(
                    marks
                        .iter()
                        .map(|&p| Cross::new(p, 7, BLACK.stroke_width(2))),
                )
                .map_err(plot_err)?
                .label("the bar to meet")
                .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

fn route_chart(record: &Record, title: &str) -> Result<String> {
    let values: Vec<(&str, f64)> = ROUTE_IMPLS
        .iter()
        .map(|&imp| (imp, record.median(&format!("route/{imp}")).unwrap_or(0.0)))
        .collect();
    let top = values.iter().map(|&(_, v)| v).fold(1.0, f64::max) * 1.2;
    let n = values.len() as u32;
    svg(|root| {
        let mut chart = frame(&root, title, (0..n).into_segmented(), 0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("ns per key")
            .x_labels(values.len())
            .x_label_formatter(&|seg| match seg {
                SegmentValue::CenterOf(i) => values
                    .get(*i as usize)
                    .map_or_else(String::new, |v| v.0.to_owned()),
                _ => String::new(),
            })
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &(imp, v))| {
                let i = i as u32;
                let color = if imp.starts_with("zaris") || imp == "slot_for_key" {
                    PALETTE[0]
                } else {
                    PALETTE[4]
                };
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    color.filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            }))
            .map_err(plot_err)?;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &(_, v))| {
                Text::new(
                    format!("{v:.1}"),
                    (SegmentValue::CenterOf(i as u32), v * 1.02 + top * 0.02),
                    (FONT, 14),
                )
            }))
            .map_err(plot_err)?;
        Ok(())
    })
}

fn trend_chart(history: &[Record], title: &str) -> Result<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = TREND_IDS
        .iter()
        .map(|&id| {
            let points = history
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some(((i + 1) as f64, r.median(id)?)))
                .collect();
            (id.to_owned(), points)
        })
        .collect();
    let commits: Vec<&str> = history.iter().map(Record::short_commit).collect();
    trend(title, "median ns", &commits, &series)
}

/// A chart of `series` over recorded runs (x: run number from 1, labelled
/// with `commits`), on a log scale labelled `y_desc`.
///
/// # Errors
/// Plotting failed.
pub fn trend(
    title: &str,
    y_desc: &str,
    commits: &[&str],
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String> {
    let runs = commits.len();
    let y = log_range(series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)));
    // Empty runs to the right keep the legend off the latest points.
    let legend_room = (runs as f64 * 0.4).max(1.0);
    svg(|root| {
        let mut chart = frame(
            &root,
            title,
            0.5f64..runs as f64 + 0.5 + legend_room,
            y.log_scale(),
        )?;
        chart
            .configure_mesh()
            .x_desc("recorded run (commit)")
            .y_desc(y_desc)
            .x_labels((runs + legend_room.ceil() as usize + 1).min(24))
            .x_label_formatter(&|x| {
                // Label whole run numbers only, with their commit.
                let run = x.round();
                let whole = (x - run).abs() < 1e-6 && run >= 1.0;
                let commit = whole.then(|| commits.get(run as usize - 1)).flatten();
                commit.map_or_else(String::new, |c| (*c).to_owned())
            })
            .y_label_formatter(&|y| format!("{y}"))
            .draw()
            .map_err(plot_err)?;
        // A series with no points (a client a scenario does not run) is
        // left out of the legend; the others keep their colours.
        for (i, (id, points)) in series.iter().enumerate() {
            if !points.is_empty() {
                line_with_points(&mut chart, id, points.clone(), PALETTE[i % PALETTE.len()])?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

fn line_with_points<X>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, LogCoord<f64>>>,
    name: &str,
    points: Vec<(f64, f64)>,
    color: RGBColor,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(plot_err)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )
        .map_err(plot_err)?;
    Ok(())
}

fn legend<'a, 'b: 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()
        .map_err(plot_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::record;

    /// A run where Zaris takes `scale` ns per 8 bytes and every peer 4x that.
    fn run(commit: &str, scale: f64) -> Record {
        let mut medians = Vec::new();
        for kind in KeyKind::ALL {
            for len in LENGTHS {
                for (i, imp) in SLOT_IMPLS.iter().enumerate() {
                    let factor = if i == 0 { 1.0 } else { 4.0 + i as f64 };
                    medians.push((
                        format!("slot-{}/{imp}/{len}", kind.name()),
                        scale * factor * len as f64 / 8.0,
                    ));
                }
            }
        }
        for (i, imp) in ROUTE_IMPLS.iter().enumerate() {
            medians.push((format!("route/{imp}"), 3.0 + i as f64));
        }
        medians.push(("retry/decision".into(), 1.5));
        let medians: Vec<(&str, f64)> = medians.iter().map(|(id, ns)| (id.as_str(), *ns)).collect();
        record(commit, &medians)
    }

    #[test]
    fn writes_every_chart_as_a_real_svg() {
        let dir = tempfile::tempdir().unwrap();
        let history = [run("aaaa111", 2.0), run("bbbb222", 1.8)];
        let charts = render_all(&history, dir.path()).unwrap();
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "slot-ascii.svg",
                "slot-tagged.svg",
                "slot-utf8.svg",
                "slot-binary.svg",
                "speedup.svg",
                "route.svg",
                "trend.svg"
            ]
        );
        for chart in &charts {
            let svg = fs::read_to_string(dir.path().join(&chart.file)).unwrap();
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{}",
                chart.file
            );
            assert!(svg.contains(&chart.title), "{} has its caption", chart.file);
            assert!(
                svg.matches("<polyline").count() + svg.matches("<rect").count() > 3,
                "{} has data",
                chart.file
            );
        }
        let slot = fs::read_to_string(dir.path().join("slot-ascii.svg")).unwrap();
        for imp in SLOT_IMPLS {
            assert!(
                slot.contains(&format!(">{imp}<"))
                    || slot.contains(&format!(">\n{imp}"))
                    || slot.contains(imp),
                "legend names {imp}"
            );
        }
        let trend = fs::read_to_string(dir.path().join("trend.svg")).unwrap();
        assert!(
            trend.contains("aaaa111") && trend.contains("bbbb222"),
            "runs are labelled by commit"
        );
        let route = fs::read_to_string(dir.path().join("route.svg")).unwrap();
        assert!(
            route.contains("btreemap/100") && route.contains("8.0"),
            "bars are named and valued"
        );
    }

    #[test]
    fn an_empty_history_is_an_error_not_a_blank_page() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            render_all(&[], dir.path()).unwrap_err().to_string(),
            "no recorded run to chart"
        );
    }

    #[test]
    fn log_ranges_hold_every_value() {
        let r = log_range([2.0, 300.0, f64::NAN, 0.0].into_iter());
        assert!(r.start < 2.0 && r.end > 300.0);
        assert_eq!(log_range(std::iter::empty()), 1.0..10.0);
    }
}
