//! The model cluster's state, written from how Redis Cluster behaves (not
//! from what the client expects): each node's data and its own view of
//! the cluster (who owns which slot, at which config epoch), learnt by
//! gossip a node at a time; asynchronous replication with lag, so that a
//! takeover loses what its replica had not received; failure detection
//! after the node time-out; and the faults a process, a signal or a
//! proxy can cause. Commands are in [`commands`](crate::commands), the
//! sockets in [`serve`](crate::serve).
//!
//! Here: the state and its counts. `conns.rs`: the connections (opened,
//! closed, written to, cut); `gossip.rs`: each node's view, learnt from
//! the others; `replication.rs`: writes replicated with lag, full syncs;
//! `failover.rs`: failures detected after the node time-out, and
//! promotions.
//!
//! Everything runs on turmoil's one thread: the state is one `RefCell`,
//! never borrowed across an `.await`, and its time is the simulation's.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::Notify;
use zaris_tests::proxy::{Faults, Flow};
use zaris_tests::soak::EventKind;

use crate::effect::Effect;
use crate::resp::Reply;
use crate::trace::Trace;

mod conns;
mod failover;
mod gossip;
mod replication;

/// The slots of a cluster.
pub const SLOTS: usize = 16384;
/// The simulated host every node runs on (as a test cluster runs on one
/// machine, a port each).
pub const HOST: &str = "cluster";
/// Node `i`'s first port: 7001, 7002, ...
const FIRST_PORT: u16 = 7001;
/// `cluster-node-timeout`, as the real harness sets it.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1000);
/// How often a node gossips (learns the cluster's configuration).
pub const GOSSIP_EVERY: Duration = Duration::from_millis(100);
/// How long a replica takes to load a full sync.
pub const FULL_SYNC: Duration = Duration::from_millis(50);

/// The simulation's time: since it began, the same on every host.
#[must_use]
pub fn now() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// A value at a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Data {
    /// A string.
    Str(Vec<u8>),
    /// A list.
    List(VecDeque<Vec<u8>>),
    /// A hash.
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
}

/// A key's value and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub data: Data,
    /// When it expires (simulated time), if it does.
    pub expires: Option<Duration>,
}

/// A write as replication carries it: each key touched and what it holds
/// after (`None`: deleted).
pub type Write = Vec<(Vec<u8>, Option<Entry>)>;

/// The cluster's configuration as one node knows it.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Each slot's master.
    pub owner: Vec<Option<usize>>,
    /// Each node's master (`None`: a master itself, or not a member).
    pub master_of: Vec<Option<usize>>,
    /// Members of the cluster.
    pub member: Vec<bool>,
    /// Nodes flagged as failing.
    pub failed: Vec<bool>,
    /// Each node's config epoch.
    pub epoch: Vec<u64>,
    /// Each node's slot ranges, worked out from `owner` once.
    ranges: std::cell::OnceCell<Vec<Vec<(u16, u16)>>>,
}

impl Layout {
    /// Whether `i` is a master here.
    #[must_use]
    pub fn is_master(&self, i: usize) -> bool {
        self.member[i] && self.master_of[i].is_none()
    }

    /// The replicas of `m`.
    pub fn replicas(&self, m: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.member.len()).filter(move |&r| self.member[r] && self.master_of[r] == Some(m))
    }

    /// The nodes that serve at least one slot, in order.
    pub fn owners(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.member.len()).filter(|&o| !self.ranges(o).is_empty())
    }

    /// The slot ranges `m` serves.
    #[must_use]
    pub fn ranges(&self, m: usize) -> &[(u16, u16)] {
        let all = self.ranges.get_or_init(|| {
            let mut all = vec![Vec::new(); self.member.len()];
            for (slot, owner) in self.owner.iter().enumerate() {
                let Some(o) = *owner else { continue };
                let ranges: &mut Vec<(u16, u16)> = &mut all[o];
                let slot = slot as u16;
                match ranges.last_mut() {
                    Some(last) if last.1 + 1 == slot => last.1 = slot,
                    _ => ranges.push((slot, slot)),
                }
            }
            all
        });
        &all[m]
    }
}

/// Whether a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// Not started, or forgotten and stopped.
    Off,
    /// Serving.
    Up,
    /// Killed (`kill -9`).
    Dead,
}

