//! A client under churn, simulated: a steady stream of requests to keys
//! all over a cluster's slots while one ownership event unfolds (a
//! failover, a kill, a migration step by step, a slot moved away and
//! back), with simulated time. The requests make the decisions the tokio
//! client makes, through the same code: the core's [`RetryLoop`] for
//! retries and delays, [`RefreshGate`] for single-flight, rate-limited map
//! refreshes, [`RedirectMemory`] for redirect loops and
//! [`owner_wait_until`] for the wait, unsent, on a dead owner. The
//! playground draws its timeline from it; the naive loops it is compared
//! with ([`ClientModel::deadline_only`], [`ClientModel::attempts_only`])
//! show why a request has two bounds.
//!
//! No clock, no allocation: the entries go to a callback as they happen.
//!
//! ```
//! use zaris_core::{simulate_churn, ChurnEvent, ChurnScenario, ClientModel};
//!
//! let kill = ChurnScenario::new(ChurnEvent::Kill { master: 2 });
//! let zaris = simulate_churn(&kill, &ClientModel::ZARIS, |_| {}).unwrap();
//! let naive = simulate_churn(&kill, &ClientModel::attempts_only(), |_| {}).unwrap();
//! assert_eq!(zaris.failed, 0, "every request waits out the failover");
//! assert!(naive.failed > 0, "three quick attempts end inside it");
//! ```

use core::time::Duration;

use crate::health::{probe_due, probe_interval};
use crate::redirect::RedirectMemory;
use crate::refresh::{owner_wait_until, RefreshAsk, RefreshGate};
use crate::retry::{Decision, Outcome, RetryLoop};
use crate::status::KvStatus;
use crate::{
    RetryPolicy, TransportFailure, DEFAULT_REFRESH_WAIT, REFRESH_MIN_INTERVAL, SLOT_COUNT,
};

use super::scenario::{
    ChurnError, ChurnEvent, ChurnScenario, MAX_CHURN_MASTERS, MAX_CHURN_REQUESTS,
};

/// The client's rules: its retry policy, the refresh interval and wait,
/// and whether a request for a dead owner waits, unsent, for the map (the
/// Zaris client does; a naive loop just tries again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClientModel {
    /// Attempts, backoff, deadline.
    pub policy: RetryPolicy,
    /// Refreshes never closer together than this.
    pub refresh_min_interval: Duration,
    /// How long a request waits for a refresh, or for an owner.
    pub refresh_wait: Duration,
    /// Whether requests for a dead owner wait, unsent, for the map.
    pub owner_wait: bool,
}

impl ClientModel {
    /// The Zaris client with its defaults (docs/behaviour.md §3, §5).
    pub const ZARIS: Self = Self {
        policy: RetryPolicy::DEFAULT,
        refresh_min_interval: REFRESH_MIN_INTERVAL,
        refresh_wait: DEFAULT_REFRESH_WAIT,
        owner_wait: true,
    };

    /// A loop bounded by the 60 s deadline alone: it keeps trying.
    #[must_use]
    pub const fn deadline_only() -> Self {
        Self {
            policy: RetryPolicy {
                max_attempts: u32::MAX,
                ..RetryPolicy::DEFAULT
            },
            owner_wait: false,
            ..Self::ZARIS
        }
    }

    /// A loop bounded by its three attempts alone.
    #[must_use]
    pub const fn attempts_only() -> Self {
        Self {
            policy: RetryPolicy {
                deadline: None,
                ..RetryPolicy::DEFAULT
            },
            owner_wait: false,
            ..Self::ZARIS
        }
    }
}

/// What an entry of the timeline records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Mark {
    /// An attempt answered.
    Served,
    /// An attempt answered `MOVED`.
    Moved,
    /// An attempt answered `ASK` (the next goes after `ASKING`).
    Ask,
    /// A connection refused (a dead node), an attempt's or a probe's.
    Refused,
    /// A `MOVED` that closed a redirect loop: its hint is not applied.
    Loop,
    /// A map refresh ended (on the client's lane).
    Refresh,
    /// A request began to wait, unsent, for its slot's owner.
    Wait,
    /// A request ended in an error (the loop gave up).
    Failed,
    /// A two-key command answered `TRYAGAIN`: its slot is migrating and
    /// its keys are split between the two nodes.
    TryAgain,
}

