//! A caller that gives up on a blocking command must not lose data. The
//! server still holds the command for the connection it came on: left
//! open, that connection would be handed the next item pushed, and the
//! reply would go to no one. So the connection is closed at once, and the
//! server unblocks it instead. Checked on real Redis and Valkey for the
//! three ways a caller gives up: its own time-out around the call, the
//! client's request deadline, and a dropped (aborted) future.

use std::time::{Duration, Instant};

use zaris_client::{Client, Value};
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, runtime, Frame};

/// `blocked_clients` in the node's `INFO clients`.
fn blocked_clients(cluster: &Cluster, node: usize) -> u64 {
    let info = match cluster
        .conn(node)
        .unwrap()
        .command(&[b"INFO", b"clients"])
        .unwrap()
    {
        Frame::BulkString(text) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("INFO answered {other:?}"),
    };
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no blocked_clients in {info}"))
}

/// Waits (up to 2 s) until the node blocks no client.
fn unblocked(cluster: &Cluster, node: usize, what: &str) {
    eventually(
        &format!("{what}: the server stops blocking the abandoned connection"),
        Duration::from_secs(2),
        || blocked_clients(cluster, node) == 0,
    );
}

/// `LPUSH key item`, then a `BLPOP key 5` that must get `item` at once.
async fn pushed_item_is_served(client: &Client, key: &str, what: &str) {
    assert_eq!(
        client.cmd(&["LPUSH", key, "item"]).await.unwrap(),
        Value::Int(1),
        "{what}"
    );
    let started = Instant::now();
    let popped = client.cmd(&["BLPOP", key, "5"]).await.unwrap();
    assert_eq!(
        popped,
        Value::Array(vec![
            Value::Data(key.to_owned().into()),
            Value::Data("item".into())
        ]),
        "{what}: the item went to the abandoned command"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{what}: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_blocking_command_given_up_on_is_unblocked_not_served() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b);
        let strict = cluster.client(&rt, |b| b.request_timeout(Some(Duration::from_millis(500))));
        let owner = |key: &str| {
            cluster
                .owner_index(zaris_core::slot_for_key(key.as_bytes()))
                .unwrap()
        };

        // The caller's own time-out around the call.
        let key = "{q}:list";
        let gave_up = rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(300), client.cmd(&["BLPOP", key, "5"])).await
        });
        assert!(
            gave_up.is_err(),
            "{server}: BLPOP on an empty list answered {gave_up:?}"
        );
        unblocked(&cluster, owner(key), "a caller's time-out");
        rt.block_on(pushed_item_is_served(&client, key, "a caller's time-out"));

        // The client's own request deadline.
        let key = "{q}:deadline";
        let expired = rt.block_on(strict.cmd(&["BLPOP", key, "0"]));
        assert!(expired.is_err(), "{server}: BLPOP 0 answered {expired:?}");
        unblocked(&cluster, owner(key), "the request deadline");
        rt.block_on(pushed_item_is_served(&client, key, "the request deadline"));

        // A future dropped mid-request (an aborted task).
        let key = "{q}:aborted";
        let task = rt.spawn({
            let client = client.clone();
            async move { client.cmd(&["BLPOP", key, "5"]).await }
        });
        eventually(
            &format!("{server}: the BLPOP is blocked"),
            Duration::from_secs(5),
            || blocked_clients(&cluster, owner(key)) == 1,
        );
        task.abort();
        assert!(rt.block_on(task).unwrap_err().is_cancelled());
        unblocked(&cluster, owner(key), "an aborted task");
        rt.block_on(pushed_item_is_served(&client, key, "an aborted task"));

        // Blocking commands that are not given up on still wait and are served.
        let key = "{q}:patient";
        let waiting = rt.spawn({
            let client = client.clone();
            async move { client.cmd(&["BLPOP", key, "5"]).await }
        });
        eventually(
            &format!("{server}: the BLPOP waits"),
            Duration::from_secs(5),
            || blocked_clients(&cluster, owner(key)) == 1,
        );
        rt.block_on(client.cmd(&["LPUSH", key, "late"])).unwrap();
        let served = rt.block_on(waiting).unwrap().unwrap();
        assert_eq!(
            served.into_array().get(1),
            Some(&Value::Data("late".into())),
            "{server}"
        );
    });
}

/// A script that keeps its node busy for 300 ms, then answers "slow".
const SLOW: &str = "local t = redis.call('TIME') \
    local start = t[1] * 1000000 + t[2] \
    repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - start > 300000 \
    return 'slow'";

/// A caller that gives up on a plain (not blocking) command leaves its
/// reply owed on the shared connection: it must be read and dropped, never
/// handed to the caller after it. A lone caller reads its own reply, so
/// this is checked for the three ways that reading can end: the caller
/// gives up and the reply comes to no one, another request goes out while
/// it is still owed, and another caller is already waiting behind it.
#[test]
fn replies_given_up_on_are_dropped_never_handed_to_the_next_caller() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b);
        // One slot: one node, one shared connection.
        let (slow, other) = ("{g}:slow", "{g}:other");
        rt.block_on(client.cmd(&["SET", other, "mine"]))
            .expect("SET");
        let mine = |what: &str| {
            let got = rt.block_on(client.cmd(&["GET", other]));
            assert_eq!(
                got.as_ref().ok(),
                Some(&Value::Data("mine".into())),
                "{server}: {what}: {got:?}"
            );
        };
        let give_up = || {
            let gave_up = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_millis(50),
                    client.cmd(&["EVAL", SLOW, "1", slow]),
                )
                .await
            });
            assert!(
                gave_up.is_err(),
                "{server}: the script answered {gave_up:?}"
            );
        };

        // Given up, and its reply comes to no one.
        give_up();
        // The script's reply reaches the connection 300 ms after it was
        // sent and leaves no trace the test can wait on: it is dropped.
        std::thread::sleep(Duration::from_millis(500));
        mine("after a reply that came to no one");

        // Given up, and the next request goes out while it is still owed.
        give_up();
        mine("sent while a given-up reply was owed");

        // Given up while another caller waits behind it.
        let behind = rt.spawn({
            let client = client.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                client.cmd(&["GET", other]).await
            }
        });
        give_up();
        let got = rt.block_on(behind).expect("the task");
        assert_eq!(
            got.as_ref().ok(),
            Some(&Value::Data("mine".into())),
            "{server}: a caller behind one that gave up: {got:?}"
        );

        // And the connection goes on in order.
        for _ in 0..100 {
            mine("afterwards");
        }
    });
}
