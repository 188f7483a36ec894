//! One request under the core's retry machine: route it, send it on the
//! owner's connection, classify the reply (`reply::classify`), and let
//! `RetryLoop` decide what each outcome means (docs/behaviour.md §2, §3,
//! §7): both bounds, the delays, `ASK` followed once with `ASKING`, a typed
//! final outcome.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures_util::future::join_all;
use smallvec::SmallVec;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;
use zaris_core::{
    owner_wait_until, Decision, KvStatus, Outcome, RetryLoop, RouteError, StopReason,
    TransportFailure,
};

use crate::codec::{Frame, Frames};
use crate::config::ReadFrom;
use crate::conn::{ConnError, FAR};
use crate::gate::Refreshed;
use crate::inner::Inner;
use crate::metrics;
use crate::ownership::Revealed;
use crate::pool::Node;
use crate::reply::{classify, take_frame, Classified, Replies};
use crate::route::{Packed, Requests, Route};
use crate::stats::{Counters, RefreshCause};
use crate::Error;

/// How long a blocking command may wait when the request has no deadline.
const BLOCKING_WITHOUT_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// A request's retry state: its loop, its deadline, an `ASK` to follow.
pub(crate) struct Retrying {
    retries: RetryLoop,
    deadline: Option<Instant>,
    ask: Option<Arc<Node>>,
    /// Since when a request sent alone (a transaction) has waited, unsent,
    /// for its slot to have an owner able to answer.
    waiting_since: Option<Instant>,
}

impl Retrying {
    pub(crate) fn new(inner: &Inner) -> Self {
        Self::from(inner, Instant::now())
    }

    /// A request that started at `now`.
    fn from(inner: &Inner, now: Instant) -> Self {
        Self {
            retries: RetryLoop::new(inner.config.policy),
            deadline: inner.deadline_of(now),
            ask: None,
            waiting_since: None,
        }
    }

    /// Whether the request's deadline has passed.
    pub(crate) fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// An attempt's time-out: the configured one, never past the deadline.
    pub(crate) fn attempt_timeout(&self, configured: Duration) -> Duration {
        self.remaining()
            .map_or(configured, |left| left.min(configured))
    }
}

/// A failed attempt: what it came to, and in words.
pub(crate) struct Failure {
    pub(crate) outcome: Outcome,
    pub(crate) detail: String,
    /// The map still sends a retry where this attempt failed (a `MOVED`
    /// that closed a redirect loop, whose hint was not applied): the retry
    /// waits for a new map rather than fail the same way again.
    pub(crate) stale_map: bool,
}

/// What one attempt came to.
pub(crate) enum Verdict {
    /// Replies to hand back.
    Answer,
    Failed(Failure),
    /// `ASK`: the next attempt goes to this node, after `ASKING`.
    Ask(Arc<Node>, Failure),
    Fatal(Error),
}

/// A request of a round: which, and its retry state once it has failed
/// (a first attempt that succeeds never needs one).
struct InFlight {
    /// Index into the caller's requests.
    index: usize,
    state: Option<Box<Retrying>>,
    /// Since when it has waited, unsent, for its slot to have an owner that
    /// can answer (docs/behaviour.md §3: a wait, not an attempt).
    waiting_since: Option<Instant>,
    /// It waited as long as it may: from now on it is sent (and counted)
    /// as any request, whatever the map says.
    waited_out: bool,
    /// This round it goes as the probe of an owner that said the cluster
    /// is down: a second such answer is a wait, not an attempt.
    probing: bool,
}

/// The requests of one round that go to one node in one write (or, for a
/// blocking command, alone on a connection of its own).
struct Batch {
    node: Arc<Node>,
    dedicated: bool,
    /// Positions in the round's `InFlight` list, and whether each follows
    /// an `ASK` (so goes after `ASKING`).
    members: SmallVec<[(usize, bool); 1]>,
}

