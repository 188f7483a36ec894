//! `Client::cmd`, pipelines and transactions against real clusters (Redis
//! 7, and Valkey 8 where it is installed), 3 masters with a replica each.
//!
//! - Every command family goes straight to the owner of its keys: no
//!   `MOVED`, no `ASK`, no refresh in steady state, and the data sits on
//!   the node `CLUSTER SHARDS` names.
//! - Bad command lines are typed errors and send nothing.
//! - A client with no deadline and an endless attempt time-out works.
//! - A 1,000-command pipeline answers in order; again while a slot
//!   migrates (`ASK` and `TRYAGAIN` met) and while a master fails over,
//!   with every acknowledged write read back.
//! - `WATCH` counters incremented by many tasks end exact; a transaction
//!   whose slot moved is retried whole and applied once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zaris_client::{Client, CommandError, Error, KvStatus, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::{eventually, one_cluster_at_a_time};
use zaris_tests::{builder, runtime};
use zaris_tests::{each_server, Frame};

fn data(s: &str) -> Value {
    Value::Data(s.as_bytes().to_vec().into())
}

fn status(s: &str) -> Value {
    Value::Status(s.as_bytes().to_vec().into())
}

fn strings(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| data(s)).collect())
}

/// `client.cmd(args)`, which must succeed.
async fn ok(client: &Client, args: &[&str]) -> Value {
    match client.cmd(args).await {
        Ok(value) => value,
        Err(e) => panic!("{args:?}: {e}"),
    }
}

#[test]
fn every_command_family_goes_to_the_owner_and_bad_lines_send_nothing() {
    let _one = one_cluster_at_a_time();
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = rt
            .block_on(builder().connect(&[&cluster.addr(0)]))
            .expect("connect");
        rt.block_on(families(&client, &cluster, server));
        let stats = client.stats();
        assert_eq!(stats.moved_redirects, 0, "{server}: {stats:?}");
        assert_eq!(stats.ask_redirects, 0, "{server}: {stats:?}");
        assert_eq!(stats.refreshes_started, 0, "{server}: {stats:?}");
        assert!(stats.retries_by_status.is_empty(), "{server}: {stats:?}");

        // The data sits where the map says: each key read on its owner
        // directly (any other node would answer MOVED).
        for key in ["s:1", "h:1", "l:1", "z:1", "{st}:s", "e:1", "{u1}:a"] {
            let owner = cluster
                .owner_by_shards(cluster.keyslot(key.as_bytes()).unwrap())
                .unwrap();
            assert_eq!(client.owner_of(key).as_deref(), Some(owner.as_str()));
            let i = cluster.index_of(&owner).unwrap();
            let kind = cluster
                .conn(i)
                .unwrap()
                .command(&[b"TYPE", key.as_bytes()])
                .unwrap();
            assert_ne!(
                kind,
                zaris_tests::simple("none"),
                "{server}: {key} on {owner}"
            );
        }

        rt.block_on(bad_lines(&client, server));

        // No deadline and an attempt time-out past any clock: a request's
        // time-out is then far off, not an overflow.
        let unbounded = rt
            .block_on(
                builder()
                    .request_timeout(None)
                    .attempt_timeout(Duration::MAX)
                    .connect(&[&cluster.addr(0)]),
            )
            .expect("connect");
        rt.block_on(async {
            unbounded.set("unbounded", "yes").await.unwrap();
            assert_eq!(
                unbounded.get("unbounded").await.unwrap().as_deref(),
                Some(&b"yes"[..]),
                "{server}"
            );
        });
    });
}

