//! `Client::ownership_changes` and `Client::cmd_on_node` (what `zaris watch`
//! and `zaris map` are built on) through churn on real clusters: a slot
//! migrated (revealed by the `MOVED` a request meets), the same slot moved
//! away and back within half a second under traffic (every change told, in
//! order, ending where the cluster is), a manual failover (revealed by the
//! refresh asked for), a master killed with `kill -9` (revealed by the
//! refresh its failed requests start), and a frozen node (a request to it
//! ends with its time-out; the others answer meanwhile).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zaris_client::{Error, OwnershipChanges, OwnershipEvent, RefreshCause, Revealed, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

/// Events until one satisfies `wanted` (returned with those before it), or
/// a panic after `within`.
async fn until(
    changes: &mut OwnershipChanges,
    within: Duration,
    wanted: impl Fn(&OwnershipEvent) -> bool,
) -> (OwnershipEvent, Vec<OwnershipEvent>) {
    let mut before = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, changes.next()).await {
            Ok(Some(event)) if wanted(&event) => return (event, before),
            Ok(Some(event)) => before.push(event),
            Ok(None) => panic!("the client is gone"),
            Err(_) => panic!("no such change within {within:?}; saw {before:?}"),
        }
    }
}

#[test]
fn ownership_changes_and_node_commands_through_churn() {
    each_server(|server| {
        churn(server);
    });
}

