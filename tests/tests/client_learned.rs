//! Commands the table lacks, learned from the servers (docs/behaviour.md,
//! "Commands the table lacks"): a client taken not to know some of the
//! servers' commands (`Builder::learn_instead`: what a table without a
//! newer server's `HGETEX` does) asks `COMMAND INFO` once per name, routes
//! by the server's own key specs, flags and tips, asks `COMMAND GETKEYS`
//! where the specs cannot say, and lets the server's "unknown command"
//! reach the caller. Then the same through churn, with a writer of a
//! learned command, and a real module's commands (RediSearch on Redis 7).

use std::time::Duration;

use zaris_client::{Client, Error, Value};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::CountingWriter;
use zaris_tests::{each_server, patient, runtime, Frame};

/// Commands the clients below are taken not to know, of every shape: one
/// key (`GETEX`, `GETDEL`, `INCRBY`), a key count (`LMPOP`), specs that
/// cannot say (`SORT ... STORE`), a container (`OBJECT ENCODING`), a
/// command whose tips fan it out and sum the answers (`DBSIZE`).
const LEARNED: &[&str] = &[
    "getex", "getdel", "incrby", "lmpop", "sort", "object", "dbsize",
];

/// How many times the nodes were asked `COMMAND INFO`, in all.
fn command_info_calls(cluster: &Cluster) -> u64 {
    cluster
        .running()
        .into_iter()
        .map(|i| {
            let stats = cluster
                .conn(i)
                .unwrap()
                .command(&[b"INFO", b"commandstats"])
                .unwrap();
            let Frame::BulkString(text) = stats else {
                return 0;
            };
            String::from_utf8_lossy(&text)
                .lines()
                .find_map(|l| l.strip_prefix("cmdstat_command|info:calls="))
                .and_then(|rest| rest.split(',').next()?.parse().ok())
                .unwrap_or(0)
        })
        .sum()
}

fn data(value: &str) -> Value {
    Value::Data(value.to_owned().into())
}