/// Strings, hashes, lists, sets, sorted sets, streams, scripts, functions,
/// expiry, `OBJECT`, `TYPE`, and the keyless commands.
async fn families(client: &Client, cluster: &Cluster, server: &str) {
    // Strings, and the multi-key commands split by slot.
    assert!(ok(client, &["SET", "s:1", "hello"]).await.is_ok());
    assert_eq!(
        ok(client, &["APPEND", "s:1", " world"]).await,
        Value::Int(11)
    );
    assert_eq!(
        ok(client, &["GETRANGE", "s:1", "0", "4"]).await,
        data("hello")
    );
    assert_eq!(ok(client, &["INCRBY", "n:1", "5"]).await, Value::Int(5));
    assert!(ok(client, &["MSET", "{u1}:a", "1", "{u1}:b", "2"])
        .await
        .is_ok());
    assert!(ok(client, &["MSET", "x", "1", "y", "2", "z", "3"])
        .await
        .is_ok());
    assert_ne!(slot_for_key(b"x"), slot_for_key(b"y"), "MSET really split");
    assert_eq!(
        ok(client, &["MGET", "z", "{u1}:b", "x", "missing", "y"]).await,
        Value::Array(vec![data("3"), data("2"), data("1"), Value::Nil, data("2")])
    );
    assert_eq!(
        ok(client, &["EXISTS", "x", "y", "x", "missing"]).await,
        Value::Int(3)
    );
    assert_eq!(ok(client, &["TOUCH", "x", "y", "z"]).await, Value::Int(3));
    assert_eq!(
        ok(client, &["DEL", "x", "y", "missing"]).await,
        Value::Int(2)
    );
    assert_eq!(ok(client, &["UNLINK", "z", "x"]).await, Value::Int(1));

    // Hashes.
    assert_eq!(
        ok(client, &["HSET", "h:1", "f1", "v1", "f2", "v2"]).await,
        Value::Int(2)
    );
    assert_eq!(ok(client, &["HGET", "h:1", "f1"]).await, data("v1"));
    assert_eq!(
        ok(client, &["HINCRBY", "h:1", "n", "3"]).await,
        Value::Int(3)
    );
    assert_eq!(ok(client, &["HDEL", "h:1", "f2"]).await, Value::Int(1));
    let mut all = ok(client, &["HGETALL", "h:1"]).await.into_array();
    assert_eq!(all.len(), 4);
    all.sort_by(|a, b| a.as_bytes().cmp(&b.as_bytes()));
    assert_eq!(Value::Array(all), strings(&["3", "f1", "n", "v1"]));

    // Lists.
    assert_eq!(
        ok(client, &["RPUSH", "l:1", "a", "b", "c"]).await,
        Value::Int(3)
    );
    assert_eq!(ok(client, &["LPUSH", "l:1", "z"]).await, Value::Int(4));
    assert_eq!(
        ok(client, &["LRANGE", "l:1", "0", "-1"]).await,
        strings(&["z", "a", "b", "c"])
    );
    assert_eq!(ok(client, &["LPOP", "l:1"]).await, data("z"));
    assert_eq!(ok(client, &["RPUSH", "{l}:src", "q"]).await, Value::Int(1));
    assert_eq!(
        ok(client, &["LMOVE", "{l}:src", "{l}:dst", "LEFT", "RIGHT"]).await,
        data("q")
    );
    assert_eq!(ok(client, &["LLEN", "{l}:dst"]).await, Value::Int(1));

    // Sets.
    assert_eq!(
        ok(client, &["SADD", "{s}:1", "a", "b", "c"]).await,
        Value::Int(3)
    );
    assert_eq!(
        ok(client, &["SADD", "{s}:2", "b", "c", "d"]).await,
        Value::Int(3)
    );
    assert_eq!(
        ok(client, &["SINTERSTORE", "{s}:3", "{s}:1", "{s}:2"]).await,
        Value::Int(2)
    );
    let mut members = ok(client, &["SMEMBERS", "{s}:3"]).await.into_array();
    members.sort_by(|a, b| a.as_bytes().cmp(&b.as_bytes()));
    assert_eq!(Value::Array(members), strings(&["b", "c"]));

    // Sorted sets.
    assert_eq!(
        ok(client, &["ZADD", "z:1", "1", "a", "2", "b"]).await,
        Value::Int(2)
    );
    assert_eq!(ok(client, &["ZINCRBY", "z:1", "5", "a"]).await, data("6"));
    assert_eq!(
        ok(client, &["ZRANGE", "z:1", "0", "-1", "WITHSCORES"]).await,
        strings(&["b", "2", "a", "6"])
    );
    ok(client, &["ZADD", "{z}:1", "1", "a"]).await;
    ok(client, &["ZADD", "{z}:2", "2", "a", "3", "c"]).await;
    assert_eq!(
        ok(client, &["ZUNIONSTORE", "{z}:u", "2", "{z}:1", "{z}:2"]).await,
        Value::Int(2)
    );
    assert_eq!(ok(client, &["ZSCORE", "{z}:u", "a"]).await, data("3"));

    // Streams: a consumer group on a tagged stream.
    let id = ok(client, &["XADD", "{st}:s", "*", "f", "v"]).await;
    let id = String::from_utf8(id.as_bytes().expect("an id").to_vec()).unwrap();
    assert!(ok(client, &["XGROUP", "CREATE", "{st}:s", "g", "0"])
        .await
        .is_ok());
    assert_eq!(
        ok(
            client,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "COUNT",
                "10",
                "STREAMS",
                "{st}:s",
                ">"
            ]
        )
        .await,
        Value::Array(vec![Value::Array(vec![
            data("{st}:s"),
            Value::Array(vec![Value::Array(vec![data(&id), strings(&["f", "v"])])]),
        ])])
    );
    assert_eq!(
        ok(client, &["XACK", "{st}:s", "g", &id]).await,
        Value::Int(1)
    );
    assert_eq!(ok(client, &["XLEN", "{st}:s"]).await, Value::Int(1));

    // Scripts: EVAL by its keys; SCRIPT LOAD on every master, then EVALSHA.
    assert_eq!(
        ok(
            client,
            &[
                "EVAL",
                "return {KEYS[1], KEYS[2], ARGV[1]}",
                "2",
                "{e}:a",
                "{e}:b",
                "x"
            ]
        )
        .await,
        strings(&["{e}:a", "{e}:b", "x"])
    );
    assert!(ok(
        client,
        &[
            "EVAL",
            "return redis.call('SET', KEYS[1], ARGV[1])",
            "1",
            "e:1",
            "v"
        ]
    )
    .await
    .is_ok());
    let sha = ok(
        client,
        &["SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])"],
    )
    .await;
    let sha = String::from_utf8(sha.as_bytes().expect("a sha").to_vec()).unwrap();
    assert_eq!(sha.len(), 40);
    for master in masters(cluster) {
        let exists = cluster
            .conn(master)
            .unwrap()
            .command(&[b"SCRIPT", b"EXISTS", sha.as_bytes()])
            .unwrap();
        assert_eq!(
            exists,
            Frame::Array(vec![Frame::Integer(1)]),
            "{server}: loaded on {master}"
        );
    }
    assert_eq!(ok(client, &["EVALSHA", &sha, "1", "e:1"]).await, data("v"));
    assert_eq!(
        ok(
            client,
            &[
                "SCRIPT",
                "EXISTS",
                &sha,
                "0000000000000000000000000000000000000000"
            ]
        )
        .await,
        Value::Array(vec![Value::Int(1), Value::Int(0)])
    );

    // Functions (Redis 7 and Valkey 8): FUNCTION LOAD on every master, FCALL by key.
    let library = "#!lua name=zaris\nredis.register_function('zget', function(keys, args) return redis.call('GET', keys[1]) end)";
    assert_eq!(
        ok(client, &["FUNCTION", "LOAD", "REPLACE", library]).await,
        data("zaris")
    );
    assert_eq!(ok(client, &["FCALL", "zget", "1", "e:1"]).await, data("v"));

    // Expiry.
    assert_eq!(ok(client, &["EXPIRE", "s:1", "100"]).await, Value::Int(1));
    let ttl = ok(client, &["TTL", "s:1"]).await.as_int().unwrap();
    assert!((95..=100).contains(&ttl), "{ttl}");
    assert_eq!(ok(client, &["PERSIST", "s:1"]).await, Value::Int(1));
    assert_eq!(ok(client, &["TTL", "s:1"]).await, Value::Int(-1));

    // OBJECT, TYPE, MEMORY USAGE.
    assert_eq!(
        ok(client, &["OBJECT", "ENCODING", "n:1"]).await,
        data("int")
    );
    assert_eq!(
        ok(client, &["OBJECT", "ENCODING", "h:1"]).await,
        data("listpack")
    );
    for (key, kind) in [
        ("s:1", "string"),
        ("h:1", "hash"),
        ("l:1", "list"),
        ("{s}:1", "set"),
        ("z:1", "zset"),
        ("{st}:s", "stream"),
    ] {
        assert_eq!(ok(client, &["TYPE", key]).await, status(kind), "{key}");
    }
    assert!(
        ok(client, &["MEMORY", "USAGE", "h:1"])
            .await
            .as_int()
            .unwrap()
            > 0
    );

    // Keyless: any node; every master, combined as the servers' tips say.
    assert_eq!(ok(client, &["PING"]).await, status("PONG"));
    assert_eq!(ok(client, &["ECHO", "hi"]).await, data("hi"));
    let per_node: Vec<i64> = masters(cluster)
        .into_iter()
        .map(
            |m| match cluster.conn(m).unwrap().command(&[b"DBSIZE"]).unwrap() {
                Frame::Integer(n) => n,
                other => panic!("DBSIZE: {other:?}"),
            },
        )
        .collect();
    assert_eq!(
        ok(client, &["DBSIZE"]).await,
        Value::Int(per_node.iter().sum()),
        "DBSIZE sums the masters' {per_node:?}"
    );
    let each = client.cmd_each_master(&["DBSIZE"]).await.unwrap();
    assert_eq!(each.len(), 3);
    let mut sizes: Vec<i64> = each
        .iter()
        .map(|(_, v)| v.as_ref().unwrap().as_int().unwrap())
        .collect();
    let mut wanted = per_node.clone();
    sizes.sort_unstable();
    wanted.sort_unstable();
    assert_eq!(sizes, wanted, "each master's own answer");
    let mut keys: Vec<Vec<u8>> = ok(client, &["KEYS", "{*"])
        .await
        .into_array()
        .iter()
        .map(|k| k.as_bytes().unwrap().to_vec())
        .collect();
    keys.sort();
    let mut wanted: Vec<Vec<u8>> = [
        "{l}:dst", "{s}:1", "{s}:2", "{s}:3", "{st}:s", "{u1}:a", "{u1}:b", "{z}:1", "{z}:2",
        "{z}:u",
    ]
    .iter()
    .map(|k| k.as_bytes().to_vec())
    .collect();
    wanted.sort();
    assert_eq!(keys, wanted, "{server}: KEYS gathers every master's");
    assert!(matches!(ok(client, &["RANDOMKEY"]).await, Value::Data(_)));
    assert!(matches!(
        client.cmd_each_master(&["GET", "s:1"]).await,
        Err(Error::Unsupported { .. })
    ));
}

