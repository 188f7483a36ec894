//! Found by the deterministic simulation (`just sim`, seeds 14, 67 and 145
//! before the fix), staged here on real Redis and Valkey: a `BLPOP` blocked
//! on a master when that master is failed over. The server lets the blocked
//! client go with `-UNBLOCKED ... instance state changed (master ->
//! replica?)`; the client must read that as its command having done nothing
//! on a node that is no longer the owner, and block again on the new one,
//! not hand the caller a server error.

use std::time::Duration;

use zaris_client::{Client, Value};
use zaris_tests::cluster::Cluster;
use zaris_tests::{runtime, servers_under_test};

const QUEUE: &str = "queue:{blocked}";

#[test]
fn a_blocked_pop_survives_a_manual_failover_of_its_master() {
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = rt
            .block_on(
                Client::builder()
                    .env(zaris_tests::no_env)
                    .request_timeout(Some(Duration::from_secs(20)))
                    .connect(&cluster.addrs()),
            )
            .expect("connect");
        let slot = zaris_core::slot_for_key(QUEUE.as_bytes());
        let master = cluster.owner_index(slot).expect("owner");
        let replica = cluster.replica_of(master).expect("replica");
        let popper = rt.spawn({
            let client = client.clone();
            async move { client.cmd(&["BLPOP", QUEUE, "15"]).await }
        });
        // Blocked on the master, then its replica takes over.
        std::thread::sleep(Duration::from_millis(500));
        assert!(!popper.is_finished(), "{server}: blocked");
        cluster.failover(replica).expect("manual failover");
        cluster
            .wait_steps_down(master)
            .expect("the old master steps down");
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !popper.is_finished(),
            "{server}: blocked again on the new master, not failed: {:?}",
            rt.block_on(popper)
        );
        rt.block_on(client.cmd(&["RPUSH", QUEUE, "after"]))
            .expect("push");
        let popped = rt.block_on(popper).expect("the task").expect("BLPOP");
        let Value::Array(pair) = popped else {
            panic!("{server}: {popped:?}");
        };
        assert_eq!(
            pair.get(1).and_then(Value::as_bytes),
            Some(&b"after"[..]),
            "{server}"
        );
        let stats = client.stats();
        assert!(
            stats.refreshes_started >= 1,
            "{server}: the role change refreshed the map: {stats:?}"
        );
    }
}
