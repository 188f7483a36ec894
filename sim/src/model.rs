//! The model cluster's state, written from how Redis Cluster behaves (not
//! from what the client expects): each node's data and its own view of
//! the cluster (who owns which slot, at which config epoch), learnt by
//! gossip a node at a time; asynchronous replication with lag, so that a
//! takeover loses what its replica had not received; failure detection
//! after the node time-out; and the faults a process, a signal or a
//! proxy can cause. Commands are in [`commands`](crate::commands), the
//! sockets in [`serve`](crate::serve).
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

    /// A new connection to node `i`.
    pub fn open(&mut self, node: usize) -> u64 {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            id,
            Conn {
                node,
                generation: self.nodes[node].generation,
                proto: 2,
                out: VecDeque::new(),
                wake: Rc::new(Notify::new()),
                asking: false,
                readonly: false,
                multi: None,
                watched: Vec::new(),
                tracking: false,
                channels: BTreeSet::new(),
                last_write: 0,
                closed: false,
            },
        );
        id
    }

    /// Forgets connection `id` (its socket is gone).
    pub fn close(&mut self, id: u64) {
        if let Some(conn) = self.conns.remove(&id) {
            let node = &mut self.nodes[conn.node];
            for channel in &conn.channels {
                if let Some(subs) = node.subscribers.get_mut(channel) {
                    subs.remove(&id);
                }
            }
            for keys in node.tracking.values_mut() {
                keys.remove(&id);
            }
        }
    }

    /// Connection `id` unsubscribed from shard channel `channel` on its
    /// node: the `sunsubscribe` push that says so, with how many channels
    /// it has left.
    pub fn unsubscribe(&mut self, id: u64, channel: &[u8]) -> Reply {
        let left = match self.conns.get_mut(&id) {
            Some(c) => {
                c.channels.remove(channel);
                if let Some(subs) = self.nodes[c.node].subscribers.get_mut(channel) {
                    subs.remove(&id);
                    if subs.is_empty() {
                        self.nodes[c.node].subscribers.remove(channel);
                    }
                }
                c.channels.len()
            }
            None => 0,
        };
        Reply::Push(vec![
            Reply::text("sunsubscribe"),
            Reply::Bulk(channel.to_vec()),
            Reply::Int(left as i64),
        ])
    }

    /// Sends every reply of `replies` on connection `id` but the last,
    /// which is the command's own.
    pub fn send_all_but_last(&mut self, id: u64, mut replies: Vec<Reply>) -> Option<Reply> {
        let last = replies.pop();
        for reply in &replies {
            self.send(id, reply);
        }
        last
    }

    /// Queues `reply` on connection `id`.
    pub fn send(&mut self, id: u64, reply: &Reply) {
        if let Some(conn) = self.conns.get_mut(&id) {
            let mut bytes = Vec::new();
            reply.write(conn.proto, &mut bytes);
            conn.out.push_back((now(), bytes));
            conn.wake.notify_one();
        }
    }

    /// Closes every client connection of node `i`.
    pub fn cut_connections(&mut self, i: usize) -> u64 {
        self.nodes[i].generation += 1;
        let mut cut = 0;
        for conn in self.conns.values_mut() {
            if conn.node == i && !conn.closed {
                conn.closed = true;
                cut += 1;
            }
        }
        self.poke(i);
        cut
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

    /// A new truth: `change` applied to the configuration.
    pub fn reconfigure(&mut self, change: impl FnOnce(&mut Layout)) {
        let mut layout = (*self.truth).clone();
        layout.ranges = std::cell::OnceCell::new();
        change(&mut layout);
        self.truth = Rc::new(layout);
    }

    /// The truth as node `i` can know it: whole, or, for a node that
    /// joined lately, the slots of the masters it has heard from and its
    /// own.
    fn known_to(&self, i: usize) -> Rc<Layout> {
        let Some(heard) = &self.nodes[i].heard else {
            return self.truth.clone();
        };
        let mut layout = (*self.truth).clone();
        layout.ranges = std::cell::OnceCell::new();
        for owner in &mut layout.owner {
            if owner.is_some_and(|o| o != i && !heard.contains(&o)) {
                *owner = None;
            }
        }
        Rc::new(layout)
    }

    /// Node `i` learns the truth now, as far as it can know it (as it does
    /// when it gossips, or when a command of its own changed it).
    pub fn learn(&mut self, i: usize) {
        if Rc::ptr_eq(&self.nodes[i].view, &self.truth) {
            return;
        }
        let new = self.known_to(i);
        let old = std::mem::replace(&mut self.nodes[i].view, new.clone());
        let was_master = old.is_master(i);
        // Shard channels of slots it no longer serves are unsubscribed, as
        // Redis does when a slot leaves a node.
        let lost: Vec<Vec<u8>> = self.nodes[i]
            .subscribers
            .keys()
            .filter(|c| {
                let slot = usize::from(zaris_core::slot_for_key(c));
                new.owner[slot] != Some(i) && new.master_of[i] != new.owner[slot]
            })
            .cloned()
            .collect();
        for channel in lost {
            let subs = self.nodes[i]
                .subscribers
                .get(&channel)
                .cloned()
                .unwrap_or_default();
            for id in subs {
                let told = self.unsubscribe(id, &channel);
                self.send(id, &told);
                self.count(Effect::Sunsubscribed, 1);
            }
        }
        if was_master && !new.is_master(i) {
            if let Some(m) = new.master_of[i] {
                self.trace
                    .note(now(), "demoted", i, &format!("replica of node {m}"));
                self.full_sync(i, m);
            }
        }
        self.nodes[i]
            .migrating
            .retain(|&s, _| new.owner[usize::from(s)] == Some(i));
        self.nodes[i]
            .importing
            .retain(|&s, _| new.owner[usize::from(s)] != Some(i));
        self.poke(i);
    }

    /// A node that joined lately hears, this gossip round, from each
    /// master it has not heard from with even odds (a master's ping
    /// reaches it once one of them has heard of the other by gossip), and
    /// from then on knows its slots.
    fn hear_some(&mut self, i: usize) {
        if self.nodes[i].heard.is_none() {
            return;
        }
        let mut heard = self.nodes[i].heard.take().unwrap_or_default();
        let unheard: Vec<usize> = self
            .truth
            .owners()
            .filter(|o| *o != i && !heard.contains(o))
            .collect();
        let deaf = self.nodes[i].deaf_to.filter(|&(_, until)| now() < until);
        let mut left = false;
        for o in unheard {
            if deaf.is_some_and(|(d, _)| d == o) {
                left = true;
            } else if self.below(2) == 0 {
                heard.insert(o);
            } else {
                left = true;
            }
        }
        self.nodes[i].heard = left.then_some(heard);
    }

    /// Starts a spare node as a new, empty node (one never started before
    /// first, so its address is new to the cluster), a member with no
    /// slots that knows the slots of the masters in `heard` (`None`: of
    /// all); its index.
    ///
    /// # Errors
    /// No spare is left.
    pub fn join_spare(&mut self, heard: Option<BTreeSet<usize>>) -> std::io::Result<usize> {
        let i = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].life == Life::Off && !self.truth.member[i])
            .min_by_key(|&i| (self.nodes[i].joined, i))
            .ok_or_else(|| std::io::Error::other("no spare node"))?;
        let node = &mut self.nodes[i];
        node.life = Life::Up;
        node.joined += 1;
        node.heard = heard;
        node.deaf_to = None;
        node.wipe();
        self.reconfigure(|l| {
            l.member[i] = true;
            l.master_of[i] = None;
            l.failed[i] = false;
        });
        self.learn(i);
        Ok(i)
    }

    /// Replica `r` loads master `m`'s data whole: what it had is gone, its
    /// tracking clients told to drop everything.
    pub fn full_sync(&mut self, r: usize, m: usize) {
        let data = self.nodes[m].data.clone();
        let offset = self.nodes[m].offset;
        let node = &mut self.nodes[r];
        let lost = node.data.len();
        node.data = data;
        node.dirty.clear();
        node.inbox.clear();
        node.offset = 0;
        node.applied = offset;
        node.syncing_until = Some(now() + FULL_SYNC);
        let trackers: BTreeSet<u64> = node.tracking.values().flatten().copied().collect();
        node.tracking.clear();
        for id in trackers {
            self.send(
                id,
                &Reply::Push(vec![Reply::text("invalidate"), Reply::NilArray]),
            );
        }
        self.count(Effect::FullSyncs, 1);
        self.count(Effect::KeysDroppedByFullSync, lost as u64);
    }

    /// After a write on master `m` by `conn`: replicated (each replica gets
    /// it after its lag), watchers and trackers told, blocked commands
    /// woken.
    pub fn wrote(&mut self, m: usize, conn: Option<u64>, effects: Write) {
        if effects.is_empty() {
            return;
        }
        if let Some(batch) = &mut self.batch {
            batch.extend(effects);
            return;
        }
        let at = now();
        self.nodes[m].offset += 1;
        let offset = self.nodes[m].offset;
        if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
            c.last_write = offset;
        }
        let replicas: Vec<usize> = self.truth.replicas(m).collect();
        for r in replicas {
            if self.nodes[r].life == Life::Up {
                let lag = Duration::from_millis(1 + self.below(4));
                self.nodes[r]
                    .inbox
                    .push_back((at + lag, offset, effects.clone()));
            } else {
                self.count(Effect::WritesADeadReplicaMissed, 1);
            }
        }
        let node = &mut self.nodes[m];
        let mut told = BTreeSet::new();
        for (key, _) in &effects {
            *node.dirty.entry(key.clone()).or_default() += 1;
            if let Some(ids) = node.tracking.remove(key) {
                told.extend(ids.into_iter().map(|id| (id, key.clone())));
            }
        }
        node.written.notify_waiters();
        self.invalidate(told);
    }

    /// Tells each tracking connection that a key it read was written
    /// (`invalidate`, as a RESP3 push).
    fn invalidate(&mut self, told: BTreeSet<(u64, Vec<u8>)>) {
        for (id, key) in told {
            self.send(
                id,
                &Reply::Push(vec![
                    Reply::text("invalidate"),
                    Reply::Array(vec![Reply::Bulk(key)]),
                ]),
            );
        }
    }

    /// The cluster's clockwork, once a tick: replication delivered, gossip
    /// heard, failures detected and failed over.
    pub fn tick(&mut self) {
        let at = now();
        for r in 0..self.nodes.len() {
            self.replicate(r, at);
        }
        for i in 0..self.nodes.len() {
            let node = &mut self.nodes[i];
            if node.life == Life::Off {
                continue;
            }
            if node.syncing_until.is_some_and(|t| t <= at) {
                node.syncing_until = None;
            }
            if node.reachable() {
                node.unreachable_since = None;
            } else if node.unreachable_since.is_none() {
                node.unreachable_since = Some(at);
            }
            if node.reachable() && at >= node.next_gossip {
                node.next_gossip = at + GOSSIP_EVERY;
                self.hear_some(i);
                self.learn(i);
            }
        }
        self.detect_failures(at);
    }

    /// Replica `r` applies what its master sent that is due, if the link
    /// between them is up.
    fn replicate(&mut self, r: usize, at: Duration) {
        let Some(m) = self.truth.master_of[r] else {
            return;
        };
        if !self.nodes[r].reachable() || !self.nodes[m].reachable() {
            return;
        }
        while self.nodes[r]
            .inbox
            .front()
            .is_some_and(|(due, _, _)| *due <= at)
        {
            let Some((_, offset, effects)) = self.nodes[r].inbox.pop_front() else {
                break;
            };
            self.apply(r, offset, effects);
        }
    }

    /// Replica `r` applies one write.
    pub fn apply(&mut self, r: usize, offset: u64, effects: Write) {
        let node = &mut self.nodes[r];
        let mut told = BTreeSet::new();
        for (key, entry) in effects {
            if let Some(ids) = node.tracking.remove(&key) {
                told.extend(ids.into_iter().map(|id| (id, key.clone())));
            }
            match entry {
                Some(e) => node.data.insert(key, e),
                None => node.data.remove(&key),
            };
        }
        node.applied = offset;
        self.invalidate(told);
        // A master waiting on its replicas (`WAIT`) looks again.
        if let Some(m) = self.truth.master_of[r] {
            self.nodes[m].written.notify_waiters();
        }
    }

    /// A master the others have not reached for the node time-out (and the
    /// election's delay) is failed over to a replica they reach: what the
    /// replica had not received is lost, as in Redis.
    fn detect_failures(&mut self, at: Duration) {
        for m in 0..self.nodes.len() {
            let Some(since) = self.nodes[m].unreachable_since else {
                if self.truth.failed[m] && self.nodes[m].reachable() {
                    self.reconfigure(|l| l.failed[m] = false);
                }
                continue;
            };
            let waited = at.saturating_sub(since);
            if waited >= NODE_TIMEOUT && !self.truth.failed[m] && self.truth.member[m] {
                self.reconfigure(|l| l.failed[m] = true);
                self.trace.note(at, "failed", m, "flagged failing");
            }
            // The election: half a second after the failure is agreed.
            if waited < NODE_TIMEOUT + Duration::from_millis(500) || !self.truth.is_master(m) {
                continue;
            }
            if self.truth.ranges(m).is_empty() {
                continue;
            }
            let candidate = self
                .truth
                .replicas(m)
                .find(|&r| self.nodes[r].reachable() && self.nodes[r].syncing_until.is_none());
            if let Some(r) = candidate {
                self.promote(r, m, false);
                self.count(Effect::AutomaticFailovers, 1);
            }
        }
    }

    /// Replica `r` takes over master `m`'s slots with a new epoch. In a
    /// manual failover it first applies everything `m` sent; otherwise
    /// what it had not received is lost.
    pub fn promote(&mut self, r: usize, m: usize, caught_up: bool) {
        if caught_up {
            while let Some((_, offset, effects)) = self.nodes[r].inbox.pop_front() {
                self.apply(r, offset, effects);
            }
        }
        let lost = self.nodes[r].inbox.len() as u64;
        self.nodes[r].inbox.clear();
        self.count(Effect::WritesLostInATakeover, lost);
        self.current_epoch += 1;
        let epoch = self.current_epoch;
        self.reconfigure(|l| {
            for owner in &mut l.owner {
                if *owner == Some(m) {
                    *owner = Some(r);
                }
            }
            l.master_of[r] = None;
            l.master_of[m] = Some(r);
            for other in 0..l.member.len() {
                if l.master_of[other] == Some(m) && other != r {
                    l.master_of[other] = Some(r);
                }
            }
            l.epoch[r] = epoch;
        });
        let node = &mut self.nodes[r];
        node.offset = node.applied;
        node.syncing_until = None;
        self.trace.note(
            now(),
            "promoted",
            r,
            &format!("takes node {m}'s slots, epoch {epoch}"),
        );
        self.learn(r);
    }
}
