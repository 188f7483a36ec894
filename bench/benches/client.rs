//! Zaris's client against redis-rs's async cluster client, on the same
//! local cluster in one run: GET/SET 50/50 over 100k keys at 1, 16 and 256
//! concurrent tasks (ops/s, p50, p99 and the ratios), then a master killed
//! under load (time until writes to its slots succeed again, and failed
//! operations), each client on a fresh cluster.
//!
//! `just bench-client` (`just bench-client --quick`: shorter phases).
//! Not a test: the numbers depend on the machine, and are printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use zaris_client::Client;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;

const KEYS: u64 = 100_000;
const VALUE: &[u8] = &[b'v'; 64];

#[derive(Clone)]
enum Driver {
    Zaris(Client),
    RedisRs(redis::cluster_async::ClusterConnection),
}

impl Driver {
    fn name(&self) -> &'static str {
        match self {
            Driver::Zaris(_) => "zaris",
            Driver::RedisRs(_) => "redis-rs",
        }
    }

    async fn connect(name: &str, seeds: &[String]) -> Driver {
        match name {
            "zaris" => {
                let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
                Driver::Zaris(Client::connect(&seeds).await.expect("zaris connects"))
            }
            _ => {
                let urls: Vec<String> = seeds.iter().map(|s| format!("redis://{s}")).collect();
                let client =
                    redis::cluster::ClusterClient::new(urls).expect("redis-rs accepts the seeds");
                Driver::RedisRs(
                    client
                        .get_async_connection()
                        .await
                        .expect("redis-rs connects"),
                )
            }
        }
    }

    async fn get(&mut self, key: &[u8]) -> Result<(), String> {
        match self {
            Driver::Zaris(c) => c.get(key).await.map(drop).map_err(|e| e.to_string()),
            Driver::RedisRs(c) => c
                .get::<_, Option<Vec<u8>>>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }

    async fn set(&mut self, key: &[u8]) -> Result<(), String> {
        match self {
            Driver::Zaris(c) => c.set(key, VALUE).await.map_err(|e| e.to_string()),
            Driver::RedisRs(c) => c
                .set::<_, _, ()>(key, VALUE)
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

fn key(rng: &mut u64) -> Vec<u8> {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    format!("key:{}", *rng % KEYS).into_bytes()
}

struct Load {
    ops_per_sec: f64,
    p50: Duration,
    p99: Duration,
    errors: usize,
}

async fn load(driver: &Driver, tasks: usize, length: Duration) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (mut driver, stop) = (driver.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng =
                    0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407);
                let mut latencies = Vec::with_capacity(1 << 16);
                let mut errors = 0;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = key(&mut rng);
                    let started = Instant::now();
                    let result = if i.is_multiple_of(2) {
                        driver.get(&key).await
                    } else {
                        driver.set(&key).await
                    };
                    latencies.push(started.elapsed());
                    errors += usize::from(result.is_err());
                    i += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for handle in handles {
        let (latencies, e) = handle.await.expect("load task");
        all.extend(latencies);
        errors += e;
    }
    let elapsed = started.elapsed();
    all.sort_unstable();
    let at = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Load {
        ops_per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        errors,
    }
}

struct Recovery {
    cluster_failover: Duration,
    writes_back_after: Option<Duration>,
    failed: usize,
    total: usize,
}

/// Kills the master of slot 0 under a write load and measures how long
/// writes to its slots take to succeed again.
fn failover(server: &str, name: &str, rt: &tokio::runtime::Runtime) -> Recovery {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let seeds = cluster.addrs();
    let driver = rt.block_on(Driver::connect(name, &seeds));
    let dead_slots: std::ops::RangeInclusive<u16> = 0..=5460;
    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let writers: Vec<_> = (0..64)
        .map(|t| {
            let (mut driver, stop) = (driver.clone(), stop.clone());
            rt.spawn(async move {
                let mut rng = 0x1234_5678u64 + t;
                let mut log = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let key = key(&mut rng);
                    let started = origin.elapsed();
                    let ok = driver.set(&key).await.is_ok();
                    log.push((started, origin.elapsed(), ok, slot_for_key(&key)));
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                log
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let master = cluster.owner_index(0).expect("owner of slot 0");
    let killed_at = origin.elapsed();
    cluster.kill(master);
    cluster
        .wait_failover_of(master, 0)
        .expect("a replica takes over");
    let cluster_failover = origin.elapsed() - killed_at;
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let mut log = Vec::new();
    for writer in writers {
        log.extend(rt.block_on(writer).expect("writer"));
    }
    let writes_back_after = log
        .iter()
        .filter(|(started, _, ok, slot)| *ok && *started >= killed_at && dead_slots.contains(slot))
        .map(|(_, ended, ..)| *ended - killed_at)
        .min();
    Recovery {
        cluster_failover,
        writes_back_after,
        failed: log.iter().filter(|e| !e.2).count(),
        total: log.len(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// `--quick`: 1 s runs; `--only NAME`: one client; `--tasks N`: one
/// concurrency; `--no-failover`: skip the kill -9 phase.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let quick = args.iter().any(|a| a == "--quick");
    let length = match flag("--seconds") {
        Some(s) => Duration::from_secs(s.parse().expect("--seconds takes a number")),
        None if quick => Duration::from_secs(1),
        None => Duration::from_secs(4),
    };
    let only = flag("--only");
    let task_counts: Vec<usize> = match flag("--tasks") {
        Some(n) => vec![n.parse().expect("--tasks takes a number")],
        None => vec![1, 16, 256],
    };
    let names: Vec<&str> = ["zaris", "redis-rs"]
        .into_iter()
        .filter(|n| only.as_deref().is_none_or(|o| o == *n))
        .collect();
    let server = zaris_tests::server_binary();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!("==> starting a local cluster ({server}: 3 masters, 3 replicas)");
    let cluster = Cluster::start(&server, 3, 1).expect("cluster");
    let seeds = cluster.addrs();
    let drivers: Vec<Driver> = names
        .iter()
        .map(|name| rt.block_on(Driver::connect(name, &seeds)))
        .collect();
    println!(
        "==> GET/SET 50/50 over {KEYS} keys, {} s per run",
        length.as_secs()
    );
    println!(
        "{:>6} {:>9} {:>12} {:>12} {:>12} {:>7}",
        "tasks", "client", "ops/s", "p50", "p99", "errors"
    );
    for &tasks in &task_counts {
        let mut results = Vec::new();
        for driver in &drivers {
            rt.block_on(load(driver, tasks, Duration::from_millis(300))); // warm-up
            let result = rt.block_on(load(driver, tasks, length));
            println!(
                "{tasks:>6} {:>9} {:>12.0} {:>12} {:>12} {:>7}",
                driver.name(),
                result.ops_per_sec,
                ms(result.p50),
                ms(result.p99),
                result.errors
            );
            results.push(result);
        }
        let [z, r] = results.as_slice() else { continue };
        println!(
            "{tasks:>6} {:>9} {:>11.2}x {:>11.2}x {:>11.2}x   (zaris / redis-rs; throughput higher is better, latency lower)",
            "ratio",
            z.ops_per_sec / r.ops_per_sec,
            z.p50.as_secs_f64() / r.p50.as_secs_f64(),
            z.p99.as_secs_f64() / r.p99.as_secs_f64(),
        );
    }
    drop(drivers);
    drop(cluster);
    if args.iter().any(|a| a == "--no-failover") {
        return;
    }
    println!("==> kill -9 of a master under a 64-task write load (a fresh cluster per client)");
    for &name in &names {
        let r = failover(&server, name, &rt);
        let back = r.writes_back_after.map_or_else(|| "never".to_owned(), ms);
        println!(
            "{name:>9}: cluster failed over in {}, writes to the dead master's slots succeeded again after {back}; {} of {} writes failed",
            ms(r.cluster_failover),
            r.failed,
            r.total
        );
    }
}
