//! Any command, routed by the keys the core finds in it: to one slot's
//! owner, to any node, or to every master with the answers combined as the
//! servers' tips say. Multi-key commands split by slot where their meaning
//! allows (`MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS`, `TOUCH`); the rest
//! must have all their keys in one slot.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tracing::Instrument;
use zaris_core::{
    cacheable, command_has_keys, command_info, command_keys, command_route, slot_for_key,
    Cacheable, CommandError, CommandInfo, Reply, Target, SLOT_COUNT,
};

use crate::cache::Cache;
use crate::codec::{room_for, write_command, Frame};
use crate::inner::Inner;
use crate::reply::take_frame;
use crate::route::{Noting, Packed, Route};
use crate::seam;
use crate::value::from_frame;
use crate::{Client, Error, Value};

/// Commands that change what a connection is for: refused on the shared,
/// multiplexed connections, with what to use instead.
const REFUSED: &[(&str, &str)] = &[
    (
        "subscribe",
        "it turns the connection into a push channel (sharded pub/sub: Client::ssubscribe)",
    ),
    ("psubscribe", "it turns the connection into a push channel"),
    (
        "ssubscribe",
        "use Client::ssubscribe, which keeps each channel on its slot's owner",
    ),
    ("unsubscribe", "it belongs to a subscription's connection"),
    ("punsubscribe", "it belongs to a subscription's connection"),
    (
        "sunsubscribe",
        "drop the Subscription from Client::ssubscribe",
    ),
    ("monitor", "it turns the connection into a feed"),
    ("sync", "it turns the connection into a replication stream"),
    ("psync", "it turns the connection into a replication stream"),
    (
        "multi",
        "use Client::transaction, which sends MULTI ... EXEC as one write",
    ),
    ("exec", "use Client::transaction"),
    ("discard", "use Client::transaction"),
    (
        "watch",
        "use Client::watch, which keeps the watch on a connection of its own",
    ),
    ("unwatch", "use Client::watch"),
    ("select", "a cluster has database 0 only"),
    ("swapdb", "a cluster has database 0 only"),
    (
        "auth",
        "every connection authenticates itself (Builder::auth)",
    ),
    (
        "hello",
        "the client picks each connection's protocol (Builder::protocol; RESP3 with the client cache)",
    ),
    ("reset", "it resets the connection other requests share"),
    ("quit", "it closes the connection other requests share"),
    ("readonly", "the client decides where reads go"),
    ("readwrite", "the client decides where reads go"),
    ("asking", "the client follows ASK redirects itself"),
    (
        "scan",
        "its cursor belongs to one node: use Client::scan, which walks every master",
    ),
];

/// The commands split by slot when their keys span slots, and how each
/// part's answer combines: `stride` arguments per key (`MSET` key value).
const SPLIT: &[(&str, usize, Merge)] = &[
    ("mget", 1, Merge::InOrder),
    ("mset", 2, Merge::Ok),
    ("del", 1, Merge::Sum),
    ("unlink", 1, Merge::Sum),
    ("exists", 1, Merge::Sum),
    ("touch", 1, Merge::Sum),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    /// The parts' arrays, back in the order of the keys.
    InOrder,
    /// `OK` when every part said so.
    Ok,
    /// The sum of the parts' counts.
    Sum,
}

