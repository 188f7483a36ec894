//! What a request can end in, typed: an answer that is not a value
//! (Conflict), the last status or transport failure when the retry loop
//! stopped, or an error the client does not interpret, surfaced at once.

use zaris_core::{CommandError, KvStatus, SettingError, StopReason, TransportFailure};

/// Everything a Zaris call can fail with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A precondition failed (`set_if_absent`: the key exists;
    /// `set_if_version`: the stored version differs). An answer, never
    /// retried. `current_version` is the stored version, when known.
    #[error("conflict: the precondition failed (stored version {current_version:?})")]
    Conflict {
        /// The version stored when the write was refused.
        current_version: Option<u64>,
    },
    /// The cluster kept answering with a status the retries did not clear,
    /// until a bound stopped them (or retries are disabled).
    #[error("{status:?} after {attempts} attempt(s): {stop}")]
    Status {
        /// The last status.
        status: KvStatus,
        /// Attempts made.
        attempts: u32,
        /// Which bound stopped the loop.
        stop: StopReason,
    },
    /// The last attempt got no answer (connection refused or lost, timed
    /// out, no owner mapped), and a bound stopped the retries.
    #[error("no answer after {attempts} attempt(s) ({stop}): {failure:?}: {detail}")]
    Transport {
        /// The kind of failure.
        failure: TransportFailure,
        /// What happened, in words (address, OS error).
        detail: String,
        /// Attempts made.
        attempts: u32,
        /// Which bound stopped the loop.
        stop: StopReason,
    },
    /// A node sent bytes that are not RESP (or a reply nobody asked for).
    /// Not churn: surfaced at once, and the connection is dropped.
    #[error("protocol violation from {node}: {detail}")]
    Protocol {
        /// The node's address.
        node: String,
        /// What was wrong.
        detail: String,
    },
    /// The TLS handshake with a node failed: a certificate the
    /// configuration does not trust (wrong CA, expired, another name), a
    /// node that does not speak TLS on that port, or a client certificate
    /// it refused. Not churn: surfaced at once.
    #[error("TLS with {node}: {detail}")]
    Tls {
        /// The node's address.
        node: String,
        /// What failed, in rustls's words, with a hint where one helps.
        detail: String,
    },
    /// A node refused the client's credentials (`WRONGPASS`, `NOAUTH`, an
    /// `AUTH` error), or the credentials provider gave none. Not churn:
    /// surfaced at once, never retried blindly (a rotated password is
    /// fixed by the provider and [`crate::Client::reauthenticate`]).
    #[error("authentication with {node}: {detail}")]
    Auth {
        /// The node's address.
        node: String,
        /// The server's words, or the provider's.
        detail: String,
    },
    /// A reply larger than the configured limit (`Builder::max_reply_bytes`).
    #[error("reply from {node} is larger than {limit} bytes")]
    ReplyTooLarge {
        /// The node's address.
        node: String,
        /// The limit.
        limit: usize,
    },
    /// The server answered with an error the client does not interpret
    /// (`WRONGTYPE`, `ERR ...`): surfaced unchanged, never retried.
    #[error("server error: {0}")]
    Server(String),
    /// A reply of a shape the command never produces.
    #[error("unexpected reply to {command}: {reply}")]
    UnexpectedReply {
        /// The command.
        command: &'static str,
        /// The reply, debug-printed.
        reply: String,
    },
    /// A durable write was applied but not acknowledged by enough replicas
    /// within the wait.
    #[error("write reached {acked} replica(s), {needed} required")]
    NotReplicated {
        /// Replicas that acknowledged.
        acked: i64,
        /// Replicas required.
        needed: u32,
    },
    /// No seed answered with a cluster map.
    #[error("no seed answered with a cluster map: {}", .tried.iter().map(|(a, e)| format!("{a}: {e}")).collect::<Vec<_>>().join("; "))]
    NoSeedReachable {
        /// Each address tried, and why it failed.
        tried: Vec<(String, String)>,
    },
    /// A setting (builder or environment) is invalid.
    #[error("invalid setting: {0}")]
    Config(String),
    /// The keys of a command hash to different slots, and it cannot be
    /// split (only `MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS` and `TOUCH`
    /// are): no one node can run it. Nothing was sent. Give the keys one
    /// hash tag (`{user1}:a`, `{user1}:b`).
    #[error(
        "the keys hash to different slots ({first} and {second}): no one node can run the command"
    )]
    CrossSlot {
        /// The first key's slot.
        first: u16,
        /// The first slot that differs from it.
        second: u16,
    },
    /// The command line is not one the servers would take: an unknown
    /// command, the wrong number of arguments, or arguments that do not say
    /// which keys (a `numkeys` larger than the arguments). Nothing was sent.
    #[error("{command}: {error}")]
    Command {
        /// The command's name, as given.
        command: String,
        /// What is wrong with it.
        error: CommandError,
    },
    /// A command that would change what a shared connection is for
    /// (`SUBSCRIBE`, `MULTI`, `WATCH`, `SELECT`, ...): nothing was sent,
    /// and the reason says what to use instead.
    #[error("{command} is not sent on shared connections: {why}")]
    Unsupported {
        /// The command's name.
        command: String,
        /// Why, and what to use instead.
        why: &'static str,
    },
    /// A [`crate::Client::scan`] could not cover every slot: slots kept
    /// moving (or their owners kept failing) through every pass. The keys
    /// already returned stand; those of the uncovered slots may be missing.
    #[error("the scan left {uncovered} slot(s) uncovered after {passes} passes: they kept moving")]
    ScanIncomplete {
        /// Slots no pass covered.
        uncovered: usize,
        /// Passes made.
        passes: u32,
    },
    /// A transaction's `EXEC` was sent, but its reply was lost: it may or
    /// may not have been applied, so it is not sent again.
    #[error("the transaction may or may not have been applied ({detail}): it is not sent again")]
    TransactionUnknown {
        /// What happened.
        detail: String,
    },
    /// The request's deadline came while its node still held it: the node
    /// answered on another connection, so it was alive and had not lost
    /// the request (a write pause, a manual failover's or an atomic slot
    /// migration's pause, a `WAIT`, a busy node). It may or may not be
    /// applied when the node lets it go; it was not sent again
    /// (docs/behaviour.md §5, "Paused nodes").
    #[error("{node} still held the request at its deadline (paused, or busy): it may or may not be applied, and was not sent again")]
    OutcomeUnknown {
        /// The node's address.
        node: String,
    },
}

