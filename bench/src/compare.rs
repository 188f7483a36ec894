//! The latest run against the one before: every benchmark's change, with
//! regressions marked: criterion medians over [`REGRESSION_THRESHOLD`], and
//! the interleaved per-engine figures (steadier) over
//! [`INTERLEAVED_THRESHOLD`]. A report, not a gate: shared machines are
//! noisy, and a person reads it.
//!
//! The interleaved figures are compared in cycles, not nanoseconds: each
//! run measures its own clock ([`CLOCK`], a chain of dependent multiplies),
//! and the latest run's figures are scaled to the earlier run's clock, so a
//! host that ran slower (a shared machine, a lower turbo) is not read as
//! slower code.

use std::fmt::Write;

use crate::Record;

/// A median more than 10% above the previous record's is a regression.
pub const REGRESSION_THRESHOLD: f64 = 0.10;

/// An interleaved figure more than 5% above the previous record's is one.
pub const INTERLEAVED_THRESHOLD: f64 = 0.05;

/// The interleaved case that measures the clock (64 dependent multiplies).
pub const CLOCK: &str = "clock/imul-64";

/// How much slower the latest run's clock ran than the previous one's
/// (`latest / previous` of [`CLOCK`]), when both runs measured it.
#[must_use]
pub fn clock_ratio(previous: &Record, latest: &Record) -> Option<f64> {
    let before = *previous.interleaved_ns.get(CLOCK)?;
    let after = *latest.interleaved_ns.get(CLOCK)?;
    (before > 0.0 && after > 0.0).then(|| after / before)
}

/// One benchmark in two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The criterion id.
    pub id: String,
    /// Median in the previous run (ns), if it was measured.
    pub before: Option<f64>,
    /// Median in the latest run (ns), if it was measured.
    pub after: Option<f64>,
    /// How much slower counts as a regression (a fraction).
    pub threshold: f64,
}

impl Change {
    /// `after / before - 1`: +0.25 is 25% slower.
    #[must_use]
    pub fn relative(&self) -> Option<f64> {
        match (self.before, self.after) {
            (Some(before), Some(after)) if before > 0.0 => Some(after / before - 1.0),
            _ => None,
        }
    }

    /// Slower by more than [`REGRESSION_THRESHOLD`].
    #[must_use]
    pub fn is_regression(&self) -> bool {
        match (self.before, self.after) {
            (Some(before), Some(after)) => after > before * (1.0 + self.threshold),
            _ => false,
        }
    }
}

/// The latest run and the last one before it on the same CPU model:
/// figures from another machine say nothing about a change (the recorded
/// history holds runs from more than one). `None` when there is no such
/// pair.
#[must_use]
pub fn last_pair_on_one_cpu(history: &[Record]) -> Option<(&Record, &Record)> {
    let (latest, earlier) = history.split_last()?;
    let previous = earlier.iter().rev().find(|r| r.cpu == latest.cpu)?;
    Some((previous, latest))
}

/// Every benchmark of either run, in id order.
#[must_use]
pub fn compare(previous: &Record, latest: &Record) -> Vec<Change> {
    let mut ids: Vec<&String> = previous
        .medians_ns
        .keys()
        .chain(latest.medians_ns.keys())
        .collect();
    ids.sort();
    ids.dedup();
    let medians = ids.into_iter().map(|id| Change {
        id: id.clone(),
        before: previous.median(id),
        after: latest.median(id),
        threshold: REGRESSION_THRESHOLD,
    });
    let mut interleaved: Vec<&String> = previous
        .interleaved_ns
        .keys()
        .chain(latest.interleaved_ns.keys())
        .collect();
    interleaved.sort();
    interleaved.dedup();
    // The latest figures at the previous run's clock. The clock itself is
    // the machine, not the code: kept as measured, never a regression.
    let clock = clock_ratio(previous, latest).unwrap_or(1.0);
    let interleaved = interleaved.into_iter().map(move |id| {
        let (scale, threshold) = if id == CLOCK {
            (1.0, f64::INFINITY)
        } else {
            (clock, INTERLEAVED_THRESHOLD)
        };
        Change {
            id: format!("interleaved {id}"),
            before: previous.interleaved_ns.get(id).copied(),
            after: latest.interleaved_ns.get(id).map(|&ns| ns / scale),
            threshold,
        }
    });
    medians.chain(interleaved).collect()
}

