//! Keeping the map honest (docs/behaviour.md §5): the push path (patch one
//! range, swap), the poll, and coalesced refreshes: at most one in flight,
//! callers ride it, a no-op within 500 ms of the last one, a bounded wait
//! that does not cancel the refresh for others, and a lock-free cleanup of
//! the in-flight slot (compare-and-swap).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use redis_protocol::resp2::types::BytesFrame;
use tokio::sync::watch;
use tracing::Instrument;

use crate::client::Inner;
use crate::cluster_map::{parse_cluster_shards_over, parse_cluster_slots, SlotRange};
use crate::config::REFRESH_DEBOUNCE;
use crate::conn::{encode, ConnError};
use crate::map::{Node, Snapshot};
use crate::stats::Counters;
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

impl Inner {
    /// The push path: `first..=last` re-pointed at `addr` (copy, patch,
    /// swap); returns how many segments changed. Nothing changed, nothing
    /// paid.
    pub(crate) fn push(&self, first: u16, last: u16, addr: &str) -> u16 {
        loop {
            let current = self.snapshot.load_full();
            let Some((next, changed)) = current.with_change(first, last, addr, &self.registry)
            else {
                return 0;
            };
            let previous = self.snapshot.compare_and_swap(&current, Arc::new(next));
            if Arc::ptr_eq(&previous, &current) {
                Counters::bump(&self.counters.pushes_applied);
                tracing::debug!(first, last, addr, changed, "ownership change applied");
                return changed;
            }
        }
    }

    /// A coalesced refresh, waited for at most `wait`.
    pub(crate) async fn refresh(self: &Arc<Self>, wait: Duration) -> Refreshed {
        let inner = self.clone();
        self.gate
            .refresh(&self.counters, wait, move || async move {
                let _ = inner.load_map().await;
            })
            .await
    }

    /// Asks the known nodes in turn (the current owners first, then every
    /// other node heard of, then the seeds) until one answers with a map,
    /// and publishes it.
    pub(crate) async fn load_map(&self) -> Result<(), Error> {
        let span = tracing::info_span!("zaris.refresh");
        async {
            let mut candidates = self.snapshot.load().active_owners();
            let seeds = self.seeds.iter().map(|s| self.registry.node(s));
            for node in self.registry.all().into_iter().chain(seeds) {
                if !candidates.iter().any(|c| Arc::ptr_eq(c, &node)) {
                    candidates.push(node);
                }
            }
            let mut tried = Vec::new();
            let mut tls_failures = 0;
            for node in candidates {
                match self.fetch_map(&node).await {
                    Err(FetchError::Conn(ConnError::Tls(why))) => {
                        tls_failures += 1;
                        tried.push((node.addr.to_string(), why));
                    }
                    Ok(ranges) if !ranges.is_empty() => {
                        let slots: u32 = ranges.iter().map(|r| u32::from(r.last - r.first) + 1).sum();
                        self.snapshot
                            .store(Arc::new(Snapshot::from_ranges(&ranges, &self.registry)));
                        tracing::info!(from = %node.addr, ranges = ranges.len(), slots, "map refreshed");
                        return Ok(());
                    }
                    Ok(_) => tried.push((node.addr.to_string(), "no slots assigned".to_owned())),
                    Err(e) => tried.push((node.addr.to_string(), e.to_string())),
                }
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
        inner.refresh(wait).await;
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
