//! The client and its typed calls. Each call is routed by its key to the
//! owner in the current snapshot and run under the retry driver
//! (`request.rs`) on the shared state (`inner.rs`); any other command goes
//! through [`Client::cmd`] (`command/`).

use std::sync::Arc;

use bytes::Bytes;
use zaris_core::{hash_tag, slot_for_key};

use crate::codec::Frame;
use crate::config::{Builder, Config};
use crate::conn::{authenticate, ConnError};
use crate::inner::Inner;
use crate::ownership::{OwnershipChanges, Revealed};
use crate::refresh::poll;
use crate::reply::{expect_ok, integer, unexpected, Replies};
use crate::route::{pack, Packed, Route};
use crate::stats::{RefreshCause, Stats};
use crate::topology::SlotRange;
use crate::{Error, Value};

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

/// `SET_IF_VERSION`'s Lua: the stored version checked, then the write.
pub const SET_IF_VERSION: &str = "local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0') \
    if v ~= tonumber(ARGV[2]) then return {0, v} end \
    redis.call('HSET', KEYS[1], 'v', v + 1, 'd', ARGV[1]) \
    return {1, v + 1}";

/// INCRBY that a retry cannot apply twice: the first run records its
/// result under a marker key in the same slot; a repeat returns it.
pub const INCR_ONCE: &str = "if redis.call('SET', KEYS[2], '', 'NX', 'PX', ARGV[2]) then \
    local v = redis.call('INCRBY', KEYS[1], ARGV[1]) \
    redis.call('SET', KEYS[2], v, 'PX', ARGV[2]) \
    return v \
    end \
    return tonumber(redis.call('GET', KEYS[2]))";

