//! Zaris's client against fred and redis-rs on the same local cluster, in
//! one run:
//!
//! 1. single commands: GET/SET 50/50 over 100k keys at 1, 16 and 256
//!    concurrent tasks (ops/s, p50, p99, client CPU per operation);
//! 2. pipelines: batches of 100 and 1,000 mixed SET/GET/HSET over random
//!    keys, one and four batches in flight: Zaris's pipeline, fred's, and
//!    redis-rs's sync `ClusterPipeline` (its async cluster client refuses
//!    cross-slot pipelines); ops/s, the CPU each client spends per
//!    operation (this process's own `getrusage`: the servers are other
//!    processes), and the servers' CPU (`INFO CPU`), to show when they are
//!    the bottleneck;
//! 3. client-side cache hits ([`hits`]): Zaris's `GET` and `HGET` hits
//!    against redis-rs's own cache (`cache-aio`) and an uncached `GET`, on
//!    one current-thread runtime: the thread's CPU time and user-space
//!    instructions per read, judged against the bars (a hit at most 250
//!    ns, and at most 0.5x redis-rs's); `--no-hits` skips it;
//! 4. user-space instructions per operation of each client in each of
//!    the scenarios of 1 and 2, under callgrind (a child process per client and
//!    scenario: one current-thread runtime, a fixed number of operations,
//!    start-up and warm-up left out);
//! 5. a write pause of one master (`CLIENT PAUSE ms WRITE`, 3 s and 12 s:
//!    what a manual failover and atomic slot migration do) under reads and
//!    `INCR`s there and reads elsewhere ([`pause`]): the longest and p99
//!    read of the paused master, the others' longest, the failures, and
//!    the increments applied twice (`--no-pause` skips it);
//! 6. `kill -9` of a master under a write load, each client on a fresh
//!    cluster: time until writes to its slots succeed again. Bounded: each
//!    write has a 1 s time-out, and the phase ends [`RECOVERY_LIMIT`] after
//!    the kill; a client whose writes are not back by then is reported so,
//!    and the run goes on.
//!
//! Phases 1 and 2 also count, per operation, the client process's system
//! calls by kind (send, recv, epoll, futex: kernel tracepoints) and its
//! context switches (`getrusage`): counts that noise barely moves, where
//! CPU time swings. The tracepoints are not free: each call they count
//! costs the kernel 1.4-2.3 µs more on a 2-core VM, charged to the client
//! as system time. So system calls are counted in a turn of their own
//! after the timed rounds, and no CPU time is taken from that turn.
//!
//! The counted turn also counts the sleeping threads the client's threads
//! wake (the scheduler's `sched:sched_waking` tracepoint, which fires in
//! the waker's context), because fewer system calls need not mean less
//! system time. At 16 tasks a client's system time goes on sleeping and
//! waking:
//! - its sends wake the node that reads them (the loopback runs the node's
//!   receive in the sender's call);
//! - its workers park in `epoll_wait` and `futex`, and wake each other.
//!
//! Those wake-ups come per operation, not per call, and are about the same
//! for every client: a `perf record -e sched:sched_wakeup -a` of a
//! `--only NAME --tasks 16` run shows Zaris's threads waking 0.17 nodes and
//! 0.11 of their own threads per operation, and redis-rs's 0.16 and 0.11,
//! although Zaris makes 0.79x redis-rs's calls.
//!
//! In the 16-task and pipeline scenarios, phases 1, 2 and 4 also run Zaris
//! through redis-rs's API (`zaris (redis-rs API)`: the `redis-compat`
//! feature's `ConnectionLike`, driven by `AsyncCommands` and
//! `redis::pipe()`), recorded beside Zaris, and print its cost over
//! Zaris's own API: over `Client::cmd` at 16 tasks (`zaris (cmd)`, run
//! there for this, not recorded: the `zaris` row's `get`/`set` are typed
//! calls that skip the key-spec look-up) and over `Pipeline::cmd` (the
//! `zaris` row) in the pipelines.
//!
//! Phases 1 and 4 also run a bare floor ([`bare`], `--no-bare` to leave
//! it out): a shared connection per node and gathered writes, no
//! redirections, retries, time-outs or reply values. What it costs is what
//! any client on this runtime pays before its own features; it is printed
//! with its ratio to the best peer, and not recorded. At 16 tasks it makes
//! the same calls and wakes as many threads as Zaris, so the difference
//! between them is Zaris's own user-space work.
//!
//! In phases 1 and 2 the clients take turns (three rounds of 2 s each, then
//! the counted turn), so a noisy neighbour hurts them alike, and each
//! figure is the median of a client's rounds.
//!
//! `just bench-client` (`just bench-client --quick`: one 1 s turn each).
//! Not a test: the numbers depend on the machine, and are printed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fred::interfaces::{ClientLike, HashesInterface, KeysInterface};
use redis::AsyncCommands;
use zaris_bench::counts::{
    callgrind_total, context_switches, process_cpu, SyscallCounter, Syscalls,
};
use zaris_client::Client;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::Frame;

const KEYS: u64 = 100_000;
const VALUE: &[u8] = &[b'v'; 64];
/// How long after a `kill -9` a client may take to write again.
const RECOVERY_LIMIT: Duration = Duration::from_secs(20);
/// Each write of the failover phase gives up after this long.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

const CLIENTS: [&str; 3] = ["zaris", "fred", "redis-rs"];

/// Zaris behind redis-rs's `ConnectionLike` (recorded; see the module docs).
const COMPAT: &str = zaris_bench::clients::COMPAT;

/// Zaris's own `Client::cmd`, the reference the adapter is held to at 16
/// tasks: printed, not recorded.
const CMD: &str = "zaris (cmd)";

/// redis-rs's API over a connection that answers from memory (no I/O):
/// what building the commands and reading the replies costs a redis-rs
/// user on any connection, the floor under [`COMPAT`]. Counted under
/// callgrind only (its tasks never wait, so they would starve a timed
/// run's clock), printed, not recorded.
const API_FLOOR: &str = "redis-rs API alone";

/// The width of the client column in the printed tables.
const NAME_WIDTH: usize = 20;

/// The floor of the single-command scenarios ([`bare`]): printed beside
/// the clients, not recorded, not a peer.
const BARE: &str = "bare";

#[path = "client/bare.rs"]
mod bare;
#[path = "client/hits.rs"]
mod hits;
#[path = "client/pause.rs"]
mod pause;

/// The timed phases' runtime: two worker threads, one per core here.
const WORKERS: usize = 2;

/// A runtime phases 1 and 2 run the clients on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Runtime {
    /// tokio's multi-thread runtime with this many workers.
    Workers(usize),
    /// tokio's current-thread runtime: every task on the thread that
    /// drives it.
    Current,
}

/// What a current-thread runtime's scenarios are named after.
use zaris_bench::clients::ONE_THREAD;

impl Runtime {
    fn build(self) -> tokio::runtime::Runtime {
        match self {
            Runtime::Workers(n) => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .enable_all()
                .build(),
            Runtime::Current => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
        }
        .expect("runtime")
    }

    fn describe(self) -> String {
        match self {
            Runtime::Workers(n) => format!("a {n}-worker runtime"),
            Runtime::Current => "a current-thread runtime".to_owned(),
        }
    }

    /// The scenario names' suffix.
    fn suffix(self) -> String {
        match self {
            Runtime::Workers(WORKERS) => String::new(),
            Runtime::Workers(n) => format!(", {n} workers"),
            Runtime::Current => ONE_THREAD.to_owned(),
        }
    }
}

#[derive(Clone)]
enum Driver {
    Zaris(Client),
    Fred(fred::clients::Client),
    RedisRs(redis::cluster_async::ClusterConnection),
    Bare(bare::Bare),
    Compat(zaris_client::compat::RedisConnection),
    Cmd(Client),
    ApiFloor(Memory),
}

