//! The examples in `examples/`, run as a user runs them against real
//! clusters, so they cannot rot: `quickstart`, `pubsub` and (with
//! `redis-compat`) `from_redis_rs` in steady state,
//! `churn` through a manual failover, `tls` against a TLS-only cluster.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use zaris_tests::cluster::Cluster;
use zaris_tests::tls::Pki;
use zaris_tests::{servers_under_test, Transport};

/// An example's binary, built by `cargo test` beside this test's.
fn example(name: &str) -> PathBuf {
    let mut path = std::env::current_exe().expect("the test's path");
    path.pop();
    if path.ends_with("deps") {
        path.pop();
    }
    let path = path.join("examples").join(name);
    assert!(
        path.exists(),
        "{}: built by `cargo test -p zaris-client`",
        path.display()
    );
    path
}

fn run(name: &str, args: &[&str]) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(example(name)).args(args).output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr),
    );
    assert!(status.success(), "{name} {args:?}: {status}\n{out}\n{err}");
    out.into_owned()
}

#[test]
fn the_examples_run_against_real_clusters() {
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 1).expect("cluster");
        let seed = cluster.addr(0);

        let out = run("quickstart", &[&seed]);
        let slot = cluster.keyslot(b"user1000").unwrap();
        for line in [
            "connected: 3 masters",
            "HGET {user1000}:profile name -> Ada",
            &format!(
                "{{user1000}}:profile lives on {}",
                cluster.owner_by_shards(slot).unwrap()
            ),
            "pipeline[0] -> OK",
            "pipeline[1] -> 1",
            "pipeline[2] -> 1",
            "transaction -> 1, 1",
            "redirects 0",
        ] {
            assert!(
                out.contains(line),
                "{server}: quickstart printed no {line:?}:\n{out}"
            );
        }

        let out = run("pubsub", &[&seed, "6"]);
        for i in 0..6 {
            let channel = ["orders:{eu}", "orders:{us}"][i % 2];
            assert!(
                out.contains(&format!("{channel}: order {i}\n")),
                "{server}: {out}"
            );
        }
        assert!(out.contains("received 6 of 6"), "{server}: {out}");

        // The redis-rs program, moved over by its connection alone.
        #[cfg(feature = "redis-compat")]
        assert_eq!(
            run("from_redis_rs", &[&seed]),
            "name -> Some(\"Ada\")\nsettings has 2 fields\npipeline -> 1 1\n\
             transaction -> 1 items, log of 1\nscript -> 11\n",
            "{server}"
        );

        // churn, while a master fails over: the change shows, and writes go on.
        let mut churn = Command::new(example("churn"))
            .args([&seed, "6"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = BufReader::new(churn.stdout.take().unwrap()).lines();
        std::thread::sleep(Duration::from_secs(2));
        let master = cluster.owner_index(0).unwrap();
        let replica = cluster.replica_of(master).unwrap();
        cluster.failover(replica).unwrap();
        let printed: Vec<String> = lines.map(Result::unwrap).collect();
        assert!(churn.wait().unwrap().success());
        // The changes it printed, replayed over the first shard's slots,
        // end with the replica owning all of them (learned at once by a
        // refresh, or slot by slot from MOVED replies).
        let (old, new) = (cluster.addr(master), cluster.addr(replica));
        let mut owner = vec![old.clone(); 5461];
        for line in printed
            .iter()
            .filter_map(|l| l.strip_prefix("ownership: slots "))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (first, last) = words[0].split_once('-').unwrap();
            let (first, last): (usize, usize) = (first.parse().unwrap(), last.parse().unwrap());
            let shard = owner.iter_mut().enumerate().skip(first);
            for (slot, owner) in shard.take((last + 1).saturating_sub(first)) {
                assert_eq!(
                    *owner, words[1],
                    "{server}: {line} starts where slot {slot} was"
                );
                words[3].clone_into(owner);
            }
        }
        assert!(owner.iter().all(|o| *o == new), "{server}: {printed:#?}");
        let last = printed
            .iter()
            .rev()
            .find(|l| l.starts_with("writes ok"))
            .expect("a tally");
        let ok: u64 = last.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(ok > 100, "{server}: {last}");
    }
    let pki = Pki::generate().expect("certificates");
    let ca = pki.path("ca.pem").to_string_lossy().into_owned();
    let tls = Cluster::start_on("redis-server", 1, 0, Transport::tls(&pki)).expect("cluster");
    let out = run("tls", &[&tls.addr(0), &ca]);
    assert_eq!(
        out,
        format!("tls:hello -> over TLS (from {})\n", tls.addr(0))
    );
}
