//! A connection's own commands: `HELLO`, `CLIENT`, `EXEC`, `WAIT`, and a
//! blocking `BLPOP`.

use super::*;

impl Model {
    pub(super) fn hello(&mut self, conn: u64, args: &[Vec<u8>]) -> Reply {
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

    pub(super) fn client(&mut self, conn: u64, args: &[Vec<u8>]) -> Reply {
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

    pub(super) fn exec(&mut self, conn: u64) -> Reply {
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
    pub(super) fn wait(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
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

    pub(super) fn blpop(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
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
}
