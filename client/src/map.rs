//! The routing snapshot (docs/behaviour.md §4): slot → owner index → node,
//! immutable, swapped whole; and the nodes, each with its one connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use arc_swap::ArcSwapOption;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use zaris_core::{OwnerId, OwnershipChange, RouteError, SegmentTable, NO_OWNER, SLOT_COUNT};

use crate::cluster_map::SlotRange;
use crate::config::ReadFrom;
use crate::conn::{ConnError, ConnOptions, Connection};

/// One node: its address and its one shared connection, made on first use
/// and remade after it breaks.
pub(crate) struct Node {
    pub(crate) addr: Arc<str>,
    conn: ArcSwapOption<Connection>,
    connecting: Mutex<()>,
    /// Connections of their own for blocking commands and `WATCH`, kept
    /// for the next one when handed back clean.
    spares: std::sync::Mutex<Vec<Arc<Connection>>>,
    /// When connecting last failed (ms on the registry's clock, +1; 0:
    /// never or since succeeded): replica reads pass over it meanwhile.
    failed_at: AtomicU64,
    /// A request to it timed out and nothing has answered since: it may be
    /// frozen (a process that keeps its sockets and never replies).
    unanswered: AtomicBool,
    /// When connecting to it was last refused (ms on the registry's clock,
    /// +1; 0: never, or it has accepted a connection since): nothing
    /// listens there (a killed process), so requests for its slots wait
    /// for the map to move instead of spending attempts on it.
    refused_at: AtomicU64,
    /// When it last answered that the cluster is down (`CLUSTERDOWN`,
    /// `MASTERDOWN`, `LOADING`: the status `Unavailable`; ms +1; 0: it has
    /// answered otherwise since): it cannot serve its slots now, so
    /// requests for them wait instead of spending attempts, one going
    /// ahead per [`PROBE_INTERVAL_MS`] to find out when it can.
    down_at: AtomicU64,
    /// When a waiting request last tried it while refused or down: at most
    /// one try per [`PROBE_INTERVAL_MS`], however many wait.
    probed_at: AtomicU64,
    /// Room for requests in flight on its shared connection
    /// (`Builder::max_in_flight_per_node`), and that limit.
    admission: Arc<Semaphore>,
    max_in_flight: usize,
}

/// A node that refuses connections is tried again this often by the
/// requests that wait for it (a master restarted without a failover comes
/// back this way); the map's refresh interval, so a dead node costs no
/// more connection attempts than map refreshes.
const PROBE_INTERVAL_MS: u64 = 500;

/// A replica whose connection failed is passed over for reads this long,
/// then tried again.
const REPLICA_PAUSE_MS: u64 = 2_000;

/// Milliseconds since the first call (+1), for `failed_at`.
fn clock_ms() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
}

/// At most this many spare dedicated connections per node.
const MAX_SPARES: usize = 8;

impl Node {
    pub(crate) fn new(addr: &str, max_in_flight: usize) -> Self {
        Self {
            addr: addr.into(),
            conn: ArcSwapOption::empty(),
            connecting: Mutex::new(()),
            spares: std::sync::Mutex::default(),
            failed_at: AtomicU64::new(0),
            unanswered: AtomicBool::new(false),
            refused_at: AtomicU64::new(0),
            down_at: AtomicU64::new(0),
            probed_at: AtomicU64::new(0),
            admission: Arc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
        }
    }

    /// Requests in flight on its shared connection now.
    pub(crate) fn in_flight(&self) -> usize {
        self.max_in_flight
            .saturating_sub(self.admission.available_permits())
    }

    /// Room for `requests` more in flight (all of it for a batch larger
    /// than the limit) if there is room now.
    pub(crate) fn try_admit(&self, requests: usize) -> Option<OwnedSemaphorePermit> {
        self.admission
            .clone()
            .try_acquire_many_owned(self.permits(requests))
            .ok()
    }

    /// Room for `requests` more in flight, once there is.
    pub(crate) async fn admit(&self, requests: usize) -> OwnedSemaphorePermit {
        self.admission
            .clone()
            .acquire_many_owned(self.permits(requests))
            .await
            .unwrap_or_else(|_| unreachable!("the semaphore is never closed"))
    }

    fn permits(&self, requests: usize) -> u32 {
        u32::try_from(requests.min(self.max_in_flight)).unwrap_or(u32::MAX)
    }

