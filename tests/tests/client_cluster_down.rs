//! A cluster that says it is down (`CLUSTERDOWN`: a master died and no
//! replica can take its slots, so every node refuses every slot) costs
//! its callers waiting, not attempts: requests wait, unsent, one probe
//! going ahead per refresh interval, and succeed once the cluster is back,
//! within their deadline, instead of spending three attempts in 300 ms and
//! failing (docs/behaviour.md §3).

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use zaris_core::slot_for_key;
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
                    (client.get(key).await, started.elapsed())
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
    let slowest = results.iter().map(|(_, t)| *t).max().unwrap();
    eprintln!(
        "{server}: {} reads through a down cluster: {attempts} attempts, {} owner waits, \
         slowest {slowest:?}, the last done {:?} after the revival",
        keys.len(),
        after.owner_waits - before.owner_waits,
        Instant::now() - revived
    );
    for ((result, _), key) in results.iter().zip(&keys) {
        assert_eq!(
            result.as_ref().map(|v| v.as_deref()),
            Ok(Some(key.as_bytes())),
            "{server}: {key}"
        );
    }
    // Each read: its first attempt (CLUSTERDOWN) and the one that lands;
    // between them it waits, and only the probes (one per 500 ms interval
    // per node, two nodes) are sent.
    let probes = 2 * (slowest.as_millis() as u64 / 500 + 1);
    assert!(
        attempts <= 2 * keys.len() as u64 + probes,
        "{server}: {attempts} attempts"
    );
    assert!(
        after.owner_waits > before.owner_waits,
        "{server}: they waited"
    );
}
