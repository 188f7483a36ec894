//! Campaigns: a seed replays to the same trace however many cores ran it,
//! and every kind of fault the nemesis draws really takes effect.

use std::collections::BTreeMap;

use zaris_sim::{campaign, ours, run, Setup, Summary};
use zaris_tests::soak::EventKind;

#[test]
fn fifty_seeds_replay_to_the_same_traces_on_one_thread_or_two() {
    let on_two: BTreeMap<u64, String> = campaign(50, 1, 2, Vec::new(), |_, _| {})
        .runs
        .into_iter()
        .map(|r| (r.seed, r.trace_sha256))
        .collect();
    let mut operations = Vec::new();
    for seed in 1..=50 {
        let again = run(&Setup::campaign(seed));
        assert_eq!(
            on_two.get(&seed),
            Some(&again.trace_sha256),
            "seed {seed} replayed differently"
        );
        operations.push(again.operations);
    }
    // Every seed runs the soak's workload for real: at least 5,000
    // operations each.
    let fewest = operations.iter().min().copied().unwrap_or(0);
    assert!(fewest >= 5_000, "a seed ran only {fewest} operations");
    // Seeds differ: the traces are not all one.
    let distinct: std::collections::BTreeSet<&String> = on_two.values().collect();
    assert_eq!(distinct.len(), 50);
}

#[test]
fn every_kind_of_fault_drawn_takes_effect() {
    let report = campaign(40, 1_000, 2, Vec::new(), |_, _| {});
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    for kind in EventKind::ALL {
        let drawn = report.events_drawn.get(&kind).copied().unwrap_or(0);
        let took = report.events_by_kind.get(&kind).copied().unwrap_or(0);
        assert!(drawn > 0, "{kind:?} was never drawn in 40 seeds");
        assert!(
            took > 0,
            "{kind:?}: {drawn} drawn, none took effect ({:?})",
            report.effects_by_kind.get(&kind)
        );
    }
    assert!(report.idle_kinds().is_empty());
    // A takeover loses what its replica had not received, as Redis does:
    // the model is not kinder than the servers.
    assert!(
        report
            .effects
            .get("writes lost in a takeover")
            .copied()
            .unwrap_or(0)
            > 0
    );
}

#[test]
fn a_campaign_taken_up_again_sums_to_the_campaign_run_at_once() {
    let mut kept = Vec::new();
    let whole = campaign(12, 500, 2, Vec::new(), |seed, _| {
        kept.push(serde_json::to_string(seed).unwrap());
    });
    // Interrupted after five seeds: their lines are read back, the other
    // seven run again.
    let done: Vec<Summary> = kept[..5]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut ran = Vec::new();
    let resumed = campaign(12, 500, 2, done, |seed, _| ran.push(seed.seed));
    assert_eq!(resumed.resumed, 5);
    assert_eq!(ran.len(), 7);
    let json = |r: &zaris_sim::Report| {
        let mut v = serde_json::to_value(r).unwrap();
        for volatile in ["wall_seconds", "resumed"] {
            v.as_object_mut().unwrap().remove(volatile);
        }
        v
    };
    assert_eq!(json(&resumed), json(&whole));
    assert_eq!(whole.runs.len(), 12);
    // Whatever order the seeds come in, they sum to the same figures.
    let backwards: Vec<Summary> = kept
        .iter()
        .rev()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        json(&campaign(12, 500, 2, backwards, |_, _| {})),
        json(&whole)
    );
    // A runs file holding a seed twice, or seeds of another range, counts
    // each of this range's seeds once.
    let mut twice: Vec<Summary> = kept
        .iter()
        .chain(&kept[..3])
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut other = twice[0].clone();
    other.seed = 499;
    twice.push(other);
    let mut seeds: Vec<u64> = ours(twice.clone(), 12, 500)
        .iter()
        .map(|s| s.seed)
        .collect();
    seeds.sort_unstable();
    assert_eq!(seeds, (500..512).collect::<Vec<_>>());
    let again = campaign(12, 500, 2, twice, |_, _| panic!("every seed was run"));
    assert_eq!(again.resumed, 12);
    assert_eq!(json(&again), json(&whole));
}
