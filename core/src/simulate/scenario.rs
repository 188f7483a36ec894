//! What a churn run simulates: the cluster (masters, each with one
//! replica, the slots split as `redis-cli` splits them), the one ownership
//! event that unfolds and the load; who owns each slot at each moment
//! ([`ChurnScenario::owner_at`]), the event's milestones in words' worth
//! of data ([`ChurnScenario::milestones`]), and why a scenario cannot run
//! ([`ChurnError`], checked before anything runs).

use core::time::Duration;

use crate::SLOT_COUNT;

/// The most requests one simulation runs (rate times duration).
pub const MAX_CHURN_REQUESTS: usize = 2048;
/// The most masters (each has one replica).
pub const MAX_CHURN_MASTERS: u8 = 8;

/// What happens to the cluster at [`ChurnScenario::event_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ChurnEvent {
    /// A manual failover: the master's replica takes over at once; the old
    /// master answers `MOVED` for its slots.
    Failover {
        /// The master, from 0.
        master: u8,
    },
    /// The master is killed: connections refused, its slots unserved until
    /// the cluster fails it over ([`ChurnScenario::failover_after`]).
    Kill {
        /// The master, from 0.
        master: u8,
    },
    /// Slots `first..=last` of master `from` move to master `to`: those
    /// without keys at once, those with keys one per
    /// [`ChurnScenario::step`]; while a slot moves, half its keys have gone
    /// (`ASK`), and a two-key command's keys are split (`TRYAGAIN`).
    Migrate {
        /// The source master.
        from: u8,
        /// The target master.
        to: u8,
        /// The first slot.
        first: u16,
        /// The last slot, inclusive.
        last: u16,
    },
    /// One slot moves to master `to` and back after
    /// [`ChurnScenario::bounce_back`].
    Bounce {
        /// The slot.
        slot: u16,
        /// Where it goes for a while.
        to: u8,
    },
}

/// The cluster, the event and the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChurnScenario {
    /// Masters, the slots split between them as `redis-cli` splits them.
    pub masters: u8,
    /// The event.
    pub event: ChurnEvent,
    /// When it happens.
    pub event_at: Duration,
    /// How long requests keep coming.
    pub duration: Duration,
    /// Requests per second, each to one of [`Self::keys`] keys in turn.
    pub rate: u32,
    /// Distinct keys, their slots evenly spread over the range (key `k`
    /// in slot [`ChurnScenario::slot_of_key`]).
    pub keys: u16,
    /// One round trip.
    pub rtt: Duration,
    /// A killed master's replica takes over this long after the kill.
    pub failover_after: Duration,
    /// A migration moves one slot with keys per step.
    pub step: Duration,
    /// A bounced slot comes back after this long.
    pub bounce_back: Duration,
    /// A map refresh takes this long.
    pub refresh_latency: Duration,
}

impl ChurnScenario {
    /// Three masters, the event at 1 s, 400 requests a second over 64
    /// keys for 5 s, a 1 ms round trip, a killed master failed over after
    /// 2 s, a migration step of 200 ms a slot with keys, a bounce back
    /// after 200 ms, 2 ms refreshes.
    #[must_use]
    pub const fn new(event: ChurnEvent) -> Self {
        Self {
            masters: 3,
            event,
            event_at: Duration::from_secs(1),
            duration: Duration::from_secs(5),
            rate: 400,
            keys: 64,
            rtt: Duration::from_millis(1),
            failover_after: Duration::from_secs(2),
            step: Duration::from_millis(200),
            bounce_back: Duration::from_millis(200),
            refresh_latency: Duration::from_millis(2),
        }
    }
}

impl ChurnScenario {
    /// The slot of key `k` (`k < keys`): evenly spread, 7 past each step.
    #[must_use]
    pub fn slot_of_key(&self, k: u16) -> u16 {
        let spacing = u32::from(SLOT_COUNT) / u32::from(self.keys.max(1));
        ((u32::from(k) * spacing + 7) % u32::from(SLOT_COUNT)) as u16
    }

    /// The key request `i` goes to.
    #[must_use]
    pub fn key_of_request(&self, i: u32) -> u16 {
        ((u64::from(i) * 97) % u64::from(self.keys.max(1))) as u16
    }
}

impl ChurnScenario {
    /// The slots `redis-cli` gives `master`: `(first, last)`, inclusive.
    #[must_use]
    pub fn slots_of(&self, master: u8) -> (u16, u16) {
        let masters = u32::from(self.masters.max(1));
        let per = u32::from(SLOT_COUNT) / masters;
        let first = u32::from(master) * per;
        let last = if u32::from(master) + 1 >= masters {
            u32::from(SLOT_COUNT) - 1
        } else {
            first + per - 1
        };
        (first as u16, last as u16)
    }

