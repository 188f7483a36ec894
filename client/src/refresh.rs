//! Keeping the map honest (docs/behaviour.md §5): the push path (patch one
//! range, swap), the poll, and coalesced refreshes: at most one in flight,
//! callers ride it, a no-op within 500 ms of the last one, a bounded wait
//! that does not cancel the refresh for others, and a lock-free cleanup of
//! the in-flight slot (compare-and-swap).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use futures_util::stream::{FuturesUnordered, StreamExt};
use redis_protocol::resp2::types::BytesFrame;
use tokio::sync::watch;
use tracing::Instrument;

use crate::client::Inner;
use crate::cluster_map::{parse_cluster_shards_over, parse_cluster_slots, SlotRange};
use crate::conn::{encode, ConnError};
use crate::map::{Node, Snapshot};
use crate::ownership::Revealed;
use crate::stats::{Counters, RefreshCause};
use crate::value::from_frame;
use crate::{Error, Value};

/// Why a node gave no map: no answer, or an answer that is not one.
enum FetchError {
    Conn(ConnError),
    Map(String),
}

impl From<ConnError> for FetchError {
    fn from(e: ConnError) -> Self {
        FetchError::Conn(e)
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Conn(e) => e.fmt(f),
            FetchError::Map(e) => f.write_str(e),
        }
    }
}

/// One refresh in flight; its riders wait on `done`.
struct Flight {
    done: watch::Sender<bool>,
}

/// What a caller's refresh request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refreshed {
    /// A refresh (started by this caller or ridden) finished.
    Done,
    /// The map was refreshed less than 500 ms ago: nothing to do.
    Debounced,
    /// The wait ran out; the refresh goes on for others.
    StoppedWaiting,
}

/// The single-flight gate.
pub(crate) struct Gate {
    in_flight: ArcSwapOption<Flight>,
    /// Refreshes never come closer together than this.
    min_interval: Duration,
    /// When the last refresh finished, in ms after `origin` (+1; 0 = never).
    last_done: AtomicU64,
    origin: Instant,
}

impl Gate {
    pub(crate) fn new(min_interval: Duration) -> Self {
        Self {
            in_flight: ArcSwapOption::empty(),
            min_interval,
            last_done: AtomicU64::new(0),
            origin: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// The earliest moment a refresh would not be debounced.
    pub(crate) fn next_allowed(&self) -> Instant {
        match self.last_done.load(Ordering::Acquire) {
            0 => Instant::now(),
            last => self.origin + Duration::from_millis(last - 1) + self.min_interval,
        }
    }

    /// Refreshes unless one ran within the debounce window: starts `work`
    /// on the runtime if no refresh is in flight, else rides the one that
    /// is, and waits at most `wait` for it.
    pub(crate) async fn refresh<F>(
        self: &Arc<Self>,
        counters: &Counters,
        cause: RefreshCause,
        wait: Duration,
        work: impl FnOnce() -> F,
    ) -> Refreshed
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let last = self.last_done.load(Ordering::Acquire);
        let min_interval = u64::try_from(self.min_interval.as_millis()).unwrap_or(u64::MAX);
        if last != 0 && self.now_ms().saturating_sub(last) < min_interval {
            Counters::bump(&counters.refreshes_debounced);
            return Refreshed::Debounced;
        }
        let flight = loop {
            if let Some(flight) = self.in_flight.load_full() {
                Counters::bump(&counters.refreshes_coalesced);
                break flight;
            }
            let flight = Arc::new(Flight {
                done: watch::channel(false).0,
            });
            let previous = self
                .in_flight
                .compare_and_swap(&None::<Arc<Flight>>, Some(flight.clone()));
            if previous.is_some() {
                continue; // another caller won the race: ride theirs
            }
            counters.refresh_started(cause);
            let gate = self.clone();
            let mine = flight.clone();
            let work = work();
            // Spawned, so a caller that stops waiting cancels nothing.
            tokio::spawn(async move {
                work.await;
                gate.last_done.store(gate.now_ms(), Ordering::Release);
                // `send_replace`, not `send`: the value must stick even when no
                // rider has subscribed yet (work that ends at once).
                mine.done.send_replace(true);
                // Clear the slot only if it is still ours: no lock.
                gate.in_flight
                    .compare_and_swap(&Some(mine), None::<Arc<Flight>>);
            });
            break flight;
        };
        let mut done = flight.done.subscribe();
        let finished = tokio::time::timeout(wait, done.wait_for(|d| *d))
            .await
            .is_ok();
        if finished {
            Refreshed::Done
        } else {
            Refreshed::StoppedWaiting
        }
    }
}

/// Recent `MOVED` redirects, to tell a loop from churn: a `MOVED` back to
/// the node asked, or one that undoes a `MOVED` of the same slot between
/// the same two nodes moments ago. A loop is not followed; the next
/// refresh asks the other nodes first.
#[derive(Default)]
pub(crate) struct Redirects {
    recent: std::sync::Mutex<VecDeque<Redirect>>,
    looped: AtomicBool,
    suspects: std::sync::Mutex<Vec<Arc<str>>>,
}

struct Redirect {
    slot: u16,
    from: Arc<str>,
    to: Arc<str>,
    at: Instant,
}

/// A `MOVED` undone within this long closes a loop.
const LOOP_WINDOW: Duration = Duration::from_secs(2);
/// Redirects remembered (they are rare: each one patches the map).
const REMEMBERED: usize = 64;

impl Redirects {
    /// Records `from` answering `MOVED slot to`; `true` when it closes a
    /// loop (and `from` and `to` become suspects for the next refresh).
    pub(crate) fn note(&self, slot: u16, from: &str, to: &str) -> bool {
        let now = Instant::now();
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let looped = from == to
            || recent.iter().any(|r| {
                r.slot == slot
                    && *r.from == *to
                    && *r.to == *from
                    && now.duration_since(r.at) < LOOP_WINDOW
            });
        if recent.len() == REMEMBERED {
            recent.pop_front();
        }
        recent.push_back(Redirect {
            slot,
            from: from.into(),
            to: to.into(),
            at: now,
        });
        drop(recent);
        if looped {
            let mut suspects = self.suspects.lock().unwrap_or_else(|e| e.into_inner());
            for addr in [from, to] {
                if !suspects.iter().any(|s| **s == *addr) {
                    suspects.push(addr.into());
                }
            }
            self.looped.store(true, Ordering::Release);
        }
        looped
    }

