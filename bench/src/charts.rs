//! The dashboard's SVG charts, drawn with plotters.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::bars::{speedup, BAR_GROUP, BAR_PEERS, ROUTE_OVERHEAD_NS, SPEEDUP_BARS};
use crate::keys::{KeyKind, LENGTHS};
use crate::svg::{
    color, compact, legend, legend_height, log_range, plot_err, px, svg, Area, Key, FONT, LABEL_PX,
};
use crate::tiers::{LONG_FROM, LONG_SPEEDUP, TAGGED_EXTRA_NS};
use crate::trend::{trend, Line, Run};
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

/// A chart file written by [`render_all`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    /// The file name inside the output directory.
    pub file: String,
    /// What it shows, for the page's `alt` text and heading.
    pub title: String,
    /// The SVG itself where the page draws it inline (a chart over runs,
    /// whose hover bands need it there); `None`: an `<img>` of the file.
    pub inline: Option<String>,
    /// Its size in pixels, width by height.
    pub size: (u32, u32),
}

/// The size an SVG's root declares.
fn declared_size(svg: &str) -> (u32, u32) {
    let attr = |name: &str| {
        let at = svg.find(&format!(" {name}=\""))? + name.len() + 3;
        svg[at..].split('"').next()?.parse().ok()
    };
    (
        attr("width").unwrap_or(SIZE.0),
        attr("height").unwrap_or(SIZE.1),
    )
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
        fs::write(&path, &svg).with_context(|| format!("writing {}", path.display()))?;
        let size = declared_size(&svg);
        let inline = svg.contains("<g class=\"runs\">").then_some(svg);
        charts.push(Chart {
            file,
            title,
            inline,
            size,
        });
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

/// A chart on an SVG page with coordinates `X` by `Y`.
type Chart2d<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// A titled chart with room for axis labels: what every chart here shares.
fn frame<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a Area<'b>,
    title: &str,
    x: X,
    y: Y,
) -> Result<Chart2d<'a, 'b, X::CoordDescType, Y::CoordDescType>> {
    ChartBuilder::on(root)
        .caption(title, (FONT, px(17.0)))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)
}

fn slot_chart(record: &Record, kind: KeyKind, title: &str) -> Result<String> {
    let group = format!("slot-{}", kind.name());
    let series = SLOT_IMPLS
        .iter()
        .enumerate()
        .map(|(i, &imp)| {
            let points = LENGTHS
                .iter()
                .filter_map(|&len| {
                    Some((len as f64, record.median(&format!("{group}/{imp}/{len}"))?))
                })
                .collect();
            (imp.to_owned(), points, color(i))
        })
        .collect();
    // Hash-tagged keys carry a bar of their own: at most 1 ns over an
    // untagged key of the same length.
    let bars = if kind == KeyKind::Tagged {
        let ceiling = LENGTHS
            .iter()
            .filter_map(|&len| {
                let untagged = record.median(&format!("slot-ascii/zaris/{len}"))?;
                Some((len as f64, untagged + TAGGED_EXTRA_NS))
            })
            .collect();
        vec![Threshold {
            name: format!("bar for zaris: untagged + {TAGGED_EXTRA_NS} ns"),
            points: ceiling,
            color: color(0),
            labels: false,
        }]
    } else {
        Vec::new()
    };
    by_length_chart(title, "ns per key", "", series, &bars)
}

/// A bar drawn on a chart: a dashed line through the values it asks for,
/// in the colour of what it is held against.
struct Threshold {
    /// The legend's words for it, naming whom it holds against.
    name: String,
    /// `(key length, value needed)`.
    points: Vec<(f64, f64)>,
    color: RGBColor,
    /// Write the value needed beside each point.
    labels: bool,
}

fn speedup_chart(record: &Record, title: &str) -> Result<String> {
    let series = SLOT_IMPLS[1..]
        .iter()
        .enumerate()
        .map(|(i, &peer)| {
            let points = LENGTHS
                .iter()
                .filter_map(|&len| Some((len as f64, speedup(record, BAR_GROUP, peer, len)?)))
                .collect();
            (format!("vs {peer}"), points, color(i + 1))
        })
        .collect();
    let short: Vec<f64> = LENGTHS
        .iter()
        .filter(|&&l| l < LONG_FROM)
        .map(|&l| l as f64)
        .collect();
    let long: Vec<f64> = LENGTHS
        .iter()
        .filter(|&&l| l >= LONG_FROM)
        .map(|&l| l as f64)
        .collect();
    let bars = [
        Threshold {
            name: format!("bar vs {}", BAR_PEERS.join(" and ")),
            points: SPEEDUP_BARS
                .iter()
                .map(|&(len, x)| (len as f64, x))
                .collect(),
            color: BLACK,
            labels: true,
        },
        Threshold {
            name: "bar vs crc-slice16 and crc-fast (no slower)".into(),
            points: short.iter().map(|&l| (l, 1.0)).collect(),
            color: color(4),
            labels: false,
        },
        Threshold {
            name: format!("bar vs crc-fast ({LONG_SPEEDUP}x)"),
            points: long.iter().map(|&l| (l, LONG_SPEEDUP)).collect(),
            color: color(5),
            labels: false,
        },
    ];
    by_length_chart(title, "times faster than the peer", "x", series, &bars)
}