impl Client {
    /// Any command, e.g. `client.cmd(&["HSET", "k", "f", "v"])`: routed to
    /// the owner of its keys (found by the core in the servers' own key
    /// specifications), to any node when it has none, or to every master
    /// when the servers say so (`DBSIZE` answers the sum). Every retry and
    /// refresh rule of docs/behaviour.md holds.
    ///
    /// # Errors
    /// - [`Error::CrossSlot`]: keys in different slots, for a command that
    ///   cannot be split (nothing sent);
    /// - [`Error::Command`]: an unknown command, the wrong number of
    ///   arguments, or a `numkeys` that does not match them (nothing sent);
    /// - [`Error::Unsupported`]: a command that would change the shared
    ///   connection (`SUBSCRIBE`, `MULTI`, `SELECT`, ...; nothing sent);
    /// - [`Error::Server`]: the server's own error reply (`WRONGTYPE`);
    /// - the last status or transport failure once the retries stop.
    pub async fn cmd<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        let name = args.first().map(|n| String::from_utf8_lossy(n));
        let span = tracing::debug_span!("zaris.cmd", command = name.as_deref().unwrap_or(""));
        self.inner.cmd(&args).instrument(span).await
    }

    /// A keyless command on every master, each node's answer apart (by
    /// address, in the map's order): `INFO`, `CONFIG GET`, `MEMORY STATS`,
    /// or `DBSIZE` per shard rather than summed.
    ///
    /// # Errors
    /// Before sending: [`Error::Command`] as for [`Client::cmd`], and
    /// [`Error::Unsupported`] for a command with keys (they have one owner:
    /// use [`Client::cmd`]) or one refused on shared connections. Each
    /// node's own failure is in its entry.
    pub async fn cmd_each_master<A: AsRef<[u8]>>(
        &self,
        args: &[A],
    ) -> Result<Vec<(String, Result<Value, Error>)>, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        match self.inner.plan(&args)? {
            (Plan::Fanout(_), info) => Ok(self.inner.each_master(&args, info).await),
            (Plan::Slot(_), info) if !command_has_keys(&args) => {
                Ok(self.inner.each_master(&args, info).await)
            }
            (Plan::Slot(_) | Plan::Split { .. }, _) => Err(keys_have_one_owner(&args)),
        }
    }

    /// A keyless command on one node, named by its address as the map
    /// names it (a master or a replica: [`Client::slot_ranges`] lists
    /// them), and that node's own answer: `CLUSTER NODES`, `ROLE`, `INFO
    /// replication`. A dead connection is retried as any request is; the
    /// node was named, so no redirect is followed.
    ///
    /// # Errors
    /// Before sending: [`Error::Command`] as for [`Client::cmd`];
    /// [`Error::Unsupported`] for a command with keys (use
    /// [`Client::cmd`]) or one refused on shared connections;
    /// [`Error::Config`] for an address that is neither a seed nor in the
    /// map. Then the node's failure, as for [`Client::cmd`].
    pub async fn cmd_on_node<A: AsRef<[u8]>>(
        &self,
        node: &str,
        args: &[A],
    ) -> Result<Value, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        let (_, info) = self.inner.plan(&args)?;
        if command_has_keys(&args) {
            return Err(keys_have_one_owner(&args));
        }
        let Some(node) = self.inner.registry.known(node) else {
            return Err(Error::Config(format!(
                "{node} is not a node of this cluster (neither a seed nor in the map)"
            )));
        };
        let part = self.inner.part(Route::Node(node), &args, info);
        let mut answers = self.inner.run_parts(&[part]).await;
        answers
            .pop()
            .unwrap_or_else(|| unreachable!("one part, one answer"))
    }
}

/// Where one command goes, decided before anything is sent.
pub(crate) enum Plan {
    /// One request, to a slot's owner (or, for a keyless command, to the
    /// owner of a slot picked in turn, so they spread over the masters).
    Slot(u16),
    /// One request to every master, the answers combined.
    Fanout(Reply),
    /// Parts by slot, the answers merged.
    Split { stride: usize, merge: Merge },
}

/// What [`Inner::encode_command`] wrote: its reply count, whether it
/// writes (so its `WAIT` is checked), whether it blocks (so it goes on a
/// connection of its own), whether a replica may serve it.
#[derive(Clone, Copy)]
pub(crate) struct Encoded {
    pub(crate) replies: usize,
    pub(crate) write: bool,
    pub(crate) blocking: bool,
    pub(crate) read: bool,
}

/// One request a command takes.
pub(crate) struct Part {
    pub(crate) route: Route,
    pub(crate) packed: Packed,
    /// A write: with durable writes its `WAIT` must count enough replicas.
    pub(crate) write: bool,
    /// How the client cache may answer it, when there is one.
    pub(crate) cached: Option<Cached>,
}

/// How the client cache answers a part.
pub(crate) enum Cached {
    /// A read of one key: its reply, stored under its command.
    One { key: Bytes, rule: Cacheable },
    /// One slot's part of `MGET`: each key's value, stored as the reply to
    /// `MGET key` (not `GET key`: `MGET` answers nil for a key of another
    /// type, where `GET` answers an error).
    EachKey(Vec<Bytes>),
}

