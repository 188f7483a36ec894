//! A bare cluster client: the floor the single-command and pipeline
//! scenarios hold Zaris's cost against.
//!
//! It does only what every client that shares one connection per node
//! among many tasks must do, in the cheapest way tokio allows:
//! - the slot map is read once, at connect (`CLUSTER SLOTS`), and never
//!   refreshed;
//! - a caller encodes its command into its node's buffer under a lock,
//!   queues a `oneshot` for the reply, and wakes the node's task if no
//!   wake is pending;
//! - one task per node yields once after that wake, so that callers on the
//!   other worker add their commands, then writes them all in one call;
//!   it reads replies with one large buffer, finds where each ends
//!   (redis-protocol's range decoder, no copy), and answers its caller.
//!
//! No redirections, retries, time-outs, reconnects, reply values or
//! statuses: a `MOVED`, an error reply, bytes that are not RESP2 or a
//! closed connection is an error.
//! What it costs per operation is what the runtime, the kernel and the
//! bench loop cost, with as little client as a shared connection allows;
//! `just bench-client` prints it beside the three clients. Not a product,
//! and not recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use redis_protocol::error::RedisProtocolError;
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};
use zaris_core::slot_for_key;
use zaris_tests::{Frame, RespConn};

#[derive(Clone)]
pub struct Bare {
    /// Each slot's node, an index into `nodes`.
    owner: Arc<[u8]>,
    nodes: Arc<[Arc<Node>]>,
}

/// One node's connection, as its callers see it.
struct Node {
    queue: Mutex<Queue>,
    flush: Notify,
}

/// A caller's commands on one node: answered when its last reply comes,
/// with whether none was an error.
struct Waiting {
    answer: oneshot::Sender<bool>,
    left: usize,
    ok: bool,
}

#[derive(Default)]
struct Queue {
    /// Encoded commands not yet written.
    out: Vec<u8>,
    /// The callers waiting, in the order of their commands.
    waiting: VecDeque<Waiting>,
    /// Whether the node's task has been asked to write `out`.
    asked: bool,
    /// Whether the connection has closed.
    closed: bool,
}

impl Bare {
    pub async fn connect(seeds: &[String]) -> Result<Bare, String> {
        let seed = seeds.first().ok_or("no seed")?;
        let slots = RespConn::connect(seed)
            .and_then(|mut c| c.command(&[b"CLUSTER", b"SLOTS"]))
            .map_err(|e| format!("CLUSTER SLOTS: {e}"))?;
        let Frame::Array(ranges) = slots else {
            return Err(format!("CLUSTER SLOTS answered {slots:?}"));
        };
        let mut addrs: Vec<String> = Vec::new();
        let mut owner = vec![u8::MAX; 16_384];
        for range in &ranges {
            let Frame::Array(parts) = range else { continue };
            let [Frame::Integer(start), Frame::Integer(end), Frame::Array(master), ..] = &parts[..]
            else {
                continue;
            };
            let [Frame::BulkString(host), Frame::Integer(port), ..] = &master[..] else {
                continue;
            };
            let addr = format!("{}:{port}", String::from_utf8_lossy(host));
            let index = addrs.iter().position(|a| *a == addr).unwrap_or_else(|| {
                addrs.push(addr);
                addrs.len() - 1
            });
            for slot in owner
                .get_mut(*start as usize..=*end as usize)
                .unwrap_or_default()
            {
                *slot = u8::try_from(index).map_err(|_| "more than 255 masters")?;
            }
        }
        if owner.contains(&u8::MAX) {
            return Err("a slot has no owner".to_owned());
        }
        let mut nodes = Vec::new();
        for addr in &addrs {
            let stream = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("{addr}: {e}"))?;
            stream.set_nodelay(true).map_err(|e| e.to_string())?;
            let node = Arc::new(Node {
                queue: Mutex::default(),
                flush: Notify::new(),
            });
            tokio::spawn(drive(stream, node.clone()));
            nodes.push(node);
        }
        Ok(Bare {
            owner: owner.into(),
            nodes: nodes.into(),
        })
    }

    /// Sends `args` (the key second) to the key's node; whether the reply
    /// was not an error.
    pub async fn call(&self, args: &[&[u8]]) -> Result<(), String> {
        let key = args.get(1).ok_or("no key")?;
        let node = usize::from(self.owner[usize::from(slot_for_key(key))]);
        match self.send(node, &[args]).await? {
            true => Ok(()),
            false => Err("an error reply".to_owned()),
        }
    }

    /// Sends each line of `batch` (the key second) to its key's node, each
    /// node's share together; how many shares had an error reply.
    pub async fn pipeline(&self, batch: &[Vec<&[u8]>]) -> Result<usize, String> {
        let mut shares: Vec<Vec<&[&[u8]]>> = vec![Vec::new(); self.nodes.len()];
        for args in batch {
            let key = args.get(1).ok_or("no key")?;
            shares[usize::from(self.owner[usize::from(slot_for_key(key))])].push(args);
        }
        let sent: Vec<_> = shares
            .iter()
            .enumerate()
            .filter(|(_, share)| !share.is_empty())
            .map(|(node, share)| self.send(node, share))
            .collect();
        let mut failed = 0;
        for answer in sent {
            failed += usize::from(!answer.await?);
        }
        Ok(failed)
    }

    /// Queues `lines` on node `node` and waits for their replies: whether
    /// none was an error. (The lines are queued before the first await,
    /// so a pipeline's shares go out together.)
    fn send(
        &self,
        node: usize,
        lines: &[&[&[u8]]],
    ) -> impl std::future::Future<Output = Result<bool, String>> {
        let node = &self.nodes[node];
        let (reply, answer) = oneshot::channel();
        let queued = {
            let mut queue = node.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.closed {
                Err("the connection closed".to_owned())
            } else {
                for args in lines {
                    encode(&mut queue.out, args);
                }
                queue.waiting.push_back(Waiting {
                    answer: reply,
                    left: lines.len(),
                    ok: true,
                });
                Ok(!std::mem::replace(&mut queue.asked, true))
            }
        };
        if queued == Ok(true) {
            node.flush.notify_one();
        }
        async move {
            queued?;
            answer.await.map_err(|_| "the connection closed".to_owned())
        }
    }
}

