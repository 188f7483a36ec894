//! Charts over recorded runs, one point per commit: the dashboard's trend
//! and the client page's small multiples.
//!
//! The axis shows the last [`RUNS_SHOWN`] runs, each labelled with its
//! short commit where the label fits beside its neighbours (always the
//! latest; every second or third when the plot is narrow), and a hover
//! band over each run whose tooltip gives the commit, the date and every
//! line's value there. The legend sits under the plot, where it covers no
//! point.

use std::fmt::Write;

use anyhow::Result;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::svg::{
    color, compact, escape, legend, legend_height, log_range, plot_err, px, svg, text_width, Area,
    Key, FONT,
};

/// How many of the latest runs a chart over runs shows.
pub const RUNS_SHOWN: usize = 10;

/// One recorded run on the axis.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    /// Its commit (shortened to 7 characters on the axis).
    pub commit: &'a str,
    /// When it ran, RFC 3339.
    pub date: &'a str,
}

/// One line: a name, and a value (or none) for each run, in run order.
#[derive(Clone, Debug)]
pub struct Line {
    /// The legend's name for it.
    pub name: String,
    /// `values[i]` belongs to `runs[i]`.
    pub values: Vec<Option<f64>>,
}

/// One panel of [`panels`]: a metric's lines.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Its caption and y-axis description.
    pub title: String,
    /// Its lines (the same names, in the same order, in every panel).
    pub lines: Vec<Line>,
}

/// Size of one label, in pixels as shown.
const LABEL_PX: f64 = 12.5;

/// `lines` over the last runs of `runs`, on a log scale described by
/// `y_desc`, 760 x 440.
///
/// # Errors
/// Plotting failed.
pub fn trend(title: &str, y_desc: &str, runs: &[Run<'_>], lines: &[Line]) -> Result<String> {
    let keys = keys(lines);
    let legend_h = legend_height(&keys, 760 - 80);
    let mut hover = String::new();
    let svg = svg((760, 440), |root| {
        let (plot, legend_area) = root.split_vertically(440 - legend_h);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, (FONT, px(17.0)))
            .margin(12)
            .margin_right(34)
            .x_label_area_size(26)
            .y_label_area_size(64)
            .build_cartesian_2d(axis_range(runs), values_range(runs, lines).log_scale())
            .map_err(plot_err)?;
        hover = draw_panel(&mut chart, &plot, y_desc, runs, lines)?;
        legend(&legend_area, &keys, 64)
    })?;
    Ok(with_hover(svg, &hover))
}

