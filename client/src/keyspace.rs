//! Keyspace notifications from the whole cluster, through churn
//! ([`Client::keyspace_events`]). Each node publishes the notifications of
//! its own keys only, so the subscription listens on every master of the
//! map, on a connection of its own to each, and follows the map: a master
//! that appears (a failover, a scale-out) is subscribed as soon as the map
//! names it, and one that leaves is let go once the nodes that took its
//! slots are heard. A write of this client's to a node a subscription
//! does not hear yet waits, within its attempt, until it does
//! (`hearing.rs`): its own writes' notifications are heard.
//!
//! What may have been missed is said, never left to silence: each slot is
//! *heard* from its owner since the owner's subscription was confirmed. A
//! slot whose node was lost (its connection ended: a `kill -9`, a network
//! cut) is missing from the last frame heard from that node (a `PING`
//! every tick keeps that recent); a slot that moved to a node not heard
//! since before the map that last showed it elsewhere is missing from that
//! map's making. Once the slot is heard again, a [`KeyspaceEvent::Gap`]
//! names the node, the slots and the window. Notifications are at most
//! once, as all pub/sub is; one published twice (a slot heard from two
//! nodes a moment while one takes over) may come twice.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;
use zaris_core::SLOT_COUNT;

use crate::codec::{encode, Frame};
use crate::conn::ConnError;
use crate::inner::Inner;
use crate::pubsub::{connect, Frames, Listening};
use crate::seam;
use crate::snapshot::Snapshot;
use crate::{Client, Error};

/// What [`Client::keyspace_events`] yields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyspaceEvent {
    /// A notification (`__keyspace@0__:key` with the event as payload, or
    /// `__keyevent@0__:set` with the key), and the node that published it.
    Event {
        /// The node (`host:port`).
        node: String,
        /// The channel it came on.
        channel: Bytes,
        /// Its payload.
        payload: Bytes,
    },
    /// Notifications of `slots` published by `node` between `from` and
    /// `to` may be missing: reconcile those keys. Outside the gaps, every
    /// notification comes.
    Gap {
        /// The node whose notifications may be missing: the one lost, or
        /// the one that took the slots before it was heard.
        node: String,
        /// The slots, as inclusive ranges.
        slots: Vec<(u16, u16)>,
        /// From when.
        from: std::time::Instant,
        /// Until when (the slots are heard again from then on).
        to: std::time::Instant,
    },
}

/// A cluster-wide keyspace subscription: a [`futures_core::Stream`] of
/// [`KeyspaceEvent`]. Dropping it unsubscribes and closes its connections.
pub type KeyspaceEvents = Listening<KeyspaceEvent>;

/// How often the map is compared with the subscriptions, and each node
/// pinged.
const TICK: Duration = Duration::from_millis(100);
/// A subscription not confirmed within this long is sent again.
const CONFIRM_WITHIN: Duration = Duration::from_secs(2);

impl Client {
    /// Keyspace notifications from every master (`PSUBSCRIBE pattern` on
    /// each: `__keyspace@0__:*`, `__key*@0__:*`), following the map through
    /// failovers, migrations and scale-outs, with a
    /// [`KeyspaceEvent::Gap`] wherever some may be missing. Returns once
    /// every master is subscribed. The servers must publish them
    /// (`notify-keyspace-events`, e.g. `KEA`).
    ///
    /// ```no_run
    /// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
    /// use zaris_client::KeyspaceEvent;
    ///
    /// let mut events = client.keyspace_events("__keyspace@0__:user:*").await?;
    /// while let Some(event) = events.next().await {
    ///     match event {
    ///         KeyspaceEvent::Event { channel, payload, .. } => { /* user:42 set */ }
    ///         KeyspaceEvent::Gap { slots, from, to, .. } => { /* re-read those slots' keys */ }
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The error of the last attempt when a master could not be subscribed
    /// within the request time-out.
    pub async fn keyspace_events(
        &self,
        pattern: impl AsRef<[u8]>,
    ) -> Result<KeyspaceEvents, Error> {
        let (events, stream) = mpsc::unbounded_channel();
        let (frames_to, frames) = mpsc::unbounded_channel();
        let (id, asked) = self.inner.hearing().join();
        let mut watcher = Watcher {
            inner: self.inner.clone(),
            pattern: Bytes::copy_from_slice(pattern.as_ref()),
            nodes: seam::map(),
            frames,
            frames_to,
            events,
            slots: vec![Heard::Not; usize::from(SLOT_COUNT)],
            map: self.inner.map_full(),
            id,
            asked,
        };
        let deadline = self.inner.config().deadline_from(Instant::now());
        watcher.start(deadline).await?;
        let task = tokio::spawn(watcher.run());
        Ok(KeyspaceEvents::new(stream, task))
    }
}

