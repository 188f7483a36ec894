//! RESP on the wire, both ways: requests encoded and replies decoded, by
//! hand, with an error type of its own ([`CodecError`]).
//!
//! Encoding: `redis-protocol`'s encoder builds a frame list per command
//! and counts digits with floating-point `log10`; in the pipeline
//! benchmark (`just bench-client`) its encoding was about a tenth of the
//! client's CPU time. The tests hold this one byte for byte to it.
//!
//! Decoding: `redis-protocol`'s decoder takes one frame at a time off a
//! `BytesMut`: each costs a split of the buffer (an atomic reference count
//! on the way in and out) and a scan that starts over for every frame. In
//! the same benchmark decoding was about a sixth of the client's CPU time.
//! Here every complete reply in the buffer is found in one scan, taken off
//! as one frozen chunk, and built from it: a bulk string is a slice of that
//! chunk, no copy. The frames are `redis-protocol`'s own type, and the
//! tests hold this parser to its decoder, byte for byte, whole and cut
//! anywhere.
//!
//! Any bytes may come off a socket: what is not RESP2 is a protocol error,
//! a reply that declares (or buffers) more than the limit is refused, and
//! arrays nest at most [`MAX_DEPTH`] deep. Nothing here panics.

use bytes::{Bytes, BytesMut};
use redis_protocol::bytes_utils::Str;
use redis_protocol::resp2::types::BytesFrame;

/// Why bytes off a socket are not a reply the client takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CodecError {
    /// Not RESP2, in words.
    Protocol(String),
    /// A reply larger than the limit.
    TooLarge { limit: usize },
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodecError::Protocol(e) => write!(f, "protocol violation: {e}"),
            CodecError::TooLarge { limit } => write!(f, "reply larger than {limit} bytes"),
        }
    }
}

/// The RESP encoding of `commands`, back to back.
pub(crate) fn encode(commands: &[&[&[u8]]]) -> Bytes {
    let mut buf = BytesMut::new();
    for args in commands {
        encode_into(&mut buf, args);
    }
    buf.freeze()
}

/// Appends the RESP encoding of `args` (an array of bulk strings) to `buf`.
///
/// By hand: `redis-protocol`'s encoder builds a frame list per command and
/// counts digits with floating-point `log10`; in the pipeline benchmark
/// (`just bench-client`) its encoding was about a tenth of the client's
/// CPU time. The tests hold this one byte for byte to it.
pub(crate) fn encode_into(buf: &mut BytesMut, args: &[&[u8]]) {
    buf.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    header(buf, b'*', args.len());
    for arg in args {
        header(buf, b'$', arg.len());
        buf.extend_from_slice(arg);
        buf.extend_from_slice(b"\r\n");
    }
}

/// `*<n>\r\n` or `$<n>\r\n`.
fn header(buf: &mut BytesMut, kind: u8, n: usize) {
    let mut digits = [0u8; 21];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    at -= 1;
    digits[at] = kind;
    buf.extend_from_slice(&digits[at..]);
    buf.extend_from_slice(b"\r\n");
}

/// Limits a connection enforces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The largest reply accepted; larger ones close the connection.
    pub max_reply_bytes: usize,
}

/// Arrays nest at most this deep (Redis replies nest a handful of levels;
/// a hostile peer could otherwise exhaust the stack).
pub(crate) const MAX_DEPTH: usize = 64;

/// Takes every complete reply at the front of `input` off it and hands
/// each, in order, to `each`; an incomplete one stays for the next read.
///
/// # Errors
/// Bytes that are not RESP2, a reply over the limit, or `each`'s error.
pub(crate) fn take_frames<E: From<CodecError>>(
    input: &mut BytesMut,
    limits: Limits,
    mut each: impl FnMut(BytesFrame) -> Result<(), E>,
) -> Result<(), E> {
    let mut end = 0;
    while let Some(len) = frame_len(&input[end..], limits, 0)? {
        end += len;
    }
    if input.len() - end > limits.max_reply_bytes {
        return Err(CodecError::TooLarge {
            limit: limits.max_reply_bytes,
        }
        .into());
    }
    if end == 0 {
        return Ok(());
    }
    let chunk = input.split_to(end).freeze();
    let mut at = 0;
    while at < chunk.len() {
        let (frame, next) = build(&chunk, at, 0)?;
        each(frame)?;
        at = next;
    }
    Ok(())
}

