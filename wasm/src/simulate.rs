//! What the client does for a sequence of outcomes: the core's retry
//! machine, driven with simulated time.

use core::time::Duration;

use crate::json;
use wasm_bindgen::prelude::*;
use zaris_core::{Decision, KvStatus, Outcome, RetryLoop, RetryPolicy, TransportFailure};

/// A simulation never records more attempts than this (a policy with a huge
/// budget and no deadline would otherwise run for a very long time).
const MAX_SIMULATED_ATTEMPTS: u32 = 1_000;

/// One step of the timeline.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// An attempt was made and produced `outcome`.
    Attempt {
        at_ms: u64,
        attempt: u32,
        outcome: &'static str,
    },
    /// The client refreshes the cluster map before retrying.
    Refresh { at_ms: u64 },
    /// The client follows an ASK redirect at once.
    Ask { at_ms: u64 },
    /// The client waits before the next attempt.
    Wait { at_ms: u64, ms: u64 },
    /// The loop ended.
    End {
        at_ms: u64,
        result: String,
        last: &'static str,
        attempts: u32,
        refreshes: u32,
    },
}

/// The outcomes that are not statuses, by name (statuses use
/// `KvStatus::name`). One table serves reading and printing; the first
/// name of an outcome is the one printed.
const NAMED_OUTCOMES: [(&str, Outcome); 9] = [
    ("Ask", Outcome::Ask),
    (
        "ConnectionRefused",
        Outcome::Transport(TransportFailure::ConnectionRefused),
    ),
    (
        "ConnectionReset",
        Outcome::Transport(TransportFailure::ConnectionReset),
    ),
    ("TimedOut", Outcome::Transport(TransportFailure::TimedOut)),
    (
        "NoOwnerMapped",
        Outcome::Transport(TransportFailure::NoOwnerMapped),
    ),
    (
        "NodeUnavailable",
        Outcome::Transport(TransportFailure::NodeUnavailable),
    ),
    (
        "MapMidUpdate",
        Outcome::Transport(TransportFailure::MapMidUpdate),
    ),
    ("Error", Outcome::Transport(TransportFailure::Other)),
    ("Other", Outcome::Transport(TransportFailure::Other)),
];

/// Reads one outcome name (case-insensitive).
fn outcome(name: &str) -> Option<Outcome> {
    let status = KvStatus::ALL
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(name));
    status.map(Outcome::Status).or_else(|| {
        NAMED_OUTCOMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, o)| o)
    })
}

fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Status(s) => s.name(),
        other => NAMED_OUTCOMES
            .iter()
            .find(|&&(_, o)| o == other)
            .map_or("Error", |&(name, _)| name),
    }
}

