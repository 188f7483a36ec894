//! How long to wait before trying again (docs/behaviour.md §3).

use core::time::Duration;

use crate::KvStatus;

/// Default pause unit between attempts: attempt `n` waits `n` of these.
pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(100);

/// A migration takes seconds, so a `Migrating` status waits this many times
/// longer rather than hammering the node that holds the writes.
pub const MIGRATING_BACKOFF_MULTIPLIER: u32 = 8;

/// No single pause is longer than this, however many attempts came before.
pub const MAX_RETRY_DELAY: Duration = Duration::from_millis(2_000);

/// The pause before attempt `attempt + 1`, after attempt `attempt` (counted
/// from 1) produced `status` (`None` for a transport failure).
///
/// `backoff * attempt`, times [`MIGRATING_BACKOFF_MULTIPLIER`] for
/// `Migrating`, capped at [`MAX_RETRY_DELAY`], then clamped to `remaining`,
/// the time left before the request's deadline (`None`: no deadline). Once
/// the deadline has passed, the delay is zero.
///
/// ```
/// use core::time::Duration;
/// use zaris_core::{retry_delay, KvStatus};
/// let ms = Duration::from_millis;
/// assert_eq!(retry_delay(2, ms(100), Some(KvStatus::Moved), None), ms(200));
/// assert_eq!(retry_delay(2, ms(100), Some(KvStatus::Migrating), None), ms(1600));
/// assert_eq!(retry_delay(3, ms(100), Some(KvStatus::Migrating), None), ms(2000));
/// assert_eq!(retry_delay(3, ms(100), None, Some(ms(50))), ms(50));
/// ```
#[must_use]
pub fn retry_delay(
    attempt: u32,
    backoff: Duration,
    status: Option<KvStatus>,
    remaining: Option<Duration>,
) -> Duration {
    let mut delay = backoff.saturating_mul(attempt);
    if status == Some(KvStatus::Migrating) {
        delay = delay.saturating_mul(MIGRATING_BACKOFF_MULTIPLIER);
    }
    let delay = delay.min(MAX_RETRY_DELAY);
    match remaining {
        Some(left) => delay.min(left),
        None => delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn linear_then_capped() {
        let moved = Some(KvStatus::Moved);
        let delays: [u64; 6] = core::array::from_fn(|i| {
            retry_delay(i as u32, DEFAULT_BACKOFF, moved, None).as_millis() as u64
        });
        assert_eq!(delays, [0, 100, 200, 300, 400, 500]);
        assert_eq!(retry_delay(25, DEFAULT_BACKOFF, moved, None), MS(2000));
        assert_eq!(retry_delay(u32::MAX, Duration::MAX, moved, None), MS(2000));
    }

    #[test]
    fn migrating_waits_eight_times_longer() {
        let m = Some(KvStatus::Migrating);
        assert_eq!(retry_delay(1, DEFAULT_BACKOFF, m, None), MS(800));
        assert_eq!(retry_delay(2, DEFAULT_BACKOFF, m, None), MS(1600));
        assert_eq!(retry_delay(3, DEFAULT_BACKOFF, m, None), MS(2000));
        assert_eq!(retry_delay(1, DEFAULT_BACKOFF, None, None), MS(100));
    }

    #[test]
    fn never_past_the_deadline() {
        let s = Some(KvStatus::Unavailable);
        assert_eq!(retry_delay(2, DEFAULT_BACKOFF, s, Some(MS(150))), MS(150));
        assert_eq!(retry_delay(2, DEFAULT_BACKOFF, s, Some(MS(250))), MS(200));
        assert_eq!(
            retry_delay(2, DEFAULT_BACKOFF, s, Some(Duration::ZERO)),
            Duration::ZERO
        );
    }
}
