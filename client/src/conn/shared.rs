//! One multiplexed, pipelined connection to one node.
//!
//! Callers and the connection's task share one state under a lock: the
//! reply slots in send order and the bytes not yet written. A caller alone
//! on an idle connection writes its request to the socket itself and reads
//! its reply itself, on its own poll: one system call each way, and no
//! wake-up of the task, or hand-off to it, in between. Otherwise a caller
//! appends to what the task writes next, and under concurrency the task
//! gathers everything queued into one write. Whoever reads (the task, or
//! that lone caller) parses the replies (`codec`) and completes the slots
//! first-in first-out; the task keeps their deadlines with one timer per
//! connection, not one per request. A caller that stops waiting (deadline,
//! dropped future) leaves its slot behind, and its reply is read and
//! dropped, so the order never slips.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;
use futures_util::task::AtomicWaker;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::Instant;
use zaris_core::{Progress, WriteConn, STALL_TICK};

use super::error::ConnError;
use super::slot::{PushSink, Reply, Slot, SlotKind, Watch, WriteTo};
use crate::codec::{take_frames, Frame, Frames, Limits};

/// The reader asks the socket for up to this much at a time.
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// What callers and the task share, under [`Shared::state`].
#[derive(Default)]
pub(super) struct State {
    pub(super) slots: VecDeque<Slot>,
    /// Bytes queued for the task to write, in slot order.
    pub(super) out: BytesMut,
    /// The task's timer fires no later than this (`None`: not armed):
    /// a caller with an earlier deadline moves it and wakes the task.
    pub(super) armed: Option<Instant>,
    /// `armed` moved by a caller: the task re-arms.
    pub(super) rearm: bool,
    /// The timer ticks (every `STALL_TICK`): the connection owes several
    /// watched replies, so a read may wait behind a held request.
    pub(super) ticking: bool,
    /// Why the connection ended, once it has: requests fail at once.
    pub(super) ended: Option<ConnError>,
    /// Every handle is gone.
    pub(super) released: bool,
    /// The next slot's number.
    pub(super) next_id: u64,
    /// The task answered several callers and yields before it writes
    /// again: their next requests wait for that write, not go alone.
    pub(super) gathering: bool,
    /// Where it stood at the watcher's last tick (`None`: it owed nothing).
    pub(super) stall: Option<Progress>,
    /// Its node answered a check, on another connection, while this one
    /// was stalled; the answer vouches for it until then.
    pub(super) alive_until: Option<Instant>,
    /// Its node did not answer the last check.
    pub(super) silent: bool,
    /// A check is under way, or the last began then.
    pub(super) checked_at: Option<Instant>,
    pub(super) checking: bool,
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// The input and what is parsed of it, held by whoever reads.
    pub(super) reader: Mutex<Reader>,
    /// Wakes the task ([`Shared::wake`]): bytes to write, an earlier
    /// deadline, the last handle gone.
    pub(super) task: AtomicWaker,
    pub(super) woken: AtomicBool,
    pub(super) alive: AtomicBool,
    /// A lone caller reads its own reply: the socket's read readiness
    /// wakes it, not the task, until it hands it back
    /// ([`Shared::stop_reading`]).
    pub(super) caller_reads: AtomicBool,
    /// The task's waker, set on its first turn: the readiness a reading
    /// caller hands back goes to it.
    pub(super) task_waker: OnceLock<Waker>,
    /// The socket, for a lone caller's own write and read (plain TCP;
    /// over TLS all I/O goes through the task and rustls).
    pub(super) tcp: Option<TcpStream>,
    pub(super) addr: String,
    /// Where its pushes go, once it tracks keys (`CLIENT TRACKING ON`).
    pub(super) pushes: OnceLock<Arc<dyn PushSink>>,
    /// Who asks its node whether it is alive when it stalls: set on a
    /// node's shared connection, whose requests it routes.
    pub(super) watch: OnceLock<Arc<dyn Watch>>,
    /// Bytes read from it so far: a long reply still coming is progress.
    pub(super) bytes_read: AtomicU64,
    /// Stalled, and its node answered on another connection: it holds
    /// this one's oldest request (paused, or a `WAIT`), so reads go
    /// elsewhere. Cleared by its next reply.
    pub(super) held: AtomicBool,
    /// Watched from its first watched request, not its second: a write
    /// lane, where one write held is already one too many.
    pub(super) eager: AtomicBool,
    /// Which of its node's write connections it is (`None`: one of a
    /// caller's own, a transaction's).
    pub(super) place: OnceLock<WriteConn>,
}

