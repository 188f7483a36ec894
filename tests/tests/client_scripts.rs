//! Scripts that survive churn: `Client::invoke` sends `EVALSHA` to the
//! owner of the keys and, on `NOSCRIPT`, the source (`EVAL`) to the same
//! owner. Held through the first call, `SCRIPT FLUSH`, a manual failover
//! (the new master never saw the script), a slot moved to another master,
//! and a `kill -9`; in a pipeline and in a transaction too. Nothing is ever
//! `SCRIPT LOAD`ed.

use std::time::Duration;

use zaris_client::{Script, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime, Frame};

const ADD: &str = "return redis.call('INCRBY', KEYS[1], ARGV[1])";

fn text(frame: Frame) -> String {
    match frame {
        Frame::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        other => format!("{other:?}"),
    }
}

#[test]
fn scripts_survive_flushes_failovers_migrations_and_kills() {
    each_server(|server| {
        scripts(server);
    });
}

fn scripts(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, |b| {
        b.attempt_timeout(Duration::from_millis(500))
            .request_timeout(Some(Duration::from_secs(20)))
    });
    let add = Script::new(ADD);
    let key = "visits:{s}";
    let slot = slot_for_key(key.as_bytes());
    let fallbacks = || client.stats().noscript_fallbacks;
    let invoke = |n: &str| rt.block_on(client.invoke(&add, &[key], &[n]));

    // The first call: no node has it.
    assert_eq!(invoke("1"), Ok(Value::Int(1)), "{server}");
    assert_eq!(fallbacks(), 1, "{server}");
    // Now its owner does.
    assert_eq!(invoke("1"), Ok(Value::Int(2)), "{server}");
    assert_eq!(fallbacks(), 1, "{server}");

    // SCRIPT FLUSH on the owner.
    let owner = cluster.owner_index(slot).unwrap();
    cluster
        .conn(owner)
        .unwrap()
        .command(&[b"SCRIPT", b"FLUSH"])
        .unwrap();
    assert_eq!(invoke("1"), Ok(Value::Int(3)), "{server}");
    assert_eq!(fallbacks(), 2, "{server}: after SCRIPT FLUSH");

    // A manual failover: the new master has the data, not the script.
    let replica = cluster.replica_of(owner).unwrap();
    cluster.failover(replica).unwrap();
    assert_eq!(invoke("1"), Ok(Value::Int(4)), "{server}");
    let after_failover = fallbacks();
    assert_eq!(after_failover, 3, "{server}: after a failover");

    // The slot moves to another master, which never saw it.
    let to = (0..3)
        .map(|s| cluster.owner_index([0u16, 6000, 12000][s]).unwrap())
        .find(|&m| m != replica)
        .unwrap();
    cluster.move_slot(slot, to).unwrap();
    assert_eq!(invoke("1"), Ok(Value::Int(5)), "{server}");
    assert_eq!(fallbacks(), 4, "{server}: after a migration");
    assert_eq!(invoke("1"), Ok(Value::Int(6)), "{server}");
    assert_eq!(fallbacks(), 4, "{server}");

    // kill -9 of the owner: once its replica took over, the call lands,
    // on what that replica had.
    let dead = cluster.owner_index(slot).unwrap();
    cluster.kill(dead);
    let writer = rt.spawn({
        let (client, add) = (client.clone(), add.clone());
        async move { client.invoke(&add, &[key], &["1"]).await }
    });
    cluster.wait_failover_of(dead, slot).unwrap();
    let landed = rt.block_on(writer).unwrap();
    let now = rt.block_on(client.get(key)).unwrap().unwrap();
    let now: i64 = std::str::from_utf8(&now).unwrap().parse().unwrap();
    assert_eq!(landed, Ok(Value::Int(now)), "{server}");
    assert!((6..=7).contains(&now), "{server}: {now}");
    assert_eq!(fallbacks(), 5, "{server}: after a kill -9");

    // In a pipeline, over three slots, after every master flushed.
    for i in cluster.running() {
        if cluster.is_master(i).unwrap() {
            cluster
                .conn(i)
                .unwrap()
                .command(&[b"SCRIPT", b"FLUSH"])
                .unwrap();
        }
    }
    let keys = ["p:{a}", "p:{b}", "p:{c}"];
    let before = fallbacks();
    let results = rt
        .block_on(async {
            let mut pipeline = client.pipeline();
            for k in keys {
                pipeline.invoke(&add, &[k], &["10"]);
                pipeline.cmd(&["GET", k]);
            }
            pipeline.run().await
        })
        .unwrap();
    assert_eq!(fallbacks() - before, 3, "{server}");
    for pair in results.chunks(2) {
        assert_eq!(pair[0], Ok(Value::Int(10)), "{server}: {results:?}");
    }
    // The GET after each EVALSHA ran before its fallback (nothing yet).
    assert!(
        results
            .iter()
            .skip(1)
            .step_by(2)
            .all(|r| *r == Ok(Value::Nil)),
        "{server}: {results:?}"
    );
    // Again: cached now, in order.
    let results = rt
        .block_on(async {
            let mut pipeline = client.pipeline();
            for k in keys {
                pipeline.invoke(&add, &[k], &["1"]);
                pipeline.cmd(&["GET", k]);
            }
            pipeline.run().await
        })
        .unwrap();
    assert_eq!(fallbacks() - before, 3, "{server}");
    for pair in results.chunks(2) {
        assert_eq!(pair[0], Ok(Value::Int(11)), "{server}: {results:?}");
        assert_eq!(
            pair[1],
            Ok(Value::Data("11".into())),
            "{server}: {results:?}"
        );
    }

    // In a transaction: by source, atomically with the rest.
    let results = rt
        .block_on(
            client
                .transaction()
                .invoke(&add, &["t:{x}"], &["5"])
                .cmd(&["GET", "t:{x}"])
                .exec(),
        )
        .unwrap();
    assert_eq!(
        results,
        vec![Value::Int(5), Value::Data("5".into())],
        "{server}"
    );

    // Never loaded ahead of time, anywhere.
    for i in cluster.running() {
        let stats = text(
            cluster
                .conn(i)
                .unwrap()
                .command(&[b"INFO", b"commandstats"])
                .unwrap(),
        );
        assert!(!stats.contains("cmdstat_script|load"), "{server}: node {i}");
    }
}