/// Where a slot's notifications are heard from.
#[derive(Clone, Debug)]
enum Heard {
    /// Not yet (before the first subscription, or a slot with no owner
    /// since the start).
    Not,
    /// From `node`, subscribed since before the slot could have reached
    /// it.
    From { node: Arc<str> },
    /// From no one since `from`: `node` (which served it) was lost, or
    /// the slot went to a node not heard yet.
    Missing { node: Arc<str>, from: Instant },
}

/// Slots missed from one node in one window, gathered into a gap.
struct Missed {
    node: Arc<str>,
    from: Instant,
    to: Instant,
    slots: Vec<(u16, u16)>,
}

impl Missed {
    /// `slot` too (slots come in order).
    fn add(&mut self, slot: u16) {
        match self.slots.last_mut() {
            Some((_, last)) if *last + 1 == slot => *last = slot,
            _ => self.slots.push((slot, slot)),
        }
    }
}

/// The subscription's connection to one node.
struct NodeSub {
    commands: mpsc::UnboundedSender<Bytes>,
    /// When the node confirmed the subscription.
    confirmed: Option<Instant>,
    /// When the `PSUBSCRIBE` went out.
    sent: Instant,
    /// When a frame last came from it.
    heard: Instant,
    /// When a write last asked for it (a node a write reached by `ASK`
    /// before the map names it): kept a while, though no slot is its.
    asked: Option<Instant>,
}

/// How long a node a write asked for is kept without a slot of its own.
const ASKED_FOR: Duration = Duration::from_secs(5);

/// The subscription's task.
struct Watcher {
    inner: Arc<Inner>,
    pattern: Bytes,
    nodes: seam::HashMap<Arc<str>, NodeSub>,
    frames: mpsc::UnboundedReceiver<(Arc<str>, Result<Frame, ConnError>)>,
    frames_to: Frames,
    events: mpsc::UnboundedSender<KeyspaceEvent>,
    slots: Vec<Heard>,
    /// The map the slots were last compared with.
    map: Arc<Snapshot>,
    /// Its id among the client's subscriptions (`Inner::hearing`), and
    /// the nodes writes ask it to hear before they go.
    id: u64,
    asked: mpsc::UnboundedReceiver<Arc<str>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.inner.hearing().leave(self.id);
    }
}

impl Watcher {
    /// Subscribes every master and waits until each has confirmed (or
    /// `deadline`): from then on, every slot with an owner is heard.
    async fn start(&mut self, deadline: Option<Instant>) -> Result<(), Error> {
        loop {
            let mut last = self.subscribe_masters().await;
            // Writes meanwhile ask for their nodes too.
            while let Ok(addr) = self.asked.try_recv() {
                if let Err(e) = self.subscribe(&addr).await {
                    last = Some(e);
                }
            }
            let map = self.inner.map_full();
            let owners = map.active_owners();
            let all = !owners.is_empty()
                && owners.iter().all(|n| {
                    self.nodes
                        .get(&n.addr)
                        .is_some_and(|sub| sub.confirmed.is_some())
                });
            if all {
                self.map = map;
                self.compare();
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(last.unwrap_or_else(|| Error::Transport {
                    failure: zaris_core::TransportFailure::TimedOut,
                    detail: "keyspace notifications: not every master subscribed in time".into(),
                    attempts: 1,
                    stop: zaris_core::StopReason::DeadlineReached,
                }));
            }
            if owners.is_empty() {
                self.inner
                    .refresh(crate::stats::RefreshCause::Requested, TICK)
                    .await;
            }
            if let Ok(Some((addr, frame))) = tokio::time::timeout(TICK, self.frames.recv()).await {
                self.on_frame(&addr, frame);
            }
        }
    }

