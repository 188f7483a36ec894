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
//! chunk, no copy. The frames are this module's own [`Frame`] (simple
//! errors held as `redis-protocol`'s `Str`), and the tests hold this
//! parser to `redis-protocol`'s decoder, byte for byte, whole and cut
//! anywhere.
//!
//! Both RESP2 and RESP3 replies are read (RESP3 only comes after
//! `HELLO 3`, `Builder::protocol`). Any bytes may come off a socket: what
//! is not RESP is a protocol error,
//! a reply that declares (or buffers) more than the limit is refused, and
//! arrays nest at most [`MAX_DEPTH`] deep. Nothing here panics.

use bytes::{Bytes, BytesMut};
use redis_protocol::bytes_utils::Str;
use smallvec::SmallVec;

/// A reply off the wire: RESP2's five kinds, and RESP3's (a connection
/// that said `HELLO 3`). Attributes (`|`) are read past. Bulk strings,
/// simple strings and big numbers are slices of the read buffer, no copy.
#[derive(Clone, Debug, PartialEq)]
#[doc(hidden)]
pub enum Frame {
    /// `+OK`.
    SimpleString(Bytes),
    /// `-ERR ...`, or a RESP3 blob error (`!`); not UTF-8 is read lossily.
    Error(Str),
    /// `:42`.
    Integer(i64),
    /// `$3 abc`.
    BulkString(Bytes),
    /// `$-1`, `*-1`, RESP3's `_`.
    Null,
    /// `*n`.
    Array(Vec<Frame>),
    /// RESP3 `%n`: pairs, in the order sent.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 `~n`.
    Set(Vec<Frame>),
    /// RESP3 `,`.
    Double(f64),
    /// RESP3 `#t`, `#f`.
    Boolean(bool),
    /// RESP3 `(`: the digits.
    BigNumber(Bytes),
    /// RESP3 `=`: the format (`txt`, `mkd`) and the text.
    Verbatim {
        /// `txt`, `mkd`.
        format: Bytes,
        /// The text.
        text: Bytes,
    },
    /// RESP3 `>`: out of band, not a reply.
    Push(Vec<Frame>),
}

impl Frame {
    /// The bytes of a bulk, simple or verbatim string.
    pub(crate) fn text(&self) -> Option<&Bytes> {
        match self {
            Frame::BulkString(b) | Frame::SimpleString(b) | Frame::Verbatim { text: b, .. } => {
                Some(b)
            }
            _ => None,
        }
    }
}

/// A request's replies: most have one, kept inline (a vector per request
/// was an allocation and a free per command).
pub(crate) type Frames = smallvec::SmallVec<[Frame; 1]>;

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
    // Exactly: a buffer frozen full becomes `Bytes` as it is, where one
    // with room to spare costs an allocation more (`bytes`' shared header).
    let mut buf = BytesMut::with_capacity(commands.iter().map(|c| encoded_len(c)).sum());
    for args in commands {
        write_command(&mut buf, args);
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
    write_command(buf, args);
}

/// [`encode_into`] where the room is made already.
pub(crate) fn write_command(buf: &mut BytesMut, args: &[&[u8]]) {
    let Some((first, rest)) = args.split_first() else {
        return header(buf, b'*', 0);
    };
    let digit = |d: usize| b'0' + (d % 10) as u8;
    if args.len() < 10 && first.len() < 10 {
        // Most commands: `*3\r\n$3\r\n` (a few arguments, a short name)
        // in one append.
        let (n, name) = (digit(args.len()), digit(first.len()));
        buf.extend_from_slice(&[b'*', n, b'\r', b'\n', b'$', name, b'\r', b'\n']);
    } else {
        header(buf, b'*', args.len());
        header(buf, b'$', first.len());
    }
    buf.extend_from_slice(first);
    for arg in rest {
        // The line end of the argument before, and this one's header,
        // in one append.
        bulk_header_after(buf, arg.len());
        buf.extend_from_slice(arg);
    }
    buf.extend_from_slice(b"\r\n");
}

/// An empty buffer with exactly the room `args` take: frozen full, it
/// becomes `Bytes` as it is (see [`encode`]). A durable write's `WAIT`
/// grows it.
pub(crate) fn room_for(args: &[&[u8]]) -> BytesMut {
    BytesMut::with_capacity(encoded_len(args))
}