impl Builder {
    /// Connects with these settings (see [`Client::connect`]). Seeds (any
    /// strings: `&str`, `String`) are `host:port`, `redis://host:port` or
    /// `rediss://host:port` (TLS), all of one kind.
    ///
    /// # Errors
    /// [`Error::Config`] for a bad setting or seed; [`Error::NoSeedReachable`]
    /// when no seed answers with a cluster map.
    pub async fn connect<S: AsRef<str>>(self, seeds: &[S]) -> Result<Client, Error> {
        let (seeds, config) = self.settle(seeds)?;
        Client::start(seeds, config).await
    }
}

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
        let inner = Arc::new(Inner::new(seeds, config));
        inner.load_map(None).await?;
        tokio::spawn(poll(Arc::downgrade(&inner)));
        if inner.cache().is_some() {
            tokio::spawn(crate::lease::check_leases(Arc::downgrade(&inner)));
        }
        Ok(Client { inner })
    }

    /// The value at `key`, `None` when there is none.
    ///
    /// # Errors
    /// See [`Error`]: the last status or transport failure once the retries
    /// stop, or a server error surfaced at once.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>, Error> {
        let key = key.as_ref();
        if self.inner.cache().is_some() {
            // Through the cache, as every cacheable read goes.
            let args: [&[u8]; 2] = [b"GET", key];
            let answer = match self.inner.cache_hit(&args) {
                Some(hit) => hit,
                None => self.inner.cmd(&args).await?,
            };
            return match answer {
                Value::Nil => Ok(None),
                Value::Data(value) => Ok(Some(value)),
                other => Err(Error::UnexpectedReply {
                    command: "GET",
                    reply: format!("{other:?}"),
                }),
            };
        }
        match self
            .keyed(key, pack("GET", &[&[b"GET", key]]).reading())
            .await?
            .swap_remove(0)
        {
            Frame::Null => Ok(None),
            Frame::BulkString(value) => Ok(Some(value)),
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
            .keyed(key, self.pack_write("SET", &[b"SET", key, value]))
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
            .keyed(key, self.pack_write("SET", &[b"SET", key, value, b"NX"]))
            .await?;
        if frames[0] == Frame::Null {
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
        let frames = self
            .keyed(key, self.pack_write("DEL", &[b"DEL", key]))
            .await?;
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
        let plain = tag.is_empty()
            || tag.contains(&b'}')
            || crate::seam::planted(crate::seam::Plant::IncrementRepeated);
        let frames = if plain {
            self.keyed(
                key,
                self.pack_write("INCRBY", &[b"INCRBY", key, n.as_bytes()]),
            )
            .await?
        } else {
            let seq = self.inner.next_marker();
            let mut marker = Vec::with_capacity(tag.len() + 40);
            marker.push(b'{');
            marker.extend_from_slice(tag);
            marker.extend_from_slice(
                format!("}}zaris:incr:{:016x}:{seq}", self.inner.marker_prefix()).as_bytes(),
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
            self.keyed(key, self.pack_write("INCRBY", &args)).await?
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
            Frame::Array(parts) => match parts.as_slice() {
                [Frame::Null, _] => Ok(None),
                [Frame::BulkString(v), Frame::BulkString(d)] => {
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
        let mut expected_version = expected_version;
        loop {
            let expected = expected_version.to_string();
            let args: [&[u8]; 6] = [
                b"EVAL",
                SET_IF_VERSION.as_bytes(),
                b"1",
                key,
                value,
                expected.as_bytes(),
            ];
            let frames = self
                .keyed(key, self.pack_write("SET_IF_VERSION", &args))
                .await?;
            let outcome = match &frames[0] {
                Frame::Array(parts) => match parts.as_slice() {
                    [Frame::Integer(applied), Frame::Integer(version)] => {
                        Some((*applied, u64::try_from(*version).ok()))
                    }
                    _ => None,
                },
                _ => None,
            };
            return match outcome {
                Some((1, Some(version))) => {
                    self.check_durable(&frames)?;
                    Ok(version)
                }
                Some((0, Some(current)))
                    if crate::seam::planted(crate::seam::Plant::ConflictRetried) =>
                {
                    expected_version = current;
                    continue;
                }
                Some((0, current_version)) => Err(Error::Conflict { current_version }),
                _ => Err(unexpected("SET_IF_VERSION", &frames[0])),
            };
        }
    }

    /// The values at `keys`, in order. Keys are split by slot (Redis
    /// refuses multi-key commands across slots) as [`Client::cmd`] splits
    /// `MGET`: one request per slot, all sent in one round (each owner's
    /// share in one write), each retried on its own.
    ///
    /// # Errors
    /// The first part's error.
    pub async fn mget<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>, Error> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut args: Vec<&[u8]> = Vec::with_capacity(keys.len() + 1);
        args.push(b"MGET");
        args.extend(keys.iter().map(AsRef::as_ref));
        let shape = |reply: &Value| Error::UnexpectedReply {
            command: "MGET",
            reply: format!("{reply:?}"),
        };
        match self.inner.cmd(&args).await? {
            Value::Array(values) if values.len() == keys.len() => values
                .into_iter()
                .map(|value| match value {
                    Value::Data(b) => Ok(Some(b)),
                    Value::Nil => Ok(None),
                    other => Err(shape(&other)),
                })
                .collect(),
            other => Err(shape(&other)),
        }
    }

    /// Stores every pair; split by slot and sent in one round like
    /// [`Client::mget`] (with durable writes, each part waits for its
    /// replicas).
    ///
    /// # Errors
    /// The first part's error (other parts may have been written).
    pub async fn mset<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(K, V)],
    ) -> Result<(), Error> {
        if pairs.is_empty() {
            return Ok(());
        }
        let mut args: Vec<&[u8]> = Vec::with_capacity(2 * pairs.len() + 1);
        args.push(b"MSET");
        for (key, value) in pairs {
            args.extend([key.as_ref(), value.as_ref()]);
        }
        match self.inner.cmd(&args).await? {
            Value::Status(ok) if &ok[..] == b"OK" => Ok(()),
            other => Err(Error::UnexpectedReply {
                command: "MSET",
                reply: format!("{other:?}"),
            }),
        }
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
        self.inner.announcer().subscribe()
    }

    /// The current map as ranges of slots, each with its owner and the
    /// owner's replicas, in slot order (unassigned slots left out).
    #[must_use]
    pub fn slot_ranges(&self) -> Vec<SlotRange> {
        let snapshot = self.inner.map();
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
        let snapshot = self.inner.map();
        snapshot
            .owner_of_slot(slot_for_key(key.as_ref()))
            .ok()
            .map(|n| n.addr.to_string())
    }

    /// The distinct nodes owning slots in the current map, in slot order.
    #[must_use]
    pub fn owners(&self) -> Vec<String> {
        self.inner
            .map()
            .active_owners()
            .iter()
            .map(|n| n.addr.to_string())
            .collect()
    }

    /// Refreshes the map now (coalesced with any refresh in flight; a no-op
    /// within the minimum interval of the last one, 500 ms by default).
    pub async fn refresh_map(&self) {
        let wait = self.inner.config().refresh_wait;
        self.inner.refresh(RefreshCause::Requested, wait).await;
    }

    /// Requests in flight now on each node's shared connection (at most
    /// `Builder::max_in_flight_per_node` each), by address; nodes with none
    /// left out.
    #[must_use]
    pub fn in_flight_per_node(&self) -> Vec<(String, usize)> {
        let mut nodes: Vec<(String, usize)> = self
            .inner
            .registry()
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
        let mut stats = self.inner.counters().snapshot();
        for node in self.inner.registry().all() {
            stats.nodes_opened += node.times_opened();
            stats.reconnect_backoffs += node.backoffs();
            let (held, reads, writes) = node.side.counts();
            stats.connections_held += held;
            stats.reads_moved += reads;
            stats.writes_moved += writes;
        }
        if let Some(cache) = self.inner.cache() {
            let get =
                |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
            stats.cache_hits = get(&cache.counters.hits);
            stats.cache_misses = get(&cache.counters.misses);
            stats.cache_invalidations = get(&cache.counters.invalidations);
            stats.cache_flushes = get(&cache.counters.flushes);
        }
        stats
    }

    /// The bytes the client cache holds now: keys, commands and replies
    /// (at most `CacheConfig::max_bytes`); 0 without a cache.
    #[must_use]
    pub fn cache_bytes(&self) -> u64 {
        self.inner.cache().map_or(0, |c| c.bytes())
    }

    /// Sends a fresh `AUTH`, with what the credentials provider returns
    /// now (`Builder::credentials`), on every live shared connection, and
    /// drops the spare dedicated ones (the next are made with the new
    /// credentials, as every new connection is). For credentials that
    /// expire on connections already made (IAM tokens). Subscriptions keep
    /// theirs: a subscribed connection takes no `AUTH` in RESP2; they
    /// authenticate anew when they reconnect. A no-op without credentials.
    ///
    /// # Errors
    /// [`Error::Auth`] naming the first node that refused them (or the
    /// provider's error). A connection that broke meanwhile is left to
    /// reconnect.
    pub async fn reauthenticate(&self) -> Result<(), Error> {
        let options = &self.inner.config().conn;
        let Some(source) = &options.credentials else {
            return Ok(());
        };
        let credentials = source().await.map_err(|why| Error::Auth {
            node: "(none: the provider failed)".into(),
            detail: format!("the credentials provider: {why}"),
        })?;
        let timeout = self.inner.config().attempt_timeout;
        let nodes = self.inner.registry().all();
        let sent = nodes.iter().filter_map(|node| {
            node.drop_spares();
            let conn = node.live()?;
            let credentials = &credentials;
            Some(async move {
                (
                    node,
                    authenticate(&conn, &node.addr, credentials, timeout).await,
                )
            })
        });
        for (node, result) in futures_util::future::join_all(sent).await {
            match result {
                Ok(()) => {}
                Err(ConnError::Rejected(detail)) => {
                    return Err(Error::Auth {
                        node: node.addr.to_string(),
                        detail,
                    })
                }
                Err(e) => {
                    tracing::info!(node = %node.addr, error = %e, "re-authenticating: the connection broke; it reconnects")
                }
            }
        }
        Ok(())
    }

    /// A write, packed, followed by `WAIT` when writes are durable.
    fn pack_write(&self, name: &'static str, args: &[&[u8]]) -> Packed {
        self.inner.pack_write(name, args)
    }

    /// With durable writes, the `WAIT` reply must count enough replicas.
    fn check_durable(&self, frames: &[Frame]) -> Result<(), Error> {
        self.inner.check_durable(frames)
    }

    async fn keyed(&self, key: &[u8], command: Packed) -> Result<Replies, Error> {
        self.execute(Route::Slot(slot_for_key(key)), command).await
    }

    async fn execute(&self, route: Route, command: Packed) -> Result<Replies, Error> {
        self.inner.execute(route, command).await
    }
}
