//! A node that holds a request is not a dead one (docs/behaviour.md §5,
//! "Paused nodes"), decided sans-IO.
//!
//! A server runs one connection's commands in order. When it holds one
//! (`CLIENT PAUSE WRITE`, the pause of a manual failover or of atomic slot
//! migration's final sync, a `WAIT` for replicas), everything queued
//! behind it on that connection waits too, and the connection reads
//! nothing. The host watches for that ([`stalled`]), then asks the node on
//! another connection whether it is alive: a `PING` is not a write, and a
//! write pause lets it through. The answer decides two things:
//!
//! - **where requests go** while the connection is held ([`lane`]): what
//!   the pause does not hold (reads) reaches the node over another
//!   connection, and reads already queued behind the held request are sent
//!   there again (a read is harmless to repeat); a write not sent yet goes
//!   on a write lane, another connection, unless the node holds a write to
//!   its slot that its caller gave up on, behind which it waits
//!   ([`HeldWrites`], [`write_lane`]): atomic slot migration pauses the
//!   writes of the migrating slots only; writes already sent stay where
//!   they are, in order;
//! - **what an attempt's time-out means** ([`at_attempt_time_out`]): a
//!   write's node not asked lately is asked then, and the time-out waits
//!   for the answer; a write on a node that answers is still held there
//!   and will be applied when the pause ends, so it is waited for, to the
//!   request's deadline, never sent again; on a node that does not answer
//!   (killed, frozen, cut off) the time-out stands and the retry loop
//!   decides as for any lost reply.
//!
//! ```
//! use zaris_core::{at_attempt_time_out, lane, stalled, AtTimeOut, Lane, Liveness, Progress};
//!
//! let before = Progress { front: 7, bytes_read: 1_200 };
//! assert!(stalled(Some(before), before), "a tick with nothing read");
//! assert!(!stalled(Some(before), Progress { bytes_read: 1_300, ..before }));
//! assert_eq!(at_attempt_time_out(false, Liveness::Answered), AtTimeOut::WaitOn);
//! assert_eq!(at_attempt_time_out(false, Liveness::Silent), AtTimeOut::GiveUp);
//! assert_eq!(at_attempt_time_out(false, Liveness::Unknown), AtTimeOut::Ask);
//! assert_eq!(at_attempt_time_out(true, Liveness::Answered), AtTimeOut::GiveUp);
//! assert_eq!(lane(true), Lane::Side);
//! ```

use core::time::Duration;

/// How often a connection that owes replies is looked at: one that read
/// nothing for a whole tick, its oldest request unanswered, is stalled.
/// A read queued behind a held write waits at most about two ticks and
/// the check's round trip before it is sent again elsewhere.
pub const STALL_TICK: Duration = Duration::from_millis(50);

/// How long a node has to answer the check, on another connection.
pub const ALIVE_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// While a connection stays stalled its node is asked again this often: an
/// answer older than [`ALIVE_ANSWER_FRESH`] no longer counts.
pub const ALIVE_CHECK_EVERY: Duration = Duration::from_millis(500);

/// How long the node's answer vouches for it.
pub const ALIVE_ANSWER_FRESH: Duration = Duration::from_secs(2);

/// Where a connection stands, as its watcher sees it at a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The number of its oldest request still owed a reply.
    pub front: u64,
    /// Bytes read from it so far.
    pub bytes_read: u64,
}

/// Whether a connection that owes replies, at `before` one tick ago
/// (`None`: it owed none then) and at `now`, is stalled: the same request
/// oldest, and not a byte read in between (a long reply still arriving is
/// progress).
#[must_use]
pub fn stalled(before: Option<Progress>, now: Progress) -> bool {
    before == Some(now)
}

/// What a node said when asked, on another connection, whether it is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// It answered, lately ([`ALIVE_ANSWER_FRESH`]): paused or busy, it
    /// holds what it was sent.
    Answered,
    /// It did not answer within [`ALIVE_CHECK_TIMEOUT`] (or answered an
    /// error: `BUSY`, `LOADING`), or refused the connection, lately: it
    /// may have lost what it was sent.
    Silent,
    /// Not asked yet, not lately, or the answer is still to come.
    Unknown,
}

