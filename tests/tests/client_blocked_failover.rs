//! Found by the deterministic simulation, staged here on real Redis and
//! Valkey: a `BLPOP` blocked on a master when that master is failed over.
//! The server lets the blocked client go with `-UNBLOCKED ... instance
//! state changed (master -> replica?)`; the client must read that as its
//! command having done nothing on a node that is no longer the owner, and
//! block again on the new one, not hand the caller a server error (seeds
//! 14, 67 and 145 before the fix), nor go back to the demoted node by the
//! map that sent it there (seed 115150 of the long campaign).

use std::time::Duration;

use zaris_client::{Client, Stats, Value};
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

const QUEUE: &str = "queue:{blocked}";

#[test]
fn a_blocked_pop_survives_a_manual_failover_of_its_master() {
    each_server(|server| {
        let (_, after) = pop_through_a_failover(server, None);
        assert!(
            after.refreshes_started >= 1,
            "{server}: the role change refreshed the map: {after:?}"
        );
    });
}

/// Seed 115150: a master demoted moments after the client refreshed its
/// map. The refresh the retry asks for is debounced, and the retry used to
/// go by the same map to the demoted node, spending an attempt on its
/// `MOVED`. In the seed, a durable write had spent its first attempt on a
/// migration's `MOVED`, its second on the `WAIT` the demotion let go: the
/// demoted node's `MOVED` was its third and last, and the caller got an
/// error under a manual failover. Now a node that says it is no longer a
/// master makes the retry wait for the next refresh the interval allows,
/// and go to the new master.
///
/// Staged with a blocked pop (a blocked `WAIT` cannot be held on a real
/// master while its replica stays able to take over); the minimum interval
/// is raised to 5 s so the demotion surely falls within it.
#[test]
fn a_retry_after_a_demotion_waits_for_a_new_map_not_the_old_one() {
    each_server(|server| {
        let (before, after) = pop_through_a_failover(server, Some(Duration::from_secs(5)));
        assert!(
            after.refreshes_debounced > before.refreshes_debounced,
            "{server}: staged: the refresh after the demotion fell within the interval: {after:?}"
        );
        assert_eq!(
            after.moved_redirects, before.moved_redirects,
            "{server}: the retry went to the new master, not by the old map to the demoted node"
        );
    });
}

/// A `BLPOP` blocked on the master of its slot, which a manual failover
/// demotes; then a push. The pop must wait (for a new map, or blocked on
/// the new master) and get what was pushed. With `debounce`, the client's
/// minimum refresh interval, and a refresh just before the pop. The
/// client's counters before the failover and after the pop.
fn pop_through_a_failover(server: &str, debounce: Option<Duration>) -> (Stats, Stats) {
    let cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let connect = |debounce: Option<Duration>| {
        let mut builder = Client::builder()
            .env(zaris_tests::no_env)
            .request_timeout(Some(Duration::from_secs(20)));
        if let Some(interval) = debounce {
            builder = builder.refresh_min_interval(interval);
        }
        rt.block_on(builder.connect(&cluster.addrs()))
            .expect("connect")
    };
    let client = connect(debounce);
    let slot = zaris_core::slot_for_key(QUEUE.as_bytes());
    let master = cluster.owner_index(slot).expect("owner");
    let replica = cluster.replica_of(master).expect("replica");
    if debounce.is_some() {
        // A refresh now: the one the demotion asks for is debounced.
        rt.block_on(client.refresh_map());
    }
    let popper = rt.spawn({
        let client = client.clone();
        async move { client.cmd(&["BLPOP", QUEUE, "15"]).await }
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!popper.is_finished(), "{server}: blocked");
    let before = client.stats();
    cluster.failover(replica).expect("manual failover");
    cluster
        .wait_steps_down(master)
        .expect("the old master steps down");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !popper.is_finished(),
        "{server}: waiting for a new map or blocked on the new master, not failed: {:?}",
        rt.block_on(popper)
    );
    // Pushed by a client of its own: its map is new, so no redirect of its
    // own muddles the popper's counters.
    rt.block_on(connect(None).cmd(&["RPUSH", QUEUE, "after"]))
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
    (before, client.stats())
}
