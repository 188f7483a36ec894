//! The model's wire: commands read as RESP arrays of bulk strings (all the
//! real client sends), replies written in RESP2 or RESP3 as the
//! connection's `HELLO` chose, as Redis writes them.

use bytes::{Buf, BytesMut};

/// One command off the wire: an array of bulk strings, or `None` when
/// more bytes are needed. Anything else is an error (the real client sends
/// only arrays), and the connection is closed, as Redis closes it on a
/// protocol error.
///
/// # Errors
/// The bytes are not a RESP array of bulk strings.
pub fn take_command(buf: &mut BytesMut) -> Result<Option<Vec<Vec<u8>>>, String> {
    let text = &buf[..];
    let line = |from: usize| -> Option<(usize, usize)> {
        let end = text.get(from..)?.windows(2).position(|w| w == b"\r\n")? + from;
        Some((from, end))
    };
    let number = |(a, b): (usize, usize)| -> Result<usize, String> {
        std::str::from_utf8(&text[a + 1..b])
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|&n| n <= 512 * 1024 * 1024)
            .ok_or_else(|| "Protocol error: invalid length".to_owned())
    };
    let Some(head) = line(0) else { return Ok(None) };
    if text[0] != b'*' {
        return Err(format!(
            "Protocol error: expected '*', got '{}'",
            text[0] as char
        ));
    }
    let count = number(head)?;
    let mut at = head.1 + 2;
    let mut args = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let Some(len_line) = line(at) else {
            return Ok(None);
        };
        if text[at] != b'$' {
            return Err("Protocol error: expected '$'".into());
        }
        let len = number(len_line)?;
        let start = len_line.1 + 2;
        if text.len() < start + len + 2 {
            return Ok(None);
        }
        args.push(text[start..start + len].to_vec());
        at = start + len + 2;
    }
    buf.advance(at);
    Ok(Some(args))
}

/// A reply, written by [`Reply::write`] in the connection's protocol.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+text`.
    Simple(String),
    /// `-text` (the code first: `MOVED 12 host:port`).
    Error(String),
    /// `:n`.
    Int(i64),
    /// `$n` and the bytes.
    Bulk(Vec<u8>),
    /// A text reply RESP3 marks as text (`=n txt:`; a bulk string in RESP2):
    /// `CLUSTER INFO` and `CLUSTER NODES`.
    Verbatim(String),
    /// `$-1` (RESP2) or `_` (RESP3).
    Nil,
    /// `*-1` (RESP2) or `_` (RESP3).
    NilArray,
    /// `*n`.
    Array(Vec<Reply>),
    /// `%n` (RESP3) or a flat array of pairs (RESP2).
    Map(Vec<(Reply, Reply)>),
    /// `>n` (RESP3) or an array (RESP2): pub/sub messages, invalidations.
    Push(Vec<Reply>),
}

impl Reply {
    /// `+OK`.
    pub fn ok() -> Self {
        Self::Simple("OK".into())
    }

    /// A bulk string of `text`.
    pub fn text(text: impl AsRef<[u8]>) -> Self {
        Self::Bulk(text.as_ref().to_vec())
    }

    /// An error with its code: `err("MOVED", "12 node1:6379")`.
    pub fn err(code: &str, text: impl std::fmt::Display) -> Self {
        Self::Error(format!("{code} {text}"))
    }

    /// Appends this reply to `out` in protocol `proto` (2 or 3).
    pub fn write(&self, proto: u8, out: &mut Vec<u8>) {
        let head = |out: &mut Vec<u8>, kind: u8, n: usize| {
            out.push(kind);
            out.extend_from_slice(n.to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        match self {
            Self::Simple(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Self::Error(s) => {
                out.push(b'-');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Self::Int(n) => {
                out.push(b':');
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Self::Bulk(b) => {
                head(out, b'$', b.len());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Self::Verbatim(s) if proto >= 3 => {
                head(out, b'=', s.len() + 4);
                out.extend_from_slice(b"txt:");
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Self::Verbatim(s) => Self::Bulk(s.as_bytes().to_vec()).write(proto, out),
            Self::Nil | Self::NilArray if proto >= 3 => out.extend_from_slice(b"_\r\n"),
            Self::Nil => out.extend_from_slice(b"$-1\r\n"),
            Self::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Self::Array(items) => {
                head(out, b'*', items.len());
                for item in items {
                    item.write(proto, out);
                }
            }
            Self::Map(pairs) => {
                if proto >= 3 {
                    head(out, b'%', pairs.len());
                } else {
                    head(out, b'*', pairs.len() * 2);
                }
                for (k, v) in pairs {
                    k.write(proto, out);
                    v.write(proto, out);
                }
            }
            Self::Push(items) => {
                head(out, if proto >= 3 { b'>' } else { b'*' }, items.len());
                for item in items {
                    item.write(proto, out);
                }
            }
        }
    }

    /// How the trace names this reply: the status or error's first word, or
    /// the kind of data.
    pub fn brief(&self) -> String {
        match self {
            Self::Simple(s) => s.clone(),
            Self::Error(e) => e.split(' ').next().unwrap_or_default().to_owned(),
            Self::Int(n) => n.to_string(),
            Self::Bulk(_) | Self::Verbatim(_) => "data".into(),
            Self::Nil | Self::NilArray => "nil".into(),
            Self::Array(_) | Self::Map(_) => "array".into(),
            Self::Push(_) => "push".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(r: &Reply, proto: u8) -> String {
        let mut out = Vec::new();
        r.write(proto, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn replies_are_written_as_each_protocol_writes_them() {
        assert_eq!(wire(&Reply::Nil, 2), "$-1\r\n");
        assert_eq!(wire(&Reply::Nil, 3), "_\r\n");
        assert_eq!(wire(&Reply::NilArray, 2), "*-1\r\n");
        let map = Reply::Map(vec![(Reply::text("a"), Reply::Int(1))]);
        assert_eq!(wire(&map, 2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(wire(&map, 3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(wire(&Reply::Verbatim("x".into()), 3), "=5\r\ntxt:x\r\n");
        assert_eq!(wire(&Reply::Verbatim("x".into()), 2), "$1\r\nx\r\n");
        assert_eq!(
            wire(&Reply::Push(vec![Reply::text("invalidate")]), 3),
            ">1\r\n$10\r\ninvalidate\r\n"
        );
    }

    #[test]
    fn commands_are_taken_whole_or_not_at_all() {
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI"[..]);
        assert_eq!(
            take_command(&mut buf).unwrap(),
            Some(vec![b"GET".to_vec(), b"k".to_vec()])
        );
        assert_eq!(take_command(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"NG\r\n");
        assert_eq!(
            take_command(&mut buf).unwrap(),
            Some(vec![b"PING".to_vec()])
        );
        assert!(take_command(&mut BytesMut::from(&b"+OK\r\n"[..])).is_err());
        assert!(take_command(&mut BytesMut::from(&b"*1\r\n$-9\r\n"[..])).is_err());
    }
}