/// A redis-rs connection that answers every command nil at once ([`API_FLOOR`]).
#[derive(Clone)]
struct Memory;

impl redis::aio::ConnectionLike for Memory {
    fn req_packed_command<'a>(
        &'a mut self,
        _: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(std::future::ready(Ok(redis::Value::Nil)))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        _: &'a redis::Pipeline,
        _: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        Box::pin(std::future::ready(Ok(vec![redis::Value::Nil; count])))
    }

    fn get_db(&self) -> i64 {
        0
    }
}

fn redis_rs_client(seeds: &[String]) -> redis::cluster::ClusterClient {
    let urls: Vec<String> = seeds.iter().map(|s| format!("redis://{s}")).collect();
    redis::cluster::ClusterClient::new(urls).expect("redis-rs accepts the seeds")
}

impl Driver {
    fn name(&self) -> &'static str {
        match self {
            Driver::Zaris(_) => "zaris",
            Driver::Fred(_) => "fred",
            Driver::RedisRs(_) => "redis-rs",
            Driver::Bare(_) => BARE,
            Driver::Compat(_) => COMPAT,
            Driver::Cmd(_) => CMD,
            Driver::ApiFloor(_) => API_FLOOR,
        }
    }

    async fn connect(name: &str, seeds: &[String]) -> Result<Driver, String> {
        let connecting = async {
            match name {
                "zaris" => Client::connect(seeds)
                    .await
                    .map(Driver::Zaris)
                    .map_err(|e| e.to_string()),
                "fred" => {
                    let hosts: Vec<(String, u16)> = seeds
                        .iter()
                        .map(|s| {
                            let (host, port) = s.rsplit_once(':').expect("host:port");
                            (host.to_owned(), port.parse().expect("a port"))
                        })
                        .collect();
                    let config = fred::types::config::Config {
                        server: fred::types::config::ServerConfig::new_clustered(hosts),
                        ..Default::default()
                    };
                    let client = fred::types::Builder::from_config(config)
                        .set_policy(fred::types::config::ReconnectPolicy::new_exponential(
                            0, 50, 1_000, 2,
                        ))
                        .build()
                        .map_err(|e| e.to_string())?;
                    client.init().await.map_err(|e| e.to_string())?;
                    Ok(Driver::Fred(client))
                }
                BARE => bare::Bare::connect(seeds).await.map(Driver::Bare),
                API_FLOOR => Ok(Driver::ApiFloor(Memory)),
                COMPAT | CMD => {
                    let client = Client::connect(seeds).await.map_err(|e| e.to_string())?;
                    Ok(if name == CMD {
                        Driver::Cmd(client)
                    } else {
                        Driver::Compat(client.redis_compat())
                    })
                }
                _ => redis_rs_client(seeds)
                    .get_async_connection()
                    .await
                    .map(Driver::RedisRs)
                    .map_err(|e| e.to_string()),
            }
        };
        tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .map_err(|_| format!("{name} did not connect within 10 s"))?
    }

    async fn get(&mut self, key: &[u8]) -> Result<(), String> {
        match self {
            Driver::Zaris(c) => c.get(key).await.map(drop).map_err(|e| e.to_string()),
            Driver::Fred(c) => c
                .get::<Option<bytes::Bytes>, _>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::RedisRs(c) => c
                .get::<_, Option<Vec<u8>>>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::Bare(c) => c.call(&[b"GET", key]).await,
            Driver::Compat(c) => c
                .get::<_, Option<Vec<u8>>>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::ApiFloor(c) => c
                .get::<_, Option<Vec<u8>>>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::Cmd(c) => c
                .cmd(&[&b"GET"[..], key])
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }

    async fn set(&mut self, key: &[u8]) -> Result<(), String> {
        match self {
            Driver::Zaris(c) => c.set(key, VALUE).await.map_err(|e| e.to_string()),
            Driver::Fred(c) => c
                .set::<(), _, _>(key, VALUE, None, None, false)
                .await
                .map_err(|e| e.to_string()),
            Driver::RedisRs(c) => c
                .set::<_, _, ()>(key, VALUE)
                .await
                .map_err(|e| e.to_string()),
            Driver::Bare(c) => c.call(&[b"SET", key, VALUE]).await,
            Driver::Compat(c) => c
                .set::<_, _, ()>(key, VALUE)
                .await
                .map_err(|e| e.to_string()),
            Driver::ApiFloor(c) => c
                .set::<_, _, ()>(key, VALUE)
                .await
                .map_err(|e| e.to_string()),
            Driver::Cmd(c) => c
                .cmd(&[&b"SET"[..], key, VALUE])
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }

    /// `INCR key` (the pause phase's writes: a copy sent twice shows).
    async fn incr(&mut self, key: &[u8]) -> Result<(), String> {
        match self {
            Driver::Zaris(c) => c
                .cmd(&[&b"INCR"[..], key])
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::Fred(c) => c
                .incr::<i64, _>(key)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::RedisRs(c) => c
                .incr::<_, _, i64>(key, 1)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            _ => unreachable!("the pause phase runs Zaris and its peers"),
        }
    }

    /// One batch of mixed commands as a pipeline; how many failed.
    async fn pipeline(&self, batch: &[Op]) -> Result<usize, String> {
        match self {
            Driver::Zaris(c) => {
                let mut pipeline = c.pipeline();
                for op in batch {
                    match op {
                        Op::Set(key) => pipeline.cmd(&[b"SET", &key[..], VALUE]),
                        Op::Get(key) => pipeline.cmd(&[b"GET", &key[..]]),
                        Op::HSet(key) => pipeline.cmd(&[b"HSET", &key[..], b"f", VALUE]),
                    };
                }
                let results = pipeline.run().await.map_err(|e| e.to_string())?;
                Ok(results.iter().filter(|r| r.is_err()).count())
            }
            Driver::Fred(c) => {
                let pipeline = c.pipeline();
                for op in batch {
                    let queued: Result<(), _> = match op {
                        Op::Set(key) => pipeline.set(&key[..], VALUE, None, None, false).await,
                        Op::Get(key) => pipeline.get(&key[..]).await,
                        Op::HSet(key) => pipeline.hset(&key[..], ("f", VALUE)).await,
                    };
                    queued.map_err(|e| e.to_string())?;
                }
                let results = pipeline.try_all::<fred::types::Value>().await;
                Ok(results.iter().filter(|r| r.is_err()).count())
            }
            Driver::Compat(c) => Ok(redis_api_pipeline(&mut c.clone(), batch).await),
            Driver::ApiFloor(c) => Ok(redis_api_pipeline(&mut c.clone(), batch).await),
            Driver::RedisRs(_) => unreachable!("redis-rs pipelines run on threads"),
            Driver::Bare(c) => {
                let lines: Vec<Vec<&[u8]>> = batch
                    .iter()
                    .map(|op| match op {
                        Op::Set(key) => vec![&b"SET"[..], &key[..], VALUE],
                        Op::Get(key) => vec![&b"GET"[..], &key[..]],
                        Op::HSet(key) => vec![&b"HSET"[..], &key[..], b"f", VALUE],
                    })
                    .collect();
                c.pipeline(&lines).await
            }
            Driver::Cmd(_) => unreachable!("the reference runs single commands only"),
        }
    }
}

/// One batch through `redis::pipe()` on an async redis-rs connection; how
/// many failed.
async fn redis_api_pipeline(con: &mut impl redis::aio::ConnectionLike, batch: &[Op]) -> usize {
    let mut pipe = redis::pipe();
    for op in batch {
        match op {
            Op::Set(key) => pipe.set(&key[..], VALUE),
            Op::Get(key) => pipe.get(&key[..]),
            Op::HSet(key) => pipe.hset(&key[..], "f", VALUE),
        };
    }
    match pipe.query_async::<Vec<redis::Value>>(con).await {
        Ok(_) => 0,
        Err(_) => batch.len(),
    }
}

/// One batch through redis-rs's sync `ClusterPipeline`; how many failed.
fn redis_rs_pipeline(conn: &mut redis::cluster::ClusterConnection, batch: &[Op]) -> usize {
    let mut pipe = redis::cluster::cluster_pipe();
    for op in batch {
        match op {
            Op::Set(key) => pipe.set(key, VALUE),
            Op::Get(key) => pipe.get(key),
            Op::HSet(key) => pipe.hset(key, "f", VALUE),
        };
    }
    match pipe.query::<Vec<redis::Value>>(conn) {
        Ok(_) => 0,
        Err(_) => batch.len(),
    }
}

/// A command of the pipeline phase.
enum Op {
    Set(Vec<u8>),
    Get(Vec<u8>),
    HSet(Vec<u8>),
}

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// A random key, `key:<n>`, on the stack: formatting it into a fresh
/// `Vec` cost about 650 instructions per operation (`format!` and its
/// allocation), the same for every client, inside the measured window.
fn key(rng: &mut u64) -> Key {
    Key::new(b"key:", next(rng) % KEYS)
}

/// `prefix` and a number, in a buffer of its own.
struct Key {
    bytes: [u8; 32],
    len: usize,
}

impl Key {
    fn new(prefix: &[u8], mut n: u64) -> Key {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut bytes = [0u8; 32];
        let len = prefix.len() + digits.len() - at;
        bytes[..prefix.len()].copy_from_slice(prefix);
        bytes[prefix.len()..len].copy_from_slice(&digits[at..]);
        Key { bytes, len }
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// `n` mixed commands over random keys: 40% SET, 40% GET, 20% HSET.
fn batch(rng: &mut u64, n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| match i % 5 {
            0 | 3 => Op::Set(key(rng).to_vec()),
            1 | 4 => Op::Get(key(rng).to_vec()),
            _ => Op::HSet(Key::new(b"hash:", next(rng) % KEYS).to_vec()),
        })
        .collect()
}

/// CPU time every running server of `cluster` has used (`INFO CPU`).
fn servers_cpu(cluster: &Cluster) -> Duration {
    let mut total = 0.0;
    for i in cluster.running() {
        let Ok(Frame::BulkString(info)) = cluster
            .conn(i)
            .and_then(|mut c| c.command(&[b"INFO", b"CPU"]))
        else {
            continue;
        };
        for line in String::from_utf8_lossy(&info).lines() {
            if let Some((name, value)) = line.trim().split_once(':') {
                if name == "used_cpu_sys" || name == "used_cpu_user" {
                    total += value.parse::<f64>().unwrap_or(0.0);
                }
            }
        }
    }
    Duration::from_secs_f64(total)
}

/// CPU spent over a run: by this process (the client: in its own code,
/// and in the kernel on its behalf, which on loopback includes much of the
/// TCP work) and by the servers; and the counts noise cannot move: this
/// process's system calls by kind and its context switches.
struct Cpu {
    user: Duration,
    system: Duration,
    servers: Duration,
    /// `None` where the kernel refuses syscall tracepoints (said once).
    syscalls: Option<Syscalls>,
    /// Voluntary (it waited) and involuntary (preempted).
    switches: (u64, u64),
}

impl Cpu {
    fn client(&self) -> Duration {
        self.user + self.system
    }
}

/// [`Cpu`] over `run`; with system calls counted if `counted` (then its
/// system time includes the tracepoints' cost, and is not reported).
fn measure_cpu<T>(cluster: &Cluster, counted: bool, run: impl FnOnce() -> T) -> (T, Cpu) {
    static REFUSED: std::sync::Once = std::sync::Once::new();
    let servers = servers_cpu(cluster);
    let counter = counted
        .then(|| {
            SyscallCounter::start()
                .map_err(|e| REFUSED.call_once(|| println!("   no syscall counts: {e}")))
                .ok()
        })
        .flatten();
    let (switches, (user, system)) = (context_switches(), process_cpu());
    let result = run();
    let (user_after, system_after) = process_cpu();
    let switches_after = context_switches();
    let syscalls = counter.map(SyscallCounter::stop);
    let cpu = Cpu {
        user: user_after - user,
        system: system_after - system,
        servers: servers_cpu(cluster) - servers,
        syscalls,
        switches: (switches_after.0 - switches.0, switches_after.1 - switches.1),
    };
    (result, cpu)
}

struct Load {
    ops: u64,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
    errors: usize,
}

impl Load {
    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }
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
        ops: all.len() as u64,
        elapsed,
        p50: at(0.50),
        p99: at(0.99),
        errors,
    }
}

