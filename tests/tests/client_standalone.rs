//! A server with cluster support off, through the same client
//! (docs/behaviour.md §7, "One server, no cluster"): its map is one node
//! owning every slot, and keys of any slots go to it together, as the
//! server allows. The whole API runs on Redis 7 and Valkey 8 with cluster
//! support off: commands (multi-key ones whole, not split), pipelines,
//! transactions and `WATCH` over keys of many slots, scripts, functions,
//! `SCAN`, pub/sub (classic and sharded), the client cache, the typed
//! calls and the redis-rs adapter. Then churn as one server has it: a
//! `kill -9` and a restart on its port, a frozen process, a write pause,
//! with a writer whose acknowledged increments all land.

use std::time::Duration;

use zaris_client::{CacheConfig, Client, Error, Library, Received, ScanOptions, Script, Value};
use zaris_tests::scenario::CountingWriter;
use zaris_tests::{builder, each_server, patient, runtime, Frame, RedisNode};

fn data(value: &str) -> Value {
    Value::Data(value.to_owned().into())
}

fn ok() -> Value {
    Value::Status("OK".into())
}

/// How many times the server ran `command` (its `INFO commandstats`).
fn calls(node: &RedisNode, command: &str) -> u64 {
    let Ok(Frame::BulkString(text)) = node.connect().unwrap().command(&[b"INFO", b"commandstats"])
    else {
        return 0;
    };
    let prefix = format!("cmdstat_{command}:calls=");
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_whole_api_runs_on_one_server_without_a_cluster() {
    each_server(|server| {
        let node = RedisNode::start_standalone(server, &[]).expect("a standalone server");
        let rt = runtime();
        let client = rt
            .block_on(
                patient(builder())
                    .client_cache(CacheConfig::default())
                    .connect(&[node.addr()]),
            )
            .expect("a client of one server");
        assert_eq!(
            client.slot_ranges().len(),
            1,
            "{server}: one node owns every slot"
        );
        rt.block_on(async {
            // Keys of different slots in one command, sent whole.
            assert_eq!(client.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]).await, Ok(ok()));
            let got = client.cmd(&["MGET", "a", "b", "c"]).await;
            assert_eq!(got, Ok(Value::Array(vec![data("1"), data("2"), data("3")])));
            client.cmd(&["SADD", "s1", "x"]).await.unwrap();
            client.cmd(&["SADD", "s2", "y"]).await.unwrap();
            let union = client.cmd(&["SUNIONSTORE", "both", "s1", "s2"]).await;
            assert_eq!(union, Ok(Value::Int(2)), "{server}: cross-slot as the server allows");
            assert_eq!(client.cmd(&["DEL", "s1", "s2"]).await, Ok(Value::Int(2)));
            // A pipeline across slots.
            let mut pipeline = client.pipeline();
            pipeline
                .cmd(&["SET", "p1", "1"])
                .cmd(&["INCR", "p2"])
                .cmd(&["MGET", "p1", "p2"]);
            let replies = pipeline.run().await.unwrap();
            assert_eq!(replies[2], Ok(Value::Array(vec![data("1"), data("1")])));
            // A transaction over keys of many slots, and WATCH.
            let mut transaction = client.transaction();
            transaction.cmd(&["SET", "t1", "1"]).cmd(&["SET", "t2", "2"]).cmd(&["MGET", "t1", "t2"]);
            let values = transaction.exec().await;
            assert_eq!(values, Ok(vec![ok(), ok(), Value::Array(vec![data("1"), data("2")])]));
            let watched = client
                .watch(&["t1", "t2"], |mut w| async move {
                    let n = w.cmd(&["GET", "t1"]).await?.as_int().unwrap_or(0);
                    w.queue(&["SET", "t2", &(n + 10).to_string()]);
                    Ok(w)
                })
                .await;
            assert_eq!(watched, Ok(vec![ok()]), "{server}");
            // A script over keys of two slots; a function library.
            let swap = Script::new(
                "local a = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], redis.call('GET', KEYS[2])) \
                 redis.call('SET', KEYS[2], a) return a",
            );
            assert_eq!(client.invoke(&swap, &["a", "b"], &[] as &[&str]).await, Ok(data("1")));
            assert_eq!(client.get("a").await.unwrap().as_deref(), Some(&b"2"[..]));
            let library = Library::new(
                "#!lua name=one\nredis.register_function('add', function(keys, args) \
                 return redis.call('INCRBY', keys[1], args[1]) end)",
            );
            assert_eq!(client.fcall(&library, "add", &["f"], &["5"]).await, Ok(Value::Int(5)));
            // Every key, by SCAN.
            let mut scan = client.scan(ScanOptions::default());
            let mut keys = Vec::new();
            while let Some(batch) = scan.next().await {
                keys.extend(batch.unwrap());
            }
            keys.sort();
            let expected = ["a", "b", "both", "c", "f", "p1", "p2", "t1", "t2"];
            assert_eq!(keys, expected.map(bytes::Bytes::from), "{server}");
            // The typed calls.
            let v1 = client.set_if_version("versioned", "one", 0).await.unwrap();
            assert_eq!(client.set_if_version("versioned", "two", v1).await.map(|_| ()), Ok(()));
            assert!(matches!(
                client.set_if_version("versioned", "three", v1).await,
                Err(Error::Conflict { .. })
            ));
        });
        assert_eq!(
            calls(&node, "mset"),
            1,
            "{server}: MSET went whole, not split by slot"
        );
        assert_eq!(calls(&node, "mget"), 3, "{server}: each MGET whole");

        // Pub/sub, classic and sharded.
        rt.block_on(async {
            let mut classic = client.subscribe(&["news"]).await.unwrap();
            let mut sharded = client.ssubscribe(&["orders"]).await.unwrap();
            client.cmd(&["PUBLISH", "news", "hello"]).await.unwrap();
            client.cmd(&["SPUBLISH", "orders", "o1"]).await.unwrap();
            for (subscription, channel, payload) in [(&mut classic, "news", "hello"), (&mut sharded, "orders", "o1")] {
                let event = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await;
                assert!(
                    matches!(&event, Ok(Some(Received::Message { channel: c, payload: p })) if &c[..] == channel.as_bytes() && &p[..] == payload.as_bytes()),
                    "{server}: {event:?}"
                );
            }
        });

        // The client cache: a hit, then another client's write invalidates.
        rt.block_on(async {
            client.set("cached", "v1").await.unwrap();
            assert_eq!(
                client.get("cached").await.unwrap().as_deref(),
                Some(&b"v1"[..])
            );
            let hits = client.stats().cache_hits;
            assert_eq!(
                client.get("cached").await.unwrap().as_deref(),
                Some(&b"v1"[..])
            );
            assert_eq!(
                client.stats().cache_hits,
                hits + 1,
                "{server}: answered by the cache"
            );
        });
        node.connect()
            .unwrap()
            .command(&[b"SET", b"cached", b"v2"])
            .unwrap();
        let seen = rt.block_on(async {
            for _ in 0..100 {
                if client.get("cached").await.unwrap().as_deref() == Some(&b"v2"[..]) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            false
        });
        assert!(seen, "{server}: the invalidation reached the cache");

        // The redis-rs adapter.
        rt.block_on(async {
            let mut con = client.redis_compat();
            let () = redis::cmd("MSET")
                .arg("r1")
                .arg("x")
                .arg("r2")
                .arg("y")
                .query_async(&mut con)
                .await
                .unwrap();
            let both: Vec<String> = redis::cmd("MGET")
                .arg("r1")
                .arg("r2")
                .query_async(&mut con)
                .await
                .unwrap();
            assert_eq!(both, ["x", "y"]);
            let (a, b): (String, String) = redis::pipe()
                .atomic()
                .cmd("GET")
                .arg("r1")
                .cmd("GET")
                .arg("r2")
                .query_async(&mut con)
                .await
                .unwrap();
            assert_eq!((a.as_str(), b.as_str()), ("x", "y"));
        });
        let stats = client.stats();
        assert_eq!(stats.moved_redirects + stats.ask_redirects, 0, "{server}");
        eprintln!("{server} (cluster support off): commands, pipelines, transactions, WATCH, scripts, functions, SCAN, pub/sub, the cache and the redis-rs adapter; {stats:?}");
    });
}

