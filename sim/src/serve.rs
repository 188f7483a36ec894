//! The model's sockets on turmoil's network: each node listens on its port
//! of the `cluster` host; each connection has a reader (commands in, run
//! against the model, blocking where Redis blocks) and a writer (replies
//! and pushes out). The faults a process or a proxy causes act here, as
//! they act on real bytes: a killed node closes its connections and
//! refuses new ones; a frozen or partitioned node reads nothing and sends
//! nothing (what was sent waits, as across a real partition, and arrives
//! if it heals); a one-way cut holds the replies alone; latency delays
//! each reply; a trickle sends a few bytes at a time.

use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use turmoil::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use zaris_tests::proxy::Flow;

use crate::commands::Step;
use crate::effect::Effect;
use crate::model::{now, Life, Shared};
use crate::resp::{take_command, Reply};

/// How often the cluster's clockwork turns (replication, gossip, failure
/// detection).
const TICK: Duration = Duration::from_millis(5);

/// The `cluster` host's software: every node's listener and the
/// clockwork, until the simulation ends.
///
/// # Errors
/// A listener could not bind.
pub async fn cluster(model: Shared) -> turmoil::Result {
    let count = model.borrow().nodes.len();
    for i in 0..count {
        tokio::task::spawn_local(listen(model.clone(), i));
    }
    loop {
        model.borrow_mut().tick();
        tokio::time::sleep(TICK).await;
    }
}

/// Node `i`'s port: listening while it runs. While it is dead or stopped
/// nothing listens there, so a connection is refused, as the kernel
/// refuses it.
async fn listen(model: Shared, i: usize) {
    let (port, changed) = {
        let m = model.borrow();
        (m.nodes[i].port, m.nodes[i].changed.clone())
    };
    let up = || model.borrow().nodes[i].life == Life::Up;
    loop {
        until(&changed, up).await;
        if !up() {
            continue;
        }
        let Ok(listener) = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await else {
            return;
        };
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { return };
                    let id = model.borrow_mut().open(i);
                    let (reader, writer) = stream.into_split();
                    tokio::task::spawn_local(read(model.clone(), id, reader));
                    tokio::task::spawn_local(write(model.clone(), id, writer));
                }
                // Any change wakes this; only a stop closes the port. A
                // listener dropped and bound again would refuse whatever
                // was waiting in its accept queue, which no server does.
                () = until(&changed, || !up()) => if !up() { break },
            }
        }
    }
}

/// Waits for `notify` unless `ready` holds now (checked with the waiter
/// registered, so no wake-up is lost). Any notification ends the wait,
/// whether or not `ready` holds then: callers look again at what changed.
async fn until(notify: &Notify, mut ready: impl FnMut() -> bool) {
    let mut notified = pin!(notify.notified());
    notified.as_mut().enable();
    if !ready() {
        notified.await;
    }
}

/// Whether connection `id` was closed by its node.
fn closed(model: &Shared, id: u64) -> bool {
    let m = model.borrow();
    m.conns.get(&id).is_none_or(|c| {
        c.closed || m.nodes[c.node].generation != c.generation || m.nodes[c.node].life != Life::Up
    })
}

/// The reader: commands off the wire, run in order, one at a time.
async fn read(model: Shared, id: u64, mut reader: OwnedReadHalf) {
    let node = model.borrow().conns[&id].node;
    let changed = model.borrow().nodes[node].changed.clone();
    let mut buf = BytesMut::with_capacity(4096);
    'serve: loop {
        // A frozen or cut-off node reads nothing; what was sent waits.
        let mut held = false;
        loop {
            if closed(&model, id) {
                break 'serve;
            }
            if model.borrow().nodes[node].reads() {
                break;
            }
            if !held {
                held = true;
                let why = if model.borrow().nodes[node].frozen {
                    Effect::ConnectionsHeldByAFreeze
                } else {
                    Effect::ConnectionsHeldByAPartition
                };
                model.borrow_mut().count(why, 1);
            }
            until(&changed, || {
                model.borrow().nodes[node].reads() || closed(&model, id)
            })
            .await;
        }
        match take_command(&mut buf) {
            Ok(Some(args)) => {
                // A write pause holds a write, and everything behind it on
                // this connection; the node stays alive and answers others.
                let mut counted = false;
                loop {
                    let left = model.borrow().held_by_pause(id, node, &args);
                    let Some(left) = left else { break };
                    if !counted {
                        counted = true;
                        model.borrow_mut().count(Effect::WritesHeldByAPause, 1);
                    }
                    // Redis still reads a held client's socket: one that
                    // closes is freed, and its held command never runs (a
                    // `BLPOP` whose caller gave up pops nothing).
                    tokio::select! {
                        () = tokio::time::sleep(left) => {}
                        () = until(&changed, || closed(&model, id)) => {}
                        read = reader.read_buf(&mut buf) => match read {
                            Ok(0) | Err(_) => break 'serve,
                            Ok(_) => {}
                        },
                    }
                    if closed(&model, id) {
                        break 'serve;
                    }
                }
                if !run(&model, id, node, &changed, &args).await {
                    break 'serve;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                model
                    .borrow_mut()
                    .send(id, &Reply::Error(format!("ERR {e}")));
                break 'serve;
            }
        }
        tokio::select! {
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => break 'serve,
                Ok(_) => {}
            },
            () = until(&changed, || closed(&model, id)) => {}
        }
    }
    // The client's end closed, or the node closed it: the writer stops too.
    let mut m = model.borrow_mut();
    if let Some(c) = m.conns.get_mut(&id) {
        c.closed = true;
        c.wake.notify_one();
    }
}