/// Runs the retry machine over `script` (outcome names separated by
/// commas, spaces or arrows; the last one repeats), each attempt taking
/// `rtt_ms`.
///
/// # Errors
/// An unknown outcome name (named in the message), an empty script, or a
/// budget above the simulation's limit.
pub fn simulate(script: &str, policy: RetryPolicy, rtt: Duration) -> Result<Vec<Event>, String> {
    let outcomes = script
        .split(|c: char| c == ',' || c == '>' || c == '-' || c.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            outcome(t).ok_or_else(|| {
                format!("unknown outcome '{t}' (try Moved, Migrating, Ask, Ok, ...)")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let Some(&last) = outcomes.last() else {
        return Err("the script is empty: list outcomes such as `Moved, Migrating, Ok`".to_owned());
    };
    if policy.attempt_budget() > MAX_SIMULATED_ATTEMPTS {
        return Err(format!(
            "at most {MAX_SIMULATED_ATTEMPTS} attempts can be simulated"
        ));
    }
    let ms = |d: Duration| d.as_millis() as u64;
    let mut retries = RetryLoop::new(policy);
    let mut now = Duration::ZERO;
    let mut events = Vec::new();
    let mut refreshes = 0;
    loop {
        let attempt = retries.attempts() + 1;
        let produced = outcomes.get(attempt as usize - 1).copied().unwrap_or(last);
        now += rtt;
        events.push(Event::Attempt {
            at_ms: ms(now),
            attempt,
            outcome: outcome_name(produced),
        });
        let remaining = policy.deadline.map(|d| d.saturating_sub(now));
        let result = match retries.record(produced, remaining) {
            Decision::Retry { refresh_map, delay } => {
                if refresh_map {
                    refreshes += 1;
                    events.push(Event::Refresh { at_ms: ms(now) });
                }
                events.push(Event::Wait {
                    at_ms: ms(now),
                    ms: ms(delay),
                });
                now += delay;
                continue;
            }
            Decision::FollowAsk => {
                events.push(Event::Ask { at_ms: ms(now) });
                continue;
            }
            Decision::Return => "returned to the caller".to_owned(),
            Decision::Surface => "surfaced at once (not retried)".to_owned(),
            Decision::GiveUp(reason) => format!("gave up: {reason}"),
        };
        events.push(Event::End {
            at_ms: ms(now),
            result,
            last: outcome_name(produced),
            attempts: retries.attempts(),
            refreshes,
        });
        return Ok(events);
    }
}

/// [`simulate`] for JS: the timeline as a JSON array. `timeout_ms` of
/// `undefined` (or 0) means no deadline.
///
/// # Errors
/// As [`simulate`].
#[wasm_bindgen(js_name = simulateRetries)]
pub fn simulate_retries(
    script: &str,
    max_attempts: u32,
    backoff_ms: u32,
    timeout_ms: Option<u32>,
    rtt_ms: u32,
) -> Result<String, JsError> {
    let policy = RetryPolicy {
        max_attempts,
        backoff: Duration::from_millis(backoff_ms.into()),
        deadline: timeout_ms
            .filter(|&t| t > 0)
            .map(|t| Duration::from_millis(t.into())),
    };
    let events = simulate(script, policy, Duration::from_millis(rtt_ms.into()))
        .map_err(|e| JsError::new(&e))?;
    Ok(timeline_json(&events))
}

/// The timeline as a JSON array of `{event, at_ms, ...}` objects.
fn timeline_json(events: &[Event]) -> String {
    let mut out = String::from("[");
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut o = json::Object::open(&mut out);
        match event {
            Event::Attempt {
                at_ms,
                attempt,
                outcome,
            } => o
                .str("event", "attempt")
                .num("at_ms", *at_ms)
                .num("attempt", (*attempt).into())
                .str("outcome", outcome),
            Event::Refresh { at_ms } => o.str("event", "refresh").num("at_ms", *at_ms),
            Event::Ask { at_ms } => o.str("event", "ask").num("at_ms", *at_ms),
            Event::Wait { at_ms, ms } => o.str("event", "wait").num("at_ms", *at_ms).num("ms", *ms),
            Event::End {
                at_ms,
                result,
                last,
                attempts,
                refreshes,
            } => o
                .str("event", "end")
                .num("at_ms", *at_ms)
                .str("result", result)
                .str("last", last)
                .num("attempts", (*attempts).into())
                .num("refreshes", (*refreshes).into()),
        }
        .close();
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(events: &[Event]) -> &Event {
        events.last().unwrap()
    }

    /// The timeline of `script` under the default policy, each attempt
    /// taking `rtt_ms`.
    fn run(script: &str, rtt_ms: u64) -> Vec<Event> {
        simulate(script, RetryPolicy::DEFAULT, Duration::from_millis(rtt_ms)).unwrap()
    }

    #[test]
    fn moved_then_migrating_then_ok() {
        let events = run("Moved, Migrating, Ok", 1);
        let kinds: Vec<String> = events
            .iter()
            .map(|e| format!("{e:?}").split(' ').next().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            ["Attempt", "Refresh", "Wait", "Attempt", "Wait", "Attempt", "End"]
        );
        assert_eq!(events[2], Event::Wait { at_ms: 1, ms: 100 });
        assert_eq!(
            events[4],
            Event::Wait {
                at_ms: 102,
                ms: 1600
            }
        );
        assert_eq!(
            *end(&events),
            Event::End {
                at_ms: 1703,
                result: "returned to the caller".into(),
                last: "Ok",
                attempts: 3,
                refreshes: 1
            }
        );
    }

    #[test]
    fn endless_moved_is_bounded() {
        let events = run("moved", 1);
        let Event::End {
            attempts,
            refreshes,
            result,
            ..
        } = end(&events)
        else {
            panic!()
        };
        assert_eq!((*attempts, *refreshes), (3, 2));
        assert_eq!(result, "gave up: attempt budget exhausted");
    }

    #[test]
    fn timeline_json_parses() {
        let events = run("Ask, Moved, Ok", 2);
        let json: serde_json::Value = serde_json::from_str(&timeline_json(&events)).unwrap();
        let kinds: Vec<&str> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["attempt", "ask", "attempt", "refresh", "wait", "attempt", "end"]
        );
        assert_eq!(json[6]["attempts"], 3);
        assert_eq!(json[4]["ms"], 200);
    }

    #[test]
    fn names_read_back_as_printed() {
        for (name, o) in NAMED_OUTCOMES {
            assert_eq!(outcome(name), Some(o));
            assert_eq!(outcome(&name.to_ascii_lowercase()), Some(o));
        }
        assert_eq!(outcome_name(outcome("other").unwrap()), "Error");
        assert_eq!(outcome_name(outcome("mOvEd").unwrap()), "Moved");
    }

    #[test]
    fn bad_scripts_are_errors() {
        assert_eq!(
            simulate("Moved, Nope", RetryPolicy::DEFAULT, Duration::ZERO).unwrap_err(),
            "unknown outcome 'Nope' (try Moved, Migrating, Ask, Ok, ...)"
        );
        assert!(simulate(" , ", RetryPolicy::DEFAULT, Duration::ZERO).is_err());
        let huge = RetryPolicy {
            max_attempts: 1_000_000,
            ..RetryPolicy::DEFAULT
        };
        assert!(simulate("Moved", huge, Duration::ZERO).is_err());
    }
}
