//! The soak's nemesis: a churn event every few seconds, drawn from the
//! seed, run against the real cluster, and logged with its window.

use std::time::Duration;

use zaris_core::slot_for_key;

use super::workload::{register, COUNTERS, KEYS_PER_WRITER, LISTS, RARE_WRITER, WRITERS};
use super::{Clock, Rng};
use crate::cluster::Cluster;
use crate::proxy::{Faults, Flow};

/// The events the nemesis draws from.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// `CLUSTER FAILOVER` on a replica.
    ManualFailover,
    /// `CLUSTER FAILOVER TAKEOVER` on a replica: no agreement, no sync.
    ForcedTakeover,
    /// Four slots migrated step by step (`ASK`, `TRYAGAIN` meanwhile).
    MigrateRange,
    /// One slot moved away and back, twice, 250 ms apart.
    BackAndForth,
    /// A master added and given two of the workload's slots step by step,
    /// then drained back, forgotten and stopped.
    ScaleOutAndIn,
    /// `kill -9` of a master, its failover, its restart as a replica.
    KillMaster,
    /// `kill -9` of a replica and its restart.
    KillReplica,
    /// `SIGSTOP` of a master for 500 ms, under the node time-out.
    FreezeShort,
    /// `SIGSTOP` of a master until the cluster fails it over, and 2 s on.
    FreezeLong,
    /// 50 ms added to every reply of a master for 2 s (proxy).
    Latency,
    /// Every client connection to a master closed (proxy).
    DropConnections,
    /// A master cut off from the network until failed over, and 2 s on
    /// (proxy).
    Partition,
    /// A master's replies held for 1.5 s, requests still delivered (proxy).
    CutOneWay,
    /// A master's replies slowed to 2 KB/s for 2 s (proxy).
    Trickle,
}

impl EventKind {
    /// Every kind, in the order draws index them.
    pub const ALL: [EventKind; 14] = [
        EventKind::ManualFailover,
        EventKind::ForcedTakeover,
        EventKind::MigrateRange,
        EventKind::BackAndForth,
        EventKind::ScaleOutAndIn,
        EventKind::KillMaster,
        EventKind::KillReplica,
        EventKind::FreezeShort,
        EventKind::FreezeLong,
        EventKind::Latency,
        EventKind::DropConnections,
        EventKind::Partition,
        EventKind::CutOneWay,
        EventKind::Trickle,
    ];

    /// Whether acknowledged plain (not `WAIT`ed) writes may be lost in its
    /// window: the old master's last writes never reached the replica that
    /// replaced it without a sync.
    #[must_use]
    pub fn may_lose_plain_writes(self) -> bool {
        matches!(
            self,
            EventKind::KillMaster
                | EventKind::FreezeLong
                | EventKind::Partition
                | EventKind::ForcedTakeover
        )
    }
}

/// How long a long freeze or a partition lasts past the failover it
/// causes.
const OUTLASTS_FAILOVER: Duration = Duration::from_secs(2);

/// Moves `slot` from `from` to `to` as an operator's tool does: marked
/// importing and migrating, its keys moved fifty at a time with a pause (so
/// `ASK` and `TRYAGAIN` really happen meanwhile), then handed over.
fn migrate_step_by_step(c: &Cluster, slot: u16, from: usize, to: usize) -> std::io::Result<()> {
    c.begin_migration(slot, from, to)?;
    loop {
        let keys = c.keys_in_slot(from, slot)?;
        if keys.is_empty() {
            break;
        }
        for chunk in keys.chunks(50) {
            c.migrate_keys(from, to, chunk)?;
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    c.finish_migration(slot, to)
}

/// One event as it happened.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// What.
    pub kind: EventKind,
    /// The node it hit (the harness's index).
    pub node: usize,
    /// When it began and when the cluster was healthy again (ms).
    pub start_ms: f64,
    /// See `start_ms`.
    pub end_ms: f64,
    /// Empty, or what went wrong running it.
    pub trouble: String,
}

/// The event schedule a seed draws: the pause before each event, its kind
/// and which of the workload's slots it hits. It depends on the seed alone
/// (never on the cluster's state), so the same seed replays it.
#[derive(Clone, Debug)]
pub struct Schedule(Rng);

/// One drawn event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The pause before it (2-5 s).
    pub pause: Duration,
    /// What happens.
    pub kind: EventKind,
    /// Which of the workload's slots (an index, taken modulo their count).
    pub slot: usize,
}

