//! The cache-hit phase: what a client-side cache hit costs, on one
//! current-thread runtime (so every task of a client runs on the thread
//! measured), against redis-rs's own client-side cache (`cache-aio`) on its
//! cluster connection, and against an uncached `GET`.
//!
//! Each client reads [`KEYS`] keys, stored and read once beforehand (the
//! reads that fill the caches), in batches of [`BATCH`]: the thread's CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`) is taken around each batch, and the
//! runtime runs freely between batches (2 ms), so that Zaris's lease checks
//! and both clients' connections are served outside the measured time, as
//! they would be between a program's reads. The figure is the median over
//! every batch of the CPU time per read. Each row also says what share of
//! its reads the cache answered (its own counters), so a hit row that
//! missed shows it.
//!
//! Under callgrind (`--instructions-child`), the same batches count
//! user-space instructions per read: a count that noise cannot move.

use std::time::Duration;

use zaris_bench::counts::thread_cpu;
use zaris_client::{CacheConfig, Client};

/// The keys read, each a string and a one-field hash.
const KEYS: usize = 1_000;
/// Reads per measured batch: a few milliseconds at most, well inside a
/// lease (250 ms) and its checks' period (62.5 ms).
const BATCH: usize = 1_000;
/// The runtime runs freely this long between batches.
const BETWEEN: Duration = Duration::from_millis(2);

/// What a row reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    /// `GET` through the cache (Zaris: `Client::get`).
    GetHit,
    /// `HGET key field` through the cache (Zaris: `Client::cmd`).
    HgetHit,
    /// `GET` with no cache.
    Uncached,
}

impl Read {
    pub(super) const ALL: [Read; 3] = [Read::GetHit, Read::HgetHit, Read::Uncached];

    pub(super) fn name(self) -> &'static str {
        match self {
            Read::GetHit => "cache hit: GET",
            Read::HgetHit => "cache hit: HGET",
            Read::Uncached => "uncached GET",
        }
    }

    pub(super) fn parse(name: &str) -> Option<Read> {
        Read::ALL.into_iter().find(|r| r.name() == name)
    }

    fn cached(self) -> bool {
        self != Read::Uncached
    }
}

/// The clients of this phase: those with a client-side cache.
pub(super) const CLIENTS: [&str; 2] = ["zaris", "redis-rs"];

/// One client, set up for one kind of read.
enum Reader {
    Zaris(Client),
    RedisRs(redis::cluster_async::ClusterConnection),
}

/// The keys' names, made once: a batch measures reads, not formatting.
struct Keys {
    strings: Vec<String>,
    hashes: Vec<String>,
}

impl Keys {
    fn new() -> Keys {
        Keys {
            strings: (0..KEYS).map(|i| format!("hit:{{{i}}}:s")).collect(),
            hashes: (0..KEYS).map(|i| format!("hit:{{{i}}}:h")).collect(),
        }
    }
}

