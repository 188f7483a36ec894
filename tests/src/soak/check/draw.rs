//! The timeline, drawn.

use std::path::Path;

use plotters::prelude::*;

use super::*;
use crate::soak::nemesis::EventKind;

/// Event colors (Okabe-Ito and Tol's muted: told apart by most eyes).
const PALETTE: [RGBColor; 15] = [
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(240, 228, 66),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(51, 34, 136),
    RGBColor(136, 204, 238),
    RGBColor(68, 170, 153),
    RGBColor(17, 119, 51),
    RGBColor(153, 153, 51),
    RGBColor(204, 102, 119),
    RGBColor(136, 34, 85),
    RGBColor(170, 68, 153),
];

/// An event kind's name as the report spells it (`kill-master`).
fn kind_name(kind: EventKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// The timeline: operations a second (succeeded, failed) and refreshes a
/// second, each event shaded and named.
pub fn draw(report: &Report, path: &Path) -> anyhow::Result<()> {
    // Sizes as plotters takes them: its SVGs show text at size / 1.24, and
    // the page shows this 1100-pixel chart about 830 wide.
    const LABELS: (&str, u32) = ("sans-serif", 19);
    let root = SVGBackend::new(path, (1100, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, rest) = root.split_vertically(340);
    let (legend, bottom) = rest.split_vertically(84);
    let seconds = report.timeline.len().max(1) as f64;
    let most = report
        .timeline
        .iter()
        .map(|s| s.succeeded.max(s.failed))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let title = format!(
        "soak on {}, seed {}: {} operations, {:.3}% succeeded, {} events",
        report.server,
        report.seed,
        report.all.operations,
        report.all.ratio * 100.0,
        report.events.len()
    );
    let mut ops = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 24))
        .margin(10)
        .margin_right(30)
        .x_label_area_size(28)
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..seconds, 0.0..most * 1.15)?;
    ops.configure_mesh()
        .y_desc("operations / s")
        .label_style(LABELS)
        .axis_desc_style(LABELS)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .disable_x_mesh()
        .draw()?;
    // One color per kind of event; names on the spans only when they fit.
    let color_of = |kind: EventKind| {
        let i = EventKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let named = report.events.len() <= 30;
    for (i, e) in report.events.iter().enumerate() {
        let (a, b) = (
            e.start_ms / 1000.0,
            (e.end_ms / 1000.0).max(e.start_ms / 1000.0 + 0.2),
        );
        let color = color_of(e.kind).mix(0.35);
        ops.draw_series(std::iter::once(Rectangle::new(
            [(a, 0.0), (b, most * 1.15)],
            color.filled(),
        )))?;
        if named {
            let label = kind_name(e.kind);
            let y = most * (1.1 - 0.08 * (i % 4) as f64);
            ops.draw_series(std::iter::once(Text::new(label, (a, y), LABELS)))?;
        }
    }
    // The kinds' colors, in a strip of their own.
    // About 9.5 pixels a character at this size, and room after each.
    let (mut x, mut y) = (88, 6);
    for kind in EventKind::ALL {
        if !report.events.iter().any(|e| e.kind == kind) {
            continue;
        }
        let name = kind_name(kind);
        let width = 44 + 10 * i32::try_from(name.len()).unwrap_or(10);
        if x + width > 1090 {
            (x, y) = (88, y + 26);
        }
        legend.draw(&Rectangle::new(
            [(x, y + 2), (x + 14, y + 16)],
            color_of(kind).filled(),
        ))?;
        legend.draw(&Text::new(name, (x + 20, y), LABELS))?;
        x += width;
    }
    let line = |f: fn(&Second) -> u64| -> Vec<(f64, f64)> {
        report
            .timeline
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64 + 0.5, f(s) as f64))
            .collect()
    };
    ops.draw_series(LineSeries::new(line(|s| s.succeeded), BLUE.stroke_width(2)))?
        .label("succeeded")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE.stroke_width(2)));
    ops.draw_series(LineSeries::new(line(|s| s.failed), RED.stroke_width(2)))?
        .label("failed")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
    ops.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font(LABELS)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let most_refreshes = report
        .timeline
        .iter()
        .map(|s| s.refreshes)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut refreshes = ChartBuilder::on(&bottom)
        .margin(10)
        .margin_right(30)
        .x_label_area_size(50)
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..seconds, 0.0..most_refreshes * 1.2)?;
    refreshes
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("refreshes / s")
        .label_style(LABELS)
        .axis_desc_style(LABELS)
        .y_labels(4)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .disable_x_mesh()
        .draw()?;
    refreshes.draw_series(report.timeline.iter().enumerate().map(|(i, s)| {
        Rectangle::new(
            [(i as f64 + 0.1, 0.0), (i as f64 + 0.9, s.refreshes as f64)],
            GREEN.mix(0.7).filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}
