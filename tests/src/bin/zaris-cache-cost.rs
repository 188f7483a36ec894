//! `just cache-cost`: what the client cache's checks and hits cost, on a
//! local 3+3 cluster. Cached readers read 300 keys spread over the three
//! masters for 10 s (lease 250 ms); then, from each master's
//! `INFO commandstats`, the checks (`CLUSTER INFO` + `CLUSTER NODES`) it
//! answered per second and the server time they took, against every
//! command it ran; and, on the client, a hit's time against a miss's
//! (median of 20,000, same process, same keys).

use std::time::{Duration, Instant};

use zaris_client::CacheConfig;
use zaris_tests::cluster::Cluster;
use zaris_tests::{runtime, Frame};

/// `(calls, usec)` of `command` in an `INFO commandstats` text.
fn stat(info: &str, command: &str) -> (u64, u64) {
    let prefix = format!("cmdstat_{command}:");
    let Some(line) = info.lines().find(|l| l.starts_with(&prefix)) else {
        return (0, 0);
    };
    let field = |name: &str| {
        line.split(',')
            .find_map(|f| f.split_once('=').filter(|(k, _)| k.ends_with(name)))
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("calls"), field("usec"))
}

fn totals(info: &str) -> (u64, u64) {
    info.lines()
        .filter(|l| l.starts_with("cmdstat_"))
        .map(|l| {
            let name = l
                .split(':')
                .next()
                .unwrap_or("")
                .trim_start_matches("cmdstat_");
            stat(info, name)
        })
        .fold((0, 0), |(c, u), (c2, u2)| (c + c2, u + u2))
}

fn commandstats(cluster: &Cluster, i: usize) -> anyhow::Result<String> {
    let mut conn = cluster.conn(i)?;
    match conn.command(&[b"INFO", b"commandstats"])? {
        Frame::BulkString(text) => Ok(String::from_utf8_lossy(&text).into_owned()),
        other => anyhow::bail!("INFO answered {other:?}"),
    }
}

fn main() -> anyhow::Result<()> {
    let server = std::env::var("ZARIS_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    eprintln!("==> a 3+3 {server} cluster");
    let cluster = Cluster::start(&server, 3, 1)?;
    let rt = runtime();
    let plain = cluster.client(&rt, zaris_tests::patient);
    let lease = Duration::from_millis(250);
    let cached = cluster.client(&rt, |b| {
        zaris_tests::patient(b).client_cache(CacheConfig {
            lease,
            ..CacheConfig::default()
        })
    });
    let keys: Vec<String> = (0..300).map(|i| format!("cost:{i}")).collect();
    rt.block_on(async {
        for key in &keys {
            plain.set(key, "v").await?;
        }
        anyhow::Ok(())
    })?;
    let masters: Vec<usize> = (0..cluster.addrs().len())
        .filter(|&i| cluster.is_master(i).unwrap_or(false))
        .collect();
    for &m in &masters {
        cluster.conn(m)?.command(&[b"CONFIG", b"RESETSTAT"])?;
    }
    eprintln!("==> cached readers for 10 s");
    let seconds = 10.0;
    let reads = rt.block_on(async {
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        let mut n = 0u64;
        while Instant::now() < until {
            for key in &keys {
                cached.get(key).await?;
                n += 1;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        anyhow::Ok(n)
    })?;
    let stats = cached.stats();
    println!(
        "reads {reads} in {seconds} s: {} hits, {} misses",
        stats.cache_hits, stats.cache_misses
    );
    for &m in &masters {
        let info = commandstats(&cluster, m)?;
        let (info_calls, info_us) = stat(&info, "cluster|info");
        let (nodes_calls, nodes_us) = stat(&info, "cluster|nodes");
        let (all_calls, all_us) = totals(&info);
        println!(
            "{}: {:.1} checks/s (lease/4 = {:.1}/s); a check {:.1} µs of server time \
             (CLUSTER INFO {:.1} + CLUSTER NODES {:.1}); checks {:.1}% of its {} commands' server time",
            cluster.addr(m),
            nodes_calls as f64 / seconds,
            4.0 / lease.as_secs_f64(),
            (info_us + nodes_us) as f64 / nodes_calls.max(1) as f64,
            info_us as f64 / info_calls.max(1) as f64,
            nodes_us as f64 / nodes_calls.max(1) as f64,
            100.0 * (info_us + nodes_us) as f64 / all_us.max(1) as f64,
            all_calls,
        );
    }
    // A hit against a miss, in this process.
    let median = |mut v: Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (hits, misses) = rt.block_on(async {
        let mut hits = Vec::new();
        let mut misses = Vec::new();
        for i in 0..20_000 {
            let key = &keys[i % keys.len()];
            let t = Instant::now();
            cached.get(key).await?;
            hits.push(t.elapsed());
            let t = Instant::now();
            plain.get(key).await?;
            misses.push(t.elapsed());
        }
        anyhow::Ok((hits, misses))
    })?;
    println!(
        "a hit {:?}, an uncached read {:?} (medians of 20,000, loopback)",
        median(hits),
        median(misses)
    );
    Ok(())
}
