//! A reply, as a Rust user matches on it. Nothing of the RESP library shows
//! through, so a new major version of it changes nothing for callers.

use bytes::Bytes;
use redis_protocol::resp2::types::BytesFrame;

/// A reply to [`crate::Client::cmd`], a pipeline or a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Null (a missing key, a timed-out blocking pop).
    Nil,
    /// An integer.
    Int(i64),
    /// A bulk string: binary-safe data.
    Data(Bytes),
    /// A simple string (`OK`, `PONG`, `QUEUED`).
    Status(Bytes),
    /// An array.
    Array(Vec<Value>),
    /// An error nested in an array (a failed command of a transaction); a
    /// top-level error reply is [`crate::Error::Server`] instead.
    Error(String),
}

impl Value {
    /// The bytes of a bulk or simple string.
    #[must_use]
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Data(b) | Value::Status(b) => Some(b),
            _ => None,
        }
    }

    /// The integer, or a bulk string that spells one (`GET` of a counter).
    #[must_use]
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Data(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// Whether it is the simple string `OK`.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        matches!(self, Value::Status(s) if &s[..] == b"OK")
    }

    /// The elements of an array (an empty list for anything else but nil).
    #[must_use]
    pub fn into_array(self) -> Vec<Value> {
        match self {
            Value::Array(items) => items,
            Value::Nil => Vec::new(),
            other => vec![other],
        }
    }
}

/// A frame off the wire as a [`Value`].
pub(crate) fn from_frame(frame: BytesFrame) -> Value {
    match frame {
        BytesFrame::Null => Value::Nil,
        BytesFrame::Integer(i) => Value::Int(i),
        BytesFrame::BulkString(b) => Value::Data(b),
        BytesFrame::SimpleString(s) => Value::Status(s),
        BytesFrame::Array(items) => Value::Array(items.into_iter().map(from_frame).collect()),
        BytesFrame::Error(e) => Value::Error(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_become_values() {
        let frame = BytesFrame::Array(vec![
            BytesFrame::Integer(3),
            BytesFrame::BulkString("12".into()),
            BytesFrame::SimpleString("OK".into()),
            BytesFrame::Null,
            BytesFrame::Error("WRONGTYPE no".into()),
        ]);
        let items = from_frame(frame).into_array();
        assert_eq!(items[0].as_int(), Some(3));
        assert_eq!(items[1].as_int(), Some(12));
        assert_eq!(items[1].as_bytes(), Some(&b"12"[..]));
        assert!(items[2].is_ok());
        assert_eq!(items[3], Value::Nil);
        assert_eq!(items[4], Value::Error("WRONGTYPE no".into()));
        assert!(Value::Nil.into_array().is_empty());
    }
}