fn churn(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    // No poll: each change below is revealed by what the test does.
    let client = cluster.client(&rt, |b| {
        zaris_tests::patient(b).poll_interval(Duration::from_secs(3600))
    });
    let mut changes = client.ownership_changes();
    let key = "own:{m}";
    let slot = slot_for_key(key.as_bytes());
    let from = cluster.owner_index(slot).unwrap();
    let to = (from + 1) % 3;
    let (from_addr, to_addr) = (cluster.addr(from), cluster.addr(to));

    rt.block_on(async {
        // A migration, revealed by the MOVED the next request meets.
        client.set(key, "1").await.unwrap();
        cluster.move_slot(slot, to).unwrap();
        assert_eq!(client.get(key).await.unwrap().as_deref(), Some(&b"1"[..]));
        let (moved, _) = until(&mut changes, Duration::from_secs(5), |e| e.first == slot).await;
        assert_eq!((moved.first, moved.last), (slot, slot));
        assert_eq!(moved.old_owner.as_deref(), Some(from_addr.as_str()));
        assert_eq!(moved.new_owner.as_deref(), Some(to_addr.as_str()));
        assert_eq!(moved.revealed, Revealed::Moved);

        // Away and back within half a second, under traffic: whatever the
        // client noticed is told in order, each change starting where the
        // last ended, between these two nodes only.
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let reader = tokio::spawn({
            let (client, stop, reads) = (client.clone(), stop.clone(), reads.clone());
            async move {
                while !stop.load(Ordering::Acquire) {
                    if client
                        .get(key)
                        .await
                        .is_ok_and(|v| v.as_deref() == Some(&b"1"[..]))
                    {
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        // Reads under way, then the bounce under them.
        let read_some = |from: u64| {
            let reads = reads.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(5), async {
                    while reads.load(Ordering::Relaxed) < from + 10 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .await
                .expect("reads go on");
            }
        };
        read_some(0).await;
        let quick = Instant::now();
        cluster.move_slot(slot, from).unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        cluster.move_slot(slot, to).unwrap();
        assert!(
            quick.elapsed() < Duration::from_millis(500),
            "{:?}",
            quick.elapsed()
        );
        // Reads go on after the bounce, on the layout it left.
        read_some(reads.load(Ordering::Relaxed)).await;
        stop.store(true, Ordering::Release);
        reader.await.unwrap();
        assert!(reads.load(Ordering::Relaxed) > 0);
        // The client ends where the cluster is.
        assert_eq!(client.get(key).await.unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(client.owner_of(key).as_deref(), Some(to_addr.as_str()));
        let mut owner = to_addr.clone();
        while let Ok(Some(e)) =
            tokio::time::timeout(Duration::from_millis(200), changes.next()).await
        {
            assert_eq!((e.first, e.last), (slot, slot), "{e:?}");
            assert_eq!(
                e.old_owner.as_deref(),
                Some(owner.as_str()),
                "{e:?}: a change starts where the last ended"
            );
            owner = e.new_owner.clone().expect("an owner");
            assert!(owner == from_addr || owner == to_addr, "{e:?}");
        }
        assert_eq!(owner, to_addr, "the changes told end where the cluster is");
        assert_eq!(changes.missed(), 0);
    });

    // A manual failover, revealed by the refresh a caller asks for.
    let master = cluster.owner_index(0).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    cluster.failover(replica).unwrap();
    rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(600)).await; // past the debounce
        client.refresh_map().await;
        let (failover, _) = until(&mut changes, Duration::from_secs(5), |e| e.first == 0).await;
        assert_eq!(failover.old_owner, Some(cluster.addr(master)));
        assert_eq!(failover.new_owner, Some(cluster.addr(replica)));
        assert_eq!(
            failover.revealed,
            Revealed::Refresh(RefreshCause::Requested)
        );
        assert_eq!(failover.last, 5460);
    });

    // kill -9 of a master: its callers' failures start the refresh that
    // reveals the replica taking over.
    let victim = cluster.owner_index(16383).unwrap();
    let heir = cluster.replica_of(victim).unwrap();
    let victim_addr = cluster.addr(victim);
    let last_key = (0..)
        .map(|i| format!("last:{i}"))
        .find(|k| slot_for_key(k.as_bytes()) > 10922)
        .unwrap();
    rt.block_on(client.set(&last_key, "v")).unwrap();
    // Its ranges as the map has them (the migrated slot may cut one in two).
    let held: Vec<(u16, u16)> = client
        .slot_ranges()
        .into_iter()
        .filter(|r| r.master == victim_addr)
        .map(|r| (r.first, r.last))
        .collect();
    cluster.kill(victim);
    let write = rt.spawn({
        let (client, key) = (client.clone(), last_key.clone());
        async move { client.set(&key, "after").await }
    });
    let new_owner = cluster.wait_failover_of(victim, 16383).unwrap();
    assert_eq!(new_owner, heir);
    rt.block_on(async {
        write
            .await
            .unwrap()
            .expect("the write lands once the replica takes over");
        // Each slot it held goes to the heir, perhaps by way of no owner
        // (a map taken while the cluster still saw the master failing):
        // every change starts where the last left the slot.
        let heir_addr = cluster.addr(heir);
        let mut owner: Vec<Option<String>> = vec![None; 16384];
        for &(first, last) in &held {
            for slot in first..=last {
                owner[usize::from(slot)] = Some(victim_addr.clone());
            }
        }
        let settled = |owner: &[Option<String>]| {
            held.iter().all(|&(f, l)| {
                (f..=l).all(|s| owner[usize::from(s)].as_deref() == Some(heir_addr.as_str()))
            })
        };
        while !settled(&owner) {
            let (e, _) = until(&mut changes, Duration::from_secs(10), |e| {
                held.iter().any(|&(f, l)| e.first <= l && f <= e.last)
            })
            .await;
            assert!(matches!(e.revealed, Revealed::Refresh(_)), "{e:?}");
            assert!(
                e.new_owner.is_none() || e.new_owner.as_deref() == Some(heir_addr.as_str()),
                "{e:?}"
            );
            for slot in e.first..=e.last {
                assert_eq!(
                    owner[usize::from(slot)],
                    e.old_owner,
                    "{e:?} starts where slot {slot} was"
                );
                owner[usize::from(slot)].clone_from(&e.new_owner);
            }
        }
    });

    // One node's own answer; a frozen node costs its caller the time-out
    // and nobody else anything.
    rt.block_on(async {
        let role = client
            .cmd_on_node(&cluster.addr(replica), &["ROLE"])
            .await
            .unwrap();
        assert_eq!(
            role.into_array().first(),
            Some(&Value::Data("master".into()))
        );
        let unknown = client.cmd_on_node("127.0.0.1:1", &["PING"]).await;
        assert!(matches!(unknown, Err(Error::Config(_))), "{unknown:?}");
        let keyed = client
            .cmd_on_node(&cluster.addr(replica), &["GET", "k"])
            .await;
        assert!(matches!(keyed, Err(Error::Unsupported { .. })), "{keyed:?}");
    });
    let frozen = cluster.replica_of(replica).unwrap_or(master);
    cluster.freeze(frozen).unwrap();
    rt.block_on(async {
        let started = Instant::now();
        let silent = client
            .cmd_on_node(&cluster.addr(frozen), &["CLUSTER", "NODES"])
            .await;
        assert!(silent.is_err(), "a frozen node answered: {silent:?}");
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "{:?}",
            started.elapsed()
        );
        let other = client.cmd_on_node(&cluster.addr(replica), &["PING"]).await;
        assert_eq!(other.unwrap(), Value::Status("PONG".into()));
    });
    cluster.thaw(frozen).unwrap();
    let answered = rt.block_on(client.cmd_on_node(&cluster.addr(frozen), &["PING"]));
    assert_eq!(
        answered.unwrap(),
        Value::Status("PONG".into()),
        "{server}: a thawed node answers again"
    );
}
