//! A master killed with `kill -9` costs its callers latency, not errors.
//! Until the cluster fails it over, its connections are refused; a request
//! for its slots then waits, unsent, for the map to name another owner (on
//! the shared, debounced refresh) instead of spending its attempts on a
//! node that cannot answer. With the default policy (3 attempts, 60 s
//! deadline), writes through the whole window succeed, no write takes
//! longer than the failover plus the refresh interval and a margin, and
//! the refreshes stay within the interval's rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, runtime};

const WRITERS: usize = 8;

/// One write as a writer saw it.
struct Write {
    started: Instant,
    took: Duration,
    result: Result<(), String>,
    /// Its key is in the killed master's slots.
    victims: bool,
}

#[test]
fn a_killed_master_costs_latency_not_errors() {
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b);
        let victim_key = "killed:{victim}";
        let victim = cluster
            .owner_index(slot_for_key(victim_key.as_bytes()))
            .unwrap();
        // Keys on every master, and a hundred more on the victim's; each
        // with whether the victim owned its slot when it was killed.
        let keys: Vec<(String, bool)> = (0..400)
            .map(|i| format!("killed:{i}"))
            .chain((0..100).map(|i| format!("killed:{{victim}}:{i}")))
            .map(|key| {
                let owner = cluster.owner_index(slot_for_key(key.as_bytes())).unwrap();
                (key, owner == victim)
            })
            .collect();

        let stop = Arc::new(AtomicBool::new(false));
        let outcomes: Arc<Mutex<Vec<Write>>> = Arc::default();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (client, keys, stop, outcomes) =
                    (client.clone(), keys.clone(), stop.clone(), outcomes.clone());
                rt.spawn(async move {
                    let mut i = w;
                    while !stop.load(Ordering::Acquire) {
                        let (key, victims) = &keys[i % keys.len()];
                        let started = Instant::now();
                        let result = client
                            .set(key, i.to_string())
                            .await
                            .map_err(|e| e.to_string());
                        let victims = *victims;
                        let took = started.elapsed();
                        outcomes.lock().unwrap().push(Write {
                            started,
                            took,
                            result,
                            victims,
                        });
                        i += WRITERS;
                    }
                })
            })
            .collect();
        eventually("the writers are under way", Duration::from_secs(10), || {
            outcomes.lock().unwrap().len() >= 10 * WRITERS
        });
        let before = client.stats();
        let killed_at = Instant::now();
        cluster.kill(victim);
        let heir = cluster
            .wait_failover_of(victim, slot_for_key(victim_key.as_bytes()))
            .unwrap();
        let failed_over = killed_at.elapsed();
        // Writes go on until one to the dead master's slots, started after
        // the failover, has landed on its heir.
        eventually(
            &format!("{server}: a write to the dead master's slots lands after the failover"),
            Duration::from_secs(10),
            || {
                outcomes
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|w| w.victims && w.result.is_ok() && w.started >= killed_at + failed_over)
            },
        );
        stop.store(true, Ordering::Release);
        for writer in writers {
            rt.block_on(writer).unwrap();
        }
        let after = client.stats();
        let outcomes = outcomes.lock().unwrap();
        let window: Vec<_> = outcomes
            .iter()
            .filter(|w| w.started + w.took >= killed_at && w.started <= killed_at + failed_over)
            .collect();
        let failed: Vec<&String> = window
            .iter()
            .filter_map(|w| w.result.as_ref().err())
            .collect();
        let victims = window.iter().filter(|w| w.victims).count();
        let worst = window.iter().map(|w| w.took).max().unwrap_or_default();
        let refreshes = after.refreshes_started - before.refreshes_started;
        eprintln!(
            "{server}: failover of {} took {failed_over:?}; {} writes in the window ({victims} to its slots), {} failed; \
             worst {worst:?}; {refreshes} refreshes; {} waits for an owner; attempts {}",
            cluster.addr(victim),
            window.len(),
            failed.len(),
            after.owner_waits - before.owner_waits,
            after.attempts - before.attempts,
        );
        assert_ne!(heir, victim);
        assert!(
            victims > 0,
            "{server}: no write went to the dead master's slots in the window"
        );
        assert!(
            failed.is_empty(),
            "{server}: {} of {} writes in the kill window failed: {:?}",
            failed.len(),
            window.len(),
            &failed[..failed.len().min(3)]
        );
        assert!(
            after.owner_waits > before.owner_waits,
            "{server}: no request waited for the map"
        );
        // The worst write: the failover, one refresh interval, and slack for a loaded machine.
        assert!(
            worst < failed_over + Duration::from_millis(500) + Duration::from_secs(2),
            "{server}: {worst:?}"
        );
        // No storm: at most one refresh per interval (500 ms) over the window, and a few more.
        let bound = u64::try_from(failed_over.as_millis() / 500).unwrap() + 6;
        assert!(
            refreshes <= bound,
            "{server}: {refreshes} refreshes in {failed_over:?} (bound {bound})"
        );
    });
}