/// One node.
pub struct Node {
    /// Its 40-character id.
    pub id: String,
    /// Its host name on the simulated network.
    pub host: String,
    /// Its client port.
    pub port: u16,
    /// Whether it runs.
    pub life: Life,
    /// `SIGSTOP`ped.
    pub frozen: bool,
    /// Its writes paused until then (`CLIENT PAUSE ms WRITE`), all of them
    /// or (an atomic slot migration's final sync) those of one slot.
    pub paused: Option<(Duration, Option<u16>)>,
    /// Cut off from everyone (clients and the cluster bus).
    pub partitioned: bool,
    /// The network faults in front of it.
    pub faults: Faults,
    /// Bumped to close every client connection (a drop, a kill).
    pub generation: u64,
    /// Its data.
    pub data: BTreeMap<Vec<u8>, Entry>,
    /// Per key, bumped on each write (`WATCH`).
    pub dirty: BTreeMap<Vec<u8>, u64>,
    /// The scripts it has seen (`EVALSHA`), by SHA1.
    pub scripts: BTreeSet<String>,
    /// Its view of the cluster.
    pub view: Rc<Layout>,
    /// A node that joined lately knows the slots of these masters only
    /// (the one it met; itself always): it hears from the others by
    /// gossip rounds, and this is `None` once it has heard them all.
    pub heard: Option<BTreeSet<usize>>,
    /// How many times it joined the cluster as a new node.
    pub joined: u32,
    /// A master whose cluster bus it cannot reach until then (a firewall
    /// that lets only the old addresses through): it hears nothing from
    /// it meanwhile, so it does not know that master's slots.
    pub deaf_to: Option<(usize, Duration)>,
    /// Slots it migrates away, and where to.
    pub migrating: BTreeMap<u16, usize>,
    /// Slots it imports, and from where.
    pub importing: BTreeMap<u16, usize>,
    /// As a master: writes so far (the replication offset).
    pub offset: u64,
    /// As a replica: writes received, not applied yet (when they are due,
    /// their offset, their effects).
    pub inbox: VecDeque<(Duration, u64, Write)>,
    /// As a replica: the offset applied.
    pub applied: u64,
    /// As a replica: loading a full sync until then.
    pub syncing_until: Option<Duration>,
    /// When it next gossips.
    pub next_gossip: Duration,
    /// Since when the others cannot reach it.
    pub unreachable_since: Option<Duration>,
    /// Keys read by tracking connections, and by which.
    pub tracking: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    /// Shard channels and their subscribers.
    pub subscribers: BTreeMap<Vec<u8>, BTreeSet<u64>>,
    /// Woken on any change of life, faults or view: its connections look
    /// again.
    pub changed: Rc<Notify>,
    /// Woken on a write: blocked commands (`BLPOP`, `WAIT`) look again.
    pub written: Rc<Notify>,
}

impl Node {
    /// A process started anew with no data: what it held in memory is
    /// gone.
    pub fn wipe(&mut self) {
        self.data.clear();
        self.scripts.clear();
        self.paused = None;
        self.migrating.clear();
        self.importing.clear();
        self.tracking.clear();
        self.subscribers.clear();
        self.unreachable_since = None;
        self.syncing_until = None;
    }

    /// Whether the cluster and its clients can reach it.
    #[must_use]
    pub fn reachable(&self) -> bool {
        self.life == Life::Up && !self.frozen && !self.partitioned
    }

    /// Whether it reads commands now.
    #[must_use]
    pub fn reads(&self) -> bool {
        self.reachable() && self.faults.to_node != Flow::Stopped
    }
}

/// A client connection's state on its node.
pub struct Conn {
    /// Its node.
    pub node: usize,
    /// The node's generation it was opened in.
    pub generation: u64,
    /// 2 or 3 (`HELLO`).
    pub proto: u8,
    /// Bytes to send, each with when it was produced.
    pub out: VecDeque<(Duration, Vec<u8>)>,
    /// Woken when `out` grows.
    pub wake: Rc<Notify>,
    /// `ASKING` came just before.
    pub asking: bool,
    /// `READONLY`.
    pub readonly: bool,
    /// Inside `MULTI`: the commands queued, and whether one was refused.
    pub multi: Option<(Vec<Vec<Vec<u8>>>, bool)>,
    /// `WATCH`ed keys and their dirty counts then.
    pub watched: Vec<(Vec<u8>, u64)>,
    /// `CLIENT TRACKING ON`.
    pub tracking: bool,
    /// Shard channels it is subscribed to.
    pub channels: BTreeSet<Vec<u8>>,
    /// The offset of its last write (`WAIT`).
    pub last_write: u64,
    /// Closed by the node.
    pub closed: bool,
}

/// Counts of what faults and churn did: a fault kind that never had an
/// effect proves nothing.
pub type Counts = BTreeMap<&'static str, u64>;

