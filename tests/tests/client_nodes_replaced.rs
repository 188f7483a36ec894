//! Every node of a cluster replaced by one at a new address, shard by
//! shard, as a managed service replaces a cluster's machines (the soak's
//! `NodesReplaced`, here on its own): two new nodes join each shard as
//! replicas and sync, the old replica is forgotten and stopped, the shard
//! fails over to a new node, and the old master, its clients moved, is
//! forgotten and stopped. By the end no address the client was given
//! serves; the client, which learns the nodes from the maps it is given,
//! goes on serving from the new ones. Writers run throughout with the
//! default policy; none fails, and every acknowledged write reads back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

const WRITERS: usize = 4;

#[test]
fn every_node_replaced_at_a_new_address_costs_no_write() {
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let seeds = cluster.addrs();
        let client = cluster.client(&rt, |b| b);
        let stop = Arc::new(AtomicBool::new(false));
        // Each writer's acknowledged writes, and its failures.
        let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let failures: Arc<Mutex<Vec<String>>> = Arc::default();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (client, stop, acked, failures) = (
                    client.clone(),
                    stop.clone(),
                    acked.clone(),
                    failures.clone(),
                );
                rt.spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let (key, value) = (format!("replaced:{w}:{}", n % 64), format!("{w}.{n}"));
                        match client.set(key.as_bytes(), value.as_bytes()).await {
                            Ok(()) => acked.lock().unwrap().push((key, value)),
                            Err(e) => failures.lock().unwrap().push(format!("{key}: {e}")),
                        }
                        n += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));

        let masters: Vec<usize> = (0..3).collect();
        for old in masters {
            let old_replica = cluster.replica_of(old).expect("a replica");
            cluster.add_replica(old).expect("a first new node joins");
            cluster
                .forget_node(old_replica)
                .expect("the old replica goes");
            let new = cluster.add_replica(old).expect("a second new node joins");
            cluster
                .failover(new)
                .expect("the shard fails over to a new node");
            cluster
                .wait_steps_down(old)
                .expect("the old master steps down");
            std::thread::sleep(Duration::from_secs(1));
            cluster.forget_node(old).expect("the old master goes");
        }
        let now: Vec<String> = cluster
            .running()
            .into_iter()
            .map(|i| cluster.addr(i))
            .collect();
        assert!(
            seeds.iter().all(|s| !now.contains(s)),
            "{server}: every address replaced: {seeds:?} → {now:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Release);
        for w in writers {
            rt.block_on(w).unwrap();
        }
        let failures = failures.lock().unwrap();
        assert!(
            failures.is_empty(),
            "{server}: {} failed: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
        // Every key's last acknowledged write is what it holds, read
        // through the same client, from the new nodes alone.
        let mut last = std::collections::BTreeMap::new();
        for (key, value) in acked.lock().unwrap().iter() {
            last.insert(key.clone(), value.clone());
        }
        assert!(last.len() >= 64, "{server}: {} keys written", last.len());
        for (key, value) in &last {
            let got = rt.block_on(client.get(key.as_bytes())).expect("a read");
            assert_eq!(got.as_deref(), Some(value.as_bytes()), "{server}: {key}");
        }
        eprintln!(
            "{server}: {} writes acknowledged, none failed, every node replaced",
            acked.lock().unwrap().len()
        );
    });
}