/// One entry of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Entry {
    /// When.
    pub at: Duration,
    /// The node's lane: masters `0..masters`, then their replicas in the
    /// same order; `None` for the client's own (refreshes, waits, ends).
    pub node: Option<u8>,
    /// What happened.
    pub mark: Mark,
    /// The request, from 0 (`u32::MAX` for a refresh).
    pub request: u32,
}

/// What the run came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChurnTotals {
    /// Requests made.
    pub requests: u32,
    /// Requests answered.
    pub served: u32,
    /// Requests that ended in an error.
    pub failed: u32,
    /// Attempts sent (probes of a dead node included).
    pub attempts: u32,
    /// Map refreshes run.
    pub refreshes: u32,
    /// The longest a request took, answered or not.
    pub worst: Duration,
}

/// A request's state.
#[derive(Clone, Copy)]
struct Request {
    slot: u16,
    started: Duration,
    loop_: RetryLoop,
    /// The node to follow an `ASK` to, next attempt.
    ask: Option<u8>,
    /// Since when it has waited, unsent, for an owner.
    waiting_since: Option<Duration>,
    /// It waited as long as it may: sent whatever the map says.
    waited_out: bool,
    /// Its last `MOVED` closed a loop: the map as it stands would send the
    /// retry where it just failed, so it waits for a new one.
    stale_map: bool,
    done: bool,
}

/// Something due at a time: a request's next step, or a refresh's end.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: Duration,
    /// [`REFRESH`], [`REFRESH_START`], or a request's number plus two: a
    /// refresh ends before the requests due at the same instant look at
    /// the map.
    what: u32,
}

const REFRESH: u32 = 0;
/// A refresh to start (for requests that need a new map, once the
/// interval allows).
const REFRESH_START: u32 = 1;

impl Due {
    fn request(at: Duration, id: u32) -> Self {
        Due { at, what: id + 2 }
    }
}

/// The cluster's truth, and what the client believes.
struct World<'a> {
    s: &'a ChurnScenario,
    /// The client's map: slot → node.
    map: [u8; SLOT_COUNT as usize],
    gate: RefreshGate,
    /// When the refresh in flight ends.
    refresh_ends: Duration,
    redirects: RedirectMemory<64>,
    /// Nodes the client has seen refuse a connection (until a refresh
    /// moves their slots, they get no attempts from a waiting client).
    refusing: [bool; 2 * MAX_CHURN_MASTERS as usize],
    /// When each node's next probe is due (`None`: never probed).
    probe_at: [Option<Duration>; 2 * MAX_CHURN_MASTERS as usize],
}

impl World<'_> {
    fn dead(&self, node: u8, t: Duration) -> bool {
        matches!(self.s.event, ChurnEvent::Kill { master } if master == node && t >= self.s.event_at)
    }

    /// The map a refresh ending at `t` brings: the cluster's own view (a
    /// dead master keeps its slots until it is failed over).
    fn refresh(&mut self, t: Duration) {
        for slot in 0..SLOT_COUNT {
            let owner = match self.s.owner_at(slot, t) {
                (Some(owner), _) => owner,
                (None, _) => self.s.split_owner(slot),
            };
            self.map[usize::from(slot)] = owner;
        }
        self.refusing = [false; 2 * MAX_CHURN_MASTERS as usize];
        for node in 0..2 * self.s.masters {
            self.refusing[usize::from(node)] = self.dead(node, t) && self.map.contains(&node);
        }
    }

    /// A refresh asked for at `now`: when the request may look at the map
    /// again (`None`: debounced, nothing to wait for).
    fn ask_refresh(&mut self, now: Duration, due: &mut Queue) -> Option<Duration> {
        match self.gate.ask(now) {
            RefreshAsk::Start => {
                self.refresh_ends = now + self.s.refresh_latency;
                let _ = due.push(Due {
                    at: self.refresh_ends,
                    what: REFRESH,
                });
                Some(self.refresh_ends)
            }
            RefreshAsk::Ride => Some(self.refresh_ends),
            RefreshAsk::Debounced => None,
        }
    }

    /// When a new map will be in, for a request that cannot go on with
    /// this one: the refresh in flight's end, or the next one the interval
    /// allows (started then).
    fn new_map_at(&mut self, now: Duration, due: &mut Queue) -> Duration {
        if let Some(ends) = self.ask_refresh(now, due) {
            return ends;
        }
        let start = self.gate.next_allowed(now);
        let _ = due.push(Due {
            at: start,
            what: REFRESH_START,
        });
        start + self.s.refresh_latency
    }
}