    /// The master `redis-cli` gives `slot`.
    pub(crate) fn split_owner(&self, slot: u16) -> u8 {
        let per = u32::from(SLOT_COUNT) / u32::from(self.masters.max(1));
        ((u32::from(slot) / per) as u8).min(self.masters.saturating_sub(1))
    }

    /// Whether the scenario can run, and if not, exactly why.
    ///
    /// # Errors
    /// The first thing wrong with it.
    pub fn check(&self) -> Result<(), ChurnError> {
        if self.masters == 0 || self.masters > MAX_CHURN_MASTERS {
            return Err(ChurnError::Masters(self.masters));
        }
        let master = |m: u8| {
            if m < self.masters {
                Ok(())
            } else {
                Err(ChurnError::NoSuchMaster {
                    master: m,
                    masters: self.masters,
                })
            }
        };
        let slots = |first: u16, last: u16| {
            if first <= last && last < SLOT_COUNT {
                Ok(())
            } else {
                Err(ChurnError::SlotRange { first, last })
            }
        };
        match self.event {
            ChurnEvent::Failover { master: m } | ChurnEvent::Kill { master: m } => master(m)?,
            ChurnEvent::Migrate {
                from,
                to,
                first,
                last,
            } => {
                master(from)?;
                master(to)?;
                slots(first, last)?;
                let (owns_first, owns_last) = self.slots_of(from);
                if first < owns_first || last > owns_last {
                    return Err(ChurnError::NotOwned {
                        master: from,
                        first,
                        last,
                        owns: (owns_first, owns_last),
                    });
                }
                if from == to {
                    return Err(ChurnError::AlreadyThere { master: to });
                }
            }
            ChurnEvent::Bounce { slot, to } => {
                master(to)?;
                slots(slot, slot)?;
                if self.split_owner(slot) == to {
                    return Err(ChurnError::AlreadyThere { master: to });
                }
            }
        }
        let count = u64::from(self.rate).saturating_mul(self.duration.as_millis() as u64) / 1000;
        if count > MAX_CHURN_REQUESTS as u64 {
            return Err(ChurnError::TooManyRequests);
        }
        Ok(())
    }

    /// Who serves `slot` at `t` (`None`: no one, a dead master not yet
    /// replaced), and where it is migrating to. Nodes are numbered as the
    /// run's lanes: masters `0..masters`, then their replicas in order.
    #[must_use]
    pub fn owner_at(&self, slot: u16, t: Duration) -> (Option<u8>, Option<u8>) {
        let base = self.split_owner(slot);
        let at = self.event_at;
        match self.event {
            ChurnEvent::Failover { master } if base == master && t >= at => {
                (Some(self.masters + master), None)
            }
            ChurnEvent::Kill { master } if base == master && t >= at => {
                if t < at + self.failover_after {
                    (None, None)
                } else {
                    (Some(self.masters + master), None)
                }
            }
            ChurnEvent::Migrate {
                from,
                to,
                first,
                last,
            } if base == from && (first..=last).contains(&slot) => {
                // Slots with keys move one per step, in order; the others
                // at once.
                let Some(k) = self.key_rank(first, slot) else {
                    return if t < at {
                        (Some(from), None)
                    } else {
                        (Some(to), None)
                    };
                };
                let start = at + self.step * k;
                if t < start {
                    (Some(from), None)
                } else if t < start + self.step {
                    (Some(from), Some(to))
                } else {
                    (Some(to), None)
                }
            }
            ChurnEvent::Bounce { slot: bounced, to }
                if slot == bounced && t >= at && t < at + self.bounce_back =>
            {
                (Some(to), None)
            }
            _ => (Some(base), None),
        }
    }

    /// The event's milestones, in time order, each handed to `each`: when
    /// ownership changes in the cluster (not what a client has learnt).
    pub fn milestones(&self, mut each: impl FnMut(Duration, Milestone)) {
        let at = self.event_at;
        match self.event {
            ChurnEvent::Failover { master } => each(
                at,
                Milestone::FailedOver {
                    master,
                    replica: self.masters + master,
                },
            ),
            ChurnEvent::Kill { master } => {
                each(at, Milestone::Killed { master });
                each(
                    at + self.failover_after,
                    Milestone::FailedOver {
                        master,
                        replica: self.masters + master,
                    },
                );
            }
            ChurnEvent::Migrate {
                from,
                to,
                first,
                last,
            } => {
                let keyed = (first..=last)
                    .filter(|&slot| self.key_rank(first, slot).is_some())
                    .count() as u16;
                each(
                    at,
                    Milestone::EmptySlotsMoved {
                        from,
                        to,
                        first,
                        last,
                        keyed,
                    },
                );
                for slot in first..=last {
                    if let Some(k) = self.key_rank(first, slot) {
                        let start = at + self.step * k;
                        each(start, Milestone::Migrating { slot, from, to });
                        each(start + self.step, Milestone::Migrated { slot, from, to });
                    }
                }
            }
            ChurnEvent::Bounce { slot, to } => {
                let home = self.split_owner(slot);
                each(
                    at,
                    Milestone::Migrated {
                        slot,
                        from: home,
                        to,
                    },
                );
                each(
                    at + self.bounce_back,
                    Milestone::Migrated {
                        slot,
                        from: to,
                        to: home,
                    },
                );
            }
        }
    }