/// The masters' indices.
fn masters(cluster: &Cluster) -> Vec<usize> {
    cluster
        .running()
        .into_iter()
        .filter(|&i| cluster.is_master(i).unwrap())
        .collect()
}

/// Lines the servers would refuse: typed errors, and no attempt made; a
/// name the table lacks, the server's own refusal.
async fn bad_lines(client: &Client, server: &str) {
    let before = client.stats().attempts;
    let command = |e: Result<Value, Error>| match e {
        Err(Error::Command { error, .. }) => error,
        other => panic!("{server}: a command error, got {other:?}"),
    };
    let none: [&str; 0] = [];
    assert_eq!(command(client.cmd(&none).await), CommandError::Empty);
    assert_eq!(
        command(client.cmd(&["GET"]).await),
        CommandError::WrongArity { arity: 2, given: 1 }
    );
    assert_eq!(
        command(client.cmd(&["MSET", "a"]).await),
        CommandError::WrongArity {
            arity: -3,
            given: 2
        }
    );
    assert_eq!(
        command(client.cmd(&["EVAL", "return 1", "5", "k"]).await),
        CommandError::InvalidArguments,
        "numkeys larger than the arguments"
    );
    assert_eq!(
        command(client.cmd(&["EVAL", "return 1", "two", "k"]).await),
        CommandError::InvalidArguments,
        "numkeys not a number"
    );
    assert_eq!(
        client.cmd(&["EVAL", "return 1", "2", "a", "b"]).await,
        Err(Error::CrossSlot {
            first: slot_for_key(b"a"),
            second: slot_for_key(b"b")
        })
    );
    assert_eq!(
        client.cmd(&["SUNIONSTORE", "a", "b"]).await,
        Err(Error::CrossSlot {
            first: slot_for_key(b"a"),
            second: slot_for_key(b"b")
        })
    );
    for refused in [
        &["SUBSCRIBE", "ch"][..],
        &["MULTI"],
        &["SELECT", "1"],
        &["SCAN", "0"],
    ] {
        assert!(
            matches!(client.cmd(refused).await, Err(Error::Unsupported { .. })),
            "{server}: {refused:?}"
        );
    }
    let mut tx = client.transaction();
    tx.cmd(&["SET", "a", "1"]).cmd(&["SET", "b", "1"]);
    assert_eq!(
        tx.exec().await,
        Err(Error::CrossSlot {
            first: slot_for_key(b"a"),
            second: slot_for_key(b"b")
        }),
        "a cross-slot MULTI"
    );
    assert_eq!(
        client.stats().attempts,
        before,
        "{server}: nothing was sent"
    );
    // A name the table lacks is the server's to judge (asked with `COMMAND
    // INFO` first): a name, or a subcommand, no node knows gets its own
    // refusal.
    let refusal = |e: Result<Value, Error>| match e {
        Err(Error::Server(m)) => m,
        other => panic!("{server}: the server's refusal, got {other:?}"),
    };
    let unknown = refusal(client.cmd(&["NOSUCH", "k"]).await);
    assert!(
        unknown.contains("unknown command 'NOSUCH'"),
        "{server}: {unknown}"
    );
    let unknown = refusal(client.cmd(&["OBJECT", "NOSUCH", "k"]).await);
    assert!(
        unknown.contains("unknown subcommand"),
        "{server}: {unknown}"
    );

    // Any bytes are a key, a 1 MB one included.
    let big: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let args: [&[u8]; 3] = [b"SET", &big, b"large"];
    assert!(client.cmd(&args).await.unwrap().is_ok());
    let args: [&[u8]; 2] = [b"GET", &big];
    assert_eq!(client.cmd(&args).await.unwrap(), data("large"));
    assert_eq!(
        client.owner_of(&big),
        client.owner_of(slot_key(slot_for_key(&big)))
    );
    let args: [&[u8]; 2] = [b"DEL", &big];
    assert_eq!(client.cmd(&args).await.unwrap(), Value::Int(1));
}

