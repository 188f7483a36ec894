//! One multiplexed, pipelined connection to one node.
//!
//! Callers hand the connection's task encoded commands over a channel; it
//! writes whatever is queued in one go (pipelining), keeps each request's
//! reply slot in order, parses replies (`codec`) and completes the slots
//! first-in first-out. Requests from any number of tasks share the socket;
//! a caller that stops waiting (deadline) leaves its slot behind, and its
//! reply is read and dropped, so the order never slips.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit};
use tokio_util::either::Either;

use super::ConnError;
use crate::codec::{take_frames, Frame, Limits};

/// The reader asks the socket for up to this much at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A write is cut at this size; what is left goes in the next.
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// One request: its encoded commands and how many replies they produce.
struct Request {
    bytes: Bytes,
    replies: usize,
    done: oneshot::Sender<Result<Vec<Frame>, ConnError>>,
    room: Option<OwnedSemaphorePermit>,
}

/// A reply slot, in send order.
struct Pending {
    replies: usize,
    done: oneshot::Sender<Result<Vec<Frame>, ConnError>>,
    /// Its place among the node's requests in flight, held until its
    /// replies come or the connection ends, whether or not its caller
    /// still waits: a reply owed is a request the node still holds.
    _room: Option<OwnedSemaphorePermit>,
}

/// A live connection; cheap to share (`Arc`), closed when the last handle
/// and both tasks are gone or the socket fails.
pub(crate) struct Connection {
    requests: mpsc::Sender<Request>,
    alive: Arc<Health>,
}

/// What a connection's task tells its handles: whether the socket is
/// good, and once it is not, why (so a request queued after the end gets
/// the real reason, not "closed").
#[derive(Default)]
pub(crate) struct Health {
    alive: AtomicBool,
    ended: std::sync::OnceLock<ConnError>,
}

impl Health {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            alive: AtomicBool::new(true),
            ended: std::sync::OnceLock::new(),
        })
    }

    /// Why the connection ended (or that it did).
    fn ended(&self) -> ConnError {
        self.ended
            .get()
            .cloned()
            .unwrap_or_else(|| ConnError::Reset("connection closed".into()))
    }
}

impl Connection {
    /// Starts the driver task on an open socket to `addr`.
    pub(crate) fn start(stream: Stream, limits: Limits, addr: &str) -> Self {
        let (requests, queue) = mpsc::channel(4096);
        let alive = Health::new();
        let name = addr.to_owned();
        match stream {
            Either::Left(tcp) => {
                tokio::spawn(drive(tcp, queue, alive.clone(), limits, name));
            }
            Either::Right(tls) => {
                tokio::spawn(drive_stream(tls, queue, alive.clone(), limits, name));
            }
        }
        Self { requests, alive }
    }

    /// Whether the socket is still believed good.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.alive.load(Ordering::Acquire)
    }

    /// Sends `bytes` (one or more encoded commands producing `replies`
    /// replies, sent back to back) and waits up to `timeout` for the replies.
    pub(crate) async fn request(
        &self,
        bytes: Bytes,
        replies: usize,
        timeout: Duration,
    ) -> Result<Vec<Frame>, ConnError> {
        self.request_in(bytes, replies, timeout, None).await
    }

    /// [`Self::request`], holding `room` (a place among the node's
    /// requests in flight) until its replies come or the connection ends.
    pub(crate) async fn request_in(
        &self,
        bytes: Bytes,
        replies: usize,
        timeout: Duration,
        room: Option<OwnedSemaphorePermit>,
    ) -> Result<Vec<Frame>, ConnError> {
        let (done, reply) = oneshot::channel();
        let send = self.requests.send(Request {
            bytes,
            replies,
            done,
            room,
        });
        let wait = async {
            send.await.map_err(|_| self.alive.ended())?;
            reply.await.map_err(|_| self.alive.ended())?
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(ConnError::TimedOut))
    }
}

/// A socket to a node: plain TCP, or TLS over it.
pub(crate) type Stream = Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;

