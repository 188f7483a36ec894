//! The dashboard's drawing and markup primitives, a leaf that every page
//! and chart module uses and that uses none of them: the SVG surface and
//! its dark theme, the palette, text sizes, legends, axis numbers, and
//! HTML escaping.

use std::fmt::Write;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The charts' font family.
pub const FONT: &str = "sans-serif";

/// The lines' colours, in series order.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x5f, 0xbf),
    RGBColor(0xd6, 0x5a, 0x1f),
    RGBColor(0x2a, 0x9d, 0x4a),
    RGBColor(0x8e, 0x44, 0xad),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xc0, 0x39, 0x2b),
];

/// The colour of the `i`th series.
#[must_use]
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Each colour the charts draw with and the one it becomes in dark mode:
/// the page's colour scheme reaches an SVG shown as an `<img>` too, so
/// every chart carries its own dark style (see [`themed`]).
const DARK: [(&str, &str); 10] = [
    ("#FFFFFF", "#161B22"),
    ("#000000", "#E6EDF3"),
    ("#1F5FBF", "#6EA8FE"),
    ("#D65A1F", "#F0883E"),
    ("#2A9D4A", "#56D364"),
    ("#8E44AD", "#D2A8FF"),
    ("#7F7F7F", "#9DA7B3"),
    ("#C0392B", "#FF7B72"),
    ("#0000FF", "#6EA8FE"),
    ("#FF0000", "#FF7B72"),
];

/// `svg` (as plotters writes it) with the class `chart` on its root and a
/// style that recolours it when the reader prefers dark.
#[must_use]
pub fn themed(svg: &str) -> String {
    let Some(rest) = svg.strip_prefix("<svg ") else {
        return svg.to_owned();
    };
    let Some(open_end) = rest.find('>') else {
        return svg.to_owned();
    };
    let mut style = String::from("<style>@media (prefers-color-scheme: dark) {");
    for (light, dark) in DARK {
        let _ = write!(
            style,
            " .chart [fill=\"{light}\"] {{ fill: {dark} }} .chart [stroke=\"{light}\"] {{ stroke: {dark} }}"
        );
    }
    style.push_str(" }</style>");
    format!(
        "<svg class=\"chart\" {}>\n{style}{}",
        &rest[..open_end],
        &rest[open_end + 1..]
    )
}

/// The size to ask plotters for so that text shows `shown` pixels tall
/// (its SVG backend writes sizes divided by 1.24).
#[must_use]
pub fn px(shown: f64) -> f64 {
    shown * 1.24
}

/// About how wide `text` is at `shown` pixels in a sans-serif face (a
/// little wide, so that what is laid out with it does not collide).
#[must_use]
pub fn text_width(text: &str, shown: f64) -> f64 {
    text.chars().count() as f64 * shown * 0.62
}

/// A drawing area on an SVG page.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Draws into a themed SVG string of `size`.
///
/// # Errors
/// What `draw` returns.
pub fn svg(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> Result<()>) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(themed(&out))
}

/// A log range that holds every value with some room, never empty.
#[must_use]
pub fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    lo / 1.5..hi * 1.5
}

/// A plotters error as ours.
pub fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e}")
}

/// The labels' size on the charts, in pixels as shown.
pub const LABEL_PX: f64 = 13.0;

/// One entry of a legend: a line sample in `color` (dashed for a bar to
/// meet) and its name.
pub struct Key {
    /// What the line is.
    pub name: String,
    /// Its colour.
    pub color: RGBColor,
    /// Drawn dashed (a bar to meet) rather than solid.
    pub dashed: bool,
}

/// Where each legend entry goes in rows `width` wide from `left`:
/// `(x, row)` per key.
fn legend_layout(keys: &[Key], left: i32, width: i32) -> Vec<(i32, usize)> {
    let (mut x, mut row) = (left, 0);
    keys.iter()
        .map(|key| {
            let w = 30 + text_width(&key.name, LABEL_PX).ceil() as i32 + 22;
            if x > left && x + w > left + width {
                (x, row) = (left, row + 1);
            }
            let at = (x, row);
            x += w;
            at
        })
        .collect()
}

