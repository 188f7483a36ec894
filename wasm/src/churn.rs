//! The core's churn simulation (`zaris_core::simulate_churn`) for the page:
//! a client's stream of requests while one ownership event unfolds, under
//! an editable policy or one of the two naive loops, as JSON the page
//! draws (one lane per node, the client's last).

use core::fmt::Write;
use core::time::Duration;

use crate::json;
use wasm_bindgen::prelude::*;
use zaris_core::{
    simulate_churn, ChurnEntry, ChurnEvent, ChurnMilestone, ChurnScenario, ClientModel, RetryPolicy,
};

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

/// The name of node `node` (numbered as the lanes are) among `masters`.
fn node_name(node: u8, masters: u8) -> String {
    if node < masters {
        format!("master {node}")
    } else {
        format!("replica of {}", node - masters)
    }
}

/// A milestone as numbers: its kind (`ChurnMilestone`'s variants in
/// order, from 0), then its fields in declaration order. The page puts it
/// in words.
fn milestone_fields(m: ChurnMilestone) -> ([u16; 6], usize) {
    match m {
        ChurnMilestone::Killed { master } => ([0, master.into(), 0, 0, 0, 0], 2),
        ChurnMilestone::FailedOver { master, replica } => {
            ([1, master.into(), replica.into(), 0, 0, 0], 3)
        }
        ChurnMilestone::EmptySlotsMoved {
            from,
            to,
            first,
            last,
            keyed,
        } => ([2, from.into(), to.into(), first, last, keyed], 6),
        ChurnMilestone::Migrating { slot, from, to } => {
            ([3, slot, from.into(), to.into(), 0, 0], 4)
        }
        ChurnMilestone::Migrated { slot, from, to } => ([4, slot, from.into(), to.into(), 0, 0], 4),
    }
}

/// The run as JSON: `{"totals": {...}, "lanes": [...], "marks": [...],
/// "duration_ms", "event_ms", "entries": [[at_us, lane, mark, request],
/// ...], "requests": [[start_us, slot], ...], "key_slots": [...],
/// "milestones": [[at_us, kind, fields...], ...]}` (time in microseconds, integers:
/// no float formatting in the module; lanes: the masters, their replicas,
/// then the client's own).
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
    let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let gap = Duration::from_secs(1) / scenario.rate.max(1);
    let mut requests = String::from("[");
    for i in 0..totals.requests {
        if i > 0 {
            requests.push(',');
        }
        let slot = scenario.slot_of_key(scenario.key_of_request(i));
        let _ = write!(requests, "[{},{slot}]", us(gap * i));
    }
    requests.push(']');
    let mut key_slots = String::from("[");
    for k in 0..scenario.keys {
        if k > 0 {
            key_slots.push(',');
        }
        let _ = write!(key_slots, "{}", scenario.slot_of_key(k));
    }
    key_slots.push(']');
    let mut milestones = String::from("[");
    scenario.milestones(|at, m| {
        if milestones.len() > 1 {
            milestones.push(',');
        }
        let _ = write!(milestones, "[{}", us(at));
        let (fields, n) = milestone_fields(m);
        for field in &fields[..n] {
            let _ = write!(milestones, ",{field}");
        }
        milestones.push(']');
    });
    milestones.push(']');
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
        let name = if i == lanes {
            String::from("client")
        } else {
            node_name(i as u8, scenario.masters)
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
        .raw("requests", &requests)
        .raw("key_slots", &key_slots)
        .raw("milestones", &milestones)
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

/// Who owns each slot at `at_ms` into the scenario's run (the cluster's
/// truth, not a client's belief): 16,384 bytes of owners (numbered as the
/// lanes are; 255 for none), then 16,384 of where each slot is migrating
/// to (255 for nowhere).
///
/// # Errors
/// An unknown event, or a scenario out of bounds, in words.
#[wasm_bindgen(js_name = churnOwnersAt)]
pub fn churn_owners_at(
    event_name: &str,
    master: u8,
    to: u8,
    first: u16,
    last: u16,
    at_ms: u32,
) -> Result<Vec<u8>, JsError> {
    let scenario = ChurnScenario::new(
        event(event_name, master, to, first, last).map_err(|e| JsError::new(&e))?,
    );
    owners_at(&scenario, Duration::from_millis(at_ms.into())).map_err(|e| JsError::new(&e))
}

/// [`churn_owners_at`] for a scenario.
///
/// # Errors
/// A scenario out of bounds, in words.
pub fn owners_at(scenario: &ChurnScenario, at: Duration) -> Result<Vec<u8>, String> {
    scenario.check().map_err(|e| e.to_string())?;
    let slots = usize::from(zaris_core::SLOT_COUNT);
    let mut out = vec![u8::MAX; 2 * slots];
    for slot in 0..zaris_core::SLOT_COUNT {
        let (owner, moving) = scenario.owner_at(slot, at);
        out[usize::from(slot)] = owner.unwrap_or(u8::MAX);
        out[slots + usize::from(slot)] = moving.unwrap_or(u8::MAX);
    }
    Ok(out)
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
        // Each request's start and slot, the keys' slots, the milestones.
        assert_eq!(parsed["requests"].as_array().unwrap().len(), 2000);
        assert_eq!(parsed["requests"][1][0], 2500, "400 a second: 2.5 ms apart");
        assert_eq!(parsed["key_slots"].as_array().unwrap().len(), 64);
        assert_eq!(parsed["key_slots"][0], 7);
        let milestones = parsed["milestones"].as_array().unwrap();
        assert_eq!(milestones.len(), 2);
        assert_eq!(milestones[0][0], 1_000_000);
        assert_eq!(
            milestones[0],
            serde_json::json!([1_000_000, 0, 2]),
            "master 2 killed"
        );
        assert_eq!(
            milestones[1],
            serde_json::json!([3_000_000, 1, 2, 5]),
            "its replica, lane 5, takes over"
        );
    }

    #[test]
    fn owners_at_a_moment_follow_the_event() {
        let kill = ChurnScenario::new(event("kill", 2, 0, 0, 0).unwrap());
        let before = owners_at(&kill, Duration::ZERO).unwrap();
        let during = owners_at(&kill, Duration::from_millis(1500)).unwrap();
        let after = owners_at(&kill, Duration::from_millis(3500)).unwrap();
        assert_eq!((before[0], before[16383]), (0, 2));
        assert_eq!((during[0], during[16383]), (0, u8::MAX), "no one serves");
        assert_eq!(after[16383], 5, "master 2's replica");
        let migrate = ChurnScenario::new(event("migrate", 0, 1, 0, 1023).unwrap());
        let moving = owners_at(&migrate, Duration::from_millis(1100)).unwrap();
        assert_eq!((moving[7], moving[16384 + 7]), (0, 1), "slot 7 mid-way");
        assert_eq!(moving[8], 1, "a slot without keys moved at once");
        let wrong = ChurnScenario::new(event("migrate", 2, 1, 0, 1023).unwrap());
        assert_eq!(
            owners_at(&wrong, Duration::ZERO).unwrap_err(),
            "master 2 owns slots 10922 to 16383, so it cannot migrate 0 to 1023"
        );
        assert!(model("nope", RetryPolicy::DEFAULT, Duration::ZERO).is_err());
    }
}
