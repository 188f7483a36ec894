//! One multiplexed, pipelined connection to one node, as the client uses
//! it: started on a stream, asked for replies (`shared.rs`: the state the
//! callers and the task share; `driver.rs`: the task).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_util::either::Either;
use zaris_core::WriteConn;

use super::driver::{drive, drive_stream};
use super::error::ConnError;
use super::shared::{Reading, Shared};
use super::slot::{Slot, SlotKind, Watch, FAR};
use crate::codec::{Frames, Limits};

/// A live connection, closed when the last handle and the task's last
/// owed reply are gone, or the socket fails.
pub(crate) struct Connection {
    shared: Arc<Shared>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.lock().released = true;
        self.shared.wake();
    }
}

impl Connection {
    /// Starts the driver task on an open socket to `addr`.
    pub(crate) fn start(stream: Stream, limits: Limits, addr: &str) -> Self {
        let shared = match stream {
            Either::Left(tcp) => {
                let shared = Shared::new(Some(tcp), limits, addr);
                tokio::spawn(drive(shared.clone()));
                shared
            }
            Either::Right(stream) => {
                let shared = Shared::new(None, limits, addr);
                tokio::spawn(drive_stream(stream, shared.clone()));
                shared
            }
        };
        Self { shared }
    }

    /// Sends its pushes to `sink` from now on, and word of its end.
    pub(crate) fn send_pushes_to(&self, sink: Arc<dyn super::PushSink>) {
        let _ = self.shared.pushes.set(sink);
    }

    /// Has `watch` ask its node whether it is alive when it stalls, and
    /// hand reads back while its node holds it: `place`, one of its node's
    /// write connections (`None`: a caller's own).
    pub(crate) fn watch_with(&self, watch: Arc<dyn Watch>, place: Option<WriteConn>) {
        if let Some(place) = place {
            let _ = self.shared.place.set(place);
        }
        let _ = self.shared.watch.set(watch);
    }

    /// [`Self::watch_with`] for write lane `lane`, from its first watched
    /// request on: one write held there holds the lane.
    pub(crate) fn watch_as_lane(&self, watch: Arc<dyn Watch>, lane: u8) {
        self.shared.eager.store(true, Ordering::Relaxed);
        self.watch_with(watch, Some(WriteConn::Lane(lane)));
    }

    /// Whether its node holds it now (its oldest request, as a check found).
    pub(crate) fn is_held(&self) -> bool {
        self.shared.held.load(Ordering::Relaxed)
    }

    /// Whether the socket is still believed good.
    pub(crate) fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::Acquire)
    }

    /// Sends `bytes` (one or more encoded commands producing `replies`
    /// replies, sent back to back) and waits up to `timeout` for the replies.
    pub(crate) async fn request(
        &self,
        bytes: &[u8],
        replies: usize,
        timeout: Duration,
    ) -> Result<Frames, ConnError> {
        let until = Instant::now() + timeout.min(FAR);
        self.request_in(bytes, replies, until, None).await
    }

    /// [`Self::request`] with a deadline, holding `room` (a place among
    /// the node's requests in flight) until its replies come or the
    /// connection ends.
    pub(crate) async fn request_in(
        &self,
        bytes: &[u8],
        replies: usize,
        until: Instant,
        room: Option<OwnedSemaphorePermit>,
    ) -> Result<Frames, ConnError> {
        self.request_as(bytes, replies, until, room, SlotKind::Plain)
            .await
    }

    /// [`Self::request_in`] for a request of `kind`: what its time-out
    /// and a held connection do to it (`zaris_core::hold`).
    pub(crate) async fn request_as(
        &self,
        bytes: &[u8],
        replies: usize,
        until: Instant,
        room: Option<OwnedSemaphorePermit>,
        kind: SlotKind,
    ) -> Result<Frames, ConnError> {
        let (done, reply) = oneshot::channel();
        let slot = Slot {
            id: 0,
            replies,
            done: Some(done),
            deadline: until,
            _room: room,
            kind,
        };
        let (me, reads) = self.shared.submit(bytes, slot)?;
        let mut wait = Waiting {
            shared: &self.shared,
            me,
            reply,
            answered: !matches!(kind, SlotKind::Write { .. }),
        };
        let reply = if reads {
            let _reading = Reading(&self.shared);
            std::future::poll_fn(|cx| self.shared.poll_own_reply(&mut wait.reply, me, cx)).await
        } else {
            (&mut wait.reply)
                .await
                .unwrap_or_else(|_| Err(self.shared.ended()))
        };
        wait.answered = true;
        reply
    }
}

/// A caller's wait for the reply of slot `me`. A write's caller that gives
/// up on it before its reply (its future dropped) has it noted if its node
/// holds the connection: no later write to its slot overtakes it
/// (`zaris_core::HeldWrites`).
struct Waiting<'a> {
    shared: &'a Shared,
    me: u64,
    reply: oneshot::Receiver<super::slot::Reply>,
    /// Answered, or not a write: nothing to note.
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.answered {
            // Closed first: a hold noting the given-up writes sees it.
            self.reply.close();
            self.shared.stopped_waiting(self.me);
        }
    }
}

/// A socket to a node: plain TCP (the fast path: a lone caller reads and
/// writes it itself), or any other byte stream through the task alone (TLS
/// over TCP; with the `sim` feature, a simulated network's stream).
pub(crate) type Stream = Either<TcpStream, Box<dyn Io>>;

/// A byte stream the connection's task can drive.
pub(crate) trait Io:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static
{
}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Io for T {}
