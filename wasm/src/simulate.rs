//! What the client does for a sequence of outcomes: the core's replay of
//! its retry machine with simulated time, as a JSON timeline for the page.

use core::time::Duration;

use crate::json;
use wasm_bindgen::prelude::*;
use zaris_core::{parse_script, replay, Decision, Outcome, RetryPolicy, Step};

/// A simulation never records more attempts than this (a policy with a huge
/// budget and no deadline would otherwise run for a very long time).
const MAX_SIMULATED_ATTEMPTS: u32 = 1_000;

/// The steps of `script` (outcome names separated by commas, spaces or
/// arrows; the last one repeats), each attempt taking `rtt`.
///
/// # Errors
/// An unknown outcome name (named in the message), an empty script, or a
/// budget above the simulation's limit.
pub fn simulate(script: &str, policy: RetryPolicy, rtt: Duration) -> Result<Vec<Step>, String> {
    let outcomes = parse_script(script)
        .collect::<Result<Vec<Outcome>, _>>()
        .map_err(|e| e.to_string())?;
    if outcomes.is_empty() {
        return Err("the script is empty: list outcomes such as `Moved, Migrating, Ok`".to_owned());
    }
    if policy.attempt_budget() > MAX_SIMULATED_ATTEMPTS {
        return Err(format!(
            "at most {MAX_SIMULATED_ATTEMPTS} attempts can be simulated"
        ));
    }
    Ok(replay(&outcomes, policy, rtt).collect())
}

/// The retry machine's decisions for a status script (`Moved, Migrating,
/// Ok`) under a policy, for JS: the timeline as a JSON array. `timeout_ms`
/// of `undefined` (or 0) means no deadline.
///
/// # Errors
/// A script that does not parse or is empty, or more attempts than can be
/// simulated.
#[wasm_bindgen(js_name = simulateRetries)]
pub fn simulate_retries(
    script: &str,
    max_attempts: u32,
    backoff_ms: u32,
    timeout_ms: Option<u32>,
    rtt_ms: u32,
) -> Result<String, JsError> {
    let policy = policy_of(max_attempts, backoff_ms, timeout_ms);
    let steps = simulate(script, policy, Duration::from_millis(rtt_ms.into()))
        .map_err(|e| JsError::new(&e))?;
    Ok(timeline_json(&steps))
}

/// A policy as the page gives it: a deadline of `undefined` or 0 is none.
pub(crate) fn policy_of(
    max_attempts: u32,
    backoff_ms: u32,
    timeout_ms: Option<u32>,
) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff: Duration::from_millis(backoff_ms.into()),
        deadline: timeout_ms
            .filter(|&t| t > 0)
            .map(|t| Duration::from_millis(t.into())),
    }
}

/// The timeline as a JSON array of `{event, at_ms, ...}` objects; the end
/// says how the request ended and with which outcome.
fn timeline_json(steps: &[Step]) -> String {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let mut out = String::from("[");
    let mut last = None;
    for (i, step) in steps.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut o = json::Object::open(&mut out);
        match *step {
            Step::Attempt {
                at,
                attempt,
                outcome,
            } => {
                last = Some(outcome);
                o.str("event", "attempt")
                    .num("at_ms", ms(at))
                    .num("attempt", attempt.into())
                    .str("outcome", outcome.name())
            }
            Step::Refresh { at } => o.str("event", "refresh").num("at_ms", ms(at)),
            Step::FollowAsk { at } => o.str("event", "ask").num("at_ms", ms(at)),
            Step::Wait { at, delay } => o
                .str("event", "wait")
                .num("at_ms", ms(at))
                .num("ms", ms(delay)),
            Step::End {
                at,
                decision,
                attempts,
                refreshes,
            } => o
                .str("event", "end")
                .num("at_ms", ms(at))
                .str("result", &ending(decision))
                .str("last", last.map_or("", Outcome::name))
                .num("attempts", attempts.into())
                .num("refreshes", refreshes.into()),
        }
        .close();
    }
    out.push(']');
    out
}

/// How a request ended, in words.
fn ending(decision: Decision) -> String {
    match decision {
        Decision::Return => "returned to the caller".to_owned(),
        Decision::Surface => "surfaced at once (not retried)".to_owned(),
        Decision::GiveUp(reason) => format!("gave up: {reason}"),
        // A replay ends only on the three above.
        Decision::FollowAsk | Decision::Retry { .. } => "still retrying".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(script: &str, rtt_ms: u64) -> serde_json::Value {
        let steps = simulate(script, RetryPolicy::DEFAULT, Duration::from_millis(rtt_ms)).unwrap();
        serde_json::from_str(&timeline_json(&steps)).unwrap()
    }

    #[test]
    fn moved_then_migrating_then_ok() {
        let json = timeline("Moved, Migrating, Ok", 1);
        let kinds: Vec<&str> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["attempt", "refresh", "wait", "attempt", "wait", "attempt", "end"]
        );
        assert_eq!(
            (json[2]["at_ms"].as_u64(), json[2]["ms"].as_u64()),
            (Some(1), Some(100))
        );
        assert_eq!(json[4]["ms"], 1600);
        let end = &json[6];
        assert_eq!(end["at_ms"], 1703);
        assert_eq!(end["result"], "returned to the caller");
        assert_eq!(end["last"], "Ok");
        assert_eq!(
            (end["attempts"].as_u64(), end["refreshes"].as_u64()),
            (Some(3), Some(1))
        );
    }

    #[test]
    fn endless_moved_is_bounded() {
        let json = timeline("moved", 1);
        let end = json.as_array().unwrap().last().unwrap();
        assert_eq!(
            (end["attempts"].as_u64(), end["refreshes"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(end["result"], "gave up: attempt budget exhausted");
    }

    #[test]
    fn ask_is_followed_at_once() {
        let json = timeline("Ask, Moved, Ok", 2);
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
