//! A slot moved away and back within the refresh debounce (an operator's
//! migration and its quick revert; the atomic slot migration of newer
//! servers makes this common): source and target answer `MOVED` back and
//! forth, which looks like a redirect loop. It must cost latency, never an
//! error: after a `MOVED` that undoes the last one, the retry waits for the
//! next map the refresh interval allows (asked of the other nodes first)
//! instead of going back to the node that just redirected it. Eight tasks
//! `INCR` 20 keys of one slot while it moves back and forth every 250 ms:
//! no error, and every counter equals its acknowledged increments.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zaris_client::Value;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

const KEYS: usize = 20;
const TASKS: usize = 8;

#[test]
fn a_slot_moved_back_and_forth_costs_latency_not_errors() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        // The default policy: 3 attempts, the 500 ms refresh debounce.
        let client = cluster.client(&rt, |b| b);
        let keys: Vec<String> = (0..KEYS).map(|i| format!("{{bf}}:counter{i}")).collect();
        let slot = slot_for_key(b"bf");
        let home = cluster.owner_index(slot).unwrap();
        let away = (home + 1) % 3;

        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged: Arc<Vec<AtomicU64>> =
            Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
        let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (client, keys, stop) = (client.clone(), keys.clone(), stop.clone());
                let (acknowledged, errors) = (acknowledged.clone(), errors.clone());
                rt.spawn(async move {
                    let mut i = t;
                    while !stop.load(Ordering::Acquire) {
                        let k = i % KEYS;
                        match client.cmd(&["INCR", &keys[k]]).await {
                            Ok(Value::Int(_)) => {
                                acknowledged[k].fetch_add(1, Ordering::Relaxed);
                            }
                            other => errors.lock().unwrap().push(format!("{other:?}")),
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..4 {
            cluster.move_slot(slot, away).unwrap();
            std::thread::sleep(Duration::from_millis(250));
            cluster.move_slot(slot, home).unwrap();
            std::thread::sleep(Duration::from_millis(250));
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Release);
        for task in tasks {
            rt.block_on(task).unwrap();
        }
        let errors = errors.lock().unwrap();
        let stats = client.stats();
        let total: u64 = acknowledged.iter().map(|n| n.load(Ordering::Relaxed)).sum();
        eprintln!(
            "{server}: {total} INCRs, {} errors, {} MOVED, {} redirect loops, {} refreshes",
            errors.len(),
            stats.moved_redirects,
            stats.redirect_loops,
            stats.refreshes_started
        );
        assert!(
            errors.is_empty(),
            "{server}: {} of {} INCRs failed: {:?}",
            errors.len(),
            total,
            &errors[..errors.len().min(5)]
        );
        assert!(
            stats.moved_redirects > 0,
            "{server}: the slot never moved under the writers"
        );
        assert!(total > 1000, "{server}: only {total} INCRs");
        // Exact counters: an INCR refused with MOVED never ran, so none
        // counts twice and none is lost.
        rt.block_on(async {
            for (k, key) in keys.iter().enumerate() {
                let stored = client.cmd(&["GET", key]).await.unwrap();
                let stored: u64 = stored
                    .as_bytes()
                    .map_or(0, |b| std::str::from_utf8(b).unwrap().parse().unwrap());
                assert_eq!(
                    stored,
                    acknowledged[k].load(Ordering::Relaxed),
                    "{server}: {key}"
                );
            }
        });
    });
}