/// Runs one command, blocking as Redis blocks; whether the connection
/// goes on.
async fn run(model: &Shared, id: u64, node: usize, changed: &Rc<Notify>, args: &[Vec<u8>]) -> bool {
    let mut deadline: Option<Option<tokio::time::Instant>> = None;
    let master = || {
        let m = model.borrow();
        m.nodes[node].view.is_master(node)
    };
    let was_master = master();
    loop {
        let written = model.borrow().nodes[node].written.clone();
        let mut woken = pin!(written.notified());
        woken.as_mut().enable();
        let step = model.borrow_mut().execute(id, args);
        let reply = match step {
            Step::Reply(reply) => reply,
            Step::Close(reply) => {
                finish(model, id, node, args, &reply);
                return false;
            }
            Step::Block(timeout) => {
                let deadline = *deadline
                    .get_or_insert_with(|| timeout.map(|t| tokio::time::Instant::now() + t));
                let expired = deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
                if expired {
                    let reply = model.borrow_mut().timed_out(id, args);
                    finish(model, id, node, args, &reply);
                    return true;
                }
                let far = tokio::time::Instant::now() + Duration::from_secs(3600);
                tokio::select! {
                    () = woken => {}
                    () = tokio::time::sleep_until(deadline.unwrap_or(far)) => {}
                    () = until(changed, || closed(model, id)) => {}
                }
                if closed(model, id) {
                    return false;
                }
                // A frozen node does not wake its blocked clients.
                until(changed, || {
                    model.borrow().nodes[node].reads() || closed(model, id)
                })
                .await;
                if was_master && !master() {
                    // Redis lets every blocked client go when a master turns
                    // replica (`disconnectAllBlockedClients`).
                    let reply = Reply::Error(
                        "UNBLOCKED force unblock from blocking operation, instance state \
                         changed (master -> replica?)"
                            .into(),
                    );
                    model.borrow_mut().count(Effect::BlockedLetGoByADemotion, 1);
                    finish(model, id, node, args, &reply);
                    return true;
                }
                continue;
            }
        };
        finish(model, id, node, args, &reply);
        return true;
    }
}

/// Sends `reply` and traces the attempt.
fn finish(model: &Shared, id: u64, node: usize, args: &[Vec<u8>], reply: &Reply) {
    let mut m = model.borrow_mut();
    let map = |a: &[u8]| a.eq_ignore_ascii_case(b"SHARDS") || a.eq_ignore_ascii_case(b"SLOTS");
    let partial = m.nodes[node].heard.is_some() && args.get(1).is_some_and(|a| map(a));
    let brief = if partial {
        m.count(Effect::MapsFromAPartialView, 1);
        "partial map".to_owned()
    } else {
        reply.brief()
    };
    m.trace.attempt(now(), node, id, args, &brief);
    match brief.as_str() {
        "MOVED" => m.count(Effect::MovedAnswered, 1),
        "ASK" => m.count(Effect::AskAnswered, 1),
        "TRYAGAIN" => m.count(Effect::TryagainAnswered, 1),
        _ => {}
    }
    m.send(id, reply);
}

/// The writer: what the node sent, out through the faults in front of it.
async fn write(model: Shared, id: u64, mut writer: OwnedWriteHalf) {
    let (node, wake) = {
        let m = model.borrow();
        let c = &m.conns[&id];
        (c.node, c.wake.clone())
    };
    let changed = model.borrow().nodes[node].changed.clone();
    let mut held = false;
    loop {
        if closed(&model, id) {
            break;
        }
        let (front, faults, reachable) = {
            let m = model.borrow();
            let n = &m.nodes[node];
            let front = m.conns[&id].out.front().map(|(at, b)| (*at, b.len()));
            (front, n.faults, n.reachable())
        };
        let Some((produced, len)) = front else {
            held = false;
            tokio::select! {
                () = wake.notified() => {}
                () = until(&changed, || closed(&model, id)) => {}
            }
            continue;
        };
        if !reachable || faults.to_client == Flow::Stopped {
            if !held {
                held = true;
                let why = if faults.to_client == Flow::Stopped && reachable {
                    Effect::RepliesHeldByAOneWayCut
                } else {
                    Effect::RepliesHeldByAFreezeOrPartition
                };
                model.borrow_mut().count(why, 1);
            }
            tokio::select! {
                () = wake.notified() => {}
                () = until(&changed, || closed(&model, id)) => {}
            }
            continue;
        }
        held = false;
        let due = produced + faults.latency;
        if due > now() {
            model.borrow_mut().count(Effect::RepliesDelayedByLatency, 1);
            tokio::select! {
                () = tokio::time::sleep(due - now()) => {}
                () = until(&changed, || closed(&model, id)) => {}
            }
            continue;
        }
        let chunk = match faults.to_client {
            Flow::Trickle { bytes_per_sec } => {
                // A hundredth of a second's worth at a time.
                let n = (bytes_per_sec as usize / 100).max(1).min(len);
                model.borrow_mut().count(Effect::BytesTrickled, n as u64);
                n
            }
            _ => len,
        };
        let bytes: Vec<u8> = {
            let mut m = model.borrow_mut();
            let out = &mut m.conns.get_mut(&id).expect("open").out;
            let (_, front) = out.front_mut().expect("a front");
            let bytes: Vec<u8> = front.drain(..chunk).collect();
            if front.is_empty() {
                out.pop_front();
            }
            bytes
        };
        if writer.write_all(&bytes).await.is_err() {
            break;
        }
        if chunk < len {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let _ = writer.shutdown().await;
    model.borrow_mut().close(id);
}