/// `args` as a RESP array of bulk strings.
fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    let mut number = [0; 20];
    out.push(b'*');
    out.extend_from_slice(format_len(&mut number, args.len()));
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(format_len(&mut number, arg.len()));
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// `n` in decimal, in `buffer`'s tail.
fn format_len(buffer: &mut [u8; 20], mut n: usize) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buffer[at..];
        }
    }
}

/// Where the first whole reply in `input` ends, and whether it is not an
/// error; `Ok(None)` until it has all arrived, `Err` for bytes that are not
/// RESP2. redis-protocol's range decoder: it finds the reply's bounds
/// without copying or allocating.
fn reply(input: &[u8]) -> Result<Option<(usize, bool)>, RedisProtocolError> {
    Ok(decode_range(input)?.map(|(frame, len)| (len, !matches!(frame, RangeFrame::Error(_)))))
}

/// A node's task: writes what its callers queue, answers them in order.
async fn drive(stream: TcpStream, node: Arc<Node>) {
    let (mut reader, mut writer) = stream.into_split();
    let mut sending = Vec::new();
    let mut input = vec![0u8; 64 * 1024];
    let mut filled = 0;
    loop {
        tokio::select! {
            biased;
            // A read shorter than the room left clears the socket's
            // readiness (tokio's `poll_read`): no second `recv` to learn
            // that it is empty.
            read = reader.read(&mut input[filled..]) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => filled += n,
                }
                let mut at = 0;
                let mut queue = node.queue.lock().unwrap_or_else(PoisonError::into_inner);
                let garbled = loop {
                    match reply(&input[at..filled]) {
                        Ok(Some((len, ok))) => {
                            at += len;
                            if let Some(front) = queue.waiting.front_mut() {
                                front.ok &= ok;
                                front.left -= 1;
                                if front.left == 0 {
                                    if let Some(done) = queue.waiting.pop_front() {
                                        let _ = done.answer.send(done.ok);
                                    }
                                }
                            }
                        }
                        Ok(None) => break false,
                        Err(_) => break true,
                    }
                };
                drop(queue);
                if garbled {
                    break;
                }
                input.copy_within(at..filled, 0);
                filled -= at;
                if filled == input.len() {
                    input.resize(input.len() * 2, 0);
                }
            }
            () = node.flush.notified() => {
                tokio::task::yield_now().await;
                {
                    let mut queue = node.queue.lock().unwrap_or_else(PoisonError::into_inner);
                    std::mem::swap(&mut queue.out, &mut sending);
                    queue.asked = false;
                }
                if writer.write_all(&sending).await.is_err() {
                    break;
                }
                sending.clear();
            }
        }
    }
    // The callers left waiting learn the connection closed.
    let mut queue = node.queue.lock().unwrap_or_else(PoisonError::into_inner);
    queue.closed = true;
    queue.waiting.clear();
}
