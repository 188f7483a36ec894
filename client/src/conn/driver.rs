//! A connection's task: it gathers what callers queued into one write,
//! reads when no lone caller does, keeps the reply slots' deadlines with
//! one timer, and ends the connection when the socket breaks
//! (`shared.rs` holds what it shares with the callers).

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::error::ConnError;
use super::shared::{round, Shared, READ_CHUNK};
use super::slot::{Slot, SlotKind, FAR};
use zaris_core::{at_attempt_time_out, AtTimeOut, Liveness, ALIVE_CHECK_TIMEOUT, STALL_TICK};

/// A write is cut at this size; what is left goes in the next.
pub(super) const MAX_BATCH_BYTES: usize = 64 * 1024;

/// What ended the task's last wait.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Woke {
    /// The socket (or, on the first turn, nothing yet).
    Io,
    /// A caller: bytes queued, an earlier deadline, the last handle gone.
    Caller,
    /// The deadline timer.
    Timer,
}

/// The connection's one task over plain TCP: writes what callers queued
/// in one go, reads replies and hands them out in order (unless a lone
/// caller reads its own), keeps the deadlines. One task, not a reader and
/// a writer, so a reply costs no extra wake-up.
pub(super) async fn drive(shared: Arc<Shared>) {
    let _ending = Ending(shared.clone());
    let addr = shared.addr.as_str();
    let tcp = shared.tcp.as_ref().expect("a plain TCP connection");
    let waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
    let _ = shared.task_waker.set(waker);
    let mut conn = Driver::new();
    let timer = tokio::time::sleep(FAR);
    tokio::pin!(timer);
    let mut woke = Woke::Io;
    let error = loop {
        let read = shared.reader().read_some(tcp, &shared, None);
        match read {
            // The callers these replies woke get a turn to queue their
            // next requests, gathered into one write below; so do the
            // others that the first to queue bytes ran ahead of.
            Ok((answered, _)) if answered.gathers() || woke == Woke::Caller => {
                if answered.gathers() {
                    round::begin(answered.slots);
                }
                // Behind the callers it woke, and behind those that other
                // tasks woke meanwhile (a few turns at most: a caller may
                // send nothing more, or run on another thread).
                for _ in 0..round::MOST_TURNS {
                    behind_the_woken().await;
                    if !round::pending() {
                        break;
                    }
                }
                round::end();
            }
            Ok(_) => {}
            Err(e) => break Some(e),
        }
        if !shared.alive.load(Ordering::Acquire) {
            break None; // a reading caller met the end
        }
        conn.gather(&shared);
        if let Err(e) = conn.write_some(tcp) {
            break Some(e);
        }
        conn.keep_time(&shared, timer.as_mut(), woke == Woke::Timer);
        if conn.nobody_waits(&shared, addr) {
            break None; // every handle dropped: no reply can reach anyone
        }
        let writing = !conn.out.is_empty();
        woke = tokio::select! {
            // In order, not at random: each turn serves every source anyway.
            biased;
            // One waiter on the socket at a time: the poll forms keep one
            // waker each (where `readable()` enlists a waiter per turn),
            // and while a caller reads its own reply that waker is its.
            ready = std::future::poll_fn(|cx| {
                if shared.caller_reads.load(Ordering::Acquire) {
                    Poll::Pending
                } else {
                    tcp.poll_read_ready(cx)
                }
            }) => match ready {
                Ok(()) => Woke::Io,
                Err(e) => break Some(ConnError::Reset(format!("{addr}: {e}"))),
            },
            ready = std::future::poll_fn(|cx| tcp.poll_write_ready(cx)), if writing => match ready {
                Ok(()) => Woke::Io,
                Err(e) => break Some(ConnError::Reset(format!("{addr}: {e}"))),
            },
            () = shared.woken() => Woke::Caller,
            () = &mut timer, if conn.timed => Woke::Timer,
        };
        // Running now, the task reads `woken` on its next wait: a caller's
        // wake meanwhile need not schedule it again (from another worker,
        // a system call to unpark this one).
        shared.task.take();
    };
    conn.shut(&shared, error);
}

