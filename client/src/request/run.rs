//! Requests run together, in rounds ([`Inner::execute_all`]): each round
//! sends every node its share, judges each reply against the request's
//! own retry loop, and makes the requests to retry the next round, after
//! one wait; a request whose slot has no owner able to answer waits,
//! unsent, for one (docs/behaviour.md §3).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures_util::future::join_all;
use smallvec::SmallVec;
use tracing::Instrument;
use zaris_core::{KvStatus, Outcome, RouteError};

use super::retry::{Retrying, Wait};
use super::round::Round;
use super::send::{Share, Verdict};
use crate::codec::{Frame, Frames};
use crate::conn::ConnError;
use crate::failure::{conn_failure, Failure};
use crate::inner::Inner;
use crate::metrics;
use crate::pool::Node;
use crate::reply::{take_frame, Replies};
use crate::route::{Packed, Requests, Route};
use crate::stats::RefreshCause;
use crate::Error;

/// A round's requests that did not get their answer, each by position in
/// the round: failed attempts, and requests not sent (their slot has no
/// owner able to answer) with their slot.
#[derive(Default)]
struct Left {
    failed: Vec<(usize, Failure)>,
    unroutable: Vec<(usize, u16)>,
}

impl Inner {
    /// One request under the retry machine.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        route: Route,
        command: Packed,
    ) -> Result<Replies, Error> {
        let span =
            tracing::debug_span!("zaris.request", command = command.name, slot = route.slot());
        let mut result = None;
        let requests = [(route, command)];
        self.execute_all(&requests[..], |_, r| {
            result = Some(r.map(|frames| frames.iter_mut().map(take_frame).collect()));
        })
        .instrument(span)
        .await;
        result.unwrap_or_else(|| unreachable!("every request ends with a result"))
    }

    /// Requests run together, in rounds. Each round sends every node its
    /// share in one write, in the requests' order (a blocking command goes
    /// alone, on a connection of its own); each reply is judged against
    /// the request's own retry loop; the requests to retry wait once for
    /// the longest delay (and one map refresh if any asked for it) and make
    /// up the next round, still in order. Each request's replies go to
    /// `deliver` (with its number) as soon as they are known, lent: take
    /// what is needed (`take_frame`).
    pub(crate) async fn execute_all<R: Requests + ?Sized>(
        self: &Arc<Self>,
        requests: &R,
        mut deliver: impl FnMut(usize, Result<&mut [Frame], Error>),
    ) {
        let mut deliver = |i: usize, result: Result<&mut [Frame], Error>| {
            let outcome = result.as_ref().map_or_else(Error::kind, |_| "ok");
            metrics::request(requests.name(i), outcome);
            deliver(i, result);
        };
        let mut round = Round::new(self, requests);
        while !round.in_flight.is_empty() {
            let mut left = Left::default();
            let shares = round.shares(&mut left.failed, &mut left.unroutable);
            // One share (a single command, a pipeline to one node) is
            // awaited as it is: `join_all` would put it in a vector on the
            // heap, and move it there, for nothing to join.
            let mut sent: SmallVec<[_; 1]> = match &shares[..] {
                [share] => smallvec::smallvec![round.send_share(share).await],
                _ => join_all(shares.iter().map(|share| round.send_share(share)))
                    .await
                    .into(),
            };
            for (share, replies) in shares.iter().zip(&mut sent) {
                round.judge(share, replies, &mut left, &mut deliver);
            }
            if left.failed.is_empty() && left.unroutable.is_empty() {
                return;
            }
            round.next(left, &mut deliver).await;
        }
    }

    /// For a request sent alone (a transaction, a `WATCH`): when `slot`
    /// has no owner able to answer (none mapped, one refusing connections,
    /// one saying the cluster is down), waits for one as any request does, unsent, and says
    /// `true` (look again); `false` once there is one or it has waited
    /// out (then it is sent as any attempt).
    pub(crate) async fn waited_for_owner(
        self: &Arc<Self>,
        state: &mut Retrying,
        slot: u16,
    ) -> bool {
        let routable = match self.map().owner_of_slot(slot) {
            Ok(owner) => owner.may_send(),
            Err(RouteError::Unavailable { .. }) => false,
            Err(_) => true,
        };
        if routable {
            return false;
        }
        match self.owner_wait_limit(&mut state.waiting_since, state.deadline) {
            Some(until) => {
                self.until_routable(&[(0, slot)], until).await;
                true
            }
            None => false,
        }
    }

    /// Waits until one of `unroutable` (positions and slots) has an owner
    /// that can take it (or one saying the cluster is down is due for a
    /// probe), or `until`: on the shared refresh, as often as its interval
    /// allows; woken at once when a held owner answers again, or when its
    /// next probe is due; and trying a refusing owner again meanwhile (at
    /// most once an interval), in case it came back where it was.
    pub(super) async fn until_routable(
        self: &Arc<Self>,
        unroutable: &[(usize, u16)],
        until: Instant,
    ) {
        loop {
            // Listening before looking: an owner back in between still
            // wakes this wait.
            let back = self.registry().back().notified();
            tokio::pin!(back);
            back.as_mut().enable();
            let mut probe_in: Option<Duration> = None;
            let refusing: Vec<Arc<Node>> = {
                let snapshot = self.map();
                let mut refusing: Vec<Arc<Node>> = Vec::new();
                for &(_, slot) in unroutable {
                    match snapshot.owner_of_slot(slot) {
                        // Able again, or down with a probe due (the next
                        // round sends it).
                        Ok(owner) if !owner.refusing() && (!owner.held() || owner.probe_due()) => {
                            return
                        }
                        Ok(owner) if !owner.refusing() => {
                            let next = owner.probe_in();
                            probe_in = Some(probe_in.map_or(next, |p| p.min(next)));
                        }
                        Ok(owner) if !refusing.iter().any(|n| Arc::ptr_eq(n, owner)) => {
                            refusing.push(owner.clone());
                        }
                        _ => {}
                    }
                }
                refusing
            };
            if Instant::now() >= until {
                return;
            }
            for node in refusing {
                if node
                    .probe(self.config().attempt_timeout, &self.config().conn)
                    .await
                {
                    return;
                }
            }
            let soon = Instant::now() + Duration::from_millis(10);
            let wait = until
                .saturating_duration_since(Instant::now())
                .min(self.config().refresh_wait);
            let probe_due = Instant::now() + probe_in.unwrap_or(wait);
            tokio::select! {
                _ = self.refresh_next(RefreshCause::Failure, wait, soon, Some(until)) => {}
                () = back => {}
                () = tokio::time::sleep_until(probe_due.min(until)), if probe_in.is_some() => {}
            }
        }
    }
}

