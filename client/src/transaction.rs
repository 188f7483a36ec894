//! One-slot transactions: `MULTI ... EXEC` on the node that owns the slot,
//! refused before sending when the keys span slots.
//!
//! A redirect before `EXEC` applies anything (a queued command answered
//! `MOVED`, `ASK` or `TRYAGAIN`, so `EXEC` answered `EXECABORT`) retries the
//! whole block on the new owner, under the retry loop's bounds. Nothing is
//! ever applied twice: once `EXEC` may have reached the node, a lost reply
//! is [`Error::TransactionUnknown`], never a second send.
//!
//! [`Client::watch`] adds optimistic locking: `WATCH` on a connection of
//! its own, reads, then the transaction; a key changed meanwhile runs the
//! whole thing again.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use zaris_core::{command_target, KvStatus, Outcome, Target};

use crate::codec::{encode, Frame};
use crate::conn::{ConnError, Connection, SlotKind, WriteTo};
use crate::failure::{
    conn_error, conn_failure, read_reply, route_failure, Failure, Inside, Reading,
};
use crate::inner::Inner;
use crate::pool::Node;
use crate::request::Retrying;
use crate::script::Script;
use crate::stats::Counters;
use crate::value::from_frame;
use crate::{Client, Error, Value};

/// Commands to run atomically on one slot's owner (see
/// [`Client::transaction`]).
///
/// ```no_run
/// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
/// let mut tx = client.transaction();
/// tx.cmd(&["INCR", "{user1}:visits"]).cmd(&["SADD", "{user1}:days", "monday"]);
/// let replies = tx.exec().await?; // one value per command
/// # Ok(()) }
/// ```
pub struct Transaction {
    inner: Arc<Inner>,
    commands: Vec<Vec<Vec<u8>>>,
}

impl Client {
    /// An empty transaction: commands whose keys share one slot, run
    /// between `MULTI` and `EXEC` on its owner.
    #[must_use]
    pub fn transaction(&self) -> Transaction {
        Transaction {
            inner: self.inner.clone(),
            commands: Vec::new(),
        }
    }