/// Lets the tasks this one woke run before it goes on: it wakes itself
/// and waits once, so the runtime queues it behind them. Not
/// `tokio::task::yield_now`, which defers the task until the runtime has
/// polled its I/O driver: one more system call (`epoll_wait` with no
/// time-out) each turn, for readiness the next wait would see anyway.
async fn behind_the_woken() {
    let mut waited = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut waited, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// The one task of a connection over any stream (TLS): the same batching,
/// reply delivery and deadlines as [`drive`], through `AsyncRead` and
/// `AsyncWrite` (rustls needs its own buffers, so the plain socket's
/// readiness tricks, and callers reading for themselves, do not apply).
pub(super) async fn drive_stream<S>(mut stream: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ending = Ending(shared.clone());
    let mut conn = Driver::new();
    let timer = tokio::time::sleep(FAR);
    tokio::pin!(timer);
    let mut woke = Woke::Io;
    let error = loop {
        conn.gather(&shared);
        conn.keep_time(&shared, timer.as_mut(), woke == Woke::Timer);
        if conn.nobody_waits(&shared, &shared.addr) {
            break None;
        }
        let timed = conn.timed;
        let io = std::future::poll_fn(|cx| conn.poll_io(&mut stream, &shared, cx));
        woke = tokio::select! {
            biased;
            step = io => match step {
                Ok(()) => Woke::Io,
                Err(e) => break Some(e),
            },
            () = shared.woken() => Woke::Caller,
            () = &mut timer, if timed => Woke::Timer,
        };
    };
    let _ = stream.shutdown().await;
    conn.shut(&shared, error);
}

/// Ends the connection if its task stops any other way than through
/// [`Driver::shut`] (its runtime shut down): the slots live in the shared
/// state, so their callers must still hear.
pub(super) struct Ending(Arc<Shared>);

impl Drop for Ending {
    fn drop(&mut self) {
        self.0
            .end(ConnError::Reset("the connection's task stopped".into()));
    }
}

/// The state of one connection's task.
pub(super) struct Driver {
    /// Bytes taken from the callers' queue, not yet written.
    pub(super) out: BytesMut,
    /// Whether the timer is armed.
    pub(super) timed: bool,
    /// Bytes handed to a TLS stream that it may still hold.
    pub(super) unflushed: bool,
}

/// A waited slot at `now`, its node having said `liveness`: when to look
/// at it again, or `None` once its caller was told. At its attempt's
/// deadline a write has its node asked whether it is alive (unless it
/// said so lately) and waits for the answer; one its node holds waits on
/// (`zaris_core::hold`), looked at each tick, to its request's deadline;
/// anything else times out.
fn look_at(slot: &mut Slot, now: Instant, liveness: Liveness, ask: &mut bool) -> Option<Instant> {
    if now < slot.deadline {
        return Some(slot.deadline);
    }
    let told = match slot.kind {
        SlotKind::Write { last, .. } => {
            let movable = crate::seam::planted(crate::seam::Plant::ResentAfterTimeOut);
            match at_attempt_time_out(movable, liveness) {
                AtTimeOut::WaitOn if last > now => {
                    // Asked again while it waits, so the answer stays fresh.
                    *ask = true;
                    return Some(last.min(now + STALL_TICK));
                }
                AtTimeOut::WaitOn => ConnError::Held,
                // Asked now; the time-out waits for the answer (the check
                // wakes the task), as long as an answer may take, never
                // past the request's deadline.
                AtTimeOut::Ask if now < (slot.deadline + ALIVE_CHECK_TIMEOUT).min(last) => {
                    *ask = true;
                    return Some((slot.deadline + ALIVE_CHECK_TIMEOUT).min(last));
                }
                AtTimeOut::Ask | AtTimeOut::GiveUp => ConnError::TimedOut,
            }
        }
        _ => ConnError::TimedOut,
    };
    if let Some(done) = slot.done.take() {
        let _ = done.send(Err(told));
    }
    None
}

impl Driver {
    pub(super) fn new() -> Self {
        Self {
            out: BytesMut::with_capacity(16 * 1024),
            timed: false,
            unflushed: false,
        }
    }

    /// Takes what callers queued, unless a batch is already waiting to be
    /// written.
    pub(super) fn gather(&mut self, shared: &Shared) {
        if self.out.len() >= MAX_BATCH_BYTES {
            return;
        }
        let mut state = shared.lock();
        state.gathering = false;
        if state.out.is_empty() {
            return;
        }
        if self.out.is_empty() {
            std::mem::swap(&mut self.out, &mut state.out);
        } else {
            self.out.extend_from_slice(&state.out);
            state.out.clear();
        }
    }

    /// The deadlines: on the timer, tells every caller whose deadline
    /// passed that it timed out (its slot stays, for the reply still owed;
    /// a write its node holds waits on, [`look_at`]) and arms for the next;
    /// on a caller's earlier deadline, re-arms. A watched connection's
    /// timer also ticks every `STALL_TICK` while it owes several replies:
    /// a tick that finds it stalled has its node asked whether it is
    /// alive, as has a write at its time-out.
    pub(super) fn keep_time(
        &mut self,
        shared: &Arc<Shared>,
        timer: Pin<&mut tokio::time::Sleep>,
        fired: bool,
    ) {
        let mut state = shared.lock();
        if fired {
            let now = Instant::now();
            let liveness = Shared::liveness(&state, now);
            let mut next: Option<Instant> = None;
            let mut ask = false;
            for slot in &mut state.slots {
                if !slot.waited() {
                    continue;
                }
                match look_at(slot, now, liveness, &mut ask) {
                    Some(again) => next = Some(next.map_or(again, |n| n.min(again))),
                    // Told: a write given up while still owed.
                    None => shared.gave_up(slot),
                }
            }
            // A connection owing several watched replies ticks: a read may
            // wait behind a held request.
            let mut watched = state.slots.iter().filter(|s| s.kind != SlotKind::Plain);
            state.ticking = shared.watch.get().is_some() && watched.nth(1).is_some();
            if state.ticking {
                let tick = now + STALL_TICK;
                next = Some(next.map_or(tick, |n| n.min(tick)));
            }
            let check = shared.tick(&mut state, now) || (ask && shared.may_check(&mut state, now));
            state.armed = next;
            state.rearm = false;
            self.timed = false;
            if let Some(at) = next {
                timer.reset(at);
                self.timed = true;
            }
            drop(state);
            if check {
                shared.check();
            }
        } else if state.rearm {
            state.rearm = false;
            if let Some(at) = state.armed {
                timer.reset(at);
                self.timed = true;
            }
        }
    }

    /// With every handle to the connection dropped (so no caller can be
    /// waiting on it): whether to close now. It is, even with replies
    /// still owed: no one can receive them, and a server holding a blocked
    /// command for this connection (`BLPOP`) would hand its next item to
    /// no one. Closing makes the server unblock it instead. A reply still
    /// wanted (never, once every handle is gone) keeps it open.
    pub(super) fn nobody_waits(&self, shared: &Shared, addr: &str) -> bool {
        let state = shared.lock();
        if !state.released || state.slots.iter().any(Slot::waited) {
            return false;
        }
        if !state.slots.is_empty() {
            tracing::warn!(
                addr,
                abandoned = state.slots.len(),
                "closing a connection whose callers gave up before their replies: \
                 the server drops what it held for it (a blocked command is unblocked, not served)"
            );
        }
        true
    }

    /// Writes what the socket takes now.
    pub(super) fn write_some(&mut self, stream: &TcpStream) -> Result<(), ConnError> {
        while !self.out.is_empty() {
            match stream.try_write(&self.out) {
                Ok(n) => self.out.advance(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(ConnError::Reset(e.to_string())),
            }
        }
        Ok(())
    }

    /// One turn of [`drive_stream`]'s I/O: writes, flushes and reads as
    /// far as each can go without waiting; ready once any made progress.
    pub(super) fn poll_io<S>(
        &mut self,
        stream: &mut S,
        shared: &Shared,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), ConnError>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let addr = shared.addr.as_str();
        let mut reader = shared.reader();
        let mut progress = false;
        while !self.out.is_empty() {
            match Pin::new(&mut *stream).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(reader.closed(addr))),
                Poll::Ready(Ok(n)) => {
                    self.out.advance(n);
                    self.unflushed = true;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(reader.broken(addr, &e))),
                Poll::Pending => break,
            }
        }
        if self.out.is_empty() && self.unflushed {
            match Pin::new(&mut *stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(reader.broken(addr, &e))),
                Poll::Pending => {}
            }
        }
        loop {
            if reader.input.capacity() - reader.input.len() < READ_CHUNK / 4 {
                reader.input.reserve(READ_CHUNK);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut *stream), cx, &mut reader.input) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(reader.closed(addr))),
                Poll::Ready(Ok(_)) => {
                    if let Err(e) = reader.deliver(shared, None) {
                        return Poll::Ready(Err(e));
                    }
                    progress = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(reader.broken(addr, &e))),
                Poll::Pending => break,
            }
        }
        if progress {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    /// The connection is over: marks it dead and fails every request
    /// written or queued with `error`.
    pub(super) fn shut(&mut self, shared: &Shared, error: Option<ConnError>) {
        let error = error.unwrap_or_else(|| ConnError::Reset("connection closed".into()));
        tracing::debug!(addr = shared.addr, %error, "connection closed");
        shared.end(error);
    }
}
