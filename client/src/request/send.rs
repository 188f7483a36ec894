//! Sending a round: each node's share of it in one write (a blocking
//! command alone, on a connection of its own), within the node's room for
//! requests in flight and the attempt's time-out; then what the replies
//! come to ([`Verdict`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use bytes::BytesMut;
use smallvec::SmallVec;
use tokio::sync::OwnedSemaphorePermit;
use zaris_core::{lane, KvStatus, Lane, Outcome, RouteError, WriteConn};

use super::retry::InFlight;
use super::round::Round;
use crate::codec::{Frame, Frames};
use crate::config::ReadFrom;
use crate::conn::{ConnError, SlotKind, WriteTo, FAR};
use crate::failure::{read_reply, route_failure, wait_failed, Failure, Inside, Reading};
use crate::inner::Inner;
use crate::metrics;
use crate::ownership::Revealed;
use crate::pool::Node;
use crate::route::{Requests, Route};
use crate::stats::{Counters, RefreshCause};
use crate::Error;

/// How long a blocking command may wait when the request has no deadline.
const BLOCKING_WITHOUT_DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// Whether every request of the share is a read.
fn reads_only<R: Requests + ?Sized>(requests: &R, round: &[InFlight], share: &Share) -> bool {
    share
        .members
        .iter()
        .all(|&(at, _)| requests.read(round[at].index))
}

/// The requests of one round that go to one node in one write (or, for a
/// blocking command, alone on a connection of its own).
pub(super) struct Share {
    pub(super) node: Arc<Node>,
    pub(super) dedicated: bool,
    /// Positions in the round's `InFlight` list, and whether each follows
    /// an `ASK` (so goes after `ASKING`).
    pub(super) members: SmallVec<[(usize, bool); 1]>,
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

impl<R: Requests + ?Sized> Round<'_, R> {
    /// The round's requests grouped by the node each goes to now (its
    /// `ASK` target, or its slot's owner in the current map). A request
    /// whose slot has no owner, or an owner that refuses connections (a
    /// dead master the cluster has not replaced yet) or says the cluster
    /// is down (unless it is the probe), is not sent: it goes
    /// to `unroutable` with its slot, to wait for the map (until it has
    /// waited out, when it fails or is sent as any request).
    pub(super) fn shares(
        &mut self,
        failed: &mut Vec<(usize, Failure)>,
        unroutable: &mut Vec<(usize, u16)>,
    ) -> SmallVec<[Share; 1]> {
        let (inner, requests) = (self.inner, self.requests);
        let round = &mut self.in_flight[..];
        let snapshot = inner.map();
        let read_from = inner.config().read_from;
        let mut shares: SmallVec<[Share; 1]> = SmallVec::new();
        let count = round.len();
        for (at, in_flight) in round.iter_mut().enumerate() {
            in_flight.probing = false;
            let blocking = requests.blocking(in_flight.index);
            let asking = in_flight.state.as_mut().and_then(|s| s.ask.take());
            let following =
                asking.is_some() && !crate::seam::planted(crate::seam::Plant::AskingForgotten);
            // A read may go to a replica on its first attempt; a retry
            // (MOVED from a replica, a dead one, a time-out) asks the owner.
            let replica_read = read_from != ReadFrom::Primary
                && in_flight.state.is_none()
                && requests.read(in_flight.index);
            let node = match (&asking, requests.route(in_flight.index)) {
                (Some(node), _) => node,
                (None, &Route::Slot(slot)) => match if replica_read {
                    let turn = inner.next_turn();
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
                        failed.push((at, route_failure(&e)));
                        continue;
                    }
                },
                (None, Route::Node(node)) => node,
            };
            let shared = shares
                .iter_mut()
                .find(|b| !b.dedicated && !blocking && Arc::ptr_eq(&b.node, node));
            match shared {
                Some(share) => share.members.push((at, following)),
                None => {
                    // Room for every request left: growing one at a time
                    // moved a pipeline's share half a dozen times.
                    let mut members = SmallVec::with_capacity(count - at);
                    members.push((at, following));
                    shares.push(Share {
                        node: node.clone(),
                        dedicated: blocking,
                        members,
                    });
                }
            }
        }
        // Attempts: every request sent, or failed here for want of an owner.
        let attempted = (round.len() - unroutable.len()) as u64;
        inner
            .counters()
            .attempts
            .fetch_add(attempted, std::sync::atomic::Ordering::Relaxed);
        shares
    }

    /// One share in one write: the replies of all its members, in order
    /// (an `ASKING`'s `+OK` before the request that follows it).
    ///
    /// On a node that has stopped answering (its last request timed out),
    /// the wait is raced against the map: once it names another owner for
    /// a member's slot (the cluster failed a frozen master over), the
    /// attempt is given up then, not at its time-out, and the retry goes to
    /// the new owner.
    pub(super) async fn send_share(&self, share: &Share) -> Result<Frames, ConnError> {
        let (inner, requests, round) = (self.inner, self.requests, &self.in_flight[..]);
        let (until, last) = self.attempt_until(share);
        // The slots the map may move, for the slow paths below.
        let slots = || -> SmallVec<[u16; 1]> {
            share
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
        let room = match share.dedicated {
            true => None,
            false => match share.node.try_admit(share.members.len()) {
                Some(room) => Some(room),
                // Reads take no room on a shared connection its node
                // holds: they go on the side connection (the writes the
                // pause holds fill the room, and must not hold them up).
                None if share.node.holds_connection() && reads_only(requests, round, share) => None,
                None => Some(Box::pin(inner.room_on(share, &slots(), until)).await?),
            },
        };
        // Only a node that has stopped answering is raced against the map.
        let racing = !share.dedicated && share.node.unanswered();
        let slots = if racing { slots() } else { SmallVec::new() };
        // A write waits, within its attempt, for the keyspace
        // subscriptions to hear its node (one load when there are none).
        let hearing = inner.hearing().any();
        if slots.is_empty() && !hearing {
            return inner
                .write_share(share, requests, round, (until, last), room)
                .await;
        }
        Box::pin(async {
            if hearing && !reads_only(requests, round, share) {
                inner.hearing().before_write(&share.node.addr, until).await;
            }
            if slots.is_empty() {
                return inner
                    .write_share(share, requests, round, (until, last), room)
                    .await;
            }
            tokio::select! {
                sent = inner.write_share(share, requests, round, (until, last), room) => sent,
                to = inner.owner_moves(&share.node, &slots) => {
                    Counters::bump(&inner.counters().attempts_abandoned);
                    tracing::info!(from = %share.node.addr, %to, "stopped waiting on a silent node");
                    Err(ConnError::Superseded(to))
                }
            }
        })
        .await
    }

    /// When the share's attempt, sent as this round is, gives up: after
    /// the attempt time-out (a blocking command's own bound instead), never
    /// past the call's deadline; and that deadline, to which a write its
    /// node holds waits on (`zaris_core::at_attempt_time_out`).
    #[inline]
    pub(super) fn attempt_until(&self, share: &Share) -> (Instant, Instant) {
        let now = self.sending;
        // A blocking command, alone in its share, may wait its whole deadline.
        let limit = if share.dedicated {
            BLOCKING_WITHOUT_DEADLINE
        } else {
            self.inner.config().attempt_timeout
        };
        let until = now + limit.min(FAR);
        // Every member's deadline, reckoned once.
        match self.deadline {
            Some(deadline) => (deadline.min(until), deadline),
            None => (until, now + FAR),
        }
    }
}

