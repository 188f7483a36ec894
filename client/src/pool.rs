//! The nodes the client knows, each with its one shared connection (made
//! on first use, remade after it breaks), its spare dedicated ones, its
//! room for requests in flight, and what it last did: refused, timed out
//! (repeatedly: then it is opened), said the cluster is down, failed to
//! connect (then reconnects back off).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use tokio::sync::{Mutex, Notify, OwnedSemaphorePermit, Semaphore};

use zaris_core::{opens_after, probe_due, probe_interval, recently_failed, reconnect_delay};

use crate::conn::{connect, ConnError, ConnOptions, Connection};
use crate::seam;
use crate::side::Side;

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
    /// Its last answer said the cluster is down (`CLUSTERDOWN`,
    /// `MASTERDOWN`, `LOADING`: the status `Unavailable`): it cannot serve
    /// its slots now, so requests for them wait instead of spending
    /// attempts, one going ahead per [`zaris_core::probe_interval`] to
    /// find out when it can.
    down: AtomicBool,
    /// When the next probe of it is due while it is refused, down or open
    /// (ms on the clock; 0: now): one try per [`zaris_core::probe_interval`],
    /// however many wait.
    probe_at: AtomicU64,
    /// Probes claimed since it could last take requests: how far a down
    /// node's probes have backed off.
    probes: AtomicU32,
    /// Told when a held node can take requests again (shared by the
    /// registry's nodes): the requests waiting for an owner look again.
    back: Arc<Notify>,
    /// Room for requests in flight on its shared connection
    /// (`Builder::max_in_flight_per_node`), and that limit.
    admission: Arc<Semaphore>,
    max_in_flight: usize,
    /// Requests on it that timed out in a row (any answer resets it).
    timeouts: AtomicU32,
    /// Opened: [`zaris_core::OPEN_AFTER_TIMEOUTS`] requests in a row timed out, so new
    /// ones wait, unsent, for the map to move its slots (one going ahead
    /// per [`zaris_core::OWNER_PROBE_INTERVAL`] as the probe) instead of joining a queue
    /// that does not drain. Closed by its next answer.
    open: AtomicBool,
    times_opened: AtomicU64,
    /// Connection attempts that failed in a row, the last one's error, and
    /// when the next may be made (ms on the clock; 0: at once).
    dial_failures: AtomicU32,
    last_dial_error: std::sync::Mutex<Option<ConnError>>,
    next_dial_at: AtomicU64,
    backoffs: AtomicU64,
    /// Its side connection, for reads while it holds the shared one.
    pub(crate) side: Arc<Side>,
}

