//! Where the model comes from: the same scripted scenario against real
//! Redis and Valkey clusters and against the model, compared reply by
//! reply (the replies, redirects and errors, in order, as a client sees
//! them). Routing (`MOVED` by each node's view, from a replica too,
//! `READONLY`), `CROSSSLOT`, scripts and `NOSCRIPT`, `MULTI`/`EXEC` and
//! `WATCH`, `WAIT`, lists and blocking pops, a migration step by step
//! (`ASK`, `ASKING`, `TRYAGAIN`, the hand-over), a write pause (`CLIENT
//! PAUSE ms WRITE`: a write held, and a read queued behind it on its
//! connection, while another connection's read and `PING` are answered)
//! and a manual failover.
//!
//! Addresses in redirects are written as node indices (the harness and the
//! model number nodes alike: masters first, then a replica each), errors
//! by their first word: the rest of an error's text is a server's to word.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use redis_protocol::resp2::decode::decode;
use redis_protocol::resp2::encode::encode;
use redis_protocol::resp2::types::{OwnedFrame, Resp2Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zaris_core::slot_for_key;
use zaris_sim::churn::SimCluster;
use zaris_sim::model::Model;
use zaris_tests::cluster::Cluster;
use zaris_tests::soak::Churn;

/// Which node a step talks to, resolved when it runs.
#[derive(Clone, Copy, Debug)]
enum At {
    /// The master serving the key's slot.
    Owner(&'static str),
    /// The next master after the key's owner.
    Other(&'static str),
    /// The key's owner's replica.
    Replica(&'static str),
    /// The migration's source.
    Source,
    /// The migration's target.
    Target,
    /// The master the last failover replaced.
    Was,
    /// The replica that replaced it.
    New,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// Commands sent together on connection `conn` of a node.
    Send(At, u8, &'static [&'static [&'static str]]),
    /// The key's slot starts migrating from its owner to the next master.
    Begin(&'static str),
    /// These keys move to the target.
    Migrate(&'static [&'static str]),
    /// The slot is handed over to the target.
    Finish,
    /// The key's master is failed over to its replica.
    Failover(&'static str),
    /// The key's master's writes paused for this many ms.
    Pause(&'static str, u64),
    /// Commands sent on connection `conn` of a node, their replies not
    /// awaited (a pause holds them).
    SendOnly(At, u8, &'static [&'static str]),
    /// The replies owed on connection `conn` of a node, this many.
    Collect(At, u8, usize),
}

const SET_SCRIPT: &str = "return redis.call('SET', KEYS[1], ARGV[1])";
/// `SET_SCRIPT`'s SHA1.
const SET_SHA: &str = "d8f2fad9f8e86a53d2a6ebd960b33c4972cacc37";

const SCENARIO: &[Step] = &[
    Step::Send(
        At::Owner("a"),
        0,
        &[&["SET", "a", "1"], &["WAIT", "1", "2000"]],
    ),
    Step::Send(At::Owner("a"), 0, &[&["GET", "a"]]),
    Step::Send(At::Other("a"), 0, &[&["GET", "a"]]),
    Step::Send(At::Replica("a"), 0, &[&["SET", "a", "2"], &["GET", "a"]]),
    Step::Send(At::Replica("a"), 1, &[&["READONLY"], &["GET", "a"]]),
    Step::Send(At::Owner("a"), 0, &[&["MSET", "a", "1", "b", "2"]]),
    Step::Send(At::Owner("a"), 0, &[&["EVALSHA", SET_SHA, "1", "a", "v"]]),
    Step::Send(
        At::Owner("a"),
        0,
        &[
            &["EVAL", SET_SCRIPT, "1", "a", "v"],
            &["EVALSHA", SET_SHA, "1", "a", "w"],
            &["GET", "a"],
        ],
    ),
    Step::Send(
        At::Owner("a"),
        0,
        &[&["MULTI"], &["SET", "a", "2"], &["GET", "a"], &["EXEC"]],
    ),
    Step::Send(At::Owner("a"), 0, &[&["WATCH", "a"]]),
    Step::Send(At::Owner("a"), 1, &[&["SET", "a", "3"]]),
    Step::Send(
        At::Owner("a"),
        0,
        &[&["MULTI"], &["SET", "a", "4"], &["EXEC"], &["GET", "a"]],
    ),
    Step::Send(At::Owner("a"), 0, &[&["MULTI"], &["SET", "b", "1"]]),
    Step::Send(At::Owner("a"), 0, &[&["EXEC"]]),
    Step::Send(
        At::Owner("a"),
        0,
        &[
            &["RPUSH", "l{a}", "x", "y"],
            &["LRANGE", "l{a}", "0", "-1"],
            &["BLPOP", "l{a}", "1"],
        ],
    ),
    Step::Send(
        At::Owner("a"),
        0,
        &[
            &["BLPOP", "none{a}", "0.1"],
            &["INCR", "n{a}"],
            &["INCRBY", "n{a}", "5"],
            &["DEL", "n{a}", "none{a}"],
            &["GET", "none{a}"],
        ],
    ),
    Step::Send(
        At::Owner("a"),
        0,
        &[
            &["HSET", "h{a}", "v", "1", "d", "x"],
            &["HMGET", "h{a}", "v", "d", "z"],
            &["EXISTS", "h{a}", "none{a}"],
        ],
    ),
    // A slot migrated step by step.
    Step::Send(At::Owner("m"), 0, &[&["SET", "{m}1", "v"]]),
    Step::Begin("m"),
    Step::Send(At::Source, 0, &[&["GET", "{m}1"], &["GET", "{m}2"]]),
    Step::Send(At::Target, 0, &[&["GET", "{m}2"]]),
    Step::Send(At::Target, 0, &[&["ASKING"], &["GET", "{m}2"]]),
    Step::Send(At::Source, 0, &[&["MGET", "{m}1", "{m}2"]]),
    Step::Migrate(&["{m}1"]),
    Step::Send(At::Source, 0, &[&["GET", "{m}1"]]),
    Step::Send(
        At::Target,
        0,
        &[
            &["ASKING"],
            &["GET", "{m}1"],
            &["ASKING"],
            &["SET", "{m}2", "w"],
        ],
    ),
    Step::Send(At::Target, 0, &[&["ASKING"], &["MGET", "{m}1", "{m}2"]]),
    Step::Finish,
    Step::Send(At::Source, 0, &[&["GET", "{m}1"]]),
    Step::Send(At::Target, 0, &[&["MGET", "{m}1", "{m}2"]]),
    // A write pause: the write waits, and so does the read behind it on
    // its connection; another connection's read (the old value) and PING
    // are answered meanwhile; then the write lands.
    Step::Send(At::Owner("p"), 0, &[&["SET", "p", "1"]]),
    Step::Pause("p", 400),
    Step::SendOnly(At::Owner("p"), 1, &["SET", "p", "2"]),
    Step::SendOnly(At::Owner("p"), 1, &["GET", "p"]),
    Step::Send(
        At::Owner("p"),
        0,
        &[&["GET", "p"], &["PING"], &["LLEN", "l{p}"]],
    ),
    Step::Collect(At::Owner("p"), 1, 2),
    Step::Send(At::Owner("p"), 0, &[&["GET", "p"]]),
    // A manual failover.
    Step::Failover("a"),
    Step::Send(At::Was, 0, &[&["GET", "a"]]),
    Step::Send(At::New, 0, &[&["GET", "a"]]),
];

/// A reply as compared: redirects by node index, errors by first word.
fn brief(frame: &OwnedFrame, addrs: &[String]) -> String {
    match frame {
        OwnedFrame::SimpleString(s) => format!("+{}", String::from_utf8_lossy(s)),
        OwnedFrame::Error(e) => {
            let mut words = e.split(' ');
            let code = words.next().unwrap_or_default();
            match code {
                "MOVED" | "ASK" => {
                    let slot = words.next().unwrap_or_default();
                    let to = words.next().unwrap_or_default();
                    let node = addrs.iter().position(|a| a == to);
                    format!("-{code} {slot} node {node:?}")
                }
                _ => format!("-{code}"),
            }
        }
        OwnedFrame::Integer(n) => format!(":{n}"),
        OwnedFrame::BulkString(b) => format!("${}", String::from_utf8_lossy(b)),
        OwnedFrame::Null => "nil".into(),
        OwnedFrame::Array(items) => {
            let items: Vec<String> = items.iter().map(|f| brief(f, addrs)).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

fn encoded(args: &[&str]) -> Vec<u8> {
    let frame = OwnedFrame::Array(
        args.iter()
            .map(|a| OwnedFrame::BulkString(a.as_bytes().to_vec()))
            .collect(),
    );
    let mut out = vec![0; frame.encode_len(false)];
    encode(&mut out, &frame, false).expect("encodes");
    out
}

/// What the runner keeps between steps.
#[derive(Default)]
struct Roles {
    source: usize,
    target: usize,
    was: usize,
    new: usize,
}

/// The scenario on a real cluster of `server`.
fn on_servers(server: &str) -> Vec<String> {
    let cluster = Cluster::start(server, 3, 1).expect("cluster");
    let addrs: Vec<String> = (0..6).map(|i| cluster.addr(i)).collect();
    let mut conns: BTreeMap<(usize, u8), zaris_tests::RespConn> = BTreeMap::new();
    let mut roles = Roles::default();
    let mut seen = Vec::new();
    let owner = |key: &str| {
        cluster
            .owner_index(slot_for_key(key.as_bytes()))
            .expect("owner")
    };
    let next_master = |m: usize| (m + 1) % 3;
    for step in SCENARIO {
        match *step {
            Step::Send(at, conn, commands) => {
                let node = match at {
                    At::Owner(k) => owner(k),
                    At::Other(k) => next_master(owner(k)),
                    At::Replica(k) => cluster.replica_of(owner(k)).expect("replica"),
                    At::Source => roles.source,
                    At::Target => roles.target,
                    At::Was => roles.was,
                    At::New => roles.new,
                };
                let c = conns
                    .entry((node, conn))
                    .or_insert_with(|| cluster.conn(node).expect("a connection"));
                let args: Vec<Vec<&[u8]>> = commands
                    .iter()
                    .map(|c| c.iter().map(|a| a.as_bytes()).collect())
                    .collect();
                let replies = c.pipeline(args.iter().map(Vec::as_slice)).expect("replies");
                seen.extend(replies.iter().map(|r| brief(r, &addrs)));
            }
            Step::Begin(k) => {
                let slot = slot_for_key(k.as_bytes());
                roles.source = owner(k);
                roles.target = next_master(roles.source);
                cluster
                    .begin_migration(slot, roles.source, roles.target)
                    .expect("migrating");
            }
            Step::Migrate(keys) => {
                let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
                cluster
                    .migrate_keys(roles.source, roles.target, &keys)
                    .expect("migrated");
            }
            Step::Finish => {
                let slot = slot_for_key(b"m");
                cluster
                    .finish_migration(slot, roles.target)
                    .expect("handed over");
                cluster.wait_healthy().expect("healthy");
            }
            Step::Failover(k) => {
                roles.was = owner(k);
                let replica = cluster.replica_of(roles.was).expect("replica");
                roles.new = replica;
                cluster.failover(replica).expect("failover");
                cluster.wait_steps_down(roles.was).expect("steps down");
                cluster.wait_healthy().expect("healthy");
            }
            Step::Pause(k, ms) => {
                cluster
                    .pause_writes(owner(k), Duration::from_millis(ms))
                    .expect("paused");
            }
            Step::SendOnly(At::Owner(k), conn, command) => {
                let node = owner(k);
                let c = conns
                    .entry((node, conn))
                    .or_insert_with(|| cluster.conn(node).expect("a connection"));
                let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
                c.send([args.as_slice()]).expect("sent");
            }
            Step::Collect(At::Owner(k), conn, n) => {
                let c = conns.get_mut(&(owner(k), conn)).expect("open");
                let replies = c.replies(n).expect("replies");
                seen.extend(replies.iter().map(|r| brief(r, &addrs)));
            }
            Step::SendOnly(..) | Step::Collect(..) => unreachable!("at a key's owner only"),
        }
    }
    seen
}

/// The probe's connections to the model's nodes: by node and number, each
/// with what it read and has not decoded yet.
struct ModelConns {
    open: BTreeMap<(usize, u8), (turmoil::net::TcpStream, Vec<u8>)>,
    addrs: Vec<String>,
}

impl ModelConns {
    /// `bytes` on connection `conn` of `node`, opened if new.
    async fn send(&mut self, node: usize, conn: u8, bytes: &[u8]) -> std::io::Result<()> {
        if let std::collections::btree_map::Entry::Vacant(free) = self.open.entry((node, conn)) {
            let stream = turmoil::net::TcpStream::connect(self.addrs[node].as_str()).await?;
            free.insert((stream, Vec::new()));
        }
        let (stream, _) = self.open.get_mut(&(node, conn)).expect("open");
        stream.write_all(bytes).await
    }

    /// The next `n` replies on connection `conn` of `node`, as compared.
    async fn replies(&mut self, node: usize, conn: u8, n: usize) -> std::io::Result<Vec<String>> {
        let (stream, buf) = self.open.get_mut(&(node, conn)).expect("open");
        let mut replies = Vec::new();
        while replies.len() < n {
            if let Some((frame, used)) = decode(buf).map_err(std::io::Error::other)? {
                buf.drain(..used);
                replies.push(brief(&frame, &self.addrs));
                continue;
            }
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await?;
            assert!(read > 0, "the model closed the connection");
            buf.extend_from_slice(&chunk[..read]);
        }
        Ok(replies)
    }
}

/// The scenario on the model, in turmoil's simulated time.
fn on_model() -> Vec<String> {
    let model = Rc::new(RefCell::new(Model::new(3, true, 0, 1)));
    let addrs: Vec<String> = (0..6).map(|i| model.borrow().addr(i)).collect();
    let mut sim = zaris_sim::run::simulation(1, Duration::from_secs(120)).build();
    sim.host(zaris_sim::model::HOST, {
        let model = model.clone();
        move || zaris_sim::serve::cluster(model.clone())
    });
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    sim.client("probe", {
        let (model, seen) = (model.clone(), seen.clone());
        async move {
            let mut cluster = SimCluster::new(model.clone());
            let mut conns = ModelConns {
                open: BTreeMap::new(),
                addrs: addrs.clone(),
            };
            let mut roles = Roles::default();
            for step in SCENARIO {
                let owner = |k: &str| {
                    model.borrow().truth.owner[usize::from(slot_for_key(k.as_bytes()))]
                        .expect("owner")
                };
                match *step {
                    Step::Send(at, conn, commands) => {
                        let node = match at {
                            At::Owner(k) => owner(k),
                            At::Other(k) => (owner(k) + 1) % 3,
                            At::Replica(k) => cluster.replica_of(owner(k)).await?,
                            At::Source => roles.source,
                            At::Target => roles.target,
                            At::Was => roles.was,
                            At::New => roles.new,
                        };
                        let out: Vec<u8> = commands.iter().flat_map(|c| encoded(c)).collect();
                        conns.send(node, conn, &out).await?;
                        let replies = conns.replies(node, conn, commands.len()).await?;
                        seen.borrow_mut().extend(replies);
                    }
                    Step::Begin(k) => {
                        roles.source = owner(k);
                        roles.target = (roles.source + 1) % 3;
                        cluster
                            .begin_migration(slot_for_key(k.as_bytes()), roles.source, roles.target)
                            .await?;
                    }
                    Step::Migrate(keys) => {
                        let keys: Vec<Vec<u8>> =
                            keys.iter().map(|k| k.as_bytes().to_vec()).collect();
                        cluster
                            .migrate_keys(roles.source, roles.target, &keys)
                            .await?;
                    }
                    Step::Finish => {
                        cluster
                            .finish_migration(slot_for_key(b"m"), roles.target)
                            .await?;
                        cluster.wait_healthy().await?;
                    }
                    Step::Failover(k) => {
                        roles.was = owner(k);
                        let replica = cluster.replica_of(roles.was).await?;
                        roles.new = replica;
                        cluster.failover(replica).await?;
                        cluster.wait_steps_down(roles.was).await?;
                        cluster.wait_healthy().await?;
                    }
                    Step::Pause(k, ms) => {
                        cluster
                            .pause_writes(owner(k), Duration::from_millis(ms))
                            .await?;
                    }
                    Step::SendOnly(At::Owner(k), conn, command) => {
                        conns.send(owner(k), conn, &encoded(command)).await?;
                    }
                    Step::Collect(At::Owner(k), conn, n) => {
                        let replies = conns.replies(owner(k), conn, n).await?;
                        seen.borrow_mut().extend(replies);
                    }
                    Step::SendOnly(..) | Step::Collect(..) => {
                        unreachable!("at a key's owner only")
                    }
                }
            }
            let _ = &mut cluster;
            Ok(())
        }
    });
    sim.run().expect("the scenario ran on the model");
    let seen = seen.borrow().clone();
    seen
}

#[test]
fn the_model_answers_as_redis_and_valkey_do() {
    let model = on_model();
    assert!(model.len() > 40, "{model:#?}");
    for server in zaris_tests::servers_under_test() {
        let real = on_servers(&server);
        let width = real.len().max(model.len());
        let mut differ = Vec::new();
        for i in 0..width {
            let (r, m) = (real.get(i), model.get(i));
            if r != m {
                differ.push(format!("reply {i}: {server} {r:?}, the model {m:?}"));
            }
        }
        assert!(
            differ.is_empty(),
            "{} replies differ:\n{}\n{server}: {real:#?}",
            differ.len(),
            differ.join("\n")
        );
        eprintln!(
            "{server}: {} replies, every one as the model answers: {real:?}",
            real.len()
        );
    }
}