/// A named line of points, and its colour.
type Series = (String, Vec<(f64, f64)>, RGBColor);

/// A log-log chart against key length: a line per series, and the bars
/// to meet as dashed lines in the colour of the peer they hold against.
fn by_length_chart(
    title: &str,
    y_desc: &str,
    y_unit: &str,
    series: Vec<Series>,
    bars: &[Threshold],
) -> Result<String> {
    let values = series
        .iter()
        .flat_map(|(_, p, _)| p)
        .chain(bars.iter().flat_map(|b| &b.points));
    let y = log_range(values.map(|&(_, y)| y));
    let keys: Vec<Key> = series
        .iter()
        .map(|(name, _, color)| Key {
            name: name.clone(),
            color: *color,
            dashed: false,
        })
        .chain(bars.iter().map(|bar| Key {
            name: bar.name.clone(),
            color: bar.color,
            dashed: true,
        }))
        .collect();
    let legend_h = legend_height(&keys, SIZE.0 as i32 - 90);
    svg((SIZE.0, SIZE.1 + legend_h), |root| {
        let (plot, legend_area) = root.split_vertically(SIZE.1);
        let mut chart = frame(&plot, title, (6f64..5500f64).log_scale(), y.log_scale())?;
        chart
            .configure_mesh()
            .x_desc("key length (bytes)")
            .y_desc(y_desc)
            .max_light_lines(4)
            .label_style((FONT, px(LABEL_PX)))
            .axis_desc_style((FONT, px(LABEL_PX)))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{}{y_unit}", compact(*y)))
            .draw()
            .map_err(plot_err)?;
        for (_, points, color) in series {
            line_with_points(&mut chart, points, color)?;
        }
        for bar in bars {
            let style = bar.color.stroke_width(2);
            for pair in bar.points.windows(2) {
                chart
                    .draw_series(DashedLineSeries::new(pair.iter().copied(), 6, 4, style))
                    .map_err(plot_err)?;
            }
            chart
                .draw_series(bar.points.iter().map(|&p| Cross::new(p, 6, style)))
                .map_err(plot_err)?;
            if bar.labels {
                // The factor needed, right of its mark and below it, where
                // the lines above it do not run.
                let base = plot.get_base_pixel();
                for &(x, v) in &bar.points {
                    let (px_, py) = chart.backend_coord(&(x, v));
                    plot.draw(&Text::new(
                        format!("≥{v}x"),
                        (px_ - base.0 + 8, py - base.1 + 4),
                        (FONT, px(12.0))
                            .into_font()
                            .color(&BLACK)
                            .pos(Pos::new(HPos::Left, VPos::Top)),
                    ))
                    .map_err(plot_err)?;
                }
            }
        }
        legend(&legend_area, &keys, 70)
    })
}

