//! The latest run against the one before: every benchmark's change, with
//! regressions marked: criterion medians over [`REGRESSION_THRESHOLD`], and
//! the interleaved per-engine figures (steadier) over
//! [`INTERLEAVED_THRESHOLD`]. A report, not a gate: shared machines are
//! noisy, and a person reads it.
//!
//! The interleaved figures are compared at one host speed: the latest
//! run's figures are scaled by how much slower the host ran, so a host
//! that ran slower (a shared machine, a lower turbo) is not read as slower
//! code. How much slower is read off the peers ([`tiers::PEERS`]), pinned
//! crates whose code is the same in both runs: the median of their
//! figures' ratios. Runs without enough peers in common fall back to the
//! clock ([`CLOCK`], a chain of dependent multiplies), which measured 3%
//! off the peers between two recorded runs: a multiply chain is not what a
//! table walk or a fold waits on.

use std::fmt::Write;

use crate::interleave::percentile;
use crate::{tiers, Record};

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

/// Peers in common needed to read the host's speed off them.
pub const MIN_PEER_FIGURES: usize = 8;

/// How much slower the host ran in the latest run than in the previous
/// one, and what says so.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostRatio {
    /// The median `latest / previous` over this many peer figures.
    Peers(f64, usize),
    /// [`clock_ratio`], where too few peer figures are in both runs.
    Clock(f64),
}

impl HostRatio {
    /// The factor itself.
    #[must_use]
    pub fn ratio(self) -> f64 {
        match self {
            Self::Peers(r, _) | Self::Clock(r) => r,
        }
    }
}

/// Baselines that are not peers of the CRC engines: the Redis client
/// measured in the `slot-*` groups (for UTF-16 keys after encoding them),
/// and the std maps the route table is measured against.
const OTHER_BASELINES: [&str; 4] = ["redis-rs", "encode+redis-rs", "btreemap", "sorted-ranges"];

/// Whether an id is a peer's or a baseline's (`<group>/<peer>/...`): code
/// that is not ours, the same in both runs.
fn is_peer(id: &str) -> bool {
    id.split('/').nth(1).is_some_and(|candidate| {
        tiers::PEERS.contains(&candidate) || OTHER_BASELINES.contains(&candidate)
    })
}

