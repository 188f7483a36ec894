//! Coalesced map refreshes (docs/behaviour.md §5): at most one in flight, callers
//! ride it, a no-op within 500 ms of the last one, a bounded wait that does
//! not cancel the refresh for others, and a lock-free cleanup of the
//! in-flight slot (compare-and-swap).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use tokio::sync::watch;

use crate::config::REFRESH_DEBOUNCE;
use crate::stats::Counters;

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
    /// When the last refresh finished, in ms after `origin` (+1; 0 = never).
    last_done: AtomicU64,
    origin: Instant,
}

impl Gate {
    pub(crate) fn new() -> Self {
        Self {
            in_flight: ArcSwapOption::empty(),
            last_done: AtomicU64::new(0),
            origin: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Refreshes unless one ran within the debounce window: starts `work`
    /// on the runtime if no refresh is in flight, else rides the one that
    /// is, and waits at most `wait` for it.
    pub(crate) async fn refresh<F>(
        self: &Arc<Self>,
        counters: &Counters,
        wait: Duration,
        work: impl FnOnce() -> F,
    ) -> Refreshed
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let last = self.last_done.load(Ordering::Acquire);
        if last != 0 && self.now_ms().saturating_sub(last) < REFRESH_DEBOUNCE.as_millis() as u64 {
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
            Counters::bump(&counters.refreshes_started);
            let gate = self.clone();
            let mine = flight.clone();
            let work = work();
            // Spawned, so a caller that stops waiting cancels nothing.
            tokio::spawn(async move {
                work.await;
                gate.last_done.store(gate.now_ms(), Ordering::Release);
                let _ = mine.done.send(true);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_share_one_refresh_then_debounce() {
        let gate = Arc::new(Gate::new());
        let counters = Arc::new(Counters::default());
        let runs = Arc::new(AtomicU32::new(0));
        let callers: Vec<_> = (0..500)
            .map(|_| {
                let (gate, counters, runs) = (gate.clone(), counters.clone(), runs.clone());
                tokio::spawn(async move {
                    gate.refresh(&counters, Duration::from_secs(5), move || async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    })
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
            .refresh(&counters, Duration::from_secs(5), || async {
                panic!("debounced")
            })
            .await;
        assert_eq!(again, Refreshed::Debounced);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_stops_waiting_without_cancelling() {
        let gate = Arc::new(Gate::new());
        let counters = Counters::default();
        let finished = Arc::new(AtomicU32::new(0));
        let flag = finished.clone();
        let outcome = gate
            .refresh(&counters, Duration::from_millis(50), move || async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                flag.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        assert_eq!(outcome, Refreshed::StoppedWaiting);
        assert_eq!(finished.load(Ordering::SeqCst), 0);
        // A second caller rides the same refresh to its end.
        let ride = gate
            .refresh(&counters, Duration::from_secs(5), || async {
                panic!("must ride")
            })
            .await;
        assert_eq!(ride, Refreshed::Done);
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the refresh ran to its end"
        );
        assert_eq!(counters.snapshot().refreshes_coalesced, 1);
    }
}
