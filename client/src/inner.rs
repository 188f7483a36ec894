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
use crate::ownership::Announcer;
use crate::pool::Registry;
use crate::reply::integer;
use crate::route::Packed;
use crate::snapshot::Snapshot;
use crate::stats::Counters;
use crate::Error;

/// What every clone of a client shares.
pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) snapshot: ArcSwap<Snapshot>,
    pub(crate) registry: Registry,
    pub(crate) seeds: Vec<String>,
    pub(crate) gate: Arc<Gate>,
    pub(crate) redirects: Redirects,
    pub(crate) counters: Counters,
    /// Distinguishes this client's request markers (`incr_by`).
    pub(crate) marker_prefix: u64,
    marker_seq: AtomicU64,
    /// Spreads keyless commands over the slots, so over the masters.
    pub(crate) next_any: AtomicUsize,
    /// Tells `Client::ownership_changes` listeners of each map change.
    pub(crate) announcer: Announcer,
    /// The client cache, when asked for.
    pub(crate) cache: Option<Arc<Cache>>,
    /// Held from a swap of `snapshot` to its announcement, so that
    /// listeners hear the changes in the order they were made: a `MOVED`
    /// hint applied by a caller on one worker and a refresh on the other
    /// could otherwise announce out of order, and a change told after the
    /// one that followed it reads as starting from the wrong owner.
    publishing: Mutex<()>,
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
        }
    }

    /// The right to swap the map and announce the change
    /// ([`Self::publishing`]).
    pub(crate) fn publishing(&self) -> MutexGuard<'_, ()> {
        self.publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The client cache drops the entries of every slot `next` gives
    /// another owner than `previous` (a slot moved away and back between
    /// two maps is caught by the owner's check, which finds it unclaimed).
    pub(crate) fn cache_follows(&self, previous: &Snapshot, next: &Snapshot) {
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
