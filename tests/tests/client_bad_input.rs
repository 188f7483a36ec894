//! `zaris-client` against what a network can throw at it: a seed list
//! nobody answers on, a closed port, a server that speaks garbage, a reply
//! too large, a server that never answers. Each is a clear typed error,
//! within the deadline, and nothing panics or hangs.
//!
//! The misbehaving servers are tiny TCP listeners on 127.0.0.1 (no Redis
//! can be made to send garbage); they answer `CLUSTER SHARDS` with a map
//! that gives themselves every slot, then misbehave on the next command.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use zaris_client::{Client, Error, StopReason, TransportFailure};
use zaris_tests::builder;

/// A port nothing listens on (bound, then closed).
async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    addr
}

/// How a fake node answers the first command after the map.
#[derive(Clone, Copy)]
enum After {
    Garbage,
    Oversized,
    Silent,
}

/// A node that hands out a map naming itself for every slot, then
/// misbehaves as told.
async fn fake_node(after: After) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    let request = &buf[..n];
                    let reply: Vec<u8> = if request.windows(6).any(|w| w == b"SHARDS") {
                        let port = addr.port();
                        format!(
                            "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*8\r\n$4\r\nport\r\n:{port}\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
                        )
                        .into_bytes()
                    } else {
                        match after {
                            After::Garbage => b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec(),
                            After::Oversized => b"$9999999999\r\nxxxx".to_vec(),
                            After::Silent => Vec::new(),
                        }
                    };
                    if socket.write_all(&reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr.to_string()
}

#[tokio::test]
async fn unreachable_seeds_are_a_typed_error_naming_each() {
    let (a, b) = (closed_port().await, closed_port().await);
    let started = Instant::now();
    let error = builder()
        .connect(&[&a, &b])
        .await
        .err()
        .expect("no cluster there");
    let Error::NoSeedReachable { tried } = &error else {
        panic!("{error:?}")
    };
    let addrs: Vec<&str> = tried.iter().map(|(addr, _)| addr.as_str()).collect();
    assert!(
        addrs.contains(&a.as_str()) && addrs.contains(&b.as_str()),
        "{tried:?}"
    );
    assert!(
        tried.iter().all(|(_, why)| why.contains("refused")),
        "{tried:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        error
            .to_string()
            .starts_with("no seed answered with a cluster map"),
        "{error}"
    );
}

#[tokio::test]
async fn bad_seeds_and_settings_are_config_errors() {
    for seeds in [
        &[][..],
        &["localhost"][..],
        &[":7000"][..],
        &["host:port"][..],
    ] {
        let error = builder().connect(seeds).await.err().unwrap();
        assert!(matches!(error, Error::Config(_)), "{seeds:?}: {error:?}");
    }
    let error = Client::builder()
        .env(|name| (name == "ZARIS_REQUEST_TIMEOUT").then(|| "soon".to_owned()))
        .connect(&["127.0.0.1:1"])
        .await
        .err()
        .unwrap();
    assert_eq!(
        error,
        Error::Config(
            "ZARIS_REQUEST_TIMEOUT must be a positive number of seconds or `infinite`".into()
        )
    );
}

#[tokio::test]
async fn a_server_speaking_garbage_is_a_protocol_error() {
    // Garbage instead of a map: the seed is unusable, and says why.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let _ = socket.write_all(b"hello, this is not RESP\r\n").await;
        }
    });
    let error = builder().connect(&[&addr]).await.err().unwrap();
    let Error::NoSeedReachable { tried } = &error else {
        panic!("{error:?}")
    };
    assert!(tried[0].1.contains("protocol violation"), "{tried:?}");

    // Garbage in reply to a request: surfaced at once, not retried.
    let node = fake_node(After::Garbage).await;
    let client = builder().connect(&[&node]).await.unwrap();
    let error = client.get("k").await.unwrap_err();
    assert!(
        matches!(&error, Error::Protocol { node: n, .. } if *n == node),
        "{error:?}"
    );
    assert_eq!(client.stats().attempts, 1);
}

#[tokio::test]
async fn an_oversized_reply_is_refused() {
    let node = fake_node(After::Oversized).await;
    let client = builder()
        .max_reply_bytes(1 << 20)
        .connect(&[&node])
        .await
        .unwrap();
    let error = client.get("k").await.unwrap_err();
    assert_eq!(
        error,
        Error::ReplyTooLarge {
            node: node.clone(),
            limit: 1 << 20
        }
    );
}

#[tokio::test]
async fn a_silent_server_costs_the_deadline_and_no_more() {
    let node = fake_node(After::Silent).await;
    let deadline = Duration::from_millis(600);
    let client = builder()
        .request_timeout(Some(deadline))
        .connect(&[&node])
        .await
        .unwrap();
    let started = Instant::now();
    let error = client.set("k", "v").await.unwrap_err();
    let took = started.elapsed();
    assert!(
        took <= deadline + Duration::from_millis(200),
        "took {took:?}"
    );
    assert!(
        matches!(
            error,
            Error::Transport {
                failure: TransportFailure::TimedOut,
                stop: StopReason::DeadlineReached,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn any_bytes_are_a_key() {
    // A key with every byte value, through encoding and the slot function.
    let node = fake_node(After::Garbage).await;
    let client = builder().connect(&[&node]).await.unwrap();
    let key: Vec<u8> = (0..=255u8).collect();
    assert_eq!(client.owner_of(&key), Some(node));
    assert!(matches!(
        client.get(&key).await,
        Err(Error::Protocol { .. })
    ));
}
