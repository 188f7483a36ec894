//! Reading a cluster node's error reply (docs/behaviour.md §7).
//!
//! Takes the bytes of a RESP simple error, with or without the leading `-`
//! and the trailing CRLF, and says what it means for routing: a redirect
//! (`MOVED`, `ASK`) with its slot and borrowed address, or a status. Any
//! other error is not ours to interpret and comes back as
//! [`ReplyError::NotClusterError`], so the caller surfaces it unchanged.

use core::fmt;
use core::time::Duration;

use crate::retry::Outcome;
use crate::{KvStatus, SLOT_COUNT};

/// What an error reply means for routing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReply<'a> {
    /// `-MOVED <slot> <host:port>`: the slot lives elsewhere now (status
    /// Moved). The hint may re-point the slot at once; refresh the map too.
    Moved(Redirect<'a>),
    /// `-ASK <slot> <host:port>`: this one command goes to that node after
    /// `ASKING`; the map stays as it is.
    Ask(Redirect<'a>),
    /// Any other reply of the vocabulary: `TRYAGAIN` (Migrating),
    /// `CLUSTERDOWN`/`MASTERDOWN`/`LOADING` (Unavailable), `READONLY` and
    /// a demotion's `UNBLOCKED` (ReplicaWriteRejected), and the Zaris names
    /// themselves.
    Status(KvStatus),
}

impl ErrorReply<'_> {
    /// What this reply means to the retry machine: `MOVED` is the `Moved`
    /// status (refresh, then retry), `ASK` is [`Outcome::Ask`] (follow the
    /// redirect at once, no refresh), anything else its status. Hand this to
    /// [`crate::RetryLoop::record`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use zaris_core::{parse_error_reply, Decision, ErrorReply, RetryLoop, RetryPolicy};
    ///
    /// let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
    /// let left = Some(Duration::from_secs(60));
    /// let reply = parse_error_reply(b"-ASK 3999 127.0.0.1:6381\r\n").unwrap();
    /// // Follow it: ASKING, then the same command, to the node it names.
    /// assert_eq!(retries.record(reply.outcome(), left), Decision::FollowAsk);
    /// if let ErrorReply::Ask(to) = reply {
    ///     assert_eq!((to.host, to.port), ("127.0.0.1", 6381));
    /// }
    /// ```
    #[must_use]
    pub const fn outcome(&self) -> Outcome {
        match self {
            ErrorReply::Moved(_) => Outcome::Status(KvStatus::Moved),
            ErrorReply::Ask(_) => Outcome::Ask,
            ErrorReply::Status(s) => Outcome::Status(*s),
        }
    }

    /// The status this reply stands for, for logs and counters (`ASK`
    /// counts as `Migrating`: the slot is moving). To decide what to do,
    /// use [`ErrorReply::outcome`], which keeps `ASK` apart.
    #[must_use]
    pub const fn status(&self) -> KvStatus {
        match self {
            ErrorReply::Moved(_) => KvStatus::Moved,
            ErrorReply::Ask(_) => KvStatus::Migrating,
            ErrorReply::Status(s) => *s,
        }
    }
}

/// Where a redirect points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redirect<'a> {
    /// The slot that moved.
    pub slot: u16,
    /// The node's host: an IPv4 or IPv6 address (without brackets) or a
    /// hostname. Empty when the server does not know its own endpoint (Redis
    /// 7 `cluster-preferred-endpoint-type unknown-endpoint`): use the host of
    /// the connection the reply came on.
    pub host: &'a str,
    /// The node's port.
    pub port: u16,
}