/// A short key in `slot`: the first tag `{k<n>}` that hashes there.
fn slot_key(slot: u16) -> Vec<u8> {
    (0u32..)
        .map(|i| format!("{{k{i}}}").into_bytes())
        .find(|k| slot_for_key(k) == slot)
        .unwrap()
}

/// What a pipeline of mixed commands wrote: key → the value expected now.
type Expected = HashMap<String, String>;

/// 1,000 mixed commands over `keys`: `SET`, `GET`, `HSET`, `INCR`, `MGET`
/// of a tagged pair; the reply each must give, given what came before.
fn mixed_pipeline(
    client: &Client,
    keys: &[String],
    round: usize,
    expected: &mut Expected,
) -> (zaris_client::Pipeline, Vec<Value>) {
    let mut pipeline = client.pipeline();
    let mut replies = Vec::new();
    let mut rng = (round as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for i in 0..1000 {
        let key = &keys[(next() % keys.len() as u64) as usize];
        match i % 5 {
            0 | 3 => {
                let value = format!("r{round}:{i}");
                pipeline.cmd(&["SET", key, &value]);
                replies.push(status("OK"));
                expected.insert(key.clone(), value);
            }
            1 => {
                pipeline.cmd(&["GET", key]);
                replies.push(expected.get(key).map_or(Value::Nil, |v| data(v)));
            }
            2 => {
                let hash = format!("{key}:h");
                pipeline.cmd(&["HSET", &hash, "f", &i.to_string()]);
                let new = !expected.contains_key(&hash);
                replies.push(Value::Int(i64::from(new)));
                expected.insert(hash, i.to_string());
            }
            _ => {
                let counter = format!("{key}:n");
                let n: i64 = expected.get(&counter).map_or(0, |v| v.parse().unwrap()) + 1;
                pipeline.cmd(&["INCR", &counter]);
                replies.push(Value::Int(n));
                expected.insert(counter, n.to_string());
            }
        }
    }
    (pipeline, replies)
}

#[test]
fn pipelines_and_transactions_hold_through_migration_and_failover() {
    let _one = one_cluster_at_a_time();
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = rt
            .block_on(builder().connect(&[&cluster.addr(0)]))
            .expect("connect");
        let keys: Vec<String> = (0..200).map(|i| format!("p:{i}")).collect();
        let mut expected = Expected::new();

        // Steady state: in order, one write per node, no redirects.
        let (mut pipeline, wanted) = mixed_pipeline(&client, &keys, 0, &mut expected);
        assert_eq!(pipeline.len(), 1000);
        let replies: Vec<Value> = rt
            .block_on(pipeline.run())
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(replies, wanted, "{server}: every reply, in order");
        assert!(pipeline.is_empty());
        assert_eq!(client.stats().moved_redirects, 0);
        assert_eq!(client.stats().attempts, 1000, "one attempt per command");
        read_back(&rt, &client, &expected, server);

        // A bad command in a pipeline fails alone.
        let mut pipeline = client.pipeline();
        pipeline
            .cmd(&["SET", "{q}a", "1"])
            .cmd(&["NOSUCH"])
            .cmd(&["EVAL", "return 1", "2", "a", "b"])
            .cmd(&["MGET", "{q}a", "x", "{q}b"]);
        let results = rt.block_on(pipeline.run()).unwrap();
        assert!(results[0].as_ref().unwrap().is_ok());
        assert!(
            matches!(&results[1], Err(Error::Server(m)) if m.contains("unknown command")),
            "{server}: {:?}",
            results[1]
        );
        assert!(matches!(results[2], Err(Error::CrossSlot { .. })));
        assert_eq!(
            results[3],
            Ok(Value::Array(vec![data("1"), Value::Nil, Value::Nil])),
            "split by slot"
        );

        pipeline_while_a_slot_migrates(&cluster, &rt, &client, &mut expected, server);
        transaction_retried_whole_when_its_slot_moves(&cluster, &rt, &client, server);
        watch_counter_ends_exact(&rt, &client, server);
        pipelines_through_failover(&mut cluster, &rt, &client, &keys, &mut expected, server);
    });
}

