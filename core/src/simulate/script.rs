//! Replaying a script of outcomes through the retry machine with simulated
//! time: what a client does, step by step, when a node keeps answering
//! `Moved`, `Migrating` or nothing at all. No clock, no allocation; the
//! playground draws its timeline from it and the core's tests check the
//! bounds of docs/behaviour.md §3 with it.
//!
//! ```
//! use core::time::Duration;
//! use zaris_core::{replay, Decision, KvStatus, Outcome, RetryPolicy, Step};
//!
//! let script = [Outcome::Status(KvStatus::Moved), Outcome::Status(KvStatus::Ok)];
//! let steps: Vec<Step> = replay(&script, RetryPolicy::DEFAULT, Duration::from_millis(1)).collect();
//! let ms = Duration::from_millis;
//! assert_eq!(steps, [
//!     Step::Attempt { at: ms(1), attempt: 1, outcome: Outcome::Status(KvStatus::Moved) },
//!     Step::Refresh { at: ms(1) },
//!     Step::Wait { at: ms(1), delay: ms(100) },
//!     Step::Attempt { at: ms(102), attempt: 2, outcome: Outcome::Status(KvStatus::Ok) },
//!     Step::End { at: ms(102), decision: Decision::Return, attempts: 2, refreshes: 1 },
//! ]);
//! ```

use core::fmt;
use core::time::Duration;

use crate::retry::{Decision, Outcome, RetryLoop};
use crate::RetryPolicy;

/// One step of a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Attempt `attempt` (from 1) ended at `at` with `outcome`.
    Attempt {
        /// When it ended.
        at: Duration,
        /// Its number, from 1.
        attempt: u32,
        /// What it produced.
        outcome: Outcome,
    },
    /// The client refreshes the cluster map before the next attempt.
    Refresh {
        /// When.
        at: Duration,
    },
    /// The client follows an `ASK` redirect at once.
    FollowAsk {
        /// When.
        at: Duration,
    },
    /// The client waits before the next attempt.
    Wait {
        /// When the wait starts.
        at: Duration,
        /// How long.
        delay: Duration,
    },
    /// The loop ended: [`Decision::Return`], [`Decision::Surface`] or
    /// [`Decision::GiveUp`], after `attempts` attempts and `refreshes`
    /// refreshes. The last outcome is the last `Attempt`'s.
    End {
        /// When.
        at: Duration,
        /// How it ended.
        decision: Decision,
        /// Attempts made.
        attempts: u32,
        /// Map refreshes asked for.
        refreshes: u32,
    },
}

/// The steps of a request whose attempts produce `script` in turn (its last
/// outcome repeating), each attempt taking `rtt`, under `policy`. The
/// replay ends with one [`Step::End`]; it stops after at most the policy's
/// attempt budget.
#[must_use]
pub fn replay(script: &[Outcome], policy: RetryPolicy, rtt: Duration) -> Replay<'_> {
    Replay {
        script,
        policy,
        rtt,
        retries: RetryLoop::new(policy),
        now: Duration::ZERO,
        refreshes: 0,
        pending: [None; 2],
        done: false,
    }
}

/// The iterator [`replay`] returns.
#[derive(Clone, Debug)]
pub struct Replay<'a> {
    script: &'a [Outcome],
    policy: RetryPolicy,
    rtt: Duration,
    retries: RetryLoop,
    now: Duration,
    refreshes: u32,
    /// Steps decided but not yet handed out, in order.
    pending: [Option<Step>; 2],
    done: bool,
}

impl Iterator for Replay<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if let Some(step) = self.pending[0].take() {
            self.pending = [self.pending[1].take(), None];
            return Some(step);
        }
        if self.done {
            return None;
        }
        let attempt = self.retries.attempts() + 1;
        let index = (attempt as usize - 1).min(self.script.len().saturating_sub(1));
        let Some(&outcome) = self.script.get(index) else {
            // An empty script: nothing was tried.
            self.done = true;
            return None;
        };
        self.now += self.rtt;
        let at = self.now;
        let remaining = self.policy.deadline.map(|d| d.saturating_sub(at));
        let decision = self.retries.record(outcome, remaining);
        self.pending = match decision {
            Decision::Retry { refresh_map, delay } => {
                self.now += delay;
                let wait = Step::Wait { at, delay };
                if refresh_map {
                    self.refreshes += 1;
                    [Some(Step::Refresh { at }), Some(wait)]
                } else {
                    [Some(wait), None]
                }
            }
            Decision::FollowAsk => [Some(Step::FollowAsk { at }), None],
            end => {
                self.done = true;
                [
                    Some(Step::End {
                        at,
                        decision: end,
                        attempts: self.retries.attempts(),
                        refreshes: self.refreshes,
                    }),
                    None,
                ]
            }
        };
        Some(Step::Attempt {
            at,
            attempt,
            outcome,
        })
    }
}

/// A word in a script that names no outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownOutcome<'a> {
    /// The word.
    pub word: &'a str,
}

impl fmt::Display for UnknownOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown outcome '{}' (try Moved, Migrating, Ask, Ok, ...)",
            self.word
        )
    }
}

impl core::error::Error for UnknownOutcome<'_> {}