impl Inner {
    /// Room for the share among its node's requests in flight
    /// (`max_in_flight_per_node`), once [`Node::try_admit`] found none: the
    /// share waits, unsent, for room, until `until`, and (on a node that
    /// has stopped answering: frozen, black-holed) for the map to move one
    /// of its `slots`; in the last two cases it is not sent
    /// ([`ConnError::Saturated`]) and retries elsewhere.
    pub(super) async fn room_on(
        self: &Arc<Self>,
        share: &Share,
        slots: &[u16],
        until: Instant,
    ) -> Result<OwnedSemaphorePermit, ConnError> {
        let requests = share.members.len();
        Counters::bump(&self.counters().node_full_waits);
        let full = || {
            format!(
                "{} holds {} requests in flight, the most allowed",
                share.node.addr,
                share.node.in_flight()
            )
        };
        // Racing the map is for a node that has stopped answering; a busy
        // one just drains.
        let silent = share.node.unanswered();
        let moved = async {
            if slots.is_empty() || !silent {
                std::future::pending::<String>().await
            } else {
                self.owner_moves(&share.node, slots).await
            }
        };
        tokio::select! {
            room = share.node.admit(requests) => Ok(room),
            to = moved => Err(ConnError::Saturated(format!("{}; its slot is {to}", full()))),
            () = tokio::time::sleep_until(until) => Err(ConnError::Saturated(full())),
        }
    }

