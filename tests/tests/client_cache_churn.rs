//! The client cache's bound through every kind of churn the issue names,
//! on real 3+3 clusters (Redis and Valkey) behind the fault-injecting
//! proxies: the soak's workload, with readers of its durable registers
//! through the cache, while a scripted nemesis plays a manual failover, a
//! forced takeover, a `kill -9`, a short and a long freeze, a partition, a
//! one-way cut, a migration, a slot moved away and back within 250 ms,
//! dropped connections, and every node replaced by one at a new address. The soak's checker holds every cached read to
//! the bound (docs/behaviour.md §11): one that starts more than the lease
//! after a write was acknowledged sees it or a later one. It also shows
//! the bound is not vacuous: most reads hit, and some inside the lease
//! saw the value a write replaced.

use zaris_tests::each_server;
use zaris_tests::soak::{run, Config, EventKind};

const SCRIPT: [EventKind; 11] = [
    EventKind::ManualFailover,
    EventKind::ForcedTakeover,
    EventKind::KillMaster,
    EventKind::FreezeShort,
    EventKind::FreezeLong,
    EventKind::Partition,
    EventKind::CutOneWay,
    EventKind::MigrateRange,
    EventKind::BackAndForth,
    EventKind::DropConnections,
    EventKind::NodesReplaced,
];

#[test]
fn no_cached_read_breaks_the_bound_through_any_churn() {
    each_server(|server| {
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("cache-churn")
            .join(server);
        let report = run(&Config {
            seconds: 180,
            seed: 45,
            server: server.to_owned(),
            out,
            script: SCRIPT.to_vec(),
        })
        .expect("the soak ran");
        let cache = &report.cache;
        eprintln!("{server}: {}; cache: {cache:?}", report.summary());
        assert!(report.passed(), "{server}: {:#?}", report.violations);
        assert_eq!(cache.violations, 0, "{server}");
        let ran: Vec<EventKind> = report.events.iter().map(|e| e.kind).collect();
        assert_eq!(ran, SCRIPT, "{server}: every kind played, in order");
        // Not vacuous: the readers read, mostly from memory, and the
        // nodes invalidated what the writers changed.
        assert!(cache.reads > 5_000, "{server}: {cache:?}");
        assert!(cache.hits > cache.misses, "{server}: {cache:?}");
        assert!(cache.invalidations > 100, "{server}: {cache:?}");
        assert!(
            cache.stale_inside_lease >= 1,
            "{server}: no read inside the lease saw an older value: {cache:?}"
        );
    });
}
