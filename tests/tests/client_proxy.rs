//! Network faults, made by the harness's fault-injecting proxy in front of
//! every node (the nodes announce the proxies' ports, so every connection
//! of the client goes through them):
//! - a master cut off from the network (a black hole: connections accepted,
//!   nothing answered, no reset, no `MOVED`) is noticed through attempt
//!   time-outs, the map is refreshed from the other nodes, and once the
//!   cluster fails it over, writes to its slots succeed within the failover
//!   time plus one second;
//! - while a master's client port is a black hole, callers of the other
//!   masters keep their median latency within 2x of the healthy run
//!   (`zaris_tests::keeps_pace`), and
//!   the black-holed node never holds more than `max_in_flight_per_node`
//!   requests however many callers want it;
//! - 10,000 concurrent operations through a failover start no more map
//!   refreshes than the bound of docs/behaviour.md §5: one per refresh
//!   interval (500 ms) the event lasts, plus one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use zaris_client::Client;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::proxy::Faults;
use zaris_tests::scenario::{
    median, read_until, times_out, write_through_failover, ThroughFailover,
};
use zaris_tests::{each_server, runtime};

const ATTEMPT: Duration = Duration::from_millis(500);

#[test]
fn a_black_holed_master_is_timed_out_refreshed_around_and_failed_over() {
    each_server(|server| {
        black_holed_master(server);
    });
}

fn black_holed_master(server: &str) {
    let cluster = Cluster::start_proxied(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, zaris_tests::patient);
    let once = cluster.client(&rt, |b| b.attempt_timeout(ATTEMPT).max_attempts(1));
    let key = "holed:{k}".to_owned();
    let slot = slot_for_key(key.as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    assert_eq!(client.owner_of(&key), Some(cluster.addr(master)));
    rt.block_on(client.set(&key, "before")).unwrap();
    let before = client.stats();

    let cut_at = Instant::now();
    cluster.partition(master, true).unwrap();

    // A request to it ends by its attempt time-out: nothing refuses,
    // nothing resets, nothing answers.
    times_out(&rt, &once, &key, ATTEMPT);

    // A writer keeps at it; the cluster, which cannot reach the master
    // either, fails it over.
    let ThroughFailover {
        new_master,
        failed_over,
        late,
    } = write_through_failover(&rt, &client, &cluster, master, slot, &key);
    let after = client.stats();
    eprintln!(
        "{server}: black-holed master failed over after {:?}; the write landed {late:?} later; \
         {} transport retries, {} refreshes",
        failed_over - cut_at,
        after.retries_after_transport_failure - before.retries_after_transport_failure,
        after.refreshes_started - before.refreshes_started,
    );
    assert!(
        late <= Duration::from_secs(1),
        "{server}: within the failover time + 1 s"
    );
    // Noticed through time-outs, and the map came from the other nodes
    // (the black-holed one cannot give one).
    assert!(after.retries_after_transport_failure > before.retries_after_transport_failure);
    assert!(after.refreshes_started > before.refreshes_started);
    assert_eq!(client.owner_of(&key), Some(cluster.addr(new_master)));

    // Back on the network, it finds itself replaced and follows.
    cluster.partition(master, false).unwrap();
    cluster.wait_steps_down(master).unwrap();
    rt.block_on(async {
        assert_eq!(
            client.get(&key).await.unwrap().as_deref(),
            Some(&b"after"[..])
        );
        client.set(&key, "healed").await.unwrap();
        assert_eq!(
            client.get(&key).await.unwrap().as_deref(),
            Some(&b"healed"[..])
        );
    });
}

/// GETs of `key` until `stop`, whatever they end with: callers of a node
/// that does not answer.
async fn press(client: Client, key: String, stop: Arc<AtomicBool>, ended: Arc<AtomicUsize>) {
    while !stop.load(Ordering::Acquire) {
        let _ = client.get(&key).await;
        ended.fetch_add(1, Ordering::Relaxed);
    }
}

/// The other masters' median GET while `pressing` callers wait on the
/// black-holed node, and the most requests that node held meanwhile.
fn under_black_hole(
    rt: &tokio::runtime::Runtime,
    client: &Client,
    healthy: &Arc<Vec<String>>,
    holed_key: &str,
    holed_addr: &str,
    pressing: usize,
) -> (Duration, usize, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicUsize::new(0));
    let pressers: Vec<_> = (0..pressing)
        .map(|_| {
            rt.spawn(press(
                client.clone(),
                holed_key.to_owned(),
                stop.clone(),
                ended.clone(),
            ))
        })
        .collect();
    let readers: Vec<_> = (0..8)
        .map(|_| rt.spawn(read_until(client.clone(), healthy.clone(), stop.clone())))
        .collect();
    let mut most = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        let held = client
            .in_flight_per_node()
            .into_iter()
            .find(|(addr, _)| addr == holed_addr)
            .map_or(0, |(_, n)| n);
        most = most.max(held);
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Release);
    let mut latencies = Vec::new();
    for reader in readers {
        latencies.extend(rt.block_on(reader).unwrap());
    }
    for presser in pressers {
        rt.block_on(presser).unwrap();
    }
    (median(latencies), most, ended.load(Ordering::Relaxed))
}

#[test]
fn a_black_holed_node_holds_at_most_its_in_flight_cap_and_slows_no_other() {
    each_server(|server| {
        in_flight_cap(server);
    });
}

