//! Sharded pub/sub: `SSUBSCRIBE`, `SUNSUBSCRIBE`, `SPUBLISH`.

use super::*;

impl Model {
    pub(super) fn ssubscribe(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
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

    pub(super) fn sunsubscribe(&mut self, conn: u64, args: &[Vec<u8>]) -> Step {
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

    pub(super) fn spublish(&mut self, me: usize, args: &[Vec<u8>]) -> Reply {
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
}