/// The comparison as a table for the terminal, regressions marked.
#[must_use]
pub fn report(previous: &Record, latest: &Record) -> String {
    let changes = compare(previous, latest);
    let width = changes.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = format!(
        "{} ({}) -> {} ({})\n",
        previous.short_commit(),
        previous.date,
        latest.short_commit(),
        latest.date
    );
    if previous.cpu != latest.cpu {
        let _ = writeln!(
            out,
            "note: different CPUs ({} -> {}); changes may be the machine",
            previous.cpu, latest.cpu
        );
    }
    if let Some(clock) = clock_ratio(previous, latest) {
        let _ = writeln!(
            out,
            "interleaved figures at the earlier run's clock: the latest ran {:+.1}% ({CLOCK}), scaled by 1/{clock:.3}",
            (clock - 1.0) * 100.0
        );
    }
    let ns = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for change in &changes {
        let verdict = match change.relative() {
            _ if change.is_regression() => format!(
                "{:+.1}%  REGRESSION",
                change.relative().unwrap_or(0.0) * 100.0
            ),
            Some(r) => format!("{:+.1}%", r * 100.0),
            None if change.before.is_none() => "new".to_owned(),
            None => "gone".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:width$}  {:>10} -> {:>10} ns  {verdict}",
            change.id,
            ns(change.before),
            ns(change.after)
        );
    }
    let regressions = changes.iter().filter(|c| c.is_regression()).count();
    let _ = writeln!(
        out,
        "{regressions} regression(s) (criterion medians over {:.0}%, interleaved figures over {:.0}%) of {} benchmarks",
        REGRESSION_THRESHOLD * 100.0,
        INTERLEAVED_THRESHOLD * 100.0,
        changes.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::record;

    #[test]
    fn compares_runs_of_one_cpu_only() {
        let on = |commit: &str, cpu: &str| {
            let mut r = record(commit, &[("x", 1.0)]);
            r.cpu = cpu.into();
            r
        };
        let history = [on("a", "EPYC"), on("b", "Xeon"), on("c", "EPYC")];
        let (previous, latest) = last_pair_on_one_cpu(&history).unwrap();
        assert_eq!(
            (previous.commit.as_str(), latest.commit.as_str()),
            ("a", "c")
        );
        assert!(
            last_pair_on_one_cpu(&history[..2]).is_none(),
            "b has no peer"
        );
        assert!(last_pair_on_one_cpu(&[]).is_none());
    }

    #[test]
    fn marks_only_slowdowns_over_ten_percent() {
        let before = record(
            "aaa",
            &[
                ("faster", 10.0),
                ("same", 10.0),
                ("edge", 10.0),
                ("slower", 10.0),
                ("gone", 1.0),
            ],
        );
        let after = record(
            "bbb",
            &[
                ("faster", 5.0),
                ("same", 10.5),
                ("edge", 11.0),
                ("slower", 11.5),
                ("new", 2.0),
            ],
        );
        let changes = compare(&before, &after);
        let ids: Vec<&str> = changes.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["edge", "faster", "gone", "new", "same", "slower"]);
        let regressed: Vec<&str> = changes
            .iter()
            .filter(|c| c.is_regression())
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(
            regressed,
            ["slower"],
            "10% exactly is noise, not a regression"
        );
        assert_eq!(changes[1].relative(), Some(-0.5));
        assert_eq!(changes[2].relative(), None);

        let text = report(&before, &after);
        assert!(
            text.contains("slower") && text.contains("+15.0%  REGRESSION"),
            "{text}"
        );
        assert!(text.contains("-50.0%"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("new") && l.ends_with("new")),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("gone") && l.ends_with("gone")),
            "{text}"
        );
        assert!(
            text.ends_with("1 regression(s) (criterion medians over 10%, interleaved figures over 5%) of 6 benchmarks\n"),
            "{text}"
        );
        assert!(!text.contains("different CPUs"));
    }

    #[test]
    fn interleaved_figures_are_held_to_five_percent() {
        let mut before = record("aaa", &[]);
        let mut after = record("bbb", &[]);
        for (id, was, is) in [("a", 10.0, 10.4), ("b", 10.0, 10.6)] {
            before.interleaved_ns.insert(id.into(), was);
            after.interleaved_ns.insert(id.into(), is);
        }
        let regressed: Vec<String> = compare(&before, &after)
            .into_iter()
            .filter(Change::is_regression)
            .map(|c| c.id)
            .collect();
        assert_eq!(regressed, ["interleaved b"]);
    }

    #[test]
    fn interleaved_figures_are_compared_at_one_clock() {
        let mut before = record("aaa", &[]);
        let mut after = record("bbb", &[]);
        // The host ran 10% slower: the code that kept its cycles did not
        // regress; the code that took 10% more cycles did.
        for (id, was, is) in [
            (CLOCK, 60.0, 66.0),
            ("kept", 10.0, 11.0),
            ("worse", 10.0, 12.1),
        ] {
            before.interleaved_ns.insert(id.into(), was);
            after.interleaved_ns.insert(id.into(), is);
        }
        assert_eq!(clock_ratio(&before, &after), Some(1.1));
        let changes = compare(&before, &after);
        let regressed: Vec<&str> = changes
            .iter()
            .filter(|c| c.is_regression())
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(regressed, ["interleaved worse"], "the clock is the machine");
        let kept = changes.iter().find(|c| c.id == "interleaved kept").unwrap();
        assert!((kept.after.unwrap() - 10.0).abs() < 1e-9);
        assert!(report(&before, &after).contains("the latest ran +10.0% (clock/imul-64)"));
    }
}