#[test]
fn commands_the_table_lacks_are_learned_once_and_routed_to_their_owner() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| b.learn_instead(LEARNED));
        let before = command_info_calls(&cluster);
        rt.block_on(async {
            // Keys on every master; each learned command many times, from
            // many tasks at once: one question per name.
            let mut tasks = Vec::new();
            for task in 0..16 {
                let client = client.clone();
                tasks.push(tokio::spawn(async move {
                    for i in 0..20 {
                        let key = format!("{{k{task}:{i}}}:s");
                        client.cmd(&["SET", &key, "v"]).await.unwrap();
                        let got = client.cmd(&["GETEX", &key, "EX", "100"]).await;
                        assert_eq!(got, Ok(data("v")));
                        let n = client.cmd(&["INCRBY", &format!("{key}:n"), "2"]).await;
                        assert_eq!(n, Ok(Value::Int(2)));
                        let encoding = client.cmd(&["OBJECT", "ENCODING", &key]).await;
                        assert_eq!(encoding, Ok(data("embstr")));
                        assert_eq!(client.cmd(&["GETDEL", &key]).await, Ok(data("v")));
                        assert_eq!(client.cmd(&["GET", &key]).await, Ok(Value::Nil));
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
        });
        let stats = client.stats();
        assert_eq!(
            stats.moved_redirects, 0,
            "{server}: every command went to its owner"
        );
        // getex, incrby, object, object|encoding, getdel.
        let asked = command_info_calls(&cluster) - before;
        assert_eq!(asked, 5, "{server}: one question per name, for 16 tasks");
        eprintln!("{server}: 16 tasks x 20 rounds of 4 learned commands; COMMAND INFO asked {asked} times, 0 MOVED");

        rt.block_on(async {
            // A key count: `LMPOP numkeys key... LEFT`.
            client.cmd(&["RPUSH", "{l}b", "x", "y"]).await.unwrap();
            let popped = client.cmd(&["LMPOP", "2", "{l}a", "{l}b", "LEFT"]).await;
            assert_eq!(
                popped,
                Ok(Value::Array(vec![
                    data("{l}b"),
                    Value::Array(vec![data("x")])
                ]))
            );
            let cross = client.cmd(&["LMPOP", "2", "a", "b", "LEFT"]).await;
            assert!(
                matches!(cross, Err(Error::CrossSlot { .. })),
                "{server}: {cross:?}"
            );
            // Specs that cannot say (SORT's STORE is `incomplete`): the
            // server finds the keys.
            client
                .cmd(&["RPUSH", "{s}src", "3", "1", "2"])
                .await
                .unwrap();
            let stored = client.cmd(&["SORT", "{s}src", "STORE", "{s}dst"]).await;
            assert_eq!(stored, Ok(Value::Int(3)), "{server}");
            let sorted = client.cmd(&["LRANGE", "{s}dst", "0", "-1"]).await;
            assert_eq!(
                sorted,
                Ok(Value::Array(vec![data("1"), data("2"), data("3")]))
            );
            let sorted = client.cmd(&["SORT", "{s}src"]).await;
            assert_eq!(
                sorted,
                Ok(Value::Array(vec![data("1"), data("2"), data("3")]))
            );
            // Tips: DBSIZE is `request_policy:all_shards`,
            // `response_policy:agg_sum`: every master, summed.
            let mut total = 0;
            for i in cluster.running() {
                if cluster.is_master(i).unwrap() {
                    let size = cluster.conn(i).unwrap().command(&[b"DBSIZE"]).unwrap();
                    let Frame::Integer(size) = size else {
                        panic!("DBSIZE answered {size:?}")
                    };
                    total += size;
                }
            }
            assert!(total > 100, "{server}: keys on every master");
            assert_eq!(
                client.cmd(&["DBSIZE"]).await,
                Ok(Value::Int(total)),
                "{server}"
            );
            // A name no node knows: the server's own refusal.
            let unknown = client.cmd(&["NOSUCHCOMMAND", "k"]).await;
            assert!(
                matches!(&unknown, Err(Error::Server(m)) if m.contains("unknown command")),
                "{server}: {unknown:?}"
            );
            eprintln!("{server}: a name no node knows: {unknown:?}");
        });
        assert_eq!(client.stats().moved_redirects, 0, "{server}");

        // A pipeline on a client that has learned nothing: the commands
        // after the first unlearned one wait for it, in order.
        let fresh = cluster.client(&rt, |b| b.learn_instead(LEARNED));
        let results = rt.block_on(async {
            let mut pipeline = fresh.pipeline();
            pipeline
                .cmd(&["SET", "{p}k", "1"])
                .cmd(&["GETDEL", "{p}k"])
                .cmd(&["GET", "{p}k"])
                .cmd(&["SET", "{p}k", "2"])
                .cmd(&["INCRBY", "{p}k", "3"])
                .cmd(&["NOSUCHCOMMAND"]);
            assert_eq!(pipeline.len(), 6);
            pipeline.run().await.unwrap()
        });
        assert_eq!(
            &results[..5],
            &[
                Ok(Value::Status("OK".into())),
                Ok(data("1")),
                Ok(Value::Nil),
                Ok(Value::Status("OK".into())),
                Ok(Value::Int(5))
            ],
            "{server}"
        );
        assert!(
            matches!(&results[5], Err(Error::Server(m)) if m.contains("unknown command")),
            "{server}: {:?}",
            results[5]
        );
        // A transaction of learned commands, on their slot's owner.
        let values = rt.block_on(async {
            let mut transaction = fresh.transaction();
            transaction
                .cmd(&["SET", "{t}k", "5"])
                .cmd(&["INCRBY", "{t}k", "1"])
                .cmd(&["GETDEL", "{t}k"]);
            transaction.exec().await
        });
        assert_eq!(
            values,
            Ok(vec![Value::Status("OK".into()), Value::Int(6), data("6")]),
            "{server}"
        );
        assert_eq!(fresh.stats().moved_redirects, 0, "{server}");
    });
}

#[test]
fn a_learned_command_writes_through_churn() {
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, |b| {
            patient(b)
                .learn_instead(LEARNED)
                .durable_writes(1, Duration::from_secs(2))
        });
        let key = "{learned}:counter";
        let slot = slot_for_key(key.as_bytes());
        let writer = CountingWriter::start(&rt, {
            let client = client.clone();
            move || {
                let client = client.clone();
                async move { client.cmd(&["INCRBY", key, "1"]).await.map(drop) }
            }
        });
        // A client that learns during each event, its first call then.
        let learns_now = |cluster: &Cluster, event: &str| {
            let late = cluster.client(&rt, |b| patient(b).learn_instead(LEARNED));
            let got = rt.block_on(late.cmd(&["GETEX", key]));
            assert!(
                matches!(got, Ok(Value::Data(_))),
                "{server}: learning during {event}: {got:?}"
            );
        };
        let pause = || std::thread::sleep(Duration::from_millis(300));
        pause();
        let first = cluster.owner_index(slot).unwrap();
        let replica = cluster.replica_of(first).unwrap();
        cluster.failover(replica).expect("the failover");
        learns_now(&cluster, "a failover");
        pause();
        let other = (0..3)
            .find(|&i| i != first && cluster.is_master(i).unwrap())
            .unwrap();
        cluster.move_slot(slot, other).expect("moved away");
        cluster.move_slot(slot, replica).expect("and back");
        learns_now(&cluster, "a slot moved away and back");
        pause();
        cluster
            .pause_writes(replica, Duration::from_millis(400))
            .expect("a write pause");
        learns_now(&cluster, "a write pause");
        pause();
        cluster.freeze(other).expect("frozen");
        learns_now(&cluster, "a frozen master");
        cluster.thaw(other).expect("thawed");
        pause();
        let owner = cluster.owner_index(slot).unwrap();
        cluster.kill(owner);
        let promoted = cluster
            .wait_failover_of(owner, slot)
            .expect("a replica takes over");
        learns_now(&cluster, "a kill -9");
        cluster
            .restart(owner, slot)
            .expect("the killed node comes back");
        pause();
        let tally = writer.stop(&rt);
        let counter = rt.block_on(client.get(key)).unwrap().unwrap();
        let counter: u64 = std::str::from_utf8(&counter).unwrap().parse().unwrap();
        // A raw INCRBY is delivered at least once (docs/behaviour.md §6):
        // one in flight when its master was killed may have landed and be
        // sent again, once per retry after a lost connection.
        let resent = client.stats().retries_after_transport_failure;
        eprintln!(
            "{server}: INCRBY (learned) through a failover, a move away and back, a write pause, \
             a frozen master and a kill -9 (node {promoted} promoted): {} acknowledged, \
             {} of unknown outcome, {resent} retried after a lost connection, the counter at \
             {counter}",
            tally.acknowledged, tally.unknown
        );
        assert!(tally.errors.is_empty(), "{server}: {:?}", tally.errors);
        assert!(
            (tally.acknowledged..=tally.acknowledged + tally.unknown + resent).contains(&counter),
            "{server}: every acknowledged increment landed (durable writes), and none twice but \
             a write its node could have lost"
        );
    });
}

