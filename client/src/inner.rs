//! What every clone of a client shares: the settings, the map, the nodes,
//! the refresh gate, the counters. The calls on it live with what they do
//! (`request/` runs requests, `refresh.rs` keeps the map, `command/`
//! plans commands); this file holds the state and the one rule every write
//! shares, the durable `WAIT` after it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwap;
use bytes::BytesMut;

use crate::cache::Cache;
use crate::codec::{encode_into, room_for, write_command, Frame};
use crate::config::Config;
use crate::gate::{Gate, Redirects};
use crate::hearing::Hearing;
use crate::learned::Learned;
use crate::ownership::{Announcer, Revealed};
use crate::pool::Registry;
use crate::reply::integer;
use crate::route::Packed;
use crate::snapshot::Snapshot;
use crate::stats::Counters;
use crate::Error;

/// What every clone of a client shares. Its fields are its own: each job
/// reaches what it needs through the accessors below, and the map
/// changes only through [`Inner::publish`].
pub(crate) struct Inner {
    config: Config,
    snapshot: ArcSwap<Snapshot>,
    registry: Registry,
    seeds: Vec<String>,
    gate: Arc<Gate>,
    redirects: Redirects,
    counters: Counters,
    /// Distinguishes this client's request markers (`incr_by`).
    marker_prefix: u64,
    marker_seq: AtomicU64,
    /// Spreads keyless commands over the slots, so over the masters.
    next_any: AtomicUsize,
    /// Tells `Client::ownership_changes` listeners of each map change.
    announcer: Announcer,
    /// The client cache, when asked for.
    cache: Option<Arc<Cache>>,
    /// Held from a swap of `snapshot` to its announcement, so that
    /// listeners hear the changes in the order they were made: a `MOVED`
    /// hint applied by a caller on one worker and a refresh on the other
    /// could otherwise announce out of order, and a change told after the
    /// one that followed it reads as starting from the wrong owner.
    publishing: Mutex<()>,
    /// Commands the table lacks, learned from the cluster.
    learned: Learned,
    /// Which nodes the keyspace subscriptions hear.
    hearing: Hearing,
}

impl Inner {
    /// The state of a client of `seeds`, with no map yet.
    pub(crate) fn new(seeds: Vec<String>, mut config: Config) -> Self {
        let min_interval = config.refresh_min_interval;
        let cache = config.cache.map(|c| Arc::new(Cache::new(c)));
        if let Some(cache) = &cache {
            config.conn.tracking = Some(cache.clone());
        }
        let registry = Registry::new(config.max_in_flight_per_node);
        for seed in &seeds {
            registry.node(seed);
        }
        let marker_prefix = crate::seam::random();
        let learned = Learned::new(std::mem::take(&mut config.learn_instead));
        Self {
            config,
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            registry,
            seeds,
            gate: Arc::new(Gate::new(min_interval)),
            redirects: Redirects::default(),
            counters: Counters::default(),
            marker_prefix,
            marker_seq: AtomicU64::new(0),
            next_any: AtomicUsize::new(0),
            announcer: Announcer::default(),
            cache,
            publishing: Mutex::new(()),
            learned,
            hearing: Hearing::default(),
        }
    }

    /// Its settings.
    #[inline]
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The map as it stands (one atomic load, no lock).
    #[inline]
    pub(crate) fn map(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.snapshot.load()
    }