/// Whether `encoded` is `args` as [`write_command`] writes them, told
/// without writing them: the cache's hit path compares a stored command
/// with the caller's.
pub(crate) fn is_command(encoded: &[u8], args: &[&[u8]]) -> bool {
    /// `rest` past a header `kind` `n` `\r\n`, if it starts with one.
    #[inline(always)]
    fn header(rest: &[u8], kind: u8, n: usize) -> Option<&[u8]> {
        // Most headers (a few arguments, names and keys under 100 bytes):
        // one compare of 4 or 5 bytes.
        match u8::try_from(n) {
            Ok(digit @ 0..=9) => {
                let (head, rest) = rest.split_first_chunk::<4>()?;
                (*head == [kind, b'0' + digit, b'\r', b'\n']).then_some(rest)
            }
            Ok(two @ 10..=99) => {
                let (head, rest) = rest.split_first_chunk::<5>()?;
                (*head == [kind, b'0' + two / 10, b'0' + two % 10, b'\r', b'\n']).then_some(rest)
            }
            _ => {
                let (long, at) = long_header_bytes(kind, n);
                rest.strip_prefix(&long[at..])
            }
        }
    }
    let walk = || {
        let mut rest = header(encoded, b'*', args.len())?;
        for arg in args {
            rest = header(rest, b'$', arg.len())?
                .strip_prefix(*arg)?
                .strip_prefix(b"\r\n")?;
        }
        rest.is_empty().then_some(())
    };
    walk().is_some()
}

/// How many bytes [`write_command`] appends for `args`.
pub(crate) fn encoded_len(args: &[&[u8]]) -> usize {
    let header = |n: usize| 3 + digits(n);
    header(args.len())
        + args
            .iter()
            .map(|a| header(a.len()) + a.len() + 2)
            .sum::<usize>()
}

/// How many decimal digits `n` takes.
fn digits(n: usize) -> usize {
    match n {
        0..=9 => 1,
        10..=99 => 2,
        _ => n.ilog10() as usize + 1,
    }
}

/// `*<n>\r\n` or `$<n>\r\n`, in one append: most are one or two digits
/// (a command's arguments, its name, short keys), written without a
/// division loop, and inline: as a call it cost 38 instructions a header.
#[inline(always)]
fn header(buf: &mut BytesMut, kind: u8, n: usize) {
    let digit = |d: usize| b'0' + (d % 10) as u8;
    if n < 10 {
        return buf.extend_from_slice(&[kind, digit(n), b'\r', b'\n']);
    }
    if n < 100 {
        return buf.extend_from_slice(&[kind, digit(n / 10), digit(n), b'\r', b'\n']);
    }
    long_header(buf, kind, n);
}

/// `\r\n$<n>\r\n`: an argument's line end and the next one's header.
#[inline(always)]
fn bulk_header_after(buf: &mut BytesMut, n: usize) {
    let digit = |d: usize| b'0' + (d % 10) as u8;
    if n < 10 {
        return buf.extend_from_slice(&[b'\r', b'\n', b'$', digit(n), b'\r', b'\n']);
    }
    if n < 100 {
        let line = [b'\r', b'\n', b'$', digit(n / 10), digit(n), b'\r', b'\n'];
        return buf.extend_from_slice(&line);
    }
    buf.extend_from_slice(b"\r\n");
    long_header(buf, b'$', n);
}

/// [`header`] for three digits and more.
#[inline(never)]
fn long_header(buf: &mut BytesMut, kind: u8, n: usize) {
    let (out, at) = long_header_bytes(kind, n);
    buf.extend_from_slice(&out[at..]);
}