/// The connection's one task: writes whatever callers queued in one go,
/// reads replies and hands them out in order. One task, not a reader and a
/// writer, so a reply costs no extra wake-up.
async fn drive(
    stream: TcpStream,
    mut queue: mpsc::Receiver<Request>,
    alive: Arc<Health>,
    limits: Limits,
    addr: String,
) {
    let mut conn = Driver::new(limits);
    let mut open = true;
    let mut last_batch = 0;
    let error = loop {
        // Everything queued goes out in one write. Under concurrency, the
        // other tasks get one more turn to queue theirs first: one larger
        // write costs the node (and us) fewer system calls than several.
        let mut batch = 0;
        let mut yielded = false;
        while open && conn.out.len() < MAX_BATCH_BYTES {
            match queue.try_recv() {
                Ok(request) => {
                    conn.push(request);
                    batch += 1;
                }
                Err(mpsc::error::TryRecvError::Empty)
                    if !yielded && batch > 0 && last_batch > 1 =>
                {
                    yielded = true;
                    tokio::task::yield_now().await;
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => open = false,
            }
        }
        if batch > 0 {
            last_batch = batch;
        }
        if !open && conn.nobody_waits(&addr) {
            break None; // every handle dropped: no reply can reach anyone
        }
        if let Err(e) = conn.write_some(&stream) {
            break Some(e);
        }
        match conn.read_some(&stream, &addr) {
            Ok(()) => {}
            Err(e) => break Some(e),
        }
        let writing = !conn.out.is_empty();
        let room = open && conn.out.len() < MAX_BATCH_BYTES;
        tokio::select! {
            ready = stream.readable() => if let Err(e) = ready {
                break Some(ConnError::Reset(format!("{addr}: {e}")));
            },
            ready = stream.writable(), if writing => if let Err(e) = ready {
                break Some(ConnError::Reset(format!("{addr}: {e}")));
            },
            request = queue.recv(), if room => match request {
                Some(request) => conn.push(request),
                None => open = false,
            },
        }
    };
    conn.shut(error, &mut queue, &alive, &addr);
}

/// The one task of a connection over any stream (TLS): the same batching
/// and reply delivery as [`drive`], through `AsyncRead`/`AsyncWrite`
/// (rustls needs its own buffers, so the plain socket's readiness tricks do
/// not apply).
async fn drive_stream<S>(
    mut stream: S,
    mut queue: mpsc::Receiver<Request>,
    alive: Arc<Health>,
    limits: Limits,
    addr: String,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Driver::new(limits);
    let mut open = true;
    let error = loop {
        while open && conn.out.len() < MAX_BATCH_BYTES {
            match queue.try_recv() {
                Ok(request) => conn.push(request),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => open = false,
            }
        }
        if !open && conn.nobody_waits(&addr) {
            break None;
        }
        let step =
            std::future::poll_fn(|cx| conn.poll_io(&mut stream, &mut queue, open, cx, &addr)).await;
        match step {
            Ok(still_open) => open = still_open,
            Err(e) => break Some(e),
        }
    };
    let _ = stream.shutdown().await;
    conn.shut(error, &mut queue, &alive, &addr);
}

impl Driver {
    /// One turn of [`drive_stream`]: writes, flushes, reads and takes new
    /// requests as far as each can go without waiting; ready once any
    /// made progress (with whether the queue is still open).
    fn poll_io<S>(
        &mut self,
        stream: &mut S,
        queue: &mut mpsc::Receiver<Request>,
        open: bool,
        cx: &mut Context<'_>,
        addr: &str,
    ) -> Poll<Result<bool, ConnError>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut progress = false;
        while !self.out.is_empty() {
            match Pin::new(&mut *stream).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(self.closed(addr))),
                Poll::Ready(Ok(n)) => {
                    self.out.advance(n);
                    self.unflushed = true;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.broken(addr, &e))),
                Poll::Pending => break,
            }
        }
        if self.out.is_empty() && self.unflushed {
            match Pin::new(&mut *stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.broken(addr, &e))),
                Poll::Pending => {}
            }
        }
        loop {
            if self.input.capacity() - self.input.len() < READ_CHUNK / 4 {
                self.input.reserve(READ_CHUNK);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut *stream), cx, &mut self.input) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(self.closed(addr))),
                Poll::Ready(Ok(_)) => {
                    if let Err(e) = self.deliver(addr) {
                        return Poll::Ready(Err(e));
                    }
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.broken(addr, &e))),
                Poll::Pending => break,
            }
        }
        let mut still_open = open;
        if open && self.out.len() < MAX_BATCH_BYTES {
            match queue.poll_recv(cx) {
                Poll::Ready(Some(request)) => {
                    self.push(request);
                    progress = true;
                }
                Poll::Ready(None) => {
                    still_open = false;
                    progress = true;
                }
                Poll::Pending => {}
            }
        }
        if progress {
            Poll::Ready(Ok(still_open))
        } else {
            Poll::Pending
        }
    }

    /// The connection is over: marks it dead and fails every request
    /// written or queued with `error`.
    fn shut(
        &mut self,
        error: Option<ConnError>,
        queue: &mut mpsc::Receiver<Request>,
        alive: &Health,
        addr: &str,
    ) {
        let error = error.unwrap_or_else(|| ConnError::Reset("connection closed".into()));
        let _ = alive.ended.set(error.clone());
        alive.alive.store(false, Ordering::Release);
        tracing::debug!(addr, %error, "connection closed");
        queue.close();
        while let Ok(request) = queue.try_recv() {
            self.push(request);
        }
        for slot in self.pending.drain(..) {
            let _ = slot.done.send(Err(error.clone()));
        }
    }
}

/// The state of one connection's task.
struct Driver {
    /// Reply slots of the requests written (or about to be), in order.
    pending: VecDeque<Pending>,
    /// Replies collected so far for `pending.front()`.
    frames: Vec<Frame>,
    out: BytesMut,
    input: BytesMut,
    limits: Limits,
    /// Whether the node ever answered: a connection closed before any
    /// reply is most often plain text sent to a TLS port.
    answered: bool,
    /// Bytes handed to a TLS stream that it may still hold.
    unflushed: bool,
}

