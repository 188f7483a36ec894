//! `Client::scan` while the cluster churns, on a 3+3 cluster: slots
//! migrate step by step from one master to another, one slot moves away
//! and back, a master fails over and another is killed (`kill -9`), all
//! while a slow reader pulls the scan's batches. Every key written before
//! the scan (and never deleted) comes back at least once, the slots that
//! moved were scanned again on their new owners, and the batches never
//! exceed what one `SCAN` call returns.

use std::collections::HashSet;
use std::time::Duration;

use zaris_client::ScanOptions;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

const KEYS: usize = 6000;
const COUNT: u32 = 10;

#[test]
fn a_scan_returns_every_key_through_migrations_a_failover_and_a_kill() {
    each_server(|server| {
        scan_under_churn(server);
    });
}

fn scan_under_churn(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, zaris_tests::patient);
    let keys: Vec<String> = (0..KEYS).map(|i| format!("scan:{i}")).collect();
    rt.block_on(async {
        for chunk in keys.chunks(500) {
            let pairs: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), "v")).collect();
            client.mset(&pairs).await.unwrap();
        }
    });
    // Every key on the replicas too, so that a kill -9 loses none.
    cluster.wait_replicated().expect("replicated");
    // Slots of master 0 that hold keys: four migrate to master 1, one
    // goes to master 2 and comes back.
    let mut slots: Vec<u16> = keys
        .iter()
        .map(|k| slot_for_key(k.as_bytes()))
        .filter(|&s| cluster.owner_index(s).unwrap() == 0)
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let (migrating, bounced) = (slots[..4].to_vec(), slots[4]);

    let before = client.stats();
    let mut scan = client.scan(ScanOptions {
        pattern: Some("scan:*".into()),
        count: Some(COUNT),
        type_: None,
    });
    let churn = std::thread::spawn(move || {
        for &slot in &migrating {
            cluster.begin_migration(slot, 0, 1).unwrap();
            let held = cluster.keys_in_slot(0, slot).unwrap();
            let (first, rest) = held.split_at(held.len() / 2);
            cluster.migrate_keys(0, 1, first).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            cluster.migrate_keys(0, 1, rest).unwrap();
            cluster.finish_migration(slot, 1).unwrap();
        }
        cluster.move_slot(bounced, 2).unwrap();
        cluster.move_slot(bounced, 0).unwrap();
        let replica = cluster.replica_of(2).unwrap();
        cluster.failover(replica).unwrap();
        let victim_slot = 6000;
        let victim = cluster.owner_index(victim_slot).unwrap();
        cluster.kill(victim);
        cluster.wait_failover_of(victim, victim_slot).unwrap();
        cluster
    });
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut returned = 0usize;
    let mut largest = 0usize;
    rt.block_on(async {
        while let Some(batch) = scan.next().await {
            let batch = batch.expect("the scan rides out the churn");
            largest = largest.max(batch.len());
            returned += batch.len();
            seen.extend(batch.into_iter().map(|k| k.to_vec()));
            // A slow reader: the churn happens while it reads.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let cluster = churn.join().unwrap();
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !seen.contains(k.as_bytes()))
        .collect();
    let rescans = client.stats().scan_rescans - before.scan_rescans;
    eprintln!(
        "{server}: {} keys seen of {KEYS} ({returned} returned, {} twice), \
         {rescans} node rescans, batches of at most {largest}",
        seen.len(),
        returned - seen.len()
    );
    assert!(missing.is_empty(), "{server}: missed {missing:?}");
    assert_eq!(seen.len(), KEYS, "{server}: nothing but the keys written");
    assert!(rescans > 0, "{server}: the moved slots were scanned again");
    // A batch is what one SCAN call returned (COUNT is a hint: a few more
    // when a hash bucket holds several keys).
    assert!(largest <= 4 * COUNT as usize, "{server}: {largest}");
    // Once the churn is over, a scan returns each key once.
    let mut again = client.scan(ScanOptions::default());
    let mut all = Vec::new();
    rt.block_on(async {
        while let Some(batch) = again.next().await {
            all.extend(batch.unwrap());
        }
    });
    assert_eq!(all.len(), KEYS, "{server}: settled, each key once");
    drop(cluster);
}