/// The outcomes a script names, in order: names separated by commas,
/// spaces or arrows (`Moved, Migrating -> Ok`), any case.
pub fn parse_script(text: &str) -> impl Iterator<Item = Result<Outcome, UnknownOutcome<'_>>> {
    text.split(|c: char| c == ',' || c == '>' || c == '-' || c.is_ascii_whitespace())
        .filter(|word| !word.is_empty())
        .map(|word| Outcome::from_name(word).ok_or(UnknownOutcome { word }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::StopReason;
    use crate::{KvStatus, TransportFailure};
    use KvStatus::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// What a replay came to: (attempts, refreshes, asks, time asleep, end).
    fn sum_up(
        script: &[Outcome],
        policy: RetryPolicy,
        rtt: Duration,
    ) -> (u32, u32, u32, Duration, Decision) {
        let (mut asks, mut slept) = (0, Duration::ZERO);
        let mut deadline_held = true;
        for step in replay(script, policy, rtt) {
            match step {
                Step::FollowAsk { .. } => asks += 1,
                Step::Wait { at, delay } => {
                    slept += delay;
                    deadline_held &= policy.deadline.is_none_or(|d| at + delay < d);
                }
                Step::End {
                    decision,
                    attempts,
                    refreshes,
                    ..
                } => {
                    assert!(deadline_held, "slept past the deadline");
                    return (attempts, refreshes, asks, slept, decision);
                }
                _ => {}
            }
        }
        panic!("no end step");
    }

    #[test]
    fn refresh_storm_incident_is_bounded() {
        // 3 attempts, 60 s deadline, Moved forever: 3 attempts, 2 refreshes.
        let (attempts, refreshes, _, slept, end) =
            sum_up(&[Outcome::Status(Moved)], RetryPolicy::DEFAULT, MS(1));
        assert_eq!((attempts, refreshes, slept), (3, 2, MS(100 + 200)));
        assert_eq!(end, Decision::GiveUp(StopReason::AttemptsExhausted));
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
        // 100 ms after attempt 1, 2 * 100 * 8 after the Migrating attempt 2.
        assert_eq!(
            sum_up(&script, policy, MS(1)),
            (3, 1, 0, MS(100 + 1600), Decision::Return)
        );
    }

    #[test]
    fn the_deadline_stops_before_the_budget() {
        let policy = RetryPolicy {
            max_attempts: 100,
            backoff: MS(100),
            deadline: Some(MS(1000)),
        };
        // Sleeps 100, 200, 300 (t = 640 ms after 4 attempts); the next wait,
        // 400 ms, would not leave time before the deadline.
        let (attempts, _, _, slept, end) = sum_up(&[Outcome::Status(Unavailable)], policy, MS(10));
        assert_eq!((attempts, slept), (4, MS(600)));
        assert_eq!(end, Decision::GiveUp(StopReason::DeadlineReached));
    }

    #[test]
    fn no_deadline_means_only_the_budget() {
        let policy = RetryPolicy {
            max_attempts: 20,
            deadline: None,
            ..RetryPolicy::DEFAULT
        };
        let (attempts, _, _, slept, _) = sum_up(&[Outcome::Status(Migrating)], policy, MS(1));
        // 800, 1600, then capped at 2000 for the other 17 pauses.
        assert_eq!((attempts, slept), (20, MS(800 + 1600 + 17 * 2000)));
    }

    #[test]
    fn ask_is_an_immediate_attempt_and_still_bounded() {
        let (attempts, refreshes, asks, slept, end) = sum_up(
            &[Outcome::Ask, Outcome::Status(Ok)],
            RetryPolicy::DEFAULT,
            MS(1),
        );
        assert_eq!(
            (attempts, refreshes, asks, slept, end),
            (2, 0, 1, Duration::ZERO, Decision::Return)
        );
        let (attempts, _, asks, _, _) = sum_up(&[Outcome::Ask], RetryPolicy::DEFAULT, MS(1));
        assert_eq!((attempts, asks), (3, 2));
    }

    #[test]
    fn answers_return_and_unknown_errors_surface() {
        for status in [Ok, NotFound, Conflict] {
            let (attempts, .., end) =
                sum_up(&[Outcome::Status(status)], RetryPolicy::DEFAULT, MS(1));
            assert_eq!((attempts, end), (1, Decision::Return));
        }
        let other = [Outcome::Transport(TransportFailure::Other)];
        let (attempts, .., end) = sum_up(&other, RetryPolicy::DEFAULT, MS(1));
        assert_eq!((attempts, end), (1, Decision::Surface));
    }

    #[test]
    fn disabled_retries_surface_the_raw_status() {
        let (attempts, refreshes, .., end) = sum_up(
            &[Outcome::Status(Moved)],
            RetryPolicy::DEFAULT.without_retries(),
            MS(1),
        );
        assert_eq!(
            (attempts, refreshes, end),
            (1, 0, Decision::GiveUp(StopReason::AttemptsExhausted))
        );
    }

    #[test]
    fn an_empty_script_replays_nothing() {
        assert_eq!(replay(&[], RetryPolicy::DEFAULT, MS(1)).count(), 0);
    }

    #[test]
    fn names_read_back() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::from_name(outcome.name()), Some(outcome));
            let upper: heapless::String<32> = outcome
                .name()
                .chars()
                .map(|c| c.to_ascii_uppercase())
                .collect();
            assert_eq!(Outcome::from_name(&upper), Some(outcome));
        }
        let words: heapless::Vec<_, 8> = parse_script("Moved, migrating -> ASK Bogus").collect();
        assert_eq!(
            words.as_slice(),
            [
                Result::Ok(Outcome::Status(Moved)),
                Result::Ok(Outcome::Status(Migrating)),
                Result::Ok(Outcome::Ask),
                Err(UnknownOutcome { word: "Bogus" })
            ]
        );
    }
}
