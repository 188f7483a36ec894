//! A reply, as a Rust user matches on it. Nothing of the RESP library shows
//! through, so a new major version of it changes nothing for callers.

use bytes::Bytes;

/// A reply to [`crate::Client::cmd`], a pipeline or a transaction. The
/// RESP3 kinds (`Map`, `Set`, `Double`, `Boolean`, `BigNumber`,
/// `Verbatim`) come from a client built with `Builder::protocol(Resp3)`;
/// over RESP2 the same replies are arrays, strings and integers
/// ([`Value::into_map`] reads a map either way).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
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
    /// A map (RESP3 `%`: `HGETALL`, `CONFIG GET`), pairs in the order sent.
    Map(Vec<(Value, Value)>),
    /// A set (RESP3 `~`: `SMEMBERS`).
    Set(Vec<Value>),
    /// A double (RESP3 `,`: `ZSCORE`, `INCRBYFLOAT`).
    Double(f64),
    /// A boolean (RESP3 `#`: a script's `true`).
    Boolean(bool),
    /// An integer too large for `i64` (RESP3 `(`), as its digits.
    BigNumber(String),
    /// Text with its format (RESP3 `=`: `txt`, `mkd`; `INFO`, `LATENCY DOCTOR`).
    Verbatim {
        /// The format, three letters.
        format: String,
        /// The text.
        text: Bytes,
    },
}

impl Value {
    /// The value as RESP3 bytes, as a server would send it: for readers of
    /// replies as they come off the wire (the core's `learn_command`).
    pub(crate) fn write_resp(&self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        let blob = |kind: u8, bytes: &[u8], out: &mut Vec<u8>| {
            out.push(kind);
            let _ = write!(out, "{}\r\n", bytes.len());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        };
        let _ = match self {
            Value::Nil => out.write_all(b"_\r\n"),
            Value::Int(n) => write!(out, ":{n}\r\n"),
            Value::Data(bytes) | Value::Status(bytes) => {
                blob(b'$', bytes, out);
                Ok(())
            }
            Value::Error(text) => {
                blob(b'!', text.as_bytes(), out);
                Ok(())
            }
            Value::Verbatim { format, text } => {
                let mut whole = format!("{format}:").into_bytes();
                whole.extend_from_slice(text);
                blob(b'=', &whole, out);
                Ok(())
            }
            Value::Array(items) | Value::Set(items) => {
                let kind = if matches!(self, Value::Set(_)) {
                    '~'
                } else {
                    '*'
                };
                let _ = write!(out, "{kind}{}\r\n", items.len());
                items.iter().for_each(|item| item.write_resp(out));
                Ok(())
            }
            Value::Map(pairs) => {
                let _ = write!(out, "%{}\r\n", pairs.len());
                for (key, value) in pairs {
                    key.write_resp(out);
                    value.write_resp(out);
                }
                Ok(())
            }
            Value::Double(d) if d.is_nan() => out.write_all(b",nan\r\n"),
            Value::Double(d) if d.is_infinite() => {
                out.write_all(if *d > 0.0 { b",inf\r\n" } else { b",-inf\r\n" })
            }
            Value::Double(d) => write!(out, ",{d}\r\n"),
            Value::Boolean(b) => out.write_all(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Value::BigNumber(digits) => write!(out, "({digits}\r\n"),
        };
    }

    /// The bytes of a bulk, simple or verbatim string.
    #[must_use]
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Data(b) | Value::Status(b) | Value::Verbatim { text: b, .. } => Some(b),
            _ => None,
        }
    }

    /// The double, or a bulk string that spells one (`ZSCORE` over RESP2).
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Double(d) => Some(*d),
            Value::Data(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// A map's pairs: a RESP3 map's, or a RESP2 flat array's taken two by
    /// two (`HGETALL` either way); `None` for anything else.
    #[must_use]
    pub fn into_map(self) -> Option<Vec<(Value, Value)>> {
        match self {
            Value::Map(pairs) => Some(pairs),
            Value::Array(items) if items.len() % 2 == 0 => {
                let mut items = items.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(v)) = (items.next(), items.next()) {
                    pairs.push((k, v));
                }
                Some(pairs)
            }
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
            Value::Array(items) | Value::Set(items) => items,
            Value::Nil => Vec::new(),
            other => vec![other],
        }
    }
}

