//! A watched connection's side of a pause (`zaris_core::hold`): at each
//! tick, whether it stalls; the check of its node on another connection;
//! the hold that hands its reads back and places its writes; and the
//! writes whose callers gave up, noted. It builds on the queue
//! (`shared.rs`: its state, its lock, its wake), which only asks a held
//! connection what leaves it and lets the hold go at the next reply.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;
use zaris_core::{Liveness, Progress, ALIVE_ANSWER_FRESH, ALIVE_CHECK_EVERY};

use super::error::ConnError;
use super::shared::{Shared, State};
use super::slot::{Slot, SlotKind};

impl Shared {
    /// At the watcher's tick (`now`, owing replies): whether the
    /// connection is stalled and its node should be asked now whether it
    /// is alive (not while a check is under way, and at most every
    /// `ALIVE_CHECK_EVERY`). Notes where it stands for the next tick.
    pub(super) fn tick(&self, state: &mut State, now: Instant) -> bool {
        // Only a request that a hold changes (a read to move, a write to
        // wait on) is watched: a blocking command is meant to wait.
        let Some(front) = state.slots.front().filter(|f| f.kind != SlotKind::Plain) else {
            state.stall = None;
            return false;
        };
        let progress = Progress {
            front: front.id,
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        };
        let stalled = zaris_core::stalled(state.stall, progress);
        state.stall = Some(progress);
        stalled && self.may_check(state, now)
    }

    /// Whether its node may be asked now whether it is alive: it is
    /// watched, no check is under way, and none began within
    /// `ALIVE_CHECK_EVERY` (then one is, from now).
    pub(super) fn may_check(&self, state: &mut State, now: Instant) -> bool {
        if state.checking || self.watch.get().is_none() {
            return false;
        }
        if state
            .checked_at
            .is_some_and(|at| now.saturating_duration_since(at) < ALIVE_CHECK_EVERY)
        {
            return false;
        }
        state.checking = true;
        state.checked_at = Some(now);
        true
    }

    /// What the node said lately, at `now`.
    pub(super) fn liveness(state: &State, now: Instant) -> Liveness {
        let lately = |at: Instant| now.saturating_duration_since(at) < ALIVE_ANSWER_FRESH;
        match state.alive_until {
            Some(until) if until > now => Liveness::Answered,
            _ if state.silent && !state.checking && state.checked_at.is_some_and(lately) => {
                Liveness::Silent
            }
            _ => Liveness::Unknown,
        }
    }

    /// Asks the node whether it is alive (on another connection, through
    /// the watch), and acts on the answer: a node that answers while this
    /// connection is still stalled holds it; its reads are handed back to
    /// be sent elsewhere, and new reads go elsewhere until it answers.
    pub(super) fn check(self: &Arc<Self>) {
        let Some(watch) = self.watch.get() else {
            return;
        };
        let asked = watch.clone().ask();
        let shared = self.clone();
        tokio::spawn(async move {
            let alive = asked.await;
            let stalled = {
                let mut state = shared.lock();
                state.checking = false;
                state.silent = !alive;
                state.alive_until = alive.then(|| Instant::now() + ALIVE_ANSWER_FRESH);
                // Still stalled where the tick saw it: nothing read since.
                let now = state.slots.front().map(|front| Progress {
                    front: front.id,
                    bytes_read: shared.bytes_read.load(Ordering::Relaxed),
                });
                // A write whose time-out waits for this answer is decided
                // now: the task's timer fires at once.
                state.armed = Some(Instant::now());
                state.rearm = true;
                alive && now.is_some() && now == state.stall
            };
            shared.wake();
            if stalled {
                shared.hold();
                return;
            }
            if !alive {
                tracing::debug!(
                    addr = shared.addr,
                    "a stalled connection's node did not answer"
                );
            }
            if let Some(watch) = shared.watch.get() {
                watch.unneeded();
            }
        });
    }

    /// Its node holds it: reads go elsewhere from now, and those waiting
    /// here are handed back to be sent there.
    pub(super) fn hold(&self) {
        let (first, moved) = {
            let mut state = self.lock();
            // Set under the lock: a read submitted after it finds it.
            let first = !self.held.swap(true, Ordering::Relaxed);
            // The writes it owes that their callers gave up on are noted
            // before a write submitted next can be placed: none overtakes
            // one to its slot. (A write still waited for has no order to
            // keep with a later one: they are concurrent.)
            if let (true, Some(watch)) = (first, self.watch.get()) {
                let given_up: Vec<Option<u16>> = state
                    .slots
                    .iter()
                    .filter(|slot| !slot.waited())
                    .filter_map(|slot| match slot.kind {
                        SlotKind::Write { to, .. } => Some(to.slot()),
                        _ => None,
                    })
                    .collect();
                watch.held(self.place.get().copied(), &given_up);
            }
            let mut moved = Vec::new();
            for slot in &mut state.slots {
                if slot.kind == SlotKind::Read && slot.waited() {
                    slot.kind = SlotKind::Moved;
                    moved.extend(slot.done.take());
                }
            }
            (first, moved)
        };
        if first {
            tracing::info!(
                addr = self.addr,
                reads = moved.len(),
                "a node holds a request (paused?): reads go on another connection"
            );
        }
        for done in moved {
            let _ = done.send(Err(ConnError::Moved));
        }
    }

    /// The caller of `slot`, a write still owed a reply, gave up on it
    /// (under the lock): on a held connection, its slot is noted.
    pub(super) fn gave_up(&self, slot: &Slot) {
        let (SlotKind::Write { to, .. }, Some(watch)) = (slot.kind, self.watch.get()) else {
            return;
        };
        if self.held.load(Ordering::Relaxed) {
            watch.gave_up(self.place.get().copied(), to.slot());
        }
    }

    /// The caller waiting for slot `id` stopped waiting before its reply
    /// (a dropped future), its receiver closed first: a write its held
    /// connection still owes is noted ([`Self::gave_up`]). Under the lock,
    /// so that [`Self::hold`] either sees the receiver closed or comes
    /// first and is seen here.
    pub(super) fn stopped_waiting(&self, id: u64) {
        let state = self.lock();
        if let Some(slot) = state.slots.iter().find(|slot| slot.id == id) {
            self.gave_up(slot);
        }
    }
}