/// How the answers of a command's parts make its value.
pub(crate) enum Join {
    /// One part: its answer.
    One,
    /// Parts by slot: `members[p]` are the key numbers part `p` carried.
    Merge {
        merge: Merge,
        members: Vec<Vec<usize>>,
        keys: usize,
    },
    /// One part per master, combined as the servers' tip says.
    Combine(Reply),
    /// `RANDOMKEY` on every master: a key from any that has one.
    AnyKey,
}

/// A command as the requests it takes and how their answers join.
pub(crate) struct Planned {
    pub(crate) parts: Vec<Part>,
    pub(crate) join: Join,
}

/// The entry of [`REFUSED`] for the command `name`, if any: this runs for
/// every command, so most are let through on their length and first letter
/// ([`REFUSED_SHAPES`]); the rest are lowered once, then compared as bytes.
fn refusal(name: &[u8]) -> Option<&'static (&'static str, &'static str)> {
    let shape = REFUSED_SHAPES.get(name.len()).copied().unwrap_or(0);
    let letter = name.first().map_or(0, |&c| {
        // `| 0x20` folds an ASCII letter to lowercase (anything else
        // lands anywhere: the compare below decides).
        1u32.checked_shl(u32::from((c | 0x20).wrapping_sub(b'a')))
            .unwrap_or(0)
    });
    if shape & letter == 0 {
        return None;
    }
    let mut lower = [0u8; 12];
    let lower = lower.get_mut(..name.len())?;
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    REFUSED
        .iter()
        .find(|(refused, _)| refused.as_bytes() == lower)
}

/// For each length of a refused name, the first letters of those that
/// long (bit 0: `a`): most commands pass on this alone, without a compare.
const REFUSED_SHAPES: [u32; 16] = refused_shapes();

const fn refused_shapes() -> [u32; 16] {
    let mut shapes = [0u32; 16];
    let mut i = 0;
    while i < REFUSED.len() {
        let name = REFUSED[i].0.as_bytes();
        shapes[name.len()] |= 1 << (name[0] - b'a');
        i += 1;
    }
    shapes
}

/// Whether `name` is `command`, in any case.
fn is(name: &[u8], command: &str) -> bool {
    name.eq_ignore_ascii_case(command.as_bytes())
}

impl Inner {
    /// Decides where `args` go, or why they go nowhere; with what the
    /// tables say of the command.
    #[inline]
    pub(crate) fn plan(&self, args: &[&[u8]]) -> Result<(Plan, CommandInfo), Error> {
        let name = args.first().copied().unwrap_or_default();
        if let Some(&(command, why)) = refusal(name) {
            return Err(Error::Unsupported {
                command: command.to_owned(),
                why,
            });
        }
        match command_route(args) {
            Ok((Target::Slot(slot), info)) => Ok((Plan::Slot(slot), info)),
            Ok((Target::AnyNode, info)) => {
                let turn = self.next_any.fetch_add(1, Ordering::Relaxed);
                // Step through the slots a master's share at a time.
                let slot = ((turn * 5461) % usize::from(SLOT_COUNT)) as u16;
                Ok((Plan::Slot(slot), info))
            }
            Ok((Target::AllMasters(reply) | Target::AllNodes(reply), info)) => {
                Ok((Plan::Fanout(reply), info))
            }
            Err(CommandError::CrossSlot { first, second }) => {
                match (
                    SPLIT.iter().find(|(split, ..)| is(name, split)),
                    command_info(args),
                ) {
                    (Some(&(_, stride, merge)), Some(info)) => {
                        Ok((Plan::Split { stride, merge }, info))
                    }
                    _ => Err(Error::CrossSlot { first, second }),
                }
            }
            Err(error) => Err(Error::command(args, error)),
        }
    }

    /// `args` as the requests they take: one, one per master, or one per
    /// slot of their keys.
    pub(crate) fn planned(&self, args: &[&[u8]]) -> Result<Planned, Error> {
        let (plan, info) = self.plan(args)?;
        self.planned_as(plan, info, args)
    }