    /// Optimistic locking: `WATCH`es `keys` (one slot) on a connection of
    /// its own, lets `body` read through the [`Watched`] handle and queue
    /// the commands to apply, then runs them in `MULTI ... EXEC`. When a
    /// watched key changed meanwhile (`EXEC` answers nil), everything runs
    /// again, until the request deadline.
    ///
    /// ```no_run
    /// # async fn demo(client: zaris_client::Client) -> Result<(), zaris_client::Error> {
    /// let replies = client
    ///     .watch(&["{c}:n"], |mut w| async move {
    ///         let n = w.cmd(&["GET", "{c}:n"]).await?.as_int().unwrap_or(0);
    ///         w.queue(&["SET", "{c}:n", &(n + 1).to_string()]);
    ///         Ok(w)
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::CrossSlot`] for keys (watched or queued) in different slots;
    /// [`Error::Conflict`] when the watched keys kept changing until the
    /// deadline; `body`'s error; as [`Transaction::exec`] otherwise.
    pub async fn watch<K, F, Fut>(&self, keys: &[K], mut body: F) -> Result<Vec<Value>, Error>
    where
        K: AsRef<[u8]>,
        F: FnMut(Watched) -> Fut,
        Fut: Future<Output = Result<Watched, Error>>,
    {
        let inner = &self.inner;
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let mut watch: Vec<&[u8]> = vec![b"WATCH"];
        watch.extend(&keys);
        let slot = match command_target(&watch) {
            Ok(Target::Slot(slot)) => slot,
            // One server watches keys of any slots.
            Err(zaris_core::CommandError::CrossSlot { first, .. })
                if inner.map().is_standalone() =>
            {
                first
            }
            Err(error) => return Err(Error::command(&watch, error)),
            Ok(_) => {
                return Err(Error::command(
                    &watch,
                    zaris_core::CommandError::InvalidArguments,
                ))
            }
        };
        let started = Instant::now();
        let mut state = Retrying::new(inner);
        loop {
            let timeout = state.attempt_timeout(inner.config().attempt_timeout);
            // A connection of its own: the watch is the connection's state.
            let Some((node, conn)) = attempt_on(inner, &mut state, slot, timeout, true).await?
            else {
                continue;
            };
            let watched = conn.request(&encode(&[&watch]), 1, timeout).await;
            let failure = match watched {
                Ok(frames) => match frames.first() {
                    Some(reply) => match read_reply(reply, &node.addr, Inside::Multi) {
                        Reading::Answer => None,
                        reading => Some(failure_of(inner, reading, &node.addr)?),
                    },
                    None => Some(Failure::new(
                        Outcome::Transport(zaris_core::TransportFailure::ConnectionReset),
                        format!("{}: WATCH got no answer", node.addr),
                    )),
                },
                Err(e) => Some(conn_failure(e, &node.addr)?),
            };
            if let Some(failure) = failure {
                inner.after_failure(&mut state, failure).await?;
                continue;
            }
            let handle = Watched {
                inner: inner.clone(),
                conn: conn.clone(),
                addr: node.addr.to_string(),
                timeout,
                slot,
                queued: Vec::new(),
            };
            let handle = body(handle).await?;
            let commands: Vec<Vec<&[u8]>> = handle
                .queued
                .iter()
                .map(|c| c.iter().map(Vec::as_slice).collect())
                .collect();
            transaction_slot(inner, &commands, Some(slot)).await?;
            let ran = run_block(
                inner,
                &conn,
                &node.addr,
                &commands,
                timeout,
                state.deadline(),
            )
            .await;
            if matches!(ran, Ran::Applied(_) | Ran::WatchedChanged) {
                // EXEC ended the watch: the connection is clean again.
                node.give_back(conn);
            }
            match ran {
                Ran::Applied(values) => return Ok(values),
                Ran::WatchedChanged => {
                    // Someone else wrote first: read again and retry. Bounded
                    // by the deadline only; conflicts are not churn.
                    Counters::bump(&inner.counters().watch_conflicts);
                    if state.deadline_passed() {
                        tracing::debug!(elapsed = ?started.elapsed(), "watched keys kept changing");
                        return Err(Error::Conflict {
                            current_version: None,
                        });
                    }
                }
                Ran::NotApplied(failure) => inner.after_failure(&mut state, failure).await?,
                Ran::Fatal(e) => return Err(e),
            }
        }
    }
}

/// A `WATCH` in force, on a connection of its own: read through it, and
/// queue what the transaction applies (see [`Client::watch`]).
pub struct Watched {
    inner: Arc<Inner>,
    conn: Arc<Connection>,
    addr: String,
    timeout: std::time::Duration,
    slot: u16,
    queued: Vec<Vec<Vec<u8>>>,
}

impl Watched {
    /// Runs a command now on the watched connection (a read of the watched
    /// keys, typically); its keys must be in the watched slot.
    ///
    /// # Errors
    /// [`Error::CrossSlot`] for a key of another slot; the server's error;
    /// a routing status (the slot moved: the watch is lost) or a transport
    /// failure, as it came.
    pub async fn cmd<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value, Error> {
        let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
        transaction_slot(&self.inner, std::slice::from_ref(&args), Some(self.slot)).await?;
        let frames = self
            .conn
            .request(&encode(&[&args]), 1, self.timeout)
            .await
            .map_err(|e| conn_error(e, &self.addr))?;
        let first = frames.into_iter().next().unwrap_or(Frame::Null);
        match read_reply(&first, &self.addr, Inside::Multi) {
            Reading::Answer => Ok(from_frame(first)),
            Reading::Fatal(e) => Err(e),
            _ => Err(Error::Status {
                status: KvStatus::Moved,
                attempts: 1,
                stop: zaris_core::StopReason::AttemptsExhausted,
            }),
        }
    }

    /// Queues a command for the transaction.
    pub fn queue<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Self {
        self.queued
            .push(args.iter().map(|a| a.as_ref().to_vec()).collect());
        self
    }
}

impl Transaction {
    /// Adds a command.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> &mut Self {
        self.commands
            .push(args.iter().map(|a| a.as_ref().to_vec()).collect());
        self
    }

    /// Runs the commands between `MULTI` and `EXEC` on the owner of their
    /// slot, as one write on its connection: one value per command. The
    /// transaction is emptied.
    ///
    /// # Errors
    /// [`Error::CrossSlot`] before anything is sent; [`Error::Server`] for a
    /// command the server refused (nothing applied) or failed (`EXEC` ran
    /// the others: their values are lost with it, so prefer checking
    /// types first); [`Error::TransactionUnknown`] when `EXEC` may have been
    /// applied but its reply was lost; the last routing status once the
    /// retries stop.
    pub async fn exec(&mut self) -> Result<Vec<Value>, Error> {
        let commands = std::mem::take(&mut self.commands);
        let inner = &self.inner;
        let refs: Vec<Vec<&[u8]>> = commands
            .iter()
            .map(|c| c.iter().map(Vec::as_slice).collect())
            .collect();
        let slot = transaction_slot(inner, &refs, None).await?.unwrap_or(0);
        let mut state = Retrying::new(inner);
        loop {
            let timeout = state.attempt_timeout(inner.config().attempt_timeout);
            let Some((node, conn)) = attempt_on(inner, &mut state, slot, timeout, false).await?
            else {
                continue;
            };
            match run_block(inner, &conn, &node.addr, &refs, timeout, state.deadline()).await {
                Ran::Applied(values) => return Ok(values),
                Ran::NotApplied(failure) => inner.after_failure(&mut state, failure).await?,
                Ran::WatchedChanged => {
                    // No WATCH here: a nil EXEC means the node discarded it.
                    return Err(Error::Server("EXEC answered nil".into()));
                }
                Ran::Fatal(e) => return Err(e),
            }
        }
    }
}

/// One attempt's node for `slot` and a connection to it (one of its own
/// when `dedicated`). `None` when there is no owner mapped or no
/// connection: nothing was sent, the failure went through the retry
/// machine (its refresh and delay are done), and the caller tries again;
/// also after waiting, unsent, for an owner able to answer (a dead master
/// not yet replaced), as any request waits.
async fn attempt_on(
    inner: &Arc<Inner>,
    state: &mut Retrying,
    slot: u16,
    timeout: Duration,
    dedicated: bool,
) -> Result<Option<(Arc<Node>, Arc<Connection>)>, Error> {
    if inner.waited_for_owner(state, slot).await {
        return Ok(None);
    }
    let node = match inner.map().owner_of_slot(slot) {
        Ok(node) => node.clone(),
        Err(e) => {
            inner.after_failure(state, route_failure(&e)).await?;
            return Ok(None);
        }
    };
    Counters::bump(&inner.counters().attempts);
    let conn = if dedicated {
        node.dedicated(timeout, &inner.config().conn).await
    } else {
        node.connection(timeout, &inner.config().conn).await
    };
    match conn {
        Ok(conn) => Ok(Some((node, conn))),
        Err(e) => {
            let failure = conn_failure(e, &node.addr)?;
            inner.after_failure(state, failure).await?;
            Ok(None)
        }
    }
}

/// The slot every command's keys share (`expected` when given), `None`
/// when none has keys. A command the table lacks is learned first.
async fn transaction_slot(
    inner: &Arc<Inner>,
    commands: &[Vec<&[u8]>],
    expected: Option<u16>,
) -> Result<Option<u16>, Error> {
    let mut slot = expected;
    for args in commands {
        if let (Target::Slot(s), _) = inner.route_learning(args).await? {
            match slot {
                Some(first) if first != s && !inner.map().is_standalone() => {
                    return Err(Error::CrossSlot { first, second: s })
                }
                _ => slot = Some(s),
            }
        }
    }
    Ok(slot)
}

/// What one `MULTI ... EXEC` came to.
enum Ran {
    Applied(Vec<Value>),
    /// `EXEC` answered nil: a watched key changed.
    WatchedChanged,
    /// Nothing was applied; retry the whole block.
    NotApplied(Failure),
    Fatal(Error),
}

/// Sends `MULTI`, the commands and `EXEC` as one write on `conn`.
async fn run_block(
    inner: &Inner,
    conn: &Connection,
    addr: &str,
    commands: &[Vec<&[u8]>],
    timeout: std::time::Duration,
    deadline: Option<tokio::time::Instant>,
) -> Ran {
    let mut block: Vec<&[&[u8]]> = vec![&[b"MULTI"]];
    block.extend(commands.iter().map(Vec::as_slice));
    block.push(&[b"EXEC"]);
    // A block its node holds (a write pause) waits on, to the deadline:
    // it was not lost, and must not run twice.
    let until = tokio::time::Instant::now() + timeout.min(crate::conn::FAR);
    let last = deadline.unwrap_or(until);
    let kind = SlotKind::Write {
        last,
        to: WriteTo::Several,
    };
    let frames = match conn
        .request_as(&encode(&block), block.len(), until, None, kind)
        .await
    {
        Ok(frames) => frames,
        // The write may not have left: a closed connection before sending
        // surfaces as refused; anything else is ambiguous.
        Err(e @ ConnError::Refused(_)) => {
            return match conn_failure(e, addr) {
                Ok(failure) => Ran::NotApplied(failure),
                Err(fatal) => Ran::Fatal(fatal),
            }
        }
        Err(e) => {
            return Ran::Fatal(Error::TransactionUnknown {
                detail: format!("{addr}: {e}"),
            })
        }
    };
    let Some(exec) = frames.last() else {
        return Ran::Fatal(Error::Protocol {
            node: addr.to_owned(),
            detail: "no EXEC reply".into(),
        });
    };
    match exec {
        Frame::Array(values) => Ran::Applied(values.iter().cloned().map(from_frame).collect()),
        Frame::Null => Ran::WatchedChanged,
        Frame::Error(_) => {
            // EXECABORT: a queued command was refused; the first refusal
            // says why (a redirect: nothing applied, the block goes again).
            let refused = frames[..frames.len() - 1]
                .iter()
                .find(|f| matches!(f, Frame::Error(_)))
                .unwrap_or(exec);
            match read_reply(refused, addr, Inside::Multi) {
                Reading::Answer => Ran::Fatal(Error::Protocol {
                    node: addr.to_owned(),
                    detail: "EXEC failed without a reason".into(),
                }),
                reading => match failure_of(inner, reading, addr) {
                    Ok(failure) => Ran::NotApplied(failure),
                    Err(fatal) => Ran::Fatal(fatal),
                },
            }
        }
        other => Ran::Fatal(Error::Protocol {
            node: addr.to_owned(),
            detail: format!("EXEC answered {other:?}"),
        }),
    }
}

/// A reply inside a transaction (to `WATCH`, or the refusal in an
/// `EXECABORT`) from `from` that is no answer, as read by
/// [`read_reply`]: a `MOVED` handled as for any request ([`Inner::moved`]:
/// counted, the hint followed unless it closes a loop), any other churn
/// for the retry loop, the rest surfaced.
fn failure_of(inner: &Inner, reading: Reading, from: &str) -> Result<Failure, Error> {
    match reading {
        Reading::Moved { slot, to } => Ok(inner.moved(slot, from, &to)),
        Reading::Failed(failure) | Reading::Ask { failure, .. } => Ok(failure),
        Reading::Fatal(e) => Err(e),
        Reading::Answer => Err(Error::Protocol {
            node: from.to_owned(),
            detail: "an answer where a refusal was read".into(),
        }),
    }
}

impl Transaction {
    /// Queues `script` with `keys` and `args` as `EVAL` (its source): a
    /// `NOSCRIPT` inside `EXEC` could not be recovered without running the
    /// other commands twice.
    pub fn invoke<K: AsRef<[u8]>, A: AsRef<[u8]>>(
        &mut self,
        script: &Script,
        keys: &[K],
        args: &[A],
    ) -> &mut Self {
        self.cmd(&script.command(true, keys, args))
    }
}