/// What is due next, soonest first.
type Queue = heapless::BinaryHeap<Due, heapless::binary_heap::Min, { MAX_CHURN_REQUESTS + 4 }>;

/// Runs `scenario` with a client following `model`, handing each timeline
/// entry to `each` in time order; the totals.
///
/// # Errors
/// [`ChurnError`] for a scenario out of bounds.
#[allow(clippy::too_many_lines)]
pub fn simulate_churn(
    scenario: &ChurnScenario,
    model: &ClientModel,
    mut each: impl FnMut(Entry),
) -> Result<ChurnTotals, ChurnError> {
    let s = scenario;
    s.check()?;
    let count = u64::from(s.rate).saturating_mul(s.duration.as_millis() as u64) / 1000;
    let count = count as u32;
    let mut world = World {
        s,
        map: [0; SLOT_COUNT as usize],
        gate: RefreshGate::new(model.refresh_min_interval),
        refresh_ends: Duration::ZERO,
        redirects: RedirectMemory::default(),
        refusing: [false; 2 * MAX_CHURN_MASTERS as usize],
        probe_at: [None; 2 * MAX_CHURN_MASTERS as usize],
    };
    world.refresh(Duration::ZERO);
    let mut requests: heapless::Vec<Request, MAX_CHURN_REQUESTS> = heapless::Vec::new();
    let mut due: Queue = heapless::BinaryHeap::new();
    let gap = Duration::from_secs(1) / s.rate.max(1);
    for i in 0..count {
        let slot = s.slot_of_key(s.key_of_request(i));
        let started = gap * i;
        let _ = requests.push(Request {
            slot,
            started,
            loop_: RetryLoop::new(model.policy),
            ask: None,
            waiting_since: None,
            waited_out: false,
            stale_map: false,
            done: false,
        });
        let _ = due.push(Due::request(started, i));
    }
    let mut totals = ChurnTotals {
        requests: count,
        ..ChurnTotals::default()
    };
    let deadline_of = |r: &Request| model.policy.deadline.map(|d| r.started + d);
    while let Some(Due { at: now, what }) = due.pop() {
        if what == REFRESH {
            world.gate.finished(now);
            world.refresh(now);
            totals.refreshes += 1;
            each(Entry {
                at: now,
                node: None,
                mark: Mark::Refresh,
                request: u32::MAX,
            });
            continue;
        }
        if what == REFRESH_START {
            let _ = world.ask_refresh(now, &mut due);
            continue;
        }
        let id = what - 2;
        let r = requests[id as usize];
        if r.done {
            continue;
        }
        let remaining = deadline_of(&r).map(|d| d.saturating_sub(now));
        let end = |r: &mut Request, totals: &mut ChurnTotals, served: bool, at: Duration| {
            r.done = true;
            if served {
                totals.served += 1;
            } else {
                totals.failed += 1;
            }
            totals.worst = totals.worst.max(at - r.started);
        };
        let mut r = r;
        let believed = world.map[usize::from(r.slot)];
        let node = r.ask.take().unwrap_or(believed);
        let asking = node != believed;
        // A dead owner the client knows of: wait, unsent, for the map.
        if model.owner_wait && !asking && !r.waited_out && world.refusing[usize::from(node)] {
            let since = *r.waiting_since.get_or_insert_with(|| {
                each(Entry {
                    at: now,
                    node: None,
                    mark: Mark::Wait,
                    request: id,
                });
                now
            });
            match owner_wait_until(
                &model.policy,
                since,
                now,
                model.refresh_wait,
                deadline_of(&r),
            ) {
                Some(until) => {
                    // One waiting request probes the node per interval
                    // (a refusing node's: never a down one's backoff).
                    if probe_due(world.probe_at[usize::from(node)], now) {
                        world.probe_at[usize::from(node)] = Some(now + probe_interval(0, 0));
                        totals.attempts += 1;
                        each(Entry {
                            at: now + s.rtt,
                            node: Some(node),
                            mark: Mark::Refused,
                            request: id,
                        });
                    }
                    let wake = world
                        .ask_refresh(now, &mut due)
                        .unwrap_or_else(|| world.gate.next_allowed(now))
                        .max(now + Duration::from_millis(10))
                        .min(until);
                    requests[id as usize] = r;
                    let _ = due.push(Due::request(wake, id));
                }
                None => {
                    r.waited_out = true;
                    requests[id as usize] = r;
                    let _ = due.push(Due::request(now, id));
                }
            }
            continue;
        }
        // An attempt, answered one round trip later.
        totals.attempts += 1;
        let at = now + s.rtt;
        let outcome = if world.dead(node, now) {
            world.refusing[usize::from(node)] = true;
            each(Entry {
                at,
                node: Some(node),
                mark: Mark::Refused,
                request: id,
            });
            Outcome::Transport(TransportFailure::ConnectionRefused)
        } else {
            match s.owner_at(r.slot, now) {
                (Some(owner), moving) if owner == node || asking => {
                    // One request in four to each key is a two-key command
                    // (`MGET` of two keys of the slot; a key's requests
                    // come `keys` apart): mid-migration its keys are
                    // split, and the source says `TRYAGAIN`.
                    if moving.is_some() && !asking && (id / u32::from(s.keys.max(1))) % 4 == 3 {
                        each(Entry {
                            at,
                            node: Some(node),
                            mark: Mark::TryAgain,
                            request: id,
                        });
                        Outcome::Status(KvStatus::Migrating)
                    } else {
                        if let (Some(to), false) = (moving, asking) {
                            if (id + r.loop_.attempts()).is_multiple_of(2) {
                                each(Entry {
                                    at,
                                    node: Some(node),
                                    mark: Mark::Ask,
                                    request: id,
                                });
                                r.ask = Some(to);
                            }
                        }
                        if r.ask.is_some() {
                            Outcome::Ask
                        } else {
                            each(Entry {
                                at,
                                node: Some(node),
                                mark: Mark::Served,
                                request: id,
                            });
                            end(&mut r, &mut totals, true, at);
                            requests[id as usize] = r;
                            continue;
                        }
                    }
                }
                (owner, _) => {
                    // Every other node names the owner the cluster has
                    // (the dead master, until it is replaced).
                    let to = owner.unwrap_or_else(|| s.split_owner(r.slot));
                    let from = [b'n', node];
                    let looped = world.redirects.note(r.slot, &from, &[b'n', to], at);
                    if looped {
                        each(Entry {
                            at,
                            node: Some(node),
                            mark: Mark::Loop,
                            request: id,
                        });
                    } else {
                        world.map[usize::from(r.slot)] = to;
                        each(Entry {
                            at,
                            node: Some(node),
                            mark: Mark::Moved,
                            request: id,
                        });
                    }
                    r.stale_map = looped;
                    Outcome::Status(KvStatus::Moved)
                }
            }
        };
        let next = match r
            .loop_
            .record(outcome, remaining.map(|left| left.saturating_sub(s.rtt)))
        {
            Decision::FollowAsk => Some(at),
            Decision::Retry { refresh_map, delay } => {
                let after_delay = at + delay;
                let refreshed = if core::mem::take(&mut r.stale_map) {
                    Some(world.new_map_at(at, &mut due))
                } else if refresh_map {
                    world.ask_refresh(at, &mut due)
                } else {
                    None
                };
                Some(refreshed.map_or(after_delay, |done| done.max(after_delay)))
            }
            Decision::Return | Decision::Surface | Decision::GiveUp(_) => None,
        };
        match next {
            Some(next) => {
                requests[id as usize] = r;
                let _ = due.push(Due::request(next, id));
            }
            None => {
                each(Entry {
                    at,
                    node: None,
                    mark: Mark::Failed,
                    request: id,
                });
                end(&mut r, &mut totals, false, at);
                requests[id as usize] = r;
            }
        }
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(event: ChurnEvent, model: &ClientModel) -> (ChurnTotals, u32) {
        let scenario = ChurnScenario::new(event);
        let mut entries = 0;
        let mut last = Duration::ZERO;
        let totals = simulate_churn(&scenario, model, |e| {
            // As the simulation reaches them: at most a round trip ahead.
            assert!(e.at + scenario.rtt >= last, "in time order");
            last = last.max(e.at);
            entries += 1;
        })
        .unwrap();
        assert_eq!(
            totals.served + totals.failed,
            totals.requests,
            "every request ends"
        );
        (totals, entries)
    }

    /// The run's totals, and how many entries of each mark it made.
    fn marks(event: ChurnEvent, model: &ClientModel) -> (ChurnTotals, [u32; 9]) {
        let mut marks = [0; 9];
        let totals = simulate_churn(&ChurnScenario::new(event), model, |e| {
            marks[e.mark as usize] += 1;
        })
        .unwrap();
        (totals, marks)
    }

    #[test]
    fn a_kill_costs_zaris_latency_and_naive_loops_errors_or_load() {
        let kill = ChurnEvent::Kill { master: 2 };
        let (zaris, _) = run(kill, &ClientModel::ZARIS);
        let (attempts_only, _) = run(kill, &ClientModel::attempts_only());
        let (deadline_only, _) = run(kill, &ClientModel::deadline_only());
        assert_eq!(zaris.requests, 2000);
        assert_eq!(zaris.failed, 0);
        // The dead master's share of the requests made during the 2 s
        // failover waited it out: about 2 s, plus a refresh interval.
        assert!(zaris.worst >= Duration::from_millis(1900), "{zaris:?}");
        assert!(zaris.worst <= Duration::from_millis(2600), "{zaris:?}");
        // Refreshes: at most one per interval while it lasts, plus a few.
        assert!(zaris.refreshes <= 2000 / 500 + 3, "{zaris:?}");
        // Three quick attempts end inside the failover: errors.
        assert!(attempts_only.failed > 50, "{attempts_only:?}");
        // Trying until the deadline gets there, at the cost of attempts.
        assert_eq!(deadline_only.failed, 0, "{deadline_only:?}");
        assert!(
            deadline_only.attempts > zaris.attempts,
            "{deadline_only:?} vs {zaris:?}"
        );
    }

    #[test]
    fn a_failover_costs_one_moved_per_request_caught_and_few_refreshes() {
        let (t, _) = run(ChurnEvent::Failover { master: 0 }, &ClientModel::ZARIS);
        assert_eq!(t.failed, 0, "{t:?}");
        assert!(t.refreshes <= 3, "{t:?}");
        assert!(t.worst < Duration::from_millis(300), "{t:?}");
    }

    #[test]
    fn migrations_and_bounces_cost_no_errors() {
        let migrate = ChurnEvent::Migrate {
            from: 0,
            to: 1,
            first: 0,
            last: 1023,
        };
        let (t, seen) = marks(migrate, &ClientModel::ZARIS);
        assert_eq!(t.failed, 0, "{t:?}");
        assert!(
            seen[Mark::Ask as usize] > 0
                && seen[Mark::Moved as usize] > 0
                && seen[Mark::TryAgain as usize] > 0,
            "{seen:?}"
        );
        // Key 0's slot, away and back within the refresh interval: the
        // MOVED back closes a loop, not followed; no errors.
        let bounce = ChurnEvent::Bounce { slot: 7, to: 1 };
        let (t, seen) = marks(bounce, &ClientModel::ZARIS);
        assert_eq!(t.failed, 0, "{t:?}");
        assert!(seen[Mark::Moved as usize] > 0, "{seen:?}");
    }

    #[test]
    #[ignore = "prints the totals"]
    fn print_totals() {
        extern crate std;
        for event in [
            ChurnEvent::Kill { master: 2 },
            ChurnEvent::Failover { master: 0 },
            ChurnEvent::Migrate {
                from: 0,
                to: 1,
                first: 0,
                last: 319,
            },
            ChurnEvent::Bounce { slot: 7, to: 1 },
        ] {
            for (name, model) in [
                ("zaris", ClientModel::ZARIS),
                ("deadline-only", ClientModel::deadline_only()),
                ("attempts-only", ClientModel::attempts_only()),
            ] {
                let (t, entries) = run(event, &model);
                std::println!("{event:?} {name}: {t:?} entries {entries}");
            }
        }
    }

    #[test]
    fn scenarios_out_of_bounds_are_refused() {
        let mut s = ChurnScenario::new(ChurnEvent::Kill { master: 5 });
        assert_eq!(
            simulate_churn(&s, &ClientModel::ZARIS, |_| {}),
            Err(ChurnError::NoSuchMaster {
                master: 5,
                masters: 3
            })
        );
        s.event = ChurnEvent::Kill { master: 1 };
        s.rate = 100_000;
        assert_eq!(
            simulate_churn(&s, &ClientModel::ZARIS, |_| {}),
            Err(ChurnError::TooManyRequests)
        );
    }
}
