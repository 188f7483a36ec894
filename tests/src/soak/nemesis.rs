//! The soak's nemesis: a churn event every few seconds, drawn from the
//! seed, run against a cluster, and logged with its window. The cluster is
//! anything that can [`Churn`]: the real one of the harness (processes,
//! signals, proxies) or the deterministic simulation's model (`sim/`),
//! which share this schedule and these steps.

use std::time::Duration;

use zaris_core::slot_for_key;

use super::workload::{register, COUNTERS, KEYS_PER_WRITER, LISTS, RARE_WRITER, WRITERS};
use super::{Clock, Rng};
use crate::cluster::Cluster;
use crate::proxy::{Faults, Flow};

/// What the nemesis does to a cluster: each step as the harness's
/// [`Cluster`] names it (nodes are its indices), awaited, so that a
/// simulated cluster runs it in simulated time.
#[allow(async_fn_in_trait)]
pub trait Churn {
    /// The master that serves `slot`.
    async fn owner_index(&self, slot: u16) -> std::io::Result<usize>;
    /// A replica of master `m`.
    async fn replica_of(&self, m: usize) -> std::io::Result<usize>;
    /// `CLUSTER FAILOVER` on `replica`, awaited.
    async fn failover(&self, replica: usize) -> std::io::Result<()>;
    /// `CLUSTER FAILOVER TAKEOVER` on `replica`, awaited.
    async fn takeover(&self, replica: usize) -> std::io::Result<()>;
    /// Until the old master `i` serves as a replica.
    async fn wait_steps_down(&self, i: usize) -> std::io::Result<()>;
    /// `kill -9` of node `i`.
    async fn kill(&mut self, i: usize);
    /// `SIGSTOP` of node `i`.
    async fn freeze(&mut self, i: usize) -> std::io::Result<()>;
    /// `SIGCONT` of node `i`.
    async fn thaw(&mut self, i: usize) -> std::io::Result<()>;
    /// Until a replica of the dead master `dead` serves `slot`; its index.
    async fn wait_failover_of(&self, dead: usize, slot: u16) -> std::io::Result<usize>;
    /// Node `i` started again, as a replica of `slot`'s master.
    async fn restart(&mut self, i: usize, slot: u16) -> std::io::Result<()>;
    /// A new master with no slots; its index.
    async fn add_master(&mut self) -> std::io::Result<usize>;
    /// A new node at a new address, joined to the cluster as a replica of
    /// master `m` and synced with it (`master_link_status:up`); its index.
    async fn add_replica(&mut self, m: usize) -> std::io::Result<usize>;
    /// Node `i` forgotten by the others and stopped.
    async fn forget_node(&mut self, i: usize) -> std::io::Result<()>;
    /// `slot` marked migrating on `from` and importing on `to`.
    async fn begin_migration(&self, slot: u16, from: usize, to: usize) -> std::io::Result<()>;
    /// `keys` moved from `from` to `to` (`MIGRATE`).
    async fn migrate_keys(&self, from: usize, to: usize, keys: &[Vec<u8>]) -> std::io::Result<()>;
    /// Some keys of `slot` on node `i` (`CLUSTER GETKEYSINSLOT`).
    async fn keys_in_slot(&self, i: usize, slot: u16) -> std::io::Result<Vec<Vec<u8>>>;
    /// `slot` given to `to` (`CLUSTER SETSLOT .. NODE`) everywhere.
    async fn finish_migration(&self, slot: u16, to: usize) -> std::io::Result<()>;
    /// `slot` and its keys moved to `to` in one go.
    async fn move_slot(&self, slot: u16, to: usize) -> std::io::Result<()>;
    /// The network faults in front of node `i`.
    async fn fault(&self, i: usize, faults: Faults) -> std::io::Result<()>;
    /// Node `i` cut off from everyone (`true`) or joined again.
    async fn partition(&self, i: usize, cut: bool) -> std::io::Result<()>;
    /// Every client connection of node `i` closed.
    async fn drop_connections(&self, i: usize) -> std::io::Result<()>;
    /// Until every slot is served and every node agrees.
    async fn wait_healthy(&self) -> std::io::Result<()>;
    /// `CLIENT PAUSE ms WRITE` on node `i`: its writes are held for
    /// `pause` (reads and `PING` still answered); returns at once.
    async fn pause_writes(&self, i: usize, pause: Duration) -> std::io::Result<()>;
    /// `slot` moved to `to` by atomic slot migration (Valkey 9, Redis
    /// 8.4): the target imports in the background, then the source pauses
    /// writes to the slot for the final sync (`final_sync`), hands the
    /// slot over and answers `MOVED`; past `pause` (the pause time-out) it
    /// gives the migration up instead. Whether the slot moved.
    async fn atomic_migration(
        &self,
        slot: u16,
        to: usize,
        pause: Duration,
        final_sync: Duration,
    ) -> std::io::Result<bool>;
    /// An event of `kind` begins (`None`: it ended, the cluster healthy
    /// again), so that what follows can be put down to it.
    fn starting(&mut self, kind: Option<EventKind>) {
        let _ = kind;
    }
}

