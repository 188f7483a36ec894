//! redis-rs code on Zaris, one line changed (`client.redis_compat()`
//! where it had `get_async_connection()`): a program written as a
//! redis-rs user writes it (typed `AsyncCommands`, `FromRedisValue` into
//! tuples, maps and options, pipelines plain and atomic, a `Script`, a
//! `scan_match`) gives the same transcript on Zaris as on redis-rs's own
//! `ClusterConnection`; and a workload through the same API rides out a
//! manual failover, a slot moved away and back, a `kill -9` and a frozen
//! master with no error, every acknowledged increment in place.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{AsyncCommands, AsyncTypedCommands, ErrorKind, RedisResult, ServerErrorKind};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::eventually;
use zaris_tests::{each_server, patient, runtime};

/// A redis-rs user's program on `con`, its keys under `p`: what each call
/// answered, in order (an error as its kind and code, whose words differ
/// between clients).
async fn program<C: ConnectionLike + Send + Sync>(con: &mut C, p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |what: &str, answer: String| out.push(format!("{what}: {answer}"));
    fn shown<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
        match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error {:?} {:?}", e.kind(), e.code()),
        }
    }
    let k = |name: &str| format!("{p}:{name}");

    // Strings and counters.
    note(
        "set",
        shown(AsyncCommands::set::<_, _, ()>(con, k("s"), "v1").await),
    );
    note(
        "get",
        shown(AsyncCommands::get::<_, Option<String>>(con, k("s")).await),
    );
    note(
        "get missing",
        shown(AsyncCommands::get::<_, Option<String>>(con, k("nothing")).await),
    );
    note(
        "incr",
        shown(AsyncCommands::incr::<_, _, i64>(con, k("n"), 5).await),
    );
    note(
        "append",
        shown(AsyncCommands::append::<_, _, i64>(con, k("s"), "+").await),
    );
    note(
        "strlen",
        shown(AsyncTypedCommands::strlen(con, k("s")).await),
    );
    note(
        "getset",
        shown(AsyncCommands::getset::<_, _, String>(con, k("s"), "v2").await),
    );
    // Expiry.
    note(
        "set_ex",
        shown(AsyncCommands::set_ex::<_, _, ()>(con, k("e"), "x", 100).await),
    );
    let ttl = AsyncCommands::ttl::<_, i64>(con, k("e")).await;
    note("ttl in range", shown(ttl.map(|t| (90..=100).contains(&t))));
    note(
        "persist",
        shown(AsyncCommands::persist::<_, bool>(con, k("e")).await),
    );
    note(
        "ttl after persist",
        shown(AsyncCommands::ttl::<_, i64>(con, k("e")).await),
    );
    note(
        "pexpire",
        shown(AsyncCommands::pexpire::<_, bool>(con, k("e"), 60_000).await),
    );
    note(
        "exists",
        shown(AsyncCommands::exists::<_, bool>(con, k("e")).await),
    );
    // Hashes.
    let fields = [("name", "Ada"), ("lang", "en"), ("visits", "1")];
    note(
        "hset_multiple",
        shown(AsyncCommands::hset_multiple::<_, _, _, ()>(con, k("h"), &fields).await),
    );
    note(
        "hget",
        shown(AsyncCommands::hget::<_, _, Option<String>>(con, k("h"), "name").await),
    );
    note(
        "hmget into a tuple",
        shown(AsyncCommands::hmget::<_, _, (String, String)>(con, k("h"), &["name", "lang"]).await),
    );
    note(
        "hincr",
        shown(AsyncCommands::hincr::<_, _, _, i64>(con, k("h"), "visits", 2).await),
    );
    let all = AsyncCommands::hgetall::<_, HashMap<String, String>>(con, k("h")).await;
    note(
        "hgetall",
        shown(all.map(|m| m.into_iter().collect::<BTreeMap<_, _>>())),
    );
    note(
        "hdel",
        shown(AsyncCommands::hdel::<_, _, i64>(con, k("h"), "lang").await),
    );
    note(
        "hexists",
        shown(AsyncCommands::hexists::<_, _, bool>(con, k("h"), "lang").await),
    );
    // Lists.
    note(
        "rpush",
        shown(AsyncCommands::rpush::<_, _, i64>(con, k("l"), &["a", "b", "c"]).await),
    );
    note(
        "lpush",
        shown(AsyncCommands::lpush::<_, _, i64>(con, k("l"), "z").await),
    );
    note(
        "lrange",
        shown(AsyncCommands::lrange::<_, Vec<String>>(con, k("l"), 0, -1).await),
    );
    note(
        "lpop",
        shown(AsyncCommands::lpop::<_, Option<String>>(con, k("l"), None).await),
    );
    note(
        "llen",
        shown(AsyncCommands::llen::<_, i64>(con, k("l")).await),
    );
    // Sets.
    note(
        "sadd",
        shown(AsyncCommands::sadd::<_, _, i64>(con, k("set"), &["x", "y", "x"]).await),
    );
    let members =
        AsyncCommands::smembers::<_, std::collections::HashSet<String>>(con, k("set")).await;
    note(
        "smembers",
        shown(members.map(|m| m.into_iter().collect::<BTreeSet<_>>())),
    );
    note(
        "sismember",
        shown(AsyncCommands::sismember::<_, _, bool>(con, k("set"), "y").await),
    );
    // Sorted sets.
    let scores = [(1.5, "one"), (2.0, "two"), (0.5, "half")];
    note(
        "zadd_multiple",
        shown(AsyncCommands::zadd_multiple::<_, _, _, i64>(con, k("z"), &scores).await),
    );
    note(
        "zrange_withscores",
        shown(AsyncCommands::zrange_withscores::<_, Vec<(String, f64)>>(con, k("z"), 0, -1).await),
    );
    note(
        "zscore",
        shown(AsyncCommands::zscore::<_, _, Option<f64>>(con, k("z"), "two").await),
    );
    note(
        "zincr",
        shown(AsyncCommands::zincr::<_, _, _, f64>(con, k("z"), "half", 2).await),
    );
    note(
        "zcard",
        shown(AsyncCommands::zcard::<_, i64>(con, k("z")).await),
    );
    // Keys on several slots, in one call.
    let pairs = [(k("m1"), "1"), (k("m2"), "2"), (k("m3"), "3")];
    note(
        "mset across slots",
        shown(AsyncCommands::mset::<_, _, ()>(con, &pairs).await),
    );
    let keys = [k("m1"), k("nothing"), k("m3")];
    note(
        "mget into a tuple",
        shown(
            AsyncCommands::mget::<_, (Option<String>, Option<String>, Option<i64>)>(con, &keys)
                .await,
        ),
    );
    note(
        "del across slots",
        shown(AsyncCommands::del::<_, i64>(con, &[k("m1"), k("m2")]).await),
    );
    // The server's own error, its code kept.
    note(
        "wrong type",
        shown(AsyncCommands::hget::<_, _, Option<String>>(con, k("s"), "f").await),
    );
    note(
        "keys in two slots",
        shown(
            redis::cmd("RENAME")
                .arg(k("s"))
                .arg(k("s2"))
                .query_async::<()>(con)
                .await,
        ),
    );
    // Pipelines: plain (with an ignored reply), and atomic.
    let t = |name: &str| format!("{{{p}}}:{name}");
    let mut pipe = redis::pipe();
    pipe.set(t("p1"), 1)
        .ignore()
        .incr(t("p1"), 2)
        .get(t("p1"))
        .hset(t("ph"), "f", "v")
        .ignore()
        .hgetall(t("ph"));
    note(
        "pipeline",
        shown(
            pipe.query_async::<(i64, i64, HashMap<String, String>)>(con)
                .await,
        ),
    );
    let mut pipe = redis::pipe();
    pipe.set(t("p2"), "x").hget(t("p2"), "f").get(t("p2"));
    note(
        "pipeline with an error",
        shown(pipe.query_async::<redis::Value>(con).await),
    );
    note(
        "pipeline ignoring errors",
        shown(
            pipe.ignore_errors()
                .query_async::<Vec<RedisResult<Option<String>>>>(con)
                .await
                .map(|rs| rs.into_iter().map(shown).collect::<Vec<_>>()),
        ),
    );
    let mut atomic = redis::pipe();
    atomic
        .atomic()
        .incr(t("a"), 1)
        .ignore()
        .incr(t("a"), 10)
        .lpush(t("al"), "q")
        .lrange(t("al"), 0, -1);
    note(
        "atomic",
        shown(atomic.query_async::<(i64, i64, Vec<String>)>(con).await),
    );
    let mut atomic = redis::pipe();
    atomic
        .atomic()
        .set(t("a2"), "x")
        .incr(t("a2"), 1)
        .get(t("a2"));
    note(
        "atomic with a failed command",
        shown(atomic.query_async::<redis::Value>(con).await),
    );
    // A script: EVALSHA, SCRIPT LOAD on NOSCRIPT, EVALSHA again.
    let add = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    note(
        "script",
        shown(add.key(k("sc")).arg(3).invoke_async::<i64>(con).await),
    );
    note(
        "script again",
        shown(add.key(k("sc")).arg(4).invoke_async::<i64>(con).await),
    );
    note("get_db", con.get_db().to_string());
    out
}