impl<R: Requests + ?Sized> Round<'_, R> {
    /// What `share`'s replies come to, member by member: an answer (or a
    /// final error) delivered, or a failure or a wait left for the next
    /// round.
    #[inline]
    fn judge(
        &mut self,
        share: &Share,
        replies: &mut Result<Frames, ConnError>,
        left: &mut Left,
        deliver: &mut impl FnMut(usize, Result<&mut [Frame], Error>),
    ) {
        let (inner, requests) = (self.inner, self.requests);
        let frames = match replies {
            Ok(frames) => frames,
            Err(e) => {
                for &(at, _) in &share.members {
                    match conn_failure(e.clone(), &share.node.addr) {
                        Err(e) => deliver(self.in_flight[at].index, Err(e)),
                        Ok(failure) => left.failed.push((at, failure)),
                    }
                }
                return;
            }
        };
        let mut from = 0;
        for &(at, asking) in &share.members {
            let in_flight = &mut self.in_flight[at];
            // An ASKING's +OK goes first.
            from += usize::from(asking);
            let to = (from + requests.replies(in_flight.index)).min(frames.len());
            let mine = &mut frames[from..to];
            from = to;
            // Whoever replied, with an answer or an error reply, is noted
            // (a later attempt's reply comes after it): the cache ties what
            // it stores to that node, and a function it lacked is loaded
            // there.
            requests.answered(in_flight.index, &share.node, asking);
            match inner.judge(mine, &share.node) {
                Verdict::Answer => deliver(in_flight.index, Ok(mine)),
                Verdict::Fatal(e) => deliver(in_flight.index, Err(e)),
                // The probe of a node known down found it still down: it
                // waits on with the others.
                Verdict::Failed(failure)
                    if in_flight.probing
                        && failure.outcome == Outcome::Status(KvStatus::Unavailable) =>
                {
                    match requests.route(in_flight.index) {
                        Route::Slot(slot) => left.unroutable.push((at, *slot)),
                        Route::Node(_) => left.failed.push((at, failure)),
                    }
                }
                Verdict::Failed(failure) => left.failed.push((at, failure)),
                Verdict::Ask(to, failure) => {
                    in_flight.state(inner, self.deadline).ask = Some(to);
                    left.failed.push((at, failure));
                }
            }
        }
    }

    /// The next round: the failed requests that may go again and the ones
    /// that wait for an owner, in order, after the one wait they ask for
    /// (a final error delivered for the others).
    async fn next(
        &mut self,
        left: Left,
        deliver: &mut impl FnMut(usize, Result<&mut [Frame], Error>),
    ) {
        let inner = self.inner;
        let mut steps: Vec<(usize, Option<Failure>)> = left
            .failed
            .into_iter()
            .map(|(at, failure)| (at, Some(failure)))
            .chain(left.unroutable.iter().map(|&(at, _)| (at, None)))
            .collect();
        steps.sort_unstable_by_key(|(at, _)| *at);
        let mut wait = Wait::default();
        let mut owner_wait: Option<Instant> = None;
        let mut next = SmallVec::new();
        let mut previous = std::mem::take(&mut self.in_flight).into_iter().enumerate();
        for (at, failure) in steps {
            let Some((_, mut in_flight)) = previous.find(|(i, _)| *i == at) else {
                continue;
            };
            let Some(failure) = failure else {
                match inner.owner_wait_limit(&mut in_flight.waiting_since, self.deadline) {
                    Some(until) => owner_wait = Some(owner_wait.map_or(until, |o| o.min(until))),
                    None => in_flight.waited_out = true,
                }
                next.push(in_flight);
                continue;
            };
            let state = in_flight.state(inner, self.deadline);
            match inner.decide(state, failure) {
                Ok(w) => {
                    wait.merge(w);
                    next.push(in_flight);
                }
                Err(e) => deliver(in_flight.index, Err(e)),
            }
        }
        if !next.is_empty() {
            match owner_wait {
                // Only waiting for owners: until one can take a request.
                Some(until) if wait.is_empty() => {
                    inner.until_routable(&left.unroutable, until).await;
                }
                _ => inner.wait_out(wait).await,
            }
            self.sending = Instant::now();
        }
        self.in_flight = next;
    }
}
