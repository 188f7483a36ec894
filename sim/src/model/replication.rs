//! Writes replicated to each master's replicas with lag, full syncs, and
//! the invalidations a write sends.

use super::*;

impl Model {
    /// Replica `r` loads master `m`'s data whole: what it had is gone, its
    /// tracking clients told to drop everything.
    pub fn full_sync(&mut self, r: usize, m: usize) {
        let data = self.nodes[m].data.clone();
        let offset = self.nodes[m].offset;
        let node = &mut self.nodes[r];
        let lost = node.data.len();
        node.data = data;
        node.dirty.clear();
        node.inbox.clear();
        node.offset = 0;
        node.applied = offset;
        node.syncing_until = Some(now() + FULL_SYNC);
        let trackers: BTreeSet<u64> = node.tracking.values().flatten().copied().collect();
        node.tracking.clear();
        for id in trackers {
            self.send(
                id,
                &Reply::Push(vec![Reply::text("invalidate"), Reply::NilArray]),
            );
        }
        self.count(Effect::FullSyncs, 1);
        self.count(Effect::KeysDroppedByFullSync, lost as u64);
    }

    /// After a write on master `m` by `conn`: replicated (each replica gets
    /// it after its lag), watchers and trackers told, blocked commands
    /// woken.
    pub fn wrote(&mut self, m: usize, conn: Option<u64>, effects: Write) {
        if effects.is_empty() {
            return;
        }
        if let Some(batch) = &mut self.batch {
            batch.extend(effects);
            return;
        }
        let at = now();
        self.nodes[m].offset += 1;
        let offset = self.nodes[m].offset;
        if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
            c.last_write = offset;
        }
        let replicas: Vec<usize> = self.truth.replicas(m).collect();
        for r in replicas {
            if self.nodes[r].life == Life::Up {
                let lag = Duration::from_millis(1 + self.below(4));
                self.nodes[r]
                    .inbox
                    .push_back((at + lag, offset, effects.clone()));
            } else {
                self.count(Effect::WritesADeadReplicaMissed, 1);
            }
        }
        let node = &mut self.nodes[m];
        let mut told = BTreeSet::new();
        for (key, _) in &effects {
            *node.dirty.entry(key.clone()).or_default() += 1;
            if let Some(ids) = node.tracking.remove(key) {
                told.extend(ids.into_iter().map(|id| (id, key.clone())));
            }
        }
        node.written.notify_waiters();
        self.invalidate(told);
    }

    /// Tells each tracking connection that a key it read was written
    /// (`invalidate`, as a RESP3 push).
    pub(super) fn invalidate(&mut self, told: BTreeSet<(u64, Vec<u8>)>) {
        for (id, key) in told {
            self.send(
                id,
                &Reply::Push(vec![
                    Reply::text("invalidate"),
                    Reply::Array(vec![Reply::Bulk(key)]),
                ]),
            );
        }
    }

    /// The cluster's clockwork, once a tick: replication delivered, gossip
    /// heard, failures detected and failed over.
    pub fn tick(&mut self) {
        let at = now();
        for r in 0..self.nodes.len() {
            self.replicate(r, at);
        }
        for i in 0..self.nodes.len() {
            let node = &mut self.nodes[i];
            if node.life == Life::Off {
                continue;
            }
            if node.syncing_until.is_some_and(|t| t <= at) {
                node.syncing_until = None;
            }
            if node.reachable() {
                node.unreachable_since = None;
            } else if node.unreachable_since.is_none() {
                node.unreachable_since = Some(at);
            }
            if node.reachable() && at >= node.next_gossip {
                node.next_gossip = at + GOSSIP_EVERY;
                self.hear_some(i);
                self.learn(i);
            }
        }
        self.detect_failures(at);
    }

    /// Replica `r` applies what its master sent that is due, if the link
    /// between them is up.
    pub(super) fn replicate(&mut self, r: usize, at: Duration) {
        let Some(m) = self.truth.master_of[r] else {
            return;
        };
        if !self.nodes[r].reachable() || !self.nodes[m].reachable() {
            return;
        }
        while self.nodes[r]
            .inbox
            .front()
            .is_some_and(|(due, _, _)| *due <= at)
        {
            let Some((_, offset, effects)) = self.nodes[r].inbox.pop_front() else {
                break;
            };
            self.apply(r, offset, effects);
        }
    }

    /// Replica `r` applies one write.
    pub fn apply(&mut self, r: usize, offset: u64, effects: Write) {
        let node = &mut self.nodes[r];
        let mut told = BTreeSet::new();
        for (key, entry) in effects {
            if let Some(ids) = node.tracking.remove(&key) {
                told.extend(ids.into_iter().map(|id| (id, key.clone())));
            }
            match entry {
                Some(e) => node.data.insert(key, e),
                None => node.data.remove(&key),
            };
        }
        node.applied = offset;
        self.invalidate(told);
        // A master waiting on its replicas (`WAIT`) looks again.
        if let Some(m) = self.truth.master_of[r] {
            self.nodes[m].written.notify_waiters();
        }
    }
}