use crate::codec::Frame;

/// A frame off the wire as a [`Value`].
pub(crate) fn from_frame(frame: Frame) -> Value {
    match frame {
        Frame::Null => Value::Nil,
        Frame::Integer(i) => Value::Int(i),
        Frame::BulkString(b) => Value::Data(b),
        Frame::SimpleString(s) => Value::Status(s),
        Frame::Array(items) => Value::Array(items.into_iter().map(from_frame).collect()),
        Frame::Error(e) => Value::Error(e.to_string()),
        Frame::Map(pairs) => Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (from_frame(k), from_frame(v)))
                .collect(),
        ),
        Frame::Set(items) => Value::Set(items.into_iter().map(from_frame).collect()),
        Frame::Double(d) => Value::Double(d),
        Frame::Boolean(b) => Value::Boolean(b),
        Frame::BigNumber(n) => Value::BigNumber(String::from_utf8_lossy(&n).into_owned()),
        Frame::Verbatim { format, text } => Value::Verbatim {
            format: String::from_utf8_lossy(&format).into_owned(),
            text,
        },
        // Out of band: never a reply; kept whole if one gets here.
        Frame::Push(items) => Value::Array(items.into_iter().map(from_frame).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_become_values() {
        let frame = Frame::Array(vec![
            Frame::Integer(3),
            Frame::BulkString("12".into()),
            Frame::SimpleString("OK".into()),
            Frame::Null,
            Frame::Error("WRONGTYPE no".into()),
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

    #[test]
    fn resp3_frames_become_values_and_maps_read_either_way() {
        let map = from_frame(Frame::Map(vec![(
            Frame::BulkString("f".into()),
            Frame::Double(1.5),
        )]));
        assert_eq!(
            map,
            Value::Map(vec![(Value::Data("f".into()), Value::Double(1.5))])
        );
        let flat = from_frame(Frame::Array(vec![
            Frame::BulkString("f".into()),
            Frame::BulkString("1.5".into()),
        ]));
        let (k, v) = flat.into_map().unwrap().remove(0);
        assert_eq!((k.as_bytes(), v.as_f64()), (Some(&b"f"[..]), Some(1.5)));
        assert_eq!(map.into_map().unwrap()[0].1.as_f64(), Some(1.5));
        let verbatim = from_frame(Frame::Verbatim {
            format: "txt".into(),
            text: "hi".into(),
        });
        assert_eq!(verbatim.as_bytes(), Some(&b"hi"[..]));
        assert_eq!(
            from_frame(Frame::BigNumber("123".into())),
            Value::BigNumber("123".into())
        );
        assert_eq!(
            from_frame(Frame::Set(vec![Frame::Boolean(true)])).into_array(),
            [Value::Boolean(true)]
        );
    }

    #[test]
    fn a_value_written_as_resp_reads_back_the_same() {
        use crate::codec::{next_frame, Limits};
        let value = Value::Array(vec![
            Value::Nil,
            Value::Int(-7),
            Value::Data("bin\r\nary".into()),
            Value::Status("OK".into()),
            Value::Error("ERR no".into()),
            Value::Map(vec![(
                Value::Data("k".into()),
                Value::Set(vec![Value::Int(1)]),
            )]),
            Value::Double(1.5),
            Value::Double(f64::INFINITY),
            Value::Boolean(false),
            Value::BigNumber("123456789012345678901234567890".into()),
            Value::Verbatim {
                format: "txt".into(),
                text: "hi".into(),
            },
        ]);
        let mut bytes = Vec::new();
        value.write_resp(&mut bytes);
        let mut buf = bytes::BytesMut::from(&bytes[..]);
        let limits = Limits {
            max_reply_bytes: 1 << 20,
        };
        let frame = next_frame(&mut buf, limits).unwrap().unwrap();
        assert!(buf.is_empty());
        // A simple string is written as a bulk one: the same bytes.
        let Value::Array(mut read) = from_frame(frame) else {
            panic!("an array")
        };
        assert_eq!(read[3], Value::Data("OK".into()));
        read[3] = Value::Status("OK".into());
        assert_eq!(Value::Array(read), value);
    }
}
