//! The client: its shared state (the map, the nodes, the counters) and the
//! typed calls. Each call is routed by its key to the owner in the current
//! snapshot and run under the retry driver (`request.rs`); any other
//! command goes through [`Client::cmd`] (`command.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use bytes::Bytes;
use futures_util::future::try_join_all;
use redis_protocol::resp2::types::BytesFrame;
use zaris_core::{hash_tag, slot_for_key};

use crate::cluster_map::SlotRange;
use crate::config::{Builder, Config};
use crate::map::{Registry, Snapshot};
use crate::ownership::{Announcer, OwnershipChanges, Revealed};
use crate::refresh::{poll, Gate, Redirects};
use crate::request::{pack, Packed, Replies, Route};
use crate::stats::{Counters, RefreshCause, Stats};
use crate::Error;

/// A stored value and its version (`get_versioned`, `set_if_version`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The value.
    pub value: Bytes,
    /// Its version: 1 for the first write, +1 per write.
    pub version: u64,
}

/// An async Redis/Valkey Cluster client. Cheap to clone: clones share the
/// map, the connections and the counters.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

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
    marker_prefix: u64,
    marker_seq: AtomicU64,
    /// Spreads keyless commands over the slots, so over the masters.
    pub(crate) next_any: AtomicUsize,
    /// Tells [`Client::ownership_changes`] listeners of each map change.
    pub(crate) announcer: Announcer,
}

const SET_IF_VERSION: &str = "local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0') \
    if v ~= tonumber(ARGV[2]) then return {0, v} end \
    redis.call('HSET', KEYS[1], 'v', v + 1, 'd', ARGV[1]) \
    return {1, v + 1}";

/// INCRBY that a retry cannot apply twice: the first run records its
/// result under a marker key in the same slot; a repeat returns it.
const INCR_ONCE: &str = "if redis.call('SET', KEYS[2], '', 'NX', 'PX', ARGV[2]) then \
    local v = redis.call('INCRBY', KEYS[1], ARGV[1]) \
    redis.call('SET', KEYS[2], v, 'PX', ARGV[2]) \
    return v \
    end \
    return tonumber(redis.call('GET', KEYS[2]))";

impl Client {
    /// Connects to the cluster one of `seeds` (`host:port`) belongs to,
    /// with the default settings and the environment's.
    ///
    /// # Errors
    /// [`Error::NoSeedReachable`] when no seed answers with a cluster map;
    /// [`Error::Config`] for a bad environment variable or seed.
    pub async fn connect<S: AsRef<str>>(seeds: &[S]) -> Result<Client, Error> {
        Builder::default().connect(seeds).await
    }

