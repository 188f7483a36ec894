//! A request's retry state ([`Retrying`]: its loop, its deadline, an
//! `ASK` to follow), and what a failure asks of the next attempt: the
//! decision of the core's `RetryLoop`, then the refresh and the pause it
//! wants ([`Wait`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use zaris_core::{owner_wait_until, Decision, KvStatus, Outcome, RetryLoop, TransportFailure};

use crate::failure::{final_error, Failure};
use crate::gate::Refreshed;
use crate::inner::Inner;
use crate::metrics;
use crate::pool::Node;
use crate::stats::{Counters, RefreshCause};
use crate::Error;

/// A request's retry state: its loop, its deadline, an `ASK` to follow.
pub(crate) struct Retrying {
    pub(super) retries: RetryLoop,
    pub(super) deadline: Option<Instant>,
    pub(super) ask: Option<Arc<Node>>,
    /// Since when a request sent alone (a transaction) has waited, unsent,
    /// for its slot to have an owner able to answer.
    pub(super) waiting_since: Option<Instant>,
}

impl Retrying {
    pub(crate) fn new(inner: &Inner) -> Self {
        Self::until(inner, deadline_of(inner, Instant::now()))
    }

    /// A request of a call whose deadline is `deadline`.
    pub(super) fn until(inner: &Inner, deadline: Option<Instant>) -> Self {
        Self {
            retries: RetryLoop::new(inner.config().policy),
            deadline,
            ask: None,
            waiting_since: None,
        }
    }

    /// The request's deadline, if it has one.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether the request's deadline has passed.
    pub(crate) fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    pub(super) fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// An attempt's time-out: the configured one, never past the deadline.
    pub(crate) fn attempt_timeout(&self, configured: Duration) -> Duration {
        self.remaining()
            .map_or(configured, |left| left.min(configured))
    }
}

/// The deadline of a call made at `started`: every request of the call
/// shares it, as they started together, and a retry's state counts from
/// then too.
pub(super) fn deadline_of(inner: &Inner, started: Instant) -> Option<Instant> {
    inner.config().deadline_from(started)
}

/// What a round of failures asks of the next: a map refresh (waiting at
/// most `refresh_wait`), and not before `until`.
#[derive(Default)]
pub(super) struct Wait {
    /// How long to wait for a refresh, and why one is needed.
    pub(super) refresh_wait: Option<(Duration, RefreshCause)>,
    pub(super) until: Option<Instant>,
    /// The map as it stands cannot route the retry (no owner for its
    /// slot; a redirect loop left it pointing where the attempt just
    /// failed; the master it names said it is a replica now): when the
    /// refresh is debounced, the retry waits for the next one the interval
    /// allows (not past `latest`), instead of failing again on the same
    /// map.
    pub(super) needs_new_map: bool,
    pub(super) latest: Option<Instant>,
}

impl Wait {
    /// Nothing to wait for: no refresh, no pause.
    pub(super) fn is_empty(&self) -> bool {
        self.refresh_wait.is_none() && self.until.is_none()
    }

