//! A node's side connection (docs/behaviour.md §5, "Paused nodes"): when
//! the node holds its shared connection (a paused write at its head, a
//! `WAIT`), the side connection asks the node whether it is alive (a
//! `PING` is not a write: a write pause lets it through), and carries
//! what the pause does not hold, the reads, at normal latency, until the
//! shared connection answers again; then it is let go, and closes once
//! its last reply is in. One per node: no connection storm follows a
//! pause, however many callers wait.
//!
//! Beside it, up to `zaris_core::WRITE_LANES` write lanes carry the writes
//! not sent yet: atomic slot migration pauses the writes of the migrating
//! slots alone. Each held write its caller gave up on is noted with its
//! slot and connection, and a later write to that slot waits behind it, on
//! the same connection: none overtakes one the caller gave up on. A lane the node holds in turn (a pause of
//! every write) is passed over; past the last lane writes wait on the
//! shared connection. The lanes are let go with the side connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use tokio::sync::Mutex;
use zaris_core::{write_lane, HeldWrites, WriteConn, ALIVE_CHECK_TIMEOUT, WRITE_LANES};

use crate::codec::Frame;
use crate::conn::{connect, ConnError, ConnOptions, Connection, Watch, WriteTo};

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

/// A node's side connection, made when its shared one is first held.
pub(crate) struct Side {
    addr: Arc<str>,
    /// How the node's connections are made (set with its first shared one).
    options: OnceLock<ConnOptions>,
    conn: ArcSwapOption<Connection>,
    dialing: Mutex<()>,
    /// Times its node held the shared connection, and reads sent here
    /// because of it.
    times_held: AtomicU64,
    reads_moved: AtomicU64,
    writes_moved: AtomicU64,
    /// Connections of the node held now (its shared one, a transaction's,
    /// a lane): the side connection and the lanes are let go when none is.
    holding: AtomicUsize,
    /// The write lanes, and where the node holds writes, by slot. A leaf
    /// lock: nothing else is locked, and no connection dropped, while it
    /// is held.
    lanes: std::sync::Mutex<Lanes>,
}

/// A node's write lanes, and where it holds writes.
#[derive(Default)]
struct Lanes {
    held: Box<HeldWrites>,
    open: [Option<Arc<Connection>>; WRITE_LANES],
}

impl Lanes {
    /// A write to `slot` given up on `place` (`None`: a caller's own
    /// connection, whose writes' slots are not known: as a write of
    /// unknown slots).
    fn note(&mut self, place: Option<WriteConn>, slot: Option<u16>) {
        if crate::seam::planted(crate::seam::Plant::GivenUpOvertaken) {
            return;
        }
        let slot = slot.filter(|_| place.is_some());
        self.held.note(slot, place.unwrap_or(WriteConn::Shared));
    }

    /// The first lane the node does not hold: open and answering, or
    /// still to open.
    fn free(&self) -> Option<u8> {
        let free = |lane: &Option<Arc<Connection>>| {
            lane.as_ref().is_none_or(|l| !l.is_alive() || !l.is_held())
        };
        self.open
            .iter()
            .position(free)
            .and_then(|at| u8::try_from(at).ok())
    }
}

impl Side {
    pub(crate) fn new(addr: Arc<str>) -> Self {
        Self {
            addr,
            options: OnceLock::new(),
            conn: ArcSwapOption::empty(),
            dialing: Mutex::new(()),
            times_held: AtomicU64::new(0),
            reads_moved: AtomicU64::new(0),
            writes_moved: AtomicU64::new(0),
            holding: AtomicUsize::new(0),
            lanes: std::sync::Mutex::default(),
        }
    }

    fn lanes(&self) -> std::sync::MutexGuard<'_, Lanes> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where a write to `slot`, not sent yet, goes while its node holds a
    /// connection (`zaris_core::write_lane`).
    pub(crate) fn place_of(&self, slot: u16) -> WriteConn {
        let lanes = self.lanes();
        write_lane(Some(slot), &lanes.held, lanes.free())
    }

    /// Write lane `at`: open, or opened now (once, within `timeout`),
    /// watched from its first write.
    pub(crate) async fn lane(
        self: &Arc<Self>,
        at: u8,
        timeout: Duration,
    ) -> Result<Arc<Connection>, ConnError> {
        let open = |lanes: &Lanes| lanes.open[usize::from(at)].clone().filter(|l| l.is_alive());
        if let Some(lane) = open(&self.lanes()) {
            return Ok(lane);
        }
        let options = self
            .options
            .get()
            .ok_or_else(|| ConnError::Reset(format!("{}: no connection yet", self.addr)))?;
        let _one = tokio::time::timeout(timeout, self.dialing.lock())
            .await
            .map_err(|_| ConnError::TimedOut)?;
        if let Some(lane) = open(&self.lanes()) {
            return Ok(lane);
        }
        let lane = Arc::new(connect(&self.addr, timeout, options).await?);
        lane.watch_as_lane(self.clone(), at);
        let gone = self.lanes().open[usize::from(at)].replace(lane.clone());
        drop(gone);
        Ok(lane)
    }