/// The batches each of `in_flight` senders cycles through, made before
/// the clock starts (so the CPU measured is the clients'), the same for
/// every client.
type Prepared = Arc<Vec<Vec<Vec<Op>>>>;

fn prepare(size: usize, in_flight: usize) -> Prepared {
    Arc::new(
        (0..in_flight)
            .map(|t| {
                let mut rng = 0x51_7CC1_B727_220A_u64 ^ (t as u64 + 1);
                (0..(64_000 / size).max(4))
                    .map(|_| batch(&mut rng, size))
                    .collect()
            })
            .collect(),
    )
}

/// Pipelines of the prepared batches, one sender per list, for `length`.
fn pipelines(
    name: &str,
    driver: Option<&Driver>,
    seeds: &[String],
    rt: &tokio::runtime::Runtime,
    prepared: &Prepared,
    length: Duration,
) -> Load {
    let ops = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    match driver {
        Some(driver) => {
            let tasks: Vec<_> = (0..prepared.len())
                .map(|t| {
                    let (driver, stop, ops, errors, prepared) = (
                        driver.clone(),
                        stop.clone(),
                        ops.clone(),
                        errors.clone(),
                        prepared.clone(),
                    );
                    rt.spawn(async move {
                        for batch in prepared[t].iter().cycle() {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let failed = driver.pipeline(batch).await.unwrap_or(batch.len());
                            ops.fetch_add(batch.len() as u64, Ordering::Relaxed);
                            errors.fetch_add(failed as u64, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            // On the runtime: a current-thread one runs its tasks only
            // while it is driven.
            rt.block_on(async {
                tokio::time::sleep(length).await;
                stop.store(true, Ordering::Relaxed);
                for task in tasks {
                    task.await.expect("pipeline task");
                }
            });
        }
        None => {
            assert_eq!(name, "redis-rs");
            let client = redis_rs_client(seeds);
            let threads: Vec<_> = (0..prepared.len())
                .map(|t| {
                    let mut conn = client.get_connection().expect("redis-rs connects");
                    let (stop, ops, errors, prepared) =
                        (stop.clone(), ops.clone(), errors.clone(), prepared.clone());
                    std::thread::spawn(move || {
                        for batch in prepared[t].iter().cycle() {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let failed = redis_rs_pipeline(&mut conn, batch);
                            ops.fetch_add(batch.len() as u64, Ordering::Relaxed);
                            errors.fetch_add(failed as u64, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            std::thread::sleep(length);
            stop.store(true, Ordering::Relaxed);
            for thread in threads {
                thread.join().expect("redis-rs thread");
            }
        }
    }
    Load {
        ops: ops.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        p50: Duration::ZERO,
        p99: Duration::ZERO,
        errors: errors.load(Ordering::Relaxed) as usize,
    }
}

/// A scenario of phases 1 and 2, by its recorded name.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Single { tasks: usize },
    Pipelines { size: usize, in_flight: usize },
}

impl Shape {
    fn name(self) -> String {
        match self {
            Shape::Single { tasks: 1 } => "1 task".to_owned(),
            Shape::Single { tasks } => format!("{tasks} tasks"),
            Shape::Pipelines { size, in_flight } => format!("pipelines {size} x {in_flight}"),
        }
    }

    fn parse(name: &str) -> Option<Shape> {
        if let Some(rest) = name.strip_prefix("pipelines ") {
            let (size, in_flight) = rest.split_once(" x ")?;
            return Some(Shape::Pipelines {
                size: size.parse().ok()?,
                in_flight: in_flight.parse().ok()?,
            });
        }
        let tasks = name.split_once(' ')?.0.parse().ok()?;
        Some(Shape::Single { tasks })
    }
}

/// `tasks` tasks doing `each` GET/SET (alternately) over random keys;
/// how many failed.
async fn fixed_load(driver: &Driver, tasks: usize, each: usize) -> usize {
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let mut driver = driver.clone();
            tokio::spawn(async move {
                let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ (t as u64 + 1);
                let mut errors = 0;
                for i in 0..each {
                    let key = key(&mut rng);
                    let result = if i % 2 == 0 {
                        driver.get(&key).await
                    } else {
                        driver.set(&key).await
                    };
                    errors += usize::from(result.is_err());
                }
                errors
            })
        })
        .collect();
    let mut errors = 0;
    for handle in handles {
        errors += handle.await.unwrap_or(each);
    }
    errors
}

/// The callgrind window: collection is on while a thread is inside this
/// function (`--toggle-collect=*zaris_measured_window*`), so the count is
/// the window's work alone, not start-up, connecting or warm-up.
#[inline(never)]
fn zaris_measured_window(work: &mut dyn FnMut() -> usize) -> usize {
    std::hint::black_box(work())
}

/// How many operations the instruction count of a scenario runs.
fn instruction_ops(shape: Shape, quick: bool) -> usize {
    match (shape, quick) {
        (Shape::Single { .. }, false) => 4_000,
        (Shape::Single { .. }, true) => 1_000,
        (Shape::Pipelines { .. }, false) => 20_000,
        (Shape::Pipelines { .. }, true) => 5_000,
    }
}

/// The child a callgrind count runs (`--instructions-child CLIENT
/// SCENARIO SEEDS`): one current-thread runtime, a warm-up, then a fixed
/// number of operations inside [`zaris_measured_window`]; prints
/// `ops N errors E`.
fn instructions_child(name: &str, scenario: &str, seeds: &[String], quick: bool) {
    if let Some(read) = hits::Read::parse(scenario) {
        let ops = if quick { 2_000 } else { 10_000 };
        let (ops, missed) = hits::child(name, read, seeds, ops, &mut zaris_measured_window);
        println!("ops {ops} errors {missed}");
        return;
    }
    let shape = Shape::parse(scenario).expect("a scenario name");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ops = instruction_ops(shape, quick);
    let (ops, errors) = match shape {
        Shape::Single { tasks } => {
            let driver = rt
                .block_on(Driver::connect(name, seeds))
                .expect("the client connects");
            let each = (ops / tasks).max(4);
            rt.block_on(fixed_load(&driver, tasks, 4)); // warm-up
            let errors =
                zaris_measured_window(&mut || rt.block_on(fixed_load(&driver, tasks, each)));
            (each * tasks, errors)
        }
        Shape::Pipelines { size, in_flight } => {
            let prepared = prepare(size, in_flight);
            let rounds = (ops / (size * in_flight)).max(2);
            let errors = if name == "redis-rs" {
                let client = redis_rs_client(seeds);
                let threads: Vec<_> = (0..in_flight)
                    .map(|t| {
                        let mut conn = client.get_connection().expect("redis-rs connects");
                        redis_rs_pipeline(&mut conn, &prepared[t][0]); // warm-up
                        let prepared = prepared.clone();
                        std::thread::spawn(move || {
                            zaris_measured_window(&mut || {
                                prepared[t]
                                    .iter()
                                    .cycle()
                                    .skip(1)
                                    .take(rounds)
                                    .map(|batch| redis_rs_pipeline(&mut conn, batch))
                                    .sum()
                            })
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("redis-rs thread"))
                    .sum()
            } else {
                let driver = rt
                    .block_on(Driver::connect(name, seeds))
                    .expect("the client connects");
                // Each sender a task of its own, as in phase 2: `skip`
                // batches of its list, then `take` of them.
                let run = |skip: usize, take: usize| {
                    rt.block_on(async {
                        let senders: Vec<_> = (0..in_flight)
                            .map(|t| {
                                let (driver, prepared) = (driver.clone(), prepared.clone());
                                tokio::spawn(async move {
                                    let mut failed = 0;
                                    for batch in prepared[t].iter().cycle().skip(skip).take(take) {
                                        failed +=
                                            driver.pipeline(batch).await.unwrap_or(batch.len());
                                    }
                                    failed
                                })
                            })
                            .collect();
                        let mut failed = 0;
                        for sender in senders {
                            failed += sender.await.unwrap_or(take * size);
                        }
                        failed
                    })
                };
                run(0, 1); // warm-up
                zaris_measured_window(&mut || run(1, rounds))
            };
            (rounds * size * in_flight, errors)
        }
    };
    println!("ops {ops} errors {errors}");
}

/// User-space instructions per operation of `name` in `shape`, counted by
/// callgrind in a child (this bench again, `--instructions-child`).
fn instructions(
    name: &str,
    scenario: &str,
    seeds: &[String],
    quick: bool,
    keep: Option<&std::path::Path>,
) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let file = format!("{name}-{scenario}.out").replace([' ', ':'], "-");
    let profile = std::env::temp_dir().join(format!(
        "zaris-bench-callgrind-{}-{file}",
        std::process::id()
    ));
    let mut command = std::process::Command::new("valgrind");
    command
        .args([
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=*zaris_measured_window*",
            "--dump-instr=no",
        ])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(exe)
        .args(["--instructions-child", name, scenario, &seeds.join(",")]);
    if quick {
        command.arg("--quick");
    }
    let output = command
        .output()
        .map_err(|e| format!("valgrind did not start: {e}"))?;
    let text = std::fs::read_to_string(&profile).unwrap_or_default();
    match keep {
        // For `callgrind_annotate`: where the instructions go.
        Some(dir) => {
            let kept = dir.join(file);
            let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::rename(&profile, kept));
        }
        None => {
            let _ = std::fs::remove_file(&profile);
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let counted = stdout.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next()?, words.next()?, words.next()?, words.next()?) {
            ("ops", ops, "errors", errors) => Some((ops.parse::<u64>().ok()?, errors.to_owned())),
            _ => None,
        }
    });
    let (Some((ops, errors)), Some(total)) = (counted, callgrind_total(&text)) else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The child's panic, where it panicked; else valgrind's last words.
        let panic: Vec<&str> = stderr
            .lines()
            .skip_while(|l| !l.contains("panicked"))
            .take(2)
            .collect();
        let last = if panic.is_empty() {
            stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ")
        } else {
            panic.join(" / ")
        };
        return Err(format!(
            "the callgrind child failed ({}): {last}",
            output.status
        ));
    };
    if errors != "0" {
        return Err(format!(
            "{errors} of {ops} operations failed under callgrind"
        ));
    }
    Ok(total as f64 / ops.max(1) as f64)
}

/// Phase 3: a cache hit's CPU time per read, Zaris's and redis-rs's,
/// beside an uncached `GET` ([`hits`]), printed and returned as rows.
fn cache_hits(
    seeds: &[String],
    only: Option<&str>,
    rounds: usize,
    quick: bool,
) -> Vec<zaris_bench::clients::HitRow> {
    let batches = if quick { 20 } else { 50 };
    println!(
        "==> [3/6] client-side cache hits: one current-thread runtime, {rounds} rounds of {batches} batches of 1,000 reads over 1,000 keys; \
         the thread's CPU time per read (the median over the batches)"
    );
    println!(
        "   {:<9} {:<16} {:>10} {:>12} {:>9}",
        "client", "read", "CPU ns", "reads/CPU s", "cached"
    );
    let mut rows = Vec::new();
    for read in hits::Read::ALL {
        for name in hits::CLIENTS
            .into_iter()
            .filter(|n| only.is_none_or(|o| o == *n))
        {
            match hits::measure(name, read, seeds, rounds, batches) {
                Ok(m) => {
                    println!(
                        "   {name:<9} {:<16} {:>10.0} {:>12} {:>8.1}%",
                        read.name(),
                        m.ns_per_read,
                        m.reads,
                        100.0 * m.hit_share
                    );
                    rows.push(zaris_bench::clients::HitRow {
                        client: name.to_owned(),
                        read: read.name().to_owned(),
                        cpu_ns_per_read: m.ns_per_read,
                        cached_share: m.hit_share,
                        instructions_per_read: None,
                    });
                }
                Err(e) => println!("   {name:<9} {:<16} {e}", read.name()),
            }
        }
    }
    for verdict in zaris_bench::clients::hit_verdicts(&rows) {
        println!("   {verdict}");
    }
    rows
}

/// Whether valgrind runs here (the instruction counts need it).
fn has_valgrind() -> bool {
    std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Instructions per read of each hit row, under callgrind.
fn count_hit_instructions(
    seeds: &[String],
    quick: bool,
    keep: Option<&std::path::Path>,
    rows: &mut [zaris_bench::clients::HitRow],
) {
    if !has_valgrind() {
        return;
    }
    for row in rows.iter_mut() {
        match instructions(&row.client, &row.read, seeds, quick, keep) {
            Ok(per_read) => {
                println!(
                    "   {:<9} {:<16} {per_read:>9.0} instructions/read (callgrind)",
                    row.client, row.read
                );
                row.instructions_per_read = Some(per_read);
            }
            Err(e) => println!("   {:<9} {:<16} instructions: {e}", row.client, row.read),
        }
    }
}

struct Recovery {
    cluster_failover: Option<Duration>,
    writes_back_after: Option<Duration>,
    failed: usize,
    total: usize,
}

/// Kills the master of slot 0 under a write load and measures how long
/// writes to its slots take to succeed again, within [`RECOVERY_LIMIT`].
fn failover(server: &str, name: &str, rt: &tokio::runtime::Runtime) -> Result<Recovery, String> {
    let mut cluster = Cluster::start(server, 3, 1).map_err(|e| e.to_string())?;
    let seeds = cluster.addrs();
    let driver = rt.block_on(Driver::connect(name, &seeds))?;
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
                    let ok = matches!(
                        tokio::time::timeout(WRITE_TIMEOUT, driver.set(&key)).await,
                        Ok(Ok(()))
                    );
                    log.push((started, origin.elapsed(), ok, slot_for_key(&key)));
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                log
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let master = cluster.owner_index(0).map_err(|e| e.to_string())?;
    let killed_at = origin.elapsed();
    cluster.kill(master);
    let cluster_failover = cluster
        .wait_failover_of(master, 0)
        .ok()
        .map(|_| origin.elapsed() - killed_at);
    // The writers go on for 3 s after the cluster failed over, or until
    // the limit.
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let since = origin.elapsed() - killed_at;
        if since >= RECOVERY_LIMIT
            || cluster_failover.is_some_and(|f| since > f + Duration::from_secs(3))
        {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut log = Vec::new();
    for writer in writers {
        // Each write is bounded, so a writer ends within WRITE_TIMEOUT.
        match rt.block_on(async { tokio::time::timeout(WRITE_TIMEOUT * 3, writer).await }) {
            Ok(Ok(entries)) => log.extend(entries),
            _ => return Err(format!("a {name} writer did not stop")),
        }
    }
    let writes_back_after = log
        .iter()
        .filter(|(started, _, ok, slot)| *ok && *started >= killed_at && dead_slots.contains(slot))
        .map(|(_, ended, ..)| *ended - killed_at)
        .filter(|after| *after <= RECOVERY_LIMIT)
        .min();
    Ok(Recovery {
        cluster_failover,
        writes_back_after,
        failed: log.iter().filter(|e| !e.2).count(),
        total: log.len(),
    })
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// CPU per operation, in microseconds.
fn per_op(cpu: Duration, load: &Load) -> f64 {
    cpu.as_secs_f64() * 1e6 / load.ops.max(1) as f64
}

/// Client CPU per operation, in microseconds.
fn cpu_per_op(cpu: &Cpu, load: &Load) -> f64 {
    per_op(cpu.client(), load)
}

/// A share of the machine's cores over `elapsed`, in percent.
fn share(cpu: Duration, elapsed: Duration, cores: usize) -> f64 {
    100.0 * cpu.as_secs_f64() / (elapsed.as_secs_f64() * cores as f64)
}

/// `--quick`: one 1 s run per client; `--seconds N`, `--rounds N` (turns
/// each client takes); `--only NAME`: one client;
/// `--tasks N`: one concurrency; `--batch N`, `--in-flight N`: one
/// pipeline shape; `--workers N`: the runtime's worker threads (default
/// [`WORKERS`]; a run with another count is not recorded, so that the
/// history compares like with like); `--no-single`, `--no-pipeline`,
/// `--no-instructions`, `--no-failover`: skip a phase; `--no-bare`: leave
/// out the bare floor ([`bare`]); `--keep-profiles`:
/// keep the callgrind profiles (`target/bench-client/callgrind/`).
/// The run's rows: into `target/bench-client/last.json` always, and into
/// `bench/client-history.jsonl` (the dashboard's client page) unless the run
/// was quick (noisier), on another runtime, or asked not to be recorded.
fn save(
    server: &str,
    cores: usize,
    rows: Vec<zaris_bench::clients::ClientRow>,
    hits: Vec<zaris_bench::clients::HitRow>,
    pauses: Vec<zaris_bench::clients::PauseRow>,
    scratch: bool,
) {
    if rows.is_empty() && hits.is_empty() && pauses.is_empty() {
        return;
    }
    let run = zaris_bench::clients::ClientRun {
        commit: zaris_bench::history::this_commit(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cpu: zaris_bench::history::this_cpu(),
        cpus: cores,
        server: server.to_owned(),
        rows,
        hits,
        pauses,
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ sits in the workspace")
        .to_owned();
    let scratch_dir = root.join("target/bench-client");
    let written = std::fs::create_dir_all(&scratch_dir).and_then(|()| {
        std::fs::write(
            scratch_dir.join("last.json"),
            serde_json::to_string_pretty(&run).unwrap_or_default(),
        )
    });
    if let Err(e) = written {
        println!("could not write target/bench-client/last.json: {e}");
    }
    if scratch {
        println!("   (not recorded: --quick, --no-record or --workers; the rows are in target/bench-client/last.json)");
        return;
    }
    let history = root.join("bench/client-history.jsonl");
    match zaris_bench::clients::append(&history, &run) {
        Ok(()) => {
            println!("   recorded in bench/client-history.jsonl (the dashboard's client page)")
        }
        Err(e) => println!("could not record the run: {e:#}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let has = |name: &str| args.iter().any(|a| a == name);
    if let Some(i) = args.iter().position(|a| a == "--instructions-child") {
        let (name, scenario, seeds) = match &args[i + 1..] {
            [name, scenario, seeds, ..] => (name, scenario, seeds),
            _ => panic!("--instructions-child CLIENT SCENARIO SEEDS"),
        };
        let seeds: Vec<String> = seeds.split(',').map(str::to_owned).collect();
        instructions_child(name, scenario, &seeds, has("--quick"));
        return;
    }
    let length = match flag("--seconds") {
        Some(s) => Duration::from_secs(s.parse().expect("--seconds takes a number")),
        None if has("--quick") => Duration::from_secs(1),
        None => Duration::from_secs(2),
    };
    let only = flag("--only");
    let rounds: usize = match flag("--rounds") {
        Some(n) => n.parse().expect("--rounds takes a number"),
        None if has("--quick") => 1,
        None => 3,
    };
    let task_counts: Vec<usize> = match flag("--tasks") {
        Some(n) => vec![n.parse().expect("--tasks takes a number")],
        None => vec![1, 16, 256],
    };
    let sizes: Vec<usize> = match flag("--batch") {
        Some(n) => vec![n.parse().expect("--batch takes a number")],
        None => vec![100, 1000],
    };
    let in_flights: Vec<usize> = match flag("--in-flight") {
        Some(n) => vec![n.parse().expect("--in-flight takes a number")],
        None => vec![1, 4],
    };
    let mut shapes: Vec<Shape> = Vec::new();
    if !has("--no-single") {
        shapes.extend(task_counts.iter().map(|&tasks| Shape::Single { tasks }));
    }
    if !has("--no-pipeline") {
        for &size in &sizes {
            shapes.extend(
                in_flights
                    .iter()
                    .map(|&in_flight| Shape::Pipelines { size, in_flight }),
            );
        }
    }
    let names: Vec<&str> = CLIENTS
        .into_iter()
        .chain([COMPAT, CMD, API_FLOOR])
        .chain((!has("--no-bare")).then_some(BARE))
        .filter(|n| only.as_deref().is_none_or(|o| o == *n))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let server = zaris_tests::server_binary();
    let workers: usize = match flag("--workers") {
        Some(n) => n.parse().expect("--workers takes a number"),
        None => WORKERS,
    };
    // Phases 1 and 2 run on each runtime a program would choose: the
    // multi-thread one (a worker per core) and one current thread
    // (`flavor = "current_thread"`). `--runtime workers|current` runs one.
    let runtimes: Vec<Runtime> = match flag("--runtime").as_deref() {
        _ if flag("--workers").is_some() => vec![Runtime::Workers(workers)],
        Some("workers") => vec![Runtime::Workers(WORKERS)],
        Some("current") => vec![Runtime::Current],
        Some(other) => panic!("--runtime takes workers or current, not {other}"),
        None => vec![Runtime::Workers(WORKERS), Runtime::Current],
    };
    let rt = Runtime::Workers(workers).build();
    let described: Vec<String> = runtimes.iter().map(|r| r.describe()).collect();
    println!(
        "==> a local cluster ({server}: 3 masters, 3 replicas) on {cores} cores; the clients on {}",
        described.join(", then ")
    );
    let cluster = Cluster::start(&server, 3, 1).expect("cluster");
    let seeds = cluster.addrs();

    // What the run records (`bench/client-history.jsonl`), as the dashboard
    // charts it per commit.
    let mut recorded: Vec<zaris_bench::clients::ClientRow> = Vec::new();
    let mut record = |scenario: String, summaries: &[Summary]| {
        for s in summaries.iter().filter(|s| s.name != BARE && s.name != CMD) {
            recorded.push(zaris_bench::clients::ClientRow {
                scenario: scenario.clone(),
                client: s.name.to_owned(),
                ops_per_sec: s.ops_per_sec,
                cpu_us_per_op: s.cpu,
                user_us_per_op: s.user,
                system_us_per_op: s.system,
                syscalls_per_op: s.syscalls.map(|c| c.total),
                sends_per_op: s.syscalls.map(|c| c.send),
                recvs_per_op: s.syscalls.map(|c| c.recv),
                epoll_waits_per_op: s.syscalls.map(|c| c.epoll),
                futexes_per_op: s.syscalls.map(|c| c.futex),
                wakeups_per_op: s.syscalls.and_then(|c| c.wakeups),
                switches_per_op: Some(s.switches),
                instructions_per_op: None,
            });
        }
    };
    for &runtime in &runtimes {
        let prt = runtime.build();
        let suffix = runtime.suffix();
        let drivers: Vec<Driver> = names
            .iter()
            .filter_map(|name| match prt.block_on(Driver::connect(name, &seeds)) {
                Ok(driver) => Some(driver),
                Err(e) => {
                    println!("{name}{suffix}: {e}; left out");
                    None
                }
            })
            .collect();
        if !has("--no-single") {
            println!(
                "==> [1/6] single commands{suffix}: GET/SET 50/50 over {KEYS} keys; the clients take turns, {rounds} x {} s each; medians",
                length.as_secs()
            );
            println!(
                "{:>6} {:>NAME_WIDTH$} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
                "tasks", "client", "ops/s", "p50", "p99", "CPU µs/op", "user", "system", "errors"
            );
            for &tasks in &task_counts {
                let drivers: Vec<&Driver> = drivers
                    .iter()
                    .filter(|d| runs_in(d.name(), Shape::Single { tasks }))
                    .collect();
                let mut runs: Vec<Vec<(Load, Cpu)>> = drivers.iter().map(|_| Vec::new()).collect();
                for counted in turns(rounds) {
                    for (&driver, runs) in drivers.iter().zip(&mut runs) {
                        prt.block_on(load(driver, tasks, Duration::from_millis(200))); // warm-up
                        runs.push(measure_cpu(&cluster, counted, || {
                            prt.block_on(load(driver, tasks, length))
                        }));
                    }
                }
                let summaries: Vec<Summary> = drivers
                    .iter()
                    .zip(&runs)
                    .map(|(driver, runs)| Summary::of(driver.name(), runs, cores))
                    .collect();
                for s in &summaries {
                    println!(
                        "{tasks:>6} {:>NAME_WIDTH$} {:>10.0} {:>10} {:>10} {:>10.2} {:>9.2} {:>9.2} {:>6}",
                        s.name,
                        s.ops_per_sec,
                        ms(s.p50),
                        ms(s.p99),
                        s.cpu,
                        s.user,
                        s.system,
                        s.errors
                    );
                }
                print_counts(&tasks.to_string(), &summaries);
                ratios(&tasks.to_string(), &summaries);
                adapter_cost(&tasks.to_string(), Shape::Single { tasks }, &summaries);
                let plural = if tasks == 1 { "" } else { "s" };
                record(format!("{tasks} task{plural}{suffix}"), &summaries);
            }
        }

        if !has("--no-pipeline") {
            println!(
                "==> [2/6] pipelines{suffix}: mixed SET/GET/HSET (40/40/20) over {KEYS} keys; the clients take turns, {rounds} x {} s each; medians",
                length.as_secs()
            );
            println!(
                "{:>6} {:>9} {:>NAME_WIDTH$} {:>10} {:>10} {:>9} {:>9} {:>7} {:>8} {:>6}",
                "batch",
                "in flight",
                "client",
                "ops/s",
                "CPU µs/op",
                "user",
                "system",
                "client",
                "servers",
                "errors"
            );
            // redis-rs runs its sync ClusterPipeline on threads of its own.
            let pipeliners: Vec<(&str, Option<&Driver>)> = names
                .iter()
                .filter_map(|&name| match drivers.iter().find(|d| d.name() == name) {
                    _ if !runs_in(
                        name,
                        Shape::Pipelines {
                            size: 1,
                            in_flight: 1,
                        },
                    ) =>
                    {
                        None
                    }
                    _ if name == "redis-rs" => Some((name, None)),
                    Some(driver) => Some((name, Some(driver))),
                    None => None,
                })
                .collect();
            for &size in &sizes {
                for &in_flight in &in_flights {
                    let prepared = prepare(size, in_flight);
                    let mut runs: Vec<Vec<(Load, Cpu)>> =
                        pipeliners.iter().map(|_| Vec::new()).collect();
                    for counted in turns(rounds) {
                        for (&(name, driver), runs) in pipeliners.iter().zip(&mut runs) {
                            let warm_up = Duration::from_millis(200);
                            pipelines(name, driver, &seeds, &prt, &prepared, warm_up);
                            runs.push(measure_cpu(&cluster, counted, || {
                                pipelines(name, driver, &seeds, &prt, &prepared, length)
                            }));
                        }
                    }
                    let summaries: Vec<Summary> = pipeliners
                        .iter()
                        .zip(&runs)
                        .map(|(&(name, _), runs)| Summary::of(name, runs, cores))
                        .collect();
                    for s in &summaries {
                        println!(
                            "{size:>6} {in_flight:>9} {:>NAME_WIDTH$} {:>10.0} {:>10.2} {:>9.2} {:>9.2} {:>6.0}% {:>7.0}% {:>6}",
                            s.name,
                            s.ops_per_sec,
                            s.cpu,
                            s.user,
                            s.system,
                            s.client_share,
                            s.servers_share,
                            s.errors
                        );
                    }
                    print_counts(&format!("{size}x{in_flight}"), &summaries);
                    ratios(&format!("{size}x{in_flight}"), &summaries);
                    adapter_cost(
                        &format!("{size}x{in_flight}"),
                        Shape::Pipelines { size, in_flight },
                        &summaries,
                    );
                    record(
                        format!("pipelines {size} x {in_flight}{suffix}"),
                        &summaries,
                    );
                }
            }
            println!("   (CPU µs/op = user + system, this process alone; client and servers: shares of the machine's {cores} cores, together near 100% = saturated)");
        }
        drop(drivers);
    }
    let keep = has("--keep-profiles").then(|| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-client/callgrind")
    });
    let mut hit_rows = Vec::new();
    if !has("--no-hits") {
        hit_rows = cache_hits(&seeds, only.as_deref(), rounds, has("--quick"));
        if !has("--no-instructions") {
            count_hit_instructions(&seeds, has("--quick"), keep.as_deref(), &mut hit_rows);
        }
    }
    if !has("--no-instructions") {
        count_instructions(
            &shapes,
            &names,
            &seeds,
            has("--quick"),
            keep.as_deref(),
            &mut recorded,
        );
        if let Some(dir) = &keep {
            println!(
                "   profiles kept in {} (callgrind_annotate FILE)",
                dir.display()
            );
        }
    }
    let mut pauses = Vec::new();
    if !has("--no-pause") {
        let lengths = if has("--quick") {
            vec![Duration::from_secs(3)]
        } else {
            vec![Duration::from_secs(3), Duration::from_secs(12)]
        };
        println!(
            "==> [5/6] a write pause on one master (CLIENT PAUSE WRITE) under 4 readers and 4 INCR writers there, 4 readers elsewhere; each client with its defaults"
        );
        println!(
            "   {:<9} {:>6} {:>14} {:>13} {:>13} {:>7} {:>13} {:>5}",
            "client",
            "pause",
            "longest read",
            "p99 read",
            "others' read",
            "errors",
            "applied twice",
            "lost"
        );
        for &length in &lengths {
            for &name in names.iter().filter(|&&n| CLIENTS.contains(&n)) {
                match pause::run(&cluster, name, length, &rt) {
                    Ok(row) => {
                        println!(
                            "   {:<9} {:>5}s {:>11.0} ms {:>10.1} ms {:>10.1} ms {:>7} {:>13} {:>5}",
                            row.client,
                            row.pause_ms / 1000,
                            row.paused_max_read_ms,
                            row.paused_p99_read_ms,
                            row.other_max_read_ms,
                            row.errors,
                            row.applied_twice,
                            row.lost
                        );
                        pauses.push(row);
                    }
                    Err(e) => println!("   {name:<9} {e}"),
                }
            }
        }
    }
    drop(cluster);
    save(
        &server,
        cores,
        recorded,
        hit_rows,
        pauses,
        has("--quick") || has("--no-record") || flag("--workers").is_some(),
    );

    if has("--no-failover") {
        return;
    }
    println!(
        "==> [6/6] kill -9 of a master under a 64-task write load (a fresh cluster per client; limit {} s)",
        RECOVERY_LIMIT.as_secs()
    );
    // The bare floor never refreshes its map: it has nothing to recover;
    // the adapter and the reference recover as Zaris does.
    for &name in names.iter().filter(|&&n| CLIENTS.contains(&n)) {
        match failover(&server, name, &rt) {
            Ok(r) => {
                let cluster = r.cluster_failover.map_or_else(
                    || "did not fail over".to_owned(),
                    |d| format!("failed over in {}", ms(d)),
                );
                let back = r.writes_back_after.map_or_else(
                    || format!("not back within {} s", RECOVERY_LIMIT.as_secs()),
                    |d| format!("back after {}", ms(d)),
                );
                println!(
                    "{name:>9}: cluster {cluster}; writes to the dead master's slots {back}; {} of {} writes failed",
                    r.failed, r.total
                );
            }
            Err(e) => println!("{name:>9}: {e}"),
        }
    }
}

/// Phase 4: each client's user-space instructions per operation in each
/// scenario, under callgrind, printed and put in its `recorded` row.
fn count_instructions(
    shapes: &[Shape],
    names: &[&str],
    seeds: &[String],
    quick: bool,
    keep: Option<&std::path::Path>,
    recorded: &mut [zaris_bench::clients::ClientRow],
) {
    if !has_valgrind() {
        println!("==> [4/6] instructions: skipped, no valgrind (apt-get install valgrind)");
        return;
    }
    println!(
        "==> [4/6] user-space instructions per operation under callgrind: a child per client and scenario, \
         one current-thread runtime, {} single commands or {} pipelined ones after a warm-up",
        instruction_ops(Shape::Single { tasks: 1 }, quick),
        instruction_ops(Shape::Pipelines { size: 1, in_flight: 1 }, quick),
    );
    for &shape in shapes {
        let scenario = shape.name();
        let mut counts: Vec<(&str, f64)> = Vec::new();
        let counted_here =
            |name: &str| runs_in(name, shape) || name == API_FLOOR && runs_in(COMPAT, shape);
        for &name in names.iter().filter(|&&n| counted_here(n)) {
            match instructions(name, &scenario, seeds, quick, keep) {
                Ok(per_op) => {
                    println!("{scenario:>18} {name:>NAME_WIDTH$}: {per_op:>9.0} instructions/op");
                    counts.push((name, per_op));
                    // The child runs on one current thread: its count is
                    // both runtimes' (user-space work per operation).
                    let one_thread = format!("{scenario}{ONE_THREAD}");
                    for row in recorded.iter_mut().filter(|r| {
                        (r.scenario == scenario || r.scenario == one_thread) && r.client == name
                    }) {
                        row.instructions_per_op = Some(per_op);
                    }
                }
                Err(e) => println!("{scenario:>18} {name:>NAME_WIDTH$}: {e}"),
            }
        }
        let fewest = counts
            .iter()
            .filter(|(n, _)| is_peer(n))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        for (name, count) in counts.iter().filter(|(n, _)| !is_peer(n)) {
            if let Some((peer, fewest)) = fewest {
                println!(
                    "{scenario:>18}  {name} / fewest peer ({peer}): instructions per op {:.2}x ({:.2}x fewer)",
                    count / fewest,
                    fewest / count
                );
            }
        }
        let count_of = |name: &str| counts.iter().find(|(n, _)| *n == name).map(|c| c.1);
        if let (Some(adapter), Some((reference, own))) =
            (count_of(COMPAT), own_api(shape, &count_of))
        {
            println!(
                "{scenario:>18}  {COMPAT} over Zaris's own API ({reference}): {:+.1}% instructions per op (aim: at most +15%)",
                100.0 * (adapter / own - 1.0)
            );
            if let Some(floor) = count_of(API_FLOOR) {
                println!(
                    "{scenario:>18}  of which redis-rs's API itself (commands built, replies read, no I/O): {floor:.0} per op, {:+.1}% of {reference}; \
                     the adapter's own conversions: {:+.1}%",
                    100.0 * floor / own,
                    100.0 * (adapter - floor - own) / own
                );
            }
        }
    }
}

/// One client's figures over its runs: the median of each.
struct Summary {
    name: &'static str,
    ops_per_sec: f64,
    p50: Duration,
    p99: Duration,
    /// Client CPU per operation, µs: all, in user space, in the kernel.
    cpu: f64,
    user: f64,
    system: f64,
    /// Shares of the machine's cores, %.
    client_share: f64,
    servers_share: f64,
    errors: usize,
    /// Per operation: system calls by kind (where counted), and context
    /// switches (all, and the voluntary part).
    syscalls: Option<SyscallsPerOp>,
    switches: f64,
    voluntary: f64,
}

/// [`Syscalls`] per operation.
#[derive(Clone, Copy)]
struct SyscallsPerOp {
    total: f64,
    send: f64,
    recv: f64,
    epoll: f64,
    futex: f64,
    /// Sleeping threads woken (not system calls), where counted.
    wakeups: Option<f64>,
}

/// Each turn of a phase: `rounds` timed (`false`), then one with system
/// calls counted (`true`).
fn turns(rounds: usize) -> impl Iterator<Item = bool> {
    let rounds = rounds.max(1);
    (0..=rounds).map(move |i| i == rounds)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

impl Summary {
    /// Figures from the timed runs; system calls from the counted ones
    /// (a run the kernel refused tracepoints to counts as timed).
    fn of(name: &'static str, runs: &[(Load, Cpu)], cores: usize) -> Summary {
        let (counted, timed): (Vec<_>, Vec<_>) =
            runs.iter().partition(|(_, c)| c.syscalls.is_some());
        let of =
            |f: &dyn Fn(&Load, &Cpu) -> f64| median(timed.iter().map(|(l, c)| f(l, c)).collect());
        let count = |kind: fn(&Syscalls) -> u64| {
            median(
                counted
                    .iter()
                    .map(|(l, c)| c.syscalls.as_ref().map_or(0, kind) as f64 / l.ops.max(1) as f64)
                    .collect(),
            )
        };
        Summary {
            name,
            ops_per_sec: of(&|l, _| l.ops_per_sec()),
            p50: Duration::from_secs_f64(of(&|l, _| l.p50.as_secs_f64())),
            p99: Duration::from_secs_f64(of(&|l, _| l.p99.as_secs_f64())),
            cpu: of(&|l, c| cpu_per_op(c, l)),
            user: of(&|l, c| per_op(c.user, l)),
            system: of(&|l, c| per_op(c.system, l)),
            client_share: of(&|l, c| share(c.client(), l.elapsed, cores)),
            servers_share: of(&|l, c| share(c.servers, l.elapsed, cores)),
            errors: runs.iter().map(|(l, _)| l.errors).sum(),
            syscalls: (!counted.is_empty()).then(|| SyscallsPerOp {
                total: count(|s| s.total),
                send: count(|s| s.send),
                recv: count(|s| s.recv),
                epoll: count(|s| s.epoll),
                futex: count(|s| s.futex),
                wakeups: counted
                    .iter()
                    .all(|(_, c)| c.syscalls.is_some_and(|s| s.wakeups.is_some()))
                    .then(|| count(|s| s.wakeups.unwrap_or(0))),
            }),
            switches: of(&|l, c| (c.switches.0 + c.switches.1) as f64 / l.ops.max(1) as f64),
            voluntary: of(&|l, c| c.switches.0 as f64 / l.ops.max(1) as f64),
        }
    }
}

/// Each client's counts per operation in one scenario: system calls by
/// kind, context switches and the sleeping threads it woke.
fn print_counts(label: &str, results: &[Summary]) {
    for s in results {
        let calls = s.syscalls.map_or_else(
            || "syscalls not counted".to_owned(),
            |c| {
                format!(
                    "syscalls {:>6.3} (send {:.3}, recv {:.3}, epoll {:.3}, futex {:.3})",
                    c.total, c.send, c.recv, c.epoll, c.futex
                )
            },
        );
        let woke = s
            .syscalls
            .and_then(|c| c.wakeups)
            .map_or_else(String::new, |w| format!("; threads woken {w:.3}"));
        println!(
            "{label:>6} {:>NAME_WIDTH$}  per op: {calls}; context switches {:.3} ({:.3} voluntary){woke}",
            s.name, s.switches, s.voluntary
        );
    }
}

/// Whether `name` is one of the peers Zaris is measured against: not
/// Zaris (by any API), and not the bare floor.
fn is_peer(name: &str) -> bool {
    zaris_bench::clients::PEERS.contains(&name)
}

/// Whether `name` runs in `shape`: the bare floor and the `Client::cmd`
/// reference in single commands only (the reference at 16 tasks), the
/// adapter at 16 tasks and in the pipelines, the rest everywhere.
fn runs_in(name: &str, shape: Shape) -> bool {
    let sixteen = matches!(shape, Shape::Single { tasks: 16 });
    match name {
        BARE => true,
        CMD => sixteen,
        API_FLOOR => false,
        COMPAT => sixteen || matches!(shape, Shape::Pipelines { .. }),
        _ => true,
    }
}

/// Zaris's own API the adapter's cost is taken over in `shape`, and its
/// figure (`of` a client's name): `Client::cmd` in single commands, the
/// `zaris` row's `Pipeline::cmd` in pipelines.
fn own_api(shape: Shape, of: &dyn Fn(&str) -> Option<f64>) -> Option<(&'static str, f64)> {
    match shape {
        Shape::Single { .. } => Some(("Client::cmd", of(CMD)?)),
        Shape::Pipelines { .. } => Some(("Pipeline::cmd", of("zaris")?)),
    }
}

/// The adapter's CPU per operation over Zaris's own API, where both ran.
fn adapter_cost(label: &str, shape: Shape, results: &[Summary]) {
    let cpu = |name: &str| results.iter().find(|s| s.name == name).map(|s| s.cpu);
    if let (Some(adapter), Some((reference, own))) = (cpu(COMPAT), own_api(shape, &cpu)) {
        println!(
            "{label:>6}  {COMPAT} over Zaris's own API ({reference}): client CPU per op {:+.1}%",
            100.0 * (adapter / own - 1.0)
        );
    }
}

/// Zaris, and the bare floor, against the best peer in each measure:
/// throughput (the most), client CPU and syscalls per operation (the
/// fewest), each naming its peer.
fn ratios(label: &str, results: &[Summary]) {
    for ours in results.iter().filter(|s| !is_peer(s.name)) {
        ratios_of(label, ours, results);
    }
}

fn ratios_of(label: &str, ours: &Summary, results: &[Summary]) {
    let peers = || results.iter().filter(|s| is_peer(s.name));
    let best = |value: &dyn Fn(&Summary) -> Option<f64>, most: bool| {
        let (peer, best) = peers()
            .filter_map(|s| Some((s.name, value(s)?)))
            .min_by(|a, b| {
                if most {
                    b.1.total_cmp(&a.1)
                } else {
                    a.1.total_cmp(&b.1)
                }
            })?;
        Some(format!("{:.2}x {peer}'s", value(ours)? / best))
    };
    let measures = [
        ("throughput", best(&|s| Some(s.ops_per_sec), true)),
        ("client CPU per op", best(&|s| Some(s.cpu), false)),
        ("syscalls per op", best(&|s| Some(s.syscalls?.total), false)),
    ];
    let said: Vec<String> = measures
        .into_iter()
        .filter_map(|(what, ratio)| Some(format!("{what} {}", ratio?)))
        .collect();
    if !said.is_empty() {
        println!("{label:>6}  {} / best peer: {}", ours.name, said.join(", "));
    }
}
