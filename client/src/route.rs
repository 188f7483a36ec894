//! Where a request goes, and the request as it is sent: [`Route`] (a
//! slot's owner, or a given node; the one way a request is routed, apart
//! from `ReadFrom`, the policy that may send a read to a replica, and the
//! core's `Target`, where a command line's keys say it goes), and
//! [`Packed`], a command encoded once and sent as is on every attempt.

use std::sync::Arc;

use bytes::Bytes;

use crate::codec::encode;
use crate::pool::Node;

/// Where an attempt goes.
#[derive(Clone)]
pub(crate) enum Route {
    /// The owner of a slot in the current map.
    Slot(u16),
    /// A given node.
    Node(Arc<Node>),
}

impl Route {
    pub(crate) fn slot(&self) -> Option<u16> {
        match self {
            Route::Slot(slot) => Some(*slot),
            Route::Node(_) => None,
        }
    }
}

/// A command (or a few sent back to back), encoded once and sent as is on
/// every attempt.
#[derive(Clone)]
pub(crate) struct Packed {
    pub(crate) name: &'static str,
    pub(crate) bytes: Bytes,
    /// Replies it produces (a write with `WAIT` produces two).
    pub(crate) replies: usize,
    /// A blocking command (`BLPOP`): sent on a connection of its own, so it
    /// holds up no one else's replies, and allowed the whole deadline.
    pub(crate) blocking: bool,
    /// A read (the servers flag it read-only): a replica may serve it.
    pub(crate) read: bool,
}

impl Packed {
    /// `bytes`, encoded already, producing `replies` replies: neither
    /// blocking nor a read until said ([`Packed::reading`],
    /// [`Packed::flagged`]). The one way a `Packed` is made.
    pub(crate) fn new(name: &'static str, bytes: Bytes, replies: usize) -> Self {
        Self {
            name,
            bytes,
            replies,
            blocking: false,
            read: false,
        }
    }

    /// The same command, marked as a read.
    pub(crate) fn reading(mut self) -> Self {
        self.read = true;
        self
    }

    /// The same command, blocking and a read as the core's key specs say.
    pub(crate) fn flagged(mut self, blocking: bool, read: bool) -> Self {
        self.blocking = blocking;
        self.read = read;
        self
    }
}

/// `commands` encoded back to back.
pub(crate) fn pack(name: &'static str, commands: &[&[&[u8]]]) -> Packed {
    Packed::new(name, encode(commands), commands.len())
}

/// The requests a call of [`Inner::execute_all`] runs, by number: a list
/// of packed commands, or a pipeline's buffer.
pub(crate) trait Requests {
    fn count(&self) -> usize;
    /// Where it goes.
    fn route(&self, i: usize) -> &Route;
    /// The command's name (for metrics).
    fn name(&self, i: usize) -> &'static str;
    /// The request's encoded bytes.
    fn bytes(&self, i: usize) -> &[u8];
    fn replies(&self, i: usize) -> usize;
    fn blocking(&self, i: usize) -> bool;
    /// Whether a replica may serve it (`Builder::read_from`).
    fn read(&self, i: usize) -> bool;
    /// Request `i` was replied to by `node` (after an `ASKING` if
    /// `asked`), with an answer, an error or a redirect (a later attempt's
    /// reply comes after it): the client cache ties what it stores to the
    /// node that said it, and a function a node lacked is loaded there.
    fn answered(&self, i: usize, node: &Arc<Node>, asked: bool) {
        let _ = (i, node, asked);
    }
}

/// Who answered a request, and whether after an `ASKING`.
type AnsweredBy = Option<(Arc<Node>, bool)>;

/// Requests whose answering nodes are noted ([`Requests::answered`]).
pub(crate) struct Noting<'a, R: ?Sized> {
    pub(crate) requests: &'a R,
    pub(crate) by: std::sync::Mutex<Vec<AnsweredBy>>,
}

impl<'a, R: Requests + ?Sized> Noting<'a, R> {
    pub(crate) fn new(requests: &'a R) -> Self {
        Self {
            requests,
            by: std::sync::Mutex::new(vec![None; requests.count()]),
        }
    }

    /// Who answered request `i`, and whether after an `ASKING`.
    pub(crate) fn by(&self, i: usize) -> AnsweredBy {
        self.by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(i)
            .cloned()
            .flatten()
    }
}

impl<R: Requests + ?Sized> Requests for Noting<'_, R> {
    fn count(&self) -> usize {
        self.requests.count()
    }

    fn route(&self, i: usize) -> &Route {
        self.requests.route(i)
    }

    fn name(&self, i: usize) -> &'static str {
        self.requests.name(i)
    }

    fn bytes(&self, i: usize) -> &[u8] {
        self.requests.bytes(i)
    }

    fn replies(&self, i: usize) -> usize {
        self.requests.replies(i)
    }

    fn blocking(&self, i: usize) -> bool {
        self.requests.blocking(i)
    }

    fn read(&self, i: usize) -> bool {
        self.requests.read(i)
    }

    fn answered(&self, i: usize, node: &Arc<Node>, asked: bool) {
        if let Some(at) = self
            .by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_mut(i)
        {
            *at = Some((node.clone(), asked));
        }
    }
}

impl Requests for [(Route, Packed)] {
    fn count(&self) -> usize {
        self.len()
    }

    fn route(&self, i: usize) -> &Route {
        &self[i].0
    }

    fn name(&self, i: usize) -> &'static str {
        self[i].1.name
    }

    fn bytes(&self, i: usize) -> &[u8] {
        &self[i].1.bytes
    }

    fn replies(&self, i: usize) -> usize {
        self[i].1.replies
    }

    fn blocking(&self, i: usize) -> bool {
        self[i].1.blocking
    }

    fn read(&self, i: usize) -> bool {
        self[i].1.read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_encoded_as_resp_arrays() {
        let packed = pack("SET", &[&[b"SET", b"k", b"v"], &[b"WAIT", b"1", b"100"]]);
        assert_eq!(
            &packed.bytes[..],
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n"
        );
        assert_eq!(packed.replies, 2);
    }
}