/// The real cluster: each step is the harness's own, blocking (the
/// nemesis runs on a thread of its own).
impl Churn for Cluster {
    async fn owner_index(&self, slot: u16) -> std::io::Result<usize> {
        Cluster::owner_index(self, slot)
    }
    async fn replica_of(&self, m: usize) -> std::io::Result<usize> {
        Cluster::replica_of(self, m)
    }
    async fn failover(&self, replica: usize) -> std::io::Result<()> {
        Cluster::failover(self, replica)
    }
    async fn takeover(&self, replica: usize) -> std::io::Result<()> {
        Cluster::takeover(self, replica)
    }
    async fn wait_steps_down(&self, i: usize) -> std::io::Result<()> {
        Cluster::wait_steps_down(self, i)
    }
    async fn kill(&mut self, i: usize) {
        Cluster::kill(self, i);
    }
    async fn freeze(&mut self, i: usize) -> std::io::Result<()> {
        Cluster::freeze(self, i)
    }
    async fn thaw(&mut self, i: usize) -> std::io::Result<()> {
        Cluster::thaw(self, i)
    }
    async fn wait_failover_of(&self, dead: usize, slot: u16) -> std::io::Result<usize> {
        Cluster::wait_failover_of(self, dead, slot)
    }
    async fn restart(&mut self, i: usize, slot: u16) -> std::io::Result<()> {
        Cluster::restart(self, i, slot)
    }
    async fn add_master(&mut self) -> std::io::Result<usize> {
        Cluster::add_master(self)
    }
    async fn add_replica(&mut self, m: usize) -> std::io::Result<usize> {
        Cluster::add_replica(self, m)
    }
    async fn forget_node(&mut self, i: usize) -> std::io::Result<()> {
        Cluster::forget_node(self, i)
    }
    async fn begin_migration(&self, slot: u16, from: usize, to: usize) -> std::io::Result<()> {
        Cluster::begin_migration(self, slot, from, to)
    }
    async fn migrate_keys(&self, from: usize, to: usize, keys: &[Vec<u8>]) -> std::io::Result<()> {
        Cluster::migrate_keys(self, from, to, keys)
    }
    async fn keys_in_slot(&self, i: usize, slot: u16) -> std::io::Result<Vec<Vec<u8>>> {
        Cluster::keys_in_slot(self, i, slot)
    }
    async fn finish_migration(&self, slot: u16, to: usize) -> std::io::Result<()> {
        Cluster::finish_migration(self, slot, to)
    }
    async fn move_slot(&self, slot: u16, to: usize) -> std::io::Result<()> {
        Cluster::move_slot(self, slot, to)
    }
    async fn fault(&self, i: usize, faults: Faults) -> std::io::Result<()> {
        Cluster::fault(self, i, faults)
    }
    async fn partition(&self, i: usize, cut: bool) -> std::io::Result<()> {
        Cluster::partition(self, i, cut)
    }
    async fn drop_connections(&self, i: usize) -> std::io::Result<()> {
        Cluster::drop_connections(self, i)
    }
    async fn wait_healthy(&self) -> std::io::Result<()> {
        Cluster::wait_healthy(self)
    }
    async fn pause_writes(&self, i: usize, pause: Duration) -> std::io::Result<()> {
        Cluster::pause_writes(self, i, pause)
    }
    async fn atomic_migration(
        &self,
        slot: u16,
        to: usize,
        pause: Duration,
        final_sync: Duration,
    ) -> std::io::Result<bool> {
        Cluster::atomic_migration(self, slot, to, pause, final_sync)
    }
}

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
    /// Every node replaced by one at a new address, shard by shard, as a
    /// managed service replaces a cluster's machines: two new nodes join
    /// as replicas of the shard's master and sync, the old replica is
    /// forgotten and stopped, the shard fails over to a new node, and the
    /// old master is forgotten and stopped. No address the client was
    /// given at the start serves any more.
    NodesReplaced,
    /// A master's writes paused (`CLIENT PAUSE ms WRITE`) for 100 ms to
    /// 8 s, inside the soak's request deadline: the writes wait, reads do
    /// not, nothing fails, nothing is sent twice.
    WritePause,
    /// The same for 8 to 12 s, past the soak's 10 s deadline: a write still
    /// held at its deadline fails as of unknown outcome, and is never
    /// applied twice.
    WritePauseLong,
    /// One of the workload's slots moved by atomic slot migration: writes
    /// to it paused for a final sync of 50 ms to 12 s, then `MOVED` (past
    /// the pause time-out, `MIGRATION_PAUSE_TIMEOUT` (8 s), the migration is
    /// given up). Emulated on servers that lack it
    /// (`Cluster::atomic_migration`).
    AtomicMigration,
}

