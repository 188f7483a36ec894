//! The `metrics` feature against a real 3+3 cluster, through a manual
//! failover: a recorder installed as an application would (here the
//! debugging one of `metrics-util`) sees the requests by command and
//! outcome, the `MOVED`s the failover caused, the refreshes and retries
//! they started, and each node's latency and requests in flight.
#![cfg(feature = "metrics")]

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use zaris_client::Client;
use zaris_tests::cluster::Cluster;
use zaris_tests::{no_env, runtime, servers_under_test};

/// Every metric now: (kind, name, labels as `k=v`, value).
fn read(
    snapshotter: &metrics_util::debugging::Snapshotter,
) -> Vec<(MetricKind, String, Vec<String>, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            let labels = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            (kind, key.name().to_owned(), labels, value)
        })
        .collect()
}

/// The counter `name` with every label of `labels`, summed over the rest.
fn counter(
    metrics: &[(MetricKind, String, Vec<String>, DebugValue)],
    name: &str,
    labels: &[&str],
) -> u64 {
    metrics
        .iter()
        .filter(|(_, n, l, _)| {
            n == name && labels.iter().all(|want| l.iter().any(|have| have == want))
        })
        .map(|(_, _, _, v)| match v {
            DebugValue::Counter(c) => *c,
            _ => 0,
        })
        .sum()
}

#[test]
fn requests_redirects_refreshes_and_latency_reach_the_recorder() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder");
    let rt = runtime();
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 1).expect("cluster");
        let client = rt
            .block_on(
                Client::builder()
                    .env(no_env)
                    .backoff(Duration::from_millis(20))
                    .connect(&cluster.addrs()),
            )
            .expect("connect");
        let before = read(&snapshotter);
        let keys: Vec<String> = (0..100).map(|i| format!("m:{i}")).collect();
        rt.block_on(async {
            for key in &keys {
                client.set(key, "v").await.unwrap();
            }
            let err = client.cmd(&["INCR", "m:0"]).await.unwrap_err();
            assert_eq!(err.kind(), "server");
        });
        let replica = cluster.replica_of(0).unwrap();
        cluster.failover(replica).unwrap();
        rt.block_on(async {
            for key in &keys {
                assert_eq!(client.get(key).await.unwrap().as_deref(), Some(&b"v"[..]));
            }
        });
        let after = read(&snapshotter);
        let delta = |name: &str, labels: &[&str]| {
            counter(&after, name, labels) - counter(&before, name, labels)
        };
        assert_eq!(
            delta("zaris_requests_total", &["command=SET", "outcome=ok"]),
            100,
            "{server}"
        );
        assert_eq!(
            delta("zaris_requests_total", &["command=GET", "outcome=ok"]),
            100,
            "{server}"
        );
        assert_eq!(
            delta("zaris_requests_total", &["command=incr", "outcome=server"]),
            1,
            "{server}"
        );
        let moved = delta("zaris_redirects_total", &["kind=moved"]);
        assert!(moved >= 1, "{server}: the failover's MOVED");
        assert_eq!(
            moved,
            client.stats().moved_redirects,
            "{server}: the counter and Stats agree"
        );
        assert!(
            delta("zaris_retries_total", &["status=Moved"]) >= 1,
            "{server}"
        );
        assert!(
            delta("zaris_refreshes_total", &["cause=moved"]) >= 1,
            "{server}"
        );
        // Latency and in-flight, per node: every master served requests.
        for addr in client.owners() {
            let node = format!("node={addr}");
            let samples: usize = after
                .iter()
                .filter(|(k, n, l, _)| {
                    *k == MetricKind::Histogram && n == "zaris_request_seconds" && l.contains(&node)
                })
                .map(|(_, _, _, v)| match v {
                    DebugValue::Histogram(s) => s.len(),
                    _ => 0,
                })
                .sum();
            assert!(samples > 0, "{server}: no latency for {addr}");
            assert!(
                after.iter().any(|(k, n, l, _)| *k == MetricKind::Gauge
                    && n == "zaris_in_flight"
                    && l.contains(&node)),
                "{server}: no in-flight gauge for {addr}"
            );
        }
        // The client cache's counters: the same as its Stats.
        let cached = rt
            .block_on(
                Client::builder()
                    .env(no_env)
                    .client_cache(zaris_client::CacheConfig::default())
                    .connect(&cluster.addrs()),
            )
            .expect("connect");
        let before = read(&snapshotter);
        rt.block_on(async {
            for _ in 0..3 {
                for key in &keys {
                    cached.get(key).await.unwrap();
                }
            }
            client.set("m:0", "w").await.unwrap();
            // The invalidation is pushed at once; a read after it misses.
            for _ in 0..100 {
                if cached.stats().cache_invalidations > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        let after = read(&snapshotter);
        let delta = |name: &str, labels: &[&str]| {
            counter(&after, name, labels) - counter(&before, name, labels)
        };
        let stats = cached.stats();
        assert!(stats.cache_hits >= 100, "{server}: {stats:?}");
        assert_eq!(
            delta("zaris_cache_total", &["event=hit"]),
            stats.cache_hits,
            "{server}"
        );
        assert_eq!(
            delta("zaris_cache_total", &["event=miss"]),
            stats.cache_misses,
            "{server}"
        );
        assert_eq!(
            delta("zaris_cache_total", &["event=invalidation"]),
            stats.cache_invalidations,
            "{server}"
        );
        assert!(stats.cache_invalidations >= 1, "{server}: {stats:?}");
        assert!(
            after.iter().any(|(k, n, _, v)| *k == MetricKind::Gauge
                && n == "zaris_cache_bytes"
                && matches!(v, DebugValue::Gauge(g) if g.into_inner() > 0.0)),
            "{server}: the cache's bytes"
        );
    }
}
