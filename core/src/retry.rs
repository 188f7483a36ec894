//! The retry brain: a sans-IO decision machine (SPEC sections 2 and 3).
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

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// What a simulated request went through.
    #[derive(Debug, Default, PartialEq)]
    struct Trace {
        attempts: u32,
        refreshes: u32,
        asks: u32,
        slept: Duration,
        end: Option<Decision>,
    }

    /// Drives a loop with simulated time: each attempt takes `rtt`, and the
    /// outcomes come from `script` (its last entry repeats forever).
    fn simulate(policy: RetryPolicy, rtt: Duration, script: &[Outcome]) -> Trace {
        let mut retries = RetryLoop::new(policy);
        let mut now = Duration::ZERO;
        let mut trace = Trace::default();
        loop {
            let outcome = script[(trace.attempts as usize).min(script.len() - 1)];
            trace.attempts += 1;
            now += rtt;
            let remaining = policy.deadline.map(|d| d.saturating_sub(now));
            match retries.record(outcome, remaining) {
                Decision::Retry { refresh_map, delay } => {
                    trace.refreshes += u32::from(refresh_map);
                    assert!(
                        remaining.is_none_or(|left| delay < left),
                        "sleeps past deadline"
                    );
                    trace.slept += delay;
                    now += delay;
                }
                Decision::FollowAsk => trace.asks += 1,
                end => {
                    trace.end = Some(end);
                    assert_eq!(retries.attempts(), trace.attempts);
                    assert_eq!(retries.last_outcome(), Some(outcome));
                    return trace;
                }
            }
        }
    }

    #[test]
    fn refresh_storm_incident_is_bounded() {
        // 3 attempts, 60 s deadline, Moved forever: 3 attempts, 2 refreshes.
        let t = simulate(RetryPolicy::DEFAULT, MS(1), &[Outcome::Status(Moved)]);
        assert_eq!(t.attempts, 3);
        assert_eq!(t.refreshes, 2);
        assert_eq!(t.slept, MS(100 + 200));
        assert_eq!(t.end, Some(Decision::GiveUp(StopReason::AttemptsExhausted)));
    }

    #[test]
    fn answers_are_never_retried() {
        for status in [Ok, NotFound, Conflict] {
            let t = simulate(RetryPolicy::DEFAULT, MS(1), &[Outcome::Status(status)]);
            assert_eq!((t.attempts, t.end), (1, Some(Decision::Return)));
        }
    }

    #[test]
    fn unknown_errors_surface_at_once() {
        let t = simulate(
            RetryPolicy::DEFAULT,
            MS(1),
            &[Outcome::Transport(TransportFailure::Other)],
        );
        assert_eq!((t.attempts, t.end), (1, Some(Decision::Surface)));
    }

    #[test]
    fn churn_then_success() {
        let script = [
            Outcome::Status(Moved),
            Outcome::Status(Migrating),
            Outcome::Status(Ok),
        ];
        let policy = RetryPolicy {
            max_attempts: 5,
            ..RetryPolicy::DEFAULT
        };
        let t = simulate(policy, MS(1), &script);
        assert_eq!(t.attempts, 3);
        assert_eq!(t.refreshes, 1);
        // 100 ms after attempt 1, 2 * 100 * 8 after the Migrating attempt 2.
        assert_eq!(t.slept, MS(100 + 1600));
        assert_eq!(t.end, Some(Decision::Return));
    }

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
    }

    #[test]
    fn deadline_stops_before_the_budget() {
        let policy = RetryPolicy {
            max_attempts: 100,
            backoff: MS(100),
            deadline: Some(MS(1000)),
        };
        let t = simulate(policy, MS(10), &[Outcome::Status(Unavailable)]);
        // Sleeps 100, 200, 300 (t = 640 ms after 4 attempts); the next wait,
        // 400 ms, would not leave time before the deadline.
        assert_eq!(t.attempts, 4);
        assert_eq!(t.slept, MS(600));
        assert_eq!(t.end, Some(Decision::GiveUp(StopReason::DeadlineReached)));
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
    fn no_deadline_means_only_the_budget() {
        let policy = RetryPolicy {
            max_attempts: 20,
            deadline: None,
            ..RetryPolicy::DEFAULT
        };
        let t = simulate(policy, MS(1), &[Outcome::Status(Migrating)]);
        assert_eq!(t.attempts, 20);
        // 800, 1600, then capped at 2000 for the other 17 pauses.
        assert_eq!(t.slept, MS(800 + 1600 + 17 * 2000));
    }

    #[test]
    fn disabled_retries_surface_the_raw_status() {
        let t = simulate(
            RetryPolicy::DEFAULT.without_retries(),
            MS(1),
            &[Outcome::Status(Moved)],
        );
        assert_eq!((t.attempts, t.refreshes), (1, 0));
        assert_eq!(t.end, Some(Decision::GiveUp(StopReason::AttemptsExhausted)));
    }

    #[test]
    fn ask_is_an_immediate_attempt() {
        let t = simulate(
            RetryPolicy::DEFAULT,
            MS(1),
            &[Outcome::Ask, Outcome::Status(Ok)],
        );
        assert_eq!(
            (t.attempts, t.asks, t.refreshes, t.slept),
            (2, 1, 0, Duration::ZERO)
        );
        // ASK forever still stops at the budget.
        let t = simulate(RetryPolicy::DEFAULT, MS(1), &[Outcome::Ask]);
        assert_eq!((t.attempts, t.asks), (3, 2));
    }
}
