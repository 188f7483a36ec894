//! Credentials that rotate, on a 3+3 cluster with ACL users, while traffic
//! runs: the provider (`Builder::credentials`) is asked for every new
//! connection, `Client::reauthenticate` moves every live connection to the
//! new user (the nodes' `CLIENT LIST` shows it), the old user is deleted
//! (which closes any connection still on it), and a failover and a
//! `kill -9` after the rotation bring new connections that authenticate as
//! the new user. Not one request fails. A provider that hands out a wrong
//! password gets `Error::Auth` naming the node, at once, not retried.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zaris_client::{Credentials, Error, REFRESH_DEBOUNCE};
use zaris_tests::cluster::Cluster;
use zaris_tests::{each_server, runtime, Frame};

/// `ACL SETUSER user on >password ~* &* +@all` on every node (ACLs are
/// not replicated: each node is told).
fn add_user(cluster: &Cluster, user: &str, password: &str) {
    for i in cluster.running() {
        let reply = cluster
            .conn(i)
            .unwrap()
            .command(&[
                b"ACL",
                b"SETUSER",
                user.as_bytes(),
                b"on",
                format!(">{password}").as_bytes(),
                b"~*",
                b"&*",
                b"+@all",
            ])
            .unwrap();
        assert_eq!(reply, zaris_tests::simple("OK"), "node {i}");
    }
}

/// How many connections of `user` node `i` holds (`CLIENT LIST`).
fn connections_of(cluster: &Cluster, i: usize, user: &str) -> usize {
    match cluster
        .conn(i)
        .unwrap()
        .command(&[b"CLIENT", b"LIST"])
        .unwrap()
    {
        Frame::BulkString(list) => String::from_utf8_lossy(&list)
            .lines()
            .filter(|l| l.split(' ').any(|f| f == format!("user={user}")))
            .count(),
        other => panic!("CLIENT LIST: {other:?}"),
    }
}

/// Every node closes its connections of `user` (`CLIENT KILL USER`).
fn close_connections_of(cluster: &Cluster, user: &str) {
    for i in cluster.running() {
        cluster
            .conn(i)
            .unwrap()
            .command(&[b"CLIENT", b"KILL", b"USER", user.as_bytes()])
            .unwrap();
    }
}

#[test]
fn credentials_rotate_under_traffic_and_churn_without_a_failed_request() {
    each_server(|server| {
        rotation(server);
    });
}