/// The whole cluster.
pub struct Model {
    /// Every node, those not started yet included (spares for scale-out).
    pub nodes: Vec<Node>,
    /// The configuration as it really is.
    pub truth: Rc<Layout>,
    /// The cluster's current epoch.
    pub current_epoch: u64,
    /// Open connections.
    pub conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    rng: u64,
    /// What faults and churn did.
    pub counts: Counts,
    /// The nemesis's event running now.
    pub current: Option<EventKind>,
    /// Each event that ran, and what it did while it ran.
    pub took: Vec<(EventKind, Counts)>,
    /// Everything that happened.
    pub trace: Trace,
    /// Inside `EXEC`: the transaction's writes so far, replicated as one
    /// (as Redis wraps them in `MULTI`/`EXEC` in the replication stream).
    pub batch: Option<Write>,
}

/// The model, shared by every host of the simulation.
pub type Shared = Rc<RefCell<Model>>;

/// The node id of node `i`: 40 hex characters.
fn node_id(i: usize) -> String {
    format!("{:040x}", 0x5EED_0000_u64 + i as u64 * 0x0101_0101)
}

impl Model {
    /// `masters` masters with a replica each (`with_replicas`), the slots
    /// split evenly, and `spares` nodes not started; the model's draws
    /// from `seed`.
    #[must_use]
    pub fn new(masters: usize, with_replicas: bool, spares: usize, seed: u64) -> Self {
        let total = masters * (1 + usize::from(with_replicas)) + spares;
        let mut layout = Layout {
            owner: vec![None; SLOTS],
            master_of: vec![None; total],
            member: vec![false; total],
            failed: vec![false; total],
            epoch: vec![0; total],
            ranges: std::cell::OnceCell::new(),
        };
        // The slots split as `redis-cli --cluster create` splits them.
        let split = zaris_tests::cluster::default_split(masters);
        for (m, &(first, last)) in split.iter().enumerate() {
            layout.member[m] = true;
            layout.epoch[m] = m as u64 + 1;
            for slot in usize::from(first)..=usize::from(last) {
                layout.owner[slot] = Some(m);
            }
            if with_replicas {
                layout.member[masters + m] = true;
                layout.master_of[masters + m] = Some(m);
            }
        }
        let truth = Rc::new(layout);
        let members = masters * (1 + usize::from(with_replicas));
        let nodes = (0..total)
            .map(|i| Node {
                id: node_id(i),
                host: HOST.to_owned(),
                port: FIRST_PORT + i as u16,
                life: if i < members { Life::Up } else { Life::Off },
                frozen: false,
                paused: None,
                partitioned: false,
                faults: Faults::HEALTHY,
                generation: 0,
                data: BTreeMap::new(),
                dirty: BTreeMap::new(),
                scripts: BTreeSet::new(),
                view: truth.clone(),
                heard: None,
                joined: u32::from(i < members),
                deaf_to: None,
                migrating: BTreeMap::new(),
                importing: BTreeMap::new(),
                offset: 0,
                inbox: VecDeque::new(),
                applied: 0,
                syncing_until: None,
                next_gossip: GOSSIP_EVERY * (i as u32 + 1) / total as u32,
                unreachable_since: None,
                tracking: BTreeMap::new(),
                subscribers: BTreeMap::new(),
                changed: Rc::new(Notify::new()),
                written: Rc::new(Notify::new()),
            })
            .collect();
        Self {
            nodes,
            truth,
            current_epoch: masters as u64,
            conns: BTreeMap::new(),
            next_conn: 1,
            rng: seed | 1,
            counts: Counts::new(),
            current: None,
            took: Vec::new(),
            trace: Trace::default(),
            batch: None,
        }
    }

    /// A draw below `n` from the model's generator.
    pub fn below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    /// Counts one effect of `what`.
    pub fn count(&mut self, effect: Effect, n: u64) {
        let what = effect.name();
        if n > 0 {
            *self.counts.entry(what).or_default() += n;
            if let (Some(_), Some((_, effects))) = (self.current, self.took.last_mut()) {
                *effects.entry(what).or_default() += n;
            }
        }
    }

    /// `host:port` of node `i`.
    #[must_use]
    pub fn addr(&self, i: usize) -> String {
        format!("{}:{}", self.nodes[i].host, self.nodes[i].port)
    }

    /// Tells node `i`'s connections to look again at its state.
    pub fn poke(&self, i: usize) {
        self.nodes[i].changed.notify_waiters();
        for conn in self.conns.values() {
            if conn.node == i {
                conn.wake.notify_one();
            }
        }
    }
}