    /// Settings: retry policy, deadline, refresh wait, poll interval.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) async fn start(seeds: Vec<String>, config: Config) -> Result<Client, Error> {
        if seeds.is_empty() {
            return Err(Error::Config("no seed addresses given".into()));
        }
        let min_interval = config.refresh_min_interval;
        let registry = Registry::new(config.max_in_flight_per_node);
        for seed in &seeds {
            registry.node(seed);
        }
        let state = std::collections::hash_map::RandomState::new();
        let marker_prefix = std::hash::BuildHasher::hash_one(&state, Instant::now());
        let inner = Arc::new(Inner {
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
        });
        inner.load_map(None).await?;
        tokio::spawn(poll(Arc::downgrade(&inner)));
        Ok(Client { inner })
    }

    /// The value at `key`, `None` when there is none.
    ///
    /// # Errors
    /// See [`Error`]: the last status or transport failure once the retries
    /// stop, or a server error surfaced at once.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>, Error> {
        let key = key.as_ref();
        match self
            .keyed(key, pack("GET", &[&[b"GET", key]]).reading())
            .await?
            .swap_remove(0)
        {
            BytesFrame::Null => Ok(None),
            BytesFrame::BulkString(value) => Ok(Some(value)),
            other => Err(unexpected("GET", &other)),
        }
    }

    /// Stores `value` at `key` (last writer wins: harmless to repeat).
    ///
    /// # Errors
    /// See [`Error`]; with durable writes, [`Error::NotReplicated`].
    pub async fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<(), Error> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let frames = self
            .keyed(key, self.write("SET", &[b"SET", key, value]))
            .await?;
        self.check_durable(&frames)?;
        expect_ok("SET", &frames[0])
    }

    /// Stores `value` only if `key` does not exist (`SET NX`).
    ///
    /// # Errors
    /// [`Error::Conflict`] when the key exists: an answer, not retried (a
    /// repeat of a write whose reply was lost also sees it: "already done").
    pub async fn set_if_absent(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<(), Error> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let frames = self
            .keyed(key, self.write("SET", &[b"SET", key, value, b"NX"]))
            .await?;
        if frames[0] == BytesFrame::Null {
            return Err(Error::Conflict {
                current_version: None,
            });
        }
        self.check_durable(&frames)?;
        expect_ok("SET", &frames[0])
    }

    /// Deletes `key`; `true` if it existed.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn del(&self, key: impl AsRef<[u8]>) -> Result<bool, Error> {
        let key = key.as_ref();
        let frames = self.keyed(key, self.write("DEL", &[b"DEL", key])).await?;
        self.check_durable(&frames)?;
        Ok(integer("DEL", &frames[0])? > 0)
    }

    /// Adds `n` to the integer at `key` and returns the result. A retry of
    /// an increment whose reply was lost is not applied twice: the first
    /// run leaves its result under a marker key in the same slot (kept a
    /// minute), and a repeat returns it (docs/behaviour.md §6). Keys whose hashed
    /// part is empty or holds a `}` cannot share a slot with a marker and
    /// fall back to plain `INCRBY`.
    ///
    /// # Errors
    /// See [`Error`]; a non-integer value is [`Error::Server`].
    pub async fn incr_by(&self, key: impl AsRef<[u8]>, n: i64) -> Result<i64, Error> {
        let key = key.as_ref();
        let n = n.to_string();
        let tag = hash_tag(key);
        let frames = if tag.is_empty() || tag.contains(&b'}') {
            self.keyed(key, self.write("INCRBY", &[b"INCRBY", key, n.as_bytes()]))
                .await?
        } else {
            let seq = self.inner.marker_seq.fetch_add(1, Ordering::Relaxed);
            let mut marker = Vec::with_capacity(tag.len() + 40);
            marker.push(b'{');
            marker.extend_from_slice(tag);
            marker.extend_from_slice(
                format!("}}zaris:incr:{:016x}:{seq}", self.inner.marker_prefix).as_bytes(),
            );
            let args: [&[u8]; 7] = [
                b"EVAL",
                INCR_ONCE.as_bytes(),
                b"2",
                key,
                &marker,
                n.as_bytes(),
                b"60000",
            ];
            self.keyed(key, self.write("INCRBY", &args)).await?
        };
        self.check_durable(&frames)?;
        integer("INCRBY", &frames[0])
    }

    /// The versioned entry at `key` (written by [`Client::set_if_version`]).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn get_versioned(&self, key: impl AsRef<[u8]>) -> Result<Option<Versioned>, Error> {
        let key = key.as_ref();
        let frames = self
            .keyed(
                key,
                pack("HMGET", &[&[b"HMGET", key, b"v", b"d"]]).reading(),
            )
            .await?;
        match &frames[0] {
            BytesFrame::Array(parts) => match parts.as_slice() {
                [BytesFrame::Null, _] => Ok(None),
                [BytesFrame::BulkString(v), BytesFrame::BulkString(d)] => {
                    let version = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
                    let version = version.ok_or_else(|| unexpected("HMGET", &frames[0]))?;
                    Ok(Some(Versioned {
                        value: d.clone(),
                        version,
                    }))
                }
                _ => Err(unexpected("HMGET", &frames[0])),
            },
            other => Err(unexpected("HMGET", other)),
        }
    }

    /// Writes `value` at `key` only if the stored version is
    /// `expected_version` (0: the key must not exist), atomically on the
    /// owning node; returns the new version.
    ///
    /// # Errors
    /// [`Error::Conflict`] with the stored version when it differs: an
    /// answer, handed back at once, never retried.
    pub async fn set_if_version(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        expected_version: u64,
    ) -> Result<u64, Error> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let expected = expected_version.to_string();
        let args: [&[u8]; 6] = [
            b"EVAL",
            SET_IF_VERSION.as_bytes(),
            b"1",
            key,
            value,
            expected.as_bytes(),
        ];
        let frames = self.keyed(key, self.write("SET_IF_VERSION", &args)).await?;
        let outcome = match &frames[0] {
            BytesFrame::Array(parts) => match parts.as_slice() {
                [BytesFrame::Integer(applied), BytesFrame::Integer(version)] => {
                    Some((*applied, u64::try_from(*version).ok()))
                }
                _ => None,
            },
            _ => None,
        };
        match outcome {
            Some((1, Some(version))) => {
                self.check_durable(&frames)?;
                Ok(version)
            }
            Some((0, current_version)) => Err(Error::Conflict { current_version }),
            _ => Err(unexpected("SET_IF_VERSION", &frames[0])),
        }
    }

    /// The values at `keys`, in order. Keys are split by slot (Redis
    /// refuses multi-key commands across slots), and the parts run in
    /// parallel, each on its owner's connection.
    ///
    /// # Errors
    /// The first part's error.
    pub async fn mget<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>, Error> {
        let groups = by_slot(keys.iter().map(AsRef::as_ref));
        let parts = groups.iter().map(|(slot, indexes)| async move {
            let mut args: Vec<&[u8]> = vec![b"MGET"];
            args.extend(indexes.iter().map(|&i| keys[i].as_ref()));
            let frames = self
                .execute(Route::Slot(*slot), pack("MGET", &[&args]).reading())
                .await?;
            match &frames[0] {
                BytesFrame::Array(values) if values.len() == indexes.len() => {
                    Ok((indexes, values.clone()))
                }
                other => Err(unexpected("MGET", other)),
            }
        });
        let mut out = vec![None; keys.len()];
        for (indexes, values) in try_join_all(parts).await? {
            for (&i, value) in indexes.iter().zip(values) {
                out[i] = match value {
                    BytesFrame::BulkString(b) => Some(b),
                    BytesFrame::Null => None,
                    other => return Err(unexpected("MGET", &other)),
                };
            }
        }
        Ok(out)
    }

    /// Stores every pair; split by slot and run in parallel like [`Client::mget`].
    ///
    /// # Errors
    /// The first part's error (other parts may have been written).
    pub async fn mset<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(K, V)],
    ) -> Result<(), Error> {
        let groups = by_slot(pairs.iter().map(|(k, _)| k.as_ref()));
        let parts = groups.iter().map(|(slot, indexes)| async move {
            let mut args: Vec<&[u8]> = vec![b"MSET"];
            for &i in indexes {
                args.extend([pairs[i].0.as_ref(), pairs[i].1.as_ref()]);
            }
            let frames = self
                .execute(Route::Slot(*slot), self.write("MSET", &args))
                .await?;
            self.check_durable(&frames)?;
            expect_ok("MSET", &frames[0])
        });
        try_join_all(parts).await.map(|_| ())
    }

    /// Every key matching `pattern` (glob, as `SCAN MATCH`), from the
    /// distinct active owners, scanned in parallel.
    ///
    /// # Errors
    /// The first node's error.
    pub async fn scan(&self, pattern: &str) -> Result<Vec<Bytes>, Error> {
        let owners = self.inner.snapshot.load().active_owners();
        let scans = owners.into_iter().map(|node| async move {
            let mut keys = Vec::new();
            let mut cursor = Bytes::from_static(b"0");
            loop {
                let command = pack(
                    "SCAN",
                    &[&[
                        b"SCAN",
                        &cursor,
                        b"MATCH",
                        pattern.as_bytes(),
                        b"COUNT",
                        b"1000",
                    ]],
                );
                let frames = self.execute(Route::Node(node.clone()), command).await?;
                let BytesFrame::Array(parts) = &frames[0] else {
                    return Err(unexpected("SCAN", &frames[0]));
                };
                let [BytesFrame::BulkString(next), BytesFrame::Array(batch)] = parts.as_slice()
                else {
                    return Err(unexpected("SCAN", &frames[0]));
                };
                keys.extend(batch.iter().filter_map(|k| match k {
                    BytesFrame::BulkString(k) => Some(k.clone()),
                    _ => None,
                }));
                if &next[..] == b"0" {
                    return Ok(keys);
                }
                cursor = next.clone();
            }
        });
        let mut keys: Vec<Bytes> = try_join_all(scans).await?.into_iter().flatten().collect();
        keys.sort_unstable();
        keys.dedup();
        Ok(keys)
    }

    /// The push path (docs/behaviour.md §5): slots `first_slot..=last_slot` are
    /// now served by `owner` (`host:port`). Only those segments are
    /// re-pointed (copy the table, patch, swap); returns how many changed.
    /// Nothing changed, nothing paid.
    pub fn apply_ownership_change(&self, first_slot: u16, last_slot: u16, owner: &str) -> u16 {
        self.inner
            .push(first_slot, last_slot, owner, Revealed::Pushed)
    }

    /// Every change of the client's map from now on, as ranges of slots
    /// with their old and new owner and what revealed the change (a poll,
    /// a refresh and why, a `MOVED`, a push): what `zaris watch` prints.
    /// The map is diffed only while someone listens.
    #[must_use]
    pub fn ownership_changes(&self) -> OwnershipChanges {
        self.inner.announcer.subscribe()
    }

    /// The current map as ranges of slots, each with its owner and the
    /// owner's replicas, in slot order (unassigned slots left out).
    #[must_use]
    pub fn slot_ranges(&self) -> Vec<SlotRange> {
        let snapshot = self.inner.snapshot.load();
        snapshot
            .table
            .runs()
            .filter_map(|(run, owner)| {
                let index = usize::from(owner);
                let master = snapshot.owners.get(index)?;
                let replicas = snapshot.replicas.get(index).map_or(&[][..], Vec::as_slice);
                Some(SlotRange {
                    first: run.start,
                    last: run.end - 1,
                    master: master.addr.to_string(),
                    replicas: replicas.iter().map(|n| n.addr.to_string()).collect(),
                })
            })
            .collect()
    }

    /// The address of the node the current map says owns `key`.
    #[must_use]
    pub fn owner_of(&self, key: impl AsRef<[u8]>) -> Option<String> {
        let snapshot = self.inner.snapshot.load();
        snapshot
            .owner_of_slot(slot_for_key(key.as_ref()))
            .ok()
            .map(|n| n.addr.to_string())
    }

    /// The distinct nodes owning slots in the current map, in slot order.
    #[must_use]
    pub fn owners(&self) -> Vec<String> {
        self.inner
            .snapshot
            .load()
            .active_owners()
            .iter()
            .map(|n| n.addr.to_string())
            .collect()
    }

    /// Refreshes the map now (coalesced with any refresh in flight; a no-op
    /// within the minimum interval of the last one, 500 ms by default).
    pub async fn refresh_map(&self) {
        let wait = self.inner.config.refresh_wait;
        self.inner.refresh(RefreshCause::Requested, wait).await;
    }

    /// Requests in flight now on each node's shared connection (at most
    /// `Builder::max_in_flight_per_node` each), by address; nodes with none
    /// left out.
    #[must_use]
    pub fn in_flight_per_node(&self) -> Vec<(String, usize)> {
        let mut nodes: Vec<(String, usize)> = self
            .inner
            .registry
            .all()
            .iter()
            .map(|n| (n.addr.to_string(), n.in_flight()))
            .filter(|(_, n)| *n > 0)
            .collect();
        nodes.sort();
        nodes
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot()
    }

    /// A write, followed by `WAIT` when writes are durable.
    pub(crate) fn write(&self, name: &'static str, args: &[&[u8]]) -> Packed {
        self.inner.write(name, args)
    }

    /// With durable writes, the `WAIT` reply must count enough replicas.
    pub(crate) fn check_durable(&self, frames: &[BytesFrame]) -> Result<(), Error> {
        self.inner.check_durable(frames)
    }

    async fn keyed(&self, key: &[u8], command: Packed) -> Result<Replies, Error> {
        self.execute(Route::Slot(slot_for_key(key)), command).await
    }

    async fn execute(&self, route: Route, command: Packed) -> Result<Replies, Error> {
        self.inner.execute(route, command).await
    }
}