    /// Lets the side connection and the lanes go (each closes once its
    /// replies are in), and forgets the slots held: nothing is.
    fn let_go(&self) {
        self.conn.store(None);
        let gone = {
            let mut lanes = self.lanes();
            lanes.held.clear();
            std::mem::take(&mut lanes.open)
        };
        drop(gone);
    }

    /// Watches `conn`, made with `options`: the node's shared connection,
    /// or (`shared` false) a caller's own.
    pub(crate) fn watch(self: &Arc<Self>, conn: &Connection, options: &ConnOptions, shared: bool) {
        let _ = self.options.set(options.clone());
        conn.watch_with(self.clone(), shared.then_some(WriteConn::Shared));
    }

    /// The side connection, made (once, however many callers ask) if there
    /// is none: within `timeout` and the connect time-out.
    pub(crate) async fn connection(&self, timeout: Duration) -> Result<Arc<Connection>, ConnError> {
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let Some(options) = self.options.get() else {
            return Err(ConnError::Reset(format!(
                "{}: no connection yet",
                self.addr
            )));
        };
        let _one = tokio::time::timeout(timeout, self.dialing.lock())
            .await
            .map_err(|_| ConnError::TimedOut)?;
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let conn = Arc::new(connect(&self.addr, timeout, options).await?);
        self.conn.store(Some(conn.clone()));
        Ok(conn)
    }

    fn live(&self) -> Option<Arc<Connection>> {
        self.conn.load_full().filter(|c| c.is_alive())
    }

    /// Counts a read sent here because its connection was held (waiting
    /// there, or about to be sent).
    pub(crate) fn moved_read(&self) {
        self.reads_moved.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a write sent on a lane because its connection was held.
    pub(crate) fn moved_write(&self) {
        self.writes_moved.fetch_add(1, Ordering::Relaxed);
    }

    /// Times its node held one of its connections, and reads and writes
    /// sent elsewhere because of it (`Stats::connections_held`,
    /// `Stats::reads_moved`, `Stats::writes_moved`).
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (
            self.times_held.load(Ordering::Relaxed),
            self.reads_moved.load(Ordering::Relaxed),
            self.writes_moved.load(Ordering::Relaxed),
        )
    }
}

impl Watch for Side {
    fn ask(self: Arc<Self>) -> Pin<Box<dyn Future<Output = bool> + Send + 'static>> {
        Box::pin(async move {
            let answered = async {
                let conn = self.connection(ALIVE_CHECK_TIMEOUT).await?;
                conn.request(PING, 1, ALIVE_CHECK_TIMEOUT).await
            };
            match answered.await {
                // An error (`BUSY`: a script runs; `LOADING`) is no
                // answer: the node serves nothing now, reads included.
                Ok(frames) => !matches!(frames.first(), Some(Frame::Error(_)) | None),
                Err(e) => {
                    tracing::debug!(addr = %self.addr, error = %e, "no answer on another connection");
                    false
                }
            }
        })
    }

    fn held(&self, place: Option<WriteConn>, given_up: &[Option<u16>]) {
        self.times_held.fetch_add(1, Ordering::Relaxed);
        self.holding.fetch_add(1, Ordering::AcqRel);
        let mut lanes = self.lanes();
        for &slot in given_up {
            lanes.note(place, slot);
        }
    }

    fn gave_up(&self, place: Option<WriteConn>, slot: Option<u16>) {
        self.lanes().note(place, slot);
    }

    fn write_stays(&self, place: Option<WriteConn>, to: WriteTo) -> bool {
        let Some(here) = place else {
            return true;
        };
        match to {
            WriteTo::Several | WriteTo::Placed(_) => true,
            WriteTo::Slot(slot) => {
                let lanes = self.lanes();
                write_lane(Some(slot), &lanes.held, lanes.free()) == here
            }
        }
    }

    fn unneeded(&self) {
        // Asked, and nothing held: no side connection lingers.
        if self.holding.load(Ordering::Acquire) == 0 {
            self.let_go();
        }
    }

    fn freed(&self) {
        // Let go with the last held connection: closed once the requests
        // on them are answered.
        if self.holding.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.let_go();
        }
    }
}
