//! A real Redis Cluster (or Valkey cluster) on 127.0.0.1, built by hand
//! from [`RedisNode`]s: masters with their slots, replicas synced, and the
//! churn events the client is tested under (manual failover, slot
//! migration step by step, `kill -9`, scale-out, the dead node's return).
//! Every node is killed when the cluster is dropped.

use std::io;
use std::time::{Duration, Instant};

use crate::proxy::{Faults, Proxy};
use crate::{Frame, RedisNode, RespConn, Transport};

/// Cluster bus time-out: a dead master is failed over in a second or two.
const NODE_TIMEOUT_MS: &str = "1000";
/// How long any convergence may take before the harness gives up.
const CONVERGE: Duration = Duration::from_secs(30);

/// Settings every node runs with.
const NODE_ARGS: &[&str] = &[
    "--cluster-node-timeout",
    NODE_TIMEOUT_MS,
    // A replica may take over however stale its data (tests kill masters).
    "--cluster-replica-validity-factor",
    "0",
    "--cluster-allow-replica-migration",
    "no",
    // Replicas sync at once instead of after the default 5 s delay.
    "--repl-diskless-sync",
    "yes",
    "--repl-diskless-sync-delay",
    "0",
    // `DEBUG SLEEP` from 127.0.0.1, to hold a replica back (see `stall`).
    "--enable-debug-command",
    "local",
];

/// The last octet of node `i`'s source address (`127.0.0.x`) in a
/// proxied cluster.
fn source_of(i: usize) -> u8 {
    u8::try_from(10 + i).unwrap_or(u8::MAX)
}

/// A running cluster.
pub struct Cluster {
    binary: String,
    transport: Transport,
    nodes: Vec<RedisNode>,
    ids: Vec<String>,
    /// Whether every node sits behind proxies (see [`Cluster::start_proxied`]).
    proxied: bool,
    /// Each node's proxies, when proxied.
    proxies: Vec<Option<NodeProxies>>,
    /// Nodes drained, forgotten and stopped ([`Cluster::forget_node`]).
    gone: Vec<bool>,
    /// Arguments every node starts with besides the usual ones (a module
    /// to load: [`Cluster::start_with`]).
    extra_args: Vec<String>,
}

/// The proxies in front of one node: its client port and its cluster bus.
struct NodeProxies {
    client: Proxy,
    bus: Proxy,
    /// Cut off by [`Cluster::partition`].
    cut: std::sync::atomic::AtomicBool,
}