/// How much slower the host ran, from the peers when enough of their
/// figures are in both runs, else from the clock.
#[must_use]
pub fn host_ratio(previous: &Record, latest: &Record) -> Option<HostRatio> {
    let mut ratios: Vec<f64> = latest
        .interleaved_ns
        .iter()
        .filter(|(id, _)| is_peer(id))
        .filter_map(|(id, &after)| {
            let before = *previous.interleaved_ns.get(id)?;
            (before > 0.0 && after > 0.0).then(|| after / before)
        })
        .collect();
    if ratios.len() < MIN_PEER_FIGURES {
        return clock_ratio(previous, latest).map(HostRatio::Clock);
    }
    ratios.sort_by(f64::total_cmp);
    Some(HostRatio::Peers(percentile(&ratios, 0.5), ratios.len()))
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
        threshold: if is_peer(id) {
            f64::INFINITY
        } else {
            REGRESSION_THRESHOLD
        },
    });
    let mut interleaved: Vec<&String> = previous
        .interleaved_ns
        .keys()
        .chain(latest.interleaved_ns.keys())
        .collect();
    interleaved.sort();
    interleaved.dedup();
    // The latest figures at the previous run's host speed. The clock and
    // the peers are the machine, not our code: kept as measured, never a
    // regression.
    let host = host_ratio(previous, latest).map_or(1.0, HostRatio::ratio);
    let interleaved = interleaved.into_iter().map(move |id| {
        let (scale, threshold) = if id == CLOCK || is_peer(id) {
            (1.0, f64::INFINITY)
        } else {
            (host, INTERLEAVED_THRESHOLD)
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
    match host_ratio(previous, latest) {
        Some(HostRatio::Peers(r, n)) => {
            let _ = writeln!(
                out,
                "interleaved figures at the earlier run's host speed: its peers ran {:+.1}% (median of {n}), scaled by 1/{r:.3}{}",
                (r - 1.0) * 100.0,
                clock_ratio(previous, latest).map_or_else(String::new, |c| format!(
                    "; {CLOCK} ran {:+.1}%",
                    (c - 1.0) * 100.0
                ))
            );
        }
        Some(HostRatio::Clock(r)) => {
            let _ = writeln!(
                out,
                "interleaved figures at the earlier run's clock: the latest ran {:+.1}% ({CLOCK}), scaled by 1/{r:.3}",
                (r - 1.0) * 100.0
            );
        }
        None => {}
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

    /// Two runs with these interleaved figures: `(id, before, after)`.
    fn interleaved_runs<S: AsRef<str>>(figures: &[(S, f64, f64)]) -> (Record, Record) {
        let mut before = record("aaa", &[]);
        let mut after = record("bbb", &[]);
        for (id, was, is) in figures {
            before.interleaved_ns.insert(id.as_ref().into(), *was);
            after.interleaved_ns.insert(id.as_ref().into(), *is);
        }
        (before, after)
    }

    /// The ids marked as regressions, and each id's scaled latest figure.
    fn regressions(before: &Record, after: &Record) -> (Vec<String>, Vec<(String, f64)>) {
        let changes = compare(before, after);
        let marked = changes
            .iter()
            .filter(|c| c.is_regression())
            .map(|c| c.id.clone())
            .collect();
        let scaled = changes
            .into_iter()
            .filter_map(|c| Some((c.id, c.after?)))
            .collect();
        (marked, scaled)
    }

    #[test]
    fn interleaved_figures_are_held_to_five_percent() {
        let (before, after) = interleaved_runs(&[("a", 10.0, 10.4), ("b", 10.0, 10.6)]);
        assert_eq!(regressions(&before, &after).0, ["interleaved b"]);
    }

    #[test]
    fn interleaved_figures_are_compared_at_one_clock() {
        // The host ran 10% slower: the code that kept its cycles did not
        // regress; the code that took 10% more cycles did.
        let (before, after) = interleaved_runs(&[
            (CLOCK, 60.0, 66.0),
            ("kept", 10.0, 11.0),
            ("worse", 10.0, 12.1),
        ]);
        assert_eq!(clock_ratio(&before, &after), Some(1.1));
        let (marked, scaled) = regressions(&before, &after);
        assert_eq!(marked, ["interleaved worse"], "the clock is the machine");
        let kept = scaled
            .iter()
            .find(|(id, _)| id == "interleaved kept")
            .unwrap();
        assert!((kept.1 - 10.0).abs() < 1e-9);
        assert!(report(&before, &after).contains("the latest ran +10.0% (clock/imul-64)"));
    }

    #[test]
    fn the_host_speed_is_read_off_the_peers() {
        // The peers ran 10% slower (one of them 30%: the median ignores
        // it); the clock says 20%, which would hide a real 17% slowdown.
        let mut figures = vec![(CLOCK.to_owned(), 60.0, 72.0)];
        for (i, len) in [8, 16, 32, 64, 256, 1024, 4096, 8192]
            .into_iter()
            .enumerate()
        {
            let peer = tiers::id("ascii", tiers::PEERS[i % 4], len);
            figures.push((peer, 10.0, if i == 0 { 13.0 } else { 11.0 }));
        }
        figures.push((tiers::id("ascii", "zaris@kept", 8), 10.0, 11.0));
        figures.push((tiers::id("ascii", "zaris@worse", 8), 10.0, 11.7));
        let (before, after) = interleaved_runs(&figures);
        assert_eq!(host_ratio(&before, &after), Some(HostRatio::Peers(1.1, 8)));
        let (marked, scaled) = regressions(&before, &after);
        assert_eq!(
            marked,
            ["interleaved tiers-ascii/zaris@worse/8"],
            "a peer is the machine, however slow it ran"
        );
        let kept = scaled
            .iter()
            .find(|(id, _)| id == "interleaved tiers-ascii/zaris@kept/8")
            .unwrap();
        assert!((kept.1 - 10.0).abs() < 1e-9);
        let text = report(&before, &after);
        assert!(
            text.contains(
                "its peers ran +10.0% (median of 8), scaled by 1/1.100; clock/imul-64 ran +20.0%"
            ),
            "{text}"
        );

        // Criterion medians: a baseline's slowdown is the machine too.
        let ids = ["slot-ascii/redis-rs/8", "slot-ascii/zaris/8"];
        let before = record("aaa", &ids.map(|id| (id, 10.0)));
        let after = record("bbb", &ids.map(|id| (id, 12.0)));
        assert_eq!(regressions(&before, &after).0, ["slot-ascii/zaris/8"]);
    }

    #[test]
    fn too_few_peers_leave_the_host_speed_to_the_clock() {
        let mut figures = vec![(CLOCK.to_owned(), 60.0, 66.0)];
        for len in [8, 16, 32, 64, 256, 1024, 4096] {
            figures.push((tiers::id("ascii", "crc-fast", len), 10.0, 12.0));
        }
        let (before, after) = interleaved_runs(&figures);
        assert_eq!(host_ratio(&before, &after), Some(HostRatio::Clock(1.1)));
        assert!(report(&before, &after).contains("the latest ran +10.0% (clock/imul-64)"));
    }
}