/// What an attempt's time-out comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtTimeOut {
    /// The attempt is given up: its outcome is unknown, and the retry loop
    /// decides, as after any lost reply.
    GiveUp,
    /// The attempt stays in flight: its node holds it and will answer. Its
    /// request waits for the reply, to its deadline; past that, the caller
    /// is told it may or may not have been applied. It is never sent again.
    WaitOn,
    /// Its node was not asked lately: it is asked now, and the time-out
    /// waits for the answer (at most [`ALIVE_CHECK_TIMEOUT`]; unanswered
    /// by then, it is [`AtTimeOut::GiveUp`]).
    Ask,
}

/// What the time-out of an attempt on a node that said `node` comes to.
/// A `movable` attempt (reads only) is harmless to send again, and is; a
/// write is sent again only when its node could have lost it: when the
/// node did not answer.
#[must_use]
pub const fn at_attempt_time_out(movable: bool, node: Liveness) -> AtTimeOut {
    match (movable, node) {
        (true, _) | (false, Liveness::Silent) => AtTimeOut::GiveUp,
        (false, Liveness::Answered) => AtTimeOut::WaitOn,
        (false, Liveness::Unknown) => AtTimeOut::Ask,
    }
}

/// Which connection a request takes while its node's shared connection is
/// held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// A write: where [`write_lane`] says, once sent in order behind
    /// the writes held there (the pause holds it wherever it goes).
    Held,
    /// Another connection to the same node, at normal latency: a request
    /// the pause does not hold.
    Side,
}

/// Write lanes a node may have beside its shared connection and its side
/// connection, while it holds writes: with the side connection, at most
/// three extra connections a node, however many callers wait. A pause of
/// every write holds each lane in turn; past the last, writes wait on
/// the shared connection, as they would anyway.
pub const WRITE_LANES: usize = 2;

/// One of a node's connections that carry writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteConn {
    /// Its shared connection.
    Shared,
    /// Write lane `i` (below [`WRITE_LANES`]).
    Lane(u8),
}

/// Where a node holds writes that their callers gave up on (a deadline,
/// a dropped future), by slot, while it holds any of its connections: the
/// caller's next write must not overtake one it gave up on, or the
/// earlier would land last and undo it. Held writes are let go in order,
/// connection by connection, so a later write to that slot waits on the
/// same connection. (A write still waited for has no order to keep with a
/// later one: the two are concurrent.) 16 KiB, no allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct HeldWrites {
    /// Per slot: 0, none noted; 1, the shared connection; 2 + i, lane i.
    at: [u8; 16_384],
    noted: u16,
    /// A write of several slots (or of slots unknown: a transaction, a
    /// batch) given up on is held: no write takes a lane until none is.
    unknown: bool,
}

impl Default for HeldWrites {
    fn default() -> Self {
        Self::new()
    }
}

impl HeldWrites {
    /// None held.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            at: [0; 16_384],
            noted: 0,
            unknown: false,
        }
    }

    /// A write to `slot` (`None`: several, or unknown) waits on `on`, held
    /// or behind a held one. A slot past 16,383 counts as unknown.
    pub fn note(&mut self, slot: Option<u16>, on: WriteConn) {
        let code = match on {
            WriteConn::Shared => 1,
            WriteConn::Lane(i) => i.saturating_add(2),
        };
        match slot.and_then(|slot| self.at.get_mut(usize::from(slot))) {
            Some(at) => {
                if *at == 0 {
                    self.noted += 1;
                }
                *at = code;
            }
            None => self.unknown = true,
        }
    }

    /// Where the writes to `slot` wait, if any is noted.
    #[must_use]
    pub fn of(&self, slot: u16) -> Option<WriteConn> {
        match self.at.get(usize::from(slot)).copied() {
            None | Some(0) => None,
            Some(1) => Some(WriteConn::Shared),
            Some(code) => Some(WriteConn::Lane(code - 2)),
        }
    }

    /// How many slots are noted.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.noted as usize
    }

    /// Whether none is, and no write of unknown slots either.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.noted == 0 && !self.unknown
    }

    /// Its node holds nothing any more.
    pub fn clear(&mut self) {
        *self = Self::new();
    }
}