impl Shared {
    pub(super) fn new(tcp: Option<TcpStream>, limits: Limits, addr: &str) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            reader: Mutex::new(Reader::new(limits)),
            task: AtomicWaker::new(),
            woken: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            caller_reads: AtomicBool::new(false),
            task_waker: OnceLock::new(),
            tcp,
            addr: addr.to_owned(),
            pushes: OnceLock::new(),
            watch: OnceLock::new(),
            bytes_read: AtomicU64::new(0),
            held: AtomicBool::new(false),
            eager: AtomicBool::new(false),
            place: OnceLock::new(),
        })
    }

    pub(super) fn reader(&self) -> MutexGuard<'_, Reader> {
        self.reader.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the task (or, if it is running, makes its next wait end at
    /// once).
    pub(super) fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }

    /// Until [`Self::wake`] (since the last time this returned). Cheaper
    /// than a `Notify`: nothing to enlist per wait, and a wait the task
    /// is not woken from costs one atomic swap and a waker comparison.
    pub(super) fn woken(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if self.woken.swap(false, Ordering::AcqRel) {
                return Poll::Ready(());
            }
            self.task.register(cx.waker());
            if self.woken.swap(false, Ordering::AcqRel) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a request of `kind`, not sent yet, leaves this connection
    /// while its node holds it: a read does; a write does when
    /// `zaris_core::write_lane` places it elsewhere.
    pub(super) fn leaves(&self, kind: SlotKind) -> bool {
        match kind {
            SlotKind::Read => true,
            SlotKind::Write { mut to, .. } => {
                if crate::seam::planted(crate::seam::Plant::WritesStayHeld) {
                    to = to.slot().map_or(WriteTo::Several, WriteTo::Placed);
                }
                let place = self.place.get().copied();
                self.watch
                    .get()
                    .is_some_and(|watch| !watch.write_stays(place, to))
            }
            _ => false,
        }
    }

    /// A reply came on a held connection: it is free again.
    pub(super) fn freed(&self) {
        if self.held.swap(false, Ordering::Relaxed) {
            tracing::info!(addr = self.addr, "a held connection answers again");
            if let Some(watch) = self.watch.get() {
                watch.freed();
            }
        }
    }

    /// Why the connection ended (or that it did).
    pub(super) fn ended(&self) -> ConnError {
        self.lock()
            .ended
            .clone()
            .unwrap_or_else(|| ConnError::Reset("connection closed".into()))
    }

    /// Ends the connection (once): marks it dead and fails every request
    /// written or queued with `error`.
    pub(super) fn end(&self, error: ConnError) {
        let slots = {
            let mut state = self.lock();
            if state.ended.is_some() {
                return;
            }
            state.ended = Some(error.clone());
            state.out.clear();
            std::mem::take(&mut state.slots)
        };
        self.alive.store(false, Ordering::Release);
        if let Some(sink) = self.pushes.get() {
            sink.closed(&self.addr);
        }
        // Held no more: it is gone.
        self.freed();
        for mut slot in slots {
            if let Some(done) = slot.done.take() {
                let _ = done.send(Err(error.clone()));
            }
        }
        // Ended by a reading caller: the task stops on its next turn.
        self.wake();
    }

    /// Queues `bytes` with its reply slot: written at once when the
    /// connection is idle (nothing owed, nothing queued), else by the task.
    /// Its slot's number, and whether the caller was alone and reads its
    /// own reply on its own poll ([`Self::poll_own_reply`]) until it hands
    /// the reading back ([`Self::stop_reading`]).
    pub(super) fn submit(&self, bytes: &[u8], mut slot: Slot) -> Result<(u64, bool), ConnError> {
        let (deadline, watched) = (slot.deadline, slot.kind != SlotKind::Plain);
        let mut state = self.lock();
        if let Some(why) = &state.ended {
            return Err(why.clone());
        }
        // Held since the caller looked: a read goes elsewhere, and a write
        // to a slot not held to a write lane.
        if self.held.load(Ordering::Relaxed) && self.leaves(slot.kind) {
            return Err(ConnError::Moved);
        }
        slot.id = state.next_id;
        state.next_id += 1;
        let mut rest = bytes;
        let (id, mut reads) = (slot.id, false);
        let idle = state.slots.is_empty()
            && state.out.is_empty()
            && !state.gathering
            && !round::queue_next();
        if let (Some(tcp), true) = (&self.tcp, idle) {
            rest = write_now(tcp, rest);
            if rest.is_empty() && !self.caller_reads.swap(true, Ordering::AcqRel) {
                reads = true;
            }
        }
        state.slots.push_back(slot);
        let mut wake = false;
        let mut arm_at = deadline;
        // A second watched request owed (on a write lane, a first): a read
        // may wait behind the first, so the timer ticks (the clock read
        // once, as it starts).
        let owed = if self.eager.load(Ordering::Relaxed) {
            0
        } else {
            1
        };
        if watched && state.slots.len() > owed && !state.ticking && self.watch.get().is_some() {
            state.ticking = true;
            arm_at = arm_at.min(Instant::now() + STALL_TICK);
        }
        if state.armed.is_none_or(|at| arm_at < at) {
            state.armed = Some(arm_at);
            state.rearm = true;
            wake = true;
        }
        if !rest.is_empty() {
            // The task was woken when `out` last became non-empty.
            wake |= state.out.is_empty();
            state.out.extend_from_slice(rest);
        }
        drop(state);
        if wake {
            self.wake();
        }
        Ok((id, reads))
    }

    /// A reading caller's wait for its reply (slot `me`): told by the
    /// task (a deadline passed, the task read it first) or by the end,
    /// or read off the socket here, with any replies before it, which go
    /// to their callers.
    pub(super) fn poll_own_reply(
        &self,
        told: &mut oneshot::Receiver<Reply>,
        me: u64,
        cx: &mut Context<'_>,
    ) -> Poll<Reply> {
        let tcp = self.tcp.as_ref().expect("a caller reads only plain TCP");
        loop {
            if let Poll::Ready(told) = Pin::new(&mut *told).poll(cx) {
                return Poll::Ready(told.unwrap_or_else(|_| Err(self.ended())));
            }
            if let Err(e) = std::task::ready!(tcp.poll_read_ready(cx)) {
                self.end(ConnError::Reset(format!("{}: {e}", self.addr)));
                continue;
            }
            let read = self.reader().read_some(tcp, self, Some(me));
            match read {
                Ok((_, Some((slot, mine)))) => {
                    // Closed first, its sender then drops without waking
                    // this (running) task: from the runtime's view a task
                    // that woke itself, rescheduled, and other workers
                    // unparked to take it.
                    told.close();
                    drop(slot);
                    return Poll::Ready(mine);
                }
                // The socket is drained: wait for its readiness again.
                Ok((_, None)) => {}
                // Every slot is failed, this one too: told above.
                Err(e) => self.end(e),
            }
        }
    }

    /// A reading caller is done (answered, or it gave up): the socket's
    /// read readiness goes back to the task, without waking it unless
    /// bytes are already there.
    pub(super) fn stop_reading(&self) {
        self.caller_reads.store(false, Ordering::Release);
        let (Some(tcp), Some(waker)) = (&self.tcp, self.task_waker.get()) else {
            // The task has not run yet: its first turn reads.
            return self.wake();
        };
        if tcp
            .poll_read_ready(&mut Context::from_waker(waker))
            .is_ready()
        {
            self.wake();
        }
    }
}

