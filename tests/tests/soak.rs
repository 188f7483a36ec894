//! The nemesis soak of `just soak`, for 60 s with a fixed seed on Redis
//! and on Valkey: every check of the history checker holds, the events
//! are the seed's schedule, and the timeline is drawn.

use std::time::Duration;

use zaris_tests::each_server;
use zaris_tests::soak::{run, Config, Schedule};

const SEED: u64 = 2026;

#[test]
fn a_minute_of_churn_loses_nothing_acknowledged() {
    each_server(|server| {
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("soak")
            .join(server);
        let report = run(&Config {
            seconds: 60,
            seed: SEED,
            server: server.to_owned(),
            out: out.clone(),
            script: Vec::new(),
        })
        .expect("the soak ran");
        eprintln!("{server}: {}", report.summary());
        assert!(report.passed(), "{server}: {:#?}", report.violations);
        // The seed's schedule, replayed: the events are its first draws.
        let mut schedule = Schedule::new(SEED);
        let drawn: Vec<_> = (0..report.events.len())
            .map(|_| schedule.next_draw().kind)
            .collect();
        let ran: Vec<_> = report.events.iter().map(|e| e.kind).collect();
        assert_eq!(ran, drawn, "{server}");
        assert!(
            report.events.len() >= 8,
            "{server}: {} events",
            report.events.len()
        );
        assert!(report.all.operations > 10_000, "{server}: {:?}", report.all);
        assert_eq!(report.lost_durable_writes, 0, "{server}");
        assert!(
            report.worst_operation_ms < Duration::from_secs(10).as_secs_f64() * 1000.0 + 100.0,
            "{server}: {}",
            report.worst_operation_ms
        );
        let svg = std::fs::read_to_string(out.join("timeline.svg")).expect("a timeline");
        assert!(
            svg.starts_with("<svg") && svg.contains("operations / s"),
            "{server}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(json["seed"], SEED, "{server}");
    });
}

#[test]
fn a_seed_draws_one_schedule() {
    let draws = |seed| {
        let mut s = Schedule::new(seed);
        (0..50).map(|_| s.next_draw()).collect::<Vec<_>>()
    };
    assert_eq!(draws(7), draws(7));
    assert_ne!(draws(7), draws(8));
    // Every kind is drawn, in a long enough schedule.
    let kinds: std::collections::BTreeSet<_> = draws(7)
        .into_iter()
        .map(|d| format!("{:?}", d.kind))
        .collect();
    assert!(kinds.len() >= 10, "{kinds:?}");
    assert!(draws(7)
        .iter()
        .all(|d| d.pause >= Duration::from_secs(2) && d.pause < Duration::from_secs(5)));
}