/// Every key of `expected` reads back its value.
fn read_back(rt: &tokio::runtime::Runtime, client: &Client, expected: &Expected, server: &str) {
    let mut pipeline = client.pipeline();
    let mut order = Vec::new();
    for (key, value) in expected {
        if key.ends_with(":h") {
            pipeline.cmd(&["HGET", key, "f"]);
        } else {
            pipeline.cmd(&["GET", key]);
        }
        order.push(value);
    }
    let results = rt.block_on(pipeline.run()).unwrap();
    for (result, value) in results.into_iter().zip(order) {
        assert_eq!(
            result.unwrap(),
            data(value),
            "{server}: an acknowledged write reads back"
        );
    }
}

/// The slot of `{mig}` moves key by key while pipelines run over it: keys
/// already moved meet `ASK`, a multi-key command over keys on both sides
/// meets `TRYAGAIN`, and each is retried alone.
fn pipeline_while_a_slot_migrates(
    cluster: &Cluster,
    rt: &tokio::runtime::Runtime,
    client: &Client,
    expected: &mut Expected,
    server: &str,
) {
    let slot = slot_for_key(b"{mig}");
    let tagged: Vec<String> = (0..100).map(|i| format!("{{mig}}:{i}")).collect();
    let mut seed = client.pipeline();
    for (i, key) in tagged.iter().enumerate() {
        seed.cmd(&["SET", key, &format!("m{i}")]);
        expected.insert(key.clone(), format!("m{i}"));
    }
    assert!(rt
        .block_on(seed.run())
        .unwrap()
        .iter()
        .all(|r| r.as_ref().unwrap().is_ok()));

    let from = cluster.owner_index(slot).unwrap();
    let to = masters(cluster).into_iter().find(|&i| i != from).unwrap();
    cluster.begin_migration(slot, from, to).unwrap();
    let tagged_bytes: Vec<Vec<u8>> = tagged.iter().map(|k| k.clone().into_bytes()).collect();
    cluster.migrate_keys(from, to, &tagged_bytes[..50]).unwrap();
    let before = client.stats();

    // Reads of moved and unmoved keys, writes, and an MGET over both sides.
    let mut pipeline = client.pipeline();
    let mut wanted = Vec::new();
    for (i, key) in tagged.iter().enumerate() {
        if i % 2 == 0 {
            pipeline.cmd(&["GET", key]);
            wanted.push(data(&format!("m{i}")));
        } else {
            pipeline.cmd(&["SET", key, &format!("w{i}")]);
            wanted.push(status("OK"));
            expected.insert(key.clone(), format!("w{i}"));
        }
    }
    pipeline.cmd(&["MGET", &tagged[0], &tagged[98]]);
    wanted.push(strings(&["m0", "m98"]));
    let running = rt.spawn({
        let mut pipeline = std::mem::replace(&mut pipeline, client.pipeline());
        async move { pipeline.run().await }
    });
    // The MGET waits on TRYAGAIN until the rest of the slot has moved.
    eventually(
        &format!("{server}: the MGET met TRYAGAIN"),
        Duration::from_secs(10),
        || client.stats().retries(KvStatus::Migrating) > before.retries(KvStatus::Migrating),
    );
    let left = cluster.keys_in_slot(from, slot).unwrap();
    cluster.migrate_keys(from, to, &left).unwrap();
    cluster.finish_migration(slot, to).unwrap();
    let replies: Vec<Value> = rt
        .block_on(running)
        .unwrap()
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        replies, wanted,
        "{server}: every reply, in order, through the migration"
    );
    let after = client.stats();
    assert!(
        after.ask_redirects > before.ask_redirects,
        "{server}: ASK met: {after:?}"
    );
    assert!(
        after.retries(KvStatus::Migrating) > before.retries(KvStatus::Migrating),
        "{server}: TRYAGAIN met: {after:?}"
    );
    cluster.wait_healthy().unwrap();
    read_back(rt, client, expected, server);
}

