//! `zaris-client` against real clusters (Redis 7, and Valkey 8 where it is
//! installed), started by the tests: 3 masters with a replica each.
//!
//! - Steady state: every key goes to the node `CLUSTER KEYSLOT` and
//!   `CLUSTER SHARDS` name, with no redirects and no refreshes.
//! - Churn: writers run while the cluster goes through a manual failover,
//!   a slot migration (ASK and TRYAGAIN), `kill -9` of a master, a new
//!   master taking slots, and the dead node's return. After each, every
//!   acknowledged write reads back, no operation outlived its deadline, and
//!   refreshes stayed bounded. `kill -9` may lose the last writes a master
//!   acknowledged before its replica took over (Redis replicates
//!   asynchronously); durable writes (`WAIT`) lose none.
//! - 500 concurrent requests for a moved slot, a compare-and-set counter,
//!   and raw statuses with `ZARIS_DISABLE_RETRIES=true`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_client::{Builder, Client, Error, KvStatus, Stats};
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::{eventually, one_cluster_at_a_time};
use zaris_tests::tls::Pki;
use zaris_tests::{builder, runtime};
use zaris_tests::{each_server, Frame, Transport};

/// How a test reaches its cluster: plain text, or TLS only (`rediss://`
/// seeds, the test CA trusted).
struct Over {
    name: &'static str,
    transport: Transport,
    tls: Option<zaris_client::rustls::ClientConfig>,
}

impl Over {
    /// Plain text, then TLS with fresh certificates.
    fn both() -> Vec<Over> {
        let pki = Pki::generate().expect("certificates");
        vec![
            Over {
                name: "plain",
                transport: Transport::Plain,
                tls: None,
            },
            Over {
                name: "TLS",
                transport: Transport::tls(&pki),
                tls: Some(pki.client_config("ca.pem", false).expect("TLS config")),
            },
        ]
    }

    fn start(&self, server: &str, masters: usize, replicas: usize) -> Cluster {
        Cluster::start_on(server, masters, replicas, self.transport.clone()).expect("cluster")
    }

    /// The seeds of `cluster` as this transport names them.
    fn seeds(&self, cluster: &Cluster) -> Vec<String> {
        let scheme = if self.tls.is_some() { "rediss://" } else { "" };
        cluster
            .addrs()
            .iter()
            .map(|a| format!("{scheme}{a}"))
            .collect()
    }

    /// A builder with the defaults of docs/behaviour.md §3 and this TLS.
    fn builder(&self) -> Builder {
        let builder = builder();
        match &self.tls {
            Some(config) => builder.tls(config.clone()),
            None => builder,
        }
    }
}

fn sample_keys() -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for i in 0..150u32 {
        keys.push(format!("user:{i}").into_bytes());
        keys.push(format!("{{tag{}}}:item:{i}", i % 7).into_bytes());
        keys.push(format!("κλειδί:{i}:键").into_bytes());
        keys.push(vec![
            i as u8,
            0xff,
            b'{',
            (i * 7) as u8,
            b'}',
            0,
            (i >> 3) as u8,
        ]);
    }
    keys
}

#[test]
fn steady_state_routes_every_key_to_its_owner_without_redirects() {
    let _one = one_cluster_at_a_time();
    for over in Over::both() {
        each_server(|server| {
            steady_state(server, &over);
        });
    }
}