impl Schedule {
    /// The schedule of `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(Rng(seed))
    }

    /// The next event.
    pub fn next_draw(&mut self) -> Draw {
        Draw {
            pause: Duration::from_millis(2_000 + self.0.below(3_000) as u64),
            kind: EventKind::ALL[self.0.below(EventKind::ALL.len())],
            slot: self.0.below(1 << 16),
        }
    }
}

pub(crate) struct Nemesis {
    cluster: Cluster,
    schedule: Schedule,
    /// Draws that depend on the cluster's state (which other master).
    rng: Rng,
    clock: Clock,
    events: Vec<Event>,
    hot_slots: Vec<u16>,
}

impl Nemesis {
    pub(crate) fn new(cluster: Cluster, seed: u64, clock: Clock) -> Self {
        // Slots the workload writes to: migrations there meet real keys.
        let mut keys: Vec<String> = Vec::new();
        for w in 0..WRITERS {
            for k in 0..KEYS_PER_WRITER {
                keys.push(register(true, &w.to_string(), k));
                keys.push(register(false, &w.to_string(), k));
            }
        }
        keys.extend((0..KEYS_PER_WRITER).map(|k| register(true, RARE_WRITER, k)));
        keys.extend(LISTS.iter().map(|l| (*l).to_owned()));
        keys.extend((0..COUNTERS).map(|i| format!("ctr:{i}")));
        let mut hot_slots: Vec<u16> = keys.iter().map(|k| slot_for_key(k.as_bytes())).collect();
        hot_slots.sort_unstable();
        hot_slots.dedup();
        Self {
            cluster,
            schedule: Schedule::new(seed),
            rng: Rng(seed ^ 0x005E_ED0F_07E5),
            clock,
            events: Vec::new(),
            hot_slots,
        }
    }

    pub(crate) fn events(&self) -> &[Event] {
        &self.events
    }

    pub(crate) fn finish(self) -> (Cluster, Vec<Event>) {
        (self.cluster, self.events)
    }

    /// A pause of 2-5 s (never past `left`), then one event.
    pub(crate) fn next_event(&mut self, left: Duration) {
        let Draw { pause, kind, slot } = self.schedule.next_draw();
        std::thread::sleep(pause.min(left));
        if left <= pause + Duration::from_secs(1) {
            return;
        }
        self.happen(kind, slot);
    }

    /// `kind` next, after `pause`, on a slot drawn from the seed: a
    /// scripted soak plays each kind it names.
    pub(crate) fn play(&mut self, kind: EventKind, pause: Duration) {
        let slot = self.schedule.next_draw().slot;
        std::thread::sleep(pause);
        self.happen(kind, slot);
    }

    /// `kind` on the workload's `slot`th slot, timed, the cluster healthy
    /// again after it.
    fn happen(&mut self, kind: EventKind, slot: usize) {
        let slot = self.hot_slots[slot % self.hot_slots.len()];
        let start_ms = self.clock.ms();
        let mut node = usize::MAX;
        let outcome = self.run(kind, slot, &mut node);
        let healthy = self.cluster.wait_healthy();
        let trouble = match (outcome, healthy) {
            (Ok(()), Ok(())) => String::new(),
            (Err(e), _) | (Ok(()), Err(e)) => e.to_string(),
        };
        if !trouble.is_empty() {
            tracing::warn!(?kind, %trouble, "nemesis event went wrong");
        }
        let event = Event {
            kind,
            node,
            start_ms,
            end_ms: self.clock.ms(),
            trouble,
        };
        eprintln!(
            "    event {:>3}: {:?} on node {} at {:.1} s, {:.1} s long{}",
            self.events.len() + 1,
            event.kind,
            event.node,
            event.start_ms / 1000.0,
            (event.end_ms - event.start_ms) / 1000.0,
            if event.trouble.is_empty() {
                String::new()
            } else {
                format!(" ({})", event.trouble)
            }
        );
        self.events.push(event);
    }

