//! What a model node answers: routing first (`MOVED` by the node's own
//! view, `ASK` and `TRYAGAIN` while a slot migrates, `CROSSSLOT`), then
//! the command on the node's data, written and replicated. Replies,
//! errors and their texts are Redis 7's.
//!
//! Scripts: the model has no Lua. It runs the scripts it knows by their
//! source (the client's compare-and-set and once-only increment, the
//! soak's `SET`) and refuses any other, as a server without the script
//! would not: a new script here needs its few lines in `scripts.rs`.
//!
//! Here: routing and the dispatch of every command. `data.rs`: the
//! commands on a node's data; `scripts.rs`: `EVAL`, `EVALSHA` and
//! `SCRIPT`; `session.rs`: the connection's own (`HELLO`, `CLIENT`,
//! `EXEC`, `WAIT`, `BLPOP`); `pubsub.rs`: sharded pub/sub; `cluster.rs`:
//! `CLUSTER` and `INFO`, as the node's view has them.

use std::collections::VecDeque;
use std::time::Duration;

// The Lua the client sends, known by its SHA1.
use zaris_client::sim_scripts::{INCR_ONCE, SET_IF_VERSION};
use zaris_core::slot_for_key;

use crate::effect::Effect;
use crate::model::{now, Data, Entry, Life, Model, Write, SLOTS};
use crate::resp::Reply;

mod cluster;
mod data;
mod pubsub;
mod scripts;
mod session;

pub use scripts::sha1;

/// What a command came to.
#[derive(Debug)]
pub enum Step {
    /// Its reply.
    Reply(Reply),
    /// Nothing yet: it blocks (`BLPOP`, `WAIT`) until the node is written
    /// to or this time (none: for ever); then it runs again.
    Block(Option<Duration>),
    /// Its reply, then the connection closes (`QUIT`).
    Close(Reply),
}

fn upper(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_uppercase()
}

fn int(arg: &[u8]) -> Option<i64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

fn not_int() -> Reply {
    Reply::Error("ERR value is not an integer or out of range".into())
}

fn wrong_type() -> Reply {
    Reply::Error("WRONGTYPE Operation against a key holding the wrong kind of value".into())
}

fn arity(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{}' command",
        name.to_ascii_lowercase()
    ))
}

/// The keys of a command and whether it writes; `None` for a command
/// with no keys.
fn keys_of(name: &str, args: &[Vec<u8>]) -> Option<(Vec<Vec<u8>>, bool)> {
    let rest = || args.iter().skip(1).cloned().collect::<Vec<_>>();
    let first = || args.get(1).cloned().into_iter().collect::<Vec<_>>();
    Some(match name {
        "GET" | "STRLEN" | "TTL" | "PTTL" | "TYPE" | "HGET" | "HMGET" | "HGETALL" | "LRANGE"
        | "LLEN" => (first(), false),
        "EXISTS" | "MGET" | "WATCH" | "SSUBSCRIBE" | "SUNSUBSCRIBE" => (rest(), false),
        "SET" | "INCR" | "INCRBY" | "DECR" | "DECRBY" | "RPUSH" | "LPUSH" | "LPOP" | "RPOP"
        | "HSET" | "EXPIRE" | "PEXPIRE" | "SPUBLISH" => (first(), true),
        "DEL" => (rest(), true),
        "MSET" => (args.iter().skip(1).step_by(2).cloned().collect(), true),
        "BLPOP" => (
            args.iter()
                .skip(1)
                .take(args.len().saturating_sub(2))
                .cloned()
                .collect(),
            true,
        ),
        "EVAL" | "EVALSHA" => {
            let n = args.get(2).and_then(|n| int(n)).unwrap_or(0).max(0) as usize;
            (args.iter().skip(3).take(n).cloned().collect(), true)
        }
        _ => return None,
    })
}

fn tryagain() -> Reply {
    Reply::Error("TRYAGAIN Multiple keys request during rehashing of slot".into())
}