/// A caller's hold on reading its own reply, handed back however its
/// wait ends (a reply, an error, a dropped future).
pub(super) struct Reading<'a>(pub(super) &'a Shared);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.stop_reading();
    }
}

/// A round of replies on this thread: a connection's task answered
/// several callers at once, and waits behind them while they queue their
/// next requests. Those requests go to the tasks of their connections to
/// be written together, one write a connection, not the first alone on an
/// idle connection and the rest after it: the callers run before any of
/// those tasks do. A thread's count, never shared: a caller that runs
/// elsewhere writes as it would have, and a count left over makes at most
/// that many lone requests take their task's turn.
pub(super) mod round {
    use std::cell::Cell;

    thread_local! {
        /// Callers woken by a round here whose next request is still to come.
        static WOKEN: Cell<usize> = const { Cell::new(0) };
    }

    /// The most turns a task waits behind the round's callers.
    pub(crate) const MOST_TURNS: usize = 2;

    /// A task woke `callers` callers and waits behind them.
    pub(crate) fn begin(callers: usize) {
        WOKEN.with(|w| w.set(w.get() + callers));
    }

    /// Whether callers woken here have not sent their next requests yet.
    pub(crate) fn pending() -> bool {
        WOKEN.with(Cell::get) > 0
    }

    /// A task runs again after waiting: what is still counted is not
    /// waited for.
    pub(crate) fn end() {
        WOKEN.with(|w| w.set(0));
    }

