//! List appends present, duplicates only where an outcome was unknown.

use std::collections::HashMap;

use super::history::*;
use super::*;
use crate::soak::nemesis::Event;
use crate::soak::workload::{Finals, QUEUE};

/// Lists and the queue: every acknowledged append present once, nothing
/// never appended.
pub(super) fn check_lists(
    seen: &Observed,
    finals: &Finals,
    events: &[Event],
    lossy: &dyn Fn(f64) -> bool,
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let Observed {
        appends, popped, ..
    } = seen;
    for (list, (written, acked)) in appends {
        let present = finals.lists.get(list).cloned().unwrap_or_default();
        let mut seen: HashMap<&str, u64> = HashMap::new();
        for v in &present {
            *seen.entry(v.as_str()).or_default() += 1;
            if !written.contains(v) {
                violations.push(format!("{list} holds {v:?}, never appended"));
            }
        }
        report.duplicated_appends += seen
            .values()
            .filter(|&&n| n > 1)
            .map(|n| n - 1)
            .sum::<u64>();
        for (value, invoked, at) in acked {
            let found = seen.contains_key(value.as_str())
                || (list == QUEUE && popped.contains_key(value.as_str()));
            if !found {
                report
                    .lost_appends
                    .note(&format!("{list} {value}"), lossy(*at));
            }
            let copies = seen.get(value.as_str()).copied().unwrap_or(0);
            if copies > 1 && held_without_losing(events, *invoked, *at) {
                violations.push(format!(
                    "{list} holds {value:?} {copies} times, acknowledged once, sent while a node \
                     held it without losing it ({invoked:.0}-{at:.0} ms): a paused write sent again"
                ));
            }
        }
        if list == QUEUE {
            report.duplicated_appends += popped
                .values()
                .filter(|&&n| n > 1)
                .map(|n| n - 1)
                .sum::<u64>();
            for v in popped.keys() {
                if !written.contains(v) {
                    violations.push(format!("popped {v:?}, never pushed"));
                }
            }
        }
    }
    if report.duplicated_appends > report.unknown_outcomes {
        violations.push(format!(
            "{} values appended twice, but only {} attempts had an unknown outcome",
            report.duplicated_appends, report.unknown_outcomes
        ));
    }
}