fn steady_state(binary: &str, over: &Over) {
    {
        let server = format!("{binary} ({})", over.name);
        let cluster = over.start(binary, 3, 1);
        let rt = runtime();
        let seeds = over.seeds(&cluster);
        // No poll during the test: it counts refreshes, and must not race
        // a tick on a slow machine.
        let quiet = over.builder().poll_interval(Duration::from_secs(3600));
        let client = rt.block_on(quiet.connect(&[&seeds[0]])).expect("connect");
        let keys = sample_keys();
        for key in &keys {
            let slot = cluster.keyslot(key).unwrap();
            assert_eq!(slot_for_key(key), slot, "{server}: CLUSTER KEYSLOT {key:?}");
            let owner = cluster.owner_by_shards(slot).unwrap();
            assert_eq!(
                client.owner_of(key).as_deref(),
                Some(owner.as_str()),
                "{server}: owner of {key:?}"
            );
        }
        let started = Instant::now();
        rt.block_on(async {
            for (i, key) in keys.iter().enumerate() {
                client.set(key, format!("v{i}")).await.unwrap();
            }
            for (i, key) in keys.iter().enumerate() {
                assert_eq!(
                    client.get(key).await.unwrap().as_deref(),
                    Some(format!("v{i}").as_bytes())
                );
            }
        });
        eprintln!(
            "{server}: {} sequential SET and GET in {:?}",
            2 * keys.len(),
            started.elapsed()
        );
        let stats = client.stats();
        assert_eq!(stats.moved_redirects, 0, "{server}: {stats:?}");
        assert_eq!(stats.ask_redirects, 0, "{server}: {stats:?}");
        assert_eq!(
            stats.attempts,
            2 * keys.len() as u64,
            "{server}: one attempt per request"
        );
        assert_eq!(stats.refreshes_started, 0, "{server}: {stats:?}");
        // The data really sits on the owner: asked directly, it answers
        // (any other node would say MOVED).
        for (i, key) in keys.iter().enumerate().step_by(13) {
            let owner = cluster.index_of(&client.owner_of(key).unwrap()).unwrap();
            let reply = cluster
                .conn(owner)
                .unwrap()
                .command(&[b"GET", key])
                .unwrap();
            assert_eq!(
                reply,
                Frame::BulkString(format!("v{i}").into_bytes()),
                "{server}: {key:?} on its owner"
            );
        }
        rt.block_on(the_whole_api(&client, &keys));
        assert_eq!(client.stats().moved_redirects, 0, "{server}");
    }
}

/// Every call of the API on a healthy cluster.
async fn the_whole_api(client: &Client, keys: &[Vec<u8>]) {
    let pairs: Vec<(Vec<u8>, String)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), format!("m{i}")))
        .collect();
    client.mset(&pairs).await.unwrap();
    let mut wanted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    wanted.push(b"missing:key");
    let values = client.mget(&wanted).await.unwrap();
    assert_eq!(values.len(), keys.len() + 1);
    for (i, value) in values.iter().take(keys.len()).enumerate() {
        assert_eq!(
            value.as_deref(),
            Some(format!("m{i}").as_bytes()),
            "mget {i}"
        );
    }
    assert_eq!(values[keys.len()], None);

    let mut scan = client.scan(zaris_client::ScanOptions {
        pattern: Some("user:*".into()),
        ..Default::default()
    });
    let mut found = Vec::new();
    while let Some(batch) = scan.next().await {
        found.extend(batch.unwrap());
    }
    assert_eq!(found.len(), 150, "scan covers every owner, each key once");
    assert!(found.iter().all(|k| k.starts_with(b"user:")));

    assert!(client.del("user:0").await.unwrap());
    assert!(!client.del("user:0").await.unwrap());
    assert_eq!(client.get("user:0").await.unwrap(), None);
    assert_eq!(client.incr_by("counter:{c}", 5).await.unwrap(), 5);
    assert_eq!(client.incr_by("counter:{c}", -2).await.unwrap(), 3);
    assert_eq!(
        client.incr_by("}{", 1).await.unwrap(),
        1,
        "a key that cannot share a slot with a marker"
    );

    client.set_if_absent("once", "first").await.unwrap();
    assert_eq!(
        client.set_if_absent("once", "second").await,
        Err(Error::Conflict {
            current_version: None
        })
    );
    assert_eq!(
        client.get("once").await.unwrap().as_deref(),
        Some(&b"first"[..])
    );

    assert_eq!(client.get_versioned("doc").await.unwrap(), None);
    assert_eq!(client.set_if_version("doc", "a", 0).await.unwrap(), 1);
    assert_eq!(client.set_if_version("doc", "b", 1).await.unwrap(), 2);
    assert_eq!(
        client.set_if_version("doc", "c", 1).await,
        Err(Error::Conflict {
            current_version: Some(2)
        })
    );
    let doc = client.get_versioned("doc").await.unwrap().unwrap();
    assert_eq!((doc.value.as_ref(), doc.version), (&b"b"[..], 2));

    let reply = client.cmd(&["HSET", "h", "f", "v"]).await.unwrap();
    assert_eq!(reply, zaris_client::Value::Int(1));
    assert_eq!(
        client.cmd(&["HGET", "h", "f"]).await.unwrap(),
        zaris_client::Value::Data("v".into())
    );
    match client.cmd(&["INCR", "h"]).await {
        Err(Error::Server(message)) => assert!(message.starts_with("WRONGTYPE"), "{message}"),
        other => panic!("a WRONGTYPE error is surfaced as is, got {other:?}"),
    }
}