    /// Another master than `not`, drawn.
    fn other_master(&mut self, not: usize) -> std::io::Result<usize> {
        let mut masters = Vec::new();
        for s in [0u16, 6000, 12000] {
            let m = self.cluster.owner_index(s)?;
            if m != not && !masters.contains(&m) {
                masters.push(m);
            }
        }
        if masters.is_empty() {
            return Err(std::io::Error::other("no other master"));
        }
        Ok(masters[self.rng.below(masters.len())])
    }

    fn run(&mut self, kind: EventKind, slot: u16, node: &mut usize) -> std::io::Result<()> {
        let c = &mut self.cluster;
        let master = c.owner_index(slot)?;
        *node = master;
        let sleep = std::thread::sleep;
        match kind {
            EventKind::ManualFailover => {
                let replica = c.replica_of(master)?;
                c.failover(replica)?;
            }
            EventKind::ForcedTakeover => {
                let replica = c.replica_of(master)?;
                c.takeover(replica)?;
            }
            EventKind::MigrateRange => {
                let to = self.other_master(master)?;
                let c = &self.cluster;
                let first = slot.saturating_sub(1);
                for s in first..=first.saturating_add(3).min(16383) {
                    if c.owner_index(s)? == master {
                        migrate_step_by_step(c, s, master, to)?;
                    }
                }
            }
            EventKind::ScaleOutAndIn => {
                let added = self.cluster.add_master()?;
                *node = added;
                let c = &self.cluster;
                let second = self
                    .hot_slots
                    .iter()
                    .copied()
                    .find(|&s| s != slot && c.owner_index(s).is_ok_and(|o| o == master));
                let given: Vec<u16> = std::iter::once(slot).chain(second).collect();
                for &s in &given {
                    migrate_step_by_step(c, s, master, added)?;
                }
                sleep(Duration::from_secs(2));
                for &s in &given {
                    migrate_step_by_step(c, s, added, master)?;
                }
                self.cluster.forget_node(added)?;
            }
            EventKind::BackAndForth => {
                let to = self.other_master(master)?;
                let c = &self.cluster;
                for _ in 0..2 {
                    c.move_slot(slot, to)?;
                    sleep(Duration::from_millis(250));
                    c.move_slot(slot, master)?;
                    sleep(Duration::from_millis(250));
                }
            }
            EventKind::KillMaster => {
                c.kill(master);
                c.wait_failover_of(master, slot)?;
                c.restart(master, slot)?;
            }
            EventKind::KillReplica => {
                let replica = c.replica_of(master)?;
                *node = replica;
                c.kill(replica);
                sleep(Duration::from_secs(1));
                c.restart(replica, slot)?;
            }
            EventKind::FreezeShort => {
                c.freeze(master)?;
                sleep(Duration::from_millis(500));
                c.thaw(master)?;
            }
            EventKind::FreezeLong => {
                c.freeze(master)?;
                let waited = c.wait_failover_of(master, slot);
                // Away on past its replica's takeover, as a paused VM is:
                // whoever still trusts it must find out by themselves.
                sleep(OUTLASTS_FAILOVER);
                c.thaw(master)?;
                waited?;
                c.wait_steps_down(master)?;
            }
            EventKind::Latency => {
                c.fault(master, Faults::latency(Duration::from_millis(50)))?;
                sleep(Duration::from_secs(2));
                c.fault(master, Faults::HEALTHY)?;
            }
            EventKind::DropConnections => c.drop_connections(master)?,
            EventKind::Partition => {
                c.partition(master, true)?;
                let waited = c.wait_failover_of(master, slot);
                sleep(OUTLASTS_FAILOVER);
                c.partition(master, false)?;
                waited?;
                c.wait_steps_down(master)?;
            }
            EventKind::CutOneWay => {
                let held = Faults {
                    to_client: Flow::Stopped,
                    ..Faults::HEALTHY
                };
                c.fault(master, held)?;
                sleep(Duration::from_millis(1_500));
                c.fault(master, Faults::HEALTHY)?;
            }
            EventKind::Trickle => {
                c.fault(master, Faults::trickle(2_000))?;
                sleep(Duration::from_secs(2));
                c.fault(master, Faults::HEALTHY)?;
            }
        }
        Ok(())
    }
}