/// How tall the legend of `keys` is in `width` pixels.
#[must_use]
pub fn legend_height(keys: &[Key], width: i32) -> u32 {
    let rows = legend_layout(keys, 0, width)
        .last()
        .map_or(1, |&(_, row)| row + 1);
    8 + 20 * rows as u32
}

/// The legend, under a chart rather than over its points: rows of line
/// samples and names, left-aligned at `left`.
///
/// # Errors
/// Plotting failed.
pub fn legend(area: &Area<'_>, keys: &[Key], left: i32) -> Result<()> {
    let width = area.dim_in_pixel().0 as i32 - left - 16;
    for (key, (x, row)) in keys.iter().zip(legend_layout(keys, left, width)) {
        let y = 10 + 20 * row as i32;
        let style = key.color.stroke_width(3);
        if key.dashed {
            for dash in [0, 9, 18] {
                area.draw(&PathElement::new(
                    vec![(x + dash, y), (x + dash + 5, y)],
                    style,
                ))
                .map_err(plot_err)?;
            }
        } else {
            area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], style))
                .map_err(plot_err)?;
        }
        area.draw(&Text::new(
            key.name.clone(),
            (x + 30, y),
            (FONT, px(LABEL_PX))
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(plot_err)?;
    }
    Ok(())
}

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

/// A chart's SVG ready to sit inline in the page: an image with a name.
#[must_use]
pub fn inline(svg: &str, label: &str) -> String {
    let svg = svg.replacen(
        "<svg ",
        &format!("<svg role=\"img\" aria-label=\"{}\" ", escape(label)),
        1,
    );
    lighter(&svg)
}

/// `svg` as drawn, without what changes nothing on screen: the default
/// `opacity="1"`, and font sizes past a tenth of a pixel. (A page inlines
/// dozens of charts: these are a tenth of its bytes.)
fn lighter(svg: &str) -> String {
    let svg = svg.replace(" opacity=\"1\"", "");
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg.as_str();
    const SIZE: &str = "font-size=\"";
    while let Some(at) = rest.find(SIZE) {
        let (before, after) = rest.split_at(at + SIZE.len());
        out.push_str(before);
        let end = after.find('"').unwrap_or(after.len());
        let value = &after[..end];
        match value.parse::<f64>() {
            Ok(v) => {
                let rounded = format!("{v:.1}");
                out.push_str(rounded.strip_suffix(".0").unwrap_or(&rounded));
            }
            Err(_) => out.push_str(value),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A value as an axis or a tooltip shows it: 3 significant digits, `k` and
/// `M` for thousands and millions.
#[must_use]
pub fn compact(v: f64) -> String {
    let (v, unit) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = match v.abs() {
        a if a >= 100.0 || a == 0.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        a if a >= 0.1 => 3,
        _ => 4,
    };
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inlined_charts_lose_only_what_draws_nothing() {
        let svg = r##"<svg width="10"><text font-size="12.096774193548388" opacity="1" fill="#000000">a</text><text font-size="13" opacity="0.5">b</text></svg>"##;
        assert_eq!(
            inline(svg, "a <chart>"),
            r##"<svg role="img" aria-label="a &lt;chart&gt;" width="10"><text font-size="12.1" fill="#000000">a</text><text font-size="13" opacity="0.5">b</text></svg>"##
        );
    }

    #[test]
    fn log_ranges_hold_every_value() {
        let r = log_range([2.0, 300.0, f64::NAN, 0.0].into_iter());
        assert!(r.start < 2.0 && r.end > 300.0);
        assert_eq!(log_range(std::iter::empty()), 1.0..10.0);
    }
}