    /// [`Inner::planned`] for a plan already made.
    pub(crate) fn planned_as(
        &self,
        plan: Plan,
        info: CommandInfo,
        args: &[&[u8]],
    ) -> Result<Planned, Error> {
        Ok(match plan {
            Plan::Slot(slot) => Planned {
                parts: vec![self.part(Route::Slot(slot), args, info)],
                join: Join::One,
            },
            Plan::Fanout(reply) => Planned {
                parts: self.master_parts(args, info),
                join: if reply == Reply::Special && is(args[0], "randomkey") {
                    Join::AnyKey
                } else {
                    Join::Combine(reply)
                },
            },
            Plan::Split { stride, merge } => {
                let positions: Vec<usize> = command_keys(args)
                    .map_err(|error| Error::command(args, error))?
                    .collect();
                let mut slots: Vec<u16> = Vec::new();
                let mut members: Vec<Vec<usize>> = Vec::new();
                let mut index: seam::HashMap<u16, usize> = seam::map();
                for (i, &at) in positions.iter().enumerate() {
                    let slot = slot_for_key(args[at]);
                    let p = *index.entry(slot).or_insert_with(|| {
                        slots.push(slot);
                        members.push(Vec::new());
                        members.len() - 1
                    });
                    members[p].push(i);
                }
                let parts = slots
                    .iter()
                    .zip(&members)
                    .map(|(&slot, keys)| {
                        let mut part: Vec<&[u8]> = vec![args[0]];
                        for &i in keys {
                            let at = positions[i];
                            part.extend_from_slice(&args[at..(at + stride).min(args.len())]);
                        }
                        self.part(Route::Slot(slot), &part, info)
                    })
                    .collect();
                Planned {
                    parts,
                    join: Join::Merge {
                        merge,
                        members,
                        keys: positions.len(),
                    },
                }
            }
        })
    }

    /// `args` as one request on `route`.
    fn part(&self, route: Route, args: &[&[u8]], info: CommandInfo) -> Part {
        let mut bytes = room_for(args);
        let encoded = self.encode_command(&mut bytes, args, info);
        let cached = self
            .cache
            .as_ref()
            .filter(|_| matches!(route, Route::Slot(_)))
            .and_then(|_| cached_as(args, info));
        Part {
            route,
            packed: Packed::new(info.name(), bytes.freeze(), encoded.replies)
                .flagged(encoded.blocking, encoded.read),
            write: encoded.write,
            cached,
        }
    }

    /// Appends `args` to `buf` as one request: followed by `WAIT` for a
    /// write when writes are durable.
    pub(crate) fn encode_command(
        &self,
        buf: &mut BytesMut,
        args: &[&[u8]],
        info: CommandInfo,
    ) -> Encoded {
        let blocking = info.is_blocking();
        let write = info.is_write() && !blocking;
        let read = info.is_read_only() && !blocking;
        write_command(buf, args);
        let replies = 1 + usize::from(write && self.append_wait(buf));
        Encoded {
            replies,
            write,
            blocking,
            read,
        }
    }

    /// `args` for every master of the map; with no map yet, one request
    /// the retry machine routes once it has found one.
    fn master_parts(&self, args: &[&[u8]], info: CommandInfo) -> Vec<Part> {
        let owners = self.snapshot.load().active_owners();
        if owners.is_empty() {
            return vec![self.part(Route::Slot(0), args, info)];
        }
        owners
            .into_iter()
            .map(|node| self.part(Route::Node(node), args, info))
            .collect()
    }

