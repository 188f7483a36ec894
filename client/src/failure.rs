//! Every failure, read once: a reply that is no answer ([`read_reply`]), a
//! slot the map cannot route ([`route_failure`]), a connection that failed
//! ([`conn_failure`]). Each becomes a [`Failure`] for the retry loop (churn,
//! retried as docs/behaviour.md §2 says) or an [`Error`] for the caller
//! (surfaced at once). The request driver, transactions, `WATCH` and
//! subscriptions all read failures here; what they do about one (count a
//! redirect, follow it, refresh) is theirs.

use zaris_core::{KvStatus, Outcome, RouteError, StopReason, TransportFailure};

use crate::codec::Frame;
use crate::conn::ConnError;
use crate::reply::{classify, Classified};
use crate::Error;

/// A failed attempt: what it came to, and in words.
pub(crate) struct Failure {
    pub(crate) outcome: Outcome,
    pub(crate) detail: String,
    /// The map still sends a retry where this attempt failed (a `MOVED`
    /// that closed a redirect loop, whose hint was not applied; a master
    /// that said it is one no more): the retry waits for a new map rather
    /// than fail the same way again.
    pub(crate) stale_map: bool,
}

impl Failure {
    /// A failure whose retry may go by the map as it stands.
    pub(crate) fn new(outcome: Outcome, detail: String) -> Self {
        Self {
            outcome,
            detail,
            stale_map: false,
        }
    }
}

/// Where a reply came: to a request on its own, or inside a transaction
/// (`WATCH` ... `EXEC`), where an `ASK` cannot be followed (`ASKING` would
/// be queued like the rest, and the watch is on the owner) and is waited
/// out as `TRYAGAIN` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inside {
    Request,
    Multi,
}

/// What a reply comes to.
pub(crate) enum Reading {
    /// An answer: hand it back.
    Answer,
    /// `MOVED`: the slot lives at `to` now. The caller notes it (the
    /// counters, the hint, redirect loops: `Inner::moved`) for the failure.
    Moved { slot: u16, to: String },
    /// `ASK` (outside `MULTI`): the next attempt goes to `to`, after
    /// `ASKING`.
    Ask { to: String, failure: Failure },
    /// Churn of another kind, for the retry loop.
    Failed(Failure),
    /// Not churn: surfaced at once.
    Fatal(Error),
}

/// What `reply`, from the node at `from`, comes to.
pub(crate) fn read_reply(reply: &Frame, from: &str, inside: Inside) -> Reading {
    match classify(reply, from) {
        Classified::Answer => Reading::Answer,
        Classified::Moved { slot, addr } => Reading::Moved { slot, to: addr },
        Classified::Ask { addr } => {
            let detail = format!("ASK {addr}");
            match inside {
                Inside::Request => Reading::Ask {
                    to: addr,
                    failure: Failure::new(Outcome::Ask, detail),
                },
                Inside::Multi => {
                    Reading::Failed(Failure::new(Outcome::Status(KvStatus::Migrating), detail))
                }
            }
        }
        Classified::Status(status) => {
            let detail = match reply {
                Frame::Error(message) => message.to_string(),
                _ => status.name().to_owned(),
            };
            Reading::Failed(Failure::new(Outcome::Status(status), detail))
        }
        Classified::Auth(detail) => Reading::Fatal(Error::Auth {
            node: from.to_owned(),
            detail,
        }),
        Classified::ServerError(message) => Reading::Fatal(Error::Server(message)),
    }
}

/// A durable write answered, then its `WAIT` answered with an error: the
/// node stopped being a master between the two (`WAIT` refused on a
/// replica, a blocked `WAIT` let go by the change of role). The write may
/// or may not have reached the new master: to the retry loop, as if its
/// reply was lost. The map that sent the write there is stale: the retry
/// waits for a new one (found by the simulator, seed 115150: a retry on
/// the same map, its refresh debounced, spent the last attempt on the
/// demoted node's `MOVED`).
pub(crate) fn wait_failed(wait: &Frame, from: &str) -> Option<Failure> {
    let Frame::Error(message) = wait else {
        return None;
    };
    Some(Failure {
        outcome: Outcome::Transport(TransportFailure::ConnectionReset),
        detail: format!("{from} took the write, then answered its WAIT with {message}"),
        stale_map: true,
    })
}

/// A slot the map could not route: the map mid-update, or no owner.
pub(crate) fn route_failure(e: &RouteError) -> Failure {
    let failure = match e {
        RouteError::MapMidUpdate { .. } => TransportFailure::MapMidUpdate,
        _ => TransportFailure::NoOwnerMapped,
    };
    Failure::new(Outcome::Transport(failure), e.to_string())
}

/// What a connection failure on the way to `addr` means: churn for the
/// retry loop, or an error surfaced at once (bad bytes, refused
/// credentials, TLS, a reply over the limit).
pub(crate) fn conn_failure(e: ConnError, addr: &str) -> Result<Failure, Error> {
    let node = addr.to_owned();
    match e {
        ConnError::Protocol(detail) => Err(Error::Protocol { node, detail }),
        ConnError::Rejected(detail) => Err(Error::Auth { node, detail }),
        ConnError::Tls(detail) => Err(Error::Tls { node, detail }),
        ConnError::TooLarge { limit } => Err(Error::ReplyTooLarge { node, limit }),
        // Held by a node that is alive: not sent again (a write pause).
        ConnError::Held => Err(Error::OutcomeUnknown { node }),
        e => Ok(Failure::new(
            Outcome::Transport(e.failure()),
            format!("{addr}: {e}"),
        )),
    }
}