impl Driver {
    fn new(limits: Limits) -> Self {
        Self {
            pending: VecDeque::new(),
            frames: Vec::new(),
            out: BytesMut::with_capacity(16 * 1024),
            input: BytesMut::with_capacity(READ_CHUNK),
            limits,
            answered: false,
            unflushed: false,
        }
    }

    /// The error for a connection the node closed.
    fn closed(&self, addr: &str) -> ConnError {
        ConnError::Reset(format!("{addr} closed the connection{}", self.hint()))
    }

    /// The error for a connection that broke (`e`): a TLS alert stays a
    /// TLS failure (TLS 1.3 reports a refused client certificate on the
    /// first read, after the handshake).
    fn broken(&self, addr: &str, e: &io::Error) -> ConnError {
        match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(tls) => ConnError::Tls(tls.to_string()),
            None => ConnError::Reset(format!("{addr}: {e}{}", self.hint())),
        }
    }

    /// A connection that ends before any reply most often sent plain text
    /// to a TLS port.
    fn hint(&self) -> &'static str {
        if self.answered {
            ""
        } else {
            " before answering (a TLS port? use rediss://)"
        }
    }

    /// Completes every whole reply in the input, in order.
    fn deliver(&mut self, addr: &str) -> Result<(), ConnError> {
        self.answered |= !self.input.is_empty();
        let (pending, frames) = (&mut self.pending, &mut self.frames);
        take_frames(&mut self.input, self.limits, |frame| {
            if let Frame::Push(items) = &frame {
                // RESP3 out of band (an invalidation, a server's notice): not
                // the reply of any request.
                tracing::debug!(
                    addr,
                    items = items.len(),
                    "a push frame, not a reply: dropped"
                );
                return Ok(());
            }
            let Some(slot) = pending.front() else {
                return Err(ConnError::Protocol(format!(
                    "{addr} sent a reply nobody asked for: {frame:?}"
                )));
            };
            if frames.is_empty() {
                frames.reserve_exact(slot.replies);
            }
            frames.push(frame);
            if frames.len() >= slot.replies {
                let slot = pending.pop_front().expect("a front slot");
                if slot.done.send(Ok(std::mem::take(frames))).is_err() {
                    // Its caller gave up (a time-out, a dropped future):
                    // whatever the reply carried goes to no one, so say so.
                    tracing::warn!(
                        addr,
                        "a reply came for a request whose caller gave up; dropped"
                    );
                }
            }
            Ok(())
        })
    }

    /// With every handle to the connection dropped (so no caller can be
    /// waiting on it): whether to close now. It is, even with replies
    /// still owed: no one can receive them, and a server holding a blocked
    /// command for this connection (`BLPOP`) would hand its next item to
    /// no one. Closing makes the server unblock it instead. A reply still
    /// wanted (never, once every handle is gone) keeps it open.
    fn nobody_waits(&self, addr: &str) -> bool {
        if self.pending.iter().any(|slot| !slot.done.is_closed()) {
            return false;
        }
        if !self.pending.is_empty() {
            tracing::warn!(
                addr,
                abandoned = self.pending.len(),
                "closing a connection whose callers gave up before their replies: \
                 the server drops what it held for it (a blocked command is unblocked, not served)"
            );
        }
        true
    }

    fn push(&mut self, request: Request) {
        self.pending.push_back(Pending {
            replies: request.replies,
            done: request.done,
            _room: request.room,
        });
        self.out.extend_from_slice(&request.bytes);
    }

    /// Writes what the socket takes now.
    fn write_some(&mut self, stream: &TcpStream) -> Result<(), ConnError> {
        while !self.out.is_empty() {
            match stream.try_write(&self.out) {
                Ok(n) => self.out.advance(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(ConnError::Reset(e.to_string())),
            }
        }
        Ok(())
    }

    /// Reads what the socket has now and completes every whole reply.
    fn read_some(&mut self, stream: &TcpStream, addr: &str) -> Result<(), ConnError> {
        loop {
            // Read in large chunks: a full buffer would otherwise grow by 64
            // bytes per read, one system call each.
            if self.input.capacity() - self.input.len() < READ_CHUNK / 4 {
                self.input.reserve(READ_CHUNK);
            }
            // A read shorter than the room offered drained the socket: say
            // so (a would-block from the closure clears the readiness; an
            // edge that came meanwhile is kept), and skip the read that
            // would only answer EAGAIN. One system call in three saved.
            let room = self.input.capacity() - self.input.len();
            let mut got = 0;
            let read = stream.try_io(Interest::READABLE, || {
                got = stream.try_read_buf(&mut self.input)?;
                if got > 0 && got < room {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(got)
                }
            });
            let drained = match read {
                Ok(0) => return Err(self.closed(addr)),
                Ok(_) => false,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(self.broken(addr, &e)),
            };
            self.deliver(addr)?;
            if drained {
                return Ok(());
            }
        }
    }
}
