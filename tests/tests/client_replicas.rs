//! Replica reads against real clusters (3 masters with a replica each):
//! with `ReadFrom::PreferReplica` the replicas serve the `GET`s (counted
//! by each node's `INFO commandstats`) and every write reaches a primary;
//! a killed replica's reads move to its primary within the deadline; after
//! a failover, reads follow the new replica set. `ReadFrom::PrimaryAndReplicas`
//! spreads reads over primary and replica.

use std::time::{Duration, Instant};

use zaris_client::ReadFrom;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::each_server;
use zaris_tests::{builder, runtime};

const DEADLINE: Duration = Duration::from_secs(5);

/// `calls` of `cmdstat_<command>` on node `i`.
fn calls(cluster: &Cluster, i: usize, command: &str) -> u64 {
    let frame = cluster
        .conn(i)
        .unwrap()
        .command(&[b"INFO", b"commandstats"])
        .unwrap();
    let zaris_tests::Frame::BulkString(text) = frame else {
        panic!("INFO is a bulk string")
    };
    let text = String::from_utf8_lossy(&text);
    let prefix = format!("cmdstat_{command}:calls=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn reset_stats(cluster: &Cluster) {
    for i in cluster.running() {
        cluster
            .conn(i)
            .unwrap()
            .command(&[b"CONFIG", b"RESETSTAT"])
            .unwrap();
    }
}

/// GETs per node, split into masters and replicas.
fn gets(cluster: &Cluster) -> (u64, u64) {
    let (mut masters, mut replicas) = (0, 0);
    for i in cluster.running() {
        let n = calls(cluster, i, "get");
        if cluster.is_master(i).unwrap() {
            masters += n;
        } else {
            replicas += n;
        }
    }
    (masters, replicas)
}

#[test]
fn replicas_serve_reads_and_follow_churn() {
    each_server(|server| {
        replica_reads(server);
    });
}

fn replica_reads(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let seeds = cluster.addrs();
    // Writes wait for the replica, so the reads below cannot be stale.
    let writer = cluster.client(&rt, |b| b.durable_writes(1, Duration::from_secs(2)));
    let reader = cluster.client(&rt, |b| {
        b.read_from(ReadFrom::PreferReplica)
            .request_timeout(Some(DEADLINE))
            .max_attempts(5)
    });
    let keys: Vec<String> = (0..300).map(|i| format!("replica-read:{i}")).collect();
    rt.block_on(async {
        for key in &keys {
            writer.set(key, key).await.unwrap();
        }
    });
    reset_stats(&cluster);

    // Every GET on a replica; the reader's writes on primaries.
    rt.block_on(async {
        for key in &keys {
            assert_eq!(
                reader.get(key).await.unwrap().as_deref(),
                Some(key.as_bytes())
            );
        }
        for key in keys.iter().take(50) {
            let value = reader.cmd(&["GET", key.as_str()]).await.unwrap();
            assert_eq!(
                value,
                zaris_client::Value::Data(key.clone().into_bytes().into())
            );
            reader
                .cmd(&["SET", key.as_str(), key.as_str()])
                .await
                .unwrap();
        }
    });
    let (on_masters, on_replicas) = gets(&cluster);
    let sets_on_masters: u64 = cluster
        .running()
        .into_iter()
        .filter(|&i| cluster.is_master(i).unwrap())
        .map(|i| calls(&cluster, i, "set"))
        .sum();
    eprintln!("{server} prefer-replica: GETs on replicas {on_replicas}, on masters {on_masters}; SETs on masters {sets_on_masters}");
    assert_eq!(on_replicas, 350, "{server}: every read on a replica");
    assert_eq!(on_masters, 0, "{server}: no read on a primary");
    assert_eq!(sets_on_masters, 50, "{server}: every write on a primary");
    assert_eq!(
        reader.stats().moved_redirects,
        0,
        "{server}: no write went to a replica"
    );

    // A replica killed: its shard's reads move to the primary, each within
    // the deadline.
    let slot = slot_for_key(keys[0].as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    cluster.kill(replica);
    reset_stats(&cluster);
    let shard: Vec<&String> = keys
        .iter()
        .filter(|k| cluster.owner_index(slot_for_key(k.as_bytes())).unwrap() == master)
        .take(40)
        .collect();
    let mut longest = Duration::ZERO;
    rt.block_on(async {
        for key in &shard {
            let started = Instant::now();
            assert_eq!(
                reader.get(key).await.unwrap().as_deref(),
                Some(key.as_bytes())
            );
            longest = longest.max(started.elapsed());
        }
    });
    let on_master = calls(&cluster, master, "get");
    eprintln!(
        "{server}: replica killed: {} reads, {on_master} on its primary, longest {longest:?}",
        shard.len()
    );
    assert_eq!(
        on_master,
        shard.len() as u64,
        "{server}: the primary serves them"
    );
    assert!(longest < DEADLINE, "{server}: within the deadline");

    // A failover elsewhere: the old primary becomes the replica that
    // serves the shard's reads.
    let other_slot = (0..16384u16)
        .find(|&s| cluster.owner_index(s).unwrap() != master)
        .unwrap();
    let old_master = cluster.owner_index(other_slot).unwrap();
    let new_master = cluster.replica_of(old_master).unwrap();
    cluster.failover(new_master).unwrap();
    let moved: Vec<&String> = keys
        .iter()
        .filter(|k| cluster.owner_index(slot_for_key(k.as_bytes())).unwrap() == new_master)
        .take(40)
        .collect();
    rt.block_on(async {
        // A write meets MOVED: the hint re-points the slots at once, and
        // the refresh that follows (or the next poll, within 10 s) learns
        // the new replica set; the refresh may run mid-failover, so one
        // more after the debounce stands for the poll.
        reader.set(moved[0], moved[0]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        reader.refresh_map().await;
    });
    assert!(
        reader.stats().moved_redirects >= 1,
        "{server}: the write met MOVED"
    );
    reset_stats(&cluster);
    rt.block_on(async {
        for key in &moved {
            assert_eq!(
                reader.get(key).await.unwrap().as_deref(),
                Some(key.as_bytes())
            );
        }
    });
    let (on_old, on_new) = (
        calls(&cluster, old_master, "get"),
        calls(&cluster, new_master, "get"),
    );
    eprintln!(
        "{server}: after failover: {on_old} reads on the new replica, {on_new} on the new primary"
    );
    assert_eq!(
        on_old,
        moved.len() as u64,
        "{server}: reads follow the new replica set"
    );
    assert_eq!(on_new, 0, "{server}");

    // Any node: primary and replica share the reads.
    let any = rt
        .block_on(
            builder()
                .read_from(ReadFrom::PrimaryAndReplicas)
                .connect(&seeds[..1]),
        )
        .expect("connect");
    reset_stats(&cluster);
    rt.block_on(async {
        for key in &moved {
            assert_eq!(any.get(key).await.unwrap().as_deref(), Some(key.as_bytes()));
        }
    });
    let (on_old, on_new) = (
        calls(&cluster, old_master, "get"),
        calls(&cluster, new_master, "get"),
    );
    eprintln!("{server}: any node: {on_old} reads on the replica, {on_new} on the primary");
    assert_eq!(on_old + on_new, moved.len() as u64);
    assert!(on_old >= 10 && on_new >= 10, "{server}: both serve reads");
}
