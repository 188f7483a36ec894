//! Failures detected after the node time-out, and a replica promoted.

use super::*;

impl Model {
    /// A master the others have not reached for the node time-out (and the
    /// election's delay) is failed over to a replica they reach: what the
    /// replica had not received is lost, as in Redis.
    pub(super) fn detect_failures(&mut self, at: Duration) {
        for m in 0..self.nodes.len() {
            let Some(since) = self.nodes[m].unreachable_since else {
                if self.truth.failed[m] && self.nodes[m].reachable() {
                    self.reconfigure(|l| l.failed[m] = false);
                }
                continue;
            };
            let waited = at.saturating_sub(since);
            if waited >= NODE_TIMEOUT && !self.truth.failed[m] && self.truth.member[m] {
                self.reconfigure(|l| l.failed[m] = true);
                self.trace.note(at, "failed", m, "flagged failing");
            }
            // The election: half a second after the failure is agreed.
            if waited < NODE_TIMEOUT + Duration::from_millis(500) || !self.truth.is_master(m) {
                continue;
            }
            if self.truth.ranges(m).is_empty() {
                continue;
            }
            let candidate = self
                .truth
                .replicas(m)
                .find(|&r| self.nodes[r].reachable() && self.nodes[r].syncing_until.is_none());
            if let Some(r) = candidate {
                self.promote(r, m, false);
                self.count(Effect::AutomaticFailovers, 1);
            }
        }
    }

    /// Replica `r` takes over master `m`'s slots with a new epoch. In a
    /// manual failover it first applies everything `m` sent; otherwise
    /// what it had not received is lost.
    pub fn promote(&mut self, r: usize, m: usize, caught_up: bool) {
        if caught_up {
            while let Some((_, offset, effects)) = self.nodes[r].inbox.pop_front() {
                self.apply(r, offset, effects);
            }
        }
        let lost = self.nodes[r].inbox.len() as u64;
        self.nodes[r].inbox.clear();
        self.count(Effect::WritesLostInATakeover, lost);
        self.current_epoch += 1;
        let epoch = self.current_epoch;
        self.reconfigure(|l| {
            for owner in &mut l.owner {
                if *owner == Some(m) {
                    *owner = Some(r);
                }
            }
            l.master_of[r] = None;
            l.master_of[m] = Some(r);
            for other in 0..l.member.len() {
                if l.master_of[other] == Some(m) && other != r {
                    l.master_of[other] = Some(r);
                }
            }
            l.epoch[r] = epoch;
        });
        let node = &mut self.nodes[r];
        node.offset = node.applied;
        node.syncing_until = None;
        self.trace.note(
            now(),
            "promoted",
            r,
            &format!("takes node {m}'s slots, epoch {epoch}"),
        );
        self.learn(r);
    }
}
