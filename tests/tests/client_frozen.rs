//! A master frozen with `SIGSTOP`: it keeps its sockets open and never
//! answers (no reset, no `MOVED`). Requests to it end by their attempt
//! time-out; the map is refreshed from the other nodes (a silent node does
//! not hold a refresh up); once the cluster has failed it over, writes to
//! its slots succeed within the failover time plus one second; requests to
//! the other masters keep flowing with their median latency within 2x of
//! the healthy run (`zaris_tests::keeps_pace`); and after `SIGCONT` the client follows it back as a
//! replica.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::{
    eventually, median, read_until, times_out, write_through_failover, ThroughFailover,
};
use zaris_tests::{each_server, runtime};

const ATTEMPT: Duration = Duration::from_millis(500);

#[test]
fn a_frozen_master_is_timed_out_failed_over_and_followed_back() {
    each_server(|server| {
        frozen_master(server);
    });
}

fn frozen_master(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, zaris_tests::patient);
    let once = cluster.client(&rt, |b| b.attempt_timeout(ATTEMPT).max_attempts(1));
    let frozen_key = "frozen:{k}".to_owned();
    let slot = slot_for_key(frozen_key.as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    let healthy: Arc<Vec<String>> = Arc::new(
        (0..60)
            .map(|i| format!("healthy:{i}"))
            .filter(|k| client.owner_of(k) != Some(cluster.addr(master)))
            .collect(),
    );
    rt.block_on(async {
        client.set(&frozen_key, "before").await.unwrap();
        for key in healthy.iter() {
            client.set(key, key).await.unwrap();
        }
    });

    // The healthy run: the median GET on the other masters.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = rt.spawn(read_until(client.clone(), healthy.clone(), stop.clone()));
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Release);
    let healthy_p50 = median(rt.block_on(reader).unwrap());

    // Freeze it; reads of the other shards go on meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = rt.spawn(read_until(client.clone(), healthy.clone(), stop.clone()));
    let frozen_at = Instant::now();
    cluster.freeze(master).unwrap();

    // A request to it ends by its attempt time-out.
    times_out(&rt, &once, &frozen_key, ATTEMPT);

    // A writer keeps trying the frozen slot; the cluster fails it over.
    let ThroughFailover {
        new_master,
        failed_over,
        late,
    } = write_through_failover(&rt, &client, &cluster, master, slot, &frozen_key);
    stop.store(true, Ordering::Release);
    let frozen_p50 = median(rt.block_on(reader).unwrap());
    eprintln!(
        "{server}: frozen master failed over after {:?}; the write landed {:?} later; \
         other shards' median GET {:?} (healthy {:?}, {:.2}x); {} attempt(s) given up early",
        failed_over - frozen_at,
        late,
        frozen_p50,
        healthy_p50,
        frozen_p50.as_secs_f64() / healthy_p50.as_secs_f64(),
        client.stats().attempts_abandoned
    );
    assert!(
        late <= Duration::from_secs(1),
        "{server}: within the failover time + 1 s"
    );
    assert!(
        zaris_tests::keeps_pace(frozen_p50, healthy_p50),
        "{server}: the other masters keep their pace ({frozen_p50:?} vs {healthy_p50:?})"
    );
    assert_eq!(client.owner_of(&frozen_key), Some(cluster.addr(new_master)));

    // Thawed, it finds itself replaced and follows the new master.
    cluster.thaw(master).unwrap();
    cluster.wait_steps_down(master).unwrap();
    // A refresh within the debounce of the last does nothing: asked again
    // until one runs.
    eventually(
        &format!("{server}: the client's map leaves out the thawed replica"),
        Duration::from_secs(5),
        || {
            rt.block_on(client.refresh_map());
            !client.owners().contains(&cluster.addr(master))
        },
    );
    rt.block_on(async {
        assert_eq!(
            client.get(&frozen_key).await.unwrap().as_deref(),
            Some(&b"after"[..])
        );
        client.set(&frozen_key, "thawed").await.unwrap();
    });
}
