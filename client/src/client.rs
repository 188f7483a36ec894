//! The client: route each request by its key to the owner in the current
//! snapshot, send it on that node's one connection, and let the core's
//! retry machine decide what each outcome means.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::{Bytes, BytesMut};
use futures_util::future::try_join_all;
use redis_protocol::resp2::types::BytesFrame;
use tracing::Instrument;
use zaris_core::{
    hash_tag, parse_error_reply, slot_for_key, Decision, ErrorReply, KvStatus, Outcome, RetryLoop,
    RouteError, StopReason, TransportFailure,
};

use crate::config::{Builder, Config};
use crate::conn::{encode, ConnError};
use crate::refresh::{Gate, Refreshed};
use crate::stats::{Counters, Stats};
use crate::topology::{
    address, host_of, parse_cluster_shards, parse_cluster_slots, Node, Registry, Snapshot,
};
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
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    snapshot: ArcSwap<Snapshot>,
    registry: Registry,
    seeds: Vec<String>,
    gate: Arc<Gate>,
    counters: Counters,
    /// Distinguishes this client's request markers (`incr_by`).
    marker_prefix: u64,
    marker_seq: AtomicU64,
}

/// Where an attempt goes.
#[derive(Clone)]
enum Route {
    Slot(u16),
    Node(Arc<Node>),
}

/// A command, encoded once and sent as is on every attempt.
struct Packed {
    name: &'static str,
    bytes: Bytes,
    /// Replies it produces (a write with `WAIT` produces two).
    replies: usize,
}

fn pack(name: &'static str, commands: &[&[&[u8]]]) -> Packed {
    Packed {
        name,
        bytes: encode(commands),
        replies: commands.len(),
    }
}

