//! Each node's own view of the cluster, learnt from the others a node
//! at a time, and spares joining.

use super::*;

impl Model {
    /// A new truth: `change` applied to the configuration.
    pub fn reconfigure(&mut self, change: impl FnOnce(&mut Layout)) {
        let mut layout = (*self.truth).clone();
        layout.ranges = std::cell::OnceCell::new();
        change(&mut layout);
        self.truth = Rc::new(layout);
    }

    /// The truth as node `i` can know it: whole, or, for a node that
    /// joined lately, the slots of the masters it has heard from and its
    /// own.
    pub(super) fn known_to(&self, i: usize) -> Rc<Layout> {
        let Some(heard) = &self.nodes[i].heard else {
            return self.truth.clone();
        };
        let mut layout = (*self.truth).clone();
        layout.ranges = std::cell::OnceCell::new();
        for owner in &mut layout.owner {
            if owner.is_some_and(|o| o != i && !heard.contains(&o)) {
                *owner = None;
            }
        }
        Rc::new(layout)
    }

    /// Node `i` learns the truth now, as far as it can know it (as it does
    /// when it gossips, or when a command of its own changed it).
    pub fn learn(&mut self, i: usize) {
        if Rc::ptr_eq(&self.nodes[i].view, &self.truth) {
            return;
        }
        let new = self.known_to(i);
        let old = std::mem::replace(&mut self.nodes[i].view, new.clone());
        let was_master = old.is_master(i);
        // Shard channels of slots it no longer serves are unsubscribed, as
        // Redis does when a slot leaves a node.
        let lost: Vec<Vec<u8>> = self.nodes[i]
            .subscribers
            .keys()
            .filter(|c| {
                let slot = usize::from(zaris_core::slot_for_key(c));
                new.owner[slot] != Some(i) && new.master_of[i] != new.owner[slot]
            })
            .cloned()
            .collect();
        for channel in lost {
            let subs = self.nodes[i]
                .subscribers
                .get(&channel)
                .cloned()
                .unwrap_or_default();
            for id in subs {
                let told = self.unsubscribe(id, &channel);
                self.send(id, &told);
                self.count(Effect::Sunsubscribed, 1);
            }
        }
        if was_master && !new.is_master(i) {
            if let Some(m) = new.master_of[i] {
                self.trace
                    .note(now(), "demoted", i, &format!("replica of node {m}"));
                self.full_sync(i, m);
            }
        }
        self.nodes[i]
            .migrating
            .retain(|&s, _| new.owner[usize::from(s)] == Some(i));
        self.nodes[i]
            .importing
            .retain(|&s, _| new.owner[usize::from(s)] != Some(i));
        self.poke(i);
    }

    /// A node that joined lately hears, this gossip round, from each
    /// master it has not heard from with even odds (a master's ping
    /// reaches it once one of them has heard of the other by gossip), and
    /// from then on knows its slots.
    pub(super) fn hear_some(&mut self, i: usize) {
        if self.nodes[i].heard.is_none() {
            return;
        }
        let mut heard = self.nodes[i].heard.take().unwrap_or_default();
        let unheard: Vec<usize> = self
            .truth
            .owners()
            .filter(|o| *o != i && !heard.contains(o))
            .collect();
        let deaf = self.nodes[i].deaf_to.filter(|&(_, until)| now() < until);
        let mut left = false;
        for o in unheard {
            if deaf.is_some_and(|(d, _)| d == o) {
                left = true;
            } else if self.below(2) == 0 {
                heard.insert(o);
            } else {
                left = true;
            }
        }
        self.nodes[i].heard = left.then_some(heard);
    }

    /// Starts a spare node as a new, empty node (one never started before
    /// first, so its address is new to the cluster), a member with no
    /// slots that knows the slots of the masters in `heard` (`None`: of
    /// all); its index.
    ///
    /// # Errors
    /// No spare is left.
    pub fn join_spare(&mut self, heard: Option<BTreeSet<usize>>) -> std::io::Result<usize> {
        let i = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].life == Life::Off && !self.truth.member[i])
            .min_by_key(|&i| (self.nodes[i].joined, i))
            .ok_or_else(|| std::io::Error::other("no spare node"))?;
        let node = &mut self.nodes[i];
        node.life = Life::Up;
        node.joined += 1;
        node.heard = heard;
        node.deaf_to = None;
        node.wipe();
        self.reconfigure(|l| {
            l.member[i] = true;
            l.master_of[i] = None;
            l.failed[i] = false;
        });
        self.learn(i);
        Ok(i)
    }
}
