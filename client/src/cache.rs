//! The client-side cache (`Builder::client_cache`): replies to read-only
//! single-key commands, served from memory while the rules of
//! docs/behaviour.md §9 say they cannot be older than the lease allows.
//!
//! - Tracking: every connection speaks RESP3 with `CLIENT TRACKING ON`,
//!   so a node pushes `invalidate` on the connection a key was read on,
//!   in order with its replies. A reply is stored only if no invalidation
//!   of its key (or of everything) arrived since its request was sent
//!   (`zaris_core::InvalidationLog`).
//! - Leases, per slot: a slot's entries are served only while their node
//!   has shown, within the lease (counted from when it was asked), that it
//!   serves the slot: by answering a read of it (not a `MOVED`, not a
//!   `CLUSTERDOWN`), or by a check of the node (`CLUSTER INFO` and
//!   `CLUSTER NODES` on the same connection, after any invalidation it
//!   sent before) that finds it a master of a healthy cluster claiming it.
//! - Flushes, by epoch (nothing is walked): a slot's entries when the map
//!   gives it another owner or its owner stops claiming it; a node's when
//!   its connection ends, it turns out a replica or in a failed cluster,
//!   or it stops answering; everything on an `invalidate` of every key.
//! - Memory: `quick_cache` evicts (its CLOCK-Pro policy, by weight: the
//!   bytes of keys, commands and replies) to stay within `max_bytes`.

use std::hash::BuildHasher;
use std::sync::atomic::{
    AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use smallvec::SmallVec;
use zaris_core::{countdown, heartbeat_due, lease_holds, Cacheable, InvalidationLog, SLOT_COUNT};

use crate::codec::{is_command, Frame};
use crate::seam;

/// The cache's settings (`Builder::client_cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// The most the cache holds, keys, commands and replies counted.
    pub max_bytes: usize,
    /// How long a node's entries are served after the last check that
    /// found it a master (asked for then): a read that starts more than
    /// this long after a write was acknowledged sees it.
    pub lease: Duration,
}

impl Default for CacheConfig {
    /// 64 MiB, a 250 ms lease.
    fn default() -> Self {
        Self {
            max_bytes: 64 << 20,
            lease: Duration::from_millis(250),
        }
    }
}

/// Invalidations remembered for requests in flight: a reply whose request
/// was sent more than this many invalidations ago is not stored.
const LOG: usize = 4096;

/// What the cache holds per Redis key: the replies of the commands read
/// it with, all from one node, under the epochs they were stored in.
#[derive(Clone)]
struct Entry {
    node: Arc<NodeCell>,
    slot: u16,
    epochs: Epochs,
    replies: SmallVec<[Stored; 1]>,
}

/// One command's reply.
#[derive(Clone)]
struct Stored {
    /// The command as sent (its name and arguments, encoded).
    command: Bytes,
    reply: Frame,
    at: Instant,
}

/// The flush counters an entry was stored under: it is served only while
/// none has moved since.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Epochs {
    everything: u64,
    node: u64,
    slot: u32,
}

/// Weighs an entry in bytes: its key, commands and replies.
#[derive(Clone)]
struct Weigh;

impl quick_cache::Weighter<Bytes, Arc<Entry>> for Weigh {
    fn weight(&self, key: &Bytes, entry: &Arc<Entry>) -> u64 {
        let replies: usize = entry
            .replies
            .iter()
            .map(|s| s.command.len() + frame_bytes(&s.reply))
            .sum();
        (key.len() + replies).max(1) as u64
    }
}

/// About how many bytes a reply holds.
fn frame_bytes(frame: &Frame) -> usize {
    match frame {
        Frame::SimpleString(b) | Frame::BulkString(b) | Frame::BigNumber(b) => b.len() + 8,
        Frame::Error(e) => e.len() + 8,
        Frame::Verbatim { format, text } => format.len() + text.len() + 8,
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            items.iter().map(frame_bytes).sum::<usize>() + 8
        }
        Frame::Map(pairs) => {
            pairs
                .iter()
                .map(|(k, v)| frame_bytes(k) + frame_bytes(v))
                .sum::<usize>()
                + 8
        }
        Frame::Integer(_) | Frame::Double(_) | Frame::Boolean(_) | Frame::Null => 8,
    }
}