/// `kind` `n` `\r\n` for `n` of three digits and more, on the stack: its
/// bytes are `out[at..]`. Written by [`long_header`], compared by
/// [`is_command`].
#[cold]
fn long_header_bytes(kind: u8, mut n: usize) -> ([u8; 23], usize) {
    let digit = |d: usize| b'0' + (d % 10) as u8;
    let mut out = [0u8; 23];
    let mut at = out.len() - 2;
    out[at..].copy_from_slice(b"\r\n");
    while n > 0 {
        at -= 1;
        out[at] = digit(n);
        n /= 10;
    }
    at -= 1;
    out[at] = kind;
    (out, at)
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
    mut each: impl FnMut(Frame) -> Result<(), E>,
) -> Result<(), E> {
    // In runs of up to `RUN` frames: the first pass finds them (and
    // learns enough of the simple ones to build them without reading them
    // again), the run is taken off as one frozen chunk, and the second
    // pass builds them from it.
    const RUN: usize = 32;
    loop {
        let mut found: SmallVec<[(Spot, usize); RUN]> = SmallVec::new();
        let mut end = 0;
        while found.len() < RUN {
            let Some((spot, len)) = frame_at(&input[end..], limits, 0)? else {
                break;
            };
            found.push((spot, len));
            end += len;
        }
        if found.len() < RUN && input.len() - end > limits.max_reply_bytes {
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
        for &(spot, len) in &found {
            let frame = match spot {
                Spot::Ok => Frame::SimpleString(Bytes::from_static(b"OK")),
                Spot::Simple => Frame::SimpleString(chunk.slice(at + 1..at + len - 2)),
                Spot::Integer(n) => Frame::Integer(n),
                Spot::Null => Frame::Null,
                Spot::Bulk { header } => Frame::BulkString(chunk.slice(at + header..at + len - 2)),
                Spot::Other => build(&chunk, at, 0)?.0,
            };
            each(frame)?;
            at += len;
        }
        if found.len() < RUN {
            return Ok(());
        }
    }
}

/// What the first pass learns of a frame: the common ones whole, so that
/// building them reads nothing again.
#[derive(Clone, Copy, Debug)]
enum Spot {
    /// `+OK`.
    Ok,
    /// Another simple string.
    Simple,
    Integer(i64),
    /// A bulk string whose data starts `header` bytes in.
    Bulk {
        header: usize,
    },
    /// `$-1`, `*-1`, `_`.
    Null,
    /// Anything else, built by [`build`].
    Other,
}

/// The next complete frame in `buf`, `None` when more bytes are needed.
///
/// # Errors
/// As [`take_frames`].
#[cfg(test)]
pub(crate) fn next_frame(buf: &mut BytesMut, limits: Limits) -> Result<Option<Frame>, CodecError> {
    match frame_len(buf, limits, 0)? {
        Some(len) => Ok(Some(build(&buf.split_to(len).freeze(), 0, 0)?.0)),
        None if buf.len() > limits.max_reply_bytes => Err(CodecError::TooLarge {
            limit: limits.max_reply_bytes,
        }),
        None => Ok(None),
    }
}

fn protocol(what: impl std::fmt::Display) -> CodecError {
    CodecError::Protocol(format!("not a RESP reply: {what}"))
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

/// A header's decimal number (`-1` and up; at most 18 digits), in one
/// pass over the digits.
#[inline]
fn number(digits: &[u8]) -> Result<i64, CodecError> {
    let (negative, unsigned) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if unsigned.is_empty() || unsigned.len() > 18 {
        return Err(not_a_number(unsigned));
    }
    let mut n = 0i64;
    for &b in unsigned {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(not_a_number(unsigned));
        }
        n = n * 10 + i64::from(d);
    }
    Ok(if negative { -n } else { n })
}

#[cold]
fn not_a_number(digits: &[u8]) -> CodecError {
    protocol(format_args!(
        "{:?} is not a number",
        String::from_utf8_lossy(digits)
    ))
}

/// A RESP3 double (`,3.14`, `,inf`, `,-inf`, `,nan`, `,1e5`).
fn double(text: &[u8]) -> Result<f64, CodecError> {
    std::str::from_utf8(text)
        .ok()
        .filter(|t| {
            !t.is_empty()
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        })
        .and_then(|t| t.parse::<f64>().ok())
        .ok_or_else(|| {
            protocol(format_args!(
                "{:?} is not a double",
                String::from_utf8_lossy(text)
            ))
        })
}

/// A RESP3 big number's digits (`(-123...`).
fn big_number(text: &[u8]) -> Result<(), CodecError> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(protocol(format_args!(
            "{:?} is not a big number",
            String::from_utf8_lossy(text)
        )));
    }
    Ok(())
}

/// A length from a `$` or `*` header: `None` for `-1` (nil).
#[inline]
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

