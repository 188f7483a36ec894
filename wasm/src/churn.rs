//! The core's churn simulation (`zaris_core::simulate_churn`) for the page:
//! a client's stream of requests while one ownership event unfolds, under
//! an editable policy or one of the two naive loops, as JSON the page
//! draws (one lane per node, the client's last).

use core::fmt::Write;
use core::time::Duration;

use crate::json;
use wasm_bindgen::prelude::*;
use zaris_core::{simulate_churn, ChurnEntry, ChurnEvent, ChurnScenario, ClientModel, RetryPolicy};

/// The marks' names, by `ChurnMark as usize`.
const MARKS: [&str; 9] = [
    "served", "moved", "ask", "refused", "loop", "refresh", "wait", "failed", "tryagain",
];

/// The event named `event` (`failover`, `kill`: of `master`; `migrate`:
/// slots `first..=last` from `master` to `to`; `bounce`: slot `first` to
/// `to` and back).
///
/// # Errors
/// An unknown event name.
pub fn event(event: &str, master: u8, to: u8, first: u16, last: u16) -> Result<ChurnEvent, String> {
    Ok(match event {
        "failover" => ChurnEvent::Failover { master },
        "kill" => ChurnEvent::Kill { master },
        "migrate" => ChurnEvent::Migrate {
            from: master,
            to,
            first,
            last,
        },
        "bounce" => ChurnEvent::Bounce { slot: first, to },
        other => {
            return Err(format!(
                "unknown event \"{other}\": failover, kill, migrate or bounce"
            ))
        }
    })
}

/// The client named `model` (`zaris`, `deadline-only`, `attempts-only`);
/// Zaris's with the policy given.
///
/// # Errors
/// An unknown model name.
pub fn model(
    model: &str,
    policy: RetryPolicy,
    refresh_interval: Duration,
) -> Result<ClientModel, String> {
    let base = match model {
        "zaris" => ClientModel {
            policy,
            ..ClientModel::ZARIS
        },
        "deadline-only" => ClientModel::deadline_only(),
        "attempts-only" => ClientModel::attempts_only(),
        other => {
            return Err(format!(
                "unknown client \"{other}\": zaris, deadline-only or attempts-only"
            ))
        }
    };
    Ok(ClientModel {
        refresh_min_interval: refresh_interval,
        ..base
    })
}

/// The run as JSON: `{"totals": {...}, "lanes": [...], "marks": [...],
/// "entries": [[at_us, lane, mark, request], ...]}` (time in microseconds,
/// integers: no float formatting in the module; lanes: the masters, their
/// replicas, then the client's own).
///
/// # Errors
/// A scenario out of bounds, in words.
pub fn run_json(scenario: &ChurnScenario, model: &ClientModel) -> Result<String, String> {
    let lanes = usize::from(scenario.masters) * 2;
    let mut entries = String::from("[");
    let mut first = true;
    let totals = simulate_churn(scenario, model, |e: ChurnEntry| {
        if !first {
            entries.push(',');
        }
        first = false;
        let lane = e.node.map_or(lanes, usize::from);
        let _ = write!(
            entries,
            "[{},{lane},{},{}]",
            u64::try_from(e.at.as_micros()).unwrap_or(u64::MAX),
            e.mark as usize,
            e.request
        );
    })
    .map_err(|e| e.to_string())?;
    entries.push(']');
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let mut totals_json = String::new();
    json::Object::open(&mut totals_json)
        .num("requests", totals.requests.into())
        .num("served", totals.served.into())
        .num("failed", totals.failed.into())
        .num("attempts", totals.attempts.into())
        .num("refreshes", totals.refreshes.into())
        .num("worst_ms", ms(totals.worst))
        .close();
    let mut lane_names = String::from("[");
    for i in 0..=lanes {
        if i > 0 {
            lane_names.push(',');
        }
        let m = usize::from(scenario.masters);
        let name = if i == lanes {
            String::from("client")
        } else if i < m {
            format!("master {i}")
        } else {
            format!("replica of {}", i - m)
        };
        json::string(&mut lane_names, &name);
    }
    lane_names.push(']');
    let mut marks = String::from("[");
    for (i, name) in MARKS.iter().enumerate() {
        if i > 0 {
            marks.push(',');
        }
        json::string(&mut marks, name);
    }
    marks.push(']');
    let mut out = String::new();
    json::Object::open(&mut out)
        .raw("totals", &totals_json)
        .raw("lanes", &lane_names)
        .raw("marks", &marks)
        .num("duration_ms", ms(scenario.duration))
        .num("event_ms", ms(scenario.event_at))
        .raw("entries", &entries)
        .close();
    Ok(out)
}

/// A client's requests while `event` unfolds on a 3+3 cluster (see
/// `zaris_core::simulate_churn`), as JSON for the page. `model` is `zaris`
/// (with the policy given: attempts, backoff, deadline; `timeout_ms` of
/// `undefined` or 0 for none), `deadline-only` or `attempts-only`; every
/// client refreshes at most once per `refresh_interval_ms`.
///
/// # Errors
/// An unknown event or model, or a scenario out of bounds.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = simulateChurn)]
pub fn simulate_churn_js(
    event_name: &str,
    master: u8,
    to: u8,
    first: u16,
    last: u16,
    model_name: &str,
    max_attempts: u32,
    backoff_ms: u32,
    timeout_ms: Option<u32>,
    refresh_interval_ms: u32,
) -> Result<String, JsError> {
    let policy = crate::simulate::policy_of(max_attempts, backoff_ms, timeout_ms);
    let interval = Duration::from_millis(refresh_interval_ms.into());
    let scenario = ChurnScenario::new(
        event(event_name, master, to, first, last).map_err(|e| JsError::new(&e))?,
    );
    let model = model(model_name, policy, interval).map_err(|e| JsError::new(&e))?;
    run_json(&scenario, &model).map_err(|e| JsError::new(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_runs_to_json_with_its_lanes_and_totals() {
        let scenario = ChurnScenario::new(event("kill", 2, 0, 0, 0).unwrap());
        let out = run_json(
            &scenario,
            &model("zaris", RetryPolicy::DEFAULT, Duration::from_millis(500)).unwrap(),
        )
        .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["totals"]["requests"], 2000);
        assert_eq!(parsed["totals"]["failed"], 0);
        assert_eq!(parsed["lanes"].as_array().unwrap().len(), 7);
        assert_eq!(parsed["lanes"][6], "client");
        let entries = parsed["entries"].as_array().unwrap();
        assert!(entries
            .iter()
            .any(|e| e[2] == zaris_core::ChurnMark::Refused as usize && e[1] == 2));
        assert!(event("nope", 0, 0, 0, 0).is_err());
        assert!(model("nope", RetryPolicy::DEFAULT, Duration::ZERO).is_err());
    }
}
