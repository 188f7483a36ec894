//! Pub/sub that survives churn: sharded (Redis 7 `SSUBSCRIBE`/`SPUBLISH`)
//! and classic (`SUBSCRIBE`, `PSUBSCRIBE`, `PUBLISH`).
//!
//! A [`Subscription`] owns one task and one connection of its own per node
//! it listens on. Each channel is subscribed on the master owning its slot,
//! one command per slot (a `SSUBSCRIBE` naming channels of two slots is
//! refused by the server, and a resubscription never sends one). A classic
//! channel or pattern is heard on every node (the cluster bus carries
//! every `PUBLISH` to all of them), so its slot only spreads the
//! subscriptions over the masters; it stays on its node through failovers
//! and migrations (no gap, no message twice) and moves only when that node
//! is lost or leaves the map.
//! When a channel's slot moves (migration, failover, the master killed),
//! the node says `sunsubscribe`, the connection dies, or the map names
//! another owner; the task refreshes the map and subscribes again on the
//! new owner, and the stream carries a [`Received::Gap`] for the channel:
//! messages published meanwhile may be lost. Pub/sub is at most once: a
//! message is delivered to the subscribers present when it is published,
//! and never stored.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use zaris_core::slot_for_key;

use crate::codec::{encode, encode_into, take_frames, Frame, Limits};
use crate::conn::{open, ConnError};
use crate::failure::{conn_error, read_reply, Inside, Reading};
use crate::inner::Inner;
use crate::ownership::Revealed;
use crate::route::{pack, Route};
use crate::seam;
use crate::stats::RefreshCause;
use crate::{Client, Error};

/// What a subscription's stream yields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Received {
    /// A message published on a subscribed channel.
    Message {
        /// The channel.
        channel: Bytes,
        /// What was published.
        payload: Bytes,
    },
    /// A message published on a channel matching a subscribed pattern
    /// ([`Client::psubscribe`]).
    PatternMessage {
        /// The pattern it matched.
        pattern: Bytes,
        /// The channel it was published on.
        channel: Bytes,
        /// What was published.
        payload: Bytes,
    },
    /// The channel (or pattern) was unsubscribed for `lasted` (its slot
    /// moved, its master failed) and is subscribed again, on its new owner:
    /// messages published meanwhile may be lost. Those published from now
    /// on come.
    Gap {
        /// The channel, or the pattern.
        channel: Bytes,
        /// How long it was not subscribed.
        lasted: Duration,
    },
}

/// Channels listened to (see [`Client::ssubscribe`], [`Client::subscribe`],
/// [`Client::psubscribe`]): a
/// [`futures_core::Stream`] of [`Received`]. Dropping it unsubscribes and
/// closes its connections.
pub type Subscription = Listening<Received>;

/// What a task listening for the client hands out, as a
/// [`futures_core::Stream`] ([`Subscription`], [`crate::KeyspaceEvents`]).
/// Dropping it ends the task and closes its connections.
pub struct Listening<T> {
    events: mpsc::UnboundedReceiver<T>,
    task: tokio::task::JoinHandle<()>,
}

impl<T> Listening<T> {
    /// The stream of what `task` sends on `events`'s other end.
    pub(crate) fn new(
        events: mpsc::UnboundedReceiver<T>,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self { events, task }
    }

    /// The next item (`None` once the client is gone).
    pub async fn next(&mut self) -> Option<T> {
        self.events.recv().await
    }
}

impl<T> futures_core::Stream for Listening<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.events.poll_recv(cx)
    }
}

impl<T> Drop for Listening<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How often the task checks each channel against the map.
const CHECK_EVERY: Duration = Duration::from_millis(200);
/// A subscription not confirmed within this long is sent again.
const CONFIRM_WITHIN: Duration = Duration::from_secs(2);
/// How long a refresh after a lost channel is waited for.
const REFRESH_WAIT: Duration = Duration::from_secs(1);