/// The transcript's keys without the prefix, so that two runs compare.
fn unprefixed(transcript: &[String], p: &str) -> Vec<String> {
    transcript.iter().map(|line| line.replace(p, "P")).collect()
}

fn redis_rs(cluster: &Cluster) -> redis::cluster::ClusterClient {
    let nodes: Vec<String> = cluster
        .addrs()
        .iter()
        .map(|a| format!("redis://{a}"))
        .collect();
    redis::cluster::ClusterClient::new(nodes).expect("a redis-rs cluster client")
}

#[test]
fn a_redis_rs_program_answers_on_zaris_as_on_redis_rs() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, patient);
        let mut zaris = client.redis_compat();
        let mut theirs = rt
            .block_on(redis_rs(&cluster).get_async_connection())
            .expect("redis-rs connects");

        let on_zaris = rt.block_on(program(&mut zaris, "zar"));
        let on_redis_rs = rt.block_on(program(&mut theirs, "rrs"));
        assert_eq!(on_zaris.len(), on_redis_rs.len());
        for (z, r) in unprefixed(&on_zaris, "zar")
            .iter()
            .zip(unprefixed(&on_redis_rs, "rrs"))
        {
            assert_eq!(*z, r, "{server}: Zaris, then redis-rs");
        }
        // Not vacuous: real answers, and real errors with their codes.
        let line = |what: &str| {
            on_zaris
                .iter()
                .find(|l| l.starts_with(&format!("{what}: ")))
                .cloned()
                .unwrap()
        };
        assert_eq!(
            line("hmget into a tuple"),
            "hmget into a tuple: (\"Ada\", \"en\")"
        );
        assert_eq!(
            line("mget into a tuple"),
            "mget into a tuple: (Some(\"1\"), None, Some(3))"
        );
        assert_eq!(
            line("wrong type"),
            "wrong type: error Extension Some(\"WRONGTYPE\")"
        );
        assert_eq!(line("atomic"), "atomic: (11, 1, [\"q\"])");
        assert_eq!(line("script again"), "script again: 7");
        assert_eq!(
            line("keys in two slots"),
            format!(
                "keys in two slots: error {:?} Some(\"CROSSSLOT\")",
                ErrorKind::Server(ServerErrorKind::CrossSlot)
            )
        );

        // A script this connection saw loaded survives a node that lost
        // it: the same owner gets its source, and redis-rs sees no error.
        for i in 0..cluster.addrs().len() {
            cluster
                .conn(i)
                .unwrap()
                .command(&[b"SCRIPT", b"FLUSH"])
                .unwrap();
        }
        let fallbacks = client.stats().noscript_fallbacks;
        let add = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        let total: i64 = rt
            .block_on(add.key("zar:sc").arg(1).invoke_async(&mut zaris))
            .unwrap();
        assert_eq!(total, 8, "{server}");
        assert_eq!(client.stats().noscript_fallbacks, fallbacks + 1, "{server}");

        // What redis-rs's cluster cannot do and Zaris can: a pipeline
        // across slots, each command to its owner.
        let mut pipe = redis::pipe();
        for i in 0..20 {
            pipe.set(format!("spread:{i}"), i).ignore();
        }
        for i in 0..20 {
            pipe.get(format!("spread:{i}"));
        }
        let got: Vec<i64> = rt
            .block_on(pipe.query_async(&mut zaris))
            .expect("a pipeline across slots");
        assert_eq!(got, (0..20).collect::<Vec<i64>>());
        let slots: BTreeSet<u16> = (0..20)
            .map(|i| slot_for_key(format!("spread:{i}").as_bytes()))
            .collect();
        assert!(slots.len() > 10, "{slots:?}");
        // An atomic pipeline across slots is refused before anything is sent.
        let mut atomic = redis::pipe();
        atomic.atomic().set("spread:0", 100).set("spread:1", 100);
        let refused = rt
            .block_on(atomic.query_async::<()>(&mut zaris))
            .unwrap_err();
        assert_eq!(
            refused.kind(),
            ErrorKind::Server(ServerErrorKind::CrossSlot),
            "{refused}"
        );
        let unchanged: Option<i64> = rt
            .block_on(AsyncCommands::get(&mut zaris, "spread:0"))
            .unwrap();
        assert_eq!(unchanged, Some(0));

        // SCAN walks every master: every key, each once here (no churn).
        let mut expected: BTreeSet<String> = (0..20).map(|i| format!("spread:{i}")).collect();
        let scanned: BTreeSet<String> = rt.block_on(async {
            let mut iter = AsyncCommands::scan_match::<_, String>(&mut zaris, "spread:*")
                .await
                .unwrap();
            let mut keys = BTreeSet::new();
            while let Some(key) = futures_util::StreamExt::next(&mut iter).await {
                keys.insert(key.unwrap());
            }
            keys
        });
        assert_eq!(scanned, expected, "{server}");
        expected.clear();

        // What cannot share a connection is refused, saying why.
        for (command, words) in [
            ("SUBSCRIBE", "push channel"),
            ("WATCH", "Client::watch"),
            ("SELECT", "database 0"),
        ] {
            let mut cmd = redis::cmd(command);
            cmd.arg("x");
            let e = rt.block_on(cmd.query_async::<()>(&mut zaris)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Client, "{command}: {e}");
            assert!(e.to_string().contains(words), "{command}: {e}");
        }
        // A blocking command runs on a connection of its own.
        let popped: Option<(String, String)> = rt
            .block_on(AsyncCommands::blpop(&mut zaris, "empty:list", 0.1))
            .unwrap();
        assert_eq!(popped, None);
    });
}