/// Milliseconds since the clock's origin (+1, so that 0 in the atomics
/// below means never).
fn clock_ms() -> u64 {
    u64::try_from(seam::origin().elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
}

/// A time of [`clock_ms`] as the core's rules take it (0: never).
fn at(ms: u64) -> Option<Duration> {
    (ms != 0).then(|| Duration::from_millis(ms))
}

/// Now, as the core's rules take it.
fn now() -> Duration {
    Duration::from_millis(clock_ms())
}

/// At most this many spare dedicated connections per node.
const MAX_SPARES: usize = 8;

impl Node {
    pub(crate) fn new(addr: &str, max_in_flight: usize, back: Arc<Notify>) -> Self {
        Self {
            addr: addr.into(),
            conn: ArcSwapOption::empty(),
            connecting: Mutex::new(()),
            spares: std::sync::Mutex::default(),
            failed_at: AtomicU64::new(0),
            unanswered: AtomicBool::new(false),
            refused_at: AtomicU64::new(0),
            down: AtomicBool::new(false),
            probe_at: AtomicU64::new(0),
            probes: AtomicU32::new(0),
            back,
            admission: Arc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
            timeouts: AtomicU32::new(0),
            open: AtomicBool::new(false),
            times_opened: AtomicU64::new(0),
            dial_failures: AtomicU32::new(0),
            last_dial_error: std::sync::Mutex::new(None),
            next_dial_at: AtomicU64::new(0),
            backoffs: AtomicU64::new(0),
            side: Arc::new(Side::new(addr.into())),
        }
    }

    /// Whether it is open (its requests kept timing out).
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    /// Whether requests for its slots are held back now, one probe at a
    /// time: it says the cluster is down, or it is open.
    pub(crate) fn held(&self) -> bool {
        self.down() || self.is_open()
    }

    /// Times it was opened.
    pub(crate) fn times_opened(&self) -> u64 {
        self.times_opened.load(Ordering::Relaxed)
    }

    /// Connection attempts skipped because it was backing off.
    pub(crate) fn backoffs(&self) -> u64 {
        self.backoffs.load(Ordering::Relaxed)
    }

    /// A new connection, unless the last attempts failed moments ago (then
    /// the last error, at once): reconnects back off, per node, by the
    /// core's [`reconnect_delay`].
    async fn dial(
        &self,
        timeout: std::time::Duration,
        options: &ConnOptions,
    ) -> Result<Connection, ConnError> {
        let now = clock_ms();
        if now < self.next_dial_at.load(Ordering::Relaxed) {
            let last = self
                .last_dial_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(e) = last {
                self.backoffs.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        }
        match connect(&self.addr, timeout, options).await {
            Ok(conn) => {
                self.dial_failures.store(0, Ordering::Relaxed);
                self.next_dial_at.store(0, Ordering::Relaxed);
                Ok(conn)
            }
            Err(e) => {
                let failures = self.dial_failures.fetch_add(1, Ordering::Relaxed) + 1;
                let delay = reconnect_delay(failures, seam::random());
                *self
                    .last_dial_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                self.next_dial_at
                    .store(clock_ms().saturating_add(delay_ms), Ordering::Relaxed);
                tracing::debug!(addr = %self.addr, failures, delay_ms, error = %e, "connecting failed: backing off");
                Err(e)
            }
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
        self.down.load(Ordering::Relaxed)
    }

    /// Notes an answer from it: whether it said the cluster is down. The
    /// first other answer lets its waiting requests go.
    pub(crate) fn note_cluster_down(&self, down: bool) {
        if down {
            self.down.store(true, Ordering::Relaxed);
        } else if self.down.swap(false, Ordering::Relaxed) {
            self.is_back();
        }
    }

    /// It can take requests again: the requests waiting for an owner look
    /// again at once, and its next hold is probed from the start.
    fn is_back(&self) {
        self.probe_at.store(0, Ordering::Relaxed);
        self.probes.store(0, Ordering::Relaxed);
        self.back.notify_waiters();
    }

    /// Whether a request may be sent to it now: never while it refuses
    /// connections (a waiting request probes it by connecting instead);
    /// while it says the cluster is down or is open, one request per
    /// [`zaris_core::probe_interval`], the one that claims the probe;
    /// otherwise always.
    pub(crate) fn may_send(&self) -> bool {
        if self.refusing() {
            return false;
        }
        !self.held() || self.claim_probe()
    }

    /// Whether a probe of it is due (unclaimed).
    pub(crate) fn probe_due(&self) -> bool {
        probe_due(at(self.probe_at.load(Ordering::Relaxed)), now())
    }

    /// How long until its next probe is due (zero: due now).
    pub(crate) fn probe_in(&self) -> Duration {
        Duration::from_millis(
            self.probe_at
                .load(Ordering::Relaxed)
                .saturating_sub(clock_ms()),
        )
    }

    /// Claims the probe if it is due: `true` for the one caller that may
    /// try the node now, which sets when the next is due.
    fn claim_probe(&self) -> bool {
        let next = self.probe_at.load(Ordering::Relaxed);
        let now = clock_ms();
        if !probe_due(at(next), Duration::from_millis(now)) {
            return false;
        }
        // Down and not open: an answer comes at once, so the probes start
        // sooner (the core's rule). The answers of requests already in
        // flight when it said so are not probes: they do not count.
        let probes = self.probes.load(Ordering::Relaxed).saturating_add(1);
        let step = if self.is_open() || self.refusing() {
            0
        } else {
            probes
        };
        let interval = probe_interval(step, seam::random());
        let after = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        let claimed = self
            .probe_at
            .compare_exchange(
                next,
                now.saturating_add(after),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok();
        if claimed {
            self.probes.store(probes, Ordering::Relaxed);
        }
        claimed
    }

    /// For a request waiting on a refusing node: tries to connect, if no
    /// other waiter has within [`zaris_core::OWNER_PROBE_INTERVAL`]; whether it answers now.
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
    /// `OPEN_AFTER_TIMEOUTS` in a row open it, and any answer closes it.
    pub(crate) fn note_reply<T>(&self, result: &Result<T, ConnError>) {
        match result {
            Ok(_) => {
                self.unanswered.store(false, Ordering::Relaxed);
                self.timeouts.store(0, Ordering::Relaxed);
                if self.open.swap(false, Ordering::Relaxed) {
                    tracing::info!(addr = %self.addr, "answering again: closed");
                    self.is_back();
                }
            }
            Err(ConnError::TimedOut) => {
                self.unanswered.store(true, Ordering::Relaxed);
                let timeouts = self.timeouts.fetch_add(1, Ordering::Relaxed) + 1;
                if opens_after(timeouts) && !self.open.swap(true, Ordering::Relaxed) {
                    self.times_opened.fetch_add(1, Ordering::Relaxed);
                    crate::metrics::opened(&self.addr);
                    tracing::warn!(addr = %self.addr, timeouts, "requests keep timing out: opened");
                }
            }
            Err(_) => {}
        }
    }

    /// Whether connecting failed within the last
    /// [`zaris_core::REPLICA_PAUSE`].
    pub(crate) fn recently_failed(&self) -> bool {
        recently_failed(at(self.failed_at.load(Ordering::Relaxed)), now())
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
                    let conn = Arc::new(self.dial(timeout, options).await?);
                    // A transaction's `EXEC` its node holds waits on too.
                    self.side.watch(&conn, options, false);
                    return Ok(conn);
                }
            }
        }
    }

    /// Whether it holds its shared connection now (a paused write at its
    /// head: reads go on its side connection).
    pub(crate) fn holds_connection(&self) -> bool {
        self.live().is_some_and(|conn| conn.is_held())
    }

    /// Its shared connection, if one is open and alive.
    pub(crate) fn live(&self) -> Option<Arc<Connection>> {
        self.conn.load_full().filter(|c| c.is_alive())
    }

    /// Drops its spare dedicated connections (they hold old credentials).
    pub(crate) fn drop_spares(&self) {
        self.spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
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
        match self.dial(timeout, options).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                self.side.watch(&conn, options, true);
                if self.conn.load().is_some() {
                    crate::metrics::reconnect(&self.addr);
                }
                self.failed_at.store(0, Ordering::Relaxed);
                self.conn.store(Some(conn.clone()));
                // Told once the connection is there for the waiters to use.
                if self.refused_at.swap(0, Ordering::Relaxed) != 0 {
                    self.is_back();
                }
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
    nodes: std::sync::Mutex<seam::HashMap<Arc<str>, Arc<Node>>>,
    /// Each node's `max_in_flight_per_node`.
    max_in_flight: usize,
    /// Told when any of its nodes can take requests again.
    back: Arc<Notify>,
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
            back: Arc::default(),
        }
    }

    /// The node at `addr`, created if new.
    pub(crate) fn node(&self, addr: &str) -> Arc<Node> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.get(addr) {
            return node.clone();
        }
        let node = Arc::new(Node::new(addr, self.max_in_flight, self.back.clone()));
        nodes.insert(node.addr.clone(), node.clone());
        node
    }

    /// Told when a held node (down, open or refusing) can take requests
    /// again.
    pub(crate) fn back(&self) -> &Notify {
        &self.back
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

#[cfg(test)]
mod tests {
    use zaris_core::OPEN_AFTER_TIMEOUTS;

    use super::*;

    #[test]
    fn repeated_time_outs_open_a_node_and_an_answer_closes_it() {
        let node = Node::new("a:1", 10, Arc::default());
        for _ in 1..OPEN_AFTER_TIMEOUTS {
            node.note_reply::<()>(&Err(ConnError::TimedOut));
        }
        assert!(!node.is_open(), "one short of the threshold");
        node.note_reply::<()>(&Err(ConnError::Reset("x".into())));
        assert!(!node.is_open(), "a reset is not a time-out");
        node.note_reply::<()>(&Err(ConnError::TimedOut));
        assert!(node.is_open() && node.held());
        assert!(node.may_send(), "the first request is the probe");
        assert!(!node.may_send(), "the others wait for the next probe");
        node.note_reply(&Ok(()));
        assert!(!node.is_open() && node.may_send());
        assert_eq!(node.times_opened(), 1);
    }
}
