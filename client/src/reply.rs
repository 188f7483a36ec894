//! What replies say: a reply as the typed calls read it (`OK`, an integer,
//! anything else an error naming the command), and what a reply means for
//! routing ([`classify`], a pure function: the request driver only acts
//! on it).

use smallvec::SmallVec;
use zaris_core::{parse_error_reply, ErrorReply, KvStatus};

use crate::codec::Frame;
use crate::topology::{address, host_of};
use crate::Error;

/// The replies of one request: one, or two for a write with `WAIT`, kept
/// inline.
pub(crate) type Replies = SmallVec<[Frame; 2]>;

/// A lent reply, taken (a nil left in its place).
pub(crate) fn take_frame(frame: &mut Frame) -> Frame {
    std::mem::replace(frame, Frame::Null)
}

/// What a reply means for routing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Classified {
    /// An answer: hand it back.
    Answer,
    /// `-MOVED`: the slot lives at `addr` now.
    Moved { slot: u16, addr: String },
    /// `-ASK`: this one command goes to `addr`, after `ASKING`.
    Ask { addr: String },
    /// A status of the vocabulary (`TRYAGAIN`, `CLUSTERDOWN`, ...).
    Status(KvStatus),
    /// The node does not take this connection's credentials (`NOAUTH`,
    /// `WRONGPASS`): surfaced as `Error::Auth`, never retried blindly.
    Auth(String),
    /// An error the client does not interpret: surfaced unchanged.
    ServerError(String),
}

/// What the first reply of a request means, coming from the node at
/// `from` (whose host stands in for an empty one in a redirect).
pub(crate) fn classify(reply: &Frame, from: &str) -> Classified {
    let Frame::Error(message) = reply else {
        return Classified::Answer;
    };
    match parse_error_reply(message.as_bytes()) {
        Ok(ErrorReply::Moved(to)) => Classified::Moved {
            slot: to.slot,
            addr: address(to.host, to.port, host_of(from)),
        },
        Ok(ErrorReply::Ask(to)) => Classified::Ask {
            addr: address(to.host, to.port, host_of(from)),
        },
        Ok(ErrorReply::Status(status)) => Classified::Status(status),
        Err(_) if message.starts_with("NOAUTH") || message.starts_with("WRONGPASS") => {
            Classified::Auth(message.to_string())
        }
        Err(_) => Classified::ServerError(message.to_string()),
    }
}

pub(crate) fn unexpected(command: &'static str, reply: &Frame) -> Error {
    match reply {
        Frame::Error(e) => Error::Server(e.to_string()),
        other => Error::UnexpectedReply {
            command,
            reply: format!("{other:?}"),
        },
    }
}

pub(crate) fn expect_ok(command: &'static str, reply: &Frame) -> Result<(), Error> {
    match reply {
        Frame::SimpleString(s) if &s[..] == b"OK" => Ok(()),
        other => Err(unexpected(command, other)),
    }
}

pub(crate) fn integer(command: &'static str, reply: &Frame) -> Result<i64, Error> {
    match reply {
        Frame::Integer(n) => Ok(*n),
        other => Err(unexpected(command, other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &'static str) -> Frame {
        Frame::Error(text.into())
    }

    #[test]
    fn replies_are_classified_without_a_socket() {
        let from = "10.0.0.1:7000";
        assert_eq!(classify(&Frame::Integer(1), from), Classified::Answer);
        assert_eq!(classify(&Frame::Null, from), Classified::Answer);
        assert_eq!(
            classify(&error("MOVED 3999 127.0.0.1:6381"), from),
            Classified::Moved {
                slot: 3999,
                addr: "127.0.0.1:6381".into()
            }
        );
        // Redis 7 with an unknown endpoint: the host of the node that answered.
        assert_eq!(
            classify(&error("MOVED 1 :6381"), from),
            Classified::Moved {
                slot: 1,
                addr: "10.0.0.1:6381".into()
            }
        );
        assert_eq!(
            classify(&error("ASK 2 [::1]:7002"), from),
            Classified::Ask {
                addr: "[::1]:7002".into()
            }
        );
        assert_eq!(
            classify(
                &error("TRYAGAIN Multiple keys request during rehashing of slot"),
                from
            ),
            Classified::Status(KvStatus::Migrating)
        );
        assert_eq!(
            classify(&error("CLUSTERDOWN The cluster is down"), from),
            Classified::Status(KvStatus::Unavailable)
        );
        assert_eq!(
            classify(&error("READONLY You can't write"), from),
            Classified::Status(KvStatus::ReplicaWriteRejected)
        );
        assert_eq!(
            classify(&error("NOAUTH Authentication required."), from),
            Classified::Auth("NOAUTH Authentication required.".into())
        );
        assert_eq!(
            classify(&error("WRONGTYPE Operation against a key"), from),
            Classified::ServerError("WRONGTYPE Operation against a key".into())
        );
    }
}
