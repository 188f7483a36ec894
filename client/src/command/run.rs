//! A command's requests sent together, each node's share in one write,
//! through the client cache where it can answer them.

use std::sync::Arc;

use bytes::Bytes;
use zaris_core::Cacheable;

use super::plan::{Cached, Info, Part};
use crate::cache::Cache;
use crate::codec::{room_for, write_command, Frame};
use crate::inner::Inner;
use crate::reply::take_frame;
use crate::route::{Noting, Packed, Route};
use crate::value::from_frame;
use crate::{Error, Value};

impl Inner {
    /// The client cache's answer to `args`, before anything is planned or
    /// encoded: a read of one key (`GET`, `HGET`, ...) stored by its
    /// slot's owner in the map now, under the epochs in force, within that
    /// owner's lease. `None` sends it the usual way (planned, looked up
    /// again, counted as a miss). No lock, no allocation.
    pub(crate) fn cache_hit(&self, args: &[&[u8]]) -> Option<Value> {
        let cache = self.cache()?;
        let (at, rule) = zaris_core::cached_read(args)?;
        let name = args[0];
        // `MGET` is stored key by key; a name the table is taken not to
        // know is learned first.
        if name.eq_ignore_ascii_case(b"mget") || self.learned().instead(name) {
            return None;
        }
        let key = args[at];
        let slot = zaris_core::slot_for_key(key);
        let map = self.map();
        let owner = map.owner_of_slot(slot).ok().filter(|o| !o.held())?;
        cache
            .hit(key, args, slot, &owner.addr, rule)
            .map(from_frame)
    }

    /// Runs `parts` together (each node's share in one write) and returns
    /// each part's answer, in order.
    pub(crate) async fn run_parts(self: &Arc<Self>, parts: &[Part]) -> Vec<Result<Value, Error>> {
        if let Some(cache) = self.cache() {
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
            let snapshot = self.map();
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

    /// `args` on every master of the map, each node's answer by address.
    pub(super) async fn each_master(
        self: &Arc<Self>,
        args: &[&[u8]],
        info: Info,
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
                        .map()
                        .owner_of_slot(*slot)
                        .map_or_else(|_| String::new(), |n| n.addr.to_string()),
                };
                (addr, answer)
            })
            .collect()
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