impl From<SettingError> for Error {
    fn from(e: SettingError) -> Self {
        Error::Config(e.to_string())
    }
}

impl Error {
    /// Its kind, as the metrics label a request's outcome: `conflict`,
    /// `status`, `transport`, `auth`, ...
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Conflict { .. } => "conflict",
            Error::Status { .. } => "status",
            Error::Transport { .. } => "transport",
            Error::Protocol { .. } => "protocol",
            Error::Tls { .. } => "tls",
            Error::Auth { .. } => "auth",
            Error::ReplyTooLarge { .. } => "reply_too_large",
            Error::Server(_) => "server",
            Error::UnexpectedReply { .. } => "unexpected_reply",
            Error::NotReplicated { .. } => "not_replicated",
            Error::NoSeedReachable { .. } => "no_seed_reachable",
            Error::Config(_) => "config",
            Error::CrossSlot { .. } => "cross_slot",
            Error::Command { .. } => "command",
            Error::Unsupported { .. } => "unsupported",
            Error::ScanIncomplete { .. } => "scan_incomplete",
            Error::TransactionUnknown { .. } => "transaction_unknown",
            Error::OutcomeUnknown { .. } => "outcome_unknown",
        }
    }

    /// A command line the core refused, as the caller gets it: keys in
    /// two slots are [`Error::CrossSlot`], anything else
    /// [`Error::Command`], named.
    pub(crate) fn command(args: &[&[u8]], error: CommandError) -> Self {
        match error {
            CommandError::CrossSlot { first, second } => Error::CrossSlot { first, second },
            error => Error::Command {
                command: args
                    .first()
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default(),
                error,
            },
        }
    }

    /// The status behind this error, if it is one of the vocabulary.
    #[must_use]
    pub fn status(&self) -> Option<KvStatus> {
        match self {
            Error::Conflict { .. } => Some(KvStatus::Conflict),
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}