/// What one key went through: the last acknowledged value, and the values
/// of writes that failed after it (they may or may not have landed).
#[derive(Default)]
struct KeyLog {
    acked: Option<u64>,
    unacked_since: Vec<u64>,
}

/// The writers' shared record.
#[derive(Default)]
struct Ledger {
    keys: Mutex<HashMap<Vec<u8>, KeyLog>>,
    paused: AtomicBool,
    stop: AtomicBool,
    in_flight: AtomicUsize,
    ops: AtomicU64,
    failed: AtomicU64,
    /// Keys whose write failed, in order.
    failed_keys: Mutex<Vec<Vec<u8>>>,
    /// Writes acknowledged so far.
    acked: AtomicU64,
    /// The longest any operation took, in ms.
    longest_ms: AtomicU64,
}

const WRITERS: usize = 6;
const KEYS_PER_WRITER: usize = 40;
const DEADLINE: Duration = Duration::from_secs(8);

fn spawn_writers(
    rt: &tokio::runtime::Runtime,
    client: &Client,
    ledger: &Arc<Ledger>,
    prefix: &'static str,
) {
    for w in 0..WRITERS {
        let (client, ledger) = (client.clone(), ledger.clone());
        rt.spawn(async move {
            let mut value = 0u64;
            while !ledger.stop.load(Ordering::Acquire) {
                if ledger.paused.load(Ordering::Acquire) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                ledger.in_flight.fetch_add(1, Ordering::AcqRel);
                if ledger.paused.load(Ordering::Acquire) {
                    ledger.in_flight.fetch_sub(1, Ordering::AcqRel);
                    continue;
                }
                value += 1;
                let key = format!("{prefix}:{w}:{}", value as usize % KEYS_PER_WRITER).into_bytes();
                let started = Instant::now();
                let result = client.set(&key, value.to_string()).await;
                let took = started.elapsed();
                ledger
                    .longest_ms
                    .fetch_max(took.as_millis() as u64, Ordering::AcqRel);
                ledger.ops.fetch_add(1, Ordering::Relaxed);
                {
                    let mut keys = ledger.keys.lock().unwrap();
                    let log = keys.entry(key.clone()).or_default();
                    if result.is_ok() {
                        *log = KeyLog {
                            acked: Some(value),
                            unacked_since: Vec::new(),
                        };
                        ledger.acked.fetch_add(1, Ordering::Relaxed);
                    } else {
                        ledger.failed.fetch_add(1, Ordering::Relaxed);
                        log.unacked_since.push(value);
                        ledger.failed_keys.lock().unwrap().push(key);
                    }
                }
                ledger.in_flight.fetch_sub(1, Ordering::AcqRel);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
    }
}

impl Ledger {
    fn pause(&self) {
        self.paused.store(true, Ordering::Release);
        while self.in_flight.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn resume(&self) {
        self.paused.store(false, Ordering::Release);
    }

    /// Reads every key back: how many acknowledged writes are gone.
    async fn lost_writes(&self, client: &Client) -> (usize, usize) {
        let expected: Vec<(Vec<u8>, Option<u64>, Vec<u64>)> = {
            let keys = self.keys.lock().unwrap();
            keys.iter()
                .map(|(k, log)| (k.clone(), log.acked, log.unacked_since.clone()))
                .collect()
        };
        let mut lost = 0;
        for (key, acked, unacked) in &expected {
            let Some(acked) = acked else { continue };
            let stored = client.get(key).await.expect("reading back after the event");
            let stored: Option<u64> =
                stored.and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok());
            let fine = stored == Some(*acked) || stored.is_some_and(|s| unacked.contains(&s));
            if !fine {
                lost += 1;
                eprintln!(
                    "  lost: {:?} acked {acked}, now {stored:?}",
                    String::from_utf8_lossy(key)
                );
            }
        }
        (lost, expected.len())
    }
}

struct EventReport {
    name: &'static str,
    refreshes: u64,
    lost_plain: usize,
    lost_durable: usize,
}

fn delta(after: &Stats, before: &Stats) -> (u64, u64, u64) {
    (
        after.refreshes_started - before.refreshes_started,
        after.moved_redirects - before.moved_redirects,
        after.ask_redirects - before.ask_redirects,
    )
}

#[test]
fn churn_hides_ownership_moves_and_keeps_acknowledged_writes() {
    let _one = one_cluster_at_a_time();
    for over in Over::both() {
        each_server(|server| {
            churn(server, &over);
        });
    }
}

fn churn(server: &str, over: &Over) {
    let mut cluster = over.start(server, 3, 1);
    let server = &format!("{server} ({})", over.name);
    let rt = runtime();
    let seeds = over.seeds(&cluster);
    let builder = || {
        over.builder()
            .max_attempts(10)
            .request_timeout(Some(DEADLINE))
    };
    let plain = rt.block_on(builder().connect(&seeds)).expect("connect");
    let durable = rt
        .block_on(
            builder()
                .durable_writes(1, Duration::from_millis(500))
                .connect(&seeds),
        )
        .expect("connect");
    let plain_ledger = Arc::new(Ledger::default());
    let durable_ledger = Arc::new(Ledger::default());
    spawn_writers(&rt, &plain, &plain_ledger, "plain");
    spawn_writers(&rt, &durable, &durable_ledger, "durable");
    let under_way = |ledger: &Ledger, from: u64| {
        ledger.acked.load(Ordering::Relaxed) >= from + 3 * WRITERS as u64
    };
    eventually("the writers are under way", Duration::from_secs(10), || {
        under_way(&plain_ledger, 0) && under_way(&durable_ledger, 0)
    });

    let mut reports = Vec::new();
    let mut run_event = |name: &'static str,
                         cluster: &mut Cluster,
                         event: &mut dyn FnMut(&mut Cluster)| {
        let before = (plain.stats(), durable.stats());
        event(cluster);
        // The writers meet the new layout before the check: each ledger
        // has writes acknowledged since the event.
        let acked = (
            plain_ledger.acked.load(Ordering::Relaxed),
            durable_ledger.acked.load(Ordering::Relaxed),
        );
        eventually(
            &format!("{name}: writes acknowledged after the event"),
            DEADLINE,
            || under_way(&plain_ledger, acked.0) && under_way(&durable_ledger, acked.1),
        );
        plain_ledger.pause();
        durable_ledger.pause();
        let (lost_plain, keys) = rt.block_on(plain_ledger.lost_writes(&plain));
        let (lost_durable, _) = rt.block_on(durable_ledger.lost_writes(&durable));
        let (refreshes, moved, asks) = delta(&plain.stats(), &before.0);
        let (durable_refreshes, ..) = delta(&durable.stats(), &before.1);
        eprintln!(
            "{server} {name}: {keys} keys checked, lost {lost_plain} plain / {lost_durable} durable; \
             refreshes {refreshes} + {durable_refreshes}; MOVED {moved}, ASK {asks}; ops {} failed {}; longest op {} ms",
            plain_ledger.ops.load(Ordering::Relaxed) + durable_ledger.ops.load(Ordering::Relaxed),
            plain_ledger.failed.load(Ordering::Relaxed) + durable_ledger.failed.load(Ordering::Relaxed),
            plain_ledger.longest_ms.load(Ordering::Relaxed).max(durable_ledger.longest_ms.load(Ordering::Relaxed)),
        );
        assert!(
            refreshes <= 25 && durable_refreshes <= 25,
            "{name}: refreshes must stay bounded"
        );
        reports.push(EventReport {
            name,
            refreshes,
            lost_plain,
            lost_durable,
        });
        plain_ledger.resume();
        durable_ledger.resume();
    };

    run_event("manual CLUSTER FAILOVER", &mut cluster, &mut |c| {
        let master = c.owner_index(0).unwrap();
        let replica = c.replica_of(master).unwrap();
        c.failover(replica).unwrap();
    });

    run_event(
        "slot migration with ASK and TRYAGAIN",
        &mut cluster,
        &mut |c| {
            migrate_with_ask_and_tryagain(c, &rt, &plain);
        },
    );

    let mut killed = None;
    run_event("kill -9 of a master", &mut cluster, &mut |c| {
        let slot = 12000;
        let master = c.owner_index(slot).unwrap();
        // The keys the dead master owns; writes to all others must go on.
        let dead = c.addr(master);
        let doomed = |client: &Client, ledger: &Ledger| -> Vec<Vec<u8>> {
            let keys = ledger.keys.lock().unwrap();
            let owned = |k: &&Vec<u8>| client.owner_of(k).as_deref() == Some(dead.as_str());
            keys.keys().filter(owned).cloned().collect()
        };
        let doomed_plain = doomed(&plain, &plain_ledger);
        let doomed_durable = doomed(&durable, &durable_ledger);
        let failed_before = |ledger: &Ledger| ledger.failed_keys.lock().unwrap().len();
        let before = (failed_before(&plain_ledger), failed_before(&durable_ledger));
        // A reader of keys on the healthy shards runs through the failover.
        let healthy: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("healthy:{i}").into_bytes())
            .filter(|k| plain.owner_of(k).as_deref() != Some(dead.as_str()))
            .collect();
        let probing = Arc::new(AtomicBool::new(true));
        let probe = rt.spawn({
            let (client, probing, healthy) = (plain.clone(), probing.clone(), healthy.clone());
            async move {
                let (mut ok, mut failed) = (0u64, 0u64);
                while probing.load(Ordering::Acquire) {
                    for key in &healthy {
                        match client.get(key).await {
                            Ok(_) => ok += 1,
                            Err(_) => failed += 1,
                        }
                    }
                }
                (ok, failed)
            }
        });
        // Its replica is cut off first, so the writes the master acknowledges
        // in its last 700 ms never reach the replica that takes over: what
        // asynchronous replication can lose, made certain.
        let replica = c.replica_of(master).unwrap();
        let frozen = c.cut_off(replica, Duration::from_millis(1500)).unwrap();
        std::thread::sleep(Duration::from_millis(700));
        c.kill(master);
        frozen.join().unwrap();
        c.wait_failover_of(master, slot).unwrap();
        killed = Some(master);
        probing.store(false, Ordering::Release);
        let (reads, failed_reads) = rt.block_on(probe).unwrap();
        let checks = [
            (&plain_ledger, &doomed_plain, before.0),
            (&durable_ledger, &doomed_durable, before.1),
        ];
        for (ledger, doomed, before) in checks {
            for key in &ledger.failed_keys.lock().unwrap()[before..] {
                let key = String::from_utf8_lossy(key);
                assert!(
                    doomed.iter().any(|d| String::from_utf8_lossy(d) == key),
                    "{server}: a write to a healthy shard failed: {key}"
                );
            }
        }
        eprintln!("{server}: while the dead master failed over, {reads} reads of healthy shards succeeded, {failed_reads} failed");
        assert_eq!(
            failed_reads, 0,
            "{server}: requests for healthy nodes keep flowing"
        );
        assert!(
            reads > 200,
            "{server}: requests for healthy nodes keep flowing"
        );
    });

    run_event("a new master takes slots", &mut cluster, &mut |c| {
        let new = c.add_master().unwrap();
        // A run of slots, and the slots of some keys the writers are writing.
        let mut slots: Vec<u16> = (5461..5480).collect();
        for prefix in ["plain", "durable"] {
            slots.extend(
                (0..KEYS_PER_WRITER)
                    .step_by(3)
                    .map(|i| slot_for_key(format!("{prefix}:0:{i}").as_bytes())),
            );
        }
        slots.sort_unstable();
        slots.dedup();
        for slot in slots {
            c.move_slot(slot, new).unwrap();
        }
        c.wait_healthy().unwrap();
    });

    run_event("the killed node comes back", &mut cluster, &mut |c| {
        c.restart(killed.unwrap(), 12000).unwrap();
    });

    plain_ledger.stop.store(true, Ordering::Release);
    durable_ledger.stop.store(true, Ordering::Release);
    let longest = plain_ledger
        .longest_ms
        .load(Ordering::Relaxed)
        .max(durable_ledger.longest_ms.load(Ordering::Relaxed));
    assert!(
        Duration::from_millis(longest) <= DEADLINE + Duration::from_millis(300),
        "an operation ran {longest} ms, past its {DEADLINE:?} deadline"
    );
    for report in &reports {
        assert_eq!(
            report.lost_durable, 0,
            "{server} {}: durable writes are never lost",
            report.name
        );
        if report.name != "kill -9 of a master" {
            assert_eq!(
                report.lost_plain, 0,
                "{server} {}: no acknowledged write is lost",
                report.name
            );
        }
        assert!(
            report.refreshes > 0 || report.name.contains("comes back"),
            "{server} {}: the client noticed",
            report.name
        );
    }
    assert!(
        plain_ledger.ops.load(Ordering::Relaxed) > 500,
        "the writers really ran"
    );
}

/// Moves the slot of `{mig}` to another master step by step, and meets
/// both redirects on the way: `ASK` for a key already moved, `TRYAGAIN`
/// for a multi-key read whose keys are split between the two nodes.
fn migrate_with_ask_and_tryagain(
    cluster: &mut Cluster,
    rt: &tokio::runtime::Runtime,
    client: &Client,
) {
    let slot = slot_for_key(b"{mig}");
    let keys: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("{{mig}}:{i}").into_bytes())
        .collect();
    rt.block_on(async {
        for (i, key) in keys.iter().enumerate() {
            client.set(key, format!("m{i}")).await.unwrap();
        }
    });
    let from = cluster.owner_index(slot).unwrap();
    let to = cluster
        .running()
        .into_iter()
        .find(|&i| i != from && cluster.is_master(i).unwrap())
        .unwrap();
    cluster.begin_migration(slot, from, to).unwrap();
    cluster.migrate_keys(from, to, &keys[..50]).unwrap();
    let before = client.stats();

    // A key already moved: the source answers ASK, the client follows it once.
    let moved_key = rt.block_on(client.get(&keys[0])).unwrap();
    assert_eq!(moved_key.as_deref(), Some(&b"m0"[..]));
    let after_ask = client.stats();
    assert_eq!(
        after_ask.ask_redirects - before.ask_redirects,
        1,
        "ASK followed"
    );
    assert_eq!(
        after_ask.refreshes_started, before.refreshes_started,
        "ASK refreshes nothing"
    );

    // Keys on both sides: TRYAGAIN (Migrating) until the migration ends.
    let split = rt.spawn({
        let client = client.clone();
        let pair = [keys[1].clone(), keys[99].clone()];
        async move { client.mget(&pair).await }
    });
    eventually(
        "the split read met TRYAGAIN",
        Duration::from_secs(10),
        || client.stats().retries(KvStatus::Migrating) > before.retries(KvStatus::Migrating),
    );
    cluster.migrate_keys(from, to, &keys[50..]).unwrap();
    cluster.finish_migration(slot, to).unwrap();
    let values = rt
        .block_on(split)
        .unwrap()
        .expect("the split read succeeds once the slot settles");
    assert_eq!(values, vec![Some("m1".into()), Some("m99".into())]);
    let after = client.stats();
    assert!(
        after.retries(KvStatus::Migrating) > before.retries(KvStatus::Migrating),
        "TRYAGAIN was met: {after:?}"
    );
    cluster.wait_healthy().unwrap();
    assert_eq!(client.owner_of(b"{mig}"), Some(cluster.addr(to)));
}

#[test]
fn a_moved_slot_costs_a_handful_of_refreshes_and_raw_statuses_show_without_retries() {
    let _one = one_cluster_at_a_time();
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 1).expect("cluster");
        let rt = runtime();
        let seeds = [cluster.addr(0)];
        let client = rt.block_on(builder().connect(&seeds)).unwrap();
        let raw = rt
            .block_on(
                Client::builder()
                    .env(|name| (name == "ZARIS_DISABLE_RETRIES").then(|| "true".to_owned()))
                    .connect(&seeds),
            )
            .unwrap();

        // 500 keys in one slot, then the slot moves behind the clients' backs.
        let keys: Vec<String> = (0..500).map(|i| format!("{{storm}}:{i}")).collect();
        rt.block_on(async {
            for key in &keys {
                client.set(key, key).await.unwrap();
            }
            client.set("{raw}", "x").await.unwrap();
        });
        let slot = slot_for_key(b"{storm}");
        let from = cluster.owner_index(slot).unwrap();
        let to = cluster
            .running()
            .into_iter()
            .find(|&i| i != from && cluster.is_master(i).unwrap())
            .unwrap();
        cluster.move_slot(slot, to).unwrap();
        let raw_slot = slot_for_key(b"{raw}");
        let raw_to = cluster
            .running()
            .into_iter()
            .find(|&i| i != cluster.owner_index(raw_slot).unwrap() && cluster.is_master(i).unwrap())
            .unwrap();
        cluster.move_slot(raw_slot, raw_to).unwrap();

        let before = client.stats();
        let results = rt.block_on(async {
            let tasks: Vec<_> = keys
                .iter()
                .map(|k| {
                    let (client, key) = (client.clone(), k.clone());
                    tokio::spawn(async move { client.get(&key).await })
                })
                .collect();
            let mut out = Vec::new();
            for task in tasks {
                out.push(task.await.unwrap());
            }
            out
        });
        for (key, result) in keys.iter().zip(results) {
            assert_eq!(
                result.unwrap().as_deref(),
                Some(key.as_bytes()),
                "{server}: {key}"
            );
        }
        let after = client.stats();
        let (refreshes, moved, _) = delta(&after, &before);
        eprintln!(
            "{server}: 500 concurrent requests on a moved slot: {moved} MOVED, {refreshes} refresh(es) started, {} coalesced, {} debounced",
            after.refreshes_coalesced - before.refreshes_coalesced,
            after.refreshes_debounced - before.refreshes_debounced
        );
        assert!(moved >= 1, "{server}: the clients' map really was stale");
        assert!(
            refreshes <= 3,
            "{server}: {refreshes} refreshes for one moved slot"
        );
        assert_eq!(client.owner_of(b"{storm}"), Some(cluster.addr(to)));

        // Retries disabled: the stale route surfaces as the raw status.
        let error = rt.block_on(raw.get("{raw}")).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Status {
                    status: KvStatus::Moved,
                    attempts: 1,
                    ..
                }
            ),
            "{server}: {error:?}"
        );

        // Compare-and-set: many tasks increment one counter.
        const TASKS: u64 = 12;
        const EACH: u64 = 20;
        let successes = rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let client = client.clone();
                    tokio::spawn(async move {
                        let mut done = 0;
                        let mut conflicts = 0;
                        while done < EACH {
                            let current = client.get_versioned("cas:counter").await.unwrap();
                            let (count, version) = current.map_or((0, 0), |v| {
                                (
                                    std::str::from_utf8(&v.value)
                                        .unwrap()
                                        .parse::<u64>()
                                        .unwrap(),
                                    v.version,
                                )
                            });
                            match client
                                .set_if_version("cas:counter", (count + 1).to_string(), version)
                                .await
                            {
                                Ok(_) => done += 1,
                                Err(Error::Conflict { .. }) => conflicts += 1,
                                Err(e) => panic!("{e}"),
                            }
                        }
                        (done, conflicts)
                    })
                })
                .collect();
            let mut total = (0, 0);
            for task in tasks {
                let (done, conflicts) = task.await.unwrap();
                total = (total.0 + done, total.1 + conflicts);
            }
            total
        });
        let counter = rt
            .block_on(client.get_versioned("cas:counter"))
            .unwrap()
            .unwrap();
        eprintln!(
            "{server}: CAS counter {} after {} successes and {} conflicts",
            String::from_utf8_lossy(&counter.value),
            successes.0,
            successes.1
        );
        assert_eq!(successes.0, TASKS * EACH);
        assert_eq!(
            counter.value.as_ref(),
            (TASKS * EACH).to_string().as_bytes()
        );
        assert_eq!(counter.version, TASKS * EACH);
        assert!(successes.1 > 0, "{server}: the tasks really raced");
    });
}