fn in_flight_cap(server: &str) {
    // No replicas: the black hole is the client port's alone (the bus
    // stays up), so the cluster keeps the node and the fault lasts.
    let cluster = Cluster::start_proxied(server, 3, 0).expect("cluster");
    let rt = runtime();
    const CAP: usize = 32;
    const PRESSING: usize = 200;
    let short = |b: zaris_client::Builder| {
        b.attempt_timeout(ATTEMPT)
            .request_timeout(Some(Duration::from_secs(2)))
    };
    let default = cluster.client(&rt, short);
    let capped = cluster.client(&rt, |b| short(b).max_in_flight_per_node(CAP));
    let holed_key = "holed:{k}".to_owned();
    let holed = cluster
        .owner_index(slot_for_key(holed_key.as_bytes()))
        .unwrap();
    let holed_addr = cluster.addr(holed);
    let healthy: Arc<Vec<String>> = Arc::new(
        (0..60)
            .map(|i| format!("healthy:{i}"))
            .filter(|k| default.owner_of(k).as_deref() != Some(holed_addr.as_str()))
            .collect(),
    );
    rt.block_on(async {
        for key in healthy.iter() {
            default.set(key, key).await.unwrap();
        }
    });

    // The healthy run: eight readers of the other masters alone.
    let (healthy_p50, _, _) = under_black_hole(&rt, &default, &healthy, "healthy:0", "-", 0);

    cluster.fault(holed, Faults::BLACK_HOLE).unwrap();
    let (default_p50, default_most, default_ended) =
        under_black_hole(&rt, &default, &healthy, &holed_key, &holed_addr, PRESSING);
    let (capped_p50, capped_most, capped_ended) =
        under_black_hole(&rt, &capped, &healthy, &holed_key, &holed_addr, PRESSING);
    cluster.fault(holed, Faults::HEALTHY).unwrap();
    let waits = capped.stats().node_full_waits;
    eprintln!(
        "{server}: other masters' median GET {healthy_p50:?} healthy; with {PRESSING} callers on \
         a black-holed master: {default_p50:?} ({:.2}x) at the default cap, the node holding at \
         most {default_most} ({default_ended} calls ended); {capped_p50:?} ({:.2}x) capped at \
         {CAP}, holding at most {capped_most} ({capped_ended} calls ended, {waits} waits for room)",
        default_p50.as_secs_f64() / healthy_p50.as_secs_f64(),
        capped_p50.as_secs_f64() / healthy_p50.as_secs_f64(),
    );
    assert!(
        zaris_tests::keeps_pace(default_p50, healthy_p50),
        "{server}: {default_p50:?} vs {healthy_p50:?}"
    );
    assert!(
        zaris_tests::keeps_pace(capped_p50, healthy_p50),
        "{server}: {capped_p50:?} vs {healthy_p50:?}"
    );
    // At the default (1000), the callers' requests pile up there, the
    // timed-out ones too (their replies are still owed), up to the cap.
    assert!(
        (PRESSING / 2..=1000).contains(&default_most),
        "{server}: {default_most}"
    );
    assert!((1..=CAP).contains(&capped_most), "{server}: {capped_most}");
    assert!(waits > 0, "{server}: callers waited for room");

    // Healed, the held requests drain and the node serves again.
    rt.block_on(async {
        capped.set(&holed_key, "healed").await.unwrap();
        assert_eq!(
            capped.get(&holed_key).await.unwrap().as_deref(),
            Some(&b"healed"[..])
        );
    });
}

#[test]
fn ten_thousand_operations_through_a_failover_start_few_refreshes() {
    each_server(|server| {
        refreshes_bounded(server);
    });
}

fn refreshes_bounded(server: &str) {
    const OPS: usize = 10_000;
    let cluster = Cluster::start_proxied(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, zaris_tests::patient);
    let key_of = |i: usize| format!("wave:{i}");
    let slot = slot_for_key(key_of(0).as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    let before = client.stats();
    let started = Instant::now();
    // Waves of 10,000 concurrent INCRs while the replica takes over, and
    // after.
    let failing = std::thread::scope(|scope| {
        let over = scope.spawn(|| cluster.failover(replica));
        let mut waves = 0u64;
        loop {
            let results = rt.block_on(join_all((0..OPS).map(|i| {
                let (client, key) = (client.clone(), key_of(i));
                async move { client.incr_by(&key, 1).await }
            })));
            let failed = results.iter().filter(|r| r.is_err()).count();
            assert_eq!(
                failed,
                0,
                "{server}: {:?}",
                results.iter().find(|r| r.is_err())
            );
            waves += 1;
            // Waves before, through and after the failover.
            if over.is_finished() && waves >= 4 {
                over.join().unwrap().unwrap();
                return waves;
            }
        }
    });
    let elapsed = started.elapsed();
    let after = client.stats();
    let refreshes = after.refreshes_started - before.refreshes_started;
    // One refresh per interval the event lasted, plus the one it started with.
    let bound = 1 + (elapsed.as_millis() / 500) as u64 + 1;
    eprintln!(
        "{server}: {failing} waves of {OPS} concurrent INCRs through a failover in {elapsed:?}: \
         {refreshes} refreshes started (bound {bound}), {} coalesced, {} debounced",
        after.refreshes_coalesced - before.refreshes_coalesced,
        after.refreshes_debounced - before.refreshes_debounced,
    );
    assert!(refreshes <= bound, "{server}: {refreshes} > {bound}");
    // Every increment acknowledged counted: each key went up once a wave,
    // or more only where an attempt timed out and was retried.
    let unknown = after.retries_after_transport_failure - before.retries_after_transport_failure;
    rt.block_on(async {
        for i in (0..OPS).step_by(97) {
            let value = client.get(key_of(i)).await.unwrap().unwrap_or_default();
            let value: u64 = std::str::from_utf8(&value).unwrap().parse().unwrap();
            assert!(
                (failing..=failing + unknown).contains(&value),
                "{server}: {} is {value} after {failing} waves",
                key_of(i)
            );
        }
    });
    assert_eq!(client.owner_of(key_of(0)), Some(cluster.addr(replica)));
}
