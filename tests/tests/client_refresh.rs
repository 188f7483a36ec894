//! Refresh hardening against real clusters: a `MOVED` loop between two
//! nodes (made with `CLUSTER SETSLOT` on one of them) is caught and the map
//! refreshed from the others instead of followed round; nodes that disagree
//! about the map are outvoted; refreshes keep to the rate set; `stats()`
//! counts them by cause.

use std::time::{Duration, Instant};

use zaris_client::{Error, KvStatus, RefreshCause};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::runtime;
use zaris_tests::{each_server, simple, Frame};

fn node_id(cluster: &Cluster, i: usize) -> Vec<u8> {
    match cluster
        .conn(i)
        .unwrap()
        .command(&[b"CLUSTER", b"MYID"])
        .unwrap()
    {
        Frame::BulkString(id) => id,
        other => panic!("CLUSTER MYID: {other:?}"),
    }
}

/// Node `on` believes `slot` belongs to node `owner`.
fn set_slot(cluster: &Cluster, on: usize, slot: u16, owner: usize) {
    let id = node_id(cluster, owner);
    let slot = slot.to_string();
    let reply = cluster
        .conn(on)
        .unwrap()
        .command(&[b"CLUSTER", b"SETSLOT", slot.as_bytes(), b"NODE", &id])
        .unwrap();
    assert_eq!(reply, simple("OK"), "SETSLOT on {on}");
}

#[test]
fn loops_are_caught_disagreement_outvoted_and_refreshes_rate_limited() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| {
            b.max_attempts(6).poll_interval(Duration::from_secs(3600))
        });

        // A MOVED loop: the owner A hands the (empty) slot to B in its own
        // view only; B still thinks A owns it.
        let key = "refresh:{loop}";
        let slot = slot_for_key(key.as_bytes());
        let a = cluster.owner_index(slot).unwrap();
        let b = (0..3).find(|&i| i != a).unwrap();
        set_slot(&cluster, a, slot, b);
        let before = client.stats();
        let started = Instant::now();
        let result = rt.block_on(client.get(key));
        let after = client.stats();
        eprintln!(
            "{server}: loop: {result:?} after {:?}; {} loop(s), refreshes by cause {:?}",
            started.elapsed(),
            after.redirect_loops - before.redirect_loops,
            after.refreshes_by_cause
        );
        assert!(
            matches!(
                result,
                Err(Error::Status {
                    status: KvStatus::Moved,
                    ..
                })
            ),
            "{server}: the cluster really is inconsistent: {result:?}"
        );
        assert!(
            after.redirect_loops > before.redirect_loops,
            "{server}: loop seen"
        );
        assert!(
            after.refreshes(RefreshCause::RedirectLoop) >= 1,
            "{server}: refreshed for the loop: {after:?}"
        );
        // The refresh outvoted A (B and the third node say A owns it), so
        // the map still names A.
        assert_eq!(client.owner_of(key), Some(cluster.addr(a)), "{server}");
        // Repaired, the same request succeeds.
        set_slot(&cluster, a, slot, a);
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(rt.block_on(client.get(key)).unwrap(), None, "{server}");

        // One node disagrees about another slot: the majority wins.
        let other_key = "refresh:{vote}";
        let other = slot_for_key(other_key.as_bytes());
        let owner = cluster.owner_index(other).unwrap();
        let liar = (0..3).find(|&i| i != owner).unwrap();
        let elsewhere = (0..3).find(|&i| i != owner && i != liar).unwrap();
        set_slot(&cluster, liar, other, elsewhere);
        std::thread::sleep(Duration::from_millis(600));
        rt.block_on(client.refresh_map());
        assert_eq!(
            client.owner_of(other_key),
            Some(cluster.addr(owner)),
            "{server}: two nodes against one"
        );
        set_slot(&cluster, liar, other, owner);

        // The rate: however many ask, one refresh per interval.
        let limited = cluster.client(&rt, |b| {
            b.refresh_min_interval(Duration::from_secs(5))
                .poll_interval(Duration::from_secs(3600))
        });
        rt.block_on(async {
            for _ in 0..20 {
                limited.refresh_map().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let stats = limited.stats();
        assert_eq!(
            stats.refreshes(RefreshCause::Requested),
            1,
            "{server}: {stats:?}"
        );
        assert_eq!(stats.refreshes_debounced, 19, "{server}: {stats:?}");
    });
}