#[test]
fn a_modules_commands_go_to_their_owner() {
    const MODULE: &str = "/usr/lib/redis/modules/redisearch.so";
    let server = zaris_tests::server_binary();
    if !std::path::Path::new(MODULE).exists() {
        // `./run setup-test` installs Debian's redis-redisearch.
        assert!(
            std::env::var("ZARIS_REQUIRE_VALKEY").is_err(),
            "{MODULE} is missing: install redis-redisearch"
        );
        eprintln!("{MODULE} is missing: skipped");
        return;
    }
    let mut cluster = Cluster::start_with(&server, 3, 1, &["--loadmodule", MODULE])
        .expect("a cluster with RediSearch");
    let rt = runtime();
    let client = cluster.client(&rt, patient);
    let indexes = ["idx{a}", "idx{b}", "idx{c}", "idx{d}"];
    let owners: std::collections::BTreeSet<usize> = indexes
        .iter()
        .map(|i| cluster.owner_index(slot_for_key(i.as_bytes())).unwrap())
        .collect();
    assert!(owners.len() >= 2, "the indexes sit on more than one master");
    let search =
        |client: &Client, index: &str| rt.block_on(client.cmd(&["FT.SEARCH", index, "hello"]));
    rt.block_on(async {
        for index in indexes {
            let created = client
                .cmd(&["FT.CREATE", index, "SCHEMA", "title", "TEXT"])
                .await;
            assert_eq!(created, Ok(Value::Status("OK".into())), "{index}");
            let doc = format!("doc:{index}");
            let added = client
                .cmd(&[
                    "FT.ADD",
                    index,
                    &doc,
                    "1.0",
                    "FIELDS",
                    "title",
                    "hello world",
                ])
                .await;
            assert_eq!(added, Ok(Value::Status("OK".into())), "{index}");
        }
    });
    for index in indexes {
        let found = search(&client, index);
        let Ok(Value::Array(found)) = &found else {
            panic!("{index}: {found:?}");
        };
        assert_eq!(
            found[..2],
            [Value::Int(1), data(&format!("doc:{index}"))],
            "{index}"
        );
    }
    assert_eq!(
        client.stats().moved_redirects,
        0,
        "every module command went to its index's owner"
    );
    // A name the module does not have: its server says so.
    let unknown = rt.block_on(client.cmd(&["FT.NOSUCH", "idx{a}"]));
    assert!(
        matches!(&unknown, Err(Error::Server(m)) if m.contains("unknown command")),
        "{unknown:?}"
    );
    // A failover of an index's master: the replica had the index
    // (replicated), and the client follows.
    let slot = slot_for_key(b"idx{a}");
    let master = cluster.owner_index(slot).unwrap();
    cluster.wait_replicated().expect("replicated");
    cluster
        .failover(cluster.replica_of(master).unwrap())
        .expect("the failover");
    let found = search(&client, "idx{a}");
    assert!(
        matches!(&found, Ok(Value::Array(f)) if f.first() == Some(&Value::Int(1))),
        "after the failover: {found:?}"
    );
    let moved = client.stats().moved_redirects;
    eprintln!("RediSearch on {server}: FT.CREATE, FT.ADD, FT.SEARCH on 4 indexes over {} masters, 0 MOVED; after a failover: {moved} MOVED, the index found", owners.len());
    // A kill -9 of the master: the promoted replica answers.
    let master = cluster.owner_index(slot).unwrap();
    cluster.kill(master);
    cluster
        .wait_failover_of(master, slot)
        .expect("a replica takes over");
    let found = search(&client, "idx{a}");
    assert!(
        matches!(&found, Ok(Value::Array(f)) if f.first() == Some(&Value::Int(1))),
        "after a kill -9: {found:?}"
    );
}