/// Which connection a write not sent yet, to `slot` (`None`: several, or
/// none), takes on a node that holds a connection, `free` being the first
/// write lane it does not hold (open and answering, or still to open):
/// where the node holds writes to its slot, if it does (in order behind
/// them); else the free lane, unless no lane is free or the node holds a
/// write of unknown slots; else the shared connection, in order behind
/// the writes held there.
#[must_use]
pub fn write_lane(slot: Option<u16>, held: &HeldWrites, free: Option<u8>) -> WriteConn {
    let Some(slot) = slot else {
        return WriteConn::Shared;
    };
    match (held.of(slot), free) {
        (Some(on), _) => on,
        (None, Some(lane)) if !held.unknown => WriteConn::Lane(lane),
        _ => WriteConn::Shared,
    }
}

/// The lane of a request that is `read_only` (or not) on a node whose
/// shared connection is held.
#[must_use]
pub const fn lane(read_only: bool) -> Lane {
    if read_only {
        Lane::Side
    } else {
        Lane::Held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_stalled_only_after_a_tick_without_progress() {
        let at = Progress {
            front: 3,
            bytes_read: 10,
        };
        assert!(!stalled(None, at), "nothing owed a tick ago");
        assert!(stalled(Some(at), at));
        assert!(
            !stalled(Some(Progress { front: 2, ..at }), at),
            "a reply came"
        );
        assert!(
            !stalled(
                Some(Progress {
                    bytes_read: 9,
                    ..at
                }),
                at
            ),
            "part of a long reply came"
        );
    }

    #[test]
    fn only_a_write_on_a_node_that_answers_is_waited_on_and_one_not_asked_is_asked() {
        for node in [Liveness::Answered, Liveness::Silent, Liveness::Unknown] {
            assert_eq!(
                at_attempt_time_out(true, node),
                AtTimeOut::GiveUp,
                "{node:?}"
            );
        }
        assert_eq!(
            at_attempt_time_out(false, Liveness::Answered),
            AtTimeOut::WaitOn
        );
        assert_eq!(
            at_attempt_time_out(false, Liveness::Silent),
            AtTimeOut::GiveUp
        );
        assert_eq!(
            at_attempt_time_out(false, Liveness::Unknown),
            AtTimeOut::Ask
        );
    }

    #[test]
    fn reads_leave_a_held_connection_and_writes_stay() {
        assert_eq!(lane(true), Lane::Side);
        assert_eq!(lane(false), Lane::Held);
    }

    #[test]
    fn a_write_waits_behind_the_held_writes_to_its_slot_and_else_takes_a_free_lane() {
        let mut held = HeldWrites::new();
        assert!(held.is_empty());
        held.note(Some(5), WriteConn::Shared);
        held.note(Some(9), WriteConn::Lane(0));
        held.note(Some(9), WriteConn::Lane(1));
        assert_eq!(held.len(), 2, "each slot once, where it was last noted");
        assert_eq!(held.of(9), Some(WriteConn::Lane(1)));
        assert_eq!(held.of(16_383), None);
        let free = Some(0);
        assert_eq!(write_lane(Some(6), &held, free), WriteConn::Lane(0));
        assert_eq!(write_lane(Some(5), &held, free), WriteConn::Shared);
        assert_eq!(write_lane(Some(9), &held, free), WriteConn::Lane(1));
        assert_eq!(write_lane(Some(9), &held, None), WriteConn::Lane(1));
        assert_eq!(
            write_lane(Some(6), &held, None),
            WriteConn::Shared,
            "no lane free"
        );
        assert_eq!(
            write_lane(None, &held, free),
            WriteConn::Shared,
            "slots unknown"
        );
        held.note(Some(16_384), WriteConn::Lane(0));
        assert_eq!(held.len(), 2, "past the last slot: unknown");
        assert_eq!(
            write_lane(Some(6), &held, free),
            WriteConn::Shared,
            "a held write of unknown slots: no lane taken"
        );
        assert_eq!(write_lane(Some(9), &held, free), WriteConn::Lane(1));
        held.clear();
        assert!(held.is_empty() && held.of(5).is_none());
        assert_eq!(write_lane(Some(5), &held, free), WriteConn::Lane(0));
    }

    #[test]
    fn a_check_is_repeated_well_within_the_time_its_answer_counts() {
        assert!(ALIVE_CHECK_EVERY + ALIVE_CHECK_TIMEOUT <= ALIVE_ANSWER_FRESH);
        assert!(STALL_TICK < ALIVE_CHECK_EVERY);
    }
}
