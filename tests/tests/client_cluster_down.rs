//! A cluster that says it is down (`CLUSTERDOWN`: a master died and no
//! replica can take its slots, so every node refuses every slot) costs
//! its callers waiting, not attempts: requests wait, unsent, one probe
//! going ahead at a time (backing off to one per refresh interval), and
//! succeed once the cluster is back, within their deadline, instead of
//! spending three attempts in 300 ms and failing (docs/behaviour.md §3).
//! And a master's moment of doubt (Redis 7 answers `CLUSTERDOWN` for a
//! few milliseconds while another master fails over by hand) costs about
//! its length and a retry's delay, not the refresh interval.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use zaris_core::{probe_interval, slot_for_key};
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, runtime};

#[test]
fn a_cluster_down_costs_waits_not_attempts() {
    each_server(|server| {
        cluster_down(server);
    });
}

fn cluster_down(server: &str) {
    // No replicas: a dead master's slots stay uncovered, and the whole
    // cluster says CLUSTERDOWN until it returns.
    let mut cluster = Cluster::start(server, 3, 0).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, |b| {
        b.attempt_timeout(Duration::from_millis(500))
            .request_timeout(Some(Duration::from_secs(10)))
    });
    let victim = cluster.owner_index(slot_for_key(b"dead:{v}")).unwrap();
    // Keys served by the masters that stay up.
    let keys: Vec<String> = (0..200)
        .map(|i| format!("alive:{i}"))
        .filter(|k| client.owner_of(k) != Some(cluster.addr(victim)))
        .take(30)
        .collect();
    rt.block_on(async {
        for key in &keys {
            client.set(key, key).await.unwrap();
        }
    });
    let witness = (0..3).find(|&i| i != victim).unwrap();
    cluster.kill(victim);
    eventually(&format!("{server}: down"), Duration::from_secs(20), || {
        cluster.says_down(witness).unwrap()
    });
    let before = client.stats();
    // Readers of the healthy masters' keys, while the cluster is down.
    let readers = rt.spawn({
        let (client, keys) = (client.clone(), keys.clone());
        async move {
            join_all(keys.iter().map(|key| {
                let client = client.clone();
                async move {
                    let started = Instant::now();
                    let read = client.get(key).await;
                    (read, started.elapsed(), Instant::now())
                }
            }))
            .await
        }
    });
    std::thread::sleep(Duration::from_millis(1_500));
    cluster.revive(victim).unwrap();
    let revived = Instant::now();
    let results = rt.block_on(readers).unwrap();
    let after = client.stats();
    let attempts = after.attempts - before.attempts;
    let slowest = results.iter().map(|(_, t, _)| *t).max().unwrap();
    eprintln!(
        "{server}: {} reads through a down cluster: {attempts} attempts, {} owner waits, \
         slowest {slowest:?}, the last done {:?} after the revival",
        keys.len(),
        after.owner_waits - before.owner_waits,
        Instant::now() - revived
    );
    for ((result, _, _), key) in results.iter().zip(&keys) {
        assert_eq!(
            result.as_ref().map(|v| v.as_deref()),
            Ok(Some(key.as_bytes())),
            "{server}: {key}"
        );
    }
    // Each read: its first attempt (CLUSTERDOWN) and the one that lands;
    // between them it waits, and only the probes (per node, two nodes, at
    // the core's intervals, each at its shortest draw) are sent.
    let probes = 2 * probes_within(slowest);
    assert!(
        attempts <= 2 * keys.len() as u64 + probes,
        "{server}: {attempts} attempts"
    );
    assert!(
        after.owner_waits > before.owner_waits,
        "{server}: they waited"
    );
    // The probe that finds a node back lets all its waiting reads go at
    // once, not each at its next look (up to an interval later).
    for node in keys.iter().filter_map(|k| client.owner_of(k)) {
        let done: Vec<Instant> = results
            .iter()
            .zip(&keys)
            .filter(|(_, k)| client.owner_of(k).as_deref() == Some(node.as_str()))
            .map(|((_, _, at), _)| *at)
            .collect();
        let spread = *done.iter().max().unwrap() - *done.iter().min().unwrap();
        assert!(
            spread < Duration::from_millis(150),
            "{server}: the reads of {node} ended {spread:?} apart"
        );
    }
}

