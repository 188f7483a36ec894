//! The `zaris` binary run as an operator runs it, against real Redis and
//! Valkey clusters: each subcommand's table and JSON, `map` on a cluster
//! made inconsistent on purpose (exit 1), `watch` through a failover, TLS
//! with `--cacert`, passwords, and the errors people meet (each naming the
//! node and what to do).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use zaris_tests::cluster::Cluster;
use zaris_tests::tls::Pki;
use zaris_tests::{servers_under_test, simple, Frame, RedisNode, Transport};

fn zaris(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zaris"))
        .args(args)
        .env_remove("REDISCLI_AUTH")
        .output()
        .expect("zaris runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            stdout(output),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn exit(output: &Output) -> i32 {
    output.status.code().expect("exited")
}

#[test]
fn slot_route_map_and_watch_on_a_real_cluster() {
    for server in servers_under_test() {
        let cluster = Cluster::start(&server, 3, 1).expect("cluster");
        let seed = cluster.addr(0);
        slot_names_slots_spans_and_owners(&cluster, &seed);
        many_keys_spread_per_node_and_tag(&cluster, &seed);
        route_says_where_or_why_not(&cluster, &seed);
        // The failover first: the map test damages the cluster on purpose.
        watch_shows_a_failover(&cluster, &seed);
        map_finds_disagreement_and_migration(&cluster, &seed);
    }
}

fn slot_names_slots_spans_and_owners(cluster: &Cluster, seed: &str) {
    let keys = ["{user1000}.following", "plain", "foo{}{bar}", "a{b}c{d}"];
    let mut args = vec!["slot", "--json", "--seed", seed];
    args.extend(keys);
    let out = zaris(&args);
    assert_eq!(exit(&out), 0);
    let placed = json(&out);
    for (i, key) in keys.iter().enumerate() {
        let entry = &placed[i];
        let slot = cluster.keyslot(key.as_bytes()).unwrap();
        assert_eq!(entry["key"], *key);
        assert_eq!(entry["slot"], slot, "{key}");
        assert_eq!(
            entry["owner"],
            cluster.owner_by_shards(slot).unwrap(),
            "{key}"
        );
    }
    assert_eq!(placed[0]["hashed"], "user1000");
    assert_eq!(
        (
            placed[0]["hashed_from"].as_u64(),
            placed[0]["hashed_to"].as_u64()
        ),
        (Some(1), Some(9))
    );
    assert_eq!(
        placed[2]["hashed"], "foo{}{bar}",
        "an empty tag hashes the whole key"
    );
    assert_eq!(placed[3]["hashed"], "b");
    // Any bytes are a key; the table escapes what is not printable.
    let table = stdout(&zaris(&["slot", "a\u{7f}b"]));
    assert!(table.starts_with("KEY"), "{table}");
    assert!(table.contains("a\\x7fb"), "{table}");
}

fn many_keys_spread_per_node_and_tag(cluster: &Cluster, seed: &str) {
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("user:{i}\n"));
    }
    for i in 0..500 {
        text.push_str(&format!("{{cart:7}}:item{i}\n"));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_zaris"))
        .args(["slot", "--stdin", "--json", "--seed", seed, "--top", "3"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(exit(&out), 0);
    let spread = json(&out);
    assert_eq!(spread["keys"], 3500);
    let cart = cluster.keyslot(b"cart:7").unwrap();
    assert_eq!(spread["hot_slots"][0]["slot"], cart);
    assert_eq!(spread["hot_slots"][0]["keys"], 500);
    assert_eq!(
        spread["hot_slots"][0]["owner"],
        cluster.owner_by_shards(cart).unwrap()
    );
    assert_eq!(spread["hot_tags"][0]["tag"], "cart:7");
    assert_eq!(spread["hot_tags"][0]["keys"], 500);
    // Per node: the server's owners, counted here.
    let mut expected = std::collections::BTreeMap::<String, u64>::new();
    for line in text.lines() {
        let slot = zaris_core::slot_for_key(line.as_bytes());
        *expected
            .entry(cluster.owner_by_shards(slot).unwrap())
            .or_default() += 1;
    }
    let nodes = spread["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for node in nodes {
        assert_eq!(
            node["keys"],
            expected[node["node"].as_str().unwrap()],
            "{node}"
        );
    }
    let max = *expected.values().max().unwrap() as f64;
    let imbalance = spread["node_imbalance"].as_f64().unwrap();
    assert!(
        (imbalance - max / (3500.0 / 3.0)).abs() < 1e-9,
        "{imbalance}"
    );
}

fn route_says_where_or_why_not(cluster: &Cluster, seed: &str) {
    let out = zaris(&[
        "route", "--json", "--seed", seed, "--", "MSET", "{u1}:a", "1", "{u1}:b", "2",
    ]);
    assert_eq!(exit(&out), 0);
    let routed = json(&out);
    let slot = cluster.keyslot(b"u1").unwrap();
    assert_eq!(routed["target"], "slot");
    assert_eq!(routed["slot"], slot);
    assert_eq!(routed["owner"], cluster.owner_by_shards(slot).unwrap());
    assert_eq!(routed["write"], true);
    let keys: Vec<u64> = routed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["arg"].as_u64().unwrap())
        .collect();
    assert_eq!(keys, [1, 3]);
    // No one node can run a cross-slot command: exit 1, and why.
    let out = zaris(&["route", "--", "MSET", "a", "1", "b", "2"]);
    assert_eq!(exit(&out), 1);
    let text = stdout(&out);
    assert!(text.contains("no one node can run it"), "{text}");
    assert!(
        text.contains("slot 15495 (a)") && text.contains("slot 3300 (b)"),
        "{text}"
    );
    let fanout = json(&zaris(&["route", "--json", "--", "DBSIZE"]));
    assert_eq!(
        (fanout["target"].as_str(), fanout["combine"].as_str()),
        (Some("all-masters"), Some("the sum"))
    );
    let unknown = zaris(&["route", "--", "NOSUCHCOMMAND", "x"]);
    assert_eq!(exit(&unknown), 1);
    assert!(stdout(&unknown).contains("unknown command"));
}

fn map_finds_disagreement_and_migration(cluster: &Cluster, seed: &str) {
    let out = zaris(&["map", seed]);
    assert_eq!(exit(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("consistent: all 6 nodes agree"),
        "{}",
        stdout(&out)
    );
    // The owner of slot 100 drops it; the other nodes still name it.
    let owner = cluster.owner_index(100).unwrap();
    let owner_addr = cluster.addr(owner);
    let command = |i: usize, args: &[&[u8]]| cluster.conn(i).unwrap().command(args).unwrap();
    assert_eq!(
        command(owner, &[b"CLUSTER", b"DELSLOTS", b"100"]),
        simple("OK")
    );
    let out = zaris(&["map", "--json", seed]);
    assert_eq!(exit(&out), 1, "an inconsistent cluster exits 1");
    let report = json(&out);
    assert_eq!(report["consistent"], false);
    let views = report["nodes"].as_array().unwrap();
    assert_eq!(views.len(), 6);
    let own = views
        .iter()
        .find(|v| v["node"] == owner_addr.as_str())
        .unwrap();
    let others: Vec<&Value> = views
        .iter()
        .filter(|v| v["node"] != owner_addr.as_str())
        .collect();
    // Whichever view the client's map took, the two sides disagree on slot 100 alone.
    let differ = |v: &Value| {
        v["differs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["first"].as_u64(), d["last"].as_u64()))
            .collect::<Vec<_>>()
    };
    let one = vec![(Some(100), Some(100))];
    assert!(
        (differ(own).is_empty() && others.iter().all(|v| differ(v) == one))
            || (differ(own) == one && others.iter().all(|v| differ(v).is_empty())),
        "{report:#}"
    );
    assert!(stdout(&zaris(&["map", seed])).contains("INCONSISTENT"));
    assert_eq!(
        command(owner, &[b"CLUSTER", b"ADDSLOTS", b"100"]),
        simple("OK")
    );
    cluster.wait_healthy().unwrap();
    // A migration under way is reported, and is not an inconsistency.
    let target = cluster
        .running()
        .into_iter()
        .find(|&i| i != owner && cluster.is_master(i).unwrap())
        .expect("another master");
    let target_id = match command(target, &[b"CLUSTER", b"MYID"]) {
        Frame::BulkString(id) => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        command(
            owner,
            &[b"CLUSTER", b"SETSLOT", b"100", b"MIGRATING", &target_id]
        ),
        simple("OK")
    );
    let out = zaris(&["map", "--json", seed]);
    let report = json(&out);
    assert_eq!(exit(&out), 0, "{report:#}");
    let migrating = &report["migrating"][0];
    assert_eq!(
        (migrating["slot"].as_u64(), migrating["from"].as_str()),
        (Some(100), Some(owner_addr.as_str()))
    );
    assert_eq!(migrating["to"], cluster.addr(target));
    assert_eq!(
        command(owner, &[b"CLUSTER", b"SETSLOT", b"100", b"STABLE"]),
        simple("OK")
    );
    cluster.wait_healthy().unwrap();
}

fn watch_shows_a_failover(cluster: &Cluster, seed: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zaris"))
        .args(["watch", "--json", "--interval", "200ms", seed])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let start: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(start["masters"].as_array().unwrap().len(), 3);
    let master = cluster.owner_index(0).unwrap();
    let replica = cluster.replica_of(master).unwrap();
    cluster.failover(replica).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let change = loop {
        assert!(Instant::now() < deadline, "no change seen: {seen:?}");
        let line = lines.next().expect("watch ended").unwrap();
        let change: Value = serde_json::from_str(&line).unwrap();
        if change["first"] == 0 {
            break change;
        }
        seen.push(change);
    };
    assert_eq!(change["old_owner"], cluster.addr(master));
    assert_eq!(change["new_owner"], cluster.addr(replica));
    assert_eq!(change["last"], 5460);
    assert_eq!(change["revealed"], "poll");
    // Ctrl-C ends it cleanly.
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn tls_passwords_and_errors_people_meet() {
    let pki = Pki::generate().expect("certificates");
    let ca = pki.path("ca.pem").to_string_lossy().into_owned();
    for server in servers_under_test() {
        let cluster = Cluster::start_on(&server, 1, 0, Transport::tls(&pki)).expect("cluster");
        let seed = cluster.addr(0);
        let out = zaris(&["map", "--cacert", &ca, &seed]);
        assert_eq!(
            exit(&out),
            0,
            "{}{}",
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        // The Mozilla roots do not know the test CA: a TLS error, named, with what to do.
        let out = zaris(&["map", "--tls", &seed]);
        assert_eq!(exit(&out), 2);
        let error = String::from_utf8_lossy(&out.stderr);
        assert!(
            error.contains(&seed) && error.contains("--cacert"),
            "{error}"
        );
        // Plain text to a TLS port.
        let out = zaris(&["map", "--timeout", "1s", &seed]);
        assert_eq!(exit(&out), 2);
        assert!(String::from_utf8_lossy(&out.stderr).contains(&seed));
        drop(cluster);

        let node = RedisNode::start_cluster_node(&server, &["--requirepass", "pw"]).expect("start");
        let mut conn = node.connect().unwrap();
        assert_eq!(conn.command(&[b"AUTH", b"pw"]).unwrap(), simple("OK"));
        assert_eq!(
            conn.command(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383"])
                .unwrap(),
            simple("OK")
        );
        let addr = node.addr();
        let ok = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            matches!(
                zaris(&["map", "--pass", "pw", &addr]).status.code(),
                Some(0)
            )
        });
        assert!(ok, "{server}: zaris map --pass never succeeded");
        let out = Command::new(env!("CARGO_BIN_EXE_zaris"))
            .args(["slot", "--seed", &addr, "k"])
            .env("REDISCLI_AUTH", "pw")
            .output()
            .unwrap();
        assert_eq!(exit(&out), 0, "REDISCLI_AUTH is read");
        let out = zaris(&["map", "--pass", "wrong", &addr]);
        assert_eq!(exit(&out), 2);
        let error = String::from_utf8_lossy(&out.stderr);
        assert!(error.contains(&addr) && error.contains("--pass"), "{error}");
    }
    // Nothing listening: named, with what to check.
    let out = zaris(&["slot", "--seed", "127.0.0.1:1", "k"]);
    assert_eq!(exit(&out), 2);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("127.0.0.1:1") && error.contains("listening"),
        "{error}"
    );
    // Bad arguments are clap's: exit 2 with usage.
    assert_eq!(exit(&zaris(&["route"])), 2);
    assert_eq!(exit(&zaris(&["slot"])), 2);
}
