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
//!   there again (a read is harmless to repeat); writes stay where they
//!   are, in order, behind the one held;
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
    /// The held connection: a write, in order behind the writes held
    /// there (the pause holds it wherever it goes).
    Held,
    /// Another connection to the same node, at normal latency: a request
    /// the pause does not hold.
    Side,
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
    fn a_check_is_repeated_well_within_the_time_its_answer_counts() {
        assert!(ALIVE_CHECK_EVERY + ALIVE_CHECK_TIMEOUT <= ALIVE_ANSWER_FRESH);
        assert!(STALL_TICK < ALIVE_CHECK_EVERY);
    }
}