impl Inner {
    /// A write, followed by `WAIT` when writes are durable.
    pub(crate) fn write(&self, name: &'static str, args: &[&[u8]]) -> Packed {
        match self.config.durability {
            None => pack(name, &[args]),
            Some(d) => {
                let replicas = d.replicas.to_string();
                let timeout = d.timeout.as_millis().max(1).to_string();
                pack(
                    name,
                    &[args, &[b"WAIT", replicas.as_bytes(), timeout.as_bytes()]],
                )
            }
        }
    }

    /// With durable writes, the `WAIT` reply must count enough replicas.
    pub(crate) fn check_durable(&self, frames: &[BytesFrame]) -> Result<(), Error> {
        let Some(durability) = self.config.durability else {
            return Ok(());
        };
        let acked = integer("WAIT", frames.get(1).unwrap_or(&BytesFrame::Null))?;
        if acked < i64::from(durability.replicas) {
            return Err(Error::NotReplicated {
                acked,
                needed: durability.replicas,
            });
        }
        Ok(())
    }
}

pub(crate) fn unexpected(command: &'static str, reply: &BytesFrame) -> Error {
    match reply {
        BytesFrame::Error(e) => Error::Server(e.to_string()),
        other => Error::UnexpectedReply {
            command,
            reply: format!("{other:?}"),
        },
    }
}