    /// Among the slots with keys from `first` on, which one `slot` is
    /// (from 0); `None` when it holds no key. Arithmetic, not a walk over
    /// the slots: it is asked for every slot of every map the simulation
    /// and the player draw.
    pub(crate) fn key_rank(&self, first: u16, slot: u16) -> Option<u32> {
        let spacing = u32::from(SLOT_COUNT) / u32::from(self.keys.max(1));
        let s = u32::from(slot);
        if s < 7 || !(s - 7).is_multiple_of(spacing) || (s - 7) / spacing >= u32::from(self.keys) {
            return None;
        }
        // Key `k` sits at slot `7 + k * spacing`: the keys before `first`
        // are those with `k < ceil((first - 7) / spacing)`.
        let before = u32::from(first).saturating_sub(7).div_ceil(spacing);
        Some(((s - 7) / spacing).saturating_sub(before))
    }
}

/// A moment of the event ([`ChurnScenario::milestones`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Milestone {
    /// The master is killed: its slots are served by no one.
    Killed {
        /// The master.
        master: u8,
    },
    /// The master's replica (node `replica`) takes its slots over.
    FailedOver {
        /// The master.
        master: u8,
        /// The replica, numbered as the lanes are.
        replica: u8,
    },
    /// Of slots `first..=last`, those without keys (all but `keyed`) move
    /// from `from` to `to` at once.
    EmptySlotsMoved {
        /// The source master.
        from: u8,
        /// The target master.
        to: u8,
        /// The first slot.
        first: u16,
        /// The last slot.
        last: u16,
        /// How many of them hold keys, and move one step at a time.
        keyed: u16,
    },
    /// A slot with keys begins to move: its keys go over one by one.
    Migrating {
        /// The slot.
        slot: u16,
        /// The source master.
        from: u8,
        /// The target master.
        to: u8,
    },
    /// A slot has moved.
    Migrated {
        /// The slot.
        slot: u16,
        /// Where it was.
        from: u8,
        /// Where it is.
        to: u8,
    },
}

/// Why a scenario cannot run ([`ChurnScenario::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChurnError {
    /// Rate times duration is over [`MAX_CHURN_REQUESTS`].
    TooManyRequests,
    /// No masters, or more than [`MAX_CHURN_MASTERS`].
    Masters(u8),
    /// The event names a master the cluster has not got.
    NoSuchMaster {
        /// The master named.
        master: u8,
        /// How many the cluster has.
        masters: u8,
    },
    /// Not a range of slots `0..=16383`.
    SlotRange {
        /// The first slot.
        first: u16,
        /// The last slot.
        last: u16,
    },
    /// A migration of slots its source does not own.
    NotOwned {
        /// The source.
        master: u8,
        /// The first slot.
        first: u16,
        /// The last slot.
        last: u16,
        /// The slots it owns, inclusive.
        owns: (u16, u16),
    },
    /// Slots moved to the master that owns them already.
    AlreadyThere {
        /// The master.
        master: u8,
    },
}

