//! A node's health, decided sans-IO (docs/behaviour.md §5, "Opened
//! nodes"): when requests that keep timing out open a node, when the one
//! request that probes a held node may go, how long reconnects back off,
//! and how long a replica that failed is passed over. The host keeps the
//! state (in atomics, one node at a time) and the clock and the random
//! draws; these rules say what they come to, so the tokio client, the
//! playground and a simulation decide alike.
//!
//! ```
//! use core::time::Duration;
//! use zaris_core::{opens_after, probe_due, probe_interval, reconnect_delay, OWNER_PROBE_INTERVAL};
//!
//! assert!(!opens_after(2) && opens_after(3));
//! let ms = Duration::from_millis;
//! assert!(probe_due(None, ms(5)));
//! let next = ms(5) + probe_interval(0, 0);
//! assert!(!probe_due(Some(next), ms(5) + OWNER_PROBE_INTERVAL - ms(1)));
//! assert!(probe_interval(1, 0) == ms(10) && probe_interval(9, 0) == OWNER_PROBE_INTERVAL);
//! assert_eq!(reconnect_delay(1, 0), ms(10));
//! assert!(reconnect_delay(3, 7) <= ms(40) && reconnect_delay(3, 7) >= ms(20));
//! ```

use core::time::Duration;

use crate::refresh::OWNER_PROBE_INTERVAL;

/// Requests timed out in a row that open a node: new ones then wait,
/// unsent, for the map to move its slots (one going ahead per
/// [`OWNER_PROBE_INTERVAL`] as the probe) instead of joining a queue that
/// does not drain. Any answer closes it.
pub const OPEN_AFTER_TIMEOUTS: u32 = 3;

/// Reconnects to a node back off from this after a failed attempt,
/// doubling per failure in a row ...
pub const RECONNECT_BACKOFF_BASE: Duration = Duration::from_millis(10);

/// ... to at most this: the probe interval of a dead owner's waiting
/// requests, so a node that comes back is found no later than their probe
/// would find it. Each delay is less a random part of up to half, so that
/// many clients do not dial a restarted node in step.
pub const RECONNECT_BACKOFF_CAP: Duration = OWNER_PROBE_INTERVAL;

/// A replica whose connection failed is passed over for reads this long,
/// then tried again.
pub const REPLICA_PAUSE: Duration = Duration::from_secs(2);

/// Whether `timeouts` requests in a row timed out on a node open it.
#[must_use]
pub const fn opens_after(timeouts: u32) -> bool {
    timeouts >= OPEN_AFTER_TIMEOUTS
}

/// How long after one probe of a held node the next is due.
///
/// `down_probe` is 0 for a node that is open or refuses connections: then
/// [`OWNER_PROBE_INTERVAL`], as its probe may cost an attempt's time-out.
/// For a node that says the cluster is down it counts this probe (from 1)
/// since the node last answered otherwise. Such a node answers at once,
/// and its state may be a moment's doubt (a master sees another's
/// failover and briefly counts the cluster down): its probes back off as
/// reconnects do, from [`RECONNECT_BACKOFF_BASE`] to
/// [`OWNER_PROBE_INTERVAL`], less up to half by `random`. So a blip costs
/// its waiting requests at most about its length again, and a cluster
/// really down one probe per interval.
#[must_use]
pub fn probe_interval(down_probe: u32, random: u64) -> Duration {
    if down_probe == 0 {
        OWNER_PROBE_INTERVAL
    } else {
        reconnect_delay(down_probe, random)
    }
}

/// Whether the probe of a held node (refusing connections, saying the
/// cluster is down, or open) is due at `now`, the last one having set the
/// next for `next` (its time plus [`probe_interval`]; `None`: never
/// probed).
#[must_use]
pub fn probe_due(next: Option<Duration>, now: Duration) -> bool {
    next.is_none_or(|next| now >= next)
}