/// A transaction for a slot that moved behind the client's back: `EXEC`
/// aborts on the old owner (`MOVED` queued), the block runs again on the
/// new one, and is applied exactly once.
fn transaction_retried_whole_when_its_slot_moves(
    cluster: &Cluster,
    rt: &tokio::runtime::Runtime,
    client: &Client,
    server: &str,
) {
    let slot = slot_for_key(b"{tx}");
    rt.block_on(ok(client, &["SET", "{tx}:n", "10"]));
    let from = cluster.owner_index(slot).unwrap();
    let to = masters(cluster).into_iter().find(|&i| i != from).unwrap();
    cluster.move_slot(slot, to).unwrap();
    let before = client.stats();
    let mut tx = client.transaction();
    tx.cmd(&["INCR", "{tx}:n"])
        .cmd(&["RPUSH", "{tx}:log", "once"]);
    let values = rt.block_on(tx.exec()).unwrap();
    assert_eq!(values, vec![Value::Int(11), Value::Int(1)], "{server}");
    let after = client.stats();
    assert!(
        after.retries(KvStatus::Moved) > before.retries(KvStatus::Moved),
        "{server}: {after:?}"
    );
    assert_eq!(
        rt.block_on(ok(client, &["GET", "{tx}:n"])),
        data("11"),
        "applied once"
    );
    assert_eq!(
        rt.block_on(ok(client, &["LLEN", "{tx}:log"])),
        Value::Int(1),
        "applied once"
    );
    assert_eq!(client.owner_of(b"{tx}"), Some(cluster.addr(to)));
    cluster.wait_healthy().unwrap();
}

