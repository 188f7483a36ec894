//! One seed end to end: the real client, the soak's workload, nemesis and
//! checker, on the model cluster in simulated time.

use zaris_sim::{run, Setup};

#[test]
fn one_seed_runs_and_is_judged() {
    let setup = Setup {
        seconds: 20,
        ..Setup::campaign(7)
    };
    let started = std::time::Instant::now();
    let outcome = run(&setup);
    eprintln!(
        "seed 7: {} operations, {:?} simulated in {:?}; events {:?}; counts {:?}; violations {:#?}",
        outcome.operations,
        outcome.simulated,
        started.elapsed(),
        outcome
            .events
            .iter()
            .map(|e| (e.kind, e.trouble.clone()))
            .collect::<Vec<_>>(),
        outcome.counts,
        outcome.violations
    );
    assert!(
        outcome.operations > 1_000,
        "{} operations",
        outcome.operations
    );
    assert!(outcome.violations.is_empty(), "{:#?}", outcome.violations);
}

#[test]
fn a_seed_replays_to_the_same_trace_in_one_process() {
    let setup = Setup {
        seconds: 10,
        ..Setup::campaign(11)
    };
    let (a, b) = (run(&setup), run(&setup));
    assert_eq!(a.operations, b.operations);
    assert_eq!(a.trace_sha256, b.trace_sha256);
}