impl Model {
    /// How long node `node`'s write pause still holds command `args` of
    /// connection `conn` (`None`: it runs now). As Redis: a write waits,
    /// inside `MULTI` too, and so does an `EXEC` of queued writes; a read
    /// or a `PING` does not; a pause of one slot (an atomic migration's)
    /// holds the writes of that slot only.
    #[must_use]
    pub fn held_by_pause(&self, conn: u64, node: usize, args: &[Vec<u8>]) -> Option<Duration> {
        let (until, slot) = self.nodes[node].paused?;
        let left = until.checked_sub(now()).filter(|d| !d.is_zero())?;
        let name = upper(args.first()?);
        let commands: Vec<Vec<Vec<u8>>> = if name == "EXEC" {
            self.conns
                .get(&conn)
                .and_then(|c| c.multi.as_ref())
                .map(|(queued, _)| queued.clone())
                .unwrap_or_default()
        } else {
            vec![args.to_vec()]
        };
        let held = commands.iter().any(|command| {
            let Some(first) = command.first() else {
                return false;
            };
            match keys_of(&upper(first), command) {
                Some((keys, true)) => {
                    slot.is_none_or(|s| keys.first().is_some_and(|k| slot_for_key(k) == s))
                }
                _ => false,
            }
        });
        held.then_some(left)
    }

    /// Whether `key` holds a live value on node `i`.
    fn exists(&self, i: usize, key: &[u8]) -> bool {
        self.get(i, key).is_some()
    }

    /// `key`'s live value on node `i`.
    fn get(&self, i: usize, key: &[u8]) -> Option<&Entry> {
        self.nodes[i]
            .data
            .get(key)
            .filter(|e| e.expires.is_none_or(|t| t > now()))
    }

    /// Where a command on `keys` goes from node `me`: here (`Ok`), or the
    /// redirect or error Redis Cluster answers.
    fn route(&self, conn: u64, keys: &[Vec<u8>], write: bool, asking: bool) -> Result<(), Reply> {
        let Some(first) = keys.first() else {
            return Ok(());
        };
        let slot = slot_for_key(first);
        if keys.iter().any(|k| slot_for_key(k) != slot) {
            return Err(Reply::Error(
                "CROSSSLOT Keys in request don't hash to the same slot".into(),
            ));
        }
        let c = &self.conns[&conn];
        let me = c.node;
        let node = &self.nodes[me];
        let view = &node.view;
        let owner = view.owner[usize::from(slot)];
        let missing = keys.iter().filter(|k| !self.exists(me, k)).count();
        if view.is_master(me) && owner == Some(me) {
            if let Some(&to) = node.migrating.get(&slot) {
                if missing == keys.len() {
                    return Err(Reply::err("ASK", format!("{slot} {}", self.addr(to))));
                }
                if missing > 0 {
                    return Err(tryagain());
                }
            }
            return Ok(());
        }
        if asking && node.importing.contains_key(&slot) {
            if keys.len() > 1 && missing > 0 {
                return Err(tryagain());
            }
            return Ok(());
        }
        if !write && c.readonly && owner.is_some() && view.master_of[me] == owner {
            return Ok(());
        }
        match owner {
            Some(o) => Err(Reply::err("MOVED", format!("{slot} {}", self.addr(o)))),
            None => Err(Reply::Error("CLUSTERDOWN Hash slot not served".into())),
        }
    }

    /// Runs `args` from connection `conn`.
    pub fn execute(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
        let Some(name) = args.first().map(|a| upper(a)) else {
            return Step::Reply(Reply::Error("ERR empty command".into()));
        };
        let c = self.conns.get_mut(&conn).expect("open");
        let asking = std::mem::take(&mut c.asking);
        let queueing =
            c.multi.is_some() && !matches!(name.as_str(), "EXEC" | "DISCARD" | "MULTI" | "WATCH");
        if let Some((keys, write)) = keys_of(&name, args) {
            if let Err(e) = self.route(conn, &keys, write, asking) {
                // Routed when queued, as Redis does: a redirect now aborts
                // the transaction at EXEC.
                if let Some((_, refused)) = &mut self.conns.get_mut(&conn).expect("open").multi {
                    *refused |= queueing;
                }
                return Step::Reply(e);
            }
        }
        if queueing {
            if let Some((queued, _)) = &mut self.conns.get_mut(&conn).expect("open").multi {
                queued.push(args.to_vec());
            }
            return Step::Reply(Reply::Simple("QUEUED".into()));
        }
        self.command(conn, &name, args, false)
    }