    /// The map as it stands, to keep.
    pub(crate) fn map_full(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Every node the client has heard of.
    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The addresses it was given to start from.
    pub(crate) fn seeds(&self) -> &[String] {
        &self.seeds
    }

    /// The refresh's gate: single flight and the interval.
    pub(crate) fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// The `MOVED` redirects seen lately, to tell a loop.
    pub(crate) fn redirects(&self) -> &Redirects {
        &self.redirects
    }

    /// What it counts (`Client::stats`).
    #[inline]
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// What sets this client's request markers apart from others'.
    pub(crate) fn marker_prefix(&self) -> u64 {
        self.marker_prefix
    }

    /// The next turn of the keyless commands' spread over the slots.
    #[inline]
    pub(crate) fn next_turn(&self) -> usize {
        self.next_any.fetch_add(1, Ordering::Relaxed)
    }

    /// Where `Client::ownership_changes` listeners subscribe.
    pub(crate) fn announcer(&self) -> &Announcer {
        &self.announcer
    }

    /// Which nodes the keyspace subscriptions hear.
    #[inline]
    pub(crate) fn hearing(&self) -> &Hearing {
        &self.hearing
    }

    /// Commands the table lacks, learned from the cluster.
    #[inline]
    pub(crate) fn learned(&self) -> &Learned {
        &self.learned
    }

    /// The client cache, when asked for.
    #[inline]
    pub(crate) fn cache(&self) -> Option<&Arc<Cache>> {
        self.cache.as_ref()
    }

    /// The right to swap the map and announce the change
    /// ([`Self::publish`]).
    pub(crate) fn publishing(&self) -> MutexGuard<'_, ()> {
        self.publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `next` the map, holding the right to ([`Self::publishing`]):
    /// the cache follows the slots it moves, and listeners hear of the
    /// change (`revealed`: how; `None`, the first map, tells nobody).
    /// The map it replaced.
    pub(crate) fn publish(
        &self,
        _publishing: &MutexGuard<'_, ()>,
        next: Arc<Snapshot>,
        revealed: Option<Revealed>,
    ) -> Arc<Snapshot> {
        let previous = self.snapshot.swap(next.clone());
        self.cache_follows(&previous, &next);
        if let Some(revealed) = revealed {
            self.announcer.announce(&previous, &next, revealed);
        }
        previous
    }

    /// The client cache drops the entries of every slot `next` gives
    /// another owner than `previous` (a slot moved away and back between
    /// two maps is caught by the owner's check, which finds it unclaimed).
    fn cache_follows(&self, previous: &Snapshot, next: &Snapshot) {
        let Some(cache) = &self.cache else {
            return;
        };
        let moved: Vec<u16> = (0..zaris_core::SLOT_COUNT)
            .filter(|&slot| previous.owner_addr(slot) != next.owner_addr(slot))
            .collect();
        if !moved.is_empty() {
            cache.flush_slots(moved);
        }
    }

    /// A number no other request marker of this client has.
    pub(crate) fn next_marker(&self) -> u64 {
        self.marker_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// A write, packed: `args`, then `WAIT` when writes are durable.
    pub(crate) fn pack_write(&self, name: &'static str, args: &[&[u8]]) -> Packed {
        let mut bytes = room_for(args);
        write_command(&mut bytes, args);
        let replies = 1 + usize::from(self.append_wait(&mut bytes));
        Packed::new(name, bytes.freeze(), replies)
    }

    /// Appends `WAIT` to a write in `buf` when writes are durable; whether
    /// it did (the write then has two replies).
    pub(crate) fn append_wait(&self, buf: &mut BytesMut) -> bool {
        let Some(d) = self.config.durability else {
            return false;
        };
        let replicas = d.replicas.to_string();
        let timeout = d.timeout.as_millis().max(1).to_string();
        encode_into(buf, &[b"WAIT", replicas.as_bytes(), timeout.as_bytes()]);
        true
    }

    /// With durable writes, the `WAIT` reply must count enough replicas.
    pub(crate) fn check_durable(&self, frames: &[Frame]) -> Result<(), Error> {
        let Some(durability) = self.config.durability else {
            return Ok(());
        };
        let acked = integer("WAIT", frames.get(1).unwrap_or(&Frame::Null))?;
        if acked < i64::from(durability.replicas) {
            return Err(Error::NotReplicated {
                acked,
                needed: durability.replicas,
            });
        }
        Ok(())
    }
}