fn route_chart(record: &Record, title: &str) -> Result<String> {
    let values: Vec<(&str, f64)> = ROUTE_IMPLS
        .iter()
        .map(|&imp| (imp, record.median(&format!("route/{imp}")).unwrap_or(0.0)))
        .collect();
    // The bar: the table's lookup at most ROUTE_OVERHEAD_NS over the slot.
    let bar = values
        .iter()
        .find(|(imp, _)| *imp == "slot_for_key")
        .map(|&(_, slot)| slot + ROUTE_OVERHEAD_NS);
    let top = values
        .iter()
        .map(|&(_, v)| v)
        .chain(bar)
        .fold(1.0, f64::max)
        * 1.2;
    let n = values.len() as u32;
    let keys = [
        Key {
            name: "Zaris".into(),
            color: color(0),
            dashed: false,
        },
        Key {
            name: "a peer's lookup".into(),
            color: color(4),
            dashed: false,
        },
        Key {
            name: format!("bar for zaris-table: slot_for_key + {ROUTE_OVERHEAD_NS} ns"),
            color: BLACK,
            dashed: true,
        },
    ];
    let legend_h = legend_height(&keys, SIZE.0 as i32 - 90);
    svg((SIZE.0, SIZE.1 + legend_h), |root| {
        let (plot, legend_area) = root.split_vertically(SIZE.1);
        let root = &plot;
        let mut chart = frame(root, title, (0..n - 1).into_segmented(), 0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("ns per key")
            .label_style((FONT, px(LABEL_PX)))
            .axis_desc_style((FONT, px(LABEL_PX)))
            .x_labels(values.len())
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|y| compact(*y))
            .draw()
            .map_err(plot_err)?;
        // Each name under its bar, on two lines where it has a `/` (the
        // longest do not fit one bar's width).
        let (_, ys) = chart.plotting_area().get_pixel_range();
        for (i, &(imp, _)) in values.iter().enumerate() {
            let (x, _) = chart.backend_coord(&(SegmentValue::CenterOf(i as u32), 0.0));
            let (first, rest) = imp
                .split_once('/')
                .map_or((imp, None), |(a, b)| (a, Some(b)));
            for (line, text) in std::iter::once(first.to_owned())
                .chain(rest.map(|r| format!("/{r}")))
                .enumerate()
            {
                root.draw(&Text::new(
                    text,
                    (x, ys.end + 6 + 16 * line as i32),
                    (FONT, px(LABEL_PX))
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                ))
                .map_err(plot_err)?;
            }
        }
        chart
            .draw_series(values.iter().enumerate().map(|(i, &(imp, v))| {
                let i = i as u32;
                let zaris = imp.starts_with("zaris") || imp == "slot_for_key";
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    color(if zaris { 0 } else { 4 }).filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            }))
            .map_err(plot_err)?;
        // Each value inside the top of its bar, where no bar line can run
        // through it; above the bar when the bar is too short to hold it.
        let (_, zero) = chart.backend_coord(&(SegmentValue::CenterOf(0), 0.0));
        for (i, &(_, v)) in values.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i as u32), v));
            let (at, anchor, ink) = if zero - y >= 26 {
                (y + 5, VPos::Top, WHITE)
            } else {
                (y - 4, VPos::Bottom, BLACK)
            };
            root.draw(&Text::new(
                format!("{v:.1}"),
                (x, at),
                (FONT, px(LABEL_PX))
                    .into_font()
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, anchor)),
            ))
            .map_err(plot_err)?;
        }
        if let (Some(bar), Some(table)) = (
            bar,
            values.iter().position(|(imp, _)| *imp == "zaris-table"),
        ) {
            let i = table as u32;
            let style = BLACK.stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(
                    [
                        (SegmentValue::Exact(i), bar),
                        (SegmentValue::Exact(i + 1), bar),
                    ],
                    6,
                    4,
                    style,
                ))
                .map_err(plot_err)?;
        }
        legend(&legend_area, &keys, 70)
    })
}

fn trend_chart(history: &[Record], title: &str) -> Result<String> {
    let runs: Vec<Run<'_>> = history
        .iter()
        .map(|r| Run {
            commit: &r.commit,
            date: &r.date,
        })
        .collect();
    let lines: Vec<Line> = TREND_IDS
        .iter()
        .map(|&id| Line {
            name: id.to_owned(),
            values: history.iter().map(|r| r.median(id)).collect(),
        })
        .collect();
    trend(title, "median ns", &runs, &lines)
}

fn line_with_points(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>,
    points: Vec<(f64, f64)>,
    color: RGBColor,
) -> Result<()> {
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(plot_err)?;
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )
        .map_err(plot_err)?;
    Ok(())
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
            route.contains("\nbtreemap\n") && route.contains("\n/100\n") && route.contains("8.0"),
            "bars are named and valued"
        );
        assert!(
            route.contains("bar for zaris-table: slot_for_key + 2 ns"),
            "the route bar is drawn"
        );
        let speedup = fs::read_to_string(dir.path().join("speedup.svg")).unwrap();
        for bar in [
            "bar vs crc16 and redis-protocol",
            "bar vs crc-slice16 and crc-fast (no slower)",
            "bar vs crc-fast (1.5x)",
            "≥20x",
        ] {
            assert!(speedup.contains(bar), "{bar}");
        }
        assert!(fs::read_to_string(dir.path().join("slot-tagged.svg"))
            .unwrap()
            .contains("bar for zaris: untagged + 1 ns"));
        assert!(
            speedup.contains("<svg class=\"chart\" ")
                && speedup.contains("prefers-color-scheme: dark"),
            "every chart carries its dark style"
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
}
