//! `zaris-client` over TLS against TLS-only clusters (`port 0`, `tls-port`,
//! TLS on the cluster bus and for replication), with certificates made by
//! the test: mutual TLS, and every way a handshake goes wrong, each a typed
//! error naming the address within the attempt time-out. (Routing and churn
//! over TLS run in `client_cluster.rs`, beside their plain-text runs.)

use std::time::{Duration, Instant};

use zaris_client::Error;
use zaris_tests::cluster::Cluster;
use zaris_tests::tls::{Pki, ServerCert};
use zaris_tests::{builder, runtime};
use zaris_tests::{each_server, Transport};

const ATTEMPT: Duration = Duration::from_secs(2);

/// Connects to `seed` and returns the error, checking it came within the
/// attempt time-out (plus slack for a loaded machine).
fn connect_error(
    rt: &tokio::runtime::Runtime,
    seed: &str,
    tls: Option<zaris_client::rustls::ClientConfig>,
) -> Error {
    let mut builder = builder().attempt_timeout(ATTEMPT);
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    let started = Instant::now();
    let result = rt.block_on(builder.connect(&[seed]));
    let took = started.elapsed();
    let error = result.err().expect("the connection must fail");
    assert!(
        took < ATTEMPT + Duration::from_secs(2),
        "{seed}: {error} took {took:?}: no hang"
    );
    eprintln!("{seed}: {error} ({took:?})");
    error
}

/// The TLS error's address and detail.
fn tls_detail(error: &Error) -> (&str, &str) {
    match error {
        Error::Tls { node, detail } => (node, detail),
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

#[test]
fn mutual_tls_and_every_handshake_failure() {
    let pki = Pki::generate().expect("certificates");
    let rt = runtime();
    each_server(|server| {
        // A good TLS cluster: works with the CA, fails with another one or
        // with the public roots `rediss://` uses by default.
        let cluster = Cluster::start_on(server, 1, 0, Transport::tls(&pki)).expect("cluster");
        let addr = cluster.addr(0);
        let good = pki.client_config("ca.pem", false).unwrap();
        let client = rt
            .block_on(
                builder()
                    .tls(good.clone())
                    .connect(&[&format!("rediss://{addr}")]),
            )
            .expect("TLS connect");
        rt.block_on(async {
            client.set("tls:key", "over TLS").await.unwrap();
            assert_eq!(
                client.get("tls:key").await.unwrap().as_deref(),
                Some(&b"over TLS"[..])
            );
        });

        let wrong_ca = connect_error(
            &rt,
            &addr,
            Some(pki.client_config("other-ca.pem", false).unwrap()),
        );
        let (node, detail) = tls_detail(&wrong_ca);
        assert_eq!(node, addr, "{server}");
        assert!(detail.contains("UnknownIssuer"), "{server}: {detail}");

        let public_roots = connect_error(&rt, &format!("rediss://{addr}"), None);
        assert!(
            tls_detail(&public_roots).1.contains("UnknownIssuer"),
            "{server}: verified by default"
        );

        // Plain text to the TLS port: the node hangs up at once.
        let plain = connect_error(&rt, &addr, None);
        let Error::NoSeedReachable { tried } = &plain else {
            panic!("{server}: {plain:?}")
        };
        assert_eq!(tried.len(), 1);
        assert_eq!(tried[0].0, addr);
        assert!(tried[0].1.contains("use rediss://"), "{server}: {plain}");

        // TLS to a plain-text port.
        let plain_cluster = Cluster::start(server, 1, 0).expect("cluster");
        let to_plain = connect_error(&rt, &plain_cluster.addr(0), Some(good.clone()));
        let (node, detail) = tls_detail(&to_plain);
        assert_eq!(node, plain_cluster.addr(0));
        assert!(detail.contains("TLS"), "{server}: {detail}");
        drop(plain_cluster);

        // An expired node certificate.
        let expired = Transport::Tls {
            pki: pki.clone(),
            cert: ServerCert::Expired,
            mutual: false,
        };
        let expired_cluster = Cluster::start_on(server, 1, 0, expired).expect("cluster");
        let error = connect_error(&rt, &expired_cluster.addr(0), Some(good.clone()));
        assert!(
            tls_detail(&error).1.contains("certificate expired"),
            "{server}: {error}"
        );

        // The map comes from a good node, dialed as seeded; its other
        // master is dialed where an expired certificate waits. A command,
        // a transaction and a WATCH for that master's keys meet the same
        // rule: a TLS error naming it, at once, never retried.
        let two = Cluster::start_on(server, 2, 0, Transport::tls(&pki)).expect("cluster");
        let seed = format!("localhost:{}", two.addr(0).rsplit_once(':').unwrap().1);
        let (kept, to) = (seed.clone(), expired_cluster.addr(0));
        let client = rt
            .block_on(
                builder()
                    .attempt_timeout(ATTEMPT)
                    .tls(good.clone())
                    .map_address(move |a| (a != kept).then(|| to.clone()))
                    .connect(&[&format!("rediss://{seed}")]),
            )
            .expect("the map from the seed");
        let key = (0..)
            .map(|i| format!("tx:{i}"))
            .find(|k| client.owner_of(k).is_some_and(|o| o != seed))
            .unwrap();
        let owner = client.owner_of(&key).unwrap();
        rt.block_on(async {
            let started = Instant::now();
            let by_cmd = client.cmd(&["SET", &key, "1"]).await.unwrap_err();
            let mut tx = client.transaction();
            tx.cmd(&["SET", &key, "1"]).cmd(&["INCR", &key]);
            let by_tx = tx.exec().await.unwrap_err();
            let by_watch = client
                .watch(&[&key], |w| async move { Ok(w) })
                .await
                .unwrap_err();
            for (what, error) in [
                ("cmd", &by_cmd),
                ("transaction", &by_tx),
                ("watch", &by_watch),
            ] {
                let (node, detail) = tls_detail(error);
                assert_eq!(node, owner, "{server} {what}");
                assert!(
                    detail.contains("certificate expired"),
                    "{server} {what}: {detail}"
                );
            }
            assert!(
                started.elapsed() < 3 * ATTEMPT,
                "{server}: surfaced at once, not retried ({:?})",
                started.elapsed()
            );
        });
        drop(two);
        drop(client);
        drop(expired_cluster);

        // Mutual TLS: the client certificate opens the door, its absence
        // is a TLS error naming the node.
        let mutual = Transport::Tls {
            pki: pki.clone(),
            cert: ServerCert::Valid,
            mutual: true,
        };
        let mutual_cluster = Cluster::start_on(server, 1, 0, mutual).expect("cluster");
        let seed = format!("rediss://{}", mutual_cluster.addr(0));
        let with_cert = rt
            .block_on(
                builder()
                    .tls(pki.client_config("ca.pem", true).unwrap())
                    .connect(&[&seed]),
            )
            .expect("mutual TLS connect");
        rt.block_on(async {
            with_cert.set("mtls", "1").await.unwrap();
            assert_eq!(
                with_cert.get("mtls").await.unwrap().as_deref(),
                Some(&b"1"[..])
            );
        });
        let without = connect_error(&rt, &seed, Some(good.clone()));
        let (node, detail) = tls_detail(&without);
        assert_eq!(node, mutual_cluster.addr(0));
        assert!(
            detail.to_lowercase().contains("certificate"),
            "{server}: {detail}"
        );
    });
}
