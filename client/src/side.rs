//! A node's side connection (docs/behaviour.md §5, "Paused nodes"): when
//! the node holds its shared connection (a paused write at its head, a
//! `WAIT`), the side connection asks the node whether it is alive (a
//! `PING` is not a write: a write pause lets it through), and carries
//! what the pause does not hold, the reads, at normal latency, until the
//! shared connection answers again; then it is let go, and closes once
//! its last reply is in. One per node: no connection storm follows a
//! pause, however many callers wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use tokio::sync::Mutex;
use zaris_core::ALIVE_CHECK_TIMEOUT;

use crate::codec::Frame;
use crate::conn::{connect, ConnError, ConnOptions, Connection, Watch};

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
    /// Connections of the node held now (its shared one, a transaction's):
    /// the side connection is let go when none is.
    holding: AtomicUsize,
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
            holding: AtomicUsize::new(0),
        }
    }

    /// Watches `shared`, the node's shared connection, made with `options`.
    pub(crate) fn watch(self: &Arc<Self>, shared: &Connection, options: &ConnOptions) {
        let _ = self.options.set(options.clone());
        shared.watch_with(self.clone());
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

    /// Times its node held the shared connection, and reads sent here
    /// because of it (`Stats::connections_held`, `Stats::reads_moved`).
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.times_held.load(Ordering::Relaxed),
            self.reads_moved.load(Ordering::Relaxed),
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

    fn held(&self) {
        self.times_held.fetch_add(1, Ordering::Relaxed);
        self.holding.fetch_add(1, Ordering::AcqRel);
    }

    fn unneeded(&self) {
        // Asked, and nothing held: no side connection lingers.
        if self.holding.load(Ordering::Acquire) == 0 {
            self.conn.store(None);
        }
    }

    fn freed(&self) {
        // Let go with the last held connection: closed once the reads on
        // it are answered.
        if self.holding.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.conn.store(None);
        }
    }
}
