//! The soak's nemesis steps on the model: the same [`Churn`] the real
//! cluster implements with processes, signals and proxies, here as
//! changes of the model's state, each awaited in simulated time as long
//! as the real step takes to take effect.

use std::collections::BTreeSet;
use std::io;
use std::time::Duration;

use zaris_tests::proxy::Faults;
use zaris_tests::soak::{Churn, EventKind};

use crate::effect::Effect;
use crate::model::{now, Life, Shared};

/// How long any convergence may take before the step gives up.
const CONVERGE: Duration = Duration::from_secs(30);

/// The model cluster as the nemesis drives it.
pub struct SimCluster {
    model: Shared,
}

impl SimCluster {
    /// The nemesis's handle on `model`.
    #[must_use]
    pub fn new(model: Shared) -> Self {
        Self { model }
    }

    /// Polls `done` every 10 ms of simulated time until it holds, or fails
    /// with `what` after [`CONVERGE`].
    async fn converge(
        &self,
        what: &str,
        mut done: impl FnMut(&crate::model::Model) -> bool,
    ) -> io::Result<()> {
        let give_up = now() + CONVERGE;
        loop {
            if done(&self.model.borrow()) {
                return Ok(());
            }
            if now() >= give_up {
                return Err(io::Error::other(format!("{what}: not within {CONVERGE:?}")));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn note(&self, kind: &str, node: usize, what: &str) {
        self.model.borrow_mut().trace.note(now(), kind, node, what);
    }
}

impl Churn for SimCluster {
    fn starting(&mut self, kind: Option<EventKind>) {
        let mut m = self.model.borrow_mut();
        m.current = kind;
        if let Some(kind) = kind {
            m.took.push((kind, crate::model::Counts::new()));
        }
    }

    async fn owner_index(&self, slot: u16) -> io::Result<usize> {
        self.model.borrow().truth.owner[usize::from(slot)]
            .ok_or_else(|| io::Error::other(format!("slot {slot} has no owner")))
    }

    async fn replica_of(&self, m: usize) -> io::Result<usize> {
        let model = self.model.borrow();
        let mut replicas = model.truth.replicas(m);
        replicas
            .next()
            .ok_or_else(|| io::Error::other(format!("node {m} has no replica")))
    }

    async fn failover(&self, replica: usize) -> io::Result<()> {
        let master = self.model.borrow().truth.master_of[replica]
            .ok_or_else(|| io::Error::other(format!("node {replica} is no replica")))?;
        if !self.model.borrow().nodes[master].reachable() {
            return Err(io::Error::other(
                "CLUSTER FAILOVER: the master does not answer",
            ));
        }
        self.note("failover", replica, "manual failover");
        // The replica catches up; its acknowledgements reach the master,
        // whose waiting `WAIT`s answer; then it takes over, with the old
        // master's agreement.
        {
            let mut m = self.model.borrow_mut();
            while let Some((_, offset, write)) = m.nodes[replica].inbox.pop_front() {
                m.apply(replica, offset, write);
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let mut m = self.model.borrow_mut();
        m.promote(replica, master, true);
        m.learn(master);
        m.count(Effect::ManualFailovers, 1);
        Ok(())
    }

    async fn takeover(&self, replica: usize) -> io::Result<()> {
        let master = self.model.borrow().truth.master_of[replica]
            .ok_or_else(|| io::Error::other(format!("node {replica} is no replica")))?;
        self.note("takeover", replica, "forced takeover");
        let mut m = self.model.borrow_mut();
        m.promote(replica, master, false);
        m.count(Effect::ForcedTakeovers, 1);
        Ok(())
    }

    async fn wait_steps_down(&self, i: usize) -> io::Result<()> {
        self.converge("the old master steps down", |m| {
            !m.nodes[i].view.is_master(i) && m.nodes[i].syncing_until.is_none_or(|t| t <= now())
        })
        .await
    }

    async fn kill(&mut self, i: usize) {
        self.note("kill", i, "kill -9");
        let mut m = self.model.borrow_mut();
        m.nodes[i].life = Life::Dead;
        let cut = m.cut_connections(i);
        m.count(Effect::ConnectionsCutByAKill, cut);
    }

    async fn freeze(&mut self, i: usize) -> io::Result<()> {
        self.note("freeze", i, "SIGSTOP");
        let mut m = self.model.borrow_mut();
        m.nodes[i].frozen = true;
        m.poke(i);
        Ok(())
    }

    async fn thaw(&mut self, i: usize) -> io::Result<()> {
        self.note("thaw", i, "SIGCONT");
        let mut m = self.model.borrow_mut();
        m.nodes[i].frozen = false;
        m.poke(i);
        Ok(())
    }

    async fn wait_failover_of(&self, dead: usize, slot: u16) -> io::Result<usize> {
        let slot = usize::from(slot);
        self.converge("a replica takes over", |m| {
            m.truth.owner[slot].is_some_and(|o| o != dead && m.nodes[o].reachable())
        })
        .await?;
        self.owner_index(slot as u16).await
    }

    async fn restart(&mut self, i: usize, slot: u16) -> io::Result<()> {
        let owner = self.owner_index(slot).await?;
        self.note("restart", i, &format!("as a replica of node {owner}"));
        let mut m = self.model.borrow_mut();
        let node = &mut m.nodes[i];
        node.life = Life::Up;
        node.wipe();
        m.reconfigure(|l| l.master_of[i] = Some(owner));
        m.nodes[i].view = m.truth.clone();
        m.full_sync(i, owner);
        m.poke(i);
        Ok(())
    }

    async fn add_master(&mut self) -> io::Result<usize> {
        // The harness's step waits until the new master sees the cluster
        // whole: it has heard from every master.
        let mut m = self.model.borrow_mut();
        let i = m.join_spare(None)?;
        m.count(Effect::MastersAdded, 1);
        m.trace.note(now(), "join", i, "a new master, no slots");
        Ok(i)
    }

    async fn add_replica(&mut self, master: usize) -> io::Result<usize> {
        let i = {
            let mut m = self.model.borrow_mut();
            // It meets its master, and hears from the others by gossip.
            let i = m.join_spare(Some(BTreeSet::from([master])))?;
            m.reconfigure(|l| l.master_of[i] = Some(master));
            // One new node in three finds its bus to another master
            // blocked for 1 to 15 s (a firewall that lets only the old
            // addresses through, until the operator mends it): it knows
            // that master's slots only then, or once another node takes
            // them over. Longer than a request's 10 s, a partial view is
            // one a client must not route by.
            let others: Vec<usize> = m
                .truth
                .owners()
                .filter(|&o| o != master && m.truth.is_master(o))
                .collect();
            if !others.is_empty() && m.below(3) == 0 {
                let deaf = others[m.below(others.len() as u64) as usize];
                let ms = 1_000 + m.below(14_001);
                m.nodes[i].deaf_to = Some((deaf, now() + Duration::from_millis(ms)));
                m.count(Effect::NewNodesDeafToAMaster, 1);
                m.trace.note(
                    now(),
                    "bus-blocked",
                    i,
                    &format!(
                        "hears nothing from node {deaf} for {:.1} s",
                        ms as f64 / 1e3
                    ),
                );
            }
            m.learn(i);
            m.full_sync(i, master);
            m.poke(i);
            m.count(Effect::NodesJoinedAtANewAddress, 1);
            m.trace.note(
                now(),
                "join",
                i,
                &format!("a new node, replica of node {master}"),
            );
            i
        };
        // An operator's tool goes on once the replica is in sync
        // (`master_link_status:up`), whatever the node has heard by then.
        self.converge("the new replica is in sync", |m| {
            m.nodes[i].syncing_until.is_none_or(|t| t <= now())
        })
        .await?;
        Ok(i)
    }

    async fn forget_node(&mut self, i: usize) -> io::Result<()> {
        let mut m = self.model.borrow_mut();
        if !m.truth.ranges(i).is_empty() {
            return Err(io::Error::other(format!("node {i} still serves slots")));
        }
        m.reconfigure(|l| {
            l.member[i] = false;
            l.master_of[i] = None;
        });
        m.nodes[i].life = Life::Off;
        let cut = m.cut_connections(i);
        m.count(Effect::ConnectionsCutByANodeForgotten, cut);
        m.trace.note(now(), "forget", i, "forgotten and stopped");
        Ok(())
    }

    async fn begin_migration(&self, slot: u16, from: usize, to: usize) -> io::Result<()> {
        let mut m = self.model.borrow_mut();
        m.nodes[to].importing.insert(slot, from);
        m.nodes[from].migrating.insert(slot, to);
        m.trace.note(
            now(),
            "migrating",
            from,
            &format!("slot {slot} to node {to}"),
        );
        Ok(())
    }

    async fn migrate_keys(&self, from: usize, to: usize, keys: &[Vec<u8>]) -> io::Result<()> {
        let mut m = self.model.borrow_mut();
        for key in keys {
            let Some(entry) = m.nodes[from].data.get(key).cloned() else {
                continue;
            };
            // MIGRATE: RESTORE on the target, then DEL on the source, each
            // a write replicated on its side.
            m.nodes[to].data.insert(key.clone(), entry.clone());
            m.wrote(to, None, vec![(key.clone(), Some(entry))]);
            m.nodes[from].data.remove(key);
            m.wrote(from, None, vec![(key.clone(), None)]);
            m.count(Effect::KeysMigrated, 1);
        }
        Ok(())
    }

    async fn keys_in_slot(&self, i: usize, slot: u16) -> io::Result<Vec<Vec<u8>>> {
        Ok(self.model.borrow().keys_in(i, slot, 100))
    }

    async fn finish_migration(&self, slot: u16, to: usize) -> io::Result<()> {
        let mut m = self.model.borrow_mut();
        let from = m.truth.owner[usize::from(slot)];
        // SETSLOT NODE on the target (its epoch bumped), then the source;
        // the others hear it by gossip.
        m.current_epoch += 1;
        let epoch = m.current_epoch;
        m.reconfigure(|l| {
            l.owner[usize::from(slot)] = Some(to);
            l.epoch[to] = epoch;
        });
        m.nodes[to].importing.remove(&slot);
        m.learn(to);
        if let Some(from) = from {
            m.nodes[from].migrating.remove(&slot);
            m.learn(from);
        }
        m.trace.note(
            now(),
            "slot-moved",
            to,
            &format!("slot {slot}, epoch {epoch}"),
        );
        Ok(())
    }

    async fn move_slot(&self, slot: u16, to: usize) -> io::Result<()> {
        // An atomic hand-over, as Valkey 9's slot migration does: the
        // keys and the ownership move in one step.
        let from = self.owner_index(slot).await?;
        let keys = self.model.borrow().keys_in(from, slot, usize::MAX);
        self.migrate_keys(from, to, &keys).await?;
        self.model
            .borrow_mut()
            .count(Effect::AtomicSlotHandOvers, 1);
        self.finish_migration(slot, to).await
    }

    async fn fault(&self, i: usize, faults: Faults) -> io::Result<()> {
        self.note("fault", i, &format!("{faults:?}"));
        let mut m = self.model.borrow_mut();
        m.nodes[i].faults = faults;
        m.poke(i);
        Ok(())
    }

    async fn partition(&self, i: usize, cut: bool) -> io::Result<()> {
        self.note("partition", i, if cut { "cut off" } else { "joined again" });
        let mut m = self.model.borrow_mut();
        m.nodes[i].partitioned = cut;
        m.poke(i);
        Ok(())
    }

    async fn drop_connections(&self, i: usize) -> io::Result<()> {
        self.note("drop", i, "every client connection closed");
        let mut m = self.model.borrow_mut();
        let cut = m.cut_connections(i);
        m.count(Effect::ConnectionsDropped, cut);
        Ok(())
    }

    async fn pause_writes(&self, i: usize, pause: Duration) -> io::Result<()> {
        self.note("write-pause", i, &format!("{} ms", pause.as_millis()));
        let mut m = self.model.borrow_mut();
        m.nodes[i].paused = Some((now() + pause, None));
        m.count(Effect::WritePauses, 1);
        Ok(())
    }

    async fn atomic_migration(
        &self,
        slot: u16,
        to: usize,
        pause: Duration,
        final_sync: Duration,
    ) -> io::Result<bool> {
        // The target imports in the background, the keys invisible there
        // (it does not serve the slot); then the source pauses the slot's
        // writes for the final sync, and hands the slot over, or gives the
        // migration up past its pause time-out.
        let from = self.owner_index(slot).await?;
        self.note(
            "atomic-migration",
            from,
            &format!(
                "slot {slot} to node {to}, final sync {} ms",
                final_sync.as_millis()
            ),
        );
        self.model.borrow_mut().nodes[from].paused = Some((now() + pause, Some(slot)));
        tokio::time::sleep(final_sync.min(pause)).await;
        if final_sync > pause {
            let mut m = self.model.borrow_mut();
            m.nodes[from].paused = None;
            m.poke(from);
            m.count(Effect::AtomicMigrationsGivenUp, 1);
            return Ok(false);
        }
        let keys = self.model.borrow().keys_in(from, slot, usize::MAX);
        self.migrate_keys(from, to, &keys).await?;
        self.finish_migration(slot, to).await?;
        let mut m = self.model.borrow_mut();
        m.nodes[from].paused = None;
        m.poke(from);
        m.count(Effect::AtomicSlotMigrations, 1);
        Ok(true)
    }

    async fn wait_healthy(&self) -> io::Result<()> {
        self.converge("the cluster healthy again", |m| {
            let t = &m.truth;
            let served = t
                .owner
                .iter()
                .all(|o| o.is_some_and(|o| m.nodes[o].reachable() && !t.failed[o]));
            let settled = (0..m.nodes.len()).filter(|&i| t.member[i]).all(|i| {
                let n = &m.nodes[i];
                n.reachable()
                    && std::rc::Rc::ptr_eq(&n.view, &m.truth)
                    && n.syncing_until.is_none_or(|s| s <= now())
                    && n.migrating.is_empty()
                    && n.importing.is_empty()
            });
            served && settled
        })
        .await
    }
}
