//! A node whose requests keep timing out is opened: after
//! `OPEN_AFTER_TIMEOUTS` time-outs in a row, new requests for its slots
//! wait, unsent, for the map to move them (one going ahead per probe
//! interval to find out whether it answers again), instead of joining a
//! queue that does not drain. Its next answer closes it.
//!
//! - A master's client port black-holed by the proxy (the cluster still
//!   sees it, so nothing fails over): 100 callers press on it for a second
//!   and a half, and it holds a handful of requests, not a hundred. Healed,
//!   it answers and is closed.
//! - A frozen master (`kill -STOP`): opened, then failed over by the
//!   cluster; the waiting writes land on the new master.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zaris_client::Error;
use zaris_core::slot_for_key;
use zaris_tests::cluster::Cluster;
use zaris_tests::proxy::Faults;
use zaris_tests::{each_server, runtime};

const ATTEMPT: Duration = Duration::from_millis(300);

#[test]
fn a_silent_node_is_opened_and_an_answer_closes_it() {
    each_server(|server| {
        black_holed(server);
        frozen(server);
    });
}

fn black_holed(server: &str) {
    let cluster = Cluster::start_proxied(server, 3, 0).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, |b| {
        b.attempt_timeout(ATTEMPT)
            .backoff(Duration::from_millis(50))
            .max_attempts(3)
            .request_timeout(Some(Duration::from_secs(3)))
    });
    let key = "opened:{k}";
    let master = cluster.owner_index(slot_for_key(key.as_bytes())).unwrap();
    let addr = cluster.addr(master);
    rt.block_on(client.set(key, "before")).unwrap();

    cluster
        .fault(master, Faults::BLACK_HOLE)
        .expect("black hole");
    // Three requests time out: the node is opened.
    let first: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            rt.spawn(async move { client.get(key).await })
        })
        .collect();
    let opened_by = Instant::now() + 2 * ATTEMPT;
    while client.stats().nodes_opened == 0 {
        assert!(
            Instant::now() < opened_by + ATTEMPT,
            "{server}: never opened"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A hundred more callers for its slots: they wait, unsent.
    let callers: Vec<_> = (0..100)
        .map(|_| {
            let client = client.clone();
            rt.spawn(async move { client.get(key).await })
        })
        .collect();
    let mut most = 0;
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_millis(1500) {
        let holding = client
            .in_flight_per_node()
            .iter()
            .find(|(a, _)| *a == addr)
            .map_or(0, |(_, n)| *n);
        most = most.max(holding);
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = client.stats();
    eprintln!(
        "{server}: opened {} time(s); with 100 callers waiting it held at most {most} requests",
        stats.nodes_opened
    );
    // The three that timed out (their replies still owed) and one probe
    // per 500 ms, not a hundred.
    assert!(
        most <= 10,
        "{server}: {most} requests joined the silent queue"
    );

    // Healed: the owed replies come, the node answers and is closed.
    cluster.fault(master, Faults::HEALTHY).unwrap();
    let results: Vec<Result<Option<bytes::Bytes>, Error>> = rt.block_on(async {
        let mut out = Vec::new();
        for handle in first.into_iter().chain(callers) {
            out.push(handle.await.unwrap());
        }
        out
    });
    let answered = results.iter().filter(|r| r.is_ok()).count();
    eprintln!("{server}: {answered} of 103 callers answered once healed");
    let started = Instant::now();
    assert_eq!(
        rt.block_on(client.get(key)).unwrap().as_deref(),
        Some(&b"before"[..]),
        "{server}"
    );
    assert!(
        started.elapsed() < ATTEMPT,
        "{server}: closed, served at once"
    );
    assert_eq!(client.stats().nodes_opened, 1, "{server}: opened once");
}

fn frozen(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    let rt = runtime();
    let client = cluster.client(&rt, zaris_tests::patient);
    let key = "frozen:{k}";
    let slot = slot_for_key(key.as_bytes());
    let master = cluster.owner_index(slot).unwrap();
    rt.block_on(client.set(key, "0")).unwrap();
    cluster.freeze(master).unwrap();
    let writers: Vec<_> = (0..50)
        .map(|i| {
            let client = client.clone();
            rt.spawn(async move { client.set(format!("{key}:{i}"), "after").await })
        })
        .collect();
    let replaced = cluster.wait_failover_of(master, slot).unwrap();
    let failed_over = Instant::now();
    let results = rt.block_on(async {
        let mut out = Vec::new();
        for w in writers {
            out.push(w.await.unwrap());
        }
        out
    });
    let late = failed_over.elapsed();
    let stats = client.stats();
    eprintln!(
        "{server}: frozen master opened {} time(s); 50 writers landed {late:?} after the failover",
        stats.nodes_opened
    );
    assert!(results.iter().all(Result::is_ok), "{server}: {results:?}");
    assert!(
        stats.nodes_opened >= 1,
        "{server}: the frozen master was opened"
    );
    assert_eq!(client.owner_of(key), Some(cluster.addr(replaced)));
    cluster.thaw(master).unwrap();
    let _ = Arc::new(());
}