    /// Runs `parts` together (each node's share in one write) and returns
    /// each part's answer, in order.
    pub(crate) async fn run_parts(self: &Arc<Self>, parts: &[Part]) -> Vec<Result<Value, Error>> {
        if let Some(cache) = &self.cache {
            if parts.iter().any(|p| p.cached.is_some()) {
                return self.run_parts_cached(parts, cache).await;
            }
        }
        let requests: Vec<(Route, Packed)> = parts
            .iter()
            .map(|p| (p.route.clone(), p.packed.clone()))
            .collect();
        let mut answers: Vec<Option<Result<Value, Error>>> = parts.iter().map(|_| None).collect();
        self.execute_all(&requests[..], |i, replies| {
            answers[i] = Some(replies.and_then(|r| self.answer(parts[i].write, r)));
        })
        .await;
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| unreachable!("every request ends with a result")))
            .collect()
    }

    /// [`Inner::run_parts`] through the client cache: the parts it can
    /// answer are answered, the others sent together; what they answer is
    /// stored, tied to the node that answered (not after an `ASKING`).
    async fn run_parts_cached(
        self: &Arc<Self>,
        parts: &[Part],
        cache: &Arc<Cache>,
    ) -> Vec<Result<Value, Error>> {
        let mut answers: Vec<Option<Result<Value, Error>>> = parts.iter().map(|_| None).collect();
        let mut misses = Vec::new();
        {
            let snapshot = self.snapshot.load();
            for (i, part) in parts.iter().enumerate() {
                let hit = match (&part.cached, &part.route) {
                    (Some(cached), Route::Slot(slot)) => snapshot
                        .owner_of_slot(*slot)
                        .ok()
                        .filter(|owner| !owner.held())
                        .and_then(|owner| {
                            lookup(cache, cached, &part.packed.bytes, *slot, &owner.addr)
                        }),
                    _ => None,
                };
                match hit {
                    Some(value) => answers[i] = Some(Ok(value)),
                    None => misses.push(i),
                }
            }
        }
        if misses.is_empty() {
            return answers.into_iter().flatten().collect();
        }
        let ticket = cache.ticket();
        let sent_at = cache.now();
        let requests: Vec<(Route, Packed)> = misses
            .iter()
            .map(|&i| (parts[i].route.clone(), parts[i].packed.clone()))
            .collect();
        let noting = Noting::new(&requests[..]);
        let mut replies: Vec<Option<Frame>> = vec![None; misses.len()];
        self.execute_all(&noting, |j, result| {
            let i = misses[j];
            if let (Ok(frames), Some(_)) = (&result, &parts[i].cached) {
                replies[j] = frames.first().cloned();
            }
            answers[i] = Some(result.and_then(|r| self.answer(parts[i].write, r)));
        })
        .await;
        for (j, reply) in replies.into_iter().enumerate() {
            let i = misses[j];
            let (Some(reply), Some(cached), Route::Slot(slot)) =
                (reply, &parts[i].cached, &parts[i].route)
            else {
                continue;
            };
            let Some((node, false)) = noting.by(j) else {
                continue;
            };
            // An answer, not a redirect or a refusal: its node served the
            // slot when it read it.
            cache.proven(*slot, &node.addr, sent_at);
            match (cached, reply) {
                (Cached::One { key, .. }, reply) => {
                    cache.store(
                        key,
                        parts[i].packed.bytes.clone(),
                        *slot,
                        &node.addr,
                        ticket,
                        &reply,
                    );
                }
                (Cached::EachKey(keys), Frame::Array(values)) if values.len() == keys.len() => {
                    for (key, value) in keys.iter().zip(&values) {
                        cache.store(key, mget_of(key), *slot, &node.addr, ticket, value);
                    }
                }
                _ => {}
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| unreachable!("every request ends with a result")))
            .collect()
    }

    /// A request's replies as its answer (for a write with durable writes,
    /// the `WAIT` must count enough replicas).
    pub(crate) fn answer(&self, write: bool, replies: &mut [Frame]) -> Result<Value, Error> {
        if write {
            self.check_durable(replies)?;
        }
        Ok(replies
            .first_mut()
            .map_or(Value::Nil, |first| from_frame(take_frame(first))))
    }

    pub(crate) async fn cmd(self: &Arc<Self>, args: &[&[u8]]) -> Result<Value, Error> {
        let planned = self.planned(args)?;
        let answers = self.run_parts(&planned.parts).await;
        join(&planned.join, answers)
    }

    /// `args` on every master of the map, each node's answer by address.
    async fn each_master(
        self: &Arc<Self>,
        args: &[&[u8]],
        info: CommandInfo,
    ) -> Vec<(String, Result<Value, Error>)> {
        let parts = self.master_parts(args, info);
        let answers = self.run_parts(&parts).await;
        parts
            .iter()
            .zip(answers)
            .map(|(part, answer)| {
                let addr = match &part.route {
                    Route::Node(node) => node.addr.to_string(),
                    Route::Slot(slot) => self
                        .snapshot
                        .load()
                        .owner_of_slot(*slot)
                        .map_or_else(|_| String::new(), |n| n.addr.to_string()),
                };
                (addr, answer)
            })
            .collect()
    }
}

/// How the cache may answer `args`, if at all.
fn cached_as(args: &[&[u8]], info: CommandInfo) -> Option<Cached> {
    if info.name() == "mget" {
        return Some(Cached::EachKey(
            args[1..]
                .iter()
                .map(|k| Bytes::copy_from_slice(k))
                .collect(),
        ));
    }
    match cacheable(args) {
        Cacheable::No => None,
        rule => {
            let at = command_keys(args).ok()?.next()?;
            Some(Cached::One {
                key: Bytes::copy_from_slice(args[at]),
                rule,
            })
        }
    }
}