/// The next complete frame in `buf`, `None` when more bytes are needed.
///
/// # Errors
/// As [`take_frames`].
#[cfg(test)]
pub(crate) fn next_frame(
    buf: &mut BytesMut,
    limits: Limits,
) -> Result<Option<BytesFrame>, CodecError> {
    match frame_len(buf, limits, 0)? {
        Some(len) => Ok(Some(build(&buf.split_to(len).freeze(), 0, 0)?.0)),
        None if buf.len() > limits.max_reply_bytes => Err(CodecError::TooLarge {
            limit: limits.max_reply_bytes,
        }),
        None => Ok(None),
    }
}

fn protocol(what: impl std::fmt::Display) -> CodecError {
    CodecError::Protocol(format!("not a RESP2 reply: {what}"))
}

/// Where the line starting `buf` ends (the `\r` of its `\r\n`), `None`
/// when its end has not arrived.
fn line_end(buf: &[u8]) -> Result<Option<usize>, CodecError> {
    let Some(cr) = buf.iter().position(|&b| b == b'\r') else {
        return Ok(None);
    };
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some(cr)),
        Some(_) => Err(protocol("a line with a bare CR")),
    }
}

/// A header's decimal number (`-1` and up; at most 18 digits).
fn number(digits: &[u8]) -> Result<i64, CodecError> {
    let (negative, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(protocol(format_args!(
            "{:?} is not a number",
            String::from_utf8_lossy(digits)
        )));
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Ok(if negative { -n } else { n })
}

/// A length from a `$` or `*` header: `None` for `-1` (nil).
fn length(digits: &[u8], limits: Limits) -> Result<Option<usize>, CodecError> {
    match number(digits)? {
        -1 => Ok(None),
        n if n < 0 => Err(protocol(format_args!("a length of {n}"))),
        n => match usize::try_from(n) {
            Ok(n) if n <= limits.max_reply_bytes => Ok(Some(n)),
            _ => Err(CodecError::TooLarge {
                limit: limits.max_reply_bytes,
            }),
        },
    }
}

/// The length of the complete frame at the start of `buf`, `None` when
/// more bytes are needed.
fn frame_len(buf: &[u8], limits: Limits, depth: usize) -> Result<Option<usize>, CodecError> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    if !matches!(kind, b'+' | b'-' | b':' | b'$' | b'*') {
        return Err(protocol(format_args!(
            "a frame starting {:?}",
            kind as char
        )));
    }
    let Some(line) = line_end(buf)? else {
        return Ok(None);
    };
    let header = line + 2;
    let head = &buf[1..line];
    match kind {
        b'+' | b'-' => Ok(Some(header)),
        b':' => number(head).map(|_| Some(header)),
        b'$' => {
            let Some(n) = length(head, limits)? else {
                return Ok(Some(header));
            };
            let total = header + n + 2;
            match buf.get(total - 2..total) {
                None => Ok(None),
                Some(b"\r\n") => Ok(Some(total)),
                Some(_) => Err(protocol("a bulk string longer than it says")),
            }
        }
        _ => {
            let Some(n) = length(head, limits)? else {
                return Ok(Some(header));
            };
            if depth >= MAX_DEPTH {
                return Err(protocol(format_args!(
                    "arrays nested over {MAX_DEPTH} deep"
                )));
            }
            let mut at = header;
            for _ in 0..n {
                match frame_len(&buf[at..], limits, depth + 1)? {
                    Some(len) => at += len,
                    None => return Ok(None),
                }
            }
            Ok(Some(at))
        }
    }
}

