//! Clusters whose nodes announce hostnames (`cluster-announce-hostname`,
//! `cluster-preferred-endpoint-type hostname`) that do not resolve here, as
//! behind NAT or in containers: reached through `Builder::map_address`;
//! without it, the error names the announced address and the fix.

use std::time::Duration;

use zaris_client::Error;
use zaris_tests::cluster::Cluster;
use zaris_tests::scenario::eventually;
use zaris_tests::{builder, runtime};
use zaris_tests::{each_server, Frame};

/// Node `i` announces `node-<port>.zaris.test` (a reserved name that
/// never resolves).
fn announce_hostnames(cluster: &Cluster) {
    for i in cluster.running() {
        let port = cluster.addr(i).rsplit_once(':').unwrap().1.to_owned();
        let name = format!("node-{port}.zaris.test");
        let mut conn = cluster.conn(i).unwrap();
        for (key, value) in [
            ("cluster-announce-hostname", name.as_str()),
            ("cluster-preferred-endpoint-type", "hostname"),
        ] {
            let reply = conn
                .command(&[b"CONFIG", b"SET", key.as_bytes(), value.as_bytes()])
                .unwrap();
            assert_eq!(reply, zaris_tests::simple("OK"), "CONFIG SET {key}");
        }
    }
    // Gossip carries the names; wait until every node's map shows them
    // (a node whose name it has not heard yet is `?`).
    eventually("hostnames spread", Duration::from_secs(20), || {
        cluster.running().into_iter().all(|i| {
            let reply = cluster
                .conn(i)
                .unwrap()
                .command(&[b"CLUSTER", b"SLOTS"])
                .unwrap();
            let mut words = Vec::new();
            strings(&reply, &mut words);
            !words.iter().any(|w| w == "?") && words.iter().any(|w| w.ends_with(".zaris.test"))
        })
    });
}

/// Every string in `frame`, depth first.
fn strings(frame: &Frame, out: &mut Vec<String>) {
    match frame {
        Frame::BulkString(b) | Frame::SimpleString(b) => {
            out.push(String::from_utf8_lossy(b).into())
        }
        Frame::Array(items) => items.iter().for_each(|f| strings(f, out)),
        _ => {}
    }
}

#[test]
fn announced_hostnames_are_reached_through_the_address_map() {
    each_server(|server| {
        let cluster = Cluster::start(server, 3, 0).expect("cluster");
        announce_hostnames(&cluster);
        let rt = runtime();
        let seed = cluster.addr(0);

        // Without a map: the seed answers (it was given as an IP), but the
        // nodes it names cannot be dialed, and the error says which and how
        // to fix it.
        let unmapped = rt
            .block_on(
                builder()
                    .max_attempts(2)
                    .request_timeout(Some(Duration::from_secs(3)))
                    .connect(&[&seed]),
            )
            .expect("the seed answers with a map");
        let key = (0..100)
            .map(|i| format!("host:{i}"))
            .find(|k| {
                unmapped
                    .owner_of(k)
                    .is_some_and(|o| o.contains("zaris.test"))
            })
            .unwrap();
        let owner = unmapped.owner_of(&key).unwrap();
        assert!(
            owner.starts_with("node-") && owner.contains(".zaris.test:"),
            "{owner}"
        );
        let error = rt.block_on(unmapped.set(&key, "v")).unwrap_err();
        eprintln!("{server}: without a map: {error}");
        let Error::Transport { detail, .. } = &error else {
            panic!("{server}: {error:?}")
        };
        assert!(detail.contains(&owner), "{server}: names {owner}: {detail}");
        assert!(
            detail.contains("Builder::map_address"),
            "{server}: says the fix: {detail}"
        );

        // With the map: every node reached, replies and redirects included.
        let mapped = rt
            .block_on(
                builder()
                    .map_address(|announced| {
                        let (host, port) = announced.rsplit_once(':')?;
                        host.ends_with(".zaris.test")
                            .then(|| format!("127.0.0.1:{port}"))
                    })
                    .connect(&[&seed]),
            )
            .expect("connect");
        rt.block_on(async {
            for i in 0..200 {
                let key = format!("host:{i}");
                mapped.set(&key, format!("v{i}")).await.unwrap();
            }
            for i in 0..200 {
                let key = format!("host:{i}");
                assert_eq!(
                    mapped.get(&key).await.unwrap().as_deref(),
                    Some(format!("v{i}").as_bytes())
                );
            }
        });
        let owners: std::collections::HashSet<String> = (0..200)
            .filter_map(|i| mapped.owner_of(format!("host:{i}")))
            .collect();
        assert_eq!(owners.len(), 3, "{server}: three named masters: {owners:?}");
        assert!(
            owners.iter().all(|o| o.contains(".zaris.test:")),
            "{owners:?}"
        );
        // The data is where the names say.
        let reply = cluster.conn(0).unwrap().command(&[b"DBSIZE"]).unwrap();
        assert!(
            matches!(reply, Frame::Integer(n) if n > 0),
            "{server}: {reply:?}"
        );
        assert_eq!(mapped.stats().moved_redirects, 0, "{server}");
    });
}
