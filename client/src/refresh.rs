//! Keeping the map honest (docs/behaviour.md §5), the I/O side: the push
//! path (patch one range, swap), the poll, and the refresh itself: ask the
//! nodes, [`VOTERS`] at a time, and adopt the map the vote picks. The rules
//! (single flight, debounce, loops, the vote) are in `gate.rs`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tracing::Instrument;

use crate::codec::{encode, Frames};
use crate::conn::ConnError;
use crate::gate::{choose_map, slots_covered, Refreshed};
use crate::inner::Inner;
use crate::ownership::Revealed;
use crate::pool::Node;
use crate::snapshot::Snapshot;
use crate::stats::{Counters, RefreshCause};
use crate::topology::{parse_cluster_shards_over, parse_cluster_slots, SlotRange};
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

/// A node's answer: the ranges it says each master serves, or that it is a
/// server with cluster support off (it serves every slot itself).
enum Fetched {
    Cluster(Vec<SlotRange>),
    Standalone,
}

/// What a server with cluster support off answers `CLUSTER SHARDS` and
/// `CLUSTER SLOTS` (Redis and Valkey alike).
fn says_standalone(error: &str) -> bool {
    error.contains("cluster support disabled")
}

/// Nodes asked for the map at once; the answer most of them give wins.
const VOTERS: usize = 3;
/// After the first answer, how long the other voters have to answer.
const VOTE_GRACE: Duration = Duration::from_millis(100);