#[test]
fn one_server_rides_out_a_restart_a_freeze_and_a_write_pause() {
    each_server(|server| {
        // Every write on disk before it is answered: a kill -9 loses none.
        let mut node = RedisNode::start_standalone(
            server,
            &["--appendonly", "yes", "--appendfsync", "always"],
        )
        .expect("a standalone server");
        let rt = runtime();
        let client: Client = rt
            .block_on(patient(builder()).connect(&[node.addr()]))
            .expect("a client");
        // Keys of two slots in one transaction: one server takes them
        // together.
        let writer = CountingWriter::start(&rt, {
            let client = client.clone();
            move || {
                let client = client.clone();
                async move {
                    let mut transaction = client.transaction();
                    transaction
                        .cmd(&["INCR", "counter"])
                        .cmd(&["INCR", "shadow"]);
                    transaction.exec().await.map(drop)
                }
            }
        });
        let pause = || std::thread::sleep(Duration::from_millis(300));
        pause();
        node.kill();
        std::thread::sleep(Duration::from_millis(200));
        node.restart().expect("the server comes back on its port");
        pause();
        node.freeze().expect("frozen");
        std::thread::sleep(Duration::from_millis(300));
        node.thaw().expect("thawed");
        pause();
        let writes_before = writer.acknowledged();
        node.connect()
            .unwrap()
            .command(&[b"CLIENT", b"PAUSE", b"400", b"WRITE"])
            .unwrap();
        pause();
        pause();
        let tally = writer.stop(&rt);
        let read = |key: &str| -> u64 {
            let value = rt.block_on(client.get(key)).unwrap().unwrap();
            std::str::from_utf8(&value).unwrap().parse().unwrap()
        };
        let (counter, shadow) = (read("counter"), read("shadow"));
        eprintln!(
            "{server} (cluster support off): a kill -9 and a restart, a freeze, a write pause: \
             {} transactions acknowledged ({} after the pause began), {} of unknown \
             outcome, the counters at {counter} and {shadow}",
            tally.acknowledged,
            tally.acknowledged - writes_before,
            tally.unknown
        );
        assert!(tally.errors.is_empty(), "{server}: {:?}", tally.errors);
        assert_eq!(counter, shadow, "{server}: each transaction whole");
        assert!(
            tally.accounts_for(counter),
            "{server}: every acknowledged transaction landed once"
        );
        assert!(
            tally.acknowledged > writes_before,
            "{server}: writes went on after the pause"
        );
    });
}