const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

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
    pub async fn connect(seeds: &[&str]) -> Result<Client, Error> {
        Builder::default().connect(seeds).await
    }

    /// Settings: retry policy, deadline, refresh wait, poll interval.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) async fn start(seeds: &[&str], config: Config) -> Result<Client, Error> {
        if seeds.is_empty() {
            return Err(Error::Config("no seed addresses given".into()));
        }
        for seed in seeds {
            let port = seed
                .rsplit_once(':')
                .and_then(|(host, port)| (!host.is_empty()).then_some(port));
            if port.and_then(|p| p.parse::<u16>().ok()).is_none() {
                return Err(Error::Config(format!("seed {seed:?} is not host:port")));
            }
        }
        let registry = Registry::default();
        for seed in seeds {
            registry.node(seed);
        }
        let state = std::collections::hash_map::RandomState::new();
        let marker_prefix = std::hash::BuildHasher::hash_one(&state, Instant::now());
        let inner = Arc::new(Inner {
            config,
            snapshot: ArcSwap::from_pointee(Snapshot::empty()),
            registry,
            seeds: seeds.iter().map(|s| (*s).to_owned()).collect(),
            gate: Arc::new(Gate::new()),
            counters: Counters::default(),
            marker_prefix,
            marker_seq: AtomicU64::new(0),
        });
        inner.load_map().await?;
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
            .keyed(key, pack("GET", &[&[b"GET", key]]))
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
            .keyed(key, pack("HMGET", &[&[b"HMGET", key, b"v", b"d"]]))
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
                .execute(Route::Slot(*slot), pack("MGET", &[&args]))
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

    /// Any other command, routed by `key` (which `args` should contain
    /// where the command expects it), e.g. `command("k", &["HSET", "k", "f", "v"])`.
    ///
    /// # Errors
    /// See [`Error`]; error replies the client does not interpret are
    /// [`Error::Server`].
    pub async fn command<A: AsRef<[u8]>>(
        &self,
        key: impl AsRef<[u8]>,
        args: &[A],
    ) -> Result<Value, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        let frames = self.keyed(key.as_ref(), pack("COMMAND", &[&args])).await?;
        Ok(Value::from(frames.into_iter().next().expect("one reply")))
    }

    /// The push path (docs/behaviour.md §5): slots `first_slot..=last_slot` are
    /// now served by `owner` (`host:port`). Only those segments are
    /// re-pointed (copy the table, patch, swap); returns how many changed.
    /// Nothing changed, nothing paid.
    pub fn apply_ownership_change(&self, first_slot: u16, last_slot: u16, owner: &str) -> u16 {
        self.inner.push(first_slot, last_slot, owner)
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
    /// within 500 ms of the last one).
    pub async fn refresh_map(&self) {
        let wait = self.inner.config.refresh_wait;
        self.inner.refresh(wait).await;
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot()
    }

    /// A write, followed by `WAIT` when writes are durable.
    fn write(&self, name: &'static str, args: &[&[u8]]) -> Packed {
        match self.inner.config.durability {
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
    fn check_durable(&self, frames: &[BytesFrame]) -> Result<(), Error> {
        let Some(durability) = self.inner.config.durability else {
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

    async fn keyed(&self, key: &[u8], command: Packed) -> Result<Vec<BytesFrame>, Error> {
        self.execute(Route::Slot(slot_for_key(key)), command).await
    }

    async fn execute(&self, route: Route, command: Packed) -> Result<Vec<BytesFrame>, Error> {
        let slot = match &route {
            Route::Slot(slot) => Some(*slot),
            Route::Node(_) => None,
        };
        let span = tracing::debug_span!("zaris.request", command = command.name, slot);
        self.inner.execute(route, command).instrument(span).await
    }
}

impl Inner {
    /// One request under the retry machine: both bounds, the delays of docs/behaviour.md §3, a
    /// typed final outcome.
    async fn execute(
        self: &Arc<Self>,
        route: Route,
        command: Packed,
    ) -> Result<Vec<BytesFrame>, Error> {
        let deadline = self.config.policy.deadline.map(|d| Instant::now() + d);
        let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut retries = RetryLoop::new(self.config.policy);
        let mut ask: Option<Arc<Node>> = None;
        let mut detail: String;
        loop {
            Counters::bump(&self.counters.attempts);
            let timeout = remaining().map_or(self.config.attempt_timeout, |left| {
                left.min(self.config.attempt_timeout)
            });
            let outcome = match self.attempt(&route, ask.take(), &command, timeout).await {
                Ok((frames, node)) => match &frames[0] {
                    BytesFrame::Error(message) => match parse_error_reply(message.as_bytes()) {
                        Ok(ErrorReply::Moved(to)) => {
                            Counters::bump(&self.counters.moved_redirects);
                            let addr = address(to.host, to.port, host_of(&node.addr));
                            // The hint re-points that slot now; the refresh follows.
                            self.push(to.slot, to.slot, &addr);
                            detail = format!("MOVED {} {addr}", to.slot);
                            Outcome::Status(KvStatus::Moved)
                        }
                        Ok(ErrorReply::Ask(to)) => {
                            let addr = address(to.host, to.port, host_of(&node.addr));
                            detail = format!("ASK {} {addr}", to.slot);
                            ask = Some(self.registry.node(&addr));
                            Outcome::Ask
                        }
                        Ok(ErrorReply::Status(status)) => {
                            detail = message.to_string();
                            Outcome::Status(status)
                        }
                        Err(_) => return Err(Error::Server(message.to_string())),
                    },
                    _ => return Ok(frames),
                },
                Err(AttemptError::Route(e)) => {
                    detail = e.to_string();
                    Outcome::Transport(match e {
                        RouteError::MapMidUpdate { .. } => TransportFailure::MapMidUpdate,
                        _ => TransportFailure::NoOwnerMapped,
                    })
                }
                Err(AttemptError::Conn(ConnError::Protocol(why), node)) => {
                    return Err(Error::Protocol { node, detail: why })
                }
                Err(AttemptError::Conn(ConnError::Rejected(why), _)) => {
                    return Err(Error::Server(why))
                }
                Err(AttemptError::Conn(ConnError::TooLarge { limit }, node)) => {
                    return Err(Error::ReplyTooLarge { node, limit })
                }
                Err(AttemptError::Conn(e, node)) => {
                    detail = format!("{node}: {e}");
                    Outcome::Transport(e.failure())
                }
            };
            let failed_at = Instant::now();
            match retries.record(outcome, remaining()) {
                // Replies were handed back above; what reaches here is an
                // error status the loop will not retry.
                Decision::Return | Decision::Surface => {
                    return Err(final_error(outcome, retries.attempts(), None, detail))
                }
                Decision::GiveUp(stop) => {
                    return Err(final_error(outcome, retries.attempts(), Some(stop), detail))
                }
                Decision::FollowAsk => Counters::bump(&self.counters.ask_redirects),
                Decision::Retry { refresh_map, delay } => {
                    match outcome {
                        Outcome::Status(status) => self.counters.retried(status),
                        _ => Counters::bump(&self.counters.retries_after_transport_failure),
                    }
                    tracing::debug!(?outcome, refresh_map, ?delay, %detail, "retrying");
                    if refresh_map {
                        let wait = remaining().map_or(self.config.refresh_wait, |left| {
                            left.min(self.config.refresh_wait)
                        });
                        self.refresh(wait).await;
                    }
                    // The delay runs from the failure; the refresh spent part of it.
                    let until = failed_at + delay;
                    let until = deadline.map_or(until, |d| until.min(d));
                    tokio::time::sleep_until(until.into()).await;
                }
            }
        }
    }

    /// One attempt: the replies, and the node that sent them.
    async fn attempt(
        &self,
        route: &Route,
        ask: Option<Arc<Node>>,
        command: &Packed,
        timeout: Duration,
    ) -> Result<(Vec<BytesFrame>, Arc<Node>), AttemptError> {
        let asking = ask.is_some();
        let node = match (ask, route) {
            (Some(node), _) => node,
            (None, Route::Slot(slot)) => self
                .snapshot
                .load()
                .owner_of_slot(*slot)
                .map_err(AttemptError::Route)?
                .clone(),
            (None, Route::Node(node)) => node.clone(),
        };
        let failed = |e| AttemptError::Conn(e, node.addr.to_string());
        let conn = node
            .connection(timeout, &self.config.conn)
            .await
            .map_err(failed)?;
        if !asking {
            let frames = conn
                .request(command.bytes.clone(), command.replies, timeout)
                .await
                .map_err(failed)?;
            return Ok((frames, node));
        }
        let mut bytes = BytesMut::with_capacity(ASKING.len() + command.bytes.len());
        bytes.extend_from_slice(ASKING);
        bytes.extend_from_slice(&command.bytes);
        let mut frames = conn
            .request(bytes.freeze(), command.replies + 1, timeout)
            .await
            .map_err(failed)?;
        frames.remove(0); // ASKING's +OK
        Ok((frames, node))
    }

    fn push(&self, first: u16, last: u16, addr: &str) -> u16 {
        loop {
            let current = self.snapshot.load_full();
            let Some((next, changed)) = current.with_change(first, last, addr, &self.registry)
            else {
                return 0;
            };
            let previous = self.snapshot.compare_and_swap(&current, Arc::new(next));
            if Arc::ptr_eq(&previous, &current) {
                Counters::bump(&self.counters.pushes_applied);
                tracing::debug!(first, last, addr, changed, "ownership change applied");
                return changed;
            }
        }
    }

    async fn refresh(self: &Arc<Self>, wait: Duration) -> Refreshed {
        let inner = self.clone();
        self.gate
            .refresh(&self.counters, wait, move || async move {
                let _ = inner.load_map().await;
            })
            .await
    }

    /// Asks the known nodes in turn (the current owners first, then every
    /// other node heard of, then the seeds) until one answers with a map,
    /// and publishes it.
    async fn load_map(&self) -> Result<(), Error> {
        let span = tracing::info_span!("zaris.refresh");
        async {
            let mut candidates = self.snapshot.load().active_owners();
            for node in self.registry.all().into_iter().chain(self.seeds.iter().map(|s| self.registry.node(s))) {
                if !candidates.iter().any(|c| Arc::ptr_eq(c, &node)) {
                    candidates.push(node);
                }
            }
            let mut tried = Vec::new();
            for node in candidates {
                match self.fetch_map(&node).await {
                    Ok(ranges) if !ranges.is_empty() => {
                        let slots: u32 = ranges.iter().map(|r| u32::from(r.last - r.first) + 1).sum();
                        self.snapshot.store(Arc::new(Snapshot::from_ranges(&ranges, &self.registry)));
                        tracing::info!(from = %node.addr, ranges = ranges.len(), slots, "map refreshed");
                        return Ok(());
                    }
                    Ok(_) => tried.push((node.addr.to_string(), "no slots assigned".to_owned())),
                    Err(e) => tried.push((node.addr.to_string(), e)),
                }
            }
            Counters::bump(&self.counters.refreshes_failed);
            tracing::warn!(?tried, "no node answered with a map");
            Err(Error::NoSeedReachable { tried })
        }
        .instrument(span)
        .await
    }

    async fn fetch_map(&self, node: &Node) -> Result<Vec<crate::topology::SlotRange>, String> {
        let timeout = self.config.attempt_timeout;
        let conn = node
            .connection(timeout, &self.config.conn)
            .await
            .map_err(|e| e.to_string())?;
        let ask = |args: &[&[u8]]| {
            let packed = pack("CLUSTER", &[args]);
            conn.request(packed.bytes, 1, timeout)
        };
        let reply = ask(&[b"CLUSTER", b"SHARDS"])
            .await
            .map_err(|e| e.to_string())?
            .swap_remove(0);
        match reply {
            // Before Redis 7: no CLUSTER SHARDS.
            BytesFrame::Error(_) => {
                let reply = ask(&[b"CLUSTER", b"SLOTS"])
                    .await
                    .map_err(|e| e.to_string())?
                    .swap_remove(0);
                match reply {
                    BytesFrame::Error(e) => Err(e.to_string()),
                    reply => parse_cluster_slots(&reply, &node.addr).map_err(|e| e.to_string()),
                }
            }
            reply => parse_cluster_shards(&reply, &node.addr).map_err(|e| e.to_string()),
        }
    }
}

/// The poll of docs/behaviour.md §5: the whole map every interval, until the
/// client is dropped.
async fn poll(inner: Weak<Inner>) {
    let Some(interval) = inner.upgrade().map(|i| i.config.poll_interval) else {
        return;
    };
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let wait = inner.config.refresh_wait;
        inner.refresh(wait).await;
    }
}

enum AttemptError {
    Route(RouteError),
    Conn(ConnError, String),
}

fn final_error(outcome: Outcome, attempts: u32, stop: Option<StopReason>, detail: String) -> Error {
    let stop = stop.unwrap_or(StopReason::AttemptsExhausted);
    match outcome {
        Outcome::Status(status) => Error::Status {
            status,
            attempts,
            stop,
        },
        Outcome::Ask => Error::Status {
            status: KvStatus::Migrating,
            attempts,
            stop,
        },
        Outcome::Transport(failure) => Error::Transport {
            failure,
            detail,
            attempts,
            stop,
        },
    }
}

fn unexpected(command: &'static str, reply: &BytesFrame) -> Error {
    match reply {
        BytesFrame::Error(e) => Error::Server(e.to_string()),
        other => Error::UnexpectedReply {
            command,
            reply: format!("{other:?}"),
        },
    }
}

fn expect_ok(command: &'static str, reply: &BytesFrame) -> Result<(), Error> {
    match reply {
        BytesFrame::SimpleString(s) if &s[..] == b"OK" => Ok(()),
        other => Err(unexpected(command, other)),
    }
}

fn integer(command: &'static str, reply: &BytesFrame) -> Result<i64, Error> {
    match reply {
        BytesFrame::Integer(n) => Ok(*n),
        other => Err(unexpected(command, other)),
    }
}

/// Key indexes grouped by slot, in first-seen order.
fn by_slot<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Vec<(u16, Vec<usize>)> {
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
    fn commands_are_encoded_as_resp_arrays() {
        let packed = pack("SET", &[&[b"SET", b"k", b"v"], &[b"WAIT", b"1", b"100"]]);
        assert_eq!(&packed.bytes[..], b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n");
        assert_eq!(packed.replies, 2);
    }

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

    #[test]
    fn final_errors_keep_the_last_outcome() {
        let e = final_error(Outcome::Status(KvStatus::Moved), 1, None, String::new());
        assert_eq!(
            e,
            Error::Status {
                status: KvStatus::Moved,
                attempts: 1,
                stop: StopReason::AttemptsExhausted
            }
        );
        assert_eq!(e.status(), Some(KvStatus::Moved));
        let e = final_error(
            Outcome::Transport(TransportFailure::ConnectionRefused),
            3,
            Some(StopReason::DeadlineReached),
            "x:1: refused".into(),
        );
        assert!(e.to_string().contains("request deadline reached"), "{e}");
    }
}