    /// Whether its last connection attempt was refused (nothing listens).
    pub(crate) fn refusing(&self) -> bool {
        self.refused_at.load(Ordering::Relaxed) != 0
    }

    /// Whether its last answer said the cluster is down.
    pub(crate) fn down(&self) -> bool {
        self.down_at.load(Ordering::Relaxed) != 0
    }

    /// Notes an answer from it: whether it said the cluster is down.
    pub(crate) fn note_cluster_down(&self, down: bool) {
        if down {
            self.down_at.store(clock_ms(), Ordering::Relaxed);
        } else if self.down() {
            self.down_at.store(0, Ordering::Relaxed);
        }
    }

    /// Whether a request may be sent to it now: never while it refuses
    /// connections (a waiting request probes it by connecting instead);
    /// while it says the cluster is down, one request per
    /// [`PROBE_INTERVAL_MS`], the one that claims the probe; otherwise
    /// always.
    pub(crate) fn may_send(&self) -> bool {
        if self.refusing() {
            return false;
        }
        !self.down() || self.claim_probe()
    }

    /// Whether a probe of it is due (unclaimed).
    pub(crate) fn probe_due(&self) -> bool {
        let last = self.probed_at.load(Ordering::Relaxed);
        last == 0 || clock_ms().saturating_sub(last) >= PROBE_INTERVAL_MS
    }

    /// Claims the probe if it is due: `true` for the one caller that may
    /// try the node now.
    fn claim_probe(&self) -> bool {
        let last = self.probed_at.load(Ordering::Relaxed);
        let now = clock_ms();
        let due = last == 0 || now.saturating_sub(last) >= PROBE_INTERVAL_MS;
        due && self
            .probed_at
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// For a request waiting on a refusing node: tries to connect, if no
    /// other waiter has within [`PROBE_INTERVAL_MS`]; whether it answers now.
    pub(crate) async fn probe(&self, timeout: std::time::Duration, options: &ConnOptions) -> bool {
        if !self.refusing() {
            return true;
        }
        if !self.claim_probe() {
            return false;
        }
        self.connection(timeout, options).await.is_ok()
    }

    /// Whether its last request timed out with no answer since.
    pub(crate) fn unanswered(&self) -> bool {
        self.unanswered.load(Ordering::Relaxed)
    }

    /// Notes how a request on its shared connection ended: a time-out
    /// makes it suspect, any answer clears that.
    pub(crate) fn note_reply<T>(&self, result: &Result<T, ConnError>) {
        match result {
            Ok(_) => self.unanswered.store(false, Ordering::Relaxed),
            Err(ConnError::TimedOut) => self.unanswered.store(true, Ordering::Relaxed),
            Err(_) => {}
        }
    }

    /// Whether connecting failed within the last [`REPLICA_PAUSE_MS`].
    pub(crate) fn recently_failed(&self) -> bool {
        let at = self.failed_at.load(Ordering::Relaxed);
        at != 0 && clock_ms().saturating_sub(at) < REPLICA_PAUSE_MS
    }

    /// A connection no one else uses: a spare if one is alive, else a new
    /// one. Hand it back with [`Node::give_back`] once it holds no state
    /// (no `WATCH`, no reply outstanding), or drop it.
    pub(crate) async fn dedicated(
        &self,
        timeout: std::time::Duration,
        options: &ConnOptions,
    ) -> Result<Arc<Connection>, ConnError> {
        loop {
            let spare = self.spares.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match spare {
                Some(conn) if conn.is_alive() => return Ok(conn),
                Some(_) => {}
                None => {
                    return Ok(Arc::new(
                        Connection::connect(&self.addr, timeout, options).await?,
                    ))
                }
            }
        }
    }

    /// Keeps a clean dedicated connection for the next caller.
    pub(crate) fn give_back(&self, conn: Arc<Connection>) {
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        if conn.is_alive() && spares.len() < MAX_SPARES {
            spares.push(conn);
        }
    }

    /// The live connection, connecting (once, however many callers ask) if
    /// there is none.
    pub(crate) async fn connection(
        &self,
        timeout: std::time::Duration,
        options: &ConnOptions,
    ) -> Result<Arc<Connection>, ConnError> {
        if let Some(conn) = self.conn.load_full().filter(|c| c.is_alive()) {
            return Ok(conn);
        }
        let _one_at_a_time = tokio::time::timeout(timeout, self.connecting.lock())
            .await
            .map_err(|_| ConnError::TimedOut)?;
        if let Some(conn) = self.conn.load_full().filter(|c| c.is_alive()) {
            return Ok(conn);
        }
        match Connection::connect(&self.addr, timeout, options).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                self.failed_at.store(0, Ordering::Relaxed);
                self.refused_at.store(0, Ordering::Relaxed);
                self.conn.store(Some(conn.clone()));
                Ok(conn)
            }
            Err(e) => {
                let now = clock_ms();
                self.failed_at.store(now, Ordering::Relaxed);
                if matches!(e, ConnError::Refused(_)) {
                    self.refused_at.store(now, Ordering::Relaxed);
                }
                Err(e)
            }
        }
    }
}