/// Counters the workload increments: keys on every master, and one slot's
/// worth (`{churn}`) for the atomic pipelines and the slot that moves.
fn counters() -> Vec<String> {
    let mut keys: Vec<String> = (0..12).map(|i| format!("counter:{i}")).collect();
    keys.extend((0..4).map(|i| format!("{{churn}}:{i}")));
    keys
}

const TASKS: usize = 6;

/// The kinds of turn, by `turn % 4`.
const TURNS: [&str; 4] = ["incr", "pipeline", "atomic", "script"];

/// An atomic pipeline's `EXEC` in flight on a node that died or froze:
/// applied or not, nobody can say, so it is not sent again. Zaris's own
/// `Transaction::exec` answers the same (`Error::TransactionUnknown`).
fn unknown_outcome(error: &str) -> bool {
    error.contains("(atomic)") && error.contains("may or may not have been applied")
}

/// Tasks on one `RedisConnection` each (clones of one), each turn one of:
/// `incr`, a pipeline across slots, an atomic pipeline, a script; every
/// acknowledged increment counted, every error kept.
struct Workload {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<Vec<AtomicU64>>,
    errors: Arc<Mutex<Vec<String>>>,
    turns: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workload {
    fn start(rt: &tokio::runtime::Runtime, con: &zaris_client::compat::RedisConnection) -> Self {
        let keys = Arc::new(counters());
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged: Arc<Vec<AtomicU64>> =
            Arc::new(keys.iter().map(|_| AtomicU64::new(0)).collect());
        let errors = Arc::new(Mutex::new(Vec::new()));
        let turns = Arc::new(AtomicU64::new(0));
        let add = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
        let tasks = (0..TASKS)
            .map(|t| {
                let mut con = con.clone();
                let (keys, stop, acknowledged, errors, turns, add) = (
                    keys.clone(),
                    stop.clone(),
                    acknowledged.clone(),
                    errors.clone(),
                    turns.clone(),
                    add.clone(),
                );
                rt.spawn(async move {
                    let mut i = t;
                    while !stop.load(Ordering::Acquire) {
                        // The keys by turn, the kind of turn by its place.
                        let n = i / 4;
                        let (a, b) = (n % 12, (n * 7 + 3) % 12);
                        let (x, y) = (12 + n % 4, 12 + (n + 1) % 4);
                        let done: RedisResult<Vec<usize>> = match i % 4 {
                            0 => AsyncCommands::incr::<_, _, i64>(&mut con, &keys[a], 1)
                                .await
                                .map(|_| vec![a]),
                            1 => redis::pipe()
                                .incr(&keys[a], 1)
                                .incr(&keys[b], 1)
                                .query_async::<(i64, i64)>(&mut con)
                                .await
                                .map(|_| vec![a, b]),
                            2 => redis::pipe()
                                .atomic()
                                .incr(&keys[x], 1)
                                .incr(&keys[y], 1)
                                .query_async::<(i64, i64)>(&mut con)
                                .await
                                .map(|_| vec![x, y]),
                            _ => add
                                .key(&keys[b])
                                .arg(1)
                                .invoke_async::<i64>(&mut con)
                                .await
                                .map(|_| vec![b]),
                        };
                        match done {
                            Ok(done) => {
                                for k in done {
                                    acknowledged[k].fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Err(e) => errors
                                .lock()
                                .unwrap()
                                .push(format!("turn {i} ({}): {e}", TURNS[i % 4])),
                        }
                        turns.fetch_add(1, Ordering::Relaxed);
                        i += TASKS;
                    }
                })
            })
            .collect();
        Workload {
            stop,
            acknowledged,
            errors,
            turns,
            tasks,
        }
    }

    /// Waits for `n` more turns (the workload runs on), so each phase is
    /// met by requests.
    fn runs_on(&self, n: u64) {
        let from = self.turns.load(Ordering::Relaxed);
        eventually("the workload goes on", Duration::from_secs(30), || {
            self.turns.load(Ordering::Relaxed) >= from + n
        });
    }

    /// Stops the tasks; the errors they met, and the increments acknowledged.
    fn stop(self, rt: &tokio::runtime::Runtime) -> (Vec<String>, Vec<u64>) {
        self.stop.store(true, Ordering::Release);
        for task in self.tasks {
            rt.block_on(task).unwrap();
        }
        let errors = self.errors.lock().unwrap().clone();
        (
            errors,
            self.acknowledged
                .iter()
                .map(|a| a.load(Ordering::Relaxed))
                .collect(),
        )
    }
}

/// What the cluster holds for each counter.
fn stored(
    rt: &tokio::runtime::Runtime,
    con: &mut zaris_client::compat::RedisConnection,
) -> Vec<u64> {
    let keys = counters();
    let values: Vec<Option<u64>> = rt.block_on(AsyncCommands::mget(con, &keys)).expect("MGET");
    values.into_iter().map(Option::unwrap_or_default).collect()
}

#[test]
fn redis_rs_code_on_zaris_rides_out_churn() {
    each_server(|server| {
        let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let client = cluster.client(&rt, patient);
        let mut con = client.redis_compat();
        let churn = slot_for_key(b"churn");
        let home = cluster.owner_index(churn).unwrap();

        // A manual failover, then the busy slot moved away and back at once.
        let workload = Workload::start(&rt, &con);
        workload.runs_on(200);
        // The replica takes the slot over: its new home.
        let home = cluster.replica_of(home).unwrap();
        cluster.failover(home).unwrap();
        workload.runs_on(200);
        // Every node's map names it before the slot moves (Valkey's may
        // lag the failover a moment; SETSLOT on the old master fails).
        eventually(
            &format!("{server}: the map names the new master"),
            Duration::from_secs(10),
            || cluster.owner_index(churn).ok() == Some(home),
        );
        // Another master, as the map names them (a demoted master may
        // still call itself one for a moment).
        let away = [0u16, 6000, 12000]
            .iter()
            .map(|&s| cluster.owner_index(s).unwrap())
            .find(|&i| i != home)
            .unwrap();
        cluster.move_slot(churn, away).unwrap();
        cluster.move_slot(churn, home).unwrap();
        workload.runs_on(200);
        let (errors, acknowledged) = workload.stop(&rt);
        assert_eq!(
            errors,
            Vec::<String>::new(),
            "{server}: through a failover and a migration"
        );
        // Nothing lost, nothing applied twice: redirects and refusals are
        // not applied, so every retry is safe.
        assert_eq!(stored(&rt, &mut con), acknowledged, "{server}");
        assert!(
            acknowledged.iter().all(|&n| n > 0),
            "{server}: {acknowledged:?}"
        );

        // kill -9 of a master, then a frozen one: no error (acknowledged
        // writes may be lost to asynchronous replication on a kill, as
        // the servers promise; Zaris's `Durability` is the answer there).
        let workload = Workload::start(&rt, &con);
        workload.runs_on(200);
        let victim = cluster.owner_index(slot_for_key(b"counter:0")).unwrap();
        cluster.kill(victim);
        cluster
            .wait_failover_of(victim, slot_for_key(b"counter:0"))
            .unwrap();
        workload.runs_on(200);
        let frozen = (0..cluster.addrs().len())
            .find(|&i| {
                i != victim
                    && cluster.is_master(i).unwrap_or(false)
                    && cluster.replica_of(i).is_ok()
            })
            .expect("a master with a replica");
        let slot = (0..16384u16)
            .find(|&s| cluster.owner_index(s).ok() == Some(frozen))
            .unwrap();
        cluster.freeze(frozen).unwrap();
        cluster.wait_failover_of(frozen, slot).unwrap();
        workload.runs_on(200);
        cluster.thaw(frozen).unwrap();
        let (errors, acknowledged) = workload.stop(&rt);
        let (unknown, errors): (Vec<String>, Vec<String>) =
            errors.into_iter().partition(|e| unknown_outcome(e));
        assert_eq!(
            errors,
            Vec::<String>::new(),
            "{server}: through a kill -9 and a freeze"
        );
        // At most the one each task had in flight on each node that went.
        assert!(unknown.len() <= 2 * TASKS, "{server}: {unknown:?}");
        assert!(
            acknowledged.iter().all(|&n| n > 0),
            "{server}: {acknowledged:?}"
        );
        eprintln!("{server}: {:?}", client.stats());
    });
}