    pub(super) fn merge(&mut self, other: Wait) {
        self.refresh_wait = match (self.refresh_wait, other.refresh_wait) {
            (Some((a, cause)), Some((b, _))) => Some((a.max(b), cause)),
            (a, b) => a.or(b),
        };
        self.until = self.until.max(other.until);
        self.needs_new_map |= other.needs_new_map;
        self.latest = match (self.latest, other.latest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// A request of a round: which, and its retry state once it has failed
/// (a first attempt that succeeds never needs one).
pub(super) struct InFlight {
    /// Index into the caller's requests.
    pub(super) index: usize,
    pub(super) state: Option<Box<Retrying>>,
    /// Since when it has waited, unsent, for its slot to have an owner that
    /// can answer (docs/behaviour.md §3: a wait, not an attempt).
    pub(super) waiting_since: Option<Instant>,
    /// It waited as long as it may: from now on it is sent (and counted)
    /// as any request, whatever the map says.
    pub(super) waited_out: bool,
    /// This round it goes as the probe of an owner that said the cluster
    /// is down: a second such answer is a wait, not an attempt.
    pub(super) probing: bool,
}

impl InFlight {
    /// Request `index` of a call, not sent yet.
    #[inline]
    pub(super) fn new(index: usize) -> Self {
        Self {
            index,
            state: None,
            waiting_since: None,
            waited_out: false,
            probing: false,
        }
    }

    /// Its retry state, made on its first failure (its deadline the
    /// call's, `deadline`).
    pub(super) fn state(&mut self, inner: &Inner, deadline: Option<Instant>) -> &mut Retrying {
        self.state
            .get_or_insert_with(|| Box::new(Retrying::until(inner, deadline)))
    }
}

impl Inner {
    /// How long a request whose slot has no owner able to answer may wait
    /// for one, unsent (docs/behaviour.md §3), having waited since `since`
    /// (set now if it had not) and ending by `deadline`: from when it
    /// started waiting, the refresh wait, and never past its deadline.
    /// `None`: no longer.
    pub(super) fn owner_wait_limit(
        &self,
        since: &mut Option<Instant>,
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        // Retries disabled: the caller wants the raw outcome, not a wait.
        if self.config().policy.attempt_budget() <= 1 {
            return None;
        }
        let now = Instant::now();
        let since = match since {
            Some(since) => *since,
            None => {
                Counters::bump(&self.counters().owner_waits);
                *since.insert(now)
            }
        };
        // The core's rule, on a clock from when the wait began.
        let at = |t: Instant| t.saturating_duration_since(since);
        let until = owner_wait_until(
            &self.config().policy,
            Duration::ZERO,
            at(now),
            self.config().refresh_wait,
            deadline.map(at),
        )?;
        Some(since + until)
    }

    /// After a failed attempt: refresh and wait as the retry machine says
    /// (then `Ok`: try again), or the final, typed error.
    pub(crate) async fn after_failure(
        self: &Arc<Self>,
        state: &mut Retrying,
        failure: Failure,
    ) -> Result<(), Error> {
        let wait = self.decide(state, failure)?;
        self.wait_out(wait).await;
        Ok(())
    }

    /// The refresh and the pause a retry waits for.
    pub(super) async fn wait_out(self: &Arc<Self>, wait: Wait) {
        if let Some((refresh_wait, cause)) = wait.refresh_wait {
            let refreshed = self.refresh(cause, refresh_wait).await;
            if wait.needs_new_map && refreshed == Refreshed::Debounced {
                // The same map would fail the retry again: wait for the
                // next refresh allowed, or the pause if longer.
                let pause = wait.until.unwrap_or_else(Instant::now);
                self.refresh_next(cause, refresh_wait, pause, wait.latest)
                    .await;
                return;
            }
        }
        if let Some(until) = wait.until {
            // The delay runs from the failure; the refresh spent part of it.
            tokio::time::sleep_until(until).await;
        }
    }

    /// What the retry machine makes of a failed attempt: the wait before
    /// the next one, or the final, typed error.
    pub(super) fn decide(&self, state: &mut Retrying, failure: Failure) -> Result<Wait, Error> {
        let Failure {
            outcome,
            detail,
            stale_map,
        } = failure;
        let failed_at = Instant::now();
        match state.retries.record(outcome, state.remaining()) {
            // Answers never get here; what does is an error status the
            // loop will not retry.
            Decision::Return | Decision::Surface => {
                Err(final_error(outcome, state.retries.attempts(), None, detail))
            }
            Decision::GiveUp(stop) => Err(final_error(
                outcome,
                state.retries.attempts(),
                Some(stop),
                detail,
            )),
            Decision::FollowAsk => {
                Counters::bump(&self.counters().ask_redirects);
                metrics::redirect("ask");
                Ok(Wait::default())
            }
            Decision::Retry { refresh_map, delay } => {
                match outcome {
                    Outcome::Status(status) => {
                        self.counters().retried(status);
                        metrics::retry(status.name());
                    }
                    _ => {
                        Counters::bump(&self.counters().retries_after_transport_failure);
                        metrics::retry("transport");
                    }
                }
                state.ask = None;
                tracing::debug!(?outcome, refresh_map, ?delay, %detail, "retrying");
                let cause = if outcome == Outcome::Status(KvStatus::Moved) {
                    RefreshCause::Moved
                } else {
                    RefreshCause::Failure
                };
                let refresh_wait = refresh_map.then(|| {
                    let wait = state
                        .remaining()
                        .map_or(self.config().refresh_wait, |left| {
                            left.min(self.config().refresh_wait)
                        });
                    (wait, cause)
                });
                let until = failed_at + delay;
                Ok(Wait {
                    refresh_wait,
                    until: Some(state.deadline.map_or(until, |d| until.min(d))),
                    needs_new_map: stale_map
                        || outcome == Outcome::Transport(TransportFailure::NoOwnerMapped)
                        // `READONLY`, or a blocked command let go by a
                        // demotion: writes go to masters only, so the map
                        // that sent this one is wrong about its node.
                        || outcome == Outcome::Status(KvStatus::ReplicaWriteRejected),
                    latest: state.deadline,
                })
            }
        }
    }
}