/// A connection failure as the final error of a single attempt (a
/// subscription's connection, a command on a watched connection).
pub(crate) fn conn_error(e: ConnError, addr: &str) -> Error {
    match conn_failure(e, addr) {
        Ok(failure) => final_error(failure.outcome, 1, None, failure.detail),
        Err(fatal) => fatal,
    }
}

/// The error a caller gets when the loop stops on `outcome`.
pub(crate) fn final_error(
    outcome: Outcome,
    attempts: u32,
    stop: Option<StopReason>,
    detail: String,
) -> Error {
    let stop = stop.unwrap_or(StopReason::AttemptsExhausted);
    match outcome {
        Outcome::Status(status) => Error::Status {
            status,
            attempts,
            stop,
        },
        Outcome::Ask => Error::Status {
            status: KvStatus::Migrating,
            attempts,
            stop,
        },
        Outcome::Transport(failure) => Error::Transport {
            failure,
            detail,
            attempts,
            stop,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> Frame {
        Frame::Error(text.into())
    }

    #[test]
    fn replies_read_the_same_everywhere_but_ask_inside_a_transaction() {
        let from = "10.0.0.1:7000";
        assert!(matches!(
            read_reply(&Frame::Integer(1), from, Inside::Request),
            Reading::Answer
        ));
        let Reading::Moved { slot, to } = read_reply(&error("MOVED 7 :7001"), from, Inside::Multi)
        else {
            panic!("a MOVED")
        };
        assert_eq!(
            (slot, to.as_str()),
            (7, "10.0.0.1:7001"),
            "the host of the node asked"
        );
        match read_reply(&error("ASK 7 10.0.0.2:7002"), from, Inside::Request) {
            Reading::Ask { to, failure } => {
                assert_eq!(to, "10.0.0.2:7002");
                assert_eq!(failure.outcome, Outcome::Ask);
            }
            _ => panic!("an ASK is followed outside a transaction"),
        }
        match read_reply(&error("ASK 7 10.0.0.2:7002"), from, Inside::Multi) {
            Reading::Failed(f) => {
                assert_eq!(f.outcome, Outcome::Status(KvStatus::Migrating));
                assert_eq!(f.detail, "ASK 10.0.0.2:7002");
            }
            _ => panic!("inside a transaction an ASK is waited out"),
        }
        match read_reply(&error("TRYAGAIN Multiple keys"), from, Inside::Request) {
            Reading::Failed(f) => {
                assert_eq!(f.outcome, Outcome::Status(KvStatus::Migrating));
                assert_eq!(f.detail, "TRYAGAIN Multiple keys");
            }
            _ => panic!("TRYAGAIN is churn"),
        }
        assert!(matches!(
            read_reply(
                &error("NOAUTH Authentication required."),
                from,
                Inside::Multi
            ),
            Reading::Fatal(Error::Auth { .. })
        ));
        assert!(matches!(
            read_reply(&error("WRONGTYPE Operation"), from, Inside::Request),
            Reading::Fatal(Error::Server(m)) if m == "WRONGTYPE Operation"
        ));
    }

    #[test]
    fn a_route_error_reads_the_same_for_requests_and_transactions() {
        let mid = route_failure(&RouteError::MapMidUpdate { segment: 3 });
        assert_eq!(
            mid.outcome,
            Outcome::Transport(TransportFailure::MapMidUpdate)
        );
        let none = route_failure(&RouteError::Unavailable { segment: 3 });
        assert_eq!(
            none.outcome,
            Outcome::Transport(TransportFailure::NoOwnerMapped)
        );
    }

    #[test]
    fn connection_failures_are_churn_unless_they_are_not() {
        let refused = conn_failure(ConnError::Refused("x".into()), "a:1")
            .ok()
            .unwrap();
        assert_eq!(
            refused.outcome,
            Outcome::Transport(TransportFailure::ConnectionRefused)
        );
        assert!(matches!(
            conn_failure(ConnError::Protocol("bad".into()), "a:1"),
            Err(Error::Protocol { .. })
        ));
        assert!(matches!(
            conn_failure(ConnError::Rejected("WRONGPASS".into()), "a:1"),
            Err(Error::Auth { .. })
        ));
    }

    #[test]
    fn final_errors_keep_the_last_outcome() {
        let e = final_error(Outcome::Status(KvStatus::Moved), 1, None, String::new());
        assert_eq!(
            e,
            Error::Status {
                status: KvStatus::Moved,
                attempts: 1,
                stop: StopReason::AttemptsExhausted
            }
        );
        assert_eq!(e.status(), Some(KvStatus::Moved));
        let e = final_error(
            Outcome::Transport(TransportFailure::ConnectionRefused),
            3,
            Some(StopReason::DeadlineReached),
            "x:1: refused".into(),
        );
        assert!(e.to_string().contains("request deadline reached"), "{e}");
    }
    #[test]
    fn a_wait_refused_after_its_write_reads_as_a_lost_reply() {
        let from = "127.0.0.1:7000";
        let failure = wait_failed(
            &error("ERR WAIT cannot be used with replica instances."),
            from,
        )
        .expect("a failure");
        assert_eq!(
            failure.outcome,
            Outcome::Transport(TransportFailure::ConnectionReset)
        );
        assert!(
            failure.detail.contains("WAIT cannot be used"),
            "{}",
            failure.detail
        );
        assert!(failure.stale_map, "the map that sent it there is stale");
        assert!(
            wait_failed(&Frame::Integer(1), from).is_none(),
            "a count is an answer"
        );
    }
}
