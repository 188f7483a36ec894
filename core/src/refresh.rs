//! The map refresh's rules, sans-IO (docs/behaviour.md §3, §5): when a
//! refresh starts, is ridden or is skipped; when a `MOVED` closes a
//! redirect loop; how long a request waits, unsent, for its slot to have
//! an owner able to answer. The tokio client, the playground's churn
//! simulation and the bindings all ask these; none of them keeps a copy.
//! Time is a `Duration` since any origin the host picks.

use core::time::Duration;

use crate::RetryPolicy;

/// Refreshes never come closer together than this by default.
pub const REFRESH_MIN_INTERVAL: Duration = Duration::from_millis(500);

/// A request waiting on an owner that refuses connections (or says the
/// cluster is down, or is opened) tries it this often, however many wait:
/// the refresh interval, so a dead node costs no more attempts than map
/// refreshes.
pub const OWNER_PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// What a request for a refresh comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefreshAsk {
    /// Start one: none is in flight and the last ended long enough ago.
    Start,
    /// One is in flight: wait for it.
    Ride,
    /// The last one ended within the minimum interval: nothing to do.
    Debounced,
}

/// The single-flight, rate-limited refresh gate: the state a host keeps
/// (or mirrors in atomics), and the rule over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefreshGate {
    min_interval: Duration,
    last_done: Option<Duration>,
    in_flight: bool,
}

impl RefreshGate {
    /// A gate that has run no refresh, spacing them `min_interval` apart.
    #[must_use]
    pub const fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            last_done: None,
            in_flight: false,
        }
    }

    /// The rule: a refresh asked for at `now`, when the last one ended at
    /// `last_done` (`None`: never) and one is or is not `in_flight`. A
    /// refresh that ended within `min_interval` makes any new one a no-op
    /// (whatever asks); otherwise one in flight is ridden; otherwise one
    /// starts.
    #[must_use]
    pub fn decide(
        last_done: Option<Duration>,
        in_flight: bool,
        now: Duration,
        min_interval: Duration,
    ) -> RefreshAsk {
        if last_done.is_some_and(|last| now.saturating_sub(last) < min_interval) {
            RefreshAsk::Debounced
        } else if in_flight {
            RefreshAsk::Ride
        } else {
            RefreshAsk::Start
        }
    }

    /// A refresh asked for at `now`: [`Self::decide`], and on
    /// [`RefreshAsk::Start`] the gate holds it in flight.
    pub fn ask(&mut self, now: Duration) -> RefreshAsk {
        let ask = Self::decide(self.last_done, self.in_flight, now, self.min_interval);
        if ask == RefreshAsk::Start {
            self.in_flight = true;
        }
        ask
    }

    /// The refresh in flight ended at `now`.
    pub fn finished(&mut self, now: Duration) {
        self.in_flight = false;
        self.last_done = Some(now);
    }

    /// Whether a refresh is in flight.
    #[must_use]
    pub const fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// The earliest moment a refresh would not be debounced (`now` when
    /// none has run).
    #[must_use]
    pub fn next_allowed(&self, now: Duration) -> Duration {
        self.last_done
            .map_or(now, |last| (last + self.min_interval).max(now))
    }
}

/// Until when a request whose slot has no owner able to answer (none
/// mapped, one refusing connections, one saying the cluster is down) may
/// wait for one, unsent, having waited since `since`: the refresh wait from
/// then, never past its `deadline`. `None` once that has passed (it is then
/// sent as any request), or when retries are disabled (the caller wants
/// the raw outcome, not a wait).
#[must_use]
pub fn owner_wait_until(
    policy: &RetryPolicy,
    since: Duration,
    now: Duration,
    refresh_wait: Duration,
    deadline: Option<Duration>,
) -> Option<Duration> {
    if policy.attempt_budget() <= 1 {
        return None;
    }
    let until = since + refresh_wait;
    let until = deadline.map_or(until, |d| d.min(until));
    (now < until).then_some(until)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_gate_starts_rides_and_debounces() {
        let mut gate = RefreshGate::new(MS(500));
        assert_eq!(gate.next_allowed(MS(3)), MS(3));
        assert_eq!(gate.ask(MS(10)), RefreshAsk::Start);
        assert_eq!(gate.ask(MS(11)), RefreshAsk::Ride, "one in flight");
        gate.finished(MS(20));
        assert_eq!(gate.ask(MS(21)), RefreshAsk::Debounced);
        assert_eq!(gate.ask(MS(519)), RefreshAsk::Debounced);
        assert_eq!(gate.next_allowed(MS(100)), MS(520));
        assert_eq!(
            gate.ask(MS(520)),
            RefreshAsk::Start,
            "the interval has passed"
        );
        assert!(gate.in_flight());
    }

    #[test]
    fn a_request_waits_for_an_owner_within_both_bounds() {
        let policy = RetryPolicy::DEFAULT;
        let wait = Duration::from_secs(15);
        assert_eq!(
            owner_wait_until(&policy, MS(100), MS(200), wait, None),
            Some(MS(15_100))
        );
        assert_eq!(
            owner_wait_until(&policy, MS(100), MS(200), wait, Some(MS(3_000))),
            Some(MS(3_000)),
            "never past the deadline"
        );
        assert_eq!(
            owner_wait_until(&policy, MS(100), MS(15_100), wait, None),
            None
        );
        assert_eq!(
            owner_wait_until(&policy.without_retries(), MS(0), MS(1), wait, None),
            None,
            "retries disabled: no wait"
        );
    }
}