/// How many frames an aggregate of `kind` with header count `n` holds.
fn members(kind: u8, n: usize) -> usize {
    if matches!(kind, b'%' | b'|') {
        n.saturating_mul(2)
    } else {
        n
    }
}

/// The length of the complete frame at the start of `buf`, `None` when
/// more bytes are needed.
fn frame_len(buf: &[u8], limits: Limits, depth: usize) -> Result<Option<usize>, CodecError> {
    Ok(frame_at(buf, limits, depth)?.map(|(_, len)| len))
}

/// The complete frame at the start of `buf`, as [`Spot`] and length;
/// `None` when more bytes are needed.
fn frame_at(buf: &[u8], limits: Limits, depth: usize) -> Result<Option<(Spot, usize)>, CodecError> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    if !matches!(
        kind,
        b'+' | b'-'
            | b':'
            | b'$'
            | b'*'
            | b'_'
            | b'#'
            | b','
            | b'('
            | b'!'
            | b'='
            | b'%'
            | b'~'
            | b'>'
            | b'|'
    ) {
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
    let other = |len| Ok(Some((Spot::Other, len)));
    match kind {
        b'+' if head == b"OK" => Ok(Some((Spot::Ok, header))),
        b'+' => Ok(Some((Spot::Simple, header))),
        b'-' => other(header),
        b':' => Ok(Some((Spot::Integer(number(head)?), header))),
        b'_' if head.is_empty() => Ok(Some((Spot::Null, header))),
        b'_' => Err(protocol("a null with a value")),
        b'#' if head == b"t" || head == b"f" => other(header),
        b'#' => Err(protocol("a boolean that is neither t nor f")),
        b',' => double(head).and_then(|_| other(header)),
        b'(' => big_number(head).and_then(|()| other(header)),
        b'$' | b'!' | b'=' => {
            let Some(n) = length(head, limits)? else {
                return if kind == b'$' {
                    Ok(Some((Spot::Null, header)))
                } else {
                    Err(protocol("a blob of length -1"))
                };
            };
            let total = header + n + 2;
            match buf.get(total - 2..total) {
                None => Ok(None),
                Some(b"\r\n") if kind == b'=' && !(n >= 4 && buf[header + 3] == b':') => {
                    Err(protocol("a verbatim string without its format"))
                }
                Some(b"\r\n") if kind == b'$' => Ok(Some((Spot::Bulk { header }, total))),
                Some(b"\r\n") => other(total),
                Some(_) => Err(protocol("a bulk string longer than it says")),
            }
        }
        _ => {
            let Some(n) = length(head, limits)? else {
                return if kind == b'*' {
                    Ok(Some((Spot::Null, header)))
                } else {
                    Err(protocol("an aggregate of length -1"))
                };
            };
            if depth >= MAX_DEPTH {
                return Err(protocol(format_args!(
                    "aggregates nested over {MAX_DEPTH} deep"
                )));
            }
            let mut at = header;
            for _ in 0..members(kind, n) {
                match frame_len(&buf[at..], limits, depth + 1)? {
                    Some(len) => at += len,
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                // Attributes come before the reply they describe: one frame.
                return match frame_len(&buf[at..], limits, depth + 1)? {
                    Some(len) => other(at + len),
                    None => Ok(None),
                };
            }
            other(at)
        }
    }
}

/// The frames `n` of which start at `at` in `chunk`, and where the next
/// one starts.
fn build_all(
    chunk: &Bytes,
    mut at: usize,
    n: usize,
    depth: usize,
) -> Result<(Vec<Frame>, usize), CodecError> {
    if depth >= MAX_DEPTH {
        return Err(protocol("aggregates nested too deep"));
    }
    let mut items = Vec::with_capacity(n.min(chunk.len()));
    for _ in 0..n {
        let (item, after) = build(chunk, at, depth + 1)?;
        items.push(item);
        at = after;
    }
    Ok((items, at))
}

/// The frame at `at` in `chunk` (complete: [`frame_len`] said so), and
/// where the next one starts.
fn build(chunk: &Bytes, at: usize, depth: usize) -> Result<(Frame, usize), CodecError> {
    let buf = &chunk[at..];
    let line = line_end(buf)?.ok_or_else(|| protocol("a cut frame"))?;
    let header = at + line + 2;
    let head = &buf[1..line];
    let unlimited = Limits {
        max_reply_bytes: usize::MAX,
    };
    let text = |bytes: Bytes| {
        Str::from_inner(bytes.clone())
            .unwrap_or_else(|_| Str::from(String::from_utf8_lossy(&bytes).into_owned()))
    };
    // A blob of the length its header says (parsed once).
    let sized = |kind: u8, n: Option<usize>| -> Result<(Bytes, usize), CodecError> {
        match n {
            Some(n) if header + n + 2 <= chunk.len() => {
                Ok((chunk.slice(header..header + n), header + n + 2))
            }
            _ => Err(protocol(format_args!("a cut {:?} blob", kind as char))),
        }
    };
    let blob = |kind: u8| sized(kind, length(head, unlimited)?);
    let count = || -> Result<usize, CodecError> {
        length(head, unlimited)?.ok_or_else(|| protocol("an aggregate of length -1"))
    };
    Ok(match buf.first() {
        // `SET`'s answer, and most writes': no share of the read buffer
        // to count (and to free) for two bytes known in advance.
        Some(b'+') if head == b"OK" => (Frame::SimpleString(Bytes::from_static(b"OK")), header),
        Some(b'+') => (Frame::SimpleString(chunk.slice(at + 1..at + line)), header),
        Some(b'-') => (Frame::Error(text(chunk.slice(at + 1..at + line))), header),
        Some(b':') => (Frame::Integer(number(head)?), header),
        Some(b'_') => (Frame::Null, header),
        Some(b'#') => (Frame::Boolean(head == b"t"), header),
        Some(b',') => (Frame::Double(double(head)?), header),
        Some(b'(') => (Frame::BigNumber(chunk.slice(at + 1..at + line)), header),
        Some(b'$') => match length(head, unlimited)? {
            None => (Frame::Null, header),
            n => {
                let (data, next) = sized(b'$', n)?;
                (Frame::BulkString(data), next)
            }
        },
        Some(b'!') => {
            let (data, next) = blob(b'!')?;
            (Frame::Error(text(data)), next)
        }
        Some(b'=') => {
            let (data, next) = blob(b'=')?;
            if data.len() < 4 {
                return Err(protocol("a verbatim string without its format"));
            }
            let frame = Frame::Verbatim {
                format: data.slice(..3),
                text: data.slice(4..),
            };
            (frame, next)
        }
        Some(b'*') => match length(head, unlimited)? {
            None => (Frame::Null, header),
            Some(n) => {
                let (items, next) = build_all(chunk, header, n, depth)?;
                (Frame::Array(items), next)
            }
        },
        Some(b'~') => {
            let (items, next) = build_all(chunk, header, count()?, depth)?;
            (Frame::Set(items), next)
        }
        Some(b'>') => {
            let (items, next) = build_all(chunk, header, count()?, depth)?;
            (Frame::Push(items), next)
        }
        Some(b'%') => {
            let n = count()?;
            let (items, next) = build_all(chunk, header, n.saturating_mul(2), depth)?;
            let mut items = items.into_iter();
            let mut pairs = Vec::with_capacity(n);
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                pairs.push((k, v));
            }
            (Frame::Map(pairs), next)
        }
        Some(b'|') => {
            // The attributes are read past: the reply is what follows.
            let n = count()?;
            let (_, next) = build_all(chunk, header, n.saturating_mul(2), depth)?;
            return build(chunk, next, depth + 1);
        }
        _ => return Err(protocol("a frame of no known kind")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use redis_protocol::resp2::decode::decode_bytes_mut;

    /// Every complete frame [`take_frames`] takes off `input`, in order.
    fn taken(input: &mut BytesMut, limits: Limits) -> Vec<Frame> {
        let mut frames = Vec::new();
        take_frames(input, limits, |f| {
            frames.push(f);
            Ok::<(), CodecError>(())
        })
        .unwrap();
        frames
    }

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
            Ok(Some(Frame::SimpleString("OK".into())))
        );
        assert_eq!(next_frame(&mut buf, LIMITS), Ok(Some(Frame::Integer(42))));
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(None),
            "incomplete bulk string"
        );
        buf.extend_from_slice(b"c\r\n");
        assert_eq!(
            next_frame(&mut buf, LIMITS),
            Ok(Some(Frame::BulkString("abc".into())))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn every_complete_frame_is_taken_and_the_rest_stays() {
        let mut buf = BytesMut::from(&b"$-1\r\n*2\r\n:1\r\n-ERR x\r\n*-1\r\n$5\r\nhel"[..]);
        let frames = taken(&mut buf, LIMITS);
        assert_eq!(
            frames,
            vec![
                Frame::Null,
                Frame::Array(vec![Frame::Integer(1), Frame::Error("ERR x".into())]),
                Frame::Null,
            ]
        );
        assert_eq!(&buf[..], b"$5\r\nhel");
    }

    #[test]
    fn runs_of_many_frames_are_taken_whole_and_in_order() {
        // More frames than one run holds, of every kind the first pass
        // builds itself, then one cut short.
        let kinds: [(&[u8], Frame); 6] = [
            (b"+OK\r\n", Frame::SimpleString(Bytes::from_static(b"OK"))),
            (
                b"+PONG\r\n",
                Frame::SimpleString(Bytes::from_static(b"PONG")),
            ),
            (b":-7\r\n", Frame::Integer(-7)),
            (
                b"$3\r\nabc\r\n",
                Frame::BulkString(Bytes::from_static(b"abc")),
            ),
            (b"$-1\r\n", Frame::Null),
            (
                b"*1\r\n$0\r\n\r\n",
                Frame::Array(vec![Frame::BulkString(Bytes::new())]),
            ),
        ];
        let mut wire = Vec::new();
        let mut expected = Vec::new();
        for i in 0..100 {
            let (bytes, frame) = &kinds[i % kinds.len()];
            wire.extend_from_slice(bytes);
            expected.push(frame.clone());
        }
        wire.extend_from_slice(b"$5\r\nhel");
        let mut input = BytesMut::from(&wire[..]);
        let frames = taken(&mut input, ROOMY);
        assert_eq!(frames, expected);
        assert_eq!(&input[..], b"$5\r\nhel");
    }

    /// Found by the `resp` fuzz target: servers echo raw argument bytes in
    /// error replies (`-ERR unknown command 'x\xff'`), which are not
    /// UTF-8. `redis-protocol`'s decoder refuses such a reply, which would
    /// fail the connection; this one reads it with the bad bytes replaced.
    #[test]
    fn error_text_that_is_not_utf8_is_read_lossily() {
        let mut input = BytesMut::from(&b"-MOVED 3443 12\xff.0.0.1:7001\r\n+OK\r\n"[..]);
        let frames = taken(&mut input, LIMITS);
        assert_eq!(
            frames,
            [
                Frame::Error("MOVED 3443 12\u{fffd}.0.0.1:7001".into()),
                Frame::SimpleString("OK".into())
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

    /// `redis-protocol`'s RESP2 frame as ours.
    fn from_theirs(frame: redis_protocol::resp2::types::BytesFrame) -> Frame {
        use redis_protocol::resp2::types::BytesFrame as Theirs;
        match frame {
            Theirs::SimpleString(s) => Frame::SimpleString(s),
            Theirs::Error(e) => Frame::Error(e),
            Theirs::Integer(i) => Frame::Integer(i),
            Theirs::BulkString(b) => Frame::BulkString(b),
            Theirs::Array(items) => Frame::Array(items.into_iter().map(from_theirs).collect()),
            Theirs::Null => Frame::Null,
        }
    }

    /// A frame as RESP bytes (RESP2 for RESP2's kinds), for the oracles.
    fn encode(frame: &Frame, out: &mut Vec<u8>) {
        match frame {
            Frame::SimpleString(s) => out.extend([&b"+"[..], s, b"\r\n"].concat()),
            Frame::Error(e) => out.extend([b"-", e.as_bytes(), b"\r\n"].concat()),
            Frame::Integer(i) => out.extend(format!(":{i}\r\n").bytes()),
            Frame::BulkString(b) => {
                out.extend(format!("${}\r\n", b.len()).bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Array(items) => {
                out.extend(format!("*{}\r\n", items.len()).bytes());
                for item in items {
                    encode(item, out);
                }
            }
            Frame::Null => out.extend_from_slice(b"$-1\r\n"),
            Frame::Map(pairs) => {
                out.extend(format!("%{}\r\n", pairs.len()).bytes());
                for (k, v) in pairs {
                    encode(k, out);
                    encode(v, out);
                }
            }
            Frame::Set(items) | Frame::Push(items) => {
                let kind = if matches!(frame, Frame::Set(_)) {
                    '~'
                } else {
                    '>'
                };
                out.extend(format!("{kind}{}\r\n", items.len()).bytes());
                for item in items {
                    encode(item, out);
                }
            }
            Frame::Double(d) => out.extend(format!(",{d}\r\n").bytes()),
            Frame::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Frame::BigNumber(n) => out.extend([&b"("[..], n, b"\r\n"].concat()),
            Frame::Verbatim { format, text } => {
                out.extend(format!("={}\r\n", text.len() + 4).bytes());
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Frames of every RESP3 kind (RESP2's among them).
    fn frame3() -> impl Strategy<Value = Frame> {
        let leaf = prop_oneof![
            line().prop_map(|s| Frame::SimpleString(s.into())),
            line().prop_map(|s| Frame::Error(s.into())),
            any::<i32>().prop_map(|i| Frame::Integer(i.into())),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| Frame::BulkString(b.into())),
            Just(Frame::Null),
            (-1e12f64..1e12).prop_map(Frame::Double),
            Just(Frame::Double(f64::INFINITY)),
            any::<bool>().prop_map(Frame::Boolean),
            "-?[0-9]{1,40}".prop_map(|n| Frame::BigNumber(n.into())),
            ("[a-z]{3}", proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(f, t)| {
                Frame::Verbatim {
                    format: f.into(),
                    text: t.into(),
                }
            }),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
                proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
            ]
        })
    }

    #[test]
    fn resp3_kinds_are_read_as_the_protocol_says() {
        let wire =
            b"_\r\n#t\r\n#f\r\n,2.75\r\n,-inf\r\n(3492890328409238509324850943850943825024385\r\n\
            =15\r\ntxt:Some string\r\n!21\r\nSYNTAX invalid syntax\r\n\
            %2\r\n+first\r\n:1\r\n+second\r\n:2\r\n~2\r\n+orange\r\n+apple\r\n\
            |1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n*1\r\n:2\r\n\
            >2\r\n+message\r\n+x\r\n";
        let mut input = BytesMut::from(&wire[..]);
        let frames = taken(&mut input, ROOMY);
        assert!(input.is_empty());
        assert_eq!(
            frames,
            [
                Frame::Null,
                Frame::Boolean(true),
                Frame::Boolean(false),
                Frame::Double(2.75),
                Frame::Double(f64::NEG_INFINITY),
                Frame::BigNumber("3492890328409238509324850943850943825024385".into()),
                Frame::Verbatim {
                    format: "txt".into(),
                    text: "Some string".into()
                },
                Frame::Error("SYNTAX invalid syntax".into()),
                Frame::Map(vec![
                    (Frame::SimpleString("first".into()), Frame::Integer(1)),
                    (Frame::SimpleString("second".into()), Frame::Integer(2)),
                ]),
                Frame::Set(vec![
                    Frame::SimpleString("orange".into()),
                    Frame::SimpleString("apple".into())
                ]),
                // The attribute is read past: the reply is the array.
                Frame::Array(vec![Frame::Integer(2)]),
                Frame::Push(vec![
                    Frame::SimpleString("message".into()),
                    Frame::SimpleString("x".into())
                ]),
            ]
        );
        for bad in [
            &b"_x\r\n"[..],
            b"#y\r\n",
            b",1.2.3\r\n",
            b",\r\n",
            b"(12a\r\n",
            b"=3\r\ntxt\r\n",
            b"!-1\r\n",
            b"%-1\r\n",
            b"~-1\r\n",
        ] {
            assert!(
                matches!(
                    next_frame(&mut BytesMut::from(bad), LIMITS),
                    Err(CodecError::Protocol(_))
                ),
                "{bad:?}"
            );
        }
        let mut big_map = BytesMut::from(&b"%40\r\n"[..]);
        big_map.extend_from_slice(&b":1\r\n".repeat(20));
        assert_eq!(
            next_frame(&mut big_map, LIMITS),
            Err(CodecError::TooLarge { limit: 64 }),
            "a map's pairs count twice toward the buffered limit"
        );
    }

    fn line() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 :_-]{0,12}"
    }

    fn frame() -> impl Strategy<Value = Frame> {
        let leaf = prop_oneof![
            line().prop_map(|s| Frame::SimpleString(s.into())),
            line().prop_map(|s| Frame::Error(s.into())),
            (-999_999_999_999_999_999i64..=999_999_999_999_999_999).prop_map(Frame::Integer),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| Frame::BulkString(b.into())),
            Just(Frame::Null),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            proptest::collection::vec(inner, 0..6).prop_map(Frame::Array)
        })
    }

    /// `wire` fed to the decoder in pieces, cut at `cuts`: the frames, and
    /// the bytes left over.
    fn read_cut(wire: &[u8], cuts: &[prop::sample::Index]) -> (Vec<Frame>, usize) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
        points.push(wire.len());
        points.sort_unstable();
        let mut frames = Vec::new();
        let mut input = BytesMut::new();
        let mut from = 0;
        for to in points {
            input.extend_from_slice(&wire[from..to]);
            from = to;
            frames.extend(taken(&mut input, ROOMY));
        }
        (frames, input.len())
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
                theirs.push(from_theirs(frame));
            }
            prop_assert_eq!(&theirs, &frames);
            let (ours, left) = read_cut(&wire, &cuts);
            prop_assert_eq!(left, 0);
            prop_assert_eq!(ours, theirs);
        }

        /// RESP3 frames back to back, cut at random points: read back as
        /// they were written. (`redis-protocol`'s RESP3 decoder is no
        /// oracle here: it refuses maps whose keys it cannot hash; the
        /// protocol's own examples are checked above.)
        #[test]
        fn resp3_round_trips_cut_anywhere(
            frames in proptest::collection::vec(frame3(), 1..8),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        ) {
            let mut wire = Vec::new();
            for f in &frames {
                encode(f, &mut wire);
            }
            let (ours, left) = read_cut(&wire, &cuts);
            prop_assert_eq!(left, 0);
            prop_assert_eq!(ours, frames);
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
        // Every length at the edges of the one- and two-digit fast paths.
        let edges: Vec<Vec<u8>> = [9, 10, 99, 100, 999, 1000].map(|n| vec![b'y'; n]).into();
        let edges: Vec<&[u8]> = edges.iter().map(Vec::as_slice).collect();
        let lines: [&[&[u8]]; 13] = [
            &[],
            &[b""],
            &[b"GET", b"k"],
            &[b"SET", b"\r\n\0\xff", &long],
            &[&b"a"[..]; 9],
            &[&b"a"[..]; 10],
            &[&b"c"[..]; 99],
            &[&b"c"[..]; 100],
            &[&b"b"[..]; 101],
            &edges,
            // Each edge first too, where the header has no line end before it.
            &edges[1..],
            &edges[2..],
            &edges[3..],
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
            assert_eq!(encoded_len(args), theirs.len(), "{} arguments", args.len());
            // Alone, in exactly the room it takes.
            let alone = super::encode(&[args]);
            assert_eq!(&alone[..], &theirs[..]);
            // Told apart from its encoding without encoding it.
            assert!(is_command(&theirs, args), "{} arguments", args.len());
        }
        // Any change to a stored command is another command.
        let get: [&[u8]; 2] = [b"GET", b"key"];
        let stored = super::encode(&[&get]);
        assert!(is_command(&stored, &get));
        let others: [&[&[u8]]; 6] = [
            &[b"GET", b"kez"],
            &[b"get", b"key"],
            &[b"GET"],
            &[b"GET", b"key", b""],
            &[b"GET", b"ke"],
            &[],
        ];
        for other in others {
            assert!(!is_command(&stored, other), "{other:?}");
        }
        for cut in 0..stored.len() {
            assert!(!is_command(&stored[..cut], &get), "cut at {cut}");
        }
        assert!(!is_command(b"*2\r\n$03\r\nGET\r\n$3\r\nkey\r\nX", &get));
        assert!(!is_command(b"*2\r\n$\r\nGET\r\n$3\r\nkey\r\n", &get));
    }
}