    /// Until the stream is dropped: notifications handed out, the map
    /// followed, gaps told.
    async fn run(mut self) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                frame = self.frames.recv() => {
                    let Some((addr, frame)) = frame else { return };
                    self.on_frame(&addr, frame);
                }
                _ = tick.tick() => {
                    if let Some(error) = self.subscribe_masters().await {
                        tracing::debug!(%error, "keyspace notifications: subscribing");
                    }
                    self.compare();
                    self.let_go();
                    for sub in self.nodes.values() {
                        let _ = sub.commands.send(encode(&[&[b"PING"]]));
                    }
                }
                asked = self.asked.recv() => {
                    let Some(addr) = asked else { return };
                    if let Err(error) = self.subscribe(&addr).await {
                        tracing::debug!(%error, "keyspace notifications: subscribing before a write");
                    }
                    if let Some(sub) = self.nodes.get_mut(&addr) {
                        sub.asked = Some(Instant::now());
                    }
                }
                () = self.events.closed() => return,
            }
        }
    }

    /// A frame from `addr`, or the end of its connection.
    fn on_frame(&mut self, addr: &Arc<str>, frame: Result<Frame, ConnError>) {
        let now = Instant::now();
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                tracing::info!(node = %addr, %error, "keyspace notifications: a node lost");
                let heard = self.nodes.remove(addr).map_or(now, |sub| sub.heard);
                self.inner.hearing().hears(self.id, addr, false);
                for slot in &mut self.slots {
                    if matches!(slot, Heard::From { node, .. } if node == addr) {
                        *slot = Heard::Missing {
                            node: addr.clone(),
                            from: heard,
                        };
                    }
                }
                return;
            }
        };
        let Some(sub) = self.nodes.get_mut(addr) else {
            return;
        };
        sub.heard = now;
        let Frame::Array(items) = frame else { return };
        let text = |i: usize| match items.get(i) {
            Some(Frame::BulkString(b) | Frame::SimpleString(b)) => Some(b.clone()),
            _ => None,
        };
        match text(0).as_deref() {
            Some(b"pmessage") => {
                if let (Some(channel), Some(payload)) = (text(2), text(3)) {
                    let _ = self.events.send(KeyspaceEvent::Event {
                        node: addr.to_string(),
                        channel,
                        payload,
                    });
                }
            }
            Some(b"psubscribe") => {
                sub.confirmed.get_or_insert(now);
                self.inner.hearing().hears(self.id, addr, true);
            }
            _ => {}
        }
    }

    /// Subscribes every master of the map not subscribed yet (or not
    /// confirmed in time). Returns the last error met.
    async fn subscribe_masters(&mut self) -> Option<Error> {
        let mut last = None;
        for node in self.inner.map().active_owners() {
            if let Err(e) = self.subscribe(&node.addr).await {
                last = Some(e);
            }
        }
        last
    }

    /// Subscribes `addr`, unless it is subscribed (or being, for less
    /// than [`CONFIRM_WITHIN`]).
    async fn subscribe(&mut self, addr: &Arc<str>) -> Result<(), Error> {
        if let Some(sub) = self.nodes.get(addr) {
            let stale = sub.confirmed.is_none() && sub.sent.elapsed() > CONFIRM_WITHIN;
            if !stale && !sub.commands.is_closed() {
                return Ok(());
            }
        }
        let commands = connect(&self.inner, addr, &self.frames_to).await?;
        let _ = commands.send(encode(&[&[b"PSUBSCRIBE", &self.pattern[..]]]));
        let now = Instant::now();
        self.nodes.insert(
            addr.clone(),
            NodeSub {
                commands,
                confirmed: None,
                sent: now,
                heard: now,
                asked: None,
            },
        );
        Ok(())
    }

    /// Each slot against its owner in the map: heard from it (confirmed
    /// since before the slot could have reached it), or missing from when
    /// it could have; a slot heard again after missing, told as a gap.
    fn compare(&mut self) {
        let map = self.inner.map_full();
        // What the last map said held when it was made: a slot that moved
        // since may have moved any time after.
        let before = self.map.made;
        let now = Instant::now();
        let mut gaps: Vec<Missed> = Vec::new();
        for slot in 0..SLOT_COUNT {
            let Ok(owner) = map.owner_of_slot(slot) else {
                continue;
            };
            let confirmed = self.nodes.get(&owner.addr).and_then(|sub| sub.confirmed);
            let state = &mut self.slots[usize::from(slot)];
            let next = match (&*state, confirmed) {
                (Heard::From { node, .. }, _) if *node == owner.addr => continue,
                // Never heard: heard from the owner once it is subscribed.
                (Heard::Not, Some(_)) => Heard::From {
                    node: owner.addr.clone(),
                },
                (Heard::Not, None) => continue,
                // It moved to a node heard since before it could have.
                (Heard::From { .. }, Some(since)) if since <= before => Heard::From {
                    node: owner.addr.clone(),
                },
                (Heard::From { .. }, _) => Heard::Missing {
                    node: owner.addr.clone(),
                    from: before,
                },
                (Heard::Missing { node, from }, Some(since)) => {
                    let (node, from) = (node.clone(), *from);
                    // Heard again from the node it was missing from: since
                    // then. From another, heard all along: it came there
                    // some time before now.
                    let to = if node == owner.addr {
                        since.max(from)
                    } else {
                        since.max(now)
                    };
                    match gaps
                        .iter_mut()
                        .find(|g| g.node == node && g.from == from && g.to == to)
                    {
                        Some(gap) => gap.add(slot),
                        None => gaps.push(Missed {
                            node,
                            from,
                            to,
                            slots: vec![(slot, slot)],
                        }),
                    }
                    Heard::From {
                        node: owner.addr.clone(),
                    }
                }
                (Heard::Missing { .. }, None) => continue,
            };
            *state = next;
        }
        if !Arc::ptr_eq(&map, &self.map) {
            self.map = map;
        }
        for Missed {
            node,
            from,
            to,
            slots,
        } in gaps
        {
            tracing::info!(%node, ranges = slots.len(), lasted = ?(to - from), "keyspace notifications: a gap");
            let _ = self.events.send(KeyspaceEvent::Gap {
                node: node.to_string(),
                slots,
                from: from.into_std(),
                to: to.into_std(),
            });
        }
    }

    /// Closes the connections to nodes no slot is heard from (a master
    /// turned replica, or gone), once every slot is heard elsewhere.
    fn let_go(&mut self) {
        let masters: Vec<Arc<str>> = self
            .map
            .active_owners()
            .iter()
            .map(|n| n.addr.clone())
            .collect();
        let (slots, hearing, id) = (&self.slots, self.inner.hearing(), self.id);
        self.nodes.retain(|addr, sub| {
            let kept = masters.contains(addr)
                || sub.asked.is_some_and(|at| at.elapsed() < ASKED_FOR)
                || slots
                    .iter()
                    .any(|s| matches!(s, Heard::From { node, .. } if node == addr));
            if !kept {
                hearing.hears(id, addr, false);
            }
            kept
        });
    }
}