/// The wait before the next connection attempt after `failures` in a row:
/// `min(cap, base * 2^(failures - 1))`, less up to half of it by `random`
/// (any number; the host draws it). Zero after no failure.
#[must_use]
pub fn reconnect_delay(failures: u32, random: u64) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let base = RECONNECT_BACKOFF_BASE.as_millis() as u64;
    let cap = RECONNECT_BACKOFF_CAP.as_millis() as u64;
    let full = base.saturating_mul(1 << (failures - 1).min(20)).min(cap);
    Duration::from_millis(full - random % (full / 2 + 1))
}

/// Whether a replica whose connection last failed at `failed_at` (`None`:
/// never, or it has connected since) is still passed over for reads at
/// `now`.
#[must_use]
pub fn recently_failed(failed_at: Option<Duration>, now: Duration) -> bool {
    failed_at.is_some_and(|at| now.saturating_sub(at) < REPLICA_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn reconnects_back_off_exponentially_with_jitter_to_a_cap() {
        assert_eq!(reconnect_delay(0, 7), Duration::ZERO);
        // No jitter drawn: the full delay, doubling to the cap.
        let mut full = [Duration::ZERO; 8];
        for (n, d) in (1..=8).zip(&mut full) {
            *d = reconnect_delay(n, 0);
        }
        assert_eq!(
            full,
            [
                MS(10),
                MS(20),
                MS(40),
                MS(80),
                MS(160),
                MS(320),
                MS(500),
                MS(500)
            ]
        );
        assert_eq!(reconnect_delay(u32::MAX, 0), MS(500));
        // Jitter takes off at most half.
        for random in [1, 2, 99, 250, u64::MAX] {
            for n in 1..10 {
                let d = reconnect_delay(n, random);
                let full = reconnect_delay(n, 0);
                assert!(d <= full && d >= full / 2, "{n} failures, {random}: {d:?}");
            }
        }
    }

    #[test]
    fn the_third_time_out_in_a_row_opens() {
        assert!(!opens_after(0));
        assert!(!opens_after(OPEN_AFTER_TIMEOUTS - 1));
        assert!(opens_after(OPEN_AFTER_TIMEOUTS));
        assert!(opens_after(u32::MAX));
    }

    #[test]
    fn one_probe_per_interval() {
        assert!(probe_due(None, Duration::ZERO));
        let next = Some(MS(100) + probe_interval(0, 7));
        assert!(!probe_due(next, MS(100)));
        assert!(!probe_due(next, MS(599)));
        assert!(probe_due(next, MS(600)));
        // A clock read before the last probe (another thread's): not due.
        assert!(!probe_due(next, MS(50)));
    }

    #[test]
    fn a_node_that_says_the_cluster_is_down_is_probed_sooner_at_first() {
        // Open or refusing: the full interval, whatever the draw.
        assert_eq!(probe_interval(0, 0), OWNER_PROBE_INTERVAL);
        assert_eq!(probe_interval(0, u64::MAX), OWNER_PROBE_INTERVAL);
        // Down: the reconnects' backoff, draw for draw (10 ms doubling to
        // the interval, less up to half).
        for random in [0, 1, 99, u64::MAX] {
            for n in 1..12 {
                assert_eq!(probe_interval(n, random), reconnect_delay(n, random));
            }
        }
        // The first second of a long outage costs seven probes, not two.
        let mut at = Duration::ZERO;
        let mut probes = 0;
        while at < MS(1000) {
            probes += 1;
            at += probe_interval(probes, 0);
        }
        assert_eq!(probes, 7);
    }

    #[test]
    fn a_failed_replica_is_passed_over_for_a_while() {
        assert!(!recently_failed(None, MS(10)));
        assert!(recently_failed(Some(MS(10)), MS(10)));
        assert!(recently_failed(Some(MS(10)), MS(2_009)));
        assert!(!recently_failed(Some(MS(10)), MS(2_010)));
    }
}
