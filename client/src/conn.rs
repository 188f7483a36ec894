//! One multiplexed, pipelined connection to one node.
//!
//! Callers hand the writer task encoded commands over a channel; it writes
//! whatever is queued in one go (pipelining) and passes each request's
//! reply slot, in order, to the reader task, which parses replies with
//! `redis-protocol` and completes the slots first-in first-out. Requests
//! from any number of tasks share the socket; a caller that stops waiting
//! (deadline) leaves its slot behind, and its reply is read and dropped, so
//! the order never slips.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use zaris_core::TransportFailure;

/// Why a request on a connection got no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConnError {
    /// Nothing listens there (or the connect was refused).
    Refused(String),
    /// The connection closed or broke.
    Reset(String),
    /// No reply (or no connection) within the time allowed.
    TimedOut,
    /// The node sent bytes that are not RESP, or a reply nobody asked for.
    Protocol(String),
    /// A reply larger than the configured limit.
    TooLarge { limit: usize },
}

impl ConnError {
    /// The retry machine's name for it.
    pub(crate) fn failure(&self) -> TransportFailure {
        match self {
            ConnError::Refused(_) => TransportFailure::ConnectionRefused,
            ConnError::Reset(_) => TransportFailure::ConnectionReset,
            ConnError::TimedOut => TransportFailure::TimedOut,
            ConnError::Protocol(_) | ConnError::TooLarge { .. } => TransportFailure::Other,
        }
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Refused(e) => write!(f, "connection refused: {e}"),
            ConnError::Reset(e) => write!(f, "connection lost: {e}"),
            ConnError::TimedOut => f.write_str("timed out"),
            ConnError::Protocol(e) => write!(f, "protocol violation: {e}"),
            ConnError::TooLarge { limit } => write!(f, "reply larger than {limit} bytes"),
        }
    }
}

/// One request: its encoded commands and how many replies they produce.
struct Request {
    bytes: Bytes,
    replies: usize,
    done: oneshot::Sender<Result<Vec<BytesFrame>, ConnError>>,
}

/// A reply slot, passed from the writer to the reader in send order.
struct Pending {
    replies: usize,
    done: oneshot::Sender<Result<Vec<BytesFrame>, ConnError>>,
}

/// A live connection; cheap to share (`Arc`), closed when the last handle
/// and both tasks are gone or the socket fails.
pub(crate) struct Connection {
    requests: mpsc::Sender<Request>,
    alive: Arc<AtomicBool>,
}

/// Limits a connection enforces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The largest reply accepted; larger ones close the connection.
    pub max_reply_bytes: usize,
}

impl Connection {
    /// Connects to `addr` within `timeout`.
    pub(crate) async fn connect(
        addr: &str,
        timeout: Duration,
        limits: Limits,
    ) -> Result<Self, ConnError> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Err(_) => return Err(ConnError::TimedOut),
            Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(ConnError::Refused(format!("{addr}: {e}")))
            }
            Ok(Err(e)) => return Err(ConnError::Refused(format!("{addr}: {e}"))),
            Ok(Ok(stream)) => stream,
        };
        stream
            .set_nodelay(true)
            .map_err(|e| ConnError::Reset(e.to_string()))?;
        let (read, write) = stream.into_split();
        let (requests, queue) = mpsc::channel(4096);
        let (pending_tx, pending_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = watch::channel(false);
        let alive = Arc::new(AtomicBool::new(true));
        tokio::spawn(write_loop(
            write,
            queue,
            pending_tx,
            closed_rx.clone(),
            alive.clone(),
            closed_tx.clone(),
        ));
        tokio::spawn(read_loop(
            read,
            pending_rx,
            closed_rx,
            alive.clone(),
            closed_tx,
            limits,
            addr.to_owned(),
        ));
        tracing::debug!(addr, "connected");
        Ok(Self { requests, alive })
    }

    /// Whether the socket is still believed good.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Sends `bytes` (one or more encoded commands producing `replies`
    /// replies, sent back to back) and waits up to `timeout` for the replies.
    pub(crate) async fn request(
        &self,
        bytes: Bytes,
        replies: usize,
        timeout: Duration,
    ) -> Result<Vec<BytesFrame>, ConnError> {
        let (done, reply) = oneshot::channel();
        let send = self.requests.send(Request {
            bytes,
            replies,
            done,
        });
        let wait = async {
            send.await
                .map_err(|_| ConnError::Reset("connection closed".into()))?;
            reply
                .await
                .map_err(|_| ConnError::Reset("connection closed".into()))?
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(ConnError::TimedOut))
    }
}

