//! The retry brain: a sans-IO decision machine (docs/behaviour.md §2 and §3).
//!
//! The shell (tokio client, wasm simulator, bench) makes an attempt, tells
//! the machine what came of it and how much time is left, and gets back what
//! to do next. The machine never reads a clock and never sleeps.
//!
//! Two bounds, whichever comes first: the attempt budget and the deadline.
//! No refresh follows the final attempt: its only purpose would be a retry
//! this request will not make, and under churn it is exactly the extra work
//! that turned one failing call into a storm of serialized refreshes. The
//! next request's own refresh-first status (or the 10 s poll) heals the map.
//! So an endlessly repeated `Moved` under the default policy costs exactly 3
//! attempts and 2 refreshes.

use core::fmt;
use core::time::Duration;

use crate::{retry_delay, KvStatus, RetryPolicy};

/// What one attempt produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node answered with a status.
    Status(KvStatus),
    /// The node answered `-ASK`: the key is mid-migration to another node,
    /// which takes this one command after `ASKING`.
    Ask,
    /// The request did not get an answer.
    Transport(TransportFailure),
}

/// Why a request got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportFailure {
    /// Connection refused: nothing listens where the map says the owner is.
    ConnectionRefused,
    /// Connection reset or closed mid-request.
    ConnectionReset,
    /// No reply within the I/O time-out.
    TimedOut,
    /// The map has no owner for the key's segment.
    NoOwnerMapped,
    /// The owning node is known to be down.
    NodeUnavailable,
    /// An index past the routing table: the map is mid-update.
    MapMidUpdate,
    /// Any other failure (protocol violation, reply too large, ...): not
    /// churn, so surfaced at once.
    Other,
}

impl TransportFailure {
    /// Every transport failure.
    pub const ALL: [TransportFailure; 7] = [
        TransportFailure::ConnectionRefused,
        TransportFailure::ConnectionReset,
        TransportFailure::TimedOut,
        TransportFailure::NoOwnerMapped,
        TransportFailure::NodeUnavailable,
        TransportFailure::MapMidUpdate,
        TransportFailure::Other,
    ];

    /// Its name in scripts and logs.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TransportFailure::ConnectionRefused => "ConnectionRefused",
            TransportFailure::ConnectionReset => "ConnectionReset",
            TransportFailure::TimedOut => "TimedOut",
            TransportFailure::NoOwnerMapped => "NoOwnerMapped",
            TransportFailure::NodeUnavailable => "NodeUnavailable",
            TransportFailure::MapMidUpdate => "MapMidUpdate",
            TransportFailure::Other => "Other",
        }
    }

    /// Churn failures are retried; a dead socket is itself a sign that
    /// routing changed, so all but a mid-update map also refresh it first.
    #[must_use]
    pub const fn class(self) -> Option<RetryClass> {
        match self {
            TransportFailure::ConnectionRefused
            | TransportFailure::ConnectionReset
            | TransportFailure::TimedOut
            | TransportFailure::NoOwnerMapped
            | TransportFailure::NodeUnavailable => Some(RetryClass { refresh_map: true }),
            // The update in flight will publish the new table; refreshing
            // again would only queue behind it.
            TransportFailure::MapMidUpdate => Some(RetryClass { refresh_map: false }),
            TransportFailure::Other => None,
        }
    }
}

impl Outcome {
    /// Every outcome a script can name: the statuses, `Ask`, and each
    /// transport failure.
    pub const ALL: [Outcome; 16] = {
        let mut all = [Outcome::Ask; 16];
        let mut i = 0;
        while i < KvStatus::ALL.len() {
            all[i] = Outcome::Status(KvStatus::ALL[i]);
            i += 1;
        }
        let mut j = 0;
        while j < TransportFailure::ALL.len() {
            all[KvStatus::ALL.len() + 1 + j] = Outcome::Transport(TransportFailure::ALL[j]);
            j += 1;
        }
        all
    };

    /// Its name in scripts and logs: the status's, `Ask`, or the transport
    /// failure's.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Status(status) => status.name(),
            Outcome::Ask => "Ask",
            Outcome::Transport(failure) => failure.name(),
        }
    }

    /// The outcome of that name, any case.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Outcome> {
        Self::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a retriable outcome is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryClass {
    /// Refresh the routing map before the retry.
    pub refresh_map: bool,
}

impl Outcome {
    /// `None` for outcomes that are not retried (answers, unknown errors).
    #[must_use]
    pub const fn retry_class(self) -> Option<RetryClass> {
        match self {
            Outcome::Status(s) if s.should_retry() => Some(RetryClass {
                refresh_map: s.requires_map_refresh(),
            }),
            Outcome::Status(_) => None,
            Outcome::Ask => Some(RetryClass { refresh_map: false }),
            Outcome::Transport(t) => t.class(),
        }
    }

    fn status(self) -> Option<KvStatus> {
        match self {
            Outcome::Status(s) => Some(s),
            _ => None,
        }
    }
}

