//! The commands on a node's data: strings, lists, hashes, keys.

use super::*;

impl Model {
    /// The commands on data: the reply and the keys written.
    #[allow(clippy::too_many_lines)]
    pub(super) fn data(
        &mut self,
        me: usize,
        name: &str,
        args: &[Vec<u8>],
    ) -> (Reply, Vec<Vec<u8>>) {
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

    pub(super) fn put(&mut self, me: usize, key: &[u8], data: Data, expires: Option<Duration>) {
        self.nodes[me]
            .data
            .insert(key.to_vec(), Entry { data, expires });
    }

    /// `SET key value [NX|XX] [PX ms|EX s]`.
    pub(super) fn set(&mut self, me: usize, args: &[Vec<u8>]) -> (Reply, Vec<Vec<u8>>) {
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

    pub(super) fn incr(&mut self, me: usize, key: &[u8], by: i64) -> Result<i64, Reply> {
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

    pub(super) fn pop(
        &mut self,
        me: usize,
        key: &[u8],
        left: bool,
    ) -> Result<Option<Vec<u8>>, Reply> {
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

    pub(super) fn hset(&mut self, me: usize, key: &[u8], pairs: &[Vec<u8>]) -> Result<i64, Reply> {
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
}