/// Many tasks increment one counter with `WATCH`/`MULTI`/`EXEC`: it ends
/// exact, whatever the conflicts.
fn watch_counter_ends_exact(rt: &tokio::runtime::Runtime, client: &Client, server: &str) {
    const TASKS: usize = 16;
    const EACH: usize = 20;
    rt.block_on(ok(client, &["DEL", "{c}:n"]));
    let before = client.stats();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let client = client.clone();
            rt.spawn(async move {
                for _ in 0..EACH {
                    client
                        .watch(&["{c}:n"], |mut w| async move {
                            let n = w.cmd(&["GET", "{c}:n"]).await?.as_int().unwrap_or(0);
                            w.queue(&["SET", "{c}:n", &(n + 1).to_string()]);
                            Ok(w)
                        })
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        rt.block_on(task).unwrap();
    }
    assert_eq!(
        rt.block_on(ok(client, &["GET", "{c}:n"])),
        data(&(TASKS * EACH).to_string()),
        "{server}: no increment lost, none applied twice"
    );
    let conflicts = client.stats().watch_conflicts - before.watch_conflicts;
    eprintln!(
        "{server}: {conflicts} watch conflicts for {} increments",
        TASKS * EACH
    );
}

/// Pipelines run back to back while a replica takes over its master: every
/// reply comes, and every acknowledged write reads back.
fn pipelines_through_failover(
    cluster: &mut Cluster,
    rt: &tokio::runtime::Runtime,
    client: &Client,
    keys: &[String],
    expected: &mut Expected,
    server: &str,
) {
    let slot = slot_for_key(keys[0].as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    let shared = Arc::new(Mutex::new(std::mem::take(expected)));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rounds_done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runner = rt.spawn({
        let client = client.clone();
        let keys = keys.to_vec();
        let shared = shared.clone();
        let (stop, rounds_done) = (stop.clone(), rounds_done.clone());
        async move {
            let mut round = 1;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || round < 3 {
                let mut expected = shared.lock().unwrap().clone();
                let (mut pipeline, wanted) = mixed_pipeline(&client, &keys, round, &mut expected);
                let replies = pipeline.run().await.unwrap();
                for (i, (reply, want)) in replies.into_iter().zip(wanted).enumerate() {
                    assert_eq!(reply.as_ref(), Ok(&want), "round {round}, command {i}");
                }
                *shared.lock().unwrap() = expected;
                rounds_done.store(round, std::sync::atomic::Ordering::Relaxed);
                round += 1;
            }
            round
        }
    });
    // The failover begins with pipelines under way.
    eventually(
        &format!("{server}: a pipeline ran"),
        Duration::from_secs(10),
        || rounds_done.load(std::sync::atomic::Ordering::Relaxed) >= 1,
    );
    cluster.failover(replica).unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = rt.block_on(runner).unwrap();
    assert!(rounds >= 3, "{server}: pipelines ran through the failover");
    // The last pipeline may have ended before the client's map named the
    // new master (a refresh can meet a node that has not heard yet); a
    // read of the key's slot settles it, with a MOVED at most.
    eventually(
        &format!("{server}: the client routes to the new master"),
        Duration::from_secs(10),
        || {
            rt.block_on(client.get(&keys[0])).unwrap();
            client.owner_of(keys[0].as_bytes()) == Some(cluster.addr(replica))
        },
    );
    *expected = std::mem::take(&mut *shared.lock().unwrap());
    read_back(rt, client, expected, server);
}