    /// Whether a loop was seen that no refresh has answered yet.
    pub(crate) fn looped(&self) -> bool {
        self.looped.load(Ordering::Acquire)
    }

    /// Marks the loop answered (a refresh is starting for it); whether
    /// there was one.
    pub(crate) fn take_loop(&self) -> bool {
        self.looped.swap(false, Ordering::AcqRel)
    }

    fn suspects(&self) -> Vec<Arc<str>> {
        self.suspects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn clear_suspects(&self) {
        self.suspects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Nodes asked for the map at once; the answer most of them give wins.
const VOTERS: usize = 3;
/// After the first answer, how long the other voters have to answer.
const VOTE_GRACE: Duration = Duration::from_millis(100);

/// Which of the maps `answers` (in the order the nodes were asked) to
/// adopt, and how many answers agree with it: among those covering the
/// most slots (a map that leaves slots uncovered while another node covers
/// them is never taken), the one the most nodes agree on; on a tie, the
/// first asked.
pub(crate) fn choose_map(answers: &[&[SlotRange]]) -> Option<(usize, usize)> {
    let most = answers.iter().map(|a| slots_covered(a)).max()?;
    let full: Vec<usize> = (0..answers.len())
        .filter(|&i| slots_covered(answers[i]) == most)
        .collect();
    let votes = |i: usize| {
        full.iter()
            .filter(|&&j| same_owners(answers[j], answers[i]))
            .count()
    };
    // The first of the most voted: `max_by_key` keeps the last maximum.
    full.iter()
        .rev()
        .map(|&i| (i, votes(i)))
        .max_by_key(|&(_, votes)| votes)
}

impl Inner {
    /// The push path: `first..=last` re-pointed at `addr` (copy, patch,
    /// swap); returns how many segments changed. Nothing changed, nothing
    /// paid.
    pub(crate) fn push(&self, first: u16, last: u16, addr: &str, revealed: Revealed) -> u16 {
        loop {
            let current = self.snapshot.load_full();
            let Some((next, changed)) = current.with_change(first, last, addr, &self.registry)
            else {
                return 0;
            };
            let next = Arc::new(next);
            let previous = self.snapshot.compare_and_swap(&current, next.clone());
            if Arc::ptr_eq(&previous, &current) {
                self.announcer.announce(&current, &next, revealed);
                Counters::bump(&self.counters.pushes_applied);
                tracing::debug!(first, last, addr, changed, "ownership change applied");
                return changed;
            }
        }
    }

    /// A coalesced refresh for `cause`, waited for at most `wait`.
    pub(crate) async fn refresh(
        self: &Arc<Self>,
        cause: RefreshCause,
        wait: Duration,
    ) -> Refreshed {
        let inner = self.clone();
        // A redirect loop seen meanwhile is why this refresh matters. Only
        // the refresh that runs answers it: a debounced one leaves the loop
        // to the next.
        let cause = if self.redirects.looped() {
            RefreshCause::RedirectLoop
        } else {
            cause
        };
        self.gate
            .refresh(&self.counters, cause, wait, move || {
                inner.redirects.take_loop();
                async move {
                    let _ = inner.load_map(Some(cause)).await;
                }
            })
            .await
    }

    /// The next refresh the interval allows, once `not_before` has passed
    /// (but no later than `not_after`, a caller's deadline): for a caller
    /// that needs a new map, where [`Self::refresh`] would be skipped.
    pub(crate) async fn refresh_next(
        self: &Arc<Self>,
        cause: RefreshCause,
        wait: Duration,
        not_before: Instant,
        not_after: Option<Instant>,
    ) -> Refreshed {
        let next = self.gate.next_allowed().max(not_before);
        let at = not_after.map_or(next, |latest| next.min(latest));
        tokio::time::sleep_until(at.into()).await;
        self.refresh(cause, wait).await
    }

    /// Asks the known nodes for the map, [`VOTERS`] at a time (the current
    /// owners first, then every other node heard of, then the seeds; nodes
    /// caught in a redirect loop last) until some answer, and publishes
    /// the map [`choose_map`] picks from their answers. `cause` is why
    /// (`None`: the first map, at connect).
    pub(crate) async fn load_map(&self, cause: Option<RefreshCause>) -> Result<(), Error> {
        let span = tracing::info_span!("zaris.refresh");
        async {
            let mut candidates = self.snapshot.load().active_owners();
            let seeds = self.seeds.iter().map(|s| self.registry.node(s));
            for node in self.registry.all().into_iter().chain(seeds) {
                if !candidates.iter().any(|c| Arc::ptr_eq(c, &node)) {
                    candidates.push(node);
                }
            }
            // Nodes in a redirect loop, and nodes whose last request timed
            // out (frozen, perhaps), are asked last.
            let suspects = self.redirects.suspects();
            candidates.sort_by_key(|n| n.unanswered() || suspects.iter().any(|s| **s == *n.addr));
            let mut tried = Vec::new();
            let mut tls_failures = 0;
            let mut answers: Vec<(Arc<str>, Vec<SlotRange>)> = Vec::new();
            for voters in candidates.chunks(VOTERS) {
                for (node, fetched) in self.poll_voters(voters).await {
                    match fetched {
                        Ok(ranges) if !ranges.is_empty() => {
                            answers.push((node.addr.clone(), ranges))
                        }
                        Ok(_) => {
                            tried.push((node.addr.to_string(), "no slots assigned".to_owned()))
                        }
                        Err(FetchError::Conn(ConnError::Tls(why))) => {
                            tls_failures += 1;
                            tried.push((node.addr.to_string(), why));
                        }
                        Err(e) => tried.push((node.addr.to_string(), e.to_string())),
                    }
                }
                if !answers.is_empty() {
                    break;
                }
            }
            let maps: Vec<&[SlotRange]> = answers.iter().map(|(_, m)| m.as_slice()).collect();
            if let Some((chosen, agree)) = choose_map(&maps) {
                let (from, ranges) = &answers[chosen];
                if agree < maps.len() {
                    tracing::warn!(
                        chosen = %from,
                        agree,
                        asked = maps.len(),
                        "nodes disagree about the map: took the most complete map most agree on"
                    );
                }
                let slots = slots_covered(ranges);
                let next = Arc::new(Snapshot::from_ranges(ranges, &self.registry));
                let previous = self.snapshot.swap(next.clone());
                if let Some(cause) = cause {
                    self.announcer
                        .announce(&previous, &next, Revealed::Refresh(cause));
                }
                self.redirects.clear_suspects();
                tracing::info!(from = %from, ranges = ranges.len(), slots, agree, "map refreshed");
                return Ok(());
            }
            Counters::bump(&self.counters.refreshes_failed);
            tracing::warn!(?tried, "no node answered with a map");
            // Every node refused our TLS: say that, not "unreachable".
            if tls_failures == tried.len() {
                if let Some((node, detail)) = tried.into_iter().next() {
                    return Err(Error::Tls { node, detail });
                }
                return Err(Error::NoSeedReachable { tried: Vec::new() });
            }
            Err(Error::NoSeedReachable { tried })
        }
        .instrument(span)
        .await
    }

    /// Asks `voters` at once. Once one has answered, the others get
    /// [`VOTE_GRACE`] more: a node that accepts connections but never
    /// answers (a frozen process) must not hold the refresh up for a whole
    /// attempt time-out. Those still silent are left out.
    async fn poll_voters<'a>(
        &self,
        voters: &'a [Arc<Node>],
    ) -> Vec<(&'a Arc<Node>, Result<Vec<SlotRange>, FetchError>)> {
        let mut pending: FuturesUnordered<_> = voters
            .iter()
            .map(|node| async move { (node, self.fetch_map(node).await) })
            .collect();
        let mut results = Vec::with_capacity(voters.len());
        let mut grace: Option<tokio::time::Instant> = None;
        loop {
            let next = match grace {
                None => pending.next().await,
                Some(until) => match tokio::time::timeout_at(until, pending.next()).await {
                    Ok(next) => next,
                    Err(_) => break,
                },
            };
            let Some((node, fetched)) = next else { break };
            if grace.is_none() && matches!(&fetched, Ok(ranges) if !ranges.is_empty()) {
                grace = Some(tokio::time::Instant::now() + VOTE_GRACE);
            }
            results.push((node, fetched));
        }
        if !pending.is_empty() {
            tracing::debug!(
                silent = pending.len(),
                "left out of the vote: no answer in time"
            );
        }
        results
    }

    /// The map as `node` sees it (`CLUSTER SHARDS`, or `CLUSTER SLOTS`
    /// before Redis 7); a failure as the connection error or in words.
    async fn fetch_map(&self, node: &Node) -> Result<Vec<SlotRange>, FetchError> {
        let timeout = self.config.attempt_timeout;
        let conn = node.connection(timeout, &self.config.conn).await?;
        let ask = |args: &[&[u8]]| conn.request(encode(&[args]), 1, timeout);
        let first =
            |mut frames: Vec<BytesFrame>| frames.pop().map(from_frame).unwrap_or(Value::Nil);
        let unusable = |e: &dyn std::fmt::Display| FetchError::Map(e.to_string());
        match first(ask(&[b"CLUSTER", b"SHARDS"]).await?) {
            // Before Redis 7: no CLUSTER SHARDS.
            Value::Error(_) => match first(ask(&[b"CLUSTER", b"SLOTS"]).await?) {
                Value::Error(e) => Err(unusable(&e)),
                reply => parse_cluster_slots(&reply, &node.addr).map_err(|e| unusable(&e)),
            },
            reply => parse_cluster_shards_over(&reply, &node.addr, self.config.conn.tls.is_some())
                .map_err(|e| unusable(&e)),
        }
    }
}

/// How many slots a map gives an owner.
fn slots_covered(ranges: &[SlotRange]) -> u32 {
    ranges.iter().map(|r| u32::from(r.last - r.first) + 1).sum()
}

/// A map's owners in slot order, replicas aside: two maps agree when these
/// are equal.
fn owners(ranges: &[SlotRange]) -> Vec<(u16, u16, &str)> {
    let mut owners: Vec<(u16, u16, &str)> = ranges
        .iter()
        .map(|r| (r.first, r.last, r.master.as_str()))
        .collect();
    owners.sort_unstable();
    owners
}

fn same_owners(a: &[SlotRange], b: &[SlotRange]) -> bool {
    owners(a) == owners(b)
}

/// The poll of docs/behaviour.md §5: the whole map every interval, until
/// the client is dropped.
pub(crate) async fn poll(inner: Weak<Inner>) {
    let Some(interval) = inner.upgrade().map(|i| i.config.poll_interval) else {
        return;
    };
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let wait = inner.config.refresh_wait;
        inner.refresh(RefreshCause::Poll, wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_share_one_refresh_then_debounce() {
        let gate = Arc::new(Gate::new(Duration::from_millis(500)));
        let counters = Arc::new(Counters::default());
        let runs = Arc::new(AtomicU32::new(0));
        let callers: Vec<_> = (0..500)
            .map(|_| {
                let (gate, counters, runs) = (gate.clone(), counters.clone(), runs.clone());
                tokio::spawn(async move {
                    gate.refresh(
                        &counters,
                        RefreshCause::Poll,
                        Duration::from_secs(5),
                        move || async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        },
                    )
                    .await
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for caller in callers {
            outcomes.push(caller.await.unwrap());
        }
        let stats = counters.snapshot();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "one refresh for 500 callers"
        );
        assert_eq!(stats.refreshes_started, 1);
        assert_eq!(
            stats.refreshes_started + stats.refreshes_coalesced + stats.refreshes_debounced,
            500
        );
        assert!(outcomes.iter().all(|o| *o != Refreshed::StoppedWaiting));
        assert!(gate.in_flight.load().is_none(), "the slot is cleared");
        // Within 500 ms of the last refresh: nothing happens.
        let again = gate
            .refresh(
                &counters,
                RefreshCause::Poll,
                Duration::from_secs(5),
                || async { panic!("debounced") },
            )
            .await;
        assert_eq!(again, Refreshed::Debounced);
        // The next one is allowed 500 ms after the last finished, and is
        // not debounced then.
        let next = gate.next_allowed();
        let left = next.saturating_duration_since(Instant::now());
        assert!(left <= Duration::from_millis(500), "{left:?}");
        tokio::time::sleep_until(next.into()).await;
        let after = gate
            .refresh(
                &counters,
                RefreshCause::Poll,
                Duration::from_secs(5),
                || async {},
            )
            .await;
        assert_eq!(after, Refreshed::Done);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_stops_waiting_without_cancelling() {
        let gate = Arc::new(Gate::new(Duration::from_millis(500)));
        let counters = Counters::default();
        let finished = Arc::new(AtomicU32::new(0));
        let flag = finished.clone();
        let outcome = gate
            .refresh(
                &counters,
                RefreshCause::Poll,
                Duration::from_millis(50),
                move || async move {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    flag.fetch_add(1, Ordering::SeqCst);
                },
            )
            .await;
        assert_eq!(outcome, Refreshed::StoppedWaiting);
        assert_eq!(finished.load(Ordering::SeqCst), 0);
        // A second caller rides the same refresh to its end.
        let ride = gate
            .refresh(
                &counters,
                RefreshCause::Poll,
                Duration::from_secs(5),
                || async { panic!("must ride") },
            )
            .await;
        assert_eq!(ride, Refreshed::Done);
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the refresh ran to its end"
        );
        assert_eq!(counters.snapshot().refreshes_coalesced, 1);
    }

    use crate::cluster_map::ranges_of as map;

    #[test]
    fn the_most_complete_map_most_nodes_agree_on_wins() {
        let a = map(&[(0, 8191, "a:1"), (8192, 16383, "b:1")]);
        let b = map(&[(0, 8191, "a:1"), (8192, 16383, "c:1")]);
        // Same owners, listed in another order: they agree.
        let a_again = map(&[(8192, 16383, "b:1"), (0, 8191, "a:1")]);
        // The answer two of three agree on, with its two votes.
        assert_eq!(choose_map(&[&b, &a, &a_again]), Some((1, 2)));
        // A tie goes to the first node asked (the current owners come first).
        assert_eq!(choose_map(&[&b, &a]), Some((0, 1)));
        // A map that leaves slots uncovered loses, however many agree.
        let holed = map(&[(0, 8191, "a:1")]);
        assert_eq!(choose_map(&[&holed, &holed, &b]), Some((2, 1)));
        assert_eq!(choose_map(&[]), None);
        assert!(same_owners(&a, &a_again) && !same_owners(&a, &b));
    }

    #[test]
    fn redirects_that_go_round_are_loops() {
        let redirects = Redirects::default();
        // Churn: A sends slot 7 to B, and B serves it.
        assert!(!redirects.note(7, "a:1", "b:1"));
        assert!(!redirects.take_loop());
        // Another slot between the same nodes is no loop.
        assert!(!redirects.note(8, "b:1", "a:1"));
        // B sends slot 7 back to A, which just sent it to B: a loop.
        assert!(redirects.note(7, "b:1", "a:1"));
        assert!(redirects.take_loop());
        assert!(!redirects.take_loop(), "taken once");
        assert_eq!(
            redirects
                .suspects()
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
            ["b:1", "a:1"]
        );
        // A node sending a slot to itself.
        assert!(redirects.note(9, "c:1", "c:1"));
        assert_eq!(redirects.suspects().len(), 3);
        redirects.clear_suspects();
        assert!(redirects.suspects().is_empty());
    }
}