impl Reader {
    async fn connect(name: &str, read: Read, seeds: &[String]) -> Result<Reader, String> {
        if name == "zaris" {
            let builder = Client::builder();
            let builder = if read.cached() {
                builder.client_cache(CacheConfig::default())
            } else {
                builder
            };
            return builder
                .connect(seeds)
                .await
                .map(Reader::Zaris)
                .map_err(|e| e.to_string());
        }
        let urls: Vec<String> = seeds.iter().map(|s| format!("redis://{s}")).collect();
        let mut builder = redis::cluster::ClusterClientBuilder::new(urls);
        if read.cached() {
            // Its cache needs RESP3's invalidation pushes.
            builder = builder
                .use_protocol(redis::ProtocolVersion::RESP3)
                .cache_config(redis::caching::CacheConfig::new());
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        client
            .get_async_connection()
            .await
            .map(Reader::RedisRs)
            .map_err(|e| e.to_string())
    }

    /// Reads key `i` the row's way; whether it answered what was stored.
    async fn read(&mut self, read: Read, keys: &Keys, i: usize) -> bool {
        let i = i % KEYS;
        let (key, hash) = (&keys.strings[i], &keys.hashes[i]);
        match (self, read) {
            (Reader::Zaris(c), Read::GetHit | Read::Uncached) => {
                c.get(key).await.ok().flatten().is_some()
            }
            (Reader::Zaris(c), Read::HgetHit) => matches!(
                c.cmd(&["HGET", hash, "f"]).await,
                Ok(zaris_client::Value::Data(_))
            ),
            (Reader::RedisRs(c), Read::GetHit | Read::Uncached) => {
                let got: Result<Option<Vec<u8>>, _> =
                    redis::cmd("GET").arg(key).query_async(c).await;
                got.ok().flatten().is_some()
            }
            (Reader::RedisRs(c), Read::HgetHit) => {
                let got: Result<Option<Vec<u8>>, _> =
                    redis::cmd("HGET").arg(hash).arg("f").query_async(c).await;
                got.ok().flatten().is_some()
            }
        }
    }

    /// Reads its cache answered so far.
    fn hits(&self) -> u64 {
        match self {
            Reader::Zaris(c) => c.stats().cache_hits,
            Reader::RedisRs(c) => c.get_cache_statistics().map_or(0, |s| s.hit as u64),
        }
    }
}

/// Stores every key and hash (through a plain Zaris client), then reads
/// each once with `reader`: the reads that fill its cache.
async fn prepare(
    seeds: &[String],
    reader: &mut Reader,
    read: Read,
    keys: &Keys,
) -> Result<(), String> {
    let writer = Client::connect(seeds).await.map_err(|e| e.to_string())?;
    for (key, hash) in keys.strings.iter().zip(&keys.hashes) {
        writer
            .set(key, [b'v'; 64])
            .await
            .map_err(|e| e.to_string())?;
        writer
            .cmd(&["HSET", hash, "f", "value"])
            .await
            .map_err(|e| e.to_string())?;
    }
    for i in 0..KEYS {
        if !reader.read(read, keys, i).await {
            return Err(format!("{} answered nothing for key {i}", read.name()));
        }
    }
    Ok(())
}

/// One row's figures.
pub(super) struct Measured {
    /// CPU time per read, ns: the median over the batches.
    pub(super) ns_per_read: f64,
    /// Reads per second of CPU (1e9 / ns): the row's ops/s.
    pub(super) reads: u64,
    /// The share of the reads its cache answered (0 for uncached reads).
    pub(super) hit_share: f64,
}

/// `name`'s `read`, timed: `rounds` rounds of `batches` batches.
pub(super) fn measure(
    name: &str,
    read: Read,
    seeds: &[String],
    rounds: usize,
    batches: usize,
) -> Result<Measured, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let keys = Keys::new();
        let mut reader = Reader::connect(name, read, seeds).await?;
        prepare(seeds, &mut reader, read, &keys).await?;
        let hits_before = reader.hits();
        // Each batch's CPU time per read: the median of them all, which a
        // tick's interrupt or a neighbour's burst in a few batches moves
        // no more than a stray sample.
        let mut per_batch = Vec::new();
        let mut reads = 0u64;
        let mut next = 0usize;
        for _ in 0..rounds.max(1) * batches {
            tokio::time::sleep(BETWEEN).await;
            let start = thread_cpu();
            for _ in 0..BATCH {
                std::hint::black_box(reader.read(read, &keys, next).await);
                next += 1;
            }
            per_batch.push((thread_cpu() - start).as_nanos() as f64 / BATCH as f64);
            reads += BATCH as u64;
        }
        per_batch.sort_by(f64::total_cmp);
        let ns_per_read = per_batch[per_batch.len() / 2];
        let hit_share = (reader.hits() - hits_before) as f64 / reads as f64;
        Ok(Measured {
            ns_per_read,
            reads: (1e9 / ns_per_read) as u64,
            hit_share,
        })
    })
}

/// The callgrind child's work (`--instructions-child NAME READ SEEDS`):
/// `ops` reads in batches, each inside `window` (what callgrind counts);
/// returns the reads the cache did not answer (or, uncached, that failed).
pub(super) fn child(
    name: &str,
    read: Read,
    seeds: &[String],
    ops: usize,
    window: &mut dyn FnMut(&mut dyn FnMut() -> usize) -> usize,
) -> (usize, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let keys = Keys::new();
    let mut reader = rt
        .block_on(async {
            let mut reader = Reader::connect(name, read, seeds).await?;
            prepare(seeds, &mut reader, read, &keys).await?;
            Ok::<_, String>(reader)
        })
        .expect("the client connects and reads");
    let batch = BATCH / 4;
    let batches = ops.div_ceil(batch);
    let hits_before = reader.hits();
    let mut failed = 0;
    let mut next = 0;
    for _ in 0..batches {
        rt.block_on(async { tokio::time::sleep(BETWEEN).await });
        failed += window(&mut || {
            rt.block_on(async {
                let mut failed = 0;
                for _ in 0..batch {
                    failed += usize::from(!reader.read(read, &keys, next).await);
                    next += 1;
                }
                failed
            })
        });
    }
    let done = batches * batch;
    let missed = if read.cached() {
        done - usize::try_from(reader.hits() - hits_before).unwrap_or(done)
    } else {
        failed
    };
    (done, missed)
}