    /// Runs a routed command (`queued`: inside `EXEC`, where nothing
    /// blocks).
    #[allow(clippy::too_many_lines)]
    fn command(&mut self, conn: u64, name: &str, args: &[Vec<u8>], queued: bool) -> Step {
        let me = self.conns[&conn].node;
        let reply = match name {
            "PING" => match args.get(1) {
                Some(m) => Reply::Bulk(m.clone()),
                None => Reply::Simple("PONG".into()),
            },
            "ECHO" => args
                .get(1)
                .map_or_else(|| arity(name), |m| Reply::Bulk(m.clone())),
            "QUIT" => return Step::Close(Reply::ok()),
            "SELECT" => match args.get(1).map(|a| &a[..]) {
                Some(b"0") => Reply::ok(),
                _ => Reply::Error("ERR SELECT is not allowed in cluster mode".into()),
            },
            "HELLO" => self.hello(conn, args),
            "AUTH" => Reply::Error(
                "ERR AUTH <password> called without any password configured for the default user. \
                 Are you sure your configuration is correct?"
                    .into(),
            ),
            "CLIENT" => self.client(conn, args),
            "READONLY" => {
                self.conns.get_mut(&conn).expect("open").readonly = true;
                Reply::ok()
            }
            "READWRITE" => {
                self.conns.get_mut(&conn).expect("open").readonly = false;
                Reply::ok()
            }
            "ASKING" => {
                self.conns.get_mut(&conn).expect("open").asking = true;
                Reply::ok()
            }
            "CLUSTER" => self.cluster(me, args),
            "INFO" => self.info(me),
            "MULTI" => {
                let c = self.conns.get_mut(&conn).expect("open");
                if c.multi.is_some() {
                    Reply::Error("ERR MULTI calls can not be nested".into())
                } else {
                    c.multi = Some((Vec::new(), false));
                    Reply::ok()
                }
            }
            "DISCARD" => {
                let c = self.conns.get_mut(&conn).expect("open");
                c.watched.clear();
                match c.multi.take() {
                    Some(_) => Reply::ok(),
                    None => Reply::Error("ERR DISCARD without MULTI".into()),
                }
            }
            "EXEC" => return Step::Reply(self.exec(conn)),
            "WATCH" => {
                let dirty: Vec<(Vec<u8>, u64)> = args[1..]
                    .iter()
                    .map(|k| (k.clone(), self.nodes[me].dirty.get(k).copied().unwrap_or(0)))
                    .collect();
                let c = self.conns.get_mut(&conn).expect("open");
                if c.multi.is_some() {
                    Reply::Error("ERR WATCH inside MULTI is not allowed".into())
                } else {
                    c.watched.extend(dirty);
                    Reply::ok()
                }
            }
            "UNWATCH" => {
                self.conns.get_mut(&conn).expect("open").watched.clear();
                Reply::ok()
            }
            "WAIT" => return self.wait(conn, args),
            "SCRIPT" => self.script(me, args),
            "SSUBSCRIBE" => return self.ssubscribe(conn, args),
            "SUNSUBSCRIBE" => return self.sunsubscribe(conn, args),
            "SPUBLISH" => self.spublish(me, args),
            "BLPOP" if !queued => return self.blpop(conn, args),
            _ => {
                let (reply, touched) = self.data(me, name, args);
                if let Reply::Error(_) = reply {
                    return Step::Reply(reply);
                }
                let writes = keys_of(name, args).is_some_and(|(_, w)| w);
                if !writes {
                    self.remember(conn, args);
                }
                let effects = self.effects(me, touched);
                self.wrote(me, Some(conn), effects);
                reply
            }
        };
        Step::Reply(reply)
    }