fn rotation(server: &str) {
    let mut cluster = Cluster::start(server, 3, 1).expect("cluster");
    add_user(&cluster, "app-1", "first secret");
    let current = Arc::new(Mutex::new(("app-1".to_owned(), "first secret".to_owned())));
    let asked = Arc::new(AtomicU64::new(0));
    let rt = runtime();
    // Connects as app-1.
    let client = cluster.client(&rt, |b| {
        zaris_tests::patient(b).credentials({
            let (current, asked) = (current.clone(), asked.clone());
            move || {
                let (user, password) = current.lock().unwrap().clone();
                asked.fetch_add(1, Ordering::Relaxed);
                async move {
                    // A provider that fetches: it may take a while.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok::<_, std::convert::Infallible>(Credentials {
                        username: Some(user),
                        password,
                    })
                }
            }
        })
    });

    // Traffic: writers on keys all over the map, each write read back.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (client, stop, failures, done) =
                (client.clone(), stop.clone(), failures.clone(), done.clone());
            rt.spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("rot:{w}:{}", n % 50);
                    let value = n.to_string();
                    let result = async {
                        client.set(&key, &value).await?;
                        client.get(&key).await
                    }
                    .await;
                    match result {
                        Ok(Some(v)) if v == value.as_bytes() => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        other => failures.lock().unwrap().push(format!("{key}: {other:?}")),
                    }
                    n += 1;
                }
            })
        })
        .collect();
    // Traffic goes on: writes read back over the next `window`. In steady
    // state, half a second. After churn, what docs/behaviour.md §3 allows:
    // the refresh that names the new owner, and the probe of a node that
    // said CLUSTERDOWN meanwhile, each come at most one refresh interval
    // apart. Measured: the first write back 80-950 ms after the cluster
    // is healthy again.
    let progress = |what: &str, window: Duration| {
        let before = done.load(Ordering::Relaxed);
        std::thread::sleep(window);
        let after = done.load(Ordering::Relaxed);
        assert!(after > before, "{server}: no traffic {what} in {window:?}");
    };
    let steady = Duration::from_millis(500);
    let after_churn = 2 * REFRESH_DEBOUNCE + Duration::from_millis(500);
    progress("as app-1", steady);
    let masters: Vec<usize> = (0..3).collect();
    assert!(masters
        .iter()
        .all(|&m| connections_of(&cluster, m, "app-1") > 0));

    // Rotation: the new user exists, the provider hands it out, every
    // live connection moves to it; then the old user is deleted.
    add_user(&cluster, "app-2", "second secret");
    *current.lock().unwrap() = ("app-2".to_owned(), "second secret".to_owned());
    let asked_before = asked.load(Ordering::Relaxed);
    rt.block_on(client.reauthenticate())
        .expect("reauthenticate");
    assert_eq!(
        asked.load(Ordering::Relaxed),
        asked_before + 1,
        "{server}: one provider call per rotation"
    );
    for &m in &masters {
        assert_eq!(
            connections_of(&cluster, m, "app-1"),
            0,
            "{server}: node {m} still has app-1 connections"
        );
        assert!(
            connections_of(&cluster, m, "app-2") > 0,
            "{server}: node {m}"
        );
    }
    for i in cluster.running() {
        cluster
            .conn(i)
            .unwrap()
            .command(&[b"ACL", b"DELUSER", b"app-1"])
            .unwrap();
    }
    progress("after the rotation", steady);

    // Churn after the rotation: new connections ask the provider again.
    let asked_before = asked.load(Ordering::Relaxed);
    let replica = cluster.replica_of(0).unwrap();
    cluster.failover(replica).unwrap();
    progress("after a failover", after_churn);
    let (victim, slot) = (1, 6000);
    assert_eq!(cluster.owner_index(slot).unwrap(), victim);
    cluster.kill(victim);
    let promoted = cluster.wait_failover_of(victim, slot).unwrap();
    progress("after a kill -9", after_churn);
    // Every connection closed by the servers: the new ones ask the
    // provider and authenticate as app-2.
    close_connections_of(&cluster, "app-2");
    progress("after every connection was closed", after_churn);
    assert!(
        asked.load(Ordering::Relaxed) > asked_before,
        "{server}: the new connections asked the provider"
    );
    assert!(connections_of(&cluster, promoted, "app-2") > 0);

    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        rt.block_on(writer).unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    eprintln!(
        "{server}: {} writes read back through a rotation, a failover and a kill -9; \
         the provider was asked {} times; failures: {failures:?}",
        done.load(Ordering::Relaxed),
        asked.load(Ordering::Relaxed)
    );
    assert!(failures.is_empty(), "{server}: {failures:?}");

    // A provider that hands out a wrong password: new connections are
    // refused, as Error::Auth naming the node, at once.
    *current.lock().unwrap() = ("app-2".to_owned(), "wrong".to_owned());
    let refused = rt.block_on(client.reauthenticate()).unwrap_err();
    let Error::Auth { node, detail } = &refused else {
        panic!("{server}: {refused:?}")
    };
    assert!(cluster.index_of(node).is_some(), "{server}: {node}");
    assert!(detail.contains("WRONGPASS"), "{server}: {detail}");
    // Every app-2 connection closed: the next ones need the provider.
    close_connections_of(&cluster, "app-2");
    let started = Instant::now();
    let error = rt.block_on(client.get("rot:0:0")).unwrap_err();
    assert!(
        matches!(&error, Error::Auth { detail, .. } if detail.contains("WRONGPASS")),
        "{server}: {error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{server}: not retried ({:?})",
        started.elapsed()
    );
    // The provider fixed, requests go through again.
    *current.lock().unwrap() = ("app-2".to_owned(), "second secret".to_owned());
    let healed = Instant::now();
    let value = rt.block_on(async {
        loop {
            match client.get("rot:0:0").await {
                Ok(v) => break v,
                Err(Error::Auth { .. }) if healed.elapsed() < Duration::from_secs(3) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{server}: {e:?}"),
            }
        }
    });
    assert!(value.is_some(), "{server}");
}