/// An error reply that is not a routing instruction, or is a broken one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyError {
    /// Nothing but framing.
    Empty,
    /// A well-formed error outside the routing vocabulary (`ERR`,
    /// `WRONGTYPE`, ...): surface it to the caller unchanged.
    NotClusterError,
    /// `MOVED`/`ASK` without a slot and address after it.
    MissingField,
    /// The slot is not a decimal number below 16384.
    BadSlot,
    /// The address is not `host:port` with a decimal port below 65536.
    BadAddress,
    /// More text after the address.
    TrailingData,
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyError::Empty => "empty error reply",
            ReplyError::NotClusterError => "error reply outside the cluster routing vocabulary",
            ReplyError::MissingField => "redirect without slot and address",
            ReplyError::BadSlot => "redirect slot is not a number below 16384",
            ReplyError::BadAddress => "redirect address is not host:port",
            ReplyError::TrailingData => "unexpected text after the redirect address",
        })
    }
}

impl core::error::Error for ReplyError {}

/// How Redis and Valkey let a blocked client go when its master turns
/// replica (`disconnectAllBlockedClients`).
const UNBLOCKED_BY_DEMOTION: &[u8] =
    b"force unblock from blocking operation, instance state changed";

/// Reads an error reply.
///
/// ```
/// use zaris_core::{parse_error_reply, ErrorReply, KvStatus, Redirect};
/// assert_eq!(
///     parse_error_reply(b"-MOVED 3999 127.0.0.1:6381\r\n"),
///     Ok(ErrorReply::Moved(Redirect { slot: 3999, host: "127.0.0.1", port: 6381 }))
/// );
/// assert_eq!(
///     parse_error_reply(b"TRYAGAIN Multiple keys request during rehashing of slot"),
///     Ok(ErrorReply::Status(KvStatus::Migrating))
/// );
/// ```
///
/// # Errors
/// [`ReplyError`]: which part is missing or malformed, or that the error is
/// not a routing one.
pub fn parse_error_reply(reply: &[u8]) -> Result<ErrorReply<'_>, ReplyError> {
    let reply = reply.strip_prefix(b"-").unwrap_or(reply);
    let reply = reply.strip_suffix(b"\r\n").unwrap_or(reply);
    let (code, rest) = match reply.iter().position(|&b| b == b' ') {
        Some(i) => (&reply[..i], &reply[i + 1..]),
        None => (reply, &[][..]),
    };
    let status = match code {
        b"" => return Err(ReplyError::Empty),
        b"MOVED" => return parse_redirect(rest).map(ErrorReply::Moved),
        b"ASK" => return parse_redirect(rest).map(ErrorReply::Ask),
        b"TRYAGAIN" | b"MIGRATING" => KvStatus::Migrating,
        b"CLUSTERDOWN" | b"MASTERDOWN" | b"LOADING" | b"UNAVAILABLE" => KvStatus::Unavailable,
        b"READONLY" | b"REPLICAWRITEREJECTED" => KvStatus::ReplicaWriteRejected,
        // A blocked command (`BLPOP`, `WAIT`) let go, having done nothing,
        // because its master turned replica; not `CLIENT UNBLOCK`'s.
        b"UNBLOCKED" if rest.starts_with(UNBLOCKED_BY_DEMOTION) => KvStatus::ReplicaWriteRejected,
        b"OWNERSHIPCHANGING" => KvStatus::OwnershipChanging,
        _ => return Err(ReplyError::NotClusterError),
    };
    Ok(ErrorReply::Status(status))
}

fn parse_redirect(fields: &[u8]) -> Result<Redirect<'_>, ReplyError> {
    let mut parts = fields.split(|&b| b == b' ');
    let slot = parts
        .next()
        .filter(|s| !s.is_empty())
        .ok_or(ReplyError::MissingField)?;
    let addr = parts
        .next()
        .filter(|s| !s.is_empty())
        .ok_or(ReplyError::MissingField)?;
    if parts.next().is_some() {
        return Err(ReplyError::TrailingData);
    }
    let slot = parse_decimal(slot)
        .filter(|&s| s < u32::from(SLOT_COUNT))
        .ok_or(ReplyError::BadSlot)? as u16;
    let (host, port) = split_host_port(addr).ok_or(ReplyError::BadAddress)?;
    Ok(Redirect { slot, host, port })
}