/// Small multiples: one panel per metric in `panels`, two to a row, over
/// the last runs of `runs`, with one legend under them all; 760 wide.
///
/// # Errors
/// Plotting failed.
pub fn panels(title: &str, runs: &[Run<'_>], panels: &[Panel]) -> Result<String> {
    const PANEL_H: u32 = 230;
    const CAPTION_H: u32 = 34;
    let keys: Vec<Key> = panels
        .iter()
        .map(|p| keys(&p.lines))
        .max_by_key(Vec::len)
        .unwrap_or_default();
    let legend_h = legend_height(&keys, 760 - 40);
    let rows = panels.len().div_ceil(2) as u32;
    let height = CAPTION_H + rows * PANEL_H + legend_h;
    let mut hover = String::new();
    let svg = svg((760, height), |root| {
        root.draw(&Text::new(
            title.to_owned(),
            (380, 10),
            (FONT, px(17.0))
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(plot_err)?;
        let (_, rest) = root.split_vertically(CAPTION_H);
        let (grid, legend_area) = rest.split_vertically(rows * PANEL_H);
        let cells = grid.split_evenly((rows as usize, 2));
        for (cell, panel) in cells.iter().zip(panels) {
            let mut chart = ChartBuilder::on(cell)
                .caption(&panel.title, (FONT, px(14.0)))
                .margin(8)
                .margin_right(34)
                .x_label_area_size(24)
                .y_label_area_size(52)
                .build_cartesian_2d(axis_range(runs), zero_range(runs, &panel.lines))
                .map_err(plot_err)?;
            hover.push_str(&draw_panel(&mut chart, cell, "", runs, &panel.lines)?);
        }
        legend(&legend_area, &keys, 20)
    })?;
    Ok(with_hover(svg, &hover))
}

/// The runs shown: the last [`RUNS_SHOWN`].
fn shown<'r, 'a>(runs: &'r [Run<'a>]) -> (usize, &'r [Run<'a>]) {
    let from = runs.len().saturating_sub(RUNS_SHOWN);
    (from, &runs[from..])
}

/// The x range: one slot per run shown, centred on 0, 1, ...
fn axis_range(runs: &[Run<'_>]) -> std::ops::Range<f64> {
    let (_, shown) = shown(runs);
    -0.5..shown.len().max(1) as f64 - 0.5
}

/// The values of `lines` on the runs shown.
fn shown_values<'l>(runs: &[Run<'_>], lines: &'l [Line]) -> impl Iterator<Item = f64> + 'l {
    let (from, _) = shown(runs);
    lines
        .iter()
        .flat_map(move |l| l.values.iter().skip(from).flatten().copied())
}

/// A log range over the values shown (for lines of different magnitudes).
fn values_range(runs: &[Run<'_>], lines: &[Line]) -> std::ops::Range<f64> {
    log_range(shown_values(runs, lines))
}

/// A linear range from zero over the values shown (a panel compares
/// clients on one count: their distance from zero is the story).
fn zero_range(runs: &[Run<'_>], lines: &[Line]) -> std::ops::Range<f64> {
    let top = shown_values(runs, lines)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    0.0..if top > 0.0 { top * 1.15 } else { 1.0 }
}

type RunsChart<'a, 'b, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>;

/// The mesh, the lines, and the commit labels of one panel; returns its
/// hover bands (SVG elements in the page's coordinates).
fn draw_panel<Y: Ranged<ValueType = f64> + ValueFormatter<f64>>(
    chart: &mut RunsChart<'_, '_, Y>,
    area: &Area<'_>,
    y_desc: &str,
    runs: &[Run<'_>],
    lines: &[Line],
) -> Result<String> {
    let (from, shown) = shown(runs);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .max_light_lines(0)
        .y_labels(5)
        .y_desc(y_desc)
        .label_style((FONT, px(LABEL_PX)))
        .axis_desc_style((FONT, px(LABEL_PX)))
        .y_label_formatter(&|y| compact(*y))
        .draw()
        .map_err(plot_err)?;
    for (i, line) in lines.iter().enumerate() {
        let points: Vec<(f64, f64)> = line
            .values
            .iter()
            .skip(from)
            .enumerate()
            .filter_map(|(x, v)| Some((x as f64, (*v)?)))
            .filter(|&(_, y)| y > 0.0)
            .collect();
        if points.is_empty() {
            continue;
        }
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(plot_err)?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(plot_err)?;
    }
    // The commits under the plot: as many as fit, the latest always.
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let step = f64::from(xs.end - xs.start) / shown.len().max(1) as f64;
    let label = |run: &Run<'_>| run.commit.chars().take(7).collect::<String>();
    let widest = shown
        .iter()
        .map(|r| text_width(&label(r), LABEL_PX))
        .fold(0.0, f64::max);
    let stride = ((widest + 8.0) / step).ceil().max(1.0) as usize;
    let base = area.get_base_pixel();
    let mut hover = String::new();
    for (i, run) in shown.iter().enumerate() {
        let (x, _) = chart.backend_coord(&(i as f64, 1.0));
        if (shown.len() - 1 - i) % stride == 0 {
            area.draw(&Text::new(
                label(run),
                (x - base.0, ys.end - base.1 + 5),
                (FONT, px(LABEL_PX))
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(plot_err)?;
        }
        let mut tip = format!("{} · {}", escape(run.commit), escape(run.date));
        for line in lines {
            if let Some(Some(v)) = line.values.get(from + i) {
                let _ = write!(tip, "\n{}: {}", escape(&line.name), compact(*v));
            }
        }
        let _ = write!(
            hover,
            "<rect class=\"run\" x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"{}\" fill=\"transparent\"><title>{tip}</title></rect>",
            f64::from(x) - step / 2.0,
            ys.start,
            step,
            ys.end - ys.start + 22
        );
    }
    Ok(hover)
}

/// The legend's entries for `lines`: those with a value, in their colours.
fn keys(lines: &[Line]) -> Vec<Key> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.values.iter().any(Option::is_some))
        .map(|(i, l)| Key {
            name: l.name.clone(),
            color: color(i),
            dashed: false,
        })
        .collect()
}

/// `svg` with the hover bands added last, on top of everything.
fn with_hover(svg: String, hover: &str) -> String {
    match svg.rfind("</svg>") {
        Some(end) => format!(
            "{}<g class=\"runs\">{hover}</g>\n{}",
            &svg[..end],
            &svg[end..]
        ),
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                (
                    format!("c{i:06}abcdef"),
                    format!("2026-12-{:02}T10:00:00Z", i % 28 + 1),
                )
            })
            .collect()
    }

    fn as_runs(r: &[(String, String)]) -> Vec<Run<'_>> {
        r.iter().map(|(c, d)| Run { commit: c, date: d }).collect()
    }

    #[test]
    fn the_axis_shows_the_last_runs_each_with_its_date_on_hover() {
        let owned = runs(25);
        let runs = as_runs(&owned);
        let lines = [Line {
            name: "zaris".into(),
            values: (0..25).map(|i| Some(10.0 + f64::from(i))).collect(),
        }];
        let svg = trend("t", "ns", &runs, &lines).unwrap();
        // Runs 15 to 24, labelled by their 7-character commits.
        assert!(!svg.contains(">\nc000014\n<") && !svg.contains(">c000014<"));
        assert!(svg.contains("c000024"), "the latest is labelled");
        assert_eq!(svg.matches("<rect class=\"run\"").count(), RUNS_SHOWN);
        assert!(svg.contains("<title>c000024abcdef · 2026-12-25T10:00:00Z\nzaris: 34</title>"));
        assert!(
            !svg.contains("c000014abcdef"),
            "older runs are off the axis"
        );
    }

    #[test]
    fn narrow_panels_label_every_other_run_and_always_the_latest() {
        let owned = runs(10);
        let runs = as_runs(&owned);
        let line = |name: &str, k: f64| Line {
            name: name.into(),
            values: (0..10).map(|i| Some(k * (1.0 + f64::from(i)))).collect(),
        };
        let panel = |title: &str| Panel {
            title: title.into(),
            lines: vec![line("zaris", 1.0), line("fred", 2.0)],
        };
        let svg = panels("scenario", &runs, &[panel("ops/s"), panel("CPU")]).unwrap();
        let labelled = (0..10)
            .filter(|i| svg.contains(&format!("\nc{i:06}\n")))
            .collect::<Vec<_>>();
        assert!(labelled.contains(&9), "{labelled:?}");
        assert!(labelled.len() < 10 && labelled.len() >= 3, "{labelled:?}");
        assert_eq!(
            svg.matches("<rect class=\"run\"").count(),
            20,
            "a band per run per panel"
        );
    }

    #[test]
    fn values_read_compactly() {
        let cases = [
            (123_456.0, "123k"),
            (2_500_000.0, "2.5M"),
            (22.7, "22.7"),
            (5.06, "5.06"),
            (0.0123, "0.0123"),
            (1000.0, "1000"),
            (0.0, "0"),
        ];
        for (v, want) in cases {
            assert_eq!(compact(v), want, "{v}");
        }
    }
}