    /// Whether a caller's request should wait for its connection's task
    /// (a round's caller), counted.
    pub(crate) fn queue_next() -> bool {
        WOKEN.with(|w| match w.get() {
            0 => false,
            n => {
                w.set(n - 1);
                true
            }
        })
    }
}

/// Writes what the socket takes of `bytes` now; returns the rest (all of
/// it after an error, which the task then meets and reports).
pub(super) fn write_now<'a>(tcp: &TcpStream, mut bytes: &'a [u8]) -> &'a [u8] {
    while !bytes.is_empty() {
        match tcp.try_write(bytes) {
            Ok(n) if n > 0 => bytes = &bytes[n..],
            _ => break,
        }
    }
    bytes
}

/// What a read completed: slots answered, and slots still owed a reply.
#[derive(Clone, Copy, Default)]
pub(super) struct Answered {
    pub(super) slots: usize,
    pub(super) owed: usize,
}

impl Answered {
    /// Whether the task gathers the next requests of the callers these
    /// replies woke into one write (it yields, so that they queue them
    /// first): under concurrency, one write for all costs the node and
    /// us fewer system calls than one each. A lone caller writes its own,
    /// and is not waited for.
    pub(super) fn gathers(&self) -> bool {
        self.slots > 1 || (self.slots == 1 && self.owed > 0)
    }
}

/// The reading side, shared ([`Shared::reader`]): the task reads, or a
/// lone caller on its own poll.
pub(super) struct Reader {
    /// Replies collected so far for the front slot.
    pub(super) frames: Frames,
    /// Replies parsed from the input, not yet handed to their slots.
    pub(super) parsed: Vec<Frame>,
    /// Slots answered, handed their replies once the lock is let go.
    pub(super) answered_slots: Vec<(Slot, Reply)>,
    pub(super) input: BytesMut,
    pub(super) limits: Limits,
    /// Whether the node ever answered: a connection closed before any
    /// reply is most often plain text sent to a TLS port.
    pub(super) answered: bool,
}

impl Reader {
    pub(super) fn new(limits: Limits) -> Self {
        Self {
            frames: Frames::new(),
            parsed: Vec::new(),
            answered_slots: Vec::new(),
            input: BytesMut::with_capacity(READ_CHUNK),
            limits,
            answered: false,
        }
    }

    /// The error for a connection the node closed.
    pub(super) fn closed(&self, addr: &str) -> ConnError {
        ConnError::Reset(format!("{addr} closed the connection{}", self.hint()))
    }