/// Every node the client has heard of, by address: seeds, map entries,
/// redirect targets. Touched on refreshes and redirects, never per request.
pub(crate) struct Registry {
    nodes: std::sync::Mutex<HashMap<Arc<str>, Arc<Node>>>,
    /// Each node's `max_in_flight_per_node`.
    max_in_flight: usize,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new(crate::config::DEFAULT_MAX_IN_FLIGHT_PER_NODE)
    }
}

impl Registry {
    pub(crate) fn new(max_in_flight: usize) -> Self {
        Self {
            nodes: std::sync::Mutex::default(),
            max_in_flight,
        }
    }

    /// The node at `addr`, created if new.
    pub(crate) fn node(&self, addr: &str) -> Arc<Node> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.get(addr) {
            return node.clone();
        }
        let node = Arc::new(Node::new(addr, self.max_in_flight));
        nodes.insert(node.addr.clone(), node.clone());
        node
    }

    /// The node at `addr`, if the client has heard of it.
    pub(crate) fn known(&self, addr: &str) -> Option<Arc<Node>> {
        let nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes.get(addr).cloned()
    }

    /// Every known node.
    pub(crate) fn all(&self) -> Vec<Arc<Node>> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// An immutable routing snapshot: slot -> owner index -> node.
pub(crate) struct Snapshot {
    pub(crate) table: SegmentTable<Box<[OwnerId]>>,
    pub(crate) owners: Vec<Arc<Node>>,
    /// The replicas of each owner (same index), for replica reads.
    pub(crate) replicas: Vec<Vec<Arc<Node>>>,
}

impl Snapshot {
    /// A map with no owners (before the first refresh).
    pub(crate) fn empty() -> Self {
        let unowned = vec![NO_OWNER; usize::from(SLOT_COUNT)].into_boxed_slice();
        Self {
            table: SegmentTable::new(unowned).expect("16384 segments"),
            owners: Vec::new(),
            replicas: Vec::new(),
        }
    }

    /// Builds a snapshot from a cluster map.
    pub(crate) fn from_ranges(ranges: &[SlotRange], registry: &Registry) -> Self {
        let mut map = Self::empty();
        for range in ranges {
            let owner = owner_index(&mut map.owners, &range.master, registry);
            map.replicas.resize_with(map.owners.len(), Vec::new);
            let replicas = &mut map.replicas[usize::from(owner)];
            for addr in &range.replicas {
                if !replicas.iter().any(|n| *n.addr == **addr) {
                    replicas.push(registry.node(addr));
                }
            }
            map.table.apply(&OwnershipChange {
                first_slot: range.first,
                last_slot: range.last,
                owner,
            });
        }
        map
    }

    /// The node owning `slot`: a hash was already paid, this is one index.
    #[inline]
    pub(crate) fn owner_of_slot(&self, slot: u16) -> Result<&Arc<Node>, RouteError> {
        let owner = self.table.owner_of_slot(slot)?;
        self.owners
            .get(usize::from(owner))
            .ok_or(RouteError::MapMidUpdate { segment: slot })
    }