pub(crate) fn expect_ok(command: &'static str, reply: &BytesFrame) -> Result<(), Error> {
    match reply {
        BytesFrame::SimpleString(s) if &s[..] == b"OK" => Ok(()),
        other => Err(unexpected(command, other)),
    }
}

pub(crate) fn integer(command: &'static str, reply: &BytesFrame) -> Result<i64, Error> {
    match reply {
        BytesFrame::Integer(n) => Ok(*n),
        other => Err(unexpected(command, other)),
    }
}

/// Key indexes grouped by slot, in first-seen order.
pub(crate) fn by_slot<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Vec<(u16, Vec<usize>)> {
    let mut groups: Vec<(u16, Vec<usize>)> = Vec::new();
    let mut index: HashMap<u16, usize> = HashMap::new();
    for (i, key) in keys.enumerate() {
        let slot = slot_for_key(key);
        let g = *index.entry(slot).or_insert_with(|| {
            groups.push((slot, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_group_by_slot_in_order() {
        let keys: [&[u8]; 4] = [b"{a}1", b"b", b"{a}2", b"123456789"];
        let groups = by_slot(keys.into_iter());
        assert_eq!(
            groups,
            vec![
                (slot_for_key(b"a"), vec![0, 2]),
                (slot_for_key(b"b"), vec![1]),
                (12739, vec![3])
            ]
        );
    }
}
