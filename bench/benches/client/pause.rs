//! Phase 5: a write pause under load (docs/behaviour.md §5, "Paused
//! nodes"), each client in turn on the same cluster, with its defaults: 4
//! tasks read keys of one master, 4 tasks `INCR` counters there, 4 tasks
//! read keys of the other masters; 2 s in, `CLIENT PAUSE ms WRITE` on that
//! master (as a manual failover and atomic slot migration pause it), and
//! 2 s after it ends the run stops. For each client: the longest and the
//! 99th-percentile read of the paused master, the other masters' longest
//! read, the calls that failed, and the increments applied more often than
//! acknowledged (the counters' sum less the acknowledgements: a write sent
//! again while its first copy waited in the pause).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_bench::clients::PauseRow;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::Frame;

use super::Driver;

/// Tasks of each kind.
const TASKS: usize = 4;
/// When the pause begins, and how long the run goes on after it.
const BEFORE: Duration = Duration::from_secs(2);
const AFTER: Duration = Duration::from_secs(2);

/// `count` keys named `prefix:N` whose owner is (`on`) or is not `master`.
fn keys(cluster: &Cluster, master: usize, prefix: &str, on: bool, count: usize) -> Vec<Vec<u8>> {
    (0..100_000)
        .map(|i| format!("{prefix}:{i}"))
        .filter(|k| (cluster.owner_index(slot_for_key(k.as_bytes())).ok() == Some(master)) == on)
        .take(count)
        .map(String::into_bytes)
        .collect()
}

/// One client through a `pause` of writes on one master of `cluster`.
pub fn run(
    cluster: &Cluster,
    name: &str,
    pause: Duration,
    rt: &tokio::runtime::Runtime,
) -> Result<PauseRow, String> {
    let master = cluster
        .owner_index(slot_for_key(b"{bench-pause}"))
        .map_err(|e| e.to_string())?;
    let tag = format!("{name}:{}", pause.as_millis());
    let mine = Arc::new(keys(cluster, master, &format!("pr:{tag}"), true, 32));
    let others = Arc::new(keys(cluster, master, &format!("or:{tag}"), false, 32));
    let counters = Arc::new(keys(cluster, master, &format!("ctr:{tag}"), true, 32));
    let driver = rt.block_on(Driver::connect(name, &cluster.addrs()))?;
    rt.block_on(async {
        let mut d = driver.clone();
        for key in mine.iter().chain(others.iter()) {
            d.set(key).await?;
        }
        Ok::<_, String>(())
    })?;

    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut readers = Vec::new();
    for (keys, paused) in [(mine.clone(), true), (others.clone(), false)] {
        for t in 0..TASKS {
            let (mut d, keys, stop, errors) =
                (driver.clone(), keys.clone(), stop.clone(), errors.clone());
            readers.push(rt.spawn(async move {
                let mut latencies = Vec::new();
                let mut i = t;
                while !stop.load(Ordering::Acquire) {
                    let started = Instant::now();
                    if let Err(e) = d.get(&keys[i % keys.len()]).await {
                        errors.lock().unwrap().push(e);
                    }
                    latencies.push(started.elapsed());
                    i += TASKS;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                (paused, latencies)
            }));
        }
    }
    let writers: Vec<_> = (0..TASKS)
        .map(|t| {
            let (mut d, keys, stop, errors) = (
                driver.clone(),
                counters.clone(),
                stop.clone(),
                errors.clone(),
            );
            rt.spawn(async move {
                let (mut acknowledged, mut failed) = (0u64, 0u64);
                let mut i = t;
                while !stop.load(Ordering::Acquire) {
                    match d.incr(&keys[i % keys.len()]).await {
                        Ok(()) => acknowledged += 1,
                        Err(e) => {
                            failed += 1;
                            errors.lock().unwrap().push(e);
                        }
                    }
                    i += TASKS;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                (acknowledged, failed)
            })
        })
        .collect();

    std::thread::sleep(BEFORE);
    let ms = pause.as_millis().to_string();
    let paused = cluster
        .conn(master)
        .and_then(|mut c| c.command(&[b"CLIENT", b"PAUSE", ms.as_bytes(), b"WRITE"]));
    if let Err(e) = paused {
        stop.store(true, Ordering::Release);
        return Err(format!("CLIENT PAUSE: {e}"));
    }
    std::thread::sleep(pause + AFTER);
    stop.store(true, Ordering::Release);

    let (mut mine_reads, mut other_reads) = (Vec::new(), Vec::new());
    for reader in readers {
        let (paused, latencies) = rt.block_on(reader).map_err(|e| e.to_string())?;
        if paused {
            mine_reads.extend(latencies);
        } else {
            other_reads.extend(latencies);
        }
    }
    let (mut acknowledged, mut failed) = (0, 0);
    for writer in writers {
        let (ok, not) = rt.block_on(writer).map_err(|e| e.to_string())?;
        acknowledged += ok;
        failed += not;
    }
    // Every write the pause held has landed once its reply is in; a copy
    // still on its way would land later, so wait out the client's own
    // time-outs before counting.
    std::thread::sleep(Duration::from_secs(1));
    let mut applied = 0u64;
    let mut conn = cluster.conn(master).map_err(|e| e.to_string())?;
    for key in counters.iter() {
        if let Ok(Frame::BulkString(v)) = conn.command(&[b"GET", key]) {
            applied += std::str::from_utf8(&v)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    mine_reads.sort_unstable();
    let longest = |reads: &[Duration]| reads.last().copied().unwrap_or_default();
    let p99 = mine_reads
        .get(mine_reads.len().saturating_sub(1) * 99 / 100)
        .copied()
        .unwrap_or_default();
    let errors = errors.lock().unwrap();
    if let Some(first) = errors.first() {
        println!(
            "   {name}: {} call(s) failed, the first: {first}",
            errors.len()
        );
    }
    Ok(PauseRow {
        client: name.to_owned(),
        pause_ms: pause.as_millis() as u64,
        paused_max_read_ms: longest(&mine_reads).as_secs_f64() * 1e3,
        paused_p99_read_ms: p99.as_secs_f64() * 1e3,
        other_max_read_ms: other_reads
            .iter()
            .max()
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3,
        errors: errors.len() as u64,
        // A failed increment may have been applied; past those, a surplus
        // is a write applied twice.
        applied_twice: applied.saturating_sub(acknowledged + failed),
        lost: acknowledged.saturating_sub(applied),
    })
}