/// `MGET key`, encoded: the command one key of an `MGET` is stored under.
fn mget_of(key: &[u8]) -> Bytes {
    let args: [&[u8]; 2] = [b"MGET", key];
    let mut bytes = room_for(&args);
    write_command(&mut bytes, &args);
    bytes.freeze()
}

/// The cache's answer to a part, if it has one: a read of one key, or
/// every key of an `MGET` part.
fn lookup(cache: &Cache, cached: &Cached, command: &[u8], slot: u16, owner: &str) -> Option<Value> {
    match cached {
        Cached::One { key, rule } => cache
            .lookup(key, command, slot, owner, *rule)
            .map(from_frame),
        Cached::EachKey(keys) => keys
            .iter()
            .map(|key| {
                cache
                    .lookup(key, &mget_of(key), slot, owner, Cacheable::Value)
                    .map(from_frame)
            })
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
    }
}

/// A command with keys, refused where a node is chosen for it: its keys'
/// owner is the only node that can run it.
fn keys_have_one_owner(args: &[&[u8]]) -> Error {
    Error::Unsupported {
        command: String::from_utf8_lossy(args[0]).to_ascii_lowercase(),
        why: "its keys have one owner: use Client::cmd",
    }
}

/// A command's value from its parts' answers.
pub(crate) fn join(join: &Join, answers: Vec<Result<Value, Error>>) -> Result<Value, Error> {
    match join {
        Join::One => answers
            .into_iter()
            .next()
            .unwrap_or_else(|| unreachable!("one part")),
        Join::Combine(reply) => combine(*reply, answers),
        Join::AnyKey => {
            let mut keys = Vec::new();
            for answer in answers {
                keys.push(answer?);
            }
            Ok(keys
                .into_iter()
                .find(|v| !matches!(v, Value::Nil))
                .unwrap_or(Value::Nil))
        }
        Join::Merge {
            merge: Merge::Sum, ..
        } => {
            let mut total = 0;
            for answer in answers {
                total += answer?.as_int().ok_or_else(|| Error::UnexpectedReply {
                    command: "a split command",
                    reply: "not a count".into(),
                })?;
            }
            Ok(Value::Int(total))
        }
        Join::Merge {
            merge: Merge::Ok, ..
        } => {
            for answer in answers {
                answer?;
            }
            Ok(Value::Status("OK".into()))
        }
        Join::Merge {
            merge: Merge::InOrder,
            members,
            keys,
        } => {
            let mut out = vec![Value::Nil; *keys];
            for (keys, answer) in members.iter().zip(answers) {
                for (&i, value) in keys.iter().zip(answer?.into_array()) {
                    out[i] = value;
                }
            }
            Ok(Value::Array(out))
        }
    }
}