impl core::fmt::Display for ChurnError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            ChurnError::TooManyRequests => write!(
                f,
                "rate times duration is over {MAX_CHURN_REQUESTS} requests"
            ),
            ChurnError::Masters(n) => write!(
                f,
                "a cluster of {n} masters: the simulation runs 1 to {MAX_CHURN_MASTERS}"
            ),
            ChurnError::NoSuchMaster { master, masters } => write!(
                f,
                "there is no master {master}: the cluster has masters 0 to {}",
                masters.saturating_sub(1)
            ),
            ChurnError::SlotRange { first, last } if first == last => {
                write!(f, "there is no slot {first}: slots are 0 to 16383")
            }
            ChurnError::SlotRange { first, last } => write!(
                f,
                "slots {first} to {last} are not a range within 0 to 16383"
            ),
            ChurnError::NotOwned {
                master,
                first,
                last,
                owns: (a, b),
            } => write!(
                f,
                "master {master} owns slots {a} to {b}, so it cannot migrate {first} to {last}"
            ),
            ChurnError::AlreadyThere { master } => write!(
                f,
                "master {master} owns those slots already: pick another master to move them to"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(event: ChurnEvent) -> ChurnScenario {
        ChurnScenario::new(event)
    }

    #[test]
    fn each_way_a_scenario_can_be_wrong_has_its_own_error() {
        let migrate = |from, to, first, last| {
            scenario(ChurnEvent::Migrate {
                from,
                to,
                first,
                last,
            })
            .check()
        };
        assert_eq!(migrate(0, 1, 0, 1023), Ok(()));
        assert_eq!(
            migrate(2, 1, 0, 1023),
            Err(ChurnError::NotOwned {
                master: 2,
                first: 0,
                last: 1023,
                owns: (10922, 16383)
            })
        );
        assert_eq!(
            migrate(0, 0, 0, 10),
            Err(ChurnError::AlreadyThere { master: 0 })
        );
        assert_eq!(
            migrate(0, 1, 10, 9),
            Err(ChurnError::SlotRange { first: 10, last: 9 })
        );
        assert_eq!(
            migrate(0, 3, 0, 9),
            Err(ChurnError::NoSuchMaster {
                master: 3,
                masters: 3
            })
        );
        let bounce = |slot, to| scenario(ChurnEvent::Bounce { slot, to }).check();
        assert_eq!(bounce(7, 1), Ok(()));
        assert_eq!(bounce(7, 0), Err(ChurnError::AlreadyThere { master: 0 }));
        assert_eq!(
            bounce(16384, 1),
            Err(ChurnError::SlotRange {
                first: 16384,
                last: 16384
            })
        );
        let mut none = scenario(ChurnEvent::Kill { master: 0 });
        none.masters = 0;
        assert_eq!(none.check(), Err(ChurnError::Masters(0)));
        // Every message names what is wrong, with its numbers.
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            bounce(16384, 1).unwrap_err().to_string(),
            "there is no slot 16384: slots are 0 to 16383"
        );
        assert_eq!(
            ChurnError::NoSuchMaster {
                master: 7,
                masters: 3
            }
            .to_string(),
            "there is no master 7: the cluster has masters 0 to 2"
        );
    }

    #[test]
    fn a_key_rank_counts_the_keyed_slots_from_first() {
        let s = scenario(ChurnEvent::Kill { master: 0 });
        let mut keyed = [false; SLOT_COUNT as usize];
        for k in 0..s.keys {
            keyed[usize::from(s.slot_of_key(k))] = true;
        }
        let holds = |slot: u16| keyed[usize::from(slot)];
        for first in [0, 6, 7, 8, 262, 263, 264, 1023, 5461, 16383] {
            for slot in (first..SLOT_COUNT)
                .step_by(37)
                .chain((0..s.keys).map(|k| s.slot_of_key(k)))
            {
                if slot < first {
                    continue;
                }
                let walked =
                    holds(slot).then(|| (first..slot).filter(|&x| holds(x)).count() as u32);
                assert_eq!(
                    s.key_rank(first, slot),
                    walked,
                    "first {first}, slot {slot}"
                );
            }
        }
    }

    #[test]
    fn the_slots_split_as_the_owners_say() {
        let s = scenario(ChurnEvent::Kill { master: 0 });
        for m in 0..3 {
            let (first, last) = s.slots_of(m);
            assert_eq!(s.split_owner(first), m);
            assert_eq!(s.split_owner(last), m);
        }
        assert_eq!(s.slots_of(2).1, 16383);
    }

    #[test]
    fn milestones_follow_ownership() {
        let s = scenario(ChurnEvent::Migrate {
            from: 0,
            to: 1,
            first: 0,
            last: 1023,
        });
        let mut seen: heapless::Vec<(Duration, Milestone), 16> = heapless::Vec::new();
        s.milestones(|at, m| seen.push((at, m)).unwrap());
        // 1024 slots hold 4 of the 64 keys (7, 263, 519, 775): 1 + 2 * 4.
        assert_eq!(seen.len(), 9);
        assert_eq!(
            seen[0].1,
            Milestone::EmptySlotsMoved {
                from: 0,
                to: 1,
                first: 0,
                last: 1023,
                keyed: 4
            }
        );
        for &(at, m) in &seen[1..] {
            let (Milestone::Migrating { slot, .. } | Milestone::Migrated { slot, .. }) = m else {
                panic!("{m:?}")
            };
            let (owner, moving) = s.owner_at(slot, at);
            match m {
                Milestone::Migrating { .. } => assert_eq!((owner, moving), (Some(0), Some(1))),
                _ => assert_eq!((owner, moving), (Some(1), None)),
            }
        }
    }
}
