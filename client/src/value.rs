//! Replies to raw commands.

use bytes::Bytes;
use redis_protocol::resp2::types::BytesFrame;

/// A reply to [`crate::Client::command`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Null.
    Nil,
    /// An integer.
    Int(i64),
    /// A bulk string.
    Data(Bytes),
    /// A simple string (`OK`, `PONG`).
    Status(Bytes),
    /// An array.
    Array(Vec<Value>),
    /// An error nested in an array (`EXEC`); a top-level error reply is
    /// [`crate::Error::Server`] instead.
    Error(String),
}

impl From<BytesFrame> for Value {
    fn from(frame: BytesFrame) -> Self {
        match frame {
            BytesFrame::Null => Value::Nil,
            BytesFrame::Integer(i) => Value::Int(i),
            BytesFrame::BulkString(b) => Value::Data(b),
            BytesFrame::SimpleString(s) => Value::Status(s),
            BytesFrame::Array(items) => Value::Array(items.into_iter().map(Value::from).collect()),
            BytesFrame::Error(e) => Value::Error(e.to_string()),
        }
    }
}