    /// The node to read `slot` from under `policy`: a replica of its owner
    /// (round robin by `turn`, passing over replicas that just failed to
    /// connect), else the owner.
    pub(crate) fn reader_of_slot(
        &self,
        slot: u16,
        policy: ReadFrom,
        turn: usize,
    ) -> Result<&Arc<Node>, RouteError> {
        let index = usize::from(self.table.owner_of_slot(slot)?);
        let owner = self
            .owners
            .get(index)
            .ok_or(RouteError::MapMidUpdate { segment: slot })?;
        let replicas = self.replicas.get(index).map_or(&[][..], Vec::as_slice);
        let healthy = replicas.iter().filter(|n| !n.recently_failed());
        let count = healthy.clone().count();
        Ok(match policy {
            ReadFrom::Primary => owner,
            ReadFrom::PreferReplica if count == 0 => owner,
            ReadFrom::PreferReplica => healthy.clone().nth(turn % count).unwrap_or(owner),
            ReadFrom::AnyNode => match turn % (count + 1) {
                0 => owner,
                i => healthy.clone().nth(i - 1).unwrap_or(owner),
            },
        })
    }

    /// A copy with `first..=last` pointed at `addr` (the push path: clone,
    /// patch, swap), or `None` when nothing would change.
    pub(crate) fn with_change(
        &self,
        first: u16,
        last: u16,
        addr: &str,
        registry: &Registry,
    ) -> Option<(Self, u16)> {
        // Most pushes repeat what the map says (every request that met the
        // same MOVED brings the same hint): check before copying anything.
        let (low, high) = (first.min(last), first.max(last).min(SLOT_COUNT - 1));
        let settled =
            (low..=high).all(|slot| self.owner_of_slot(slot).is_ok_and(|n| *n.addr == *addr));
        if settled {
            return None;
        }
        let mut owners = self.owners.clone();
        let owner = owner_index(&mut owners, addr, registry);
        let mut table =
            SegmentTable::new(self.table.owners().to_vec().into_boxed_slice()).expect("same size");
        let changed = table.apply(&OwnershipChange {
            first_slot: first,
            last_slot: last,
            owner,
        });
        let mut replicas = self.replicas.clone();
        replicas.resize_with(owners.len(), Vec::new);
        (changed > 0).then(|| {
            let next = Self {
                table,
                owners,
                replicas,
            };
            (next, changed)
        })
    }

    /// The distinct owners, in slot order: the targets of a fan-out.
    pub(crate) fn active_owners(&self) -> Vec<Arc<Node>> {
        let mut seen: Vec<Arc<Node>> = Vec::new();
        for (_, owner) in self.table.runs() {
            if let Some(node) = self.owners.get(usize::from(owner)) {
                if !seen.iter().any(|n| Arc::ptr_eq(n, node)) {
                    seen.push(node.clone());
                }
            }
        }
        seen
    }
}

/// The index of the node at `addr` in `owners`, appended (from the
/// registry) if it is not there yet.
fn owner_index(owners: &mut Vec<Arc<Node>>, addr: &str, registry: &Registry) -> OwnerId {
    let index = match owners.iter().position(|n| *n.addr == *addr) {
        Some(i) => i,
        None => {
            owners.push(registry.node(addr));
            owners.len() - 1
        }
    };
    index as OwnerId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_route_and_patch() {
        let registry = Registry::default();
        let ranges = [
            SlotRange {
                first: 0,
                last: 8191,
                master: "a:1".into(),
                replicas: vec![],
            },
            SlotRange {
                first: 8192,
                last: 16383,
                master: "b:1".into(),
                replicas: vec![],
            },
        ];
        let snap = Snapshot::from_ranges(&ranges, &registry);
        assert_eq!(&*snap.owner_of_slot(12739).unwrap().addr, "b:1");
        assert!(
            snap.with_change(0, 10, "a:1", &registry).is_none(),
            "nothing changed, nothing paid"
        );
        let (moved, changed) = snap.with_change(12739, 12739, "c:1", &registry).unwrap();
        assert_eq!(changed, 1);
        assert_eq!(&*moved.owner_of_slot(12739).unwrap().addr, "c:1");
        assert_eq!(&*moved.owner_of_slot(12740).unwrap().addr, "b:1");
        let fan_out: Vec<String> = moved
            .active_owners()
            .iter()
            .map(|n| n.addr.to_string())
            .collect();
        assert_eq!(fan_out, ["a:1", "b:1", "c:1"]);
        assert!(
            Arc::ptr_eq(&registry.node("b:1"), snap.owner_of_slot(9000).unwrap()),
            "one node object per address"
        );
        assert!(matches!(
            Snapshot::empty().owner_of_slot(5),
            Err(RouteError::Unavailable { .. })
        ));
    }
}