/// What the cache knows of one node that a hit reads: no lock, no
/// look-up by address (an entry holds its node's).
struct NodeCell {
    addr: Arc<str>,
    /// Its number in [`Cache::proven`] (from 1).
    id: u32,
    /// Moves when its entries are flushed.
    epoch: AtomicU64,
    /// When an entry of it was last stored or served, in whole
    /// milliseconds of [`Cache::now`] plus one (0: never): only nodes in
    /// use are checked.
    used_at: AtomicU64,
    /// The slot ranges its newest check showed it serves, and when that
    /// check was asked for: a proof for each of their slots, kept as
    /// ranges (a check proves thousands of slots; this costs it nothing
    /// a slot).
    claims: ArcSwapOption<Claims>,
}

/// A check's claims: the ranges a node serves, as of when it was asked.
struct Claims {
    ranges: Vec<(u16, u16)>,
    at: Duration,
}

impl NodeCell {
    /// When this node last showed it serves `slot` by a check, if its
    /// newest check claimed it.
    fn claim(&self, slot: u16) -> Option<Duration> {
        let claims = self.claims.load();
        claims
            .as_ref()
            .filter(|c| covers(&c.ranges, slot, slot))
            .map(|c| c.at)
    }

    /// Marks it in use at `now`.
    fn used(&self, now: Duration) {
        let ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX - 1) + 1;
        // Read first: hits on every core would otherwise fight over the
        // line for a value that changes once a millisecond.
        if self.used_at.load(Relaxed) != ms {
            self.used_at.store(ms, Relaxed);
        }
    }

    fn used_at(&self) -> Option<Duration> {
        match self.used_at.load(Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms - 1)),
        }
    }
}

/// What the cache's checks keep of one node, under the state's lock.
struct NodeState {
    cell: Arc<NodeCell>,
    /// When the last check was asked for, and whether it is still out.
    asked_at: Option<Duration>,
    checking: bool,
}

/// Whether one of `ranges` holds every slot from `first` to `last`.
fn covers(ranges: &[(u16, u16)], first: u16, last: u16) -> bool {
    ranges.iter().any(|&(a, b)| a <= first && last <= b)
}

/// What changes under the lock: the invalidations, and the nodes by
/// address. Flushes move their epochs under it too, so that a store
/// cannot pass between a flush and its check.
struct State {
    log: InvalidationLog<LOG>,
    nodes: seam::HashMap<Arc<str>, NodeState>,
}

/// A node's proof, by a reply, that it serves a slot: the node (by id, 0
/// none) in the high half, when the proof was asked for (whole
/// milliseconds of [`Cache::now`]) in the low half: a newer proof by the
/// same node is the larger. (A check's proofs are its node's claims.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Proof(u64);

impl Proof {
    /// Node `node`'s proof asked for at `at`: rounded down, so that the
    /// lease it grants ends no later than it should.
    fn new(node: u32, at: Duration) -> Self {
        let ms = u32::try_from(at.as_millis()).unwrap_or(u32::MAX);
        Self(u64::from(node) << 32 | u64::from(ms))
    }

    fn node(self) -> u32 {
        (self.0 >> 32) as u32
    }

    fn asked_at(self) -> Duration {
        Duration::from_millis(self.0 & u64::from(u32::MAX))
    }
}

/// The counters `Stats` reports.
#[derive(Default)]
pub(crate) struct CacheCounters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub invalidations: AtomicU64,
    pub flushes: AtomicU64,
}

/// The cache every clone of a client shares.
pub(crate) struct Cache {
    pub(crate) config: CacheConfig,
    /// Shared, not copied, on a hit: `quick_cache` clones what it hands
    /// out, and an entry holds every reply of its key.
    entries: quick_cache::sync::Cache<Bytes, Arc<Entry>, Weigh>,
    state: Mutex<State>,
    /// Flushes of everything.
    everything: AtomicU64,
    /// Per slot: flushes of its entries.
    slots: Box<[AtomicU32]>,
    /// Per slot: the node that last showed it serves it, and when (a
    /// [`Proof`]).
    proven: Box<[AtomicU64]>,
    hasher: seam::Hasher,
    started: Instant,
    pub(crate) counters: CacheCounters,
}

/// A check's verdict on a node (`CLUSTER INFO` and `CLUSTER NODES`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    /// A master of a healthy cluster, claiming these slots.
    Master(Vec<(u16, u16)>),
    /// A replica, or a master that finds its cluster failed.
    NotServing(&'static str),
}

