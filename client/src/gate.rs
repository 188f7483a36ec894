//! The refresh's rules, apart from its I/O: the single-flight gate (at
//! most one refresh in flight, callers ride it, a no-op within the minimum
//! interval of the last one, a bounded wait that does not cancel the
//! refresh for others, a lock-free cleanup of the in-flight slot), the
//! memory of recent `MOVED`s that tells a redirect loop from churn, and the
//! vote between the maps several nodes give.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use arc_swap::ArcSwapOption;
use tokio::sync::watch;
use zaris_core::{RedirectMemory, RefreshAsk, RefreshGate};

use crate::stats::{Counters, RefreshCause};
use crate::topology::SlotRange;

/// One refresh in flight; its riders wait on `done`.
struct Flight {
    done: watch::Sender<bool>,
}

/// What a caller's refresh request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refreshed {
    /// A refresh (started by this caller or ridden) finished.
    Done,
    /// The map was refreshed within the minimum interval
    /// (`Builder::refresh_min_interval`, 500 ms by default): nothing to do.
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
        let flight = loop {
            // The rule is the core's; the state is here, in atomics.
            let last = self.last_done.load(Ordering::Acquire);
            let last_done = (last != 0).then(|| Duration::from_millis(last - 1));
            let now = Duration::from_millis(self.now_ms() - 1);
            let current = self.in_flight.load_full();
            match RefreshGate::decide(last_done, current.is_some(), now, self.min_interval) {
                RefreshAsk::Debounced => {
                    Counters::bump(&counters.refreshes_debounced);
                    return Refreshed::Debounced;
                }
                RefreshAsk::Ride => {
                    if let Some(flight) = current {
                        Counters::bump(&counters.refreshes_coalesced);
                        break flight;
                    }
                    continue;
                }
                RefreshAsk::Start => {}
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

/// Recent `MOVED` redirects, to tell a loop from churn (the core's
/// `RedirectMemory` says what a loop is). A loop is not followed; the next
/// refresh asks the other nodes first.
pub(crate) struct Redirects {
    /// The last [`REMEMBERED`] redirects (they are rare: each one patches
    /// the map), on a clock from `origin`.
    recent: std::sync::Mutex<RedirectMemory<REMEMBERED>>,
    origin: Instant,
    looped: AtomicBool,
    suspects: std::sync::Mutex<Vec<Arc<str>>>,
}

impl Default for Redirects {
    fn default() -> Self {
        Self {
            recent: std::sync::Mutex::default(),
            origin: Instant::now(),
            looped: AtomicBool::new(false),
            suspects: std::sync::Mutex::default(),
        }
    }
}

/// Redirects remembered.
const REMEMBERED: usize = 64;

impl Redirects {
    /// Records `from` answering `MOVED slot to`; `true` when it closes a
    /// loop (and `from` and `to` become suspects for the next refresh).
    pub(crate) fn note(&self, slot: u16, from: &str, to: &str) -> bool {
        let now = self.origin.elapsed();
        let looped = self.recent.lock().unwrap_or_else(|e| e.into_inner()).note(
            slot,
            from.as_bytes(),
            to.as_bytes(),
            now,
        );
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

    pub(crate) fn suspects(&self) -> Vec<Arc<str>> {
        self.suspects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn clear_suspects(&self) {
        self.suspects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Which of the maps `answers` (in the order the nodes were asked) to
/// adopt, and how many answers agree with it: among those covering the
/// most slots (a map that leaves slots uncovered while another node covers
/// them is never taken), the one the most nodes agree on; on a tie, the
/// first asked.
pub(crate) fn choose_map(answers: &[&[SlotRange]]) -> Option<(usize, usize)> {
    let covered = answers.iter().map(|a| slots_covered(a));
    let most = if crate::seam::planted(crate::seam::Plant::MapFromFewerSlots) {
        covered.min()?
    } else {
        covered.max()?
    };
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

/// How many slots a map gives an owner.
pub(crate) fn slots_covered(ranges: &[SlotRange]) -> u32 {
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
        tokio::time::sleep_until(next).await;
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

    use crate::topology::ranges_of as map;

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