impl Inner {
    /// The push path: `first..=last` re-pointed at `addr` (copy, patch,
    /// swap); returns how many segments changed. Nothing changed, nothing
    /// paid.
    pub(crate) fn push(&self, first: u16, last: u16, addr: &str, revealed: Revealed) -> u16 {
        // Every swap holds it: the map cannot change under the patch.
        let publishing = self.publishing();
        let current = self.map_full();
        let Some((next, changed)) = current.with_change(first, last, addr, self.registry()) else {
            return 0;
        };
        self.publish(&publishing, Arc::new(next), Some(revealed));
        Counters::bump(&self.counters().pushes_applied);
        tracing::debug!(first, last, addr, changed, "ownership change applied");
        changed
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
        let cause = if self.redirects().looped() {
            RefreshCause::RedirectLoop
        } else {
            cause
        };
        self.gate()
            .refresh(self.counters(), cause, wait, move || {
                inner.redirects().take_loop();
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
        let next = self.gate().next_allowed().max(not_before);
        let at = not_after.map_or(next, |latest| next.min(latest));
        tokio::time::sleep_until(at).await;
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
            let mut candidates = self.map().active_owners();
            let seeds = self.seeds().iter().map(|s| self.registry().node(s));
            for node in self.registry().all().into_iter().chain(seeds) {
                if !candidates.iter().any(|c| Arc::ptr_eq(c, &node)) {
                    candidates.push(node);
                }
            }
            // Nodes in a redirect loop, and nodes whose last request timed
            // out (frozen, perhaps), are asked last.
            let suspects = self.redirects().suspects();
            candidates.sort_by_key(|n| n.unanswered() || suspects.iter().any(|s| **s == *n.addr));
            let mut tried = Vec::new();
            let mut tls_failures = 0;
            let mut answers: Vec<(Arc<str>, Vec<SlotRange>)> = Vec::new();
            for voters in candidates.chunks(VOTERS) {
                for (node, fetched) in self.poll_voters(voters).await {
                    match fetched {
                        Ok(Fetched::Standalone) => {
                            // One server, no cluster: it is the map.
                            let current = self.map();
                            let same = current.is_standalone()
                                && current.owners.first().is_some_and(|n| n.addr == node.addr);
                            if !same {
                                let next = Snapshot::standalone(&node.addr, self.registry());
                                let revealed = cause.map(Revealed::Refresh);
                                self.publish(&self.publishing(), Arc::new(next), revealed);
                                tracing::info!(
                                    node = %node.addr,
                                    "a server with cluster support off: it owns every slot"
                                );
                            }
                            return Ok(());
                        }
                        Ok(Fetched::Cluster(ranges)) if !ranges.is_empty() => {
                            answers.push((node.addr.clone(), ranges))
                        }
                        Ok(Fetched::Cluster(_)) => {
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
                    // A map not every node agrees on: the cache trusts
                    // none of what it stored under the last one.
                    if let Some(cache) = self.cache() {
                        cache.flush_everything();
                    }
                    tracing::warn!(
                        chosen = %from,
                        agree,
                        asked = maps.len(),
                        "nodes disagree about the map: took the most complete map most agree on"
                    );
                }
                let slots = slots_covered(ranges);
                let next = Arc::new(Snapshot::from_ranges(ranges, self.registry()));
                self.publish(&self.publishing(), next, cause.map(Revealed::Refresh));
                self.redirects().clear_suspects();
                tracing::info!(from = %from, ranges = ranges.len(), slots, agree, "map refreshed");
                return Ok(());
            }
            Counters::bump(&self.counters().refreshes_failed);
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
    ) -> Vec<(&'a Arc<Node>, Result<Fetched, FetchError>)> {
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
            let answered = match &fetched {
                Ok(Fetched::Cluster(ranges)) => !ranges.is_empty(),
                Ok(Fetched::Standalone) => true,
                Err(_) => false,
            };
            if grace.is_none() && answered {
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
    /// before Redis 7), or that it has cluster support off; a failure as
    /// the connection error or in words.
    async fn fetch_map(&self, node: &Node) -> Result<Fetched, FetchError> {
        let timeout = self.config().attempt_timeout;
        let conn = node.connection(timeout, &self.config().conn).await?;
        let conn = &conn;
        let ask = |args: &[&[u8]]| {
            let bytes = encode(&[args]);
            async move { conn.request(&bytes, 1, timeout).await }
        };
        let first = |mut frames: Frames| frames.pop().map(from_frame).unwrap_or(Value::Nil);
        let unusable = |e: &dyn std::fmt::Display| FetchError::Map(e.to_string());
        let ranges = match first(ask(&[b"CLUSTER", b"SHARDS"]).await?) {
            Value::Error(e) if says_standalone(&e) => return Ok(Fetched::Standalone),
            // Before Redis 7: no CLUSTER SHARDS.
            Value::Error(_) => match first(ask(&[b"CLUSTER", b"SLOTS"]).await?) {
                Value::Error(e) if says_standalone(&e) => return Ok(Fetched::Standalone),
                Value::Error(e) => Err(unusable(&e)),
                reply => parse_cluster_slots(&reply, &node.addr).map_err(|e| unusable(&e)),
            },
            reply => {
                parse_cluster_shards_over(&reply, &node.addr, self.config().conn.tls.is_some())
                    .map_err(|e| unusable(&e))
            }
        };
        ranges.map(Fetched::Cluster)
    }
}

/// The poll of docs/behaviour.md §5: the whole map every interval, until
/// the client is dropped.
pub(crate) async fn poll(inner: Weak<Inner>) {
    let Some(interval) = inner.upgrade().map(|i| i.config().poll_interval) else {
        return;
    };
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let wait = inner.config().refresh_wait;
        inner.refresh(RefreshCause::Poll, wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Client;

    /// Two threads re-point one slot at once, as a caller applying a
    /// `MOVED` on one worker and a refresh on the other do: every change
    /// a listener hears starts from the owner the change before it left.
    #[tokio::test]
    async fn changes_made_at_once_are_heard_in_the_order_made() {
        let config = Client::builder().resolve().expect("the defaults resolve");
        let inner = Arc::new(Inner::new(Vec::new(), config));
        let mut changes = inner.announcer().subscribe();
        // Under the listener's backlog (4,096): every change stays to be read.
        const EACH: usize = 2_000;
        let start = Arc::new(std::sync::Barrier::new(2));
        let threads: Vec<_> = [["a:1", "b:1"], ["c:1", "d:1"]]
            .into_iter()
            .map(|addrs| {
                let (inner, start) = (inner.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..EACH {
                        inner.push(0, 0, addrs[i % 2], Revealed::Pushed);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a pushing thread");
        }
        let applied = inner
            .counters()
            .pushes_applied
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(applied > 0);
        let mut owner: Option<String> = None;
        for _ in 0..applied {
            let change = changes.next().await.expect("a change per push applied");
            assert_eq!((change.first, change.last), (0, 0));
            assert_eq!(change.old_owner, owner, "a change told out of order");
            owner = change.new_owner;
        }
        assert_eq!(changes.missed(), 0);
        let now = inner.map().owner_of_slot(0).map(|n| n.addr.to_string());
        assert_eq!(owner, now.ok());
    }
}