    /// Each key touched and what it holds now.
    fn effects(&self, me: usize, touched: Vec<Vec<u8>>) -> Write {
        let mut touched = touched;
        touched.sort();
        touched.dedup();
        touched
            .into_iter()
            .map(|k| {
                let e = self.nodes[me].data.get(&k).cloned();
                (k, e)
            })
            .collect()
    }

    /// A tracking connection's read: its keys remembered, to be
    /// invalidated when written.
    fn remember(&mut self, conn: u64, args: &[Vec<u8>]) {
        let c = &self.conns[&conn];
        if !c.tracking {
            return;
        }
        let me = c.node;
        let name = upper(&args[0]);
        if let Some((keys, _)) = keys_of(&name, args) {
            for key in keys {
                self.nodes[me].tracking.entry(key).or_default().insert(conn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use zaris_core::{command_has_keys, command_names, command_target, Target};

    use super::*;

    /// A command line for `name` that the core's tables accept, its keys
    /// (if any) all tagged `tag`: the shortest of a few fillers (keys
    /// throughout; or a count first or second, for `numkeys`).
    fn line(name: &str, tag: &str) -> Option<Vec<Vec<u8>>> {
        let key = |i: usize| format!("{tag}{i}").into_bytes();
        (1..=6).find_map(|n| {
            let fillers: [Vec<Vec<u8>>; 3] = [
                (0..n).map(key).collect(),
                std::iter::once(b"1".to_vec())
                    .chain((1..n).map(key))
                    .collect(),
                (0..n)
                    .map(|i| if i == 1 { b"1".to_vec() } else { key(i) })
                    .collect(),
            ];
            fillers.into_iter().find_map(|rest| {
                let args: Vec<Vec<u8>> = std::iter::once(name.to_ascii_uppercase().into_bytes())
                    .chain(rest)
                    .collect();
                let view: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                command_target(&view).is_ok().then_some(args)
            })
        })
    }

    /// Every command with keys (or shard channels) that the model serves is
    /// routed by them, to
    /// the slot the core routes it to: node 0 does not own the tag's slot,
    /// so a routed command is answered `MOVED` to that slot and runs
    /// nowhere, and one the model runs without routing (missing from
    /// `keys_of`) answers anything else.
    #[test]
    fn a_keyed_command_the_model_serves_is_routed_by_its_keys() {
        let mut model = Model::new(3, false, 0, 1);
        let conn = model.open(0);
        let tag = (0..)
            .map(|i| format!("{{t{i}}}"))
            .find(|t| model.truth.owner[usize::from(slot_for_key(t.as_bytes()))] != Some(0))
            .expect("a tag of another node");
        let slot = slot_for_key(tag.as_bytes());
        let (mut routed, mut unserved, mut wrong) = (Vec::new(), 0, Vec::new());
        for name in command_names() {
            let Some(args) = line(name, &tag) else {
                continue;
            };
            let view: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            // Keys, or shard channels, which route as keys do.
            let core = command_target(&view);
            if !command_has_keys(&view) && core != Ok(Target::Slot(slot)) {
                continue;
            }
            match model.execute(conn, &args) {
                Step::Reply(Reply::Error(e)) if e.starts_with("ERR unknown command") => {
                    unserved += 1;
                }
                Step::Reply(Reply::Error(e))
                    if e.starts_with(&format!("MOVED {slot} "))
                        && core == Ok(Target::Slot(slot)) =>
                {
                    routed.push(name);
                }
                other => wrong.push(format!("{name}: {other:?} (the core: {core:?})")),
            }
        }
        assert!(
            wrong.is_empty(),
            "served without routing by the keys the servers give: {wrong:#?}"
        );
        eprintln!(
            "{} routed: {routed:?}; {unserved} keyed commands the model does not serve",
            routed.len()
        );
        assert!(routed.len() >= 25 && unserved > 100);
    }
}
