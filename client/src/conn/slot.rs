//! What a request is to a connection: its reply slot, what a held
//! connection and its time-out do to it (`SlotKind`), and the traits
//! through which a connection reaches what watches it (`Watch`) and what
//! takes its pushes (`PushSink`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio::time::Instant;
use zaris_core::WriteConn;

use super::error::ConnError;
use crate::codec::{Frame, Frames};

/// A deadline past any time-out a caller sets (`Duration::MAX` included).
pub(crate) const FAR: Duration = Duration::from_secs(365 * 24 * 3600);

pub(super) type Reply = Result<Frames, ConnError>;

/// Where a connection's pushes go (the client cache's invalidations),
/// and word of its end: set on connections that track keys for it.
pub(crate) trait PushSink: Send + Sync {
    /// A RESP3 push arrived on a connection to `addr`, between replies.
    fn pushed(&self, addr: &str, push: &[Frame]);
    /// A connection to `addr` that tracked keys ended.
    fn closed(&self, addr: &str);
}

/// A reply slot, in send order.
pub(super) struct Slot {
    /// Its number on the connection: a caller reading for itself knows
    /// its own reply by it.
    pub(super) id: u64,
    pub(super) replies: usize,
    /// Where the replies go; `None` once the caller was told it timed out.
    pub(super) done: Option<oneshot::Sender<Reply>>,
    pub(super) deadline: Instant,
    /// Its place among the node's requests in flight, held until its
    /// replies come or the connection ends, whether or not its caller
    /// still waits: a reply owed is a request the node still holds.
    pub(super) _room: Option<OwnedSemaphorePermit>,
    /// What its time-out and a held connection do to it.
    pub(super) kind: SlotKind,
}

/// What a request is to a connection that its node holds
/// (`zaris_core::hold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// Timed out at its deadline, whatever the node says; never moved.
    Plain,
    /// Reads only: harmless to send again. On a held connection it is
    /// handed back to be sent on another ([`ConnError::Moved`]); its time-out
    /// stands.
    Read,
    /// A write (or a batch holding one). At its time-out its node is asked
    /// whether it is alive, unless it said so lately; one that answers
    /// holds it and will apply it, so it waits on, to `last` (its
    /// request's deadline), and past that its caller hears
    /// [`ConnError::Held`]. Not sent yet on a held connection, a write to
    /// one slot not placed yet may be handed back ([`ConnError::Moved`])
    /// to go where `zaris_core::write_lane` says.
    Write { last: Instant, to: WriteTo },
    /// A read handed back to be sent elsewhere: its reply here, when it
    /// comes, goes to no one, unsaid.
    Moved,
}

/// The slots a write goes to, as a held connection sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteTo {
    /// Several slots, or none known (a batch, a transaction): it stays on
    /// the connection it is sent on.
    Several,
    /// One slot, not placed yet: on a held connection, it may leave.
    Slot(u16),
    /// One slot, sent where `zaris_core::write_lane` placed it: it stays.
    Placed(u16),
}

impl WriteTo {
    /// Its one slot, if it has one.
    pub(crate) fn slot(self) -> Option<u16> {
        match self {
            WriteTo::Several => None,
            WriteTo::Slot(slot) | WriteTo::Placed(slot) => Some(slot),
        }
    }
}

impl Slot {
    /// Whether a caller still waits for it.
    pub(super) fn waited(&self) -> bool {
        self.done.as_ref().is_some_and(|done| !done.is_closed())
    }
}

/// Asks a node, on a connection other than the stalled one, whether it is
/// alive, and hears when that connection is free again.
pub(crate) trait Watch: Send + Sync {
    /// Whether the node answered within `zaris_core::ALIVE_CHECK_TIMEOUT`.
    fn ask(self: Arc<Self>) -> Pin<Box<dyn Future<Output = bool> + Send + 'static>>;
    /// The node holds the connection `place` (it did not a moment ago),
    /// which owes replies to writes to `given_up` (`None`: several slots,
    /// or unknown) whose callers gave up. Called under the connection's
    /// lock.
    fn held(&self, place: Option<WriteConn>, given_up: &[Option<u16>]);
    /// The caller of a write to `slot` that `place`, a held connection,
    /// still owes a reply gave up on it: no later write to its slot may
    /// overtake it. Called under the connection's lock.
    fn gave_up(&self, place: Option<WriteConn>, slot: Option<u16>);
    /// Whether a write to `to`, not sent yet, stays on `place`, a held
    /// connection, or leaves for the connection `zaris_core::write_lane`
    /// picks. Called under the connection's lock.
    fn write_stays(&self, place: Option<WriteConn>, to: WriteTo) -> bool;
    /// The connection it held answered again.
    fn freed(&self);
    /// A check ended without the node holding this connection.
    fn unneeded(&self);
}