async fn write_loop(
    mut socket: tokio::net::tcp::OwnedWriteHalf,
    mut queue: mpsc::Receiver<Request>,
    pending: mpsc::UnboundedSender<Pending>,
    mut closed: watch::Receiver<bool>,
    alive: Arc<AtomicBool>,
    close: watch::Sender<bool>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        let first = tokio::select! {
            request = queue.recv() => match request {
                Some(request) => request,
                None => break, // every handle dropped
            },
            _ = closed.wait_for(|c| *c) => break,
        };
        buf.clear();
        let mut next = Some(first);
        while let Some(request) = next.take() {
            if let Err(back) = pending.send(Pending {
                replies: request.replies,
                done: request.done,
            }) {
                let _ = back
                    .0
                    .done
                    .send(Err(ConnError::Reset("connection closed".into())));
                continue;
            }
            buf.extend_from_slice(&request.bytes);
            if buf.len() < 64 * 1024 {
                next = queue.try_recv().ok();
            }
        }
        if let Err(e) = socket.write_all(&buf).await {
            tracing::debug!(error = %e, "write failed");
            break;
        }
    }
    alive.store(false, Ordering::Release);
    let _ = close.send(true);
    // Requests still queued get a clear answer instead of a dropped channel.
    queue.close();
    while let Ok(request) = queue.try_recv() {
        let _ = request
            .done
            .send(Err(ConnError::Reset("connection closed".into())));
    }
}

async fn read_loop(
    mut socket: tokio::net::tcp::OwnedReadHalf,
    mut pending: mpsc::UnboundedReceiver<Pending>,
    mut closed: watch::Receiver<bool>,
    alive: Arc<AtomicBool>,
    close: watch::Sender<bool>,
    limits: Limits,
    addr: String,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut current: Option<(Pending, Vec<BytesFrame>)> = None;
    let error = loop {
        match next_frame(&mut buf, limits) {
            Ok(Some(frame)) => {
                let (slot, mut frames) = match current.take() {
                    Some(entry) => entry,
                    None => match pending.try_recv() {
                        Ok(slot) => (slot, Vec::new()),
                        Err(_) => {
                            break ConnError::Protocol(format!(
                                "{addr} sent a reply nobody asked for: {frame:?}"
                            ))
                        }
                    },
                };
                frames.push(frame);
                if frames.len() >= slot.replies {
                    let _ = slot.done.send(Ok(frames));
                } else {
                    current = Some((slot, frames));
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => break e,
        }
        tokio::select! {
            read = socket.read_buf(&mut buf) => match read {
                Ok(0) => break ConnError::Reset(format!("{addr} closed the connection")),
                Ok(_) => {}
                Err(e) => break ConnError::Reset(format!("{addr}: {e}")),
            },
            _ = closed.wait_for(|c| *c) => break ConnError::Reset(format!("{addr}: write failed")),
        }
    };
    tracing::debug!(addr, %error, "connection closed");
    alive.store(false, Ordering::Release);
    let _ = close.send(true);
    if let Some((slot, _)) = current {
        let _ = slot.done.send(Err(error.clone()));
    }
    pending.close();
    while let Ok(slot) = pending.try_recv() {
        let _ = slot.done.send(Err(error.clone()));
    }
}

/// The next complete frame in `buf`, `None` when more bytes are needed.
fn next_frame(buf: &mut BytesMut, limits: Limits) -> Result<Option<BytesFrame>, ConnError> {
    if buf.is_empty() {
        return Ok(None);
    }
    if let Some(declared) = declared_len(buf) {
        if declared > limits.max_reply_bytes {
            return Err(ConnError::TooLarge {
                limit: limits.max_reply_bytes,
            });
        }
    }
    match decode_bytes_mut(buf) {
        Ok(Some((frame, _, _))) => Ok(Some(frame)),
        Ok(None) if buf.len() > limits.max_reply_bytes => Err(ConnError::TooLarge {
            limit: limits.max_reply_bytes,
        }),
        Ok(None) => Ok(None),
        Err(e) => Err(ConnError::Protocol(e.to_string())),
    }
}

/// The length a bulk-string header at the front of `buf` declares, so an
/// oversized reply is refused before it is buffered.
fn declared_len(buf: &[u8]) -> Option<usize> {
    let rest = buf.strip_prefix(b"$")?;
    let end = rest.iter().position(|&b| b == b'\r')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_reply_bytes: 64,
    };

    #[test]
    fn frames_are_parsed_one_at_a_time() {
        let mut buf = BytesMut::from(&b"+OK\r\n:42\r\n$3\r\nab"[..]);
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(Some(BytesFrame::SimpleString("OK".into())))
        );
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(Some(BytesFrame::Integer(42)))
        );
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(None),
            "incomplete bulk string"
        );
        buf.extend_from_slice(b"c\r\n");
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(Some(BytesFrame::BulkString("abc".into())))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn garbage_and_oversized_replies_are_typed_errors() {
        let mut garbage = BytesMut::from(&b"hello world\r\n"[..]);
        assert!(matches!(
            next_frame(&mut garbage, LIMITS),
            Err(ConnError::Protocol(_))
        ));
        let mut huge = BytesMut::from(&b"$1000000\r\n"[..]);
        assert_eq!(
            next_frame(&mut huge, LIMITS),
            Err(ConnError::TooLarge { limit: 64 })
        );
        let mut long_array = BytesMut::from(&b"*100\r\n"[..]);
        long_array.extend_from_slice(&b":1\r\n".repeat(20));
        assert_eq!(
            next_frame(&mut long_array, LIMITS),
            Err(ConnError::TooLarge { limit: 64 })
        );
    }
}
