//! What a connection can fail with ([`ConnError`]), and what each failure
//! means for the retry loop (its `TransportFailure`).

use zaris_core::TransportFailure;

use crate::codec::CodecError;

/// Why a request on a connection got no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConnError {
    /// Nothing listens there (or the connect was refused).
    Refused(String),
    /// The connection closed or broke.
    Reset(String),
    /// No reply (or no connection) within the time allowed.
    TimedOut,
    /// The node sent bytes that are not RESP, or a reply nobody asked for.
    Protocol(String),
    /// The node refused the connection's credentials (`AUTH`), or the
    /// credentials provider gave none.
    Rejected(String),
    /// A reply larger than the configured limit.
    TooLarge { limit: usize },
    /// The TLS handshake failed (certificate, protocol, a plain-text port).
    Tls(String),
    /// The address does not resolve here (an announced hostname).
    #[cfg_attr(feature = "sim", allow(dead_code))]
    Unresolved(String),
    /// No reply yet from a node that had stopped answering, and the map
    /// has moved the slot (where, in words): the wait was given up (the
    /// outcome is unknown, as after a time-out).
    Superseded(String),
    /// Not sent: the node already held `max_in_flight_per_node` requests
    /// and none drained in time (or the map moved the slot meanwhile).
    Saturated(String),
    /// A read on a connection its node holds (a write ahead of it is
    /// paused): handed back, to be sent on another connection.
    Moved,
    /// A write its node still holds (it answers on other connections:
    /// paused, or busy) when its request's deadline came: it may or may not
    /// be applied, and it was not sent again.
    Held,
}

impl ConnError {
    /// The retry machine's name for it.
    pub(crate) fn failure(&self) -> TransportFailure {
        match self {
            ConnError::Refused(_) | ConnError::Unresolved(_) => TransportFailure::ConnectionRefused,
            ConnError::Reset(_) => TransportFailure::ConnectionReset,
            ConnError::TimedOut | ConnError::Superseded(_) | ConnError::Held => {
                TransportFailure::TimedOut
            }
            ConnError::Moved => TransportFailure::ConnectionReset,
            ConnError::Saturated(_) => TransportFailure::NodeUnavailable,
            ConnError::Protocol(_)
            | ConnError::Rejected(_)
            | ConnError::TooLarge { .. }
            | ConnError::Tls(_) => TransportFailure::Other,
        }
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Refused(e) => write!(f, "connection refused: {e}"),
            ConnError::Reset(e) => write!(f, "connection lost: {e}"),
            ConnError::TimedOut => f.write_str("timed out"),
            ConnError::Protocol(e) => write!(f, "protocol violation: {e}"),
            ConnError::Rejected(e) => write!(f, "credentials refused: {e}"),
            ConnError::TooLarge { limit } => write!(f, "reply larger than {limit} bytes"),
            ConnError::Tls(e) => write!(f, "TLS: {e}"),
            ConnError::Unresolved(e) => f.write_str(e),
            ConnError::Saturated(why) => write!(f, "not sent: {why}"),
            ConnError::Moved => f.write_str("held behind a paused request: sent on another connection"),
            ConnError::Held => f.write_str(
                "the node still holds the request (it answers on other connections: paused, or busy)",
            ),
            ConnError::Superseded(to) => {
                write!(f, "no reply yet, and its slot is {to}: stopped waiting")
            }
        }
    }
}

impl From<CodecError> for ConnError {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::Protocol(why) => ConnError::Protocol(why),
            CodecError::TooLarge { limit } => ConnError::TooLarge { limit },
        }
    }
}
