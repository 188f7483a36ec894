//! The client bench's bare floor (`benches/client/bare.rs`) on real
//! clusters (Redis 7 and Valkey 8, 3 masters): its writes land on the nodes
//! that own their keys, from many tasks at once and in pipelines; what it cannot do (follow
//! a `MOVED`, outlive its node) comes back as an error, never as a hang.

#[path = "../benches/client/bare.rs"]
mod bare;

use std::time::Duration;

use bare::Bare;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{runtime, servers_under_test, Frame};

/// The most any call here may take: a hang fails the test, not CI.
const BOUND: Duration = Duration::from_secs(5);

fn key(task: usize, i: usize) -> Vec<u8> {
    format!("bare:{task}:{i}").into_bytes()
}

#[test]
fn writes_from_many_tasks_land_on_their_owners() {
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 0).unwrap();
        let rt = runtime();
        let bare = rt.block_on(Bare::connect(&cluster.addrs())).unwrap();
        rt.block_on(async {
            let tasks: Vec<_> = (0..16)
                .map(|t| {
                    let bare = bare.clone();
                    tokio::spawn(async move {
                        for i in 0..50 {
                            let key = key(t, i);
                            bare.call(&[b"SET", &key, &key]).await?;
                            bare.call(&[b"GET", &key]).await?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            for task in tasks {
                let done = tokio::time::timeout(BOUND, task).await;
                assert_eq!(done.unwrap().unwrap(), Ok(()), "{server}");
            }
        });
        let mut owners = [0usize; 3];
        for t in 0..16 {
            for i in 0..50 {
                let key = key(t, i);
                let owner = cluster.owner_index(slot_for_key(&key)).unwrap();
                owners[owner] += 1;
                let stored = cluster.conn(owner).unwrap().command(&[b"GET", &key]);
                assert_eq!(stored.unwrap(), Frame::BulkString(key.clone()), "{server}");
            }
        }
        assert!(owners.iter().all(|&n| n > 100), "{server}: {owners:?}");
    }
}

#[test]
fn a_pipeline_goes_to_every_owner_in_one_share_each() {
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 0).unwrap();
        let rt = runtime();
        let bare = rt.block_on(Bare::connect(&cluster.addrs())).unwrap();
        let keys: Vec<Vec<u8>> = (0..100).map(|i| key(99, i)).collect();
        let sets: Vec<Vec<&[u8]>> = keys.iter().map(|k| vec![&b"SET"[..], k, k]).collect();
        let done = rt.block_on(async { tokio::time::timeout(BOUND, bare.pipeline(&sets)).await });
        assert_eq!(done.unwrap(), Ok(0), "{server}: no share failed");
        for key in &keys {
            let owner = cluster.owner_index(slot_for_key(key)).unwrap();
            let stored = cluster.conn(owner).unwrap().command(&[b"GET", key]);
            assert_eq!(stored.unwrap(), Frame::BulkString(key.clone()), "{server}");
        }
        // An error reply fails its node's share, and only that one.
        let mut mixed: Vec<Vec<&[u8]>> = keys.iter().map(|k| vec![&b"GET"[..], k]).collect();
        mixed.push(vec![&b"HGET"[..], &keys[0], b"f"]);
        let done = rt.block_on(async { tokio::time::timeout(BOUND, bare.pipeline(&mixed)).await });
        assert_eq!(done.unwrap(), Ok(1), "{server}: WRONGTYPE fails one share");
    }
}

#[test]
fn a_moved_slot_and_a_dead_node_are_errors() {
    for server in servers_under_test() {
        let mut cluster = Cluster::start(&server, 3, 0).unwrap();
        let rt = runtime();
        let bare = rt.block_on(Bare::connect(&cluster.addrs())).unwrap();
        let call = |args: &[&[u8]]| {
            rt.block_on(async { tokio::time::timeout(BOUND, bare.call(args)).await })
                .expect("an answer, not a hang")
        };
        let key: &[u8] = b"bare:moving";
        let slot = slot_for_key(key);
        let from = cluster.owner_index(slot).unwrap();
        assert_eq!(call(&[b"SET", key, b"1"]), Ok(()), "{server}");

        // The map it read at connect is not refreshed: the old owner's
        // MOVED is an error reply.
        let to = (from + 1) % 3;
        cluster.move_slot(slot, to).unwrap();
        assert_eq!(
            call(&[b"SET", key, b"2"]),
            Err("an error reply".to_owned()),
            "{server}"
        );
        let stored = cluster.conn(to).unwrap().command(&[b"GET", key]).unwrap();
        assert_eq!(stored, Frame::BulkString(b"1".to_vec()), "{server}");

        // A key of the killed node: its connection closed, the call fails
        // (now and later); another node's keys still work.
        let other = (0u64..)
            .map(|n| format!("bare:{n}").into_bytes())
            .find(|k| {
                slot_for_key(k) != slot && cluster.owner_index(slot_for_key(k)).unwrap() == to
            })
            .unwrap();
        let alive = (0u64..)
            .map(|n| format!("bare:{n}").into_bytes())
            .find(|k| {
                let owner = cluster.owner_index(slot_for_key(k)).unwrap();
                owner != to && owner != from
            })
            .unwrap();
        cluster.kill(to);
        for _ in 0..2 {
            assert_eq!(
                call(&[b"SET", &other, b"x"]),
                Err("the connection closed".to_owned()),
                "{server}"
            );
        }
        assert_eq!(call(&[b"SET", &alive, b"x"]), Ok(()), "{server}");
    }
}