    /// The error for a connection that broke (`e`): a TLS alert stays a
    /// TLS failure (TLS 1.3 reports a refused client certificate on the
    /// first read, after the handshake).
    pub(super) fn broken(&self, addr: &str, e: &io::Error) -> ConnError {
        match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(tls) => ConnError::Tls(tls.to_string()),
            None => ConnError::Reset(format!("{addr}: {e}{}", self.hint())),
        }
    }

    /// A connection that ends before any reply most often sent plain text
    /// to a TLS port.
    pub(super) fn hint(&self) -> &'static str {
        if self.answered {
            ""
        } else {
            " before answering (a TLS port? use rediss://)"
        }
    }

    /// Completes every whole reply in the input, in order: parsed without
    /// the state's lock, handed to the slots under it, sent after it. The
    /// reply of slot `me` (a reading caller's own) is returned with its
    /// slot, not sent.
    pub(super) fn deliver(
        &mut self,
        shared: &Shared,
        me: Option<u64>,
    ) -> Result<(Answered, Option<(Slot, Reply)>), ConnError> {
        let addr = shared.addr.as_str();
        self.answered |= !self.input.is_empty();
        let parsed = &mut self.parsed;
        let sink = shared.pushes.get();
        take_frames(&mut self.input, self.limits, |frame| {
            if let Frame::Push(items) = &frame {
                // RESP3 out of band (an invalidation, a server's notice): not
                // the reply of any request. Handed on before the replies
                // that came after it are.
                match sink {
                    Some(sink) => sink.pushed(addr, items),
                    None => tracing::debug!(
                        addr,
                        items = items.len(),
                        "a push frame, not a reply: dropped"
                    ),
                }
            } else {
                parsed.push(frame);
            }
            Ok::<(), ConnError>(())
        })?;
        if self.parsed.is_empty() {
            return Ok((Answered::default(), None));
        }
        let mut stray = None;
        let owed = {
            let mut state = shared.lock();
            let mut parsed = self.parsed.drain(..);
            while parsed.len() > 0 {
                if crate::seam::planted(crate::seam::Plant::SwappedReplies)
                    && self.frames.is_empty()
                    && state.slots.len() >= 2
                    && state.slots[0].replies == state.slots[1].replies
                {
                    // The next reply goes to the second caller waiting.
                    state.slots.swap(0, 1);
                }
                let Some(slot) = state.slots.front() else {
                    stray = parsed.next();
                    break;
                };
                // The slot's replies (one at least), as many as came:
                // moved at once.
                let owed = slot.replies.max(1);
                let wanted = owed.saturating_sub(self.frames.len());
                if self.frames.is_empty() {
                    self.frames.reserve_exact(wanted);
                }
                self.frames.extend(parsed.by_ref().take(wanted));
                if self.frames.len() >= owed {
                    let slot = state.slots.pop_front().expect("a front slot");
                    self.answered_slots
                        .push((slot, Ok(std::mem::take(&mut self.frames))));
                }
            }
            drop(parsed);
            let now = Answered {
                slots: self.answered_slots.len(),
                owed: state.slots.len(),
            };
            // Set before the callers hear, so that their next requests
            // find it.
            state.gathering |= me.is_none() && now.gathers();
            state.slots.len()
        };
        self.parsed.clear();
        let slots = self.answered_slots.len();
        if slots > 0 && shared.held.load(Ordering::Relaxed) {
            shared.freed();
        }
        let mut mine = None;
        for (mut slot, reply) in self.answered_slots.drain(..) {
            if me == Some(slot.id) {
                mine = Some((slot, reply));
                continue;
            }
            let sent = slot.done.take().map(|done| done.send(reply).is_ok());
            if slot.kind == SlotKind::Moved {
                tracing::debug!(
                    addr,
                    "a reply came for a read sent again elsewhere; dropped"
                );
            } else if sent != Some(true) {
                // Its caller gave up (a time-out, a dropped future):
                // whatever the reply carried goes to no one, so say so.
                tracing::warn!(
                    addr,
                    "a reply came for a request whose caller gave up; dropped"
                );
            }
        }
        match stray {
            Some(frame) => Err(ConnError::Protocol(format!(
                "{addr} sent a reply nobody asked for: {frame:?}"
            ))),
            None => Ok((Answered { slots, owed }, mine)),
        }
    }

    /// Reads what the socket has now and completes every whole reply
    /// (returning slot `me`'s, as [`Self::deliver`]).
    pub(super) fn read_some(
        &mut self,
        stream: &TcpStream,
        shared: &Shared,
        me: Option<u64>,
    ) -> Result<(Answered, Option<(Slot, Reply)>), ConnError> {
        let addr = shared.addr.as_str();
        let mut answered = Answered::default();
        let mut mine = None;
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
            shared.bytes_read.fetch_add(got as u64, Ordering::Relaxed);
            let drained = match read {
                Ok(0) => return Err(self.closed(addr)),
                Ok(_) => false,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((answered, mine)),
                Err(e) => return Err(self.broken(addr, &e)),
            };
            let (now, own) = self.deliver(shared, me)?;
            answered = Answered {
                slots: answered.slots + now.slots,
                owed: now.owed,
            };
            mine = mine.or(own);
            if drained || mine.is_some() {
                return Ok((answered, mine));
            }
        }
    }
}