/// The frame at `at` in `chunk` (complete: [`frame_len`] said so), and
/// where the next one starts.
fn build(chunk: &Bytes, at: usize, depth: usize) -> Result<(BytesFrame, usize), CodecError> {
    let buf = &chunk[at..];
    let line = line_end(buf)?.ok_or_else(|| protocol("a cut frame"))?;
    let header = at + line + 2;
    let head = &buf[1..line];
    let unlimited = Limits {
        max_reply_bytes: usize::MAX,
    };
    Ok(match buf.first() {
        Some(b'+') => (
            BytesFrame::SimpleString(chunk.slice(at + 1..at + line)),
            header,
        ),
        Some(b'-') => {
            let text = chunk.slice(at + 1..at + line);
            let text = Str::from_inner(text.clone())
                .unwrap_or_else(|_| Str::from(String::from_utf8_lossy(&text).into_owned()));
            (BytesFrame::Error(text), header)
        }
        Some(b':') => (BytesFrame::Integer(number(head)?), header),
        Some(b'$') => match length(head, unlimited)? {
            None => (BytesFrame::Null, header),
            Some(n) if header + n + 2 <= chunk.len() => (
                BytesFrame::BulkString(chunk.slice(header..header + n)),
                header + n + 2,
            ),
            Some(_) => return Err(protocol("a cut bulk string")),
        },
        Some(b'*') => match length(head, unlimited)? {
            None => (BytesFrame::Null, header),
            Some(n) => {
                if depth >= MAX_DEPTH {
                    return Err(protocol("arrays nested too deep"));
                }
                let mut items = Vec::with_capacity(n.min(chunk.len()));
                let mut next = header;
                for _ in 0..n {
                    let (item, after) = build(chunk, next, depth + 1)?;
                    items.push(item);
                    next = after;
                }
                (BytesFrame::Array(items), next)
            }
        },
        _ => return Err(protocol("a frame of no known kind")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use redis_protocol::resp2::decode::decode_bytes_mut;

    const LIMITS: Limits = Limits {
        max_reply_bytes: 64,
    };
    const ROOMY: Limits = Limits {
        max_reply_bytes: 1 << 20,
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
    fn every_complete_frame_is_taken_and_the_rest_stays() {
        let mut buf = BytesMut::from(&b"$-1\r\n*2\r\n:1\r\n-ERR x\r\n*-1\r\n$5\r\nhel"[..]);
        let mut frames = Vec::new();
        take_frames(&mut buf, LIMITS, |f| {
            frames.push(f);
            Ok::<(), CodecError>(())
        })
        .unwrap();
        assert_eq!(
            frames,
            vec![
                BytesFrame::Null,
                BytesFrame::Array(vec![
                    BytesFrame::Integer(1),
                    BytesFrame::Error("ERR x".into())
                ]),
                BytesFrame::Null,
            ]
        );
        assert_eq!(&buf[..], b"$5\r\nhel");
    }

    /// Found by the `resp` fuzz target: servers echo raw argument bytes in
    /// error replies (`-ERR unknown command 'x\xff'`), which are not
    /// UTF-8. `redis-protocol`'s decoder refuses such a reply, which would
    /// fail the connection; this one reads it with the bad bytes replaced.
    #[test]
    fn error_text_that_is_not_utf8_is_read_lossily() {
        let mut input = BytesMut::from(&b"-MOVED 3443 12\xff.0.0.1:7001\r\n+OK\r\n"[..]);
        let mut frames = Vec::new();
        take_frames(&mut input, LIMITS, |f| {
            frames.push(f);
            Ok::<(), CodecError>(())
        })
        .unwrap();
        assert_eq!(
            frames,
            [
                BytesFrame::Error("MOVED 3443 12\u{fffd}.0.0.1:7001".into()),
                BytesFrame::SimpleString("OK".into())
            ]
        );
        assert!(decode_bytes_mut(&mut BytesMut::from(
            &b"-MOVED 3443 12\xff.0.0.1:7001\r\n"[..]
        ))
        .is_err());
    }

    #[test]
    fn garbage_and_oversized_replies_are_typed_errors() {
        let mut garbage = BytesMut::from(&b"hello world\r\n"[..]);
        assert!(matches!(
            next_frame(&mut garbage, LIMITS),
            Err(CodecError::Protocol(_))
        ));
        for bad in [
            &b":12x\r\n"[..],
            b"$3\r\nabcd\r\n",
            b"$-2\r\n",
            b"*-5\r\n",
            b"+a\rb\r\n",
            b":\r\n",
            b"$99999999999999999999\r\n",
        ] {
            assert!(
                matches!(
                    next_frame(&mut BytesMut::from(bad), LIMITS),
                    Err(CodecError::Protocol(_) | CodecError::TooLarge { .. })
                ),
                "{bad:?}"
            );
        }
        let mut huge = BytesMut::from(&b"$1000000\r\n"[..]);
        assert_eq!(
            next_frame(&mut huge, LIMITS),
            Err(CodecError::TooLarge { limit: 64 })
        );
        let mut long_array = BytesMut::from(&b"*100\r\n"[..]);
        long_array.extend_from_slice(&b":1\r\n".repeat(20));
        assert_eq!(
            next_frame(&mut long_array, LIMITS),
            Err(CodecError::TooLarge { limit: 64 })
        );
        let mut deep = BytesMut::from(&b"*1\r\n".repeat(MAX_DEPTH + 1)[..]);
        deep.extend_from_slice(b":1\r\n");
        assert!(matches!(
            next_frame(&mut deep, ROOMY),
            Err(CodecError::Protocol(_))
        ));
    }

    /// A frame as RESP2 bytes, for the oracle.
    fn encode(frame: &BytesFrame, out: &mut Vec<u8>) {
        match frame {
            BytesFrame::SimpleString(s) => out.extend([&b"+"[..], s, b"\r\n"].concat()),
            BytesFrame::Error(e) => out.extend([b"-", e.as_bytes(), b"\r\n"].concat()),
            BytesFrame::Integer(i) => out.extend(format!(":{i}\r\n").bytes()),
            BytesFrame::BulkString(b) => {
                out.extend(format!("${}\r\n", b.len()).bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            BytesFrame::Array(items) => {
                out.extend(format!("*{}\r\n", items.len()).bytes());
                for item in items {
                    encode(item, out);
                }
            }
            BytesFrame::Null => out.extend_from_slice(b"$-1\r\n"),
        }
    }

    fn line() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 :_-]{0,12}"
    }

    fn frame() -> impl Strategy<Value = BytesFrame> {
        let leaf = prop_oneof![
            line().prop_map(|s| BytesFrame::SimpleString(s.into())),
            line().prop_map(|s| BytesFrame::Error(s.into())),
            (-999_999_999_999_999_999i64..=999_999_999_999_999_999).prop_map(BytesFrame::Integer),
            proptest::collection::vec(any::<u8>(), 0..40)
                .prop_map(|b| BytesFrame::BulkString(b.into())),
            Just(BytesFrame::Null),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            proptest::collection::vec(inner, 0..6).prop_map(BytesFrame::Array)
        })
    }

    proptest! {
        /// Frames back to back, cut into pieces at random points: the same
        /// frames as `redis-protocol`'s decoder finds, whole or cut.
        #[test]
        fn parses_as_redis_protocol_does(
            frames in proptest::collection::vec(frame(), 1..8),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        ) {
            let mut wire = Vec::new();
            for f in &frames {
                encode(f, &mut wire);
            }
            let mut theirs = Vec::new();
            let mut whole = BytesMut::from(&wire[..]);
            while let Some((frame, _, _)) = decode_bytes_mut(&mut whole).unwrap() {
                theirs.push(frame);
            }
            prop_assert_eq!(&theirs, &frames);
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
            points.push(wire.len());
            points.sort_unstable();
            let mut ours = Vec::new();
            let mut input = BytesMut::new();
            let mut from = 0;
            for to in points {
                input.extend_from_slice(&wire[from..to]);
                from = to;
                take_frames(&mut input, ROOMY, |f| {
                    ours.push(f);
                    Ok::<(), CodecError>(())
                })
                .unwrap();
            }
            prop_assert!(input.is_empty());
            prop_assert_eq!(ours, theirs);
        }

        /// Any bytes: a frame, more needed, or a typed error; never a panic.
        #[test]
        fn any_bytes_are_safe(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut input = BytesMut::from(&bytes[..]);
            let _ = take_frames(&mut input, LIMITS, |_| Ok::<(), CodecError>(()));
        }
    }

    #[test]
    fn commands_encode_as_redis_protocol_does() {
        use redis_protocol::resp2::encode::extend_encode_borrowed;
        use redis_protocol::resp2::types::BorrowedFrame;
        let long = vec![b'x'; 123_456];
        let lines: [&[&[u8]]; 6] = [
            &[],
            &[b""],
            &[b"GET", b"k"],
            &[b"SET", b"\r\n\0\xff", &long],
            &[&b"a"[..]; 10],
            &[&b"b"[..]; 101],
        ];
        for args in lines {
            let frames: Vec<BorrowedFrame<'_>> =
                args.iter().map(|a| BorrowedFrame::BulkString(a)).collect();
            let mut theirs = BytesMut::new();
            extend_encode_borrowed(&mut theirs, &BorrowedFrame::Array(&frames), false).unwrap();
            let mut ours = BytesMut::from(&b"prefix"[..]);
            encode_into(&mut ours, args);
            assert_eq!(&ours[..6], b"prefix");
            assert_eq!(&ours[6..], &theirs[..], "{} arguments", args.len());
        }
    }
}