impl Cache {
    pub(crate) fn new(config: CacheConfig) -> Self {
        let max = config.max_bytes as u64;
        // A guess at the entries it holds: about 256 bytes each.
        let items = (config.max_bytes / 256).clamp(16, 1 << 22);
        Self {
            config,
            entries: quick_cache::sync::Cache::with_weighter(items, max, Weigh),
            state: Mutex::new(State {
                log: InvalidationLog::new(),
                nodes: seam::map(),
            }),
            everything: AtomicU64::new(0),
            slots: (0..SLOT_COUNT).map(|_| AtomicU32::new(0)).collect(),
            proven: (0..SLOT_COUNT).map(|_| AtomicU64::new(0)).collect(),
            hasher: seam::Hasher::default(),
            started: Instant::now(),
            counters: CacheCounters::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cache's clock: leases, checks, and when a request is sent (for
    /// [`Self::proven`]).
    pub(crate) fn now(&self) -> Duration {
        self.started.elapsed()
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The bytes the cache holds (keys, commands and replies).
    pub(crate) fn bytes(&self) -> u64 {
        self.entries.weight()
    }

    /// Where a request sent now starts in the invalidation log: its reply
    /// is stored only if nothing since invalidated its key.
    pub(crate) fn ticket(&self) -> u64 {
        self.state().log.seq()
    }

    /// The reply to `command` on `key` (in `slot`, owned by `owner` in
    /// the map now), if the cache may serve it: stored by that owner,
    /// under the epochs in force, within the owner's lease. Counted as a
    /// hit or a miss.
    pub(crate) fn lookup(
        &self,
        key: &[u8],
        command: &[u8],
        slot: u16,
        owner: &str,
        rule: Cacheable,
    ) -> Option<Frame> {
        let found = self.find(key, slot, owner, rule, |stored| stored == command);
        self.count(found.is_some());
        found
    }

    /// Counts a hit (`true`) or a miss, in `Stats` and the metrics.
    fn count(&self, hit: bool) {
        let (counter, event) = if hit {
            (&self.counters.hits, "hit")
        } else {
            (&self.counters.misses, "miss")
        };
        counter.fetch_add(1, Relaxed);
        crate::metrics::cache(event);
    }

    /// [`Self::lookup`] of the command `args` (not encoded), counted only
    /// when it hits: the hit path, taken before a command is planned (a
    /// miss goes on to be planned, looked up and counted).
    pub(crate) fn hit(
        &self,
        key: &[u8],
        args: &[&[u8]],
        slot: u16,
        owner: &str,
        rule: Cacheable,
    ) -> Option<Frame> {
        let found = self.find(key, slot, owner, rule, |stored| is_command(stored, args))?;
        self.count(true);
        Some(found)
    }

    /// The reply stored for the command `same` tells on `key`, if it may
    /// be served now. Takes no lock: the epochs and proofs are atomics,
    /// and the entry holds its node's.
    fn find(
        &self,
        key: &[u8],
        slot: u16,
        owner: &str,
        rule: Cacheable,
        same: impl Fn(&[u8]) -> bool,
    ) -> Option<Frame> {
        let entry = self.entries.get(key)?;
        let node = &entry.node;
        if entry.slot != slot || *node.addr != *owner || entry.epochs != self.epochs(node, slot) {
            return None;
        }
        let now = self.now();
        let proof = self.proof(slot);
        let read = (proof.node() == node.id).then(|| proof.asked_at());
        let lease = self.config.lease;
        if !lease_holds(read, now, lease) && !lease_holds(node.claim(slot), now, lease) {
            return None;
        }
        node.used(now);
        let stored = entry.replies.iter().find(|s| same(&s.command))?;
        match rule {
            Cacheable::Countdown(unit) => {
                let Frame::Integer(ttl) = stored.reply else {
                    return None;
                };
                countdown(ttl, unit, stored.at.elapsed()).map(Frame::Integer)
            }
            _ => Some(stored.reply.clone()),
        }
    }

    /// The flush counters in force for `node`'s entries of `slot`.
    fn epochs(&self, node: &NodeCell, slot: u16) -> Epochs {
        Epochs {
            everything: self.everything.load(Acquire),
            node: node.epoch.load(Acquire),
            slot: self
                .slots
                .get(usize::from(slot))
                .map_or(0, |s| s.load(Acquire)),
        }
    }

    /// The newest proof by a reply that some node serves `slot`.
    fn proof(&self, slot: u16) -> Proof {
        Proof(
            self.proven
                .get(usize::from(slot))
                .map_or(0, |p| p.load(Acquire)),
        )
    }

    /// Stores `reply` to `command` on `key` (in `slot`), answered by
    /// `node` to a request sent at `ticket`, unless an invalidation since
    /// forbids it. Error replies are not stored.
    pub(crate) fn store(
        &self,
        key: &[u8],
        command: Bytes,
        slot: u16,
        node: &str,
        ticket: u64,
        reply: &Frame,
    ) {
        if matches!(reply, Frame::Error(_) | Frame::Push(_)) {
            return;
        }
        let hash = self.hash(key);
        let now = self.now();
        let mut state = self.state();
        if !state.log.may_store(ticket, hash) {
            return;
        }
        let node = state.node(node);
        let epochs = self.epochs(&node, slot);
        node.used(now);
        let stored = Stored {
            command,
            reply: reply.clone(),
            at: Instant::now(),
        };
        // The key's other replies stay if they are from the same node and
        // epochs; this one replaces its own command's.
        let mut entry = match self.entries.get(key) {
            Some(old)
                if Arc::ptr_eq(&old.node, &node) && old.slot == slot && old.epochs == epochs =>
            {
                Entry::clone(&old)
            }
            _ => Entry {
                node,
                slot,
                epochs,
                replies: SmallVec::new(),
            },
        };
        entry.replies.retain(|s| s.command != stored.command);
        entry.replies.push(stored);
        // Under the state's lock: an invalidation cannot pass between the
        // check above and this insert.
        self.entries
            .insert(Bytes::copy_from_slice(key), Arc::new(entry));
        drop(state);
        crate::metrics::cache_bytes(self.bytes());
    }

    /// `node` showed, answering a request for `slot` asked at `asked_at`
    /// (from [`Self::clock`]), that it serves the slot.
    pub(crate) fn proven(&self, slot: u16, node: &str, asked_at: Duration) {
        let mut state = self.state();
        let id = state.node(node).id;
        // Under the lock: proofs are written one at a time.
        let new = Proof::new(id, asked_at);
        if let Some(proof) = self.proven.get(usize::from(slot)) {
            let old = Proof(proof.load(Acquire));
            if old.node() != id || old < new {
                proof.store(new.0, Release);
            }
        }
        drop(state);
    }

    /// A push a connection to `addr` received: an `invalidate` of some
    /// keys, or (its payload null) of every key.
    pub(crate) fn pushed(&self, addr: &str, push: &[Frame]) {
        let is_invalidate = push
            .first()
            .and_then(Frame::text)
            .is_some_and(|kind| kind.eq_ignore_ascii_case(b"invalidate"));
        if !is_invalidate {
            return;
        }
        match push.get(1) {
            Some(Frame::Array(keys) | Frame::Set(keys)) => {
                let mut state = self.state();
                for key in keys.iter().filter_map(Frame::text) {
                    state.log.record(self.hash(key));
                    self.entries.remove(&key[..]);
                    self.counters.invalidations.fetch_add(1, Relaxed);
                    crate::metrics::cache("invalidation");
                }
            }
            _ => {
                tracing::debug!(addr, "the node invalidated every key: the cache is flushed");
                self.flush_everything();
            }
        }
    }

    /// Every entry goes (a map not trusted, an `invalidate` of every key).
    pub(crate) fn flush_everything(&self) {
        let mut state = self.state();
        state.log.record_everything();
        self.everything.fetch_add(1, Release);
        drop(state);
        self.flushed();
        self.entries.clear();
    }

    /// `addr`'s entries go: its connection ended, it is no master, it
    /// stopped answering.
    pub(crate) fn flush_node(&self, addr: &str, why: &str) {
        let mut state = self.state();
        state.log.record_everything();
        let Some(node) = state.nodes.get(addr) else {
            return;
        };
        node.cell.epoch.fetch_add(1, Release);
        node.cell.claims.store(None);
        drop(state);
        tracing::debug!(addr, why, "the cache flushed a node's entries");
        self.flushed();
    }

    /// The entries of `slots` go (the map gave them another owner, or
    /// their owner stopped claiming them).
    pub(crate) fn flush_slots(&self, slots: impl IntoIterator<Item = u16>) {
        let mut state = self.state();
        let mut any = false;
        for slot in slots {
            if let Some(epoch) = self.slots.get(usize::from(slot)) {
                epoch.fetch_add(1, Release);
                any = true;
            }
        }
        if any {
            state.log.record_everything();
            drop(state);
            self.flushed();
        }
    }

    fn flushed(&self) {
        self.counters.flushes.fetch_add(1, Relaxed);
        crate::metrics::cache("flush");
    }

    /// The nodes in use whose check is due now; each is marked as being
    /// checked, asked for now (see [`Self::checked`]).
    pub(crate) fn checks_due(&self) -> Vec<(Arc<str>, Duration)> {
        let now = self.now();
        let lease = self.config.lease;
        let mut state = self.state();
        let mut due = Vec::new();
        for (addr, node) in &mut state.nodes {
            // In use within the last few leases: idle nodes cost nothing.
            let in_use = node
                .cell
                .used_at()
                .is_some_and(|at| now < at.saturating_add(lease * 8));
            if in_use && heartbeat_due(node.asked_at, node.checking, now, lease) {
                node.asked_at = Some(now);
                node.checking = true;
                due.push((addr.clone(), now));
            }
        }
        due
    }

    /// A check of `addr` asked for at `asked_at` came back: `Ok` with its
    /// verdict, or `Err` (no answer in time, a dead connection). Returns
    /// the slots the map gives it that it no longer claims.
    pub(crate) fn checked(
        &self,
        addr: &str,
        asked_at: Duration,
        verdict: Result<Checked, String>,
        in_map: &[std::ops::Range<u16>],
    ) -> Vec<u16> {
        let mut state = self.state();
        let Some(node) = state.nodes.get_mut(addr) else {
            return Vec::new();
        };
        node.checking = false;
        match verdict {
            Ok(Checked::Master(claimed)) => {
                let newer = node
                    .cell
                    .claims
                    .load()
                    .as_ref()
                    .is_none_or(|c| c.at < asked_at);
                if newer {
                    node.cell.claims.store(Some(Arc::new(Claims {
                        ranges: claimed.clone(),
                        at: asked_at,
                    })));
                }
                drop(state);
                // The map's runs the node claims whole cost one comparison.
                let lost: Vec<u16> = in_map
                    .iter()
                    .filter(|run| !covers(&claimed, run.start, run.end.saturating_sub(1)))
                    .flat_map(Clone::clone)
                    .filter(|&s| !covers(&claimed, s, s))
                    .collect();
                if !lost.is_empty() {
                    tracing::debug!(
                        addr,
                        slots = lost.len(),
                        "a node no longer claims slots the map gives it"
                    );
                    self.flush_slots(lost.iter().copied());
                }
                lost
            }
            Ok(Checked::NotServing(why)) => {
                drop(state);
                self.flush_node(addr, why);
                Vec::new()
            }
            Err(why) => {
                // Not proven: its lease runs out by itself. A node that
                // does not answer gets no more.
                drop(state);
                self.flush_node(addr, &why);
                Vec::new()
            }
        }
    }
}

impl crate::conn::PushSink for Cache {
    fn pushed(&self, addr: &str, push: &[Frame]) {
        Cache::pushed(self, addr, push);
    }

    fn closed(&self, addr: &str) {
        self.flush_node(addr, "its tracking connection ended");
    }
}

impl State {
    /// The node at `addr`, known from now on.
    fn node(&mut self, addr: &str) -> Arc<NodeCell> {
        if let Some(known) = self.nodes.get(addr) {
            return known.cell.clone();
        }
        let id = u32::try_from(self.nodes.len() + 1).unwrap_or(u32::MAX);
        let addr: Arc<str> = Arc::from(addr);
        let cell = Arc::new(NodeCell {
            addr: addr.clone(),
            id,
            epoch: AtomicU64::new(0),
            used_at: AtomicU64::new(0),
            claims: ArcSwapOption::empty(),
        });
        self.nodes.insert(
            addr,
            NodeState {
                cell: cell.clone(),
                asked_at: None,
                checking: false,
            },
        );
        cell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_millis(40);

    fn cache() -> Cache {
        Cache::new(CacheConfig {
            max_bytes: 1 << 20,
            lease: LEASE,
        })
    }

    fn get(key: &str) -> Bytes {
        let args: [&[u8]; 2] = [b"GET", key.as_bytes()];
        let mut bytes = crate::codec::room_for(&args);
        crate::codec::write_command(&mut bytes, &args);
        bytes.freeze()
    }

    fn value(v: &str) -> Frame {
        Frame::BulkString(Bytes::copy_from_slice(v.as_bytes()))
    }

    /// `v` stored for `key` (slot 7) from `node`, proven just now.
    fn stored(cache: &Cache, key: &str, v: &str, node: &str) {
        let ticket = cache.ticket();
        let asked = cache.now();
        cache.store(key.as_bytes(), get(key), 7, node, ticket, &value(v));
        cache.proven(7, node, asked);
    }

    /// A `GET` of `key` in slot 7 owned by `owner`, by both paths: the
    /// hit path (not encoded) and the lookup of a planned part (encoded),
    /// which must agree.
    fn hit(cache: &Cache, key: &str, owner: &str) -> Option<Frame> {
        let args: [&[u8]; 2] = [b"GET", key.as_bytes()];
        let fast = cache.hit(key.as_bytes(), &args, 7, owner, Cacheable::Value);
        let planned = cache.lookup(key.as_bytes(), &get(key), 7, owner, Cacheable::Value);
        assert_eq!(fast, planned, "the two paths disagree on {key}");
        planned
    }

    #[test]
    fn a_proven_entry_is_served_by_its_owner_only() {
        let cache = cache();
        stored(&cache, "k", "1", "a:1");
        assert_eq!(hit(&cache, "k", "a:1"), Some(value("1")));
        assert_eq!(hit(&cache, "k", "b:1"), None, "the map gives the slot to b");
        // Each path counts its hit; a miss is counted once, by the lookup
        // of the part planned after the hit path missed.
        assert_eq!(cache.counters.hits.load(Relaxed), 2);
        assert_eq!(cache.counters.misses.load(Relaxed), 1);
        // The hit path tells commands apart without encoding them.
        let lower: [&[u8]; 2] = [b"get", b"k"];
        assert_eq!(cache.hit(b"k", &lower, 7, "a:1", Cacheable::Value), None);
        let other_slot: [&[u8]; 2] = [b"GET", b"k"];
        assert_eq!(
            cache.hit(b"k", &other_slot, 8, "a:1", Cacheable::Value),
            None
        );
        // Another command on the same key is its own entry.
        let strlen: [&[u8]; 2] = [b"STRLEN", b"k"];
        assert_eq!(
            cache.lookup(
                b"k",
                &crate::codec::encode(&[&strlen]),
                7,
                "a:1",
                Cacheable::Value
            ),
            None
        );
    }

    #[test]
    fn without_a_fresh_proof_the_lease_lapses() {
        let cache = cache();
        stored(&cache, "k", "1", "a:1");
        assert!(hit(&cache, "k", "a:1").is_some());
        std::thread::sleep(LEASE * 2);
        assert_eq!(hit(&cache, "k", "a:1"), None, "no proof within the lease");
        // A check that finds it a master claiming the slot renews it.
        let asked = cache.now();
        let lost = cache.checked(
            "a:1",
            asked,
            Ok(Checked::Master(vec![(0, 100)])),
            std::slice::from_ref(&(7..8)),
        );
        assert!(lost.is_empty());
        assert!(hit(&cache, "k", "a:1").is_some());
        // An older check answering late changes nothing: its claims (none
        // of slot 7) do not replace the newer check's.
        std::thread::sleep(LEASE / 4);
        cache.checked(
            "a:1",
            asked - Duration::from_millis(1),
            Ok(Checked::Master(vec![(200, 300)])),
            &[],
        );
        assert!(hit(&cache, "k", "a:1").is_some());
        // The lease counts from when the proving check was asked.
        std::thread::sleep(LEASE * 2);
        assert_eq!(hit(&cache, "k", "a:1"), None, "no proof within the lease");
    }

    #[test]
    fn a_reply_overtaken_by_its_invalidation_is_not_stored() {
        let cache = cache();
        let ticket = cache.ticket();
        // The invalidation came (on the connection, before the reply was
        // handed on) between the request and the store.
        cache.pushed(
            "a:1",
            &[value("invalidate"), Frame::Array(vec![value("k")])],
        );
        cache.store(b"k", get("k"), 7, "a:1", ticket, &value("old"));
        cache.proven(7, "a:1", cache.now());
        assert_eq!(hit(&cache, "k", "a:1"), None);
        // Another key's invalidation does not stop it.
        let ticket = cache.ticket();
        cache.pushed(
            "a:1",
            &[value("invalidate"), Frame::Array(vec![value("other")])],
        );
        cache.store(b"k", get("k"), 7, "a:1", ticket, &value("new"));
        assert_eq!(hit(&cache, "k", "a:1"), Some(value("new")));
        assert_eq!(cache.counters.invalidations.load(Relaxed), 2);
        // Error replies are never stored.
        cache.store(
            b"e",
            get("e"),
            7,
            "a:1",
            cache.ticket(),
            &Frame::Error("WRONGTYPE".into()),
        );
        assert_eq!(hit(&cache, "e", "a:1"), None);
    }

    #[test]
    fn invalidations_and_flushes_remove_what_they_name() {
        let cache = cache();
        let fill = |c: &Cache| {
            stored(c, "k", "1", "a:1");
            stored(c, "j", "2", "a:1");
        };
        fill(&cache);
        cache.pushed(
            "a:1",
            &[value("invalidate"), Frame::Array(vec![value("k")])],
        );
        assert_eq!(hit(&cache, "k", "a:1"), None);
        assert!(hit(&cache, "j", "a:1").is_some(), "only the key named");
        // An invalidation of every key (a null payload).
        fill(&cache);
        cache.pushed("a:1", &[value("invalidate"), Frame::Null]);
        assert!(hit(&cache, "k", "a:1").is_none() && hit(&cache, "j", "a:1").is_none());
        // The tracking connection ended.
        fill(&cache);
        crate::conn::PushSink::closed(&cache, "a:1");
        assert!(hit(&cache, "k", "a:1").is_none());
        // The slot moved in the map, or its owner stopped claiming it.
        fill(&cache);
        cache.flush_slots([7]);
        assert!(hit(&cache, "k", "a:1").is_none());
        fill(&cache);
        let lost = cache.checked(
            "a:1",
            cache.now(),
            Ok(Checked::Master(vec![(100, 200)])),
            &[7..8, 150..160, 199..202],
        );
        // Slots the map gives it that it no longer claims, and only those.
        assert_eq!(lost, [7, 201]);
        assert!(hit(&cache, "k", "a:1").is_none());
        // A node found a replica, or not answering.
        fill(&cache);
        cache.checked(
            "a:1",
            cache.now(),
            Ok(Checked::NotServing("a replica")),
            &[],
        );
        assert!(hit(&cache, "k", "a:1").is_none());
        fill(&cache);
        cache.checked("a:1", cache.now(), Err("no answer".into()), &[]);
        assert!(hit(&cache, "k", "a:1").is_none());
        assert!(cache.counters.flushes.load(Relaxed) >= 6);
    }

    #[test]
    fn a_time_to_live_counts_down_from_when_it_was_stored() {
        let cache = cache();
        let ttl: [&[u8]; 2] = [b"PTTL", b"t"];
        let command = crate::codec::encode(&[&ttl]);
        let ticket = cache.ticket();
        cache.store(
            b"t",
            command.clone(),
            7,
            "a:1",
            ticket,
            &Frame::Integer(10_000),
        );
        cache.proven(7, "a:1", cache.now());
        std::thread::sleep(Duration::from_millis(5));
        let rule = Cacheable::Countdown(zaris_core::TtlUnit::Milliseconds);
        let Some(Frame::Integer(left)) = cache.lookup(b"t", &command, 7, "a:1", rule) else {
            panic!("a hit");
        };
        assert!((9_000..10_000).contains(&left), "{left}");
        let Some(Frame::Integer(left)) = cache.hit(b"t", &ttl, 7, "a:1", rule) else {
            panic!("a hit by the hit path");
        };
        assert!((9_000..10_000).contains(&left), "{left}");
    }

    #[test]
    fn the_budget_holds() {
        let cache = Cache::new(CacheConfig {
            max_bytes: 16 * 1024,
            lease: LEASE,
        });
        let big = "v".repeat(500);
        for i in 0..200 {
            let key = format!("k{i}");
            cache.store(
                key.as_bytes(),
                get(&key),
                7,
                "a:1",
                cache.ticket(),
                &value(&big),
            );
        }
        assert!(
            cache.bytes() > 0 && cache.bytes() <= 16 * 1024,
            "{}",
            cache.bytes()
        );
    }
}