impl EventKind {
    /// Every kind, in the order draws index them.
    pub const ALL: [EventKind; 18] = [
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
        EventKind::NodesReplaced,
        EventKind::WritePause,
        EventKind::WritePauseLong,
        EventKind::AtomicMigration,
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

impl EventKind {
    /// Whether an operation may fail in its window. A node lost (killed,
    /// frozen past the time-out, cut off), a takeover without agreement,
    /// replies held past an attempt's time-out, connections cut under
    /// requests of unknown outcome, a master added with no replica (a
    /// durable write to it cannot be acknowledged), or a slot bounced
    /// every 250 ms (it outruns the retry budget of docs/behaviour.md §3,
    /// three attempts 100 ms × n apart) may fail an operation. A manual
    /// failover, a step-by-step migration, a short freeze, added latency
    /// or every node replaced one by one must not: the client hides them.
    #[must_use]
    pub fn may_fail_operations(self) -> bool {
        !matches!(
            self,
            EventKind::ManualFailover
                | EventKind::MigrateRange
                | EventKind::FreezeShort
                | EventKind::Latency
                | EventKind::NodesReplaced
                | EventKind::WritePause
                | EventKind::AtomicMigration
        )
    }

    /// Whether it holds requests on a node that stays alive and keeps
    /// every connection: a write sent in its window could not have been
    /// lost, so none may be applied twice (docs/behaviour.md §5, "Paused
    /// nodes").
    #[must_use]
    pub fn holds_without_losing(self) -> bool {
        matches!(
            self,
            EventKind::WritePause | EventKind::WritePauseLong | EventKind::AtomicMigration
        )
    }
}

/// The atomic migration's pause time-out
/// (`cluster-slot-migration-write-pause-timeout`): 8 s, inside the soak's
/// 10 s request deadline, so that a write the pause holds can always be
/// answered in time (Redis's default is 10 s; at a deadline as short, a
/// write held for the whole pause is rightly told it may or may not have
/// been applied: the simulation's seed 1529 met it).
pub const MIGRATION_PAUSE_TIMEOUT: Duration = Duration::from_secs(8);

/// How long a master replaced by a failover keeps serving redirects
/// before it is stopped.
const DRAIN: Duration = Duration::from_secs(1);

/// How long a long freeze or a partition lasts past the failover it
/// causes.
const OUTLASTS_FAILOVER: Duration = Duration::from_secs(2);

/// Moves `slot` from `from` to `to` as an operator's tool does: marked
/// importing and migrating, its keys moved fifty at a time with a pause (so
/// `ASK` and `TRYAGAIN` really happen meanwhile), then handed over.
async fn migrate_step_by_step<C: Churn>(
    c: &C,
    slot: u16,
    from: usize,
    to: usize,
) -> std::io::Result<()> {
    c.begin_migration(slot, from, to).await?;
    loop {
        let keys = c.keys_in_slot(from, slot).await?;
        if keys.is_empty() {
            break;
        }
        for chunk in keys.chunks(50) {
            c.migrate_keys(from, to, chunk).await?;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    c.finish_migration(slot, to).await
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

/// Draws events from a seed and runs them on a cluster, logging each.
pub struct Nemesis<C> {
    cluster: C,
    schedule: Schedule,
    /// Draws that depend on the cluster's state (which other master).
    rng: Rng,
    clock: Clock,
    events: Vec<Event>,
    hot_slots: Vec<u16>,
}

impl<C: Churn> Nemesis<C> {
    /// The nemesis of `seed` on `cluster`, its events timed by `clock`.
    pub fn new(cluster: C, seed: u64, clock: Clock) -> Self {
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

    /// The events so far.
    #[must_use]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The cluster, and every event.
    pub fn finish(self) -> (C, Vec<Event>) {
        (self.cluster, self.events)
    }

    /// The cluster.
    pub fn cluster(&self) -> &C {
        &self.cluster
    }

    /// A pause of 2-5 s (never past `left`), then one event.
    pub async fn next_event(&mut self, left: Duration) {
        let Draw { pause, kind, slot } = self.schedule.next_draw();
        tokio::time::sleep(pause.min(left)).await;
        if left <= pause + Duration::from_secs(1) {
            return;
        }
        self.happen(kind, slot).await;
    }

    /// `kind` next, after `pause`, on a slot drawn from the seed: a
    /// scripted soak plays each kind it names.
    pub async fn play(&mut self, kind: EventKind, pause: Duration) {
        let slot = self.schedule.next_draw().slot;
        tokio::time::sleep(pause).await;
        self.happen(kind, slot).await;
    }

    /// `kind` on the workload's `slot`th slot, timed, the cluster healthy
    /// again after it.
    async fn happen(&mut self, kind: EventKind, slot: usize) {
        let slot = self.hot_slots[slot % self.hot_slots.len()];
        let start_ms = self.clock.ms();
        let mut node = usize::MAX;
        self.cluster.starting(Some(kind));
        let outcome = self.run(kind, slot, &mut node).await;
        let healthy = self.cluster.wait_healthy().await;
        self.cluster.starting(None);
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
        tracing::debug!(?event, "nemesis event");
        self.events.push(event);
    }

    /// The masters of slots 0, 6000 and 12000 (one a shard, as the
    /// cluster starts), each once.
    async fn masters(&self) -> std::io::Result<Vec<usize>> {
        let mut masters = Vec::new();
        for s in [0u16, 6000, 12000] {
            let m = self.cluster.owner_index(s).await?;
            if !masters.contains(&m) {
                masters.push(m);
            }
        }
        Ok(masters)
    }

    /// Another master than `not`, drawn.
    async fn other_master(&mut self, not: usize) -> std::io::Result<usize> {
        let mut masters = self.masters().await?;
        masters.retain(|&m| m != not);
        if masters.is_empty() {
            return Err(std::io::Error::other("no other master"));
        }
        Ok(masters[self.rng.below(masters.len())])
    }

    async fn run(&mut self, kind: EventKind, slot: u16, node: &mut usize) -> std::io::Result<()> {
        let master = self.cluster.owner_index(slot).await?;
        *node = master;
        let sleep = tokio::time::sleep;
        match kind {
            EventKind::ManualFailover => {
                let c = &self.cluster;
                c.failover(c.replica_of(master).await?).await?;
            }
            EventKind::ForcedTakeover => {
                let c = &self.cluster;
                c.takeover(c.replica_of(master).await?).await?;
            }
            EventKind::MigrateRange => {
                let to = self.other_master(master).await?;
                let c = &self.cluster;
                let first = slot.saturating_sub(1);
                for s in first..=first.saturating_add(3).min(16383) {
                    if c.owner_index(s).await? == master {
                        migrate_step_by_step(c, s, master, to).await?;
                    }
                }
            }
            EventKind::ScaleOutAndIn => {
                let added = self.cluster.add_master().await?;
                *node = added;
                let c = &self.cluster;
                let mut second = None;
                for &s in &self.hot_slots {
                    if s != slot && c.owner_index(s).await.is_ok_and(|o| o == master) {
                        second = Some(s);
                        break;
                    }
                }
                let given: Vec<u16> = std::iter::once(slot).chain(second).collect();
                for &s in &given {
                    migrate_step_by_step(c, s, master, added).await?;
                }
                sleep(Duration::from_secs(2)).await;
                for &s in &given {
                    migrate_step_by_step(c, s, added, master).await?;
                }
                self.cluster.forget_node(added).await?;
            }
            EventKind::NodesReplaced => {
                let masters = self.masters().await?;
                let c = &mut self.cluster;
                for old in masters {
                    let old_replica = c.replica_of(old).await?;
                    c.add_replica(old).await?;
                    c.forget_node(old_replica).await?;
                    let new = c.add_replica(old).await?;
                    c.failover(new).await?;
                    c.wait_steps_down(old).await?;
                    // As a careful operator does, the old master goes
                    // once its clients have moved (its `MOVED` answers
                    // told them): a request cut off in flight could not
                    // tell whether it was applied.
                    sleep(DRAIN).await;
                    c.forget_node(old).await?;
                }
            }
            EventKind::BackAndForth => {
                let to = self.other_master(master).await?;
                let c = &self.cluster;
                for _ in 0..2 {
                    c.move_slot(slot, to).await?;
                    sleep(Duration::from_millis(250)).await;
                    c.move_slot(slot, master).await?;
                    sleep(Duration::from_millis(250)).await;
                }
            }
            EventKind::KillMaster => {
                let c = &mut self.cluster;
                c.kill(master).await;
                c.wait_failover_of(master, slot).await?;
                c.restart(master, slot).await?;
            }
            EventKind::KillReplica => {
                let c = &mut self.cluster;
                let replica = c.replica_of(master).await?;
                *node = replica;
                c.kill(replica).await;
                sleep(Duration::from_secs(1)).await;
                c.restart(replica, slot).await?;
            }
            EventKind::FreezeShort => {
                let c = &mut self.cluster;
                c.freeze(master).await?;
                sleep(Duration::from_millis(500)).await;
                c.thaw(master).await?;
            }
            EventKind::FreezeLong => {
                let c = &mut self.cluster;
                c.freeze(master).await?;
                let waited = c.wait_failover_of(master, slot).await;
                // Away on past its replica's takeover, as a paused VM is:
                // whoever still trusts it must find out by themselves.
                sleep(OUTLASTS_FAILOVER).await;
                c.thaw(master).await?;
                waited?;
                c.wait_steps_down(master).await?;
            }
            EventKind::Latency => {
                let c = &self.cluster;
                c.fault(master, Faults::latency(Duration::from_millis(50)))
                    .await?;
                sleep(Duration::from_secs(2)).await;
                c.fault(master, Faults::HEALTHY).await?;
            }
            EventKind::DropConnections => self.cluster.drop_connections(master).await?,
            EventKind::Partition => {
                let c = &self.cluster;
                c.partition(master, true).await?;
                let waited = c.wait_failover_of(master, slot).await;
                sleep(OUTLASTS_FAILOVER).await;
                c.partition(master, false).await?;
                waited?;
                c.wait_steps_down(master).await?;
            }
            EventKind::CutOneWay => {
                let c = &self.cluster;
                let held = Faults {
                    to_client: Flow::Stopped,
                    ..Faults::HEALTHY
                };
                c.fault(master, held).await?;
                sleep(Duration::from_millis(1_500)).await;
                c.fault(master, Faults::HEALTHY).await?;
            }
            EventKind::Trickle => {
                let c = &self.cluster;
                c.fault(master, Faults::trickle(2_000)).await?;
                sleep(Duration::from_secs(2)).await;
                c.fault(master, Faults::HEALTHY).await?;
            }
            EventKind::WritePause | EventKind::WritePauseLong => {
                let (least, span) = if kind == EventKind::WritePause {
                    (100, 7_900)
                } else {
                    (8_000, 4_000)
                };
                let pause = Duration::from_millis(least + self.rng.below(span) as u64);
                self.cluster.pause_writes(master, pause).await?;
                sleep(pause).await;
            }
            EventKind::AtomicMigration => {
                let to = self.other_master(master).await?;
                let final_sync = Duration::from_millis(50 + self.rng.below(11_950) as u64);
                self.cluster
                    .atomic_migration(slot, to, MIGRATION_PAUSE_TIMEOUT, final_sync)
                    .await?;
            }
        }
        Ok(())
    }
}
