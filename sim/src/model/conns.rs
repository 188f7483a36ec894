//! A model node's connections: opened, closed, written to, cut.

use super::*;

impl Model {
    /// A new connection to node `i`.
    pub fn open(&mut self, node: usize) -> u64 {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            id,
            Conn {
                node,
                generation: self.nodes[node].generation,
                proto: 2,
                out: VecDeque::new(),
                wake: Rc::new(Notify::new()),
                asking: false,
                readonly: false,
                multi: None,
                watched: Vec::new(),
                tracking: false,
                channels: BTreeSet::new(),
                last_write: 0,
                closed: false,
            },
        );
        id
    }

    /// Forgets connection `id` (its socket is gone).
    pub fn close(&mut self, id: u64) {
        if let Some(conn) = self.conns.remove(&id) {
            let node = &mut self.nodes[conn.node];
            for channel in &conn.channels {
                if let Some(subs) = node.subscribers.get_mut(channel) {
                    subs.remove(&id);
                }
            }
            for keys in node.tracking.values_mut() {
                keys.remove(&id);
            }
        }
    }

    /// Connection `id` unsubscribed from shard channel `channel` on its
    /// node: the `sunsubscribe` push that says so, with how many channels
    /// it has left.
    pub fn unsubscribe(&mut self, id: u64, channel: &[u8]) -> Reply {
        let left = match self.conns.get_mut(&id) {
            Some(c) => {
                c.channels.remove(channel);
                if let Some(subs) = self.nodes[c.node].subscribers.get_mut(channel) {
                    subs.remove(&id);
                    if subs.is_empty() {
                        self.nodes[c.node].subscribers.remove(channel);
                    }
                }
                c.channels.len()
            }
            None => 0,
        };
        Reply::Push(vec![
            Reply::text("sunsubscribe"),
            Reply::Bulk(channel.to_vec()),
            Reply::Int(left as i64),
        ])
    }

    /// Sends every reply of `replies` on connection `id` but the last,
    /// which is the command's own.
    pub fn send_all_but_last(&mut self, id: u64, mut replies: Vec<Reply>) -> Option<Reply> {
        let last = replies.pop();
        for reply in &replies {
            self.send(id, reply);
        }
        last
    }

    /// Queues `reply` on connection `id`.
    pub fn send(&mut self, id: u64, reply: &Reply) {
        if let Some(conn) = self.conns.get_mut(&id) {
            let mut bytes = Vec::new();
            reply.write(conn.proto, &mut bytes);
            conn.out.push_back((now(), bytes));
            conn.wake.notify_one();
        }
    }

    /// Closes every client connection of node `i`.
    pub fn cut_connections(&mut self, i: usize) -> u64 {
        self.nodes[i].generation += 1;
        let mut cut = 0;
        for conn in self.conns.values_mut() {
            if conn.node == i && !conn.closed {
                conn.closed = true;
                cut += 1;
            }
        }
        self.poke(i);
        cut
    }
}