/// The most probes of one node that says the cluster is down within
/// `time`: each interval the shortest the core's rule draws (half).
fn probes_within(time: Duration) -> u64 {
    let (mut at, mut probes) = (Duration::ZERO, 0);
    while at <= time {
        probes += 1;
        at += probe_interval(u32::try_from(probes).unwrap_or(u32::MAX), 0) / 2;
    }
    probes
}

/// A master that answers `CLUSTERDOWN` for a moment (here: one of its
/// slots dropped and added back 150 ms later, so it counts the cluster
/// down meanwhile) holds its readers back at most about twice that: its
/// probes back off from 10 ms, doubling, so one finds it back soon, and
/// that answer lets every waiting read go at once. Were the probes one per
/// refresh interval, the reads would wait 500 ms and more: the moment
/// outlasts the first attempts' retry delay (100 ms), so the next probe
/// after those finds it still down.
/// How long the master counts the cluster down.
const DOUBT: Duration = Duration::from_millis(150);

#[test]
fn a_moment_of_doubt_costs_about_its_length() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b);
        let owner = cluster.owner_index(slot_for_key(b"doubt:{k}")).unwrap();
        let keys: Vec<String> = (0..500)
            .map(|i| format!("doubt:{i}"))
            .filter(|k| client.owner_of(k) == Some(cluster.addr(owner)))
            .take(16)
            .collect();
        rt.block_on(async {
            for key in &keys {
                client.set(key, key).await.unwrap();
            }
        });
        // A slot of the owner's that no reader uses.
        let spare = (0..zaris_core::SLOT_COUNT)
            .find(|&s| {
                cluster.owner_index(s).ok() == Some(owner)
                    && keys.iter().all(|k| slot_for_key(k.as_bytes()) != s)
            })
            .unwrap()
            .to_string();
        let before = client.stats();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..8)
            .map(|t| {
                let (client, keys, stop) = (client.clone(), keys.clone(), stop.clone());
                rt.spawn(async move {
                    let (mut longest, mut reads, mut i) = (Duration::ZERO, 0u32, t);
                    while !stop.load(std::sync::atomic::Ordering::Acquire) {
                        let started = Instant::now();
                        let key = keys[i % keys.len()].clone();
                        let value = client.get(&key).await;
                        assert_eq!(
                            value.as_ref().map(|v| v.as_deref()),
                            Ok(Some(key.as_bytes())),
                            "{key}"
                        );
                        longest = longest.max(started.elapsed());
                        (reads, i) = (reads + 1, i + 8);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    (longest, reads)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let mut admin = cluster.conn(owner).unwrap();
        admin
            .command(&[b"CLUSTER", b"DELSLOTS", spare.as_bytes()])
            .expect("DELSLOTS");
        std::thread::sleep(DOUBT);
        admin
            .command(&[b"CLUSTER", b"ADDSLOTS", spare.as_bytes()])
            .expect("ADDSLOTS");
        std::thread::sleep(Duration::from_millis(700));
        stop.store(true, std::sync::atomic::Ordering::Release);
        let mut longest = Duration::ZERO;
        for reader in readers {
            let (slowest, reads) = rt.block_on(reader).expect("a reader");
            assert!(reads > 0, "{server}: a reader read");
            longest = longest.max(slowest);
        }
        let after = client.stats();
        eprintln!(
            "{server}: a {DOUBT:?} moment of doubt: the longest read {longest:?}, {} owner waits",
            after.owner_waits - before.owner_waits
        );
        assert!(
            after.owner_waits > before.owner_waits,
            "{server}: the node said the cluster was down, and reads waited"
        );
        assert!(
            longest < 2 * DOUBT + Duration::from_millis(150),
            "{server}: a read waited {longest:?} for a {DOUBT:?} moment of doubt"
        );
    });
}