/// The answers of every master, combined as the servers' response tip says.
pub(crate) fn combine(reply: Reply, answers: Vec<Result<Value, Error>>) -> Result<Value, Error> {
    let first_error = || answers.iter().find_map(|a| a.as_ref().err().cloned());
    let values = || answers.iter().filter_map(|a| a.as_ref().ok());
    match reply {
        Reply::AllSucceeded => match first_error() {
            Some(e) => Err(e),
            None => Ok(values().next().cloned().unwrap_or(Value::Nil)),
        },
        Reply::OneSucceeded => match values().next() {
            Some(v) => Ok(v.clone()),
            None => Err(first_error().unwrap_or(Error::Server("no node answered".into()))),
        },
        Reply::Sum | Reply::Min | Reply::Max => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let ints: Option<Vec<i64>> = values().map(Value::as_int).collect();
            let ints = ints.ok_or_else(|| Error::UnexpectedReply {
                command: "a fan-out command",
                reply: "not an integer from every node".into(),
            })?;
            Ok(Value::Int(match reply {
                Reply::Sum => ints.iter().sum(),
                Reply::Min => ints.iter().copied().min().unwrap_or(0),
                _ => ints.iter().copied().max().unwrap_or(0),
            }))
        }
        Reply::LogicalAnd | Reply::LogicalOr => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let and = reply == Reply::LogicalAnd;
            let arrays: Vec<Vec<Value>> = values().cloned().map(Value::into_array).collect();
            let len = arrays.first().map_or(0, Vec::len);
            Ok(Value::Array(
                (0..len)
                    .map(|i| {
                        let mut bits = arrays
                            .iter()
                            .map(|a| a.get(i).and_then(Value::as_int).unwrap_or(0) != 0);
                        let bit = if and {
                            bits.all(|b| b)
                        } else {
                            bits.any(|b| b)
                        };
                        Value::Int(i64::from(bit))
                    })
                    .collect(),
            ))
        }
        // No policy (`KEYS`) or a special one (`INFO`): arrays are
        // concatenated (every node's keys), anything else listed per node
        // (see `Client::cmd_each_master` to know which node said what).
        _ => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let all: Vec<Value> = values().cloned().collect();
            if all.iter().all(|v| matches!(v, Value::Array(_))) {
                Ok(Value::Array(
                    all.into_iter().flat_map(Value::into_array).collect(),
                ))
            } else {
                Ok(Value::Array(all))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(values: Vec<Value>) -> Vec<Result<Value, Error>> {
        values.into_iter().map(Ok).collect()
    }

    #[test]
    fn refused_commands_are_found_in_any_case() {
        assert!(REFUSED.iter().all(|(name, _)| name.len() <= 12));
        assert_eq!(refusal(b"SUBSCRIBE").map(|r| r.0), Some("subscribe"));
        assert_eq!(refusal(b"ScAn").map(|r| r.0), Some("scan"));
        assert_eq!(refusal(b"punsubscribe").map(|r| r.0), Some("punsubscribe"));
        assert_eq!(refusal(b"get"), None);
        assert_eq!(refusal(b"subscribe-with-a-long-name"), None);
        assert_eq!(refusal(b""), None);
        // Every entry, in every case, passes the length-and-letter filter.
        for &(name, _) in REFUSED {
            let upper = name.to_ascii_uppercase();
            let mixed: String = name
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            for typed in [name, upper.as_str(), mixed.as_str()] {
                assert_eq!(refusal(typed.as_bytes()).map(|r| r.0), Some(name));
            }
        }
        for allowed in ["HSET", "SET", "slowlog", "SCRIPT", "Sync2", "@uth", "[ync"] {
            assert_eq!(refusal(allowed.as_bytes()), None, "{allowed}");
        }
    }

    #[test]
    fn fan_out_answers_combine_as_the_tips_say() {
        assert_eq!(
            combine(Reply::Sum, ok(vec![Value::Int(2), Value::Int(5)])),
            Ok(Value::Int(7))
        );
        assert_eq!(
            combine(Reply::Max, ok(vec![Value::Int(2), Value::Int(5)])),
            Ok(Value::Int(5))
        );
        assert_eq!(
            combine(
                Reply::AllSucceeded,
                vec![
                    Ok(Value::Status("OK".into())),
                    Err(Error::Server("ERR x".into()))
                ]
            ),
            Err(Error::Server("ERR x".into()))
        );
        let exists = |bits: &[i64]| Value::Array(bits.iter().map(|&b| Value::Int(b)).collect());
        assert_eq!(
            combine(
                Reply::LogicalAnd,
                ok(vec![exists(&[1, 1, 0]), exists(&[1, 0, 0])])
            ),
            Ok(exists(&[1, 0, 0]))
        );
        assert_eq!(
            combine(
                Reply::EachNode,
                ok(vec![
                    Value::Array(vec![Value::Data("a".into())]),
                    Value::Array(vec![Value::Data("b".into())])
                ])
            ),
            Ok(Value::Array(vec![
                Value::Data("a".into()),
                Value::Data("b".into())
            ])),
            "KEYS from every master, concatenated"
        );
        assert_eq!(
            join(
                &Join::AnyKey,
                ok(vec![Value::Nil, Value::Data("k".into()), Value::Nil])
            ),
            Ok(Value::Data("k".into())),
            "a key from a node that has one"
        );
        assert_eq!(
            combine(
                Reply::Special,
                ok(vec![Value::Data("a".into()), Value::Data("b".into())])
            ),
            Ok(Value::Array(vec![
                Value::Data("a".into()),
                Value::Data("b".into())
            ])),
            "INFO: each node's text"
        );
    }
}