/// `host:port`, `[v6]:port` or a bare `v6:port` (Redis prints IPv6 without
/// brackets, so the port is after the last colon).
fn split_host_port(addr: &[u8]) -> Option<(&str, u16)> {
    let colon = addr.iter().rposition(|&b| b == b':')?;
    let port = parse_decimal(&addr[colon + 1..]).and_then(|p| u16::try_from(p).ok())?;
    let host = &addr[..colon];
    let host = match host {
        [b'[', inner @ .., b']'] => inner,
        _ => host,
    };
    if host
        .iter()
        .any(|&b| matches!(b, b'[' | b']') || b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return None;
    }
    Some((core::str::from_utf8(host).ok()?, port))
}

/// A decimal number of at most 9 digits (enough for slots and ports, and no
/// overflow to guard against).
fn parse_decimal(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    digits.iter().try_fold(0u32, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
}

/// A `MOVED` that undoes another within this long closes a loop.
pub const REDIRECT_LOOP_WINDOW: Duration = Duration::from_secs(2);

/// Recent `MOVED` redirects, `N` of them, to tell a loop from churn: a
/// `MOVED` back to the node asked, or one that undoes a `MOVED` of the
/// same slot between the same two nodes within [`REDIRECT_LOOP_WINDOW`].
/// Addresses are kept as 64-bit fingerprints (FNV-1a), so the memory is
/// fixed, whatever the addresses.
#[derive(Clone, Debug)]
pub struct RedirectMemory<const N: usize> {
    recent: heapless::Deque<(u16, u64, u64, Duration), N>,
}

impl<const N: usize> Default for RedirectMemory<N> {
    fn default() -> Self {
        Self {
            recent: heapless::Deque::new(),
        }
    }
}

impl<const N: usize> RedirectMemory<N> {
    /// Records that `from` answered `MOVED slot to` at `now`; `true` when it
    /// closes a loop (its hint is then not to be applied, and the next
    /// refresh should ask other nodes first).
    pub fn note(&mut self, slot: u16, from: &[u8], to: &[u8], now: Duration) -> bool {
        let (from, to) = (fingerprint(from), fingerprint(to));
        let looped = from == to
            || self.recent.iter().any(|&(s, f, t, at)| {
                s == slot && f == to && t == from && now.saturating_sub(at) < REDIRECT_LOOP_WINDOW
            });
        if self.recent.is_full() {
            self.recent.pop_front();
        }
        let _ = self.recent.push_back((slot, from, to, now));
        looped
    }
}

/// FNV-1a, 64 bits: an address's fingerprint.
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(slot: u16, host: &str, port: u16) -> ErrorReply<'_> {
        ErrorReply::Moved(Redirect { slot, host, port })
    }

    #[test]
    fn redirects() {
        let cases: &[(&[u8], ErrorReply<'_>)] = &[
            (
                b"-MOVED 3999 127.0.0.1:6381\r\n",
                moved(3999, "127.0.0.1", 6381),
            ),
            (b"MOVED 0 [::1]:7000", moved(0, "::1", 7000)),
            (b"MOVED 16383 ::1:7000", moved(16383, "::1", 7000)),
            (
                b"MOVED 12 redis-0.svc.local:6379",
                moved(12, "redis-0.svc.local", 6379),
            ),
            (b"MOVED 12 :6379", moved(12, "", 6379)),
            (
                b"-ASK 42 10.0.0.1:7002",
                ErrorReply::Ask(Redirect {
                    slot: 42,
                    host: "10.0.0.1",
                    port: 7002,
                }),
            ),
        ];
        for (reply, want) in cases {
            assert_eq!(
                parse_error_reply(reply),
                Ok(*want),
                "{:?}",
                reply.escape_ascii()
            );
        }
    }

    #[test]
    fn statuses() {
        let cases: &[(&[u8], KvStatus)] = &[
            (
                b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
                KvStatus::Migrating,
            ),
            (b"-CLUSTERDOWN The cluster is down", KvStatus::Unavailable),
            (b"-CLUSTERDOWN Hash slot not served", KvStatus::Unavailable),
            (
                b"-MASTERDOWN Link with MASTER is down",
                KvStatus::Unavailable,
            ),
            (
                b"-LOADING Redis is loading the dataset in memory",
                KvStatus::Unavailable,
            ),
            (
                b"-READONLY You can't write against a read only replica.",
                KvStatus::ReplicaWriteRejected,
            ),
            (b"OWNERSHIPCHANGING", KvStatus::OwnershipChanging),
            (b"MIGRATING", KvStatus::Migrating),
            (b"UNAVAILABLE", KvStatus::Unavailable),
            (b"REPLICAWRITEREJECTED", KvStatus::ReplicaWriteRejected),
            (
                b"-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
                KvStatus::ReplicaWriteRejected,
            ),
        ];
        for &(reply, status) in cases {
            assert_eq!(parse_error_reply(reply), Ok(ErrorReply::Status(status)));
        }
    }

    #[test]
    fn malformed() {
        let cases: &[(&[u8], ReplyError)] = &[
            (b"", ReplyError::Empty),
            (b"-\r\n", ReplyError::Empty),
            (b"-ERR unknown command", ReplyError::NotClusterError),
            // `CLIENT UNBLOCK id ERROR`: someone's decision, surfaced.
            (
                b"-UNBLOCKED client unblocked via CLIENT UNBLOCK",
                ReplyError::NotClusterError,
            ),
            (b"moved 1 a:1", ReplyError::NotClusterError),
            (b"MOVED", ReplyError::MissingField),
            (b"MOVED 12", ReplyError::MissingField),
            (b"MOVED  127.0.0.1:1", ReplyError::MissingField),
            (b"MOVED 16384 127.0.0.1:1", ReplyError::BadSlot),
            (b"MOVED -1 127.0.0.1:1", ReplyError::BadSlot),
            (b"MOVED 99999999999 127.0.0.1:1", ReplyError::BadSlot),
            (b"MOVED 1 127.0.0.1", ReplyError::BadAddress),
            (b"MOVED 1 127.0.0.1:65536", ReplyError::BadAddress),
            (b"MOVED 1 127.0.0.1:", ReplyError::BadAddress),
            (b"MOVED 1 [::1:7000", ReplyError::BadAddress),
            (b"MOVED 1 \xff\xfe:7000", ReplyError::BadAddress),
            (b"MOVED 1 a:1 extra", ReplyError::TrailingData),
        ];
        for &(reply, err) in cases {
            assert_eq!(
                parse_error_reply(reply),
                Err(err),
                "{:?}",
                reply.escape_ascii()
            );
        }
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn moved_back_and_forth_is_a_loop_and_churn_is_not() {
        let mut memory = RedirectMemory::<4>::default();
        assert!(
            memory.note(7, b"a:1", b"a:1", MS(0)),
            "MOVED to the node asked"
        );
        assert!(!memory.note(5, b"a:1", b"b:1", MS(10)));
        assert!(!memory.note(5, b"b:1", b"c:1", MS(20)), "onward: churn");
        assert!(memory.note(5, b"b:1", b"a:1", MS(30)), "undone: a loop");
        assert!(!memory.note(9, b"a:1", b"b:1", MS(40)));
        assert!(
            !memory.note(9, b"b:1", b"a:1", MS(40) + REDIRECT_LOOP_WINDOW),
            "undone, but long after: a move back"
        );
        // Full, the oldest go first.
        for i in 0..4 {
            memory.note(100 + i, b"x:1", b"y:1", MS(50));
        }
        assert!(!memory.note(5, b"a:1", b"b:1", MS(60)), "forgotten");
    }
}