    /// Resolves, saying where the slot went, once the map names another
    /// owner than `node` (or none) for one of `slots`; refreshes the map
    /// meanwhile as often as the refresh interval allows.
    pub(super) async fn owner_moves(self: &Arc<Self>, node: &Arc<Node>, slots: &[u16]) -> String {
        loop {
            {
                let snapshot = self.map();
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
            self.refresh_next(
                RefreshCause::Failure,
                self.config().refresh_wait,
                soon,
                None,
            )
            .await;
        }
    }

    /// [`Self::send_share`] without the race: written, and its replies
    /// awaited until `until`.
    pub(super) async fn write_share<R: Requests + ?Sized>(
        &self,
        share: &Share,
        requests: &R,
        round: &[InFlight],
        (until, last): (Instant, Instant),
        room: Option<OwnedSemaphorePermit>,
    ) -> Result<Frames, ConnError> {
        let index = |at: usize| round[at].index;
        // Reads alone may go on another connection if the node holds this
        // one; a write to one slot, not sent yet, may go on a write lane,
        // and once sent waits on (`zaris_core::hold`).
        let kind = |read: bool, slot: Option<u16>| match lane(read) {
            Lane::Side => SlotKind::Read,
            Lane::Held => SlotKind::Write {
                last,
                to: slot.map_or(WriteTo::Several, WriteTo::Slot),
            },
        };
        // One request alone is sent as it is, without a copy.
        if let [(at, false)] = share.members[..] {
            let i = index(at);
            let kind = kind(requests.read(i), requests.route(i).slot());
            return self
                .send_on(
                    share,
                    requests.bytes(i),
                    requests.replies(i),
                    until,
                    room,
                    kind,
                )
                .await;
        }
        let reads = share
            .members
            .iter()
            .all(|&(at, _)| requests.read(index(at)));
        // The one slot of a share's writes (a write lane takes one slot's
        // writes only); reads go aside whatever their slots.
        let one_slot = || {
            share
                .members
                .iter()
                .map(|&(at, _)| requests.route(index(at)).slot())
                .try_fold(None, |one, slot| match (one, slot) {
                    (_, None) => Err(()),
                    (None, slot) => Ok(slot),
                    (one, slot) if one == slot => Ok(one),
                    _ => Err(()),
                })
                .ok()
                .flatten()
        };
        let kind = kind(reads, if reads { None } else { one_slot() });
        let size = share
            .members
            .iter()
            .map(|&(at, _)| requests.bytes(index(at)).len() + ASKING.len())
            .sum();
        let mut bytes = BytesMut::with_capacity(size);
        let mut replies = 0;
        for &(at, asking) in &share.members {
            if asking {
                bytes.extend_from_slice(ASKING);
                replies += 1;
            }
            bytes.extend_from_slice(requests.bytes(index(at)));
            replies += requests.replies(index(at));
        }
        self.send_on(share, &bytes, replies, until, room, kind)
            .await
    }

    /// `bytes` on the share's node: its shared connection (holding `room`
    /// there until the replies come), or one of its own for a blocking
    /// command.
    pub(super) async fn send_on(
        &self,
        share: &Share,
        bytes: &[u8],
        replies: usize,
        until: Instant,
        room: Option<OwnedSemaphorePermit>,
        kind: SlotKind,
    ) -> Result<Frames, ConnError> {
        // Dedicated connections and connecting are rare, and boxed, as in
        // `send_share`.
        if share.dedicated {
            Box::pin(async {
                let timeout = until.saturating_duration_since(Instant::now());
                // Connecting may not take the whole wait.
                let connect = timeout.min(self.config().attempt_timeout);
                let conn = share.node.dedicated(connect, &self.config().conn).await?;
                let frames = conn.request_in(bytes, replies, until, None).await?;
                share.node.give_back(conn);
                Ok(frames)
            })
            .await
        } else {
            let began = metrics::started();
            let sent = async {
                let conn = match share.node.live() {
                    Some(conn) => conn,
                    None => {
                        let timeout = until.saturating_duration_since(Instant::now());
                        Box::pin(share.node.connection(timeout, &self.config().conn)).await?
                    }
                };
                match conn.request_as(bytes, replies, until, room, kind).await {
                    // A write not sent, to a slot its node does not hold,
                    // on a held connection: on a write lane.
                    Err(ConnError::Moved) if matches!(kind, SlotKind::Write { .. }) => {
                        Box::pin(self.send_on_lane(share, bytes, replies, until, kind)).await
                    }
                    // A read its node holds the connection for (a paused
                    // write ahead of it, or before it was sent): sent on
                    // the side connection.
                    Err(ConnError::Moved) => {
                        share.node.side.moved_read();
                        Box::pin(self.send_aside(share, bytes, replies, until)).await
                    }
                    sent => sent,
                }
            }
            .await;
            share.node.note_reply(&sent);
            metrics::attempt(&share.node.addr, began, share.node.in_flight());
            sent
        }
    }

    /// Reads on the share's node's side connection, while its shared one
    /// is held (docs/behaviour.md §5, "Paused nodes").
    async fn send_aside(
        &self,
        share: &Share,
        bytes: &[u8],
        replies: usize,
        until: Instant,
    ) -> Result<Frames, ConnError> {
        let timeout = until.saturating_duration_since(Instant::now());
        let conn = share.node.side.connection(timeout).await?;
        conn.request_in(bytes, replies, until, None).await
    }

    /// A write (not sent yet) that its node's held shared connection
    /// handed back: sent where `zaris_core::write_lane` places it, behind
    /// the node's held writes to its slot if there are any, else on a
    /// free write lane, else on the shared connection; there it stays
    /// (docs/behaviour.md §5, "Paused nodes").
    async fn send_on_lane(
        &self,
        share: &Share,
        bytes: &[u8],
        replies: usize,
        until: Instant,
        kind: SlotKind,
    ) -> Result<Frames, ConnError> {
        let SlotKind::Write {
            last,
            to: WriteTo::Slot(slot),
        } = kind
        else {
            unreachable!("only a write to one slot leaves a held connection")
        };
        let placed = SlotKind::Write {
            last,
            to: WriteTo::Placed(slot),
        };
        let side = &share.node.side;
        let timeout = until.saturating_duration_since(Instant::now());
        if let WriteConn::Lane(at) = side.place_of(slot) {
            // A lane that cannot be opened: the shared connection after all.
            if let Ok(lane) = side
                .lane(at, timeout.min(self.config().attempt_timeout))
                .await
            {
                side.moved_write();
                return lane.request_as(bytes, replies, until, None, placed).await;
            }
        }
        let conn = share.node.connection(timeout, &self.config().conn).await?;
        conn.request_as(bytes, replies, until, None, placed).await
    }

    /// What the replies of an attempt on `node` come to.
    #[inline]
    pub(crate) fn judge(&self, frames: &[Frame], node: &Node) -> Verdict {
        match frames.first() {
            // Most replies: nothing to classify.
            Some(first) if !matches!(first, Frame::Error(_)) => {
                node.note_cluster_down(false);
                // A durable write's WAIT (its last reply) refused.
                let wait = frames.get(1..).and_then(<[Frame]>::last);
                match wait.filter(|_| self.config().durability.is_some()) {
                    Some(wait) => {
                        wait_failed(wait, &node.addr).map_or(Verdict::Answer, Verdict::Failed)
                    }
                    None => Verdict::Answer,
                }
            }
            _ => self.judge_error(frames, node),
        }
    }

    /// [`Self::judge`] for an error reply, or none.
    #[inline(never)]
    pub(super) fn judge_error(&self, frames: &[Frame], node: &Node) -> Verdict {
        let Some(first) = frames.first() else {
            return Verdict::Fatal(Error::Protocol {
                node: node.addr.to_string(),
                detail: "no reply".into(),
            });
        };
        let reading = read_reply(first, &node.addr, Inside::Request);
        node.note_cluster_down(matches!(
            &reading,
            Reading::Failed(f) if f.outcome == Outcome::Status(KvStatus::Unavailable)
        ));
        match reading {
            Reading::Answer => Verdict::Answer,
            Reading::Moved { slot, to } => Verdict::Failed(self.moved(slot, &node.addr, &to)),
            Reading::Ask { to, failure } => Verdict::Ask(self.registry().node(&to), failure),
            Reading::Failed(failure) => Verdict::Failed(failure),
            Reading::Fatal(e) => Verdict::Fatal(e),
        }
    }

    /// `from` answered `MOVED slot to`: counted, and its hint re-points the
    /// slot now (the refresh follows), unless it closes a redirect loop;
    /// then the hint is not trusted, and the refresh that follows asks the
    /// other nodes first. The failure the retry loop gets.
    pub(crate) fn moved(&self, slot: u16, from: &str, to: &str) -> Failure {
        Counters::bump(&self.counters().moved_redirects);
        metrics::redirect("moved");
        let looped = self.redirects().note(slot, from, to);
        if looped {
            Counters::bump(&self.counters().redirect_loops);
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
}
