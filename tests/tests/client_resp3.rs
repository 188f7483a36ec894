//! RESP3 (`Builder::protocol(Protocol::Resp3)`) against real 3+3 clusters:
//! every RESP3 kind comes typed (maps, sets, doubles, booleans, big
//! numbers, verbatim strings), in plain calls, pipelines and transactions;
//! the map is read from RESP3's `CLUSTER SHARDS` (a map, not a flat list);
//! and routing holds through a manual failover and a `kill -9`.

use zaris_client::{Protocol, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

#[test]
fn resp3_replies_come_typed_and_routing_rides_out_churn() {
    each_server(|server| {
        resp3(server);
    });
}

fn data(s: &str) -> Value {
    Value::Data(s.as_bytes().to_vec().into())
}

fn resp3(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    // A RESP3 client reads the map from RESP3 CLUSTER SHARDS.
    let client = cluster.client(&rt, |b| zaris_tests::patient(b).protocol(Protocol::Resp3));
    assert_eq!(client.owners().len(), 3, "{server}");
    rt.block_on(async {
        client.cmd(&["HSET", "{h}", "f", "1.5"]).await.unwrap();
        assert_eq!(
            client.cmd(&["HGETALL", "{h}"]).await.unwrap(),
            Value::Map(vec![(data("f"), data("1.5"))]),
            "{server}"
        );
        client.cmd(&["SADD", "{s}", "a"]).await.unwrap();
        assert_eq!(
            client.cmd(&["SMEMBERS", "{s}"]).await.unwrap(),
            Value::Set(vec![data("a")]),
            "{server}"
        );
        client.cmd(&["ZADD", "{z}", "2.5", "m"]).await.unwrap();
        assert_eq!(
            client.cmd(&["ZSCORE", "{z}", "m"]).await.unwrap(),
            Value::Double(2.5),
            "{server}"
        );
        for (body, want) in [
            ("redis.setresp(3) return true", Value::Boolean(true)),
            ("return {double=3.5}", Value::Double(3.5)),
            (
                "return {big_number='123456789012345678901234567890'}",
                Value::BigNumber("123456789012345678901234567890".into()),
            ),
            (
                "return {verbatim_string={format='txt', string='hello'}}",
                Value::Verbatim {
                    format: "txt".into(),
                    text: "hello".into(),
                },
            ),
            (
                "return {map={a=1}}",
                Value::Map(vec![(data("a"), Value::Int(1))]),
            ),
            ("return {set={a=true}}", Value::Set(vec![data("a")])),
        ] {
            assert_eq!(
                client.cmd(&["EVAL", body, "0"]).await.unwrap(),
                want,
                "{server}: {body}"
            );
        }
        // A pipeline and a transaction carry typed replies too.
        let mut pipeline = client.pipeline();
        pipeline
            .cmd(&["HGETALL", "{h}"])
            .cmd(&["ZSCORE", "{z}", "m"]);
        let replies = pipeline.run().await.unwrap();
        assert_eq!(
            replies[1].as_ref().unwrap(),
            &Value::Double(2.5),
            "{server}"
        );
        assert!(matches!(replies[0], Ok(Value::Map(_))), "{server}");
        let mut tx = client.transaction();
        tx.cmd(&["HSET", "{h}", "g", "2"]).cmd(&["HGETALL", "{h}"]);
        let done = tx.exec().await.unwrap();
        let pairs = done[1].clone().into_map().unwrap();
        assert_eq!(pairs.len(), 2, "{server}: {done:?}");
    });

    // Churn: a failover and a kill -9, with writes before and reads after.
    let keys: Vec<String> = (0..300).map(|i| format!("r3:{i}")).collect();
    rt.block_on(async {
        for key in &keys {
            client.set(key, key).await.unwrap();
        }
    });
    cluster.wait_replicated().expect("replicated");
    let first = slot_for_key(keys[0].as_bytes());
    let master = cluster.owner_index(first).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    cluster.failover(replica).unwrap();
    let read_all = || {
        rt.block_on(async {
            for key in &keys {
                assert_eq!(
                    client.get(key).await.unwrap().as_deref(),
                    Some(key.as_bytes()),
                    "{server}: {key}"
                );
            }
        });
    };
    read_all();
    let moved = client.stats().moved_redirects;
    assert!(moved > 0, "{server}: the failover's MOVED, read over RESP3");
    let victim_slot = 6000;
    let victim = cluster.owner_index(victim_slot).unwrap();
    cluster.kill(victim);
    cluster.wait_failover_of(victim, victim_slot).unwrap();
    read_all();
    eprintln!(
        "{server}: RESP3 through a failover and a kill -9: {moved} MOVED, {} refreshes",
        client.stats().refreshes_started
    );
}
