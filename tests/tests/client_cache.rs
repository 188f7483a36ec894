//! The client cache (`Builder::client_cache`) on real 3+3 clusters (Redis
//! and Valkey): reads served from memory, invalidated by the nodes'
//! tracking pushes, within its memory budget; the settings it refuses.
//! Churn: `client_cache_churn.rs`.

use std::time::Duration;

use zaris_client::{CacheConfig, Client, Error, Protocol, ReadFrom, Value};
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime};

#[test]
fn the_cache_refuses_what_would_break_its_bound() {
    let rt = runtime();
    for (builder, said) in [
        (
            zaris_tests::builder()
                .client_cache(CacheConfig::default())
                .protocol(Protocol::Resp2),
            "needs RESP3",
        ),
        (
            zaris_tests::builder()
                .client_cache(CacheConfig::default())
                .read_from(ReadFrom::PreferReplica),
            "reads from masters",
        ),
        (
            zaris_tests::builder().client_cache(CacheConfig {
                max_bytes: 1 << 20,
                lease: Duration::ZERO,
            }),
            "positive lease",
        ),
    ] {
        match rt.block_on(builder.connect(&["127.0.0.1:1"])) {
            Err(Error::Config(why)) => assert!(why.contains(said), "{why}"),
            other => panic!("{said}: {:?}", other.map(|_| "a client")),
        }
    }
}

#[test]
fn reads_are_served_from_memory_until_a_node_invalidates_them() {
    each_server(|server| {
        steady_state(server);
    });
}

/// What `attempt` gives once it gives something, tried every 20 ms for
/// up to `limit`.
async fn within<T, F: std::future::Future<Output = Option<T>>>(
    limit: Duration,
    mut attempt: impl FnMut() -> F,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = attempt().await {
            return Some(found);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn cached(cluster: &Cluster, rt: &tokio::runtime::Runtime, max_bytes: usize) -> Client {
    cluster.client(rt, |b| {
        zaris_tests::patient(b).client_cache(CacheConfig {
            max_bytes,
            ..CacheConfig::default()
        })
    })
}

fn steady_state(server: &str) {
    let cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let writer = cluster.client(&rt, zaris_tests::patient);
    let reader = cached(&cluster, &rt, 1 << 20);
    rt.block_on(async {
        writer.set("k", "1").await.unwrap();
        assert_eq!(reader.get("k").await.unwrap().as_deref(), Some(&b"1"[..]));
        // The first check of the node proves its lease: then reads hit.
        let hits = within(Duration::from_secs(5), || async {
            let before = reader.stats().cache_hits;
            let value = reader.get("k").await.unwrap();
            (reader.stats().cache_hits > before).then_some(value)
        })
        .await
        .expect("reads hit once the node is checked");
        assert_eq!(hits.as_deref(), Some(&b"1"[..]), "{server}");
        // A write elsewhere: the node pushes an invalidation, the next read
        // goes to it and sees the write.
        writer.set("k", "2").await.unwrap();
        let seen = within(Duration::from_secs(2), || async {
            let v = reader.get("k").await.unwrap();
            (v.as_deref() == Some(&b"2"[..])).then_some(())
        })
        .await;
        assert!(seen.is_some(), "{server}: the write is seen");
        assert!(
            reader.stats().cache_invalidations >= 1,
            "{server}: {:?}",
            reader.stats()
        );
        // Every cacheable read: from the node once, then from memory.
        writer.cmd(&["HSET", "{h}", "f", "v"]).await.unwrap();
        writer.cmd(&["RPUSH", "{l}", "a", "b"]).await.unwrap();
        writer.cmd(&["SET", "{t}", "x", "EX", "100"]).await.unwrap();
        for _ in 0..2 {
            assert_eq!(
                reader.cmd(&["HGET", "{h}", "f"]).await.unwrap(),
                Value::Data("v".into())
            );
            assert_eq!(
                reader.cmd(&["LRANGE", "{l}", "0", "-1"]).await.unwrap(),
                Value::Array(vec![Value::Data("a".into()), Value::Data("b".into())])
            );
            let ttl = reader.cmd(&["TTL", "{t}"]).await.unwrap().as_int().unwrap();
            assert!((98..=100).contains(&ttl), "{server}: TTL {ttl}");
            let values = reader.mget(&["k", "{h}", "nokey"]).await.unwrap();
            assert_eq!(values, [Some("2".into()), None, None], "{server}");
        }
        let stats = reader.stats();
        assert!(stats.cache_hits >= 5, "{server}: {stats:?}");
        // A value changed by MGET's key's owner is invalidated too.
        writer.set("nokey", "now").await.unwrap();
        let seen = within(Duration::from_secs(2), || async {
            let v = reader.mget(&["nokey"]).await.unwrap();
            (v[0].as_deref() == Some(&b"now"[..])).then_some(())
        })
        .await;
        assert!(seen.is_some(), "{server}: MGET sees the write");
    });
    // The budget: many values, never more than it in memory.
    let small = cached(&cluster, &rt, 64 * 1024);
    rt.block_on(async {
        let value = "v".repeat(1000);
        for i in 0..300 {
            writer.set(format!("fill:{i}"), &value).await.unwrap();
        }
        for _ in 0..2 {
            for i in 0..300 {
                small.get(format!("fill:{i}")).await.unwrap();
            }
        }
        let held = small.cache_bytes();
        assert!(held > 0 && held <= 64 * 1024, "{server}: {held} bytes held");
    });
}