impl Client {
    /// Subscribes to sharded `channels` (`SSUBSCRIBE`, Redis 7+), each on
    /// the master owning its slot, and returns once every one is confirmed.
    /// The subscription follows the channels' slots through migrations and
    /// failovers by itself, and tells of each interruption with a
    /// [`Received::Gap`].
    ///
    /// ```no_run
    /// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
    /// use zaris_client::Received;
    ///
    /// let mut orders = client.ssubscribe(&["orders:{eu}", "orders:{us}"]).await?;
    /// client.spublish("orders:{eu}", "order 1").await?;
    /// while let Some(event) = orders.next().await {
    ///     match event {
    ///         Received::Message { channel, payload } => { /* ... */ }
    ///         Received::Gap { channel, lasted } => { /* messages may be missing */ }
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Config`] for no channels; the error of the last attempt
    /// when a channel could not be subscribed within the request time-out.
    pub async fn ssubscribe<C: AsRef<[u8]>>(&self, channels: &[C]) -> Result<Subscription, Error> {
        self.listen(Kind::Sharded, channels).await
    }

    /// Subscribes to classic `channels` (`SUBSCRIBE`), which hear every
    /// `PUBLISH` in the cluster whichever node it reaches. Each is placed
    /// on the master owning its name's slot (so subscriptions spread over
    /// the masters) and follows it through churn as a sharded channel
    /// does, with a [`Received::Gap`] per interruption.
    ///
    /// # Errors
    /// As [`Client::ssubscribe`].
    pub async fn subscribe<C: AsRef<[u8]>>(&self, channels: &[C]) -> Result<Subscription, Error> {
        self.listen(Kind::Classic, channels).await
    }

    /// Subscribes to the channels matching `patterns` (`PSUBSCRIBE`, a
    /// glob), placed and kept as [`Client::subscribe`] places channels;
    /// messages come as [`Received::PatternMessage`].
    ///
    /// # Errors
    /// As [`Client::ssubscribe`].
    pub async fn psubscribe<P: AsRef<[u8]>>(&self, patterns: &[P]) -> Result<Subscription, Error> {
        self.listen(Kind::Pattern, patterns).await
    }

    /// Publishes `payload` on the classic `channel` (`PUBLISH`), sent to
    /// the master owning the channel name's slot under the retry rules (any
    /// node would do: the cluster carries it to every node). Returns how
    /// many subscribers of that node received it; those of other nodes are
    /// not counted (the server's own cluster semantics).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn publish(
        &self,
        channel: impl AsRef<[u8]>,
        payload: impl AsRef<[u8]>,
    ) -> Result<i64, Error> {
        self.publish_as("PUBLISH", channel.as_ref(), payload.as_ref())
            .await
    }

    async fn listen<C: AsRef<[u8]>>(
        &self,
        kind: Kind,
        channels: &[C],
    ) -> Result<Subscription, Error> {
        if channels.is_empty() {
            return Err(Error::Config(format!(
                "{} needs at least one channel",
                kind.subscribe().to_ascii_lowercase()
            )));
        }
        let mut names: Vec<Bytes> = Vec::new();
        for channel in channels {
            let channel = Bytes::copy_from_slice(channel.as_ref());
            if !names.contains(&channel) {
                names.push(channel);
            }
        }
        let (events, stream) = mpsc::unbounded_channel();
        let (frames_to, frames) = mpsc::unbounded_channel();
        let mut subscriber = Subscriber {
            inner: self.inner.clone(),
            channels: names
                .into_iter()
                .map(|name| Channel {
                    kind,
                    slot: slot_for_key(&name),
                    name,
                    on: None,
                    confirmed: false,
                    sent_at: None,
                    lost_at: None,
                })
                .collect(),
            nodes: seam::map(),
            frames,
            frames_to,
            events,
            refresh_needed: false,
        };
        let deadline = self.inner.config().deadline_from(Instant::now());
        subscriber.confirm_all(deadline).await?;
        let task = tokio::spawn(subscriber.run());
        Ok(Subscription::new(stream, task))
    }

    /// Publishes `payload` on the sharded `channel` (`SPUBLISH`), sent to
    /// the master owning the channel's slot under the retry rules; returns
    /// how many subscribers of that node received it.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn spublish(
        &self,
        channel: impl AsRef<[u8]>,
        payload: impl AsRef<[u8]>,
    ) -> Result<i64, Error> {
        self.publish_as("SPUBLISH", channel.as_ref(), payload.as_ref())
            .await
    }

    async fn publish_as(
        &self,
        command: &'static str,
        channel: &[u8],
        payload: &[u8],
    ) -> Result<i64, Error> {
        let route = Route::Slot(slot_for_key(channel));
        let mut replies = self
            .inner
            .execute(
                route,
                pack(command, &[&[command.as_bytes(), channel, payload]]),
            )
            .await?;
        match replies.swap_remove(0) {
            Frame::Integer(n) => Ok(n),
            other => Err(Error::UnexpectedReply {
                command,
                reply: format!("{other:?}"),
            }),
        }
    }
}

/// Which pub/sub a channel belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `SSUBSCRIBE`: the channel lives on its slot's master.
    Sharded,
    /// `SUBSCRIBE`: heard on every node.
    Classic,
    /// `PSUBSCRIBE`: a pattern, heard on every node.
    Pattern,
}

impl Kind {
    fn subscribe(self) -> &'static str {
        match self {
            Kind::Sharded => "SSUBSCRIBE",
            Kind::Classic => "SUBSCRIBE",
            Kind::Pattern => "PSUBSCRIBE",
        }
    }

    fn unsubscribe(self) -> &'static str {
        match self {
            Kind::Sharded => "SUNSUBSCRIBE",
            Kind::Classic => "UNSUBSCRIBE",
            Kind::Pattern => "PUNSUBSCRIBE",
        }
    }

    /// The kind a push frame's first element names, and what it is.
    fn of_push(name: &[u8]) -> Option<(Kind, Push)> {
        Some(match name {
            b"smessage" => (Kind::Sharded, Push::Message),
            b"ssubscribe" => (Kind::Sharded, Push::Subscribed),
            b"sunsubscribe" => (Kind::Sharded, Push::Unsubscribed),
            b"message" => (Kind::Classic, Push::Message),
            b"subscribe" => (Kind::Classic, Push::Subscribed),
            b"unsubscribe" => (Kind::Classic, Push::Unsubscribed),
            b"pmessage" => (Kind::Pattern, Push::Message),
            b"psubscribe" => (Kind::Pattern, Push::Subscribed),
            b"punsubscribe" => (Kind::Pattern, Push::Unsubscribed),
            _ => return None,
        })
    }
}

/// What a push frame says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Push {
    Message,
    Subscribed,
    Unsubscribed,
}

/// One subscribed channel (or pattern).
struct Channel {
    kind: Kind,
    name: Bytes,
    slot: u16,
    /// The node it is subscribed on (or being subscribed on).
    on: Option<Arc<str>>,
    confirmed: bool,
    /// When its `SSUBSCRIBE` went out.
    sent_at: Option<Instant>,
    /// When it stopped being subscribed, until it is again.
    lost_at: Option<Instant>,
}

/// A connection of the subscription's own to one node: commands go in,
/// the node's frames come out on the subscriber's channel.
struct NodeConn {
    commands: mpsc::UnboundedSender<Bytes>,
}

/// The subscription's task.
struct Subscriber {
    inner: Arc<Inner>,
    channels: Vec<Channel>,
    nodes: seam::HashMap<Arc<str>, NodeConn>,
    frames: mpsc::UnboundedReceiver<(Arc<str>, Result<Frame, ConnError>)>,
    frames_to: Frames,
    events: mpsc::UnboundedSender<Received>,
    refresh_needed: bool,
}

impl Subscriber {
    /// Subscribes every channel and waits until all are confirmed, or
    /// `deadline`.
    async fn confirm_all(&mut self, deadline: Option<Instant>) -> Result<(), Error> {
        loop {
            let last = self.sync().await;
            if self.channels.iter().all(|c| c.confirmed) {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let pending: Vec<String> = self
                    .channels
                    .iter()
                    .filter(|c| !c.confirmed)
                    .map(|c| String::from_utf8_lossy(&c.name).into_owned())
                    .collect();
                return Err(last.unwrap_or_else(|| Error::Transport {
                    failure: zaris_core::TransportFailure::TimedOut,
                    detail: format!("not subscribed in time: {}", pending.join(", ")),
                    attempts: 1,
                    stop: zaris_core::StopReason::DeadlineReached,
                }));
            }
            match tokio::time::timeout(CHECK_EVERY, self.frames.recv()).await {
                Ok(Some((addr, frame))) => {
                    if let Some(error) = self.on_frame(&addr, frame) {
                        tracing::debug!(%error, "subscribing");
                    }
                }
                Ok(None) => unreachable!("the subscriber holds a sender"),
                Err(_) => {}
            }
        }
    }

    /// Until the [`Subscription`] is dropped: hands messages out, and keeps
    /// every channel subscribed on its slot's owner.
    async fn run(mut self) {
        let mut check = tokio::time::interval(CHECK_EVERY);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                frame = self.frames.recv() => {
                    let Some((addr, frame)) = frame else { return };
                    if let Some(error) = self.on_frame(&addr, frame) {
                        tracing::debug!(%error, "subscription");
                    }
                }
                _ = check.tick() => {
                    if let Some(error) = self.sync().await {
                        tracing::debug!(%error, "resubscribing");
                    }
                }
                () = self.events.closed() => return,
            }
        }
    }

    /// A frame from `addr` (or the end of its connection). An error frame
    /// is returned, for the caller to report.
    fn on_frame(&mut self, addr: &Arc<str>, frame: Result<Frame, ConnError>) -> Option<Error> {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => {
                // Every channel on that node is lost until resubscribed.
                self.nodes.remove(addr);
                self.lose(|c| c.on.as_ref() == Some(addr));
                return Some(lost_connection(addr, &e));
            }
        };
        let items = match frame {
            Frame::Array(items) => items,
            Frame::Error(_) => {
                // A refused SSUBSCRIBE (MOVED, CLUSTERDOWN): the map hint is
                // taken, and the channels not yet confirmed there go again.
                if let Reading::Moved { slot, to } = read_reply(&frame, addr, Inside::Request) {
                    self.inner.push(slot, slot, &to, Revealed::Moved);
                }
                self.refresh_needed = true;
                self.lose(|c| c.on.as_ref() == Some(addr) && !c.confirmed);
                return Some(Error::Server(format!("{addr}: {frame:?}")));
            }
            // `+OK` to AUTH.
            _ => return None,
        };
        let text = |i: usize| match items.get(i) {
            Some(Frame::BulkString(b) | Frame::SimpleString(b)) => Some(b.clone()),
            _ => None,
        };
        let (Some(push), Some(channel)) = (text(0), text(1)) else {
            return None;
        };
        let (kind, push) = Kind::of_push(&push)?;
        match push {
            Push::Message if kind == Kind::Pattern => {
                if let (Some(on), Some(payload)) = (text(2), text(3)) {
                    let _ = self.events.send(Received::PatternMessage {
                        pattern: channel,
                        channel: on,
                        payload,
                    });
                }
            }
            Push::Message => {
                if let Some(payload) = text(2) {
                    let _ = self.events.send(Received::Message { channel, payload });
                }
            }
            Push::Subscribed => {
                if let Some(c) = self
                    .channels
                    .iter_mut()
                    .find(|c| c.kind == kind && c.name == channel && c.on.as_ref() == Some(addr))
                {
                    c.confirmed = true;
                    if let Some(lost) = c.lost_at.take() {
                        let lasted = lost.elapsed();
                        tracing::info!(channel = ?c.name, ?lasted, "resubscribed");
                        let _ = self.events.send(Received::Gap { channel, lasted });
                    }
                }
            }
            Push::Unsubscribed => {
                // The node gave the channel's slot away (or we moved it).
                self.refresh_needed = true;
                let moved = |c: &Channel| {
                    c.kind == kind && c.name == channel && c.on.as_ref() == Some(addr)
                };
                self.lose(moved);
            }
        }
        None
    }

    /// Marks the channels `which` selects as no longer subscribed.
    fn lose(&mut self, which: impl Fn(&Channel) -> bool) {
        let now = Instant::now();
        for c in self.channels.iter_mut().filter(|c| which(c)) {
            c.on = None;
            c.confirmed = false;
            c.lost_at.get_or_insert(now);
        }
    }

    /// Brings every channel to its slot's owner in the current map: a
    /// refresh first when something was lost, then one `SSUBSCRIBE` per
    /// slot on each owner for the channels not there, and `SUNSUBSCRIBE`
    /// where they were. Returns the last error met.
    async fn sync(&mut self) -> Option<Error> {
        if self.refresh_needed {
            self.refresh_needed = false;
            self.inner
                .refresh(RefreshCause::Failure, REFRESH_WAIT)
                .await;
        }
        let snapshot = self.inner.map_full();
        let mut wanted: Vec<(Arc<str>, u16, Kind, Vec<usize>)> = Vec::new();
        let mut leave: Vec<(Arc<str>, Kind, Bytes)> = Vec::new();
        let now = Instant::now();
        for (i, c) in self.channels.iter_mut().enumerate() {
            let Ok(owner) = snapshot.owner_of_slot(c.slot) else {
                // No owner mapped (its master failed, no replica took over
                // yet): ask again next time.
                self.refresh_needed = true;
                continue;
            };
            let stale = !c.confirmed && c.sent_at.is_some_and(|t| now - t > CONFIRM_WITHIN);
            if c.on.as_ref() == Some(&owner.addr) && !stale {
                continue;
            }
            // A classic channel is heard on every node: it stays where it
            // is (no gap, no message twice) while that node is in the map,
            // a replica now or not; it moves when the node is lost or
            // leaves the map (failed: frozen, say).
            let heard_anywhere = c.kind != Kind::Sharded;
            if heard_anywhere && !stale && c.on.as_ref().is_some_and(|on| snapshot.knows(on)) {
                continue;
            }
            if let Some(old) = c.on.take() {
                if c.confirmed {
                    leave.push((old, c.kind, c.name.clone()));
                    c.lost_at.get_or_insert(now);
                }
            }
            c.confirmed = false;
            match wanted.iter_mut().find(|(addr, slot, kind, _)| {
                **addr == *owner.addr && *slot == c.slot && *kind == c.kind
            }) {
                Some((_, _, _, members)) => members.push(i),
                None => wanted.push((owner.addr.clone(), c.slot, c.kind, vec![i])),
            }
        }
        for (addr, kind, channel) in leave {
            if let Some(node) = self.nodes.get(&addr) {
                let _ = node
                    .commands
                    .send(encode(&[&[kind.unsubscribe().as_bytes(), &channel[..]]]));
            }
        }
        let mut last = None;
        for (addr, _slot, kind, members) in wanted {
            let commands = match self.node(&addr).await {
                Ok(commands) => commands,
                Err(e) => {
                    // The map names a node that is gone: ask again next time.
                    self.refresh_needed = true;
                    last = Some(e);
                    continue;
                }
            };
            // One slot per SSUBSCRIBE: never a cross-slot one.
            let mut bytes = BytesMut::new();
            let mut args: Vec<&[u8]> = vec![kind.subscribe().as_bytes()];
            args.extend(members.iter().map(|&i| &self.channels[i].name[..]));
            encode_into(&mut bytes, &args);
            if commands.send(bytes.freeze()).is_err() {
                self.nodes.remove(&addr);
                continue;
            }
            for i in members {
                let c = &mut self.channels[i];
                c.on = Some(addr.clone());
                c.sent_at = Some(now);
            }
        }
        last
    }

    /// The command sender of the subscription's connection to `addr`,
    /// connecting (and authenticating) if there is none.
    async fn node(&mut self, addr: &Arc<str>) -> Result<mpsc::UnboundedSender<Bytes>, Error> {
        if let Some(node) = self.nodes.get(addr) {
            if !node.commands.is_closed() {
                return Ok(node.commands.clone());
            }
        }
        let commands = connect(&self.inner, addr, &self.frames_to).await?;
        self.nodes.insert(
            addr.clone(),
            NodeConn {
                commands: commands.clone(),
            },
        );
        Ok(commands)
    }
}

/// Where a subscription's connections hand their frames: each with its
/// node, the end of a connection as its error.
pub(crate) type Frames = mpsc::UnboundedSender<(Arc<str>, Result<Frame, ConnError>)>;

/// A connection of a subscription's own to `addr` (authenticated as the
/// client's are), its frames handed to `frames`: the sender of the
/// commands to write on it. Dropping the sender closes it.
pub(crate) async fn connect(
    inner: &Inner,
    addr: &Arc<str>,
    frames: &Frames,
) -> Result<mpsc::UnboundedSender<Bytes>, Error> {
    let options = &inner.config().conn;
    let stream = open(addr, inner.config().attempt_timeout, options)
        .await
        .map_err(|e| lost_connection(addr, &e))?;
    let (commands, queue) = mpsc::unbounded_channel();
    if let Some(source) = &options.credentials {
        let credentials = source().await.map_err(|why| Error::Auth {
            node: addr.to_string(),
            detail: format!("the credentials provider: {why}"),
        })?;
        let _ = commands.send(credentials.command());
    }
    tokio::spawn(listen(
        stream,
        queue,
        frames.clone(),
        addr.clone(),
        options.limits,
    ));
    Ok(commands)
}

/// A subscription connection to `addr` that failed (or never opened).
fn lost_connection(addr: &str, e: &ConnError) -> Error {
    conn_error(e.clone(), addr)
}

/// One subscription connection: writes the commands it is given, reads
/// every frame the node pushes and passes it on, until either side ends.
async fn listen(
    stream: crate::conn::Stream,
    mut commands: mpsc::UnboundedReceiver<Bytes>,
    frames: mpsc::UnboundedSender<(Arc<str>, Result<Frame, ConnError>)>,
    addr: Arc<str>,
    limits: Limits,
) {
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut input = BytesMut::with_capacity(16 * 1024);
    let error = loop {
        tokio::select! {
            command = commands.recv() => {
                let Some(command) = command else { return };
                let sent = async {
                    writer.write_all(&command).await?;
                    writer.flush().await
                };
                if let Err(e) = sent.await {
                    break ConnError::Reset(format!("{addr}: {e}"));
                }
            }
            read = reader.read_buf(&mut input) => match read {
                Ok(0) => break ConnError::Reset(format!("{addr} closed the connection")),
                Ok(_) => {
                    let taken = take_frames(&mut input, limits, |frame| {
                        frames
                            .send((addr.clone(), Ok(frame)))
                            .map_err(|_| ConnError::Reset("subscription dropped".into()))
                    });
                    if let Err(e) = taken {
                        break e;
                    }
                }
                Err(e) => break ConnError::Reset(format!("{addr}: {e}")),
            },
        }
    };
    let _ = frames.send((addr, Err(error)));
}