/// What a round of failures asks of the next: a map refresh (waiting at
/// most `refresh_wait`), and not before `until`.
#[derive(Default)]
struct Wait {
    /// How long to wait for a refresh, and why one is needed.
    refresh_wait: Option<(Duration, RefreshCause)>,
    until: Option<Instant>,
    /// The map as it stands cannot route the retry (no owner for its
    /// slot, or a redirect loop left it pointing where the attempt just
    /// failed): when the refresh is debounced, the retry waits for the next
    /// one the interval allows (not past `latest`), instead of failing
    /// again on the same map.
    needs_new_map: bool,
    latest: Option<Instant>,
}

impl Wait {
    /// Nothing to wait for: no refresh, no pause.
    fn is_empty(&self) -> bool {
        self.refresh_wait.is_none() && self.until.is_none()
    }

    fn merge(&mut self, other: Wait) {
        self.refresh_wait = match (self.refresh_wait, other.refresh_wait) {
            (Some((a, cause)), Some((b, _))) => Some((a.max(b), cause)),
            (a, b) => a.or(b),
        };
        self.until = self.until.max(other.until);
        self.needs_new_map |= other.needs_new_map;
        self.latest = match (self.latest, other.latest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
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
        let started = Instant::now();
        // When this round is sent: the first goes out as the request
        // starts (one clock read serves both); a later one after its wait.
        let mut sending = started;
        let mut round: SmallVec<[InFlight; 1]> = (0..requests.count())
            .map(|index| InFlight {
                index,
                state: None,
                waiting_since: None,
                waited_out: false,
                probing: false,
            })
            .collect();
        while !round.is_empty() {
            // Failed attempts, by position in the round.
            let mut failed: Vec<(usize, Failure)> = Vec::new();
            // Requests not sent: their slot has no owner that can answer.
            let mut unroutable: Vec<(usize, u16)> = Vec::new();
            let batches = self.batches(requests, &mut round, &mut failed, &mut unroutable);
            // One batch (a single command, a pipeline to one node) is
            // awaited as it is: `join_all` would put it in a vector on the
            // heap, and move it there, for nothing to join.
            let sent: SmallVec<[_; 1]> = match &batches[..] {
                [batch] => {
                    smallvec::smallvec![
                        self.send_batch(batch, requests, &round, started, sending)
                            .await
                    ]
                }
                _ => join_all(
                    batches
                        .iter()
                        .map(|batch| self.send_batch(batch, requests, &round, started, sending)),
                )
                .await
                .into(),
            };
            for (batch, replies) in batches.iter().zip(sent) {
                match replies {
                    Ok(mut frames) => {
                        let mut from = 0;
                        for &(at, asking) in &batch.members {
                            // An ASKING's +OK goes first.
                            from += usize::from(asking);
                            let to = (from + requests.replies(round[at].index)).min(frames.len());
                            let mine = &mut frames[from..to];
                            from = to;
                            match self.judge(mine, &batch.node) {
                                Verdict::Answer => deliver(round[at].index, Ok(mine)),
                                Verdict::Fatal(e) => deliver(round[at].index, Err(e)),
                                // The probe of a node known down found it
                                // still down: it waits on with the others.
                                Verdict::Failed(failure)
                                    if round[at].probing
                                        && failure.outcome
                                            == Outcome::Status(KvStatus::Unavailable) =>
                                {
                                    match requests.route(round[at].index) {
                                        Route::Slot(slot) => unroutable.push((at, *slot)),
                                        Route::Node(_) => failed.push((at, failure)),
                                    }
                                }
                                Verdict::Failed(failure) => failed.push((at, failure)),
                                Verdict::Ask(to, failure) => {
                                    self.state_of(&mut round[at], started).ask = Some(to);
                                    failed.push((at, failure));
                                }
                            }
                        }
                    }
                    Err(e) => {
                        for &(at, _) in &batch.members {
                            match conn_failure(e.clone(), &batch.node.addr) {
                                Err(e) => deliver(round[at].index, Err(e)),
                                Ok(failure) => failed.push((at, failure)),
                            }
                        }
                    }
                }
            }
            if failed.is_empty() && unroutable.is_empty() {
                return;
            }
            // The next round: the failed requests that may go again and the
            // ones that wait for an owner, in order.
            let mut steps: Vec<(usize, Option<Failure>)> = failed
                .into_iter()
                .map(|(at, failure)| (at, Some(failure)))
                .chain(unroutable.iter().map(|&(at, _)| (at, None)))
                .collect();
            steps.sort_unstable_by_key(|(at, _)| *at);
            let mut wait = Wait::default();
            let mut owner_wait: Option<Instant> = None;
            let mut next = SmallVec::new();
            let mut previous = std::mem::take(&mut round).into_iter().enumerate();
            for (at, failure) in steps {
                let Some((_, mut in_flight)) = previous.find(|(i, _)| *i == at) else {
                    continue;
                };
                let Some(failure) = failure else {
                    match self.owner_wait_until(&mut in_flight, started) {
                        Some(until) => {
                            owner_wait = Some(owner_wait.map_or(until, |o| o.min(until)))
                        }
                        None => in_flight.waited_out = true,
                    }
                    next.push(in_flight);
                    continue;
                };
                let state = self.state_of(&mut in_flight, started);
                match self.decide(state, failure) {
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
                    Some(until) if wait.is_empty() => self.until_routable(&unroutable, until).await,
                    _ => self.wait_out(wait).await,
                }
                sending = Instant::now();
            }
            round = next;
        }
    }

    /// How long a request whose slot has no owner able to answer may wait
    /// for one, unsent (docs/behaviour.md §3): from when it started waiting,
    /// the refresh wait, and never past its deadline. `None`: no longer.
    fn owner_wait_until(&self, in_flight: &mut InFlight, started: Instant) -> Option<Instant> {
        let deadline = self.deadline_of(started);
        self.owner_wait_limit(&mut in_flight.waiting_since, deadline)
    }

    /// The rule of [`Self::owner_wait_until`], for a request that has
    /// waited since `since` (set now if it had not) and ends by `deadline`.
    fn owner_wait_limit(
        &self,
        since: &mut Option<Instant>,
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        // Retries disabled: the caller wants the raw outcome, not a wait.
        if self.config.policy.attempt_budget() <= 1 {
            return None;
        }
        let now = Instant::now();
        let since = match since {
            Some(since) => *since,
            None => {
                Counters::bump(&self.counters.owner_waits);
                *since.insert(now)
            }
        };
        // The core's rule, on a clock from when the wait began.
        let at = |t: Instant| t.saturating_duration_since(since);
        let until = owner_wait_until(
            &self.config.policy,
            Duration::ZERO,
            at(now),
            self.config.refresh_wait,
            deadline.map(at),
        )?;
        Some(since + until)
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
        let routable = match self.snapshot.load().owner_of_slot(slot) {
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
    /// allows, and trying a refusing owner again meanwhile (at most once an
    /// interval), in case it came back where it was.
    async fn until_routable(self: &Arc<Self>, unroutable: &[(usize, u16)], until: Instant) {
        loop {
            let refusing: Vec<Arc<Node>> = {
                let snapshot = self.snapshot.load();
                let mut refusing: Vec<Arc<Node>> = Vec::new();
                for &(_, slot) in unroutable {
                    match snapshot.owner_of_slot(slot) {
                        // Able again, or down with a probe due (the next
                        // round sends it).
                        Ok(owner) if !owner.refusing() && (!owner.held() || owner.probe_due()) => {
                            return
                        }
                        Ok(owner) if !owner.refusing() => {}
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
                    .probe(self.config.attempt_timeout, &self.config.conn)
                    .await
                {
                    return;
                }
            }
            let soon = Instant::now() + Duration::from_millis(10);
            let wait = until
                .saturating_duration_since(Instant::now())
                .min(self.config.refresh_wait);
            self.refresh_next(RefreshCause::Failure, wait, soon, Some(until))
                .await;
        }
    }

    /// The deadline of a request made at `started`: that of every request
    /// of one call, as they started together, and a retry's state counts
    /// from then too ([`Self::state_of`]).
    fn deadline_of(&self, started: Instant) -> Option<Instant> {
        self.config.policy.deadline.map(|d| started + d)
    }

    /// A request's retry state, made on its first failure (its deadline
    /// counts from `started`, when the request was made).
    fn state_of<'a>(&self, in_flight: &'a mut InFlight, started: Instant) -> &'a mut Retrying {
        in_flight
            .state
            .get_or_insert_with(|| Box::new(Retrying::from(self, started)))
    }

    /// The round's requests grouped by the node each goes to now (its
    /// `ASK` target, or its slot's owner in the current map). A request
    /// whose slot has no owner, or an owner that refuses connections (a
    /// dead master the cluster has not replaced yet) or says the cluster
    /// is down (unless it is the probe), is not sent: it goes
    /// to `unroutable` with its slot, to wait for the map (until it has
    /// waited out, when it fails or is sent as any request).
    fn batches<R: Requests + ?Sized>(
        &self,
        requests: &R,
        round: &mut [InFlight],
        failed: &mut Vec<(usize, Failure)>,
        unroutable: &mut Vec<(usize, u16)>,
    ) -> SmallVec<[Batch; 1]> {
        let snapshot = self.snapshot.load();
        let read_from = self.config.read_from;
        let mut batches: SmallVec<[Batch; 1]> = SmallVec::new();
        let count = round.len();
        for (at, in_flight) in round.iter_mut().enumerate() {
            in_flight.probing = false;
            let blocking = requests.blocking(in_flight.index);
            let asking = in_flight.state.as_mut().and_then(|s| s.ask.take());
            let following = asking.is_some();
            // A read may go to a replica on its first attempt; a retry
            // (MOVED from a replica, a dead one, a time-out) asks the owner.
            let replica_read = read_from != ReadFrom::Primary
                && in_flight.state.is_none()
                && requests.read(in_flight.index);
            let node = match (&asking, requests.route(in_flight.index)) {
                (Some(node), _) => node,
                (None, &Route::Slot(slot)) => match if replica_read {
                    let turn = self.next_any.fetch_add(1, Ordering::Relaxed);
                    snapshot.reader_of_slot(slot, read_from, turn)
                } else {
                    snapshot.owner_of_slot(slot)
                } {
                    Ok(node) if !in_flight.waited_out && !node.may_send() => {
                        unroutable.push((at, slot));
                        continue;
                    }
                    Ok(node) if node.held() && !in_flight.waited_out => {
                        // It claimed the probe of a node that says the
                        // cluster is down, or that is open.
                        in_flight.probing = true;
                        node
                    }
                    Ok(node) => node,
                    Err(RouteError::Unavailable { .. }) if !in_flight.waited_out => {
                        unroutable.push((at, slot));
                        continue;
                    }
                    Err(e) => {
                        let failure = match e {
                            RouteError::MapMidUpdate { .. } => TransportFailure::MapMidUpdate,
                            _ => TransportFailure::NoOwnerMapped,
                        };
                        failed.push((
                            at,
                            Failure {
                                stale_map: false,
                                outcome: Outcome::Transport(failure),
                                detail: e.to_string(),
                            },
                        ));
                        continue;
                    }
                },
                (None, Route::Node(node)) => node,
            };
            let shared = batches
                .iter_mut()
                .find(|b| !b.dedicated && !blocking && Arc::ptr_eq(&b.node, node));
            match shared {
                Some(batch) => batch.members.push((at, following)),
                None => {
                    // Room for every request left: growing one at a time
                    // moved a pipeline's share half a dozen times.
                    let mut members = SmallVec::with_capacity(count - at);
                    members.push((at, following));
                    batches.push(Batch {
                        node: node.clone(),
                        dedicated: blocking,
                        members,
                    });
                }
            }
        }
        // Attempts: every request sent, or failed here for want of an owner.
        let attempted = (round.len() - unroutable.len()) as u64;
        self.counters
            .attempts
            .fetch_add(attempted, std::sync::atomic::Ordering::Relaxed);
        batches
    }

    /// One batch in one write: the replies of all its members, in order
    /// (an `ASKING`'s `+OK` before the request that follows it).
    ///
    /// On a node that has stopped answering (its last request timed out),
    /// the wait is raced against the map: once it names another owner for
    /// a member's slot (the cluster failed a frozen master over), the
    /// attempt is given up then, not at its time-out, and the retry goes to
    /// the new owner.
    async fn send_batch<R: Requests + ?Sized>(
        self: &Arc<Self>,
        batch: &Batch,
        requests: &R,
        round: &[InFlight],
        started: Instant,
        now: Instant,
    ) -> Result<Frames, ConnError> {
        let until = self.attempt_until(batch, started, now);
        // The slots the map may move, for the slow paths below.
        let slots = || -> SmallVec<[u16; 1]> {
            batch
                .members
                .iter()
                .filter(|&&(_, asking)| !asking)
                .filter_map(|&(at, _)| requests.route(round[at].index).slot())
                .collect()
        };
        // Blocking commands, on connections of their own, take no room.
        // The waits for room and the race against the map are rare, and
        // boxed: the common path's future stays small (it is moved into
        // every future that awaits it).
        let room = match batch.dedicated {
            true => None,
            false => match batch.node.try_admit(batch.members.len()) {
                Some(room) => Some(room),
                None => Some(Box::pin(self.room_on(batch, &slots(), until)).await?),
            },
        };
        // Only a node that has stopped answering is raced against the map.
        let racing = !batch.dedicated && batch.node.unanswered();
        let slots = if racing { slots() } else { SmallVec::new() };
        if slots.is_empty() {
            return self.write_batch(batch, requests, round, until, room).await;
        }
        Box::pin(async {
            tokio::select! {
                sent = self.write_batch(batch, requests, round, until, room) => sent,
                to = self.owner_moves(&batch.node, &slots) => {
                    Counters::bump(&self.counters.attempts_abandoned);
                    tracing::info!(from = %batch.node.addr, %to, "stopped waiting on a silent node");
                    Err(ConnError::Superseded(to))
                }
            }
        })
        .await
    }

    /// Room for the batch among its node's requests in flight
    /// (`max_in_flight_per_node`), once [`Node::try_admit`] found none: the
    /// batch waits, unsent, for room, until `until`, and (on a node that
    /// has stopped answering: frozen, black-holed) for the map to move one
    /// of its `slots`; in the last two cases it is not sent
    /// ([`ConnError::Saturated`]) and retries elsewhere.
    async fn room_on(
        self: &Arc<Self>,
        batch: &Batch,
        slots: &[u16],
        until: Instant,
    ) -> Result<OwnedSemaphorePermit, ConnError> {
        let requests = batch.members.len();
        Counters::bump(&self.counters.node_full_waits);
        let full = || {
            format!(
                "{} holds {} requests in flight, the most allowed",
                batch.node.addr,
                batch.node.in_flight()
            )
        };
        // Racing the map is for a node that has stopped answering; a busy
        // one just drains.
        let silent = batch.node.unanswered();
        let moved = async {
            if slots.is_empty() || !silent {
                std::future::pending::<String>().await
            } else {
                self.owner_moves(&batch.node, slots).await
            }
        };
        tokio::select! {
            room = batch.node.admit(requests) => Ok(room),
            to = moved => Err(ConnError::Saturated(format!("{}; its slot is {to}", full()))),
            () = tokio::time::sleep_until(until.into()) => Err(ConnError::Saturated(full())),
        }
    }

    /// When the batch's attempt, sent `now`, gives up: after the attempt
    /// time-out (a blocking command's own bound instead), never past the
    /// tightest of its members' deadlines.
    fn attempt_until(&self, batch: &Batch, started: Instant, now: Instant) -> Instant {
        // A blocking command, alone in its batch, may wait its whole deadline.
        let limit = if batch.dedicated {
            BLOCKING_WITHOUT_DEADLINE
        } else {
            self.config.attempt_timeout
        };
        let until = now + limit.min(FAR);
        // Every member's deadline, reckoned once.
        self.deadline_of(started).map_or(until, |d| d.min(until))
    }

    /// Resolves, saying where the slot went, once the map names another
    /// owner than `node` (or none) for one of `slots`; refreshes the map
    /// meanwhile as often as the refresh interval allows.
    async fn owner_moves(self: &Arc<Self>, node: &Arc<Node>, slots: &[u16]) -> String {
        loop {
            {
                let snapshot = self.snapshot.load();
                // Another owner, or none (the cluster marked it failed).
                let moved = slots
                    .iter()
                    .find_map(|&slot| match snapshot.owner_of_slot(slot) {
                        Ok(owner) if Arc::ptr_eq(owner, node) => None,
                        Ok(owner) => Some(format!("now at {}", owner.addr)),
                        Err(_) => Some("now without an owner".to_owned()),
                    });
                if let Some(owner) = moved {
                    return owner;
                }
            }
            // At least 10 ms apart, so that a refresh skipped at the edge of
            // the interval (milliseconds rounded) cannot make this spin.
            let soon = Instant::now() + Duration::from_millis(10);
            self.refresh_next(RefreshCause::Failure, self.config.refresh_wait, soon, None)
                .await;
        }
    }

    /// [`Self::send_batch`] without the race: written, and its replies
    /// awaited until `until`.
    async fn write_batch<R: Requests + ?Sized>(
        &self,
        batch: &Batch,
        requests: &R,
        round: &[InFlight],
        until: Instant,
        room: Option<OwnedSemaphorePermit>,
    ) -> Result<Frames, ConnError> {
        let index = |at: usize| round[at].index;
        // One request alone is sent as it is, without a copy.
        if let [(at, false)] = batch.members[..] {
            let i = index(at);
            return self
                .send_on(batch, requests.bytes(i), requests.replies(i), until, room)
                .await;
        }
        let size = batch
            .members
            .iter()
            .map(|&(at, _)| requests.bytes(index(at)).len() + ASKING.len())
            .sum();
        let mut bytes = BytesMut::with_capacity(size);
        let mut replies = 0;
        for &(at, asking) in &batch.members {
            if asking {
                bytes.extend_from_slice(ASKING);
                replies += 1;
            }
            bytes.extend_from_slice(requests.bytes(index(at)));
            replies += requests.replies(index(at));
        }
        self.send_on(batch, &bytes, replies, until, room).await
    }

    /// `bytes` on the batch's node: its shared connection (holding `room`
    /// there until the replies come), or one of its own for a blocking
    /// command.
    async fn send_on(
        &self,
        batch: &Batch,
        bytes: &[u8],
        replies: usize,
        until: Instant,
        room: Option<OwnedSemaphorePermit>,
    ) -> Result<Frames, ConnError> {
        // Dedicated connections and connecting are rare, and boxed, as in
        // `send_batch`.
        if batch.dedicated {
            Box::pin(async {
                let timeout = until.saturating_duration_since(Instant::now());
                // Connecting may not take the whole wait.
                let connect = timeout.min(self.config.attempt_timeout);
                let conn = batch.node.dedicated(connect, &self.config.conn).await?;
                let frames = conn.request_in(bytes, replies, until, None).await?;
                batch.node.give_back(conn);
                Ok(frames)
            })
            .await
        } else {
            let began = metrics::started();
            let sent = async {
                let conn = match batch.node.live() {
                    Some(conn) => conn,
                    None => {
                        let timeout = until.saturating_duration_since(Instant::now());
                        Box::pin(batch.node.connection(timeout, &self.config.conn)).await?
                    }
                };
                conn.request_in(bytes, replies, until, room).await
            }
            .await;
            batch.node.note_reply(&sent);
            metrics::attempt(&batch.node.addr, began, batch.node.in_flight());
            sent
        }
    }

    /// What the replies of an attempt on `node` come to.
    #[inline]
    pub(crate) fn judge(&self, frames: &[Frame], node: &Node) -> Verdict {
        match frames.first() {
            // Most replies: nothing to classify.
            Some(first) if !matches!(first, Frame::Error(_)) => {
                node.note_cluster_down(false);
                Verdict::Answer
            }
            _ => self.judge_error(frames, node),
        }
    }

    /// [`Self::judge`] for an error reply, or none.
    #[inline(never)]
    fn judge_error(&self, frames: &[Frame], node: &Node) -> Verdict {
        let Some(first) = frames.first() else {
            return Verdict::Fatal(Error::Protocol {
                node: node.addr.to_string(),
                detail: "no reply".into(),
            });
        };
        let classified = classify(first, &node.addr);
        node.note_cluster_down(matches!(
            classified,
            Classified::Status(KvStatus::Unavailable)
        ));
        match classified {
            Classified::Answer => Verdict::Answer,
            Classified::Moved { slot, addr } => {
                Verdict::Failed(self.moved(slot, &node.addr, &addr))
            }
            Classified::Ask { addr } => Verdict::Ask(
                self.registry.node(&addr),
                Failure {
                    stale_map: false,
                    outcome: Outcome::Ask,
                    detail: format!("ASK {addr}"),
                },
            ),
            Classified::Status(status) => Verdict::Failed(Failure {
                stale_map: false,
                outcome: Outcome::Status(status),
                detail: match first {
                    Frame::Error(message) => message.to_string(),
                    _ => String::new(),
                },
            }),
            Classified::Auth(detail) => Verdict::Fatal(Error::Auth {
                node: node.addr.to_string(),
                detail,
            }),
            Classified::ServerError(message) => Verdict::Fatal(Error::Server(message)),
        }
    }

    /// `from` answered `MOVED slot to`: counted, and its hint re-points the
    /// slot now (the refresh follows), unless it closes a redirect loop;
    /// then the hint is not trusted, and the refresh that follows asks the
    /// other nodes first. The failure the retry loop gets.
    pub(crate) fn moved(&self, slot: u16, from: &str, to: &str) -> Failure {
        Counters::bump(&self.counters.moved_redirects);
        metrics::redirect("moved");
        let looped = self.redirects.note(slot, from, to);
        if looped {
            Counters::bump(&self.counters.redirect_loops);
            tracing::warn!(slot, from, to, "MOVED loop");
        } else {
            self.push(slot, slot, to, Revealed::Moved);
        }
        Failure {
            outcome: Outcome::Status(KvStatus::Moved),
            detail: format!("MOVED {slot} {to}"),
            stale_map: looped,
        }
    }

    /// After a failed attempt: refresh and wait as the retry machine says
    /// (then `Ok`: try again), or the final, typed error.
    pub(crate) async fn after_failure(
        self: &Arc<Self>,
        state: &mut Retrying,
        failure: Failure,
    ) -> Result<(), Error> {
        let wait = self.decide(state, failure)?;
        self.wait_out(wait).await;
        Ok(())
    }

    /// The refresh and the pause a retry waits for.
    async fn wait_out(self: &Arc<Self>, wait: Wait) {
        if let Some((refresh_wait, cause)) = wait.refresh_wait {
            let refreshed = self.refresh(cause, refresh_wait).await;
            if wait.needs_new_map && refreshed == Refreshed::Debounced {
                // The same map would fail the retry again: wait for the
                // next refresh allowed, or the pause if longer.
                let pause = wait.until.unwrap_or_else(Instant::now);
                self.refresh_next(cause, refresh_wait, pause, wait.latest)
                    .await;
                return;
            }
        }
        if let Some(until) = wait.until {
            // The delay runs from the failure; the refresh spent part of it.
            tokio::time::sleep_until(until.into()).await;
        }
    }

    /// What the retry machine makes of a failed attempt: the wait before
    /// the next one, or the final, typed error.
    fn decide(&self, state: &mut Retrying, failure: Failure) -> Result<Wait, Error> {
        let Failure {
            outcome,
            detail,
            stale_map,
        } = failure;
        let failed_at = Instant::now();
        match state.retries.record(outcome, state.remaining()) {
            // Answers never get here; what does is an error status the
            // loop will not retry.
            Decision::Return | Decision::Surface => {
                Err(final_error(outcome, state.retries.attempts(), None, detail))
            }
            Decision::GiveUp(stop) => Err(final_error(
                outcome,
                state.retries.attempts(),
                Some(stop),
                detail,
            )),
            Decision::FollowAsk => {
                Counters::bump(&self.counters.ask_redirects);
                metrics::redirect("ask");
                Ok(Wait::default())
            }
            Decision::Retry { refresh_map, delay } => {
                match outcome {
                    Outcome::Status(status) => {
                        self.counters.retried(status);
                        metrics::retry(status.name());
                    }
                    _ => {
                        Counters::bump(&self.counters.retries_after_transport_failure);
                        metrics::retry("transport");
                    }
                }
                state.ask = None;
                tracing::debug!(?outcome, refresh_map, ?delay, %detail, "retrying");
                let cause = if outcome == Outcome::Status(KvStatus::Moved) {
                    RefreshCause::Moved
                } else {
                    RefreshCause::Failure
                };
                let refresh_wait = refresh_map.then(|| {
                    let wait = state.remaining().map_or(self.config.refresh_wait, |left| {
                        left.min(self.config.refresh_wait)
                    });
                    (wait, cause)
                });
                let until = failed_at + delay;
                Ok(Wait {
                    refresh_wait,
                    until: Some(state.deadline.map_or(until, |d| until.min(d))),
                    needs_new_map: stale_map
                        || outcome == Outcome::Transport(TransportFailure::NoOwnerMapped),
                    latest: state.deadline,
                })
            }
        }
    }
}

/// What a connection failure on the way to `addr` means: churn for the
/// retry loop, or an error surfaced at once (bad bytes, refused
/// credentials, TLS, a reply over the limit). Every path that meets a
/// connection failure (requests, transactions, `WATCH`, subscriptions)
/// asks this.
pub(crate) fn conn_failure(e: ConnError, addr: &str) -> Result<Failure, Error> {
    let node = addr.to_owned();
    match e {
        ConnError::Protocol(detail) => Err(Error::Protocol { node, detail }),
        ConnError::Rejected(detail) => Err(Error::Auth { node, detail }),
        ConnError::Tls(detail) => Err(Error::Tls { node, detail }),
        ConnError::TooLarge { limit } => Err(Error::ReplyTooLarge { node, limit }),
        e => Ok(Failure {
            stale_map: false,
            outcome: Outcome::Transport(e.failure()),
            detail: format!("{addr}: {e}"),
        }),
    }
}

/// A connection failure as the final error of a single attempt (a
/// subscription's connection, a command on a watched connection).
pub(crate) fn conn_error(e: ConnError, addr: &str) -> Error {
    match conn_failure(e, addr) {
        Ok(failure) => final_error(failure.outcome, 1, None, failure.detail),
        Err(fatal) => fatal,
    }
}

/// The error a caller gets when the loop stops on `outcome`.
pub(crate) fn final_error(
    outcome: Outcome,
    attempts: u32,
    stop: Option<StopReason>,
    detail: String,
) -> Error {
    let stop = stop.unwrap_or(StopReason::AttemptsExhausted);
    match outcome {
        Outcome::Status(status) => Error::Status {
            status,
            attempts,
            stop,
        },
        Outcome::Ask => Error::Status {
            status: KvStatus::Migrating,
            attempts,
            stop,
        },
        Outcome::Transport(failure) => Error::Transport {
            failure,
            detail,
            attempts,
            stop,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_errors_keep_the_last_outcome() {
        let e = final_error(Outcome::Status(KvStatus::Moved), 1, None, String::new());
        assert_eq!(
            e,
            Error::Status {
                status: KvStatus::Moved,
                attempts: 1,
                stop: StopReason::AttemptsExhausted
            }
        );
        assert_eq!(e.status(), Some(KvStatus::Moved));
        let e = final_error(
            Outcome::Transport(TransportFailure::ConnectionRefused),
            3,
            Some(StopReason::DeadlineReached),
            "x:1: refused".into(),
        );
        assert!(e.to_string().contains("request deadline reached"), "{e}");
    }
}
