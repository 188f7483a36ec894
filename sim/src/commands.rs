//! What a model node answers: routing first (`MOVED` by the node's own
//! view, `ASK` and `TRYAGAIN` while a slot migrates, `CROSSSLOT`), then
//! the command on the node's data, written and replicated. Replies,
//! errors and their texts are Redis 7's.
//!
//! Scripts: the model has no Lua. It runs the scripts it knows by their
//! source (the client's compare-and-set and once-only increment, the
//! soak's `SET`) and refuses any other, as a server without the script
//! would not: a new script here needs its few lines below.

use std::collections::VecDeque;
use std::time::Duration;

// The Lua the client sends, known by its SHA1.
use zaris_client::sim_scripts::{INCR_ONCE, SET_IF_VERSION};
use zaris_core::slot_for_key;

use crate::effect::Effect;
use crate::model::{now, Data, Entry, Life, Model, Write, SLOTS};
use crate::resp::Reply;

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

/// The soak's script (the model also runs the client's own,
/// `sim_scripts`: its compare-and-set and once-only increment).
const SET_SCRIPT: &str = "return redis.call('SET', KEYS[1], ARGV[1])";

/// The SHA1 of a script's source, in hex, as `EVALSHA` names it.
#[must_use]
pub fn sha1(source: &[u8]) -> String {
    sha1_smol::Sha1::from(source).digest().to_string()
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

    /// The commands on data: the reply and the keys written.
    #[allow(clippy::too_many_lines)]
    fn data(&mut self, me: usize, name: &str, args: &[Vec<u8>]) -> (Reply, Vec<Vec<u8>>) {
        let key = args.get(1).cloned().unwrap_or_default();
        let at = now();
        let none = Vec::new;
        match name {
            "GET" => match self.get(me, &key).map(|e| &e.data) {
                None => (Reply::Nil, none()),
                Some(Data::Str(v)) => (Reply::Bulk(v.clone()), none()),
                Some(_) => (wrong_type(), none()),
            },
            "STRLEN" => match self.get(me, &key).map(|e| &e.data) {
                None => (Reply::Int(0), none()),
                Some(Data::Str(v)) => (Reply::Int(v.len() as i64), none()),
                Some(_) => (wrong_type(), none()),
            },
            "EXISTS" => {
                let n = args[1..].iter().filter(|k| self.exists(me, k)).count();
                (Reply::Int(n as i64), none())
            }
            "TYPE" => {
                let t = match self.get(me, &key).map(|e| &e.data) {
                    None => "none",
                    Some(Data::Str(_)) => "string",
                    Some(Data::List(_)) => "list",
                    Some(Data::Hash(_)) => "hash",
                };
                (Reply::Simple(t.into()), none())
            }
            "TTL" | "PTTL" => {
                let n = match self.get(me, &key) {
                    None => -2,
                    Some(Entry { expires: None, .. }) => -1,
                    Some(Entry {
                        expires: Some(t), ..
                    }) => {
                        let left = t.saturating_sub(at).as_millis() as i64;
                        if name == "TTL" {
                            (left + 500) / 1000
                        } else {
                            left
                        }
                    }
                };
                (Reply::Int(n), none())
            }
            "MGET" => {
                let values = args[1..]
                    .iter()
                    .map(|k| match self.get(me, k).map(|e| &e.data) {
                        Some(Data::Str(v)) => Reply::Bulk(v.clone()),
                        _ => Reply::Nil,
                    })
                    .collect();
                (Reply::Array(values), none())
            }
            "SET" => self.set(me, args),
            "MSET" => {
                if args.len() < 3 || args.len().is_multiple_of(2) {
                    return (arity(name), none());
                }
                let mut touched = Vec::new();
                for pair in args[1..].chunks(2) {
                    self.put(me, &pair[0], Data::Str(pair[1].clone()), None);
                    touched.push(pair[0].clone());
                }
                (Reply::ok(), touched)
            }
            "DEL" => {
                let mut touched = Vec::new();
                for k in &args[1..] {
                    if self.exists(me, k) {
                        self.nodes[me].data.remove(k);
                        touched.push(k.clone());
                    }
                }
                (Reply::Int(touched.len() as i64), touched)
            }
            "INCR" | "DECR" | "INCRBY" | "DECRBY" => {
                let by = match name {
                    "INCR" => Some(1),
                    "DECR" => Some(-1),
                    _ => args.get(2).and_then(|a| int(a)),
                };
                let Some(mut by) = by else {
                    return (not_int(), none());
                };
                if name == "DECRBY" {
                    by = -by;
                }
                match self.incr(me, &key, by) {
                    Ok(v) => (Reply::Int(v), vec![key]),
                    Err(e) => (e, none()),
                }
            }
            "RPUSH" | "LPUSH" => {
                if args.len() < 3 {
                    return (arity(name), none());
                }
                let expires = self.get(me, &key).and_then(|e| e.expires);
                let mut list = match self.get(me, &key).map(|e| &e.data) {
                    None => VecDeque::new(),
                    Some(Data::List(l)) => l.clone(),
                    Some(_) => return (wrong_type(), none()),
                };
                for v in &args[2..] {
                    if name == "RPUSH" {
                        list.push_back(v.clone());
                    } else {
                        list.push_front(v.clone());
                    }
                }
                let len = list.len();
                self.put(me, &key, Data::List(list), expires);
                (Reply::Int(len as i64), vec![key])
            }
            "LPOP" | "RPOP" | "BLPOP" => {
                let keys: Vec<Vec<u8>> = if name == "BLPOP" {
                    args[1..args.len().saturating_sub(1).max(1)].to_vec()
                } else {
                    vec![key]
                };
                for k in keys {
                    match self.pop(me, &k, name != "RPOP") {
                        Ok(Some(v)) if name == "BLPOP" => {
                            return (
                                Reply::Array(vec![Reply::Bulk(k.clone()), Reply::Bulk(v)]),
                                vec![k],
                            );
                        }
                        Ok(Some(v)) => return (Reply::Bulk(v), vec![k]),
                        Ok(None) => {}
                        Err(e) => return (e, none()),
                    }
                }
                (
                    if name == "BLPOP" {
                        Reply::NilArray
                    } else {
                        Reply::Nil
                    },
                    none(),
                )
            }
            "LRANGE" => {
                let (Some(a), Some(b)) = (
                    args.get(2).and_then(|a| int(a)),
                    args.get(3).and_then(|a| int(a)),
                ) else {
                    return (not_int(), none());
                };
                match self.get(me, &key).map(|e| &e.data) {
                    None => (Reply::Array(Vec::new()), none()),
                    Some(Data::List(l)) => {
                        let len = l.len() as i64;
                        let fix = |i: i64| if i < 0 { (len + i).max(0) } else { i };
                        let (a, b) = (fix(a), fix(b).min(len - 1));
                        let items = if a > b {
                            Vec::new()
                        } else {
                            l.iter()
                                .skip(a as usize)
                                .take((b - a + 1) as usize)
                                .map(|v| Reply::Bulk(v.clone()))
                                .collect()
                        };
                        (Reply::Array(items), none())
                    }
                    Some(_) => (wrong_type(), none()),
                }
            }
            "LLEN" => match self.get(me, &key).map(|e| &e.data) {
                None => (Reply::Int(0), none()),
                Some(Data::List(l)) => (Reply::Int(l.len() as i64), none()),
                Some(_) => (wrong_type(), none()),
            },
            "HGET" | "HMGET" | "HGETALL" => {
                let hash = match self.get(me, &key).map(|e| &e.data) {
                    None => None,
                    Some(Data::Hash(h)) => Some(h),
                    Some(_) => return (wrong_type(), none()),
                };
                let field = |f: &[u8]| {
                    hash.and_then(|h| h.get(f))
                        .map_or(Reply::Nil, |v| Reply::Bulk(v.clone()))
                };
                let reply = match name {
                    "HGET" => args.get(2).map_or_else(|| arity(name), |f| field(f)),
                    "HMGET" => Reply::Array(args[2..].iter().map(|f| field(f)).collect()),
                    _ => Reply::Map(
                        hash.into_iter()
                            .flatten()
                            .map(|(k, v)| (Reply::Bulk(k.clone()), Reply::Bulk(v.clone())))
                            .collect(),
                    ),
                };
                (reply, none())
            }
            "HSET" => {
                if args.len() < 4 || !args.len().is_multiple_of(2) {
                    return (arity(name), none());
                }
                match self.hset(me, &key, &args[2..]) {
                    Ok(added) => (Reply::Int(added), vec![key]),
                    Err(e) => (e, none()),
                }
            }
            "EXPIRE" | "PEXPIRE" => {
                let Some(n) = args.get(2).and_then(|a| int(a)) else {
                    return (not_int(), none());
                };
                let ms = if name == "EXPIRE" { n * 1000 } else { n };
                if !self.exists(me, &key) {
                    return (Reply::Int(0), none());
                }
                if let Some(e) = self.nodes[me].data.get_mut(&key) {
                    e.expires = Some(at + Duration::from_millis(ms.max(0) as u64));
                }
                (Reply::Int(1), vec![key])
            }
            "EVAL" | "EVALSHA" => self.eval(me, name, args),
            _ => {
                let start: Vec<String> = args[1..]
                    .iter()
                    .take(3)
                    .map(|a| format!("'{}'", String::from_utf8_lossy(a)))
                    .collect();
                (
                    Reply::Error(format!(
                        "ERR unknown command '{}', with args beginning with: {}",
                        String::from_utf8_lossy(&args[0]),
                        start.join(" ")
                    )),
                    none(),
                )
            }
        }
    }

    fn put(&mut self, me: usize, key: &[u8], data: Data, expires: Option<Duration>) {
        self.nodes[me]
            .data
            .insert(key.to_vec(), Entry { data, expires });
    }

    /// `SET key value [NX|XX] [PX ms|EX s]`.
    fn set(&mut self, me: usize, args: &[Vec<u8>]) -> (Reply, Vec<Vec<u8>>) {
        if args.len() < 3 {
            return (arity("SET"), Vec::new());
        }
        let (key, value) = (&args[1], &args[2]);
        let mut expires = None;
        let (mut nx, mut xx) = (false, false);
        let mut i = 3;
        while i < args.len() {
            match upper(&args[i]).as_str() {
                "NX" => nx = true,
                "XX" => xx = true,
                unit @ ("PX" | "EX") => {
                    let Some(n) = args.get(i + 1).and_then(|a| int(a)).filter(|&n| n > 0) else {
                        return (
                            Reply::Error("ERR invalid expire time in 'set' command".into()),
                            Vec::new(),
                        );
                    };
                    let ms = if unit == "EX" { n * 1000 } else { n };
                    expires = Some(now() + Duration::from_millis(ms as u64));
                    i += 1;
                }
                _ => return (Reply::Error("ERR syntax error".into()), Vec::new()),
            }
            i += 1;
        }
        let exists = self.exists(me, key);
        if (nx && exists) || (xx && !exists) {
            return (Reply::Nil, Vec::new());
        }
        self.put(me, key, Data::Str(value.clone()), expires);
        (Reply::ok(), vec![key.clone()])
    }

    fn incr(&mut self, me: usize, key: &[u8], by: i64) -> Result<i64, Reply> {
        let (old, expires) = match self.get(me, key) {
            None => (0, None),
            Some(Entry {
                data: Data::Str(v),
                expires,
            }) => (int(v).ok_or_else(not_int)?, *expires),
            Some(_) => return Err(wrong_type()),
        };
        let new = old
            .checked_add(by)
            .ok_or_else(|| Reply::Error("ERR increment or decrement would overflow".into()))?;
        self.put(me, key, Data::Str(new.to_string().into_bytes()), expires);
        Ok(new)
    }

    fn pop(&mut self, me: usize, key: &[u8], left: bool) -> Result<Option<Vec<u8>>, Reply> {
        let Some(entry) = self.nodes[me].data.get_mut(key) else {
            return Ok(None);
        };
        let Data::List(list) = &mut entry.data else {
            return Err(wrong_type());
        };
        let v = if left {
            list.pop_front()
        } else {
            list.pop_back()
        };
        if list.is_empty() {
            self.nodes[me].data.remove(key);
        }
        Ok(v)
    }

    fn hset(&mut self, me: usize, key: &[u8], pairs: &[Vec<u8>]) -> Result<i64, Reply> {
        let (mut hash, expires) = match self.get(me, key) {
            None => (std::collections::BTreeMap::new(), None),
            Some(Entry {
                data: Data::Hash(h),
                expires,
            }) => (h.clone(), *expires),
            Some(_) => return Err(wrong_type()),
        };
        let mut added = 0;
        for pair in pairs.chunks(2) {
            if hash.insert(pair[0].clone(), pair[1].clone()).is_none() {
                added += 1;
            }
        }
        self.put(me, key, Data::Hash(hash), expires);
        Ok(added)
    }

    /// `EVAL` and `EVALSHA` of the scripts the model knows.
    fn eval(&mut self, me: usize, name: &str, args: &[Vec<u8>]) -> (Reply, Vec<Vec<u8>>) {
        let Some(script) = args.get(1) else {
            return (arity(name), Vec::new());
        };
        let sha = if name == "EVAL" {
            let sha = sha1(script);
            self.nodes[me].scripts.insert(sha.clone());
            sha
        } else {
            let sha = String::from_utf8_lossy(script).to_ascii_lowercase();
            if !self.nodes[me].scripts.contains(&sha) {
                self.count(Effect::NoscriptAnswered, 1);
                return (
                    Reply::Error("NOSCRIPT No matching script. Please use EVAL.".into()),
                    Vec::new(),
                );
            }
            sha
        };
        let n = args.get(2).and_then(|a| int(a)).unwrap_or(-1);
        if n < 0 || args.len() < 3 + n as usize {
            return (
                Reply::Error("ERR Number of keys can't be greater than number of args".into()),
                Vec::new(),
            );
        }
        let keys = &args[3..3 + n as usize];
        let argv = &args[3 + n as usize..];
        let arg = |i: usize| argv.get(i).cloned().unwrap_or_default();
        if sha == sha1(SET_SCRIPT.as_bytes()) && !keys.is_empty() {
            self.put(me, &keys[0], Data::Str(arg(0)), None);
            return (Reply::ok(), vec![keys[0].clone()]);
        }
        if sha == sha1(SET_IF_VERSION.as_bytes()) && !keys.is_empty() {
            let key = &keys[0];
            let stored = match self.get(me, key).map(|e| &e.data) {
                None => 0,
                Some(Data::Hash(h)) => h.get(&b"v"[..]).and_then(|v| int(v)).unwrap_or(0),
                Some(_) => return (script_error(&wrong_type()), Vec::new()),
            };
            if Some(stored) != int(&arg(1)) {
                return (
                    Reply::Array(vec![Reply::Int(0), Reply::Int(stored)]),
                    Vec::new(),
                );
            }
            let pairs = [
                b"v".to_vec(),
                (stored + 1).to_string().into_bytes(),
                b"d".to_vec(),
                arg(0),
            ];
            if let Err(e) = self.hset(me, key, &pairs) {
                return (script_error(&e), Vec::new());
            }
            return (
                Reply::Array(vec![Reply::Int(1), Reply::Int(stored + 1)]),
                vec![key.clone()],
            );
        }
        if sha == sha1(INCR_ONCE.as_bytes()) && keys.len() >= 2 {
            let (key, marker) = (&keys[0], &keys[1]);
            let px = int(&arg(1)).unwrap_or(60_000).max(1) as u64;
            let expires = Some(now() + Duration::from_millis(px));
            if self.exists(me, marker) {
                let recorded = match self.get(me, marker).map(|e| &e.data) {
                    Some(Data::Str(v)) => int(v),
                    _ => None,
                };
                return (recorded.map_or(Reply::Nil, Reply::Int), Vec::new());
            }
            let Some(by) = int(&arg(0)) else {
                return (script_error(&not_int()), Vec::new());
            };
            return match self.incr(me, key, by) {
                Ok(v) => {
                    self.put(me, marker, Data::Str(v.to_string().into_bytes()), expires);
                    (Reply::Int(v), vec![key.clone(), marker.clone()])
                }
                Err(e) => (script_error(&e), Vec::new()),
            };
        }
        (
            Reply::Error(
                "ERR the model cluster does not run this script (sim/src/commands.rs)".into(),
            ),
            Vec::new(),
        )
    }

    fn hello(&mut self, conn: u64, args: &[Vec<u8>]) -> Reply {
        let proto = match args.get(1) {
            None => None,
            Some(v) => match int(v) {
                Some(p @ 2..=3) => Some(p as u8),
                _ => return Reply::Error("NOPROTO unsupported protocol version".into()),
            },
        };
        let me = self.conns[&conn].node;
        let c = self.conns.get_mut(&conn).expect("open");
        if let Some(p) = proto {
            c.proto = p;
        }
        let role = if self.nodes[me].view.is_master(me) {
            "master"
        } else {
            "replica"
        };
        let field = |k: &str, v: Reply| (Reply::text(k), v);
        Reply::Map(vec![
            field("server", Reply::text("redis")),
            field("version", Reply::text("7.2.0")),
            field("proto", Reply::Int(i64::from(c.proto))),
            field("id", Reply::Int(conn as i64)),
            field("mode", Reply::text("cluster")),
            field("role", Reply::text(role)),
            field("modules", Reply::Array(Vec::new())),
        ])
    }

    fn client(&mut self, conn: u64, args: &[Vec<u8>]) -> Reply {
        let sub = args.get(1).map(|a| upper(a)).unwrap_or_default();
        match sub.as_str() {
            "TRACKING" => {
                let on = args.get(2).map(|a| upper(a));
                let c = self.conns.get_mut(&conn).expect("open");
                match on.as_deref() {
                    Some("ON") => c.tracking = true,
                    Some("OFF") => c.tracking = false,
                    _ => return Reply::Error("ERR syntax error".into()),
                }
                Reply::ok()
            }
            "ID" => Reply::Int(conn as i64),
            "SETNAME" | "SETINFO" | "NO-EVICT" | "NO-TOUCH" | "REPLY" => Reply::ok(),
            _ => Reply::Error(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                sub.to_ascii_lowercase()
            )),
        }
    }

    fn exec(&mut self, conn: u64) -> Reply {
        let c = self.conns.get_mut(&conn).expect("open");
        let watched = std::mem::take(&mut c.watched);
        let Some((queued, refused)) = c.multi.take() else {
            return Reply::Error("ERR EXEC without MULTI".into());
        };
        if refused {
            return Reply::Error(
                "EXECABORT Transaction discarded because of previous errors.".into(),
            );
        }
        let me = c.node;
        // Routed again as a whole: a slot that moved since aborts it.
        let mut keys = Vec::new();
        let mut write = false;
        for args in &queued {
            if let Some((k, w)) = keys_of(&upper(&args[0]), args) {
                keys.extend(k);
                write |= w;
            }
        }
        if let Err(e) = self.route(conn, &keys, write, false) {
            return e;
        }
        if watched
            .iter()
            .any(|(k, d)| self.nodes[me].dirty.get(k).copied().unwrap_or(0) != *d)
        {
            return Reply::NilArray;
        }
        let mut replies = Vec::with_capacity(queued.len());
        self.batch = Some(Write::new());
        for args in &queued {
            match self.command(conn, &upper(&args[0]), args, true) {
                Step::Reply(r) | Step::Close(r) => replies.push(r),
                Step::Block(_) => replies.push(Reply::NilArray),
            }
        }
        // One write for the whole transaction: a replica applies all of
        // it or none.
        let mut effects = self.batch.take().unwrap_or_default();
        effects.reverse();
        let mut seen = std::collections::BTreeSet::new();
        effects.retain(|(k, _)| seen.insert(k.clone()));
        self.wrote(me, Some(conn), effects);
        Reply::Array(replies)
    }

    /// `WAIT numreplicas timeout`: how many replicas have the connection's
    /// last write, once enough do or the time is up.
    fn wait(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
        let me = self.conns[&conn].node;
        if !self.nodes[me].view.is_master(me) {
            return Step::Reply(Reply::Error(
                "ERR WAIT cannot be used with replica instances. Please also note that since \
                 Redis 4.0 if a replica is configured to be writable (which is not the default) \
                 writes to replicas are just local and are not propagated."
                    .into(),
            ));
        }
        let (Some(want), Some(ms)) = (
            args.get(1).and_then(|a| int(a)),
            args.get(2).and_then(|a| int(a)),
        ) else {
            return Step::Reply(not_int());
        };
        let have = self.acked(me, self.conns[&conn].last_write);
        if have >= want {
            return Step::Reply(Reply::Int(have));
        }
        Step::Block((ms > 0).then(|| Duration::from_millis(ms as u64)))
    }

    /// How many replicas of `m` have applied `offset`.
    #[must_use]
    pub fn acked(&self, m: usize, offset: u64) -> i64 {
        self.truth
            .replicas(m)
            .filter(|&r| self.nodes[r].life == Life::Up && self.nodes[r].applied >= offset)
            .count() as i64
    }

    /// The reply of a blocked command whose time ran out.
    pub fn timed_out(&mut self, conn: u64, args: &[Vec<u8>]) -> Reply {
        match upper(&args[0]).as_str() {
            "WAIT" => {
                let me = self.conns[&conn].node;
                Reply::Int(self.acked(me, self.conns[&conn].last_write))
            }
            _ => Reply::NilArray,
        }
    }

    fn blpop(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
        let me = self.conns[&conn].node;
        let Some(timeout) = args
            .last()
            .and_then(|t| std::str::from_utf8(t).ok()?.parse::<f64>().ok())
            .filter(|t| *t >= 0.0 && args.len() >= 3)
        else {
            return Step::Reply(Reply::Error(
                "ERR timeout is not a float or out of range".into(),
            ));
        };
        let (reply, touched) = self.data(me, "BLPOP", args);
        if reply == Reply::NilArray {
            return Step::Block((timeout > 0.0).then(|| Duration::from_secs_f64(timeout)));
        }
        let effects = self.effects(me, touched);
        self.wrote(me, Some(conn), effects);
        Step::Reply(reply)
    }

    fn ssubscribe(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
        let me = self.conns[&conn].node;
        let mut replies = Vec::new();
        for channel in &args[1..] {
            self.nodes[me]
                .subscribers
                .entry(channel.clone())
                .or_default()
                .insert(conn);
            let c = self.conns.get_mut(&conn).expect("open");
            c.channels.insert(channel.clone());
            replies.push(Reply::Push(vec![
                Reply::text("ssubscribe"),
                Reply::Bulk(channel.clone()),
                Reply::Int(c.channels.len() as i64),
            ]));
        }
        let last = self.send_all_but_last(conn, replies);
        Step::Reply(last.unwrap_or_else(|| arity("ssubscribe")))
    }

    fn sunsubscribe(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
        let channels: Vec<Vec<u8>> = if args.len() > 1 {
            args[1..].to_vec()
        } else {
            self.conns[&conn].channels.iter().cloned().collect()
        };
        let replies: Vec<Reply> = channels
            .iter()
            .map(|channel| self.unsubscribe(conn, channel))
            .collect();
        let last = self.send_all_but_last(conn, replies);
        Step::Reply(last.unwrap_or_else(|| {
            Reply::Push(vec![Reply::text("sunsubscribe"), Reply::Nil, Reply::Int(0)])
        }))
    }

    fn spublish(&mut self, me: usize, args: &[Vec<u8>]) -> Reply {
        let (Some(channel), Some(message)) = (args.get(1), args.get(2)) else {
            return arity("spublish");
        };
        let subs: Vec<u64> = self.nodes[me]
            .subscribers
            .get(channel)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        for &id in &subs {
            self.send(
                id,
                &Reply::Push(vec![
                    Reply::text("smessage"),
                    Reply::Bulk(channel.clone()),
                    Reply::Bulk(message.clone()),
                ]),
            );
        }
        Reply::Int(subs.len() as i64)
    }

    fn script(&mut self, me: usize, args: &[Vec<u8>]) -> Reply {
        match args.get(1).map(|a| upper(a)).as_deref() {
            Some("LOAD") => match args.get(2) {
                Some(source) => {
                    let sha = sha1(source);
                    self.nodes[me].scripts.insert(sha.clone());
                    Reply::text(sha)
                }
                None => arity("script|load"),
            },
            Some("EXISTS") => Reply::Array(
                args[2..]
                    .iter()
                    .map(|s| {
                        let sha = String::from_utf8_lossy(s).to_ascii_lowercase();
                        Reply::Int(i64::from(self.nodes[me].scripts.contains(&sha)))
                    })
                    .collect(),
            ),
            Some("FLUSH") => {
                self.nodes[me].scripts.clear();
                Reply::ok()
            }
            _ => Reply::Error("ERR unknown subcommand. Try SCRIPT HELP.".into()),
        }
    }

    fn info(&self, me: usize) -> Reply {
        let view = &self.nodes[me].view;
        let role = if view.is_master(me) {
            "master"
        } else {
            "slave"
        };
        Reply::Verbatim(format!(
            "# Server\r\nredis_version:7.2.0\r\nredis_mode:cluster\r\n\r\n# Replication\r\nrole:{role}\r\n\r\n# Cluster\r\ncluster_enabled:1\r\n"
        ))
    }

    /// `CLUSTER` subcommands, from the node's own view.
    fn cluster(&self, me: usize, args: &[Vec<u8>]) -> Reply {
        let view = &self.nodes[me].view;
        let sub = args.get(1).map(|a| upper(a)).unwrap_or_default();
        match sub.as_str() {
            "MYID" => Reply::text(&self.nodes[me].id),
            "KEYSLOT" => args.get(2).map_or_else(
                || arity("cluster|keyslot"),
                |k| Reply::Int(i64::from(slot_for_key(k))),
            ),
            "COUNTKEYSINSLOT" | "GETKEYSINSLOT" => {
                let Some(slot) = args
                    .get(2)
                    .and_then(|a| int(a))
                    .filter(|s| (0..SLOTS as i64).contains(s))
                else {
                    return Reply::Error("ERR Invalid slot".into());
                };
                let keys = self.keys_in(me, slot as u16, usize::MAX);
                if sub == "COUNTKEYSINSLOT" {
                    Reply::Int(keys.len() as i64)
                } else {
                    let n = args.get(3).and_then(|a| int(a)).unwrap_or(10).max(0) as usize;
                    Reply::Array(keys.into_iter().take(n).map(Reply::Bulk).collect())
                }
            }
            "SHARDS" => Reply::Array(
                (0..self.nodes.len())
                    .filter(|&m| view.is_master(m))
                    .map(|m| {
                        let mut slots = Vec::new();
                        for &(a, b) in view.ranges(m) {
                            slots.push(Reply::Int(i64::from(a)));
                            slots.push(Reply::Int(i64::from(b)));
                        }
                        let nodes = std::iter::once(m)
                            .chain(view.replicas(m))
                            .map(|n| self.shard_node(view, n))
                            .collect();
                        Reply::Map(vec![
                            (Reply::text("slots"), Reply::Array(slots)),
                            (Reply::text("nodes"), Reply::Array(nodes)),
                        ])
                    })
                    .collect(),
            ),
            "SLOTS" => {
                let mut ranges = Vec::new();
                for m in (0..self.nodes.len()).filter(|&m| view.is_master(m)) {
                    for &(a, b) in view.ranges(m) {
                        let mut entry = vec![Reply::Int(i64::from(a)), Reply::Int(i64::from(b))];
                        for n in std::iter::once(m).chain(view.replicas(m)) {
                            entry.push(Reply::Array(vec![
                                Reply::text(&self.nodes[n].host),
                                Reply::Int(i64::from(self.nodes[n].port)),
                                Reply::text(&self.nodes[n].id),
                            ]));
                        }
                        ranges.push((a, Reply::Array(entry)));
                    }
                }
                ranges.sort_by_key(|(a, _)| *a);
                Reply::Array(ranges.into_iter().map(|(_, r)| r).collect())
            }
            "NODES" => Reply::Verbatim(self.nodes_text(me)),
            "INFO" => {
                let served = |m: usize| {
                    view.ranges(m)
                        .iter()
                        .map(|&(a, b)| usize::from(b - a) + 1)
                        .sum::<usize>()
                };
                let masters = (0..self.nodes.len()).filter(|&m| view.member[m]);
                let assigned: usize = masters.clone().map(served).sum();
                let failing: usize = masters.filter(|&m| view.failed[m]).map(served).sum();
                let state = if assigned == SLOTS && failing == 0 {
                    "ok"
                } else {
                    "fail"
                };
                let members = view.member.iter().filter(|m| **m).count();
                let size = (0..self.nodes.len())
                    .filter(|&m| view.is_master(m) && !view.ranges(m).is_empty())
                    .count();
                Reply::Verbatim(format!(
                    "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\n\
                     cluster_slots_pfail:0\r\ncluster_slots_fail:{failing}\r\ncluster_known_nodes:{members}\r\n\
                     cluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
                    assigned - failing,
                    self.current_epoch,
                    view.epoch[view.master_of[me].unwrap_or(me)],
                ))
            }
            _ => Reply::Error(format!(
                "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                sub.to_ascii_lowercase()
            )),
        }
    }

    /// One node of a `CLUSTER SHARDS` shard.
    fn shard_node(&self, view: &crate::model::Layout, n: usize) -> Reply {
        let node = &self.nodes[n];
        let health = if view.failed[n] {
            "fail"
        } else if node.syncing_until.is_some_and(|t| t > now()) {
            "loading"
        } else {
            "online"
        };
        let field = |k: &str, v: Reply| (Reply::text(k), v);
        Reply::Map(vec![
            field("id", Reply::text(&node.id)),
            field("port", Reply::Int(i64::from(node.port))),
            field("ip", Reply::text(&node.host)),
            field("endpoint", Reply::text(&node.host)),
            field("hostname", Reply::text(&node.host)),
            field(
                "role",
                Reply::text(if view.is_master(n) {
                    "master"
                } else {
                    "replica"
                }),
            ),
            field(
                "replication-offset",
                Reply::Int(node.offset.max(node.applied) as i64),
            ),
            field("health", Reply::text(health)),
        ])
    }

    /// `CLUSTER NODES` from node `me`'s view.
    fn nodes_text(&self, me: usize) -> String {
        use std::fmt::Write as _;
        let view = &self.nodes[me].view;
        let mut text = String::new();
        for n in (0..self.nodes.len()).filter(|&n| view.member[n]) {
            let node = &self.nodes[n];
            let mut flags = Vec::new();
            if n == me {
                flags.push("myself");
            }
            flags.push(if view.is_master(n) { "master" } else { "slave" });
            if view.failed[n] {
                flags.push("fail");
            }
            let master = view.master_of[n].map_or("-".to_owned(), |m| self.nodes[m].id.clone());
            let _ = write!(
                text,
                "{} {}:{}@{},{} {} {master} 0 0 {} connected",
                node.id,
                node.host,
                node.port,
                node.port + 10000,
                node.host,
                flags.join(","),
                view.epoch[view.master_of[n].unwrap_or(n)],
            );
            for &(a, b) in view.ranges(n) {
                if a == b {
                    let _ = write!(text, " {a}");
                } else {
                    let _ = write!(text, " {a}-{b}");
                }
            }
            if n == me {
                for (slot, to) in &self.nodes[me].migrating {
                    let _ = write!(text, " [{slot}->-{}]", self.nodes[*to].id);
                }
                for (slot, from) in &self.nodes[me].importing {
                    let _ = write!(text, " [{slot}-<-{}]", self.nodes[*from].id);
                }
            }
            text.push('\n');
        }
        text
    }

    /// Up to `n` keys of `slot` on node `i`, in order.
    #[must_use]
    pub fn keys_in(&self, i: usize, slot: u16, n: usize) -> Vec<Vec<u8>> {
        self.nodes[i]
            .data
            .keys()
            .filter(|k| slot_for_key(k) == slot)
            .take(n)
            .cloned()
            .collect()
    }
}

fn tryagain() -> Reply {
    Reply::Error("TRYAGAIN Multiple keys request during rehashing of slot".into())
}

/// An error raised inside a script, as Redis 7 words it.
fn script_error(e: &Reply) -> Reply {
    match e {
        Reply::Error(text) => Reply::Error(format!("{text} script: model")),
        other => other.clone(),
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