/// What the shell does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// An answer (`Ok`, `NotFound`, `Conflict`): hand it to the caller.
    Return,
    /// Not something retries can fix: surface it to the caller now.
    Surface,
    /// Send `ASKING` and the command to the node the `-ASK` named, now. No
    /// map refresh; the redirect counts as an attempt.
    FollowAsk,
    /// Try again after `delay`, refreshing the map first if asked.
    Retry {
        /// Refresh the routing map before the retry.
        refresh_map: bool,
        /// Pause before the next attempt (always less than the time left).
        delay: Duration,
    },
    /// A bound was reached: hand the caller the last outcome.
    GiveUp(StopReason),
}

/// Which bound stopped the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The attempt budget is spent.
    AttemptsExhausted,
    /// The deadline passed, or would pass before the next attempt could start.
    DeadlineReached,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::AttemptsExhausted => "attempt budget exhausted",
            StopReason::DeadlineReached => "request deadline reached",
        })
    }
}

/// One request's retry loop. Create it with the policy, then call
/// [`RetryLoop::record`] after every attempt.
///
/// ```
/// use core::time::Duration;
/// use zaris_core::{Decision, KvStatus, Outcome, RetryLoop, RetryPolicy, StopReason};
///
/// let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
/// let left = Some(Duration::from_secs(60));
/// let moved = Outcome::Status(KvStatus::Moved);
/// assert_eq!(
///     retries.record(moved, left),
///     Decision::Retry { refresh_map: true, delay: Duration::from_millis(100) }
/// );
/// assert_eq!(retries.record(Outcome::Status(KvStatus::Ok), left), Decision::Return);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RetryLoop {
    policy: RetryPolicy,
    attempts: u32,
    last: Option<Outcome>,
}

impl RetryLoop {
    /// A loop that has made no attempt yet.
    #[must_use]
    pub const fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            attempts: 0,
            last: None,
        }
    }

    /// Attempts recorded so far.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The most recent outcome, the one a caller gets when the loop gives up.
    #[must_use]
    pub const fn last_outcome(&self) -> Option<Outcome> {
        self.last
    }

    /// The policy this loop runs under.
    #[must_use]
    pub const fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Records what an attempt produced, given the time left before the
    /// deadline (`None` when the policy has none), and decides what's next.
    pub fn record(&mut self, outcome: Outcome, remaining: Option<Duration>) -> Decision {
        self.attempts = self.attempts.saturating_add(1);
        self.last = Some(outcome);
        let Some(class) = outcome.retry_class() else {
            return match outcome {
                Outcome::Status(s) if s.is_answer() => Decision::Return,
                _ => Decision::Surface,
            };
        };
        if self.attempts >= self.policy.attempt_budget() {
            return Decision::GiveUp(StopReason::AttemptsExhausted);
        }
        if remaining.is_some_and(|left| left.is_zero()) {
            return Decision::GiveUp(StopReason::DeadlineReached);
        }
        if outcome == Outcome::Ask {
            return Decision::FollowAsk;
        }
        let wanted = retry_delay(self.attempts, self.policy.backoff, outcome.status(), None);
        match remaining {
            // Sleeping until the deadline only to give up then gains nothing:
            // the caller gets the same last status now.
            Some(left) if wanted >= left => Decision::GiveUp(StopReason::DeadlineReached),
            _ => Decision::Retry {
                refresh_map: class.refresh_map,
                delay: wanted,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use KvStatus::*;

    // The bounds over whole requests are tested by replaying scripts
    // (`simulate/script.rs`); these are single decisions.

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn transport_churn_refreshes_first() {
        let refused = Outcome::Transport(TransportFailure::ConnectionRefused);
        let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
        assert_eq!(
            retries.record(refused, None),
            Decision::Retry {
                refresh_map: true,
                delay: MS(100)
            }
        );
        let mid = Outcome::Transport(TransportFailure::MapMidUpdate);
        assert_eq!(
            retries.record(mid, None),
            Decision::Retry {
                refresh_map: false,
                delay: MS(200)
            }
        );
        assert_eq!(retries.attempts(), 2);
        assert_eq!(retries.last_outcome(), Some(mid));
    }

    #[test]
    fn passed_deadline_gives_up_at_once() {
        let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
        assert_eq!(
            retries.record(Outcome::Status(Moved), Some(Duration::ZERO)),
            Decision::GiveUp(StopReason::DeadlineReached)
        );
    }

    #[test]
    fn every_transport_failure_is_classified() {
        for failure in TransportFailure::ALL {
            let class = failure.class();
            match failure {
                TransportFailure::Other => assert_eq!(class, None),
                TransportFailure::MapMidUpdate => {
                    assert_eq!(class, Some(RetryClass { refresh_map: false }))
                }
                _ => assert_eq!(class, Some(RetryClass { refresh_map: true })),
            }
        }
    }
}
