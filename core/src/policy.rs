//! The retry policy and the environment settings that shape it (docs/behaviour.md §3).
//!
//! Parsing is here, pure and shared, so every host reads
//! `ZARIS_REQUEST_TIMEOUT` and friends the same way; the host reads the
//! environment and hands the text over.

use core::fmt;
use core::time::Duration;

use crate::backoff::DEFAULT_BACKOFF;

/// Default attempt budget.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Default request deadline (`ZARIS_REQUEST_TIMEOUT` unset).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Default bound on waiting for a shared map refresh
/// (`ZARIS_CLIENT_MAP_REFRESH_WAIT_MS` unset).
pub const DEFAULT_REFRESH_WAIT: Duration = Duration::from_millis(15_000);

/// Environment variable: request deadline in seconds, or `infinite`.
pub const ENV_REQUEST_TIMEOUT: &str = "ZARIS_REQUEST_TIMEOUT";
/// Environment variable: `true` makes the budget one attempt.
pub const ENV_DISABLE_RETRIES: &str = "ZARIS_DISABLE_RETRIES";
/// Environment variable: how long a caller waits for a shared refresh, in ms.
pub const ENV_REFRESH_WAIT_MS: &str = "ZARIS_CLIENT_MAP_REFRESH_WAIT_MS";

/// The two bounds of the retry loop and the pause unit between attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RetryPolicy {
    /// Attempts in all, the first included. Zero is read as one: a request
    /// is always tried once.
    pub max_attempts: u32,
    /// Attempt `n` is followed by a pause of `n * backoff` (see
    /// [`crate::retry_delay`]).
    pub backoff: Duration,
    /// Wall-clock bound for the whole request, `None` for none.
    pub deadline: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl RetryPolicy {
    /// 3 attempts, 100 ms backoff, 60 s deadline.
    pub const DEFAULT: Self = Self {
        max_attempts: DEFAULT_MAX_ATTEMPTS,
        backoff: DEFAULT_BACKOFF,
        deadline: Some(DEFAULT_REQUEST_TIMEOUT),
    };

    /// The same policy with a budget of one attempt, so raw statuses reach
    /// the caller (`ZARIS_DISABLE_RETRIES=true`).
    #[must_use]
    pub const fn without_retries(self) -> Self {
        Self {
            max_attempts: 1,
            ..self
        }
    }

    /// The attempt budget, at least one.
    #[must_use]
    pub const fn attempt_budget(&self) -> u32 {
        if self.max_attempts == 0 {
            1
        } else {
            self.max_attempts
        }
    }
}

/// A setting whose text does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SettingError {
    /// The variable it came from.
    pub variable: &'static str,
    /// What the value should look like.
    pub expected: &'static str,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} must be {}", self.variable, self.expected)
    }
}

impl core::error::Error for SettingError {}

/// `ZARIS_REQUEST_TIMEOUT`: positive seconds (`30`, `2.5`) or `infinite`
/// (`None`: no deadline). Surrounding white space is ignored.
///
/// # Errors
/// Anything else, zero and negative values included: a zero deadline would
/// fail every request, and `infinite` is the way to lift it.
pub fn parse_request_timeout(text: &str) -> Result<Option<Duration>, SettingError> {
    const ERR: SettingError = SettingError {
        variable: ENV_REQUEST_TIMEOUT,
        expected: "a positive number of seconds or `infinite`",
    };
    let text = text.trim();
    if text.eq_ignore_ascii_case("infinite") {
        return Ok(None);
    }
    if !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(ERR);
    }
    let secs: f64 = text.parse().map_err(|_| ERR)?;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(Some(d)),
        _ => Err(ERR),
    }
}

/// `ZARIS_DISABLE_RETRIES`: `true`/`false` (also `1`/`0`, any case).
///
/// # Errors
/// Anything else: a typo must not silently keep retries on.
pub fn parse_disable_retries(text: &str) -> Result<bool, SettingError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") || text == "1" {
        Ok(true)
    } else if text.eq_ignore_ascii_case("false") || text == "0" {
        Ok(false)
    } else {
        Err(SettingError {
            variable: ENV_DISABLE_RETRIES,
            expected: "`true` or `false`",
        })
    }
}

/// `ZARIS_CLIENT_MAP_REFRESH_WAIT_MS`: whole milliseconds.
///
/// # Errors
/// Anything but a whole number of milliseconds.
pub fn parse_refresh_wait_ms(text: &str) -> Result<Duration, SettingError> {
    text.trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| SettingError {
            variable: ENV_REFRESH_WAIT_MS,
            expected: "a whole number of milliseconds",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_timeout() {
        assert_eq!(
            parse_request_timeout("60"),
            Ok(Some(Duration::from_secs(60)))
        );
        assert_eq!(
            parse_request_timeout(" 2.5 "),
            Ok(Some(Duration::from_millis(2500)))
        );
        assert_eq!(parse_request_timeout("infinite"), Ok(None));
        assert_eq!(parse_request_timeout("INFINITE"), Ok(None));
        for bad in [
            "",
            "0",
            "-1",
            "abc",
            "1e3",
            "inf",
            "NaN",
            "1.2.3",
            "99999999999999999999999",
        ] {
            let err = parse_request_timeout(bad).unwrap_err();
            assert_eq!(err.variable, ENV_REQUEST_TIMEOUT, "{bad:?}");
        }
    }

    #[test]
    fn disable_retries() {
        assert_eq!(parse_disable_retries("true"), Ok(true));
        assert_eq!(parse_disable_retries("TRUE"), Ok(true));
        assert_eq!(parse_disable_retries("1"), Ok(true));
        assert_eq!(parse_disable_retries("false"), Ok(false));
        assert!(parse_disable_retries("yes please").is_err());
    }

    #[test]
    fn refresh_wait() {
        assert_eq!(parse_refresh_wait_ms("15000"), Ok(Duration::from_secs(15)));
        assert!(parse_refresh_wait_ms("15s").is_err());
    }

    #[test]
    fn budgets() {
        assert_eq!(RetryPolicy::DEFAULT.without_retries().attempt_budget(), 1);
        assert_eq!(
            RetryPolicy {
                max_attempts: 0,
                ..RetryPolicy::DEFAULT
            }
            .attempt_budget(),
            1
        );
    }
}