fn text(frame: &Frame) -> String {
    match frame {
        Frame::BulkString(b) | Frame::SimpleString(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Error(e) => format!("-{e}"),
        Frame::Integer(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn ok(frame: Frame, what: &str) -> io::Result<()> {
    match &frame {
        Frame::SimpleString(s) if s == b"OK" => Ok(()),
        other => Err(io::Error::other(format!("{what}: {}", text(other)))),
    }
}

/// The id of the master that `CLUSTER NODES` text says serves `slot`.
fn owner_in_nodes(nodes: &str, slot: u16) -> Option<String> {
    nodes.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let serves = fields.iter().skip(8).any(|range| {
            let mut ends = range.splitn(2, '-').map(str::parse::<u16>);
            match (ends.next(), ends.next()) {
                (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&slot),
                (Some(Ok(a)), None) => a == slot,
                _ => false, // [slot->-id]: a migration, not ownership
            }
        });
        (serves && fields.get(2).is_some_and(|f| f.contains("master")))
            .then(|| fields[0].to_owned())
    })
}

/// Polls `check` until it holds or [`CONVERGE`] passes.
fn wait_until(what: &str, mut check: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    let started = Instant::now();
    loop {
        if check().unwrap_or(false) {
            return Ok(());
        }
        if started.elapsed() > CONVERGE {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("cluster never got there: {what}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Redis's own split of the slots over `masters` (what `redis-cli
/// --cluster create` assigns): 0-5460, 5461-10922, 10923-16383 for three.
#[must_use]
pub fn default_split(masters: usize) -> Vec<(u16, u16)> {
    let per = 16384.0 / masters as f64;
    let mut cursor = 0.0;
    let mut first = 0u16;
    (0..masters)
        .map(|i| {
            let last = if i + 1 == masters {
                16383
            } else {
                (cursor + per - 1.0).round() as u16
            };
            let range = (first, last);
            first = last + 1;
            cursor += per;
            range
        })
        .collect()
}

impl Cluster {
    /// Starts `masters` masters with `replicas` replicas each, assigns the
    /// slots, and waits for `cluster_state:ok` everywhere and every replica
    /// in sync.
    ///
    /// # Errors
    /// A node did not start, or the cluster did not converge.
    pub fn start(binary: &str, masters: usize, replicas: usize) -> io::Result<Self> {
        Self::start_on(binary, masters, replicas, Transport::Plain)
    }

    /// [`Cluster::start`], every node behind a fault-injecting [`Proxy`] on
    /// its client port and another on its cluster bus, whose ports it
    /// announces: clients, replicas and the other nodes reach it only
    /// through them ([`Cluster::addr`] is the proxy's address), while the
    /// harness administers it directly. Faults are set per node with
    /// [`Cluster::fault`], [`Cluster::partition`] and
    /// [`Cluster::drop_connections`].
    ///
    /// # Errors
    /// A node or proxy did not start, or the cluster did not converge.
    pub fn start_proxied(binary: &str, masters: usize, replicas: usize) -> io::Result<Self> {
        Self::build(binary, masters, replicas, Transport::Plain, true, &[])
    }

    /// [`Cluster::start`], every node reached by `transport` (TLS only,
    /// the cluster bus and replication included, for [`Transport::Tls`]).
    ///
    /// # Errors
    /// A node did not start, or the cluster did not converge.
    pub fn start_on(
        binary: &str,
        masters: usize,
        replicas: usize,
        transport: Transport,
    ) -> io::Result<Self> {
        Self::build(binary, masters, replicas, transport, false, &[])
    }

    /// [`Cluster::start`], every node (those added later too) started with
    /// `extra` arguments as well: `["--loadmodule", path]`.
    ///
    /// # Errors
    /// A node did not start, or the cluster did not converge.
    pub fn start_with(
        binary: &str,
        masters: usize,
        replicas: usize,
        extra: &[&str],
    ) -> io::Result<Self> {
        Self::build(binary, masters, replicas, Transport::Plain, false, extra)
    }

    fn build(
        binary: &str,
        masters: usize,
        replicas: usize,
        transport: Transport,
        proxied: bool,
        extra: &[&str],
    ) -> io::Result<Self> {
        let total = masters * (1 + replicas);
        let mut cluster = Self {
            binary: binary.to_owned(),
            transport,
            nodes: Vec::new(),
            ids: Vec::new(),
            proxied,
            proxies: Vec::new(),
            gone: Vec::new(),
            extra_args: extra.iter().map(|a| (*a).to_owned()).collect(),
        };
        for _ in 0..total {
            cluster.spawn_node()?;
        }
        for (i, (first, last)) in default_split(masters).into_iter().enumerate() {
            let (first, last) = (first.to_string(), last.to_string());
            ok(
                cluster.conn(i)?.command(&[
                    b"CLUSTER",
                    b"ADDSLOTSRANGE",
                    first.as_bytes(),
                    last.as_bytes(),
                ])?,
                "ADDSLOTSRANGE",
            )?;
        }
        for i in 1..total {
            cluster.meet(i)?;
        }
        cluster.wait_all_known()?;
        for r in 0..masters * replicas {
            let replica = masters + r;
            let master_id = cluster.ids[r % masters].clone();
            wait_until("replica knows its master", || {
                Ok(cluster.conn(replica)?.command(&[
                    b"CLUSTER",
                    b"REPLICATE",
                    master_id.as_bytes(),
                ])? == crate::simple("OK"))
            })?;
        }
        cluster.wait_healthy()?;
        tracing::info!(masters, replicas, "cluster up");
        Ok(cluster)
    }

    fn spawn_node(&mut self) -> io::Result<usize> {
        let mut args: Vec<String> = NODE_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.extend(self.extra_args.iter().cloned());
        let proxies = if self.proxied {
            if !matches!(self.transport, Transport::Plain) {
                return Err(io::Error::other("proxied clusters are plain-text only"));
            }
            let proxies = NodeProxies {
                client: Proxy::start()?,
                bus: Proxy::start()?,
                cut: std::sync::atomic::AtomicBool::new(false),
            };
            args.extend([
                // Its own source address, so that the others' proxies can
                // tell its connections apart (see `partition`).
                "--bind-source-addr".to_owned(),
                format!("127.0.0.{}", source_of(self.nodes.len())),
                "--cluster-announce-port".to_owned(),
                proxies.client.port().to_string(),
                "--cluster-announce-bus-port".to_owned(),
                proxies.bus.port().to_string(),
            ]);
            Some(proxies)
        } else {
            None
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let node = RedisNode::start_cluster_node_on(&self.binary, &args, self.transport.clone())?;
        if let Some(proxies) = &proxies {
            proxies.client.forward_to(node.port());
            proxies.bus.forward_to(node.port() + 10000);
        }
        let id = text(&node.connect()?.command(&[b"CLUSTER", b"MYID"])?);
        self.nodes.push(node);
        self.ids.push(id);
        self.proxies.push(proxies);
        self.gone.push(false);
        Ok(self.nodes.len() - 1)
    }

    fn meet(&self, i: usize) -> io::Result<()> {
        // A member (the first still running) as the others see it: through
        // its proxies, when proxied.
        let member = self
            .running()
            .into_iter()
            .find(|&j| j != i)
            .ok_or_else(|| io::Error::other("no running node to meet"))?;
        let (port, bus) = match &self.proxies[member] {
            Some(p) => (p.client.port(), p.bus.port()),
            None => (self.nodes[member].port(), self.nodes[member].port() + 10000),
        };
        let (port, bus) = (port.to_string(), bus.to_string());
        ok(
            self.conn(i)?.command(&[
                b"CLUSTER",
                b"MEET",
                b"127.0.0.1",
                port.as_bytes(),
                bus.as_bytes(),
            ])?,
            "MEET",
        )
    }

    fn proxies(&self, i: usize) -> io::Result<&NodeProxies> {
        self.proxies[i]
            .as_ref()
            .ok_or_else(|| io::Error::other("the cluster was not started proxied"))
    }

    /// Applies `faults` to node `i`'s client port (clients and replicas):
    /// latency, one direction cut, replies slowed ([`Faults::HEALTHY`] heals).
    ///
    /// # Errors
    /// The cluster is not proxied.
    pub fn fault(&self, i: usize, faults: Faults) -> io::Result<()> {
        self.proxies(i)?.client.set(faults);
        Ok(())
    }

    /// Node `i` falls off the network (or, with `false`, comes back): its
    /// client port and its bus become black holes, accepting connections
    /// and answering nothing, and what it sends the others (gossip,
    /// replication) is held too, so the cluster fails it over as it would
    /// a node across a broken link, while its process runs on.
    ///
    /// # Errors
    /// The cluster is not proxied.
    pub fn partition(&self, i: usize, cut: bool) -> io::Result<()> {
        let faults = if cut {
            Faults::BLACK_HOLE
        } else {
            Faults::HEALTHY
        };
        let proxies = self.proxies(i)?;
        proxies.client.set(faults);
        proxies.bus.set(faults);
        proxies.cut.store(cut, std::sync::atomic::Ordering::Relaxed);
        for j in (0..self.nodes.len()).filter(|&j| j != i) {
            let others = self.proxies(j)?;
            others.client.block_source(source_of(i), cut);
            others.bus.block_source(source_of(i), cut);
        }
        Ok(())
    }

    /// Closes every client connection to node `i` open now (new ones are
    /// accepted).
    ///
    /// # Errors
    /// The cluster is not proxied.
    pub fn drop_connections(&self, i: usize) -> io::Result<()> {
        self.proxies(i)?.client.drop_connections();
        Ok(())
    }

    fn wait_all_known(&self) -> io::Result<()> {
        let running = self.running();
        let members = self.gone.iter().filter(|g| !**g).count();
        wait_until("every node knows every other", || {
            for &i in &running {
                let nodes = text(&self.conn(i)?.command(&[b"CLUSTER", b"NODES"])?);
                if nodes.lines().filter(|l| !l.contains("handshake")).count() < members {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Waits for `cluster_state:ok` on every running node, every running
    /// replica in sync with its master, and all nodes agreeing on who owns
    /// every slot.
    ///
    /// # Errors
    /// It did not get there in time.
    pub fn wait_healthy(&self) -> io::Result<()> {
        wait_until(
            "cluster_state:ok, replicas in sync, one view of the slots",
            || {
                let mut views = Vec::new();
                for i in self.running() {
                    let mut conn = self.conn(i)?;
                    if !text(&conn.command(&[b"CLUSTER", b"INFO"])?).contains("cluster_state:ok") {
                        return Ok(false);
                    }
                    let replication = text(&conn.command(&[b"INFO", b"replication"])?);
                    if replication.contains("role:slave")
                        && !replication.contains("master_link_status:up")
                    {
                        return Ok(false);
                    }
                    views.push(self.slot_map_of(i)?);
                }
                Ok(views.windows(2).all(|w| w[0] == w[1]))
            },
        )
    }

    /// Slot ranges and the address of their master, as node `i` sees them
    /// (`CLUSTER SLOTS`), sorted.
    fn slot_map_of(&self, i: usize) -> io::Result<Vec<(i64, i64, String)>> {
        let Frame::Array(entries) = self.conn(i)?.command(&[b"CLUSTER", b"SLOTS"])? else {
            return Err(io::Error::other("CLUSTER SLOTS is not an array"));
        };
        let mut map = Vec::new();
        for entry in entries {
            if let Frame::Array(parts) = entry {
                if let [Frame::Integer(first), Frame::Integer(last), Frame::Array(master), ..] =
                    parts.as_slice()
                {
                    if let [host, Frame::Integer(port), ..] = master.as_slice() {
                        map.push((*first, *last, format!("{}:{port}", text(host))));
                    }
                }
            }
        }
        map.sort();
        Ok(map)
    }

    /// The indexes of the nodes not killed, frozen or partitioned.
    #[must_use]
    pub fn running(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_running())
            .filter(|&i| {
                self.proxies[i]
                    .as_ref()
                    .is_none_or(|p| !p.cut.load(std::sync::atomic::Ordering::Relaxed))
            })
            .collect()
    }

    /// Node `i`'s address as the cluster announces it (its proxy's, when
    /// proxied).
    #[must_use]
    pub fn addr(&self, i: usize) -> String {
        match &self.proxies[i] {
            Some(p) => format!("127.0.0.1:{}", p.client.port()),
            None => self.nodes[i].addr(),
        }
    }

    /// Every node's address (seeds for a client).
    #[must_use]
    pub fn addrs(&self) -> Vec<String> {
        (0..self.nodes.len()).map(|i| self.addr(i)).collect()
    }

    /// The index of the node at `addr`.
    #[must_use]
    pub fn index_of(&self, addr: &str) -> Option<usize> {
        (0..self.nodes.len()).position(|i| self.addr(i) == addr)
    }

    /// A fresh connection to node `i`.
    ///
    /// # Errors
    /// The node does not accept it.
    pub fn conn(&self, i: usize) -> io::Result<RespConn> {
        self.nodes[i].connect()
    }

    /// A connection to any running node.
    ///
    /// # Errors
    /// None accepts it.
    pub fn any_conn(&self) -> io::Result<RespConn> {
        let first = *self
            .running()
            .first()
            .ok_or_else(|| io::Error::other("no node running"))?;
        self.conn(first)
    }

    /// `CLUSTER KEYSLOT key`, asked of a running node.
    ///
    /// # Errors
    /// No node answers.
    pub fn keyslot(&self, key: &[u8]) -> io::Result<u16> {
        match self.any_conn()?.command(&[b"CLUSTER", b"KEYSLOT", key])? {
            Frame::Integer(slot) => u16::try_from(slot).map_err(io::Error::other),
            other => Err(io::Error::other(text(&other))),
        }
    }

    /// The address of `slot`'s master according to `CLUSTER SHARDS`.
    ///
    /// # Errors
    /// No node answers, or no online master serves the slot.
    pub fn owner_by_shards(&self, slot: u16) -> io::Result<String> {
        let Frame::Array(shards) = self.any_conn()?.command(&[b"CLUSTER", b"SHARDS"])? else {
            return Err(io::Error::other("CLUSTER SHARDS is not an array"));
        };
        let field = |items: &[Frame], name: &str| -> Option<Frame> {
            items
                .chunks(2)
                .find(|kv| text(&kv[0]) == name)
                .map(|kv| kv[1].clone())
        };
        for shard in shards {
            let Frame::Array(shard) = shard else { continue };
            let Some(Frame::Array(slots)) = field(&shard, "slots") else {
                continue;
            };
            let covers = slots.chunks(2).any(|r| match r {
                [Frame::Integer(a), Frame::Integer(b)] => (*a..=*b).contains(&i64::from(slot)),
                _ => false,
            });
            if !covers {
                continue;
            }
            let Some(Frame::Array(nodes)) = field(&shard, "nodes") else {
                continue;
            };
            for node in nodes {
                let Frame::Array(node) = node else { continue };
                let role = field(&node, "role").map(|f| text(&f));
                let health = field(&node, "health").map(|f| text(&f));
                if role.as_deref() == Some("master") && health.as_deref() == Some("online") {
                    let ip = field(&node, "ip").map(|f| text(&f)).unwrap_or_default();
                    let port = field(&node, "port")
                        .or_else(|| field(&node, "tls-port"))
                        .map(|f| text(&f))
                        .unwrap_or_default();
                    return Ok(format!("{ip}:{port}"));
                }
            }
        }
        Err(io::Error::other(format!(
            "no online master serves slot {slot}"
        )))
    }

    /// The master (running, holding slots) that serves `slot`.
    ///
    /// # Errors
    /// No node answers.
    pub fn owner_index(&self, slot: u16) -> io::Result<usize> {
        let addr = self.owner_by_shards(slot)?;
        self.index_of(&addr)
            .ok_or_else(|| io::Error::other(format!("{addr} is not ours")))
    }

    /// Whether node `i` is a master.
    ///
    /// # Errors
    /// It does not answer.
    pub fn is_master(&self, i: usize) -> io::Result<bool> {
        Ok(text(&self.conn(i)?.command(&[b"INFO", b"replication"])?).contains("role:master"))
    }

    /// A running replica of master `m`.
    ///
    /// # Errors
    /// It has none.
    pub fn replica_of(&self, m: usize) -> io::Result<usize> {
        let id = &self.ids[m];
        for i in self.running() {
            let nodes = text(&self.conn(i)?.command(&[b"CLUSTER", b"NODES"])?);
            let me = nodes
                .lines()
                .find(|l| l.contains("myself"))
                .unwrap_or_default();
            if me.split(' ').nth(3) == Some(id.as_str()) {
                return Ok(i);
            }
        }
        Err(io::Error::other(format!("node {m} has no running replica")))
    }

    /// A manual `CLUSTER FAILOVER` on `replica`: it becomes the master of
    /// its shard, and the cluster agrees.
    ///
    /// # Errors
    /// The failover did not complete.
    pub fn failover(&self, replica: usize) -> io::Result<()> {
        ok(
            self.conn(replica)?.command(&[b"CLUSTER", b"FAILOVER"])?,
            "CLUSTER FAILOVER",
        )?;
        wait_until("the replica is master", || self.is_master(replica)).map_err(|e| {
            io::Error::other(format!(
                "{e}; the replica's log ends: {}",
                self.nodes[replica].log_tail(12)
            ))
        })?;
        self.wait_healthy()
    }

    /// `CLUSTER FAILOVER TAKEOVER` on `replica`: it takes its master's
    /// slots without the master's agreement or a last sync (writes the old
    /// master acknowledged meanwhile may be lost), and the cluster agrees.
    ///
    /// # Errors
    /// The takeover did not complete.
    pub fn takeover(&self, replica: usize) -> io::Result<()> {
        ok(
            self.conn(replica)?
                .command(&[b"CLUSTER", b"FAILOVER", b"TAKEOVER"])?,
            "CLUSTER FAILOVER TAKEOVER",
        )?;
        wait_until("the replica is master", || self.is_master(replica))?;
        self.wait_healthy()
    }

    /// Waits until node `i`, replaced while frozen or cut off, has learnt
    /// it and follows the new master; then for a healthy cluster.
    ///
    /// # Errors
    /// It never stepped down.
    pub fn wait_steps_down(&self, i: usize) -> io::Result<()> {
        wait_until("the replaced master steps down", || Ok(!self.is_master(i)?))?;
        self.wait_healthy()
    }

    /// Cuts replica `i` off from its master for `time`: it drops its
    /// replication link (`CLIENT KILL TYPE master`) and freezes at once
    /// (`DEBUG SLEEP`, from a thread of its own), so it cannot reconnect.
    /// Whatever the master acknowledges meanwhile exists on the master alone.
    ///
    /// # Errors
    /// The node does not accept the connection.
    pub fn cut_off(&self, i: usize, time: Duration) -> io::Result<std::thread::JoinHandle<()>> {
        let mut conn = self.conn(i)?;
        let secs = format!("{:.3}", time.as_secs_f64());
        Ok(std::thread::spawn(move || {
            let kill: &[&[u8]] = &[b"CLIENT", b"KILL", b"TYPE", b"master"];
            let sleep: &[&[u8]] = &[b"DEBUG", b"SLEEP", secs.as_bytes()];
            let _ = conn.pipeline([kill, sleep]);
        }))
    }

    /// A client on this cluster, connected on `rt`: the defaults of
    /// docs/behaviour.md §3, no environment, then what `configure` sets
    /// (`|b| b` for the defaults alone, [`crate::patient`] to ride out
    /// churn).
    ///
    /// # Panics
    /// It cannot connect.
    pub fn client(
        &self,
        rt: &tokio::runtime::Runtime,
        configure: impl FnOnce(zaris_client::Builder) -> zaris_client::Builder,
    ) -> zaris_client::Client {
        let builder = configure(crate::builder());
        rt.block_on(builder.connect(&self.addrs()))
            .expect("the client connects")
    }

    /// `kill -9` of node `i`.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// `kill -STOP` of node `i`: it holds its sockets open and never
    /// answers; the harness leaves it out of [`Cluster::running`] meanwhile.
    ///
    /// # Errors
    /// The signal could not be sent.
    pub fn freeze(&mut self, i: usize) -> io::Result<()> {
        self.nodes[i].freeze()
    }

    /// `kill -CONT` of a frozen node `i`.
    ///
    /// # Errors
    /// The signal could not be sent.
    pub fn thaw(&mut self, i: usize) -> io::Result<()> {
        self.nodes[i].thaw()
    }

    /// Waits until a replica has taken over from the killed master `dead`
    /// (its slots are served by a running node) and the cluster is healthy.
    ///
    /// # Errors
    /// No replica took over in time.
    pub fn wait_failover_of(&self, dead: usize, slot: u16) -> io::Result<usize> {
        let dead_addr = self.addr(dead);
        wait_until("a replica took over", || {
            Ok(self.owner_by_shards(slot)? != dead_addr)
        })?;
        self.wait_healthy()?;
        self.owner_index(slot)
    }

    /// Brings the killed node `i` back and makes it a replica of the master
    /// that now serves `slot` (one of its old slots). Redis turns a
    /// returning master into a replica by itself when one node took all its
    /// slots; when they went to several, it stays an empty master, and an
    /// operator tells it whom to follow, as here.
    ///
    /// # Errors
    /// It did not come back or sync.
    pub fn restart(&mut self, i: usize, slot: u16) -> io::Result<()> {
        let owner = self.owner_index(slot)?;
        self.nodes[i].restart()?;
        wait_until("the returning node follows the new master", || {
            if !self.is_master(i)? {
                return Ok(true);
            }
            let reply =
                self.conn(i)?
                    .command(&[b"CLUSTER", b"REPLICATE", self.ids[owner].as_bytes()])?;
            Ok(reply == crate::simple("OK"))
        })?;
        self.wait_healthy()
    }

    /// Starts the killed node `i` again as it was (a master with its slots
    /// returns as their master when no replica took them), and waits for
    /// a healthy cluster.
    ///
    /// # Errors
    /// It did not come back.
    pub fn revive(&mut self, i: usize) -> io::Result<()> {
        self.nodes[i].restart()?;
        self.wait_healthy()
    }

    /// Whether node `i` says `cluster_state:fail` (it serves nothing).
    ///
    /// # Errors
    /// It does not answer.
    pub fn says_down(&self, i: usize) -> io::Result<bool> {
        Ok(text(&self.conn(i)?.command(&[b"CLUSTER", b"INFO"])?).contains("cluster_state:fail"))
    }

    /// Starts a new, empty node and introduces it to the cluster: once
    /// every node knows it, it is a master with no slot.
    fn join(&mut self) -> io::Result<usize> {
        let i = self.spawn_node()?;
        self.meet(i)?;
        self.wait_all_known()?;
        Ok(i)
    }

    /// Starts a new, empty master and introduces it to the cluster.
    ///
    /// # Errors
    /// It did not start or join.
    pub fn add_master(&mut self) -> io::Result<usize> {
        let i = self.join()?;
        // It takes slots only once it sees the cluster as whole.
        self.wait_healthy()?;
        Ok(i)
    }

    /// Starts a new, empty node, introduces it to the cluster and makes it
    /// a replica of master `m`; waits until it is synced and the cluster
    /// healthy.
    ///
    /// # Errors
    /// It did not start, join or sync.
    pub fn add_replica(&mut self, m: usize) -> io::Result<usize> {
        let i = self.join()?;
        wait_until("the new node replicates its master", || {
            let reply =
                self.conn(i)?
                    .command(&[b"CLUSTER", b"REPLICATE", self.ids[m].as_bytes()])?;
            Ok(reply == crate::simple("OK"))
        })?;
        self.wait_healthy()?;
        // A manual failover asks the master, which must know the node as
        // its replica by then (gossip tells it a little after the sync).
        wait_until("every node knows the new node as a replica", || {
            for j in self.running() {
                let nodes = text(&self.conn(j)?.command(&[b"CLUSTER", b"NODES"])?);
                let known = nodes.lines().any(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    f.first() == Some(&self.ids[i].as_str())
                        && f.get(2).is_some_and(|flags| flags.contains("slave"))
                        && f.get(3) == Some(&self.ids[m].as_str())
                });
                if !known {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        Ok(i)
    }

    /// Takes node `i` (which serves no slot: drain it first) out of the
    /// cluster: every other node forgets it (`CLUSTER FORGET`), then it is
    /// stopped.
    ///
    /// # Errors
    /// A node refused.
    pub fn forget_node(&mut self, i: usize) -> io::Result<()> {
        for j in self.running().into_iter().filter(|&j| j != i) {
            ok(
                self.conn(j)?
                    .command(&[b"CLUSTER", b"FORGET", self.ids[i].as_bytes()])?,
                "CLUSTER FORGET",
            )?;
        }
        self.nodes[i].kill();
        self.gone[i] = true;
        self.wait_healthy()
    }

    /// Waits until every running master's writes so far are on one
    /// replica at least (`WAIT 1`), so that a `kill -9` after it loses
    /// none of them.
    ///
    /// # Errors
    /// A master does not answer, or no replica caught up within 5 s.
    pub fn wait_replicated(&self) -> io::Result<()> {
        for i in self.running() {
            if !self.is_master(i)? {
                continue;
            }
            match self.conn(i)?.command(&[b"WAIT", b"1", b"5000"])? {
                Frame::Integer(n) if n >= 1 => {}
                other => return Err(io::Error::other(format!("WAIT on {i}: {}", text(&other)))),
            }
        }
        Ok(())
    }

    /// Starts moving `slot` from `from` to `to` (IMPORTING on the target,
    /// MIGRATING on the source): from now on the source answers `ASK` for
    /// keys it no longer has, and `TRYAGAIN` for multi-key commands over
    /// keys split between the two.
    ///
    /// # Errors
    /// A node refused.
    pub fn begin_migration(&self, slot: u16, from: usize, to: usize) -> io::Result<()> {
        self.set_slot(to, slot, "IMPORTING", from)?;
        self.set_slot(from, slot, "MIGRATING", to)
    }

    /// `CLUSTER SETSLOT slot state <id of node>` sent to node `on`.
    fn set_slot(&self, on: usize, slot: u16, state: &str, node: usize) -> io::Result<()> {
        let reply = self.conn(on)?.command(&[
            b"CLUSTER",
            b"SETSLOT",
            slot.to_string().as_bytes(),
            state.as_bytes(),
            self.ids[node].as_bytes(),
        ])?;
        ok(reply, &format!("SETSLOT {state}"))
    }

    /// Moves `keys` from `from` to `to` (`MIGRATE`).
    ///
    /// # Errors
    /// A node refused.
    pub fn migrate_keys(&self, from: usize, to: usize, keys: &[Vec<u8>]) -> io::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let port = self.nodes[to].port().to_string();
        let mut args: Vec<&[u8]> = vec![
            b"MIGRATE",
            b"127.0.0.1",
            port.as_bytes(),
            b"",
            b"0",
            b"5000",
            b"REPLACE",
            b"KEYS",
        ];
        args.extend(keys.iter().map(Vec::as_slice));
        match self.conn(from)?.command(&args)? {
            Frame::SimpleString(s) if s == b"OK" || s == b"NOKEY" => Ok(()),
            other => Err(io::Error::other(format!("MIGRATE: {}", text(&other)))),
        }
    }

    /// The keys node `i` holds in `slot` (up to 10000).
    ///
    /// # Errors
    /// The node does not answer.
    pub fn keys_in_slot(&self, i: usize, slot: u16) -> io::Result<Vec<Vec<u8>>> {
        let s = slot.to_string();
        match self
            .conn(i)?
            .command(&[b"CLUSTER", b"GETKEYSINSLOT", s.as_bytes(), b"10000"])?
        {
            Frame::Array(keys) => Ok(keys
                .into_iter()
                .filter_map(|k| match k {
                    Frame::BulkString(k) => Some(k),
                    _ => None,
                })
                .collect()),
            other => Err(io::Error::other(text(&other))),
        }
    }

    /// Ends a migration: `to` owns `slot`, told to every running master.
    ///
    /// # Errors
    /// A node refused.
    pub fn finish_migration(&self, slot: u16, to: usize) -> io::Result<()> {
        let mut targets = vec![to];
        targets.extend(self.running().into_iter().filter(|&i| i != to));
        for i in targets {
            if self.is_master(i)? {
                self.set_slot(i, slot, "NODE", to)?;
            }
        }
        Ok(())
    }

    /// `CLIENT PAUSE ms WRITE` on node `i` for `pause`: its writes wait
    /// (a client's, and a manual failover's or a migration's own), its
    /// reads and `PING` do not. Returns at once.
    ///
    /// # Errors
    /// The node refused.
    pub fn pause_writes(&self, i: usize, pause: Duration) -> io::Result<()> {
        let ms = pause.as_millis().max(1).to_string();
        ok(
            self.conn(i)?
                .command(&[b"CLIENT", b"PAUSE", ms.as_bytes(), b"WRITE"])?,
            "CLIENT PAUSE",
        )
    }

    /// Moves `slot` to `to` as atomic slot migration does (Valkey 9's
    /// `CLUSTER MIGRATESLOTS`, Redis 8.4's `CLUSTER MIGRATION IMPORT`),
    /// emulated on servers that lack it, as a client sees it: no `ASK`
    /// ever. The source's writes are paused (`CLIENT PAUSE ms WRITE`, for
    /// at most `pause`, the pause time-out), the slot's keys are copied to
    /// the target (`DUMP`, a read the pause lets through, then `RESTORE`
    /// after `ASKING` on the importing target: invisible there meanwhile),
    /// the final sync takes `final_sync` in all (a large slot's), the
    /// target takes the slot with a new epoch, and once the source has
    /// heard (and dropped its copies, as a node does for a slot it lost),
    /// its writes resume: held writes to the slot are then answered
    /// `MOVED`. A final sync longer than the pause time-out gives the
    /// migration up: the copies are dropped and the source, unpaused, keeps
    /// the slot. Whether the slot moved.
    ///
    /// Valkey 8.0 asserts when it drops a lost slot's keys while paused
    /// (valkey-io/valkey#1131, fixed after 8.0.1): there the writes are
    /// paused for the final sync, and the slot moves in one go after.
    ///
    /// # Errors
    /// A node refused, or the source never heard within the pause.
    pub fn atomic_migration(
        &self,
        slot: u16,
        to: usize,
        pause: Duration,
        final_sync: Duration,
    ) -> io::Result<bool> {
        let from = self.owner_index(slot)?;
        let gives_up = final_sync > pause;
        if self.binary.contains("valkey") {
            self.pause_writes(from, final_sync.min(pause))?;
            std::thread::sleep(final_sync.min(pause));
            if gives_up {
                return Ok(false);
            }
            self.move_slot(slot, to)?;
            return Ok(true);
        }
        let mut source = self.conn(from)?;
        let mut target = self.conn(to)?;
        let paused_at = Instant::now();
        self.pause_writes(from, pause)?;
        self.set_slot(to, slot, "IMPORTING", from)?;
        let keys = self.keys_in_slot(from, slot)?;
        for key in &keys {
            let (Frame::BulkString(dump), Frame::Integer(ttl)) = (
                source.command(&[b"DUMP", key])?,
                source.command(&[b"PTTL", key])?,
            ) else {
                continue; // gone meanwhile
            };
            let ttl = ttl.max(0).to_string();
            let restore: &[&[u8]] = &[b"RESTORE", key, ttl.as_bytes(), &dump, b"REPLACE"];
            let replies = target.pipeline([&[&b"ASKING"[..]][..], restore])?;
            ok(replies.into_iter().nth(1).unwrap_or(Frame::Null), "RESTORE")?;
        }
        // The final sync of a large slot takes a while, writes paused.
        std::thread::sleep(final_sync.min(pause).saturating_sub(paused_at.elapsed()));
        if gives_up {
            // Past the pause time-out: the copies go, the source keeps it.
            for key in &keys {
                let del: &[&[u8]] = &[b"DEL", key];
                target.pipeline([&[&b"ASKING"[..]][..], del])?;
            }
            ok(
                target.command(&[
                    b"CLUSTER",
                    b"SETSLOT",
                    slot.to_string().as_bytes(),
                    b"STABLE",
                ])?,
                "SETSLOT STABLE",
            )?;
            ok(source.command(&[b"CLIENT", b"UNPAUSE"])?, "CLIENT UNPAUSE")?;
            return Ok(false);
        }
        // The importing target takes the slot with a new epoch; the
        // source hears by gossip, gives it up and drops its copies.
        self.set_slot(to, slot, "NODE", to)?;
        let bumped = target.command(&[b"CLUSTER", b"BUMPEPOCH"])?;
        if let Frame::Error(e) = bumped {
            return Err(io::Error::other(format!("BUMPEPOCH: {e}")));
        }
        let target_id = self.ids[to].clone();
        wait_until("the source hands the slot over", || {
            let nodes = self.conn(from)?.command(&[b"CLUSTER", b"NODES"])?;
            Ok(owner_in_nodes(&text(&nodes), slot).as_deref() == Some(target_id.as_str()))
        })?;
        ok(source.command(&[b"CLIENT", b"UNPAUSE"])?, "CLIENT UNPAUSE")?;
        Ok(true)
    }

    /// Moves `slot` and all its keys from its owner to `to`, in one go.
    ///
    /// # Errors
    /// A node refused.
    pub fn move_slot(&self, slot: u16, to: usize) -> io::Result<()> {
        let mut tries = 0;
        let from = loop {
            let from = self.owner_index(slot)?;
            if from == to {
                return Ok(());
            }
            match self.begin_migration(slot, from, to) {
                Ok(()) => break from,
                // Just after a failover, a view may still name the master
                // that stepped down (seen on Valkey 8 in CI): it refuses
                // MIGRATING. Ask again once the cluster agrees.
                Err(e) if tries < 3 && e.to_string().contains("only with masters") => {
                    tries += 1;
                    self.wait_healthy()?;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        };
        loop {
            let keys = self.keys_in_slot(from, slot)?;
            if keys.is_empty() {
                break;
            }
            self.migrate_keys(from, to, &keys)?;
        }
        self.finish_migration(slot, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_split_is_redis_cli_s() {
        assert_eq!(
            default_split(3),
            vec![(0, 5460), (5461, 10922), (10923, 16383)]
        );
        assert_eq!(default_split(1), vec![(0, 16383)]);
    }
}
