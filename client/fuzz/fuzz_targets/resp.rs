#![no_main]
//! Any bytes off a socket, through the client's RESP decoder (RESP2 and
//! RESP3): never a panic; the same frames and the same verdict whether the
//! bytes arrive in one read or two (the first input byte says where the
//! second starts); and what it accepts of RESP2, `redis-protocol`'s RESP2
//! decoder reads the same way.

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use zaris_client::_fuzz::{replies, value, Frame};

/// Whether a frame is of RESP2's kinds only (the oracle reads no other).
fn resp2(frame: &Frame) -> bool {
    match frame {
        Frame::SimpleString(_)
        | Frame::Error(_)
        | Frame::Integer(_)
        | Frame::BulkString(_)
        | Frame::Null => true,
        Frame::Array(items) => items.iter().all(resp2),
        _ => false,
    }
}

/// Whether a line of `bytes` starts with a RESP3-only kind (inside a bulk
/// string too: that only skips the oracle).
fn consumed_lines_start_resp3(bytes: &[u8]) -> bool {
    std::iter::once(bytes)
        .chain(bytes.split(|&b| b == b'\n').skip(1))
        .any(|line| matches!(line.first(), Some(b'_' | b'#' | b',' | b'(' | b'!' | b'=' | b'%' | b'~' | b'>' | b'|')))
}

/// The oracle's frame as ours.
fn ours(frame: BytesFrame) -> Frame {
    match frame {
        BytesFrame::SimpleString(s) => Frame::SimpleString(s),
        BytesFrame::Error(e) => Frame::Error(e),
        BytesFrame::Integer(i) => Frame::Integer(i),
        BytesFrame::BulkString(b) => Frame::BulkString(b),
        BytesFrame::Array(items) => Frame::Array(items.into_iter().map(ours).collect()),
        BytesFrame::Null => Frame::Null,
    }
}

/// Small enough for the fuzzer to reach the limit.
const LIMIT: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, wire)) = data.split_first() else {
        return;
    };
    let cut = usize::from(cut) * (wire.len() + 1) / 256;
    let (whole, whole_ok, whole_left) = replies(&[wire], LIMIT);
    let (split, split_ok, split_left) = replies(&[&wire[..cut], &wire[cut..]], LIMIT);
    assert_eq!(
        whole_ok.is_ok(),
        split_ok.is_ok(),
        "{whole_ok:?} vs {split_ok:?} cut at {cut}"
    );
    if whole_ok.is_err() {
        return;
    }
    assert_eq!(whole, split, "cut at {cut}");
    assert_eq!(whole_left, split_left);
    assert!(whole_left <= wire.len());
    // RESP3 (`_`, `%`, `,` ...): no oracle; never a panic, checked above.
    if !whole.iter().all(resp2) {
        for frame in whole {
            let _ = value(frame);
        }
        return;
    }
    // A RESP3 null (`_`) reads as RESP2's: no oracle either.
    if consumed_lines_start_resp3(&wire[..wire.len() - whole_left]) {
        return;
    }
    // The oracle: the same frames, from the same bytes. Where an error
    // reply's text is not UTF-8 (servers echo raw argument bytes in
    // errors), it refuses the reply; ours reads the text lossily, on
    // purpose (a regression test in src/codec.rs holds that).
    let consumed = &wire[..wire.len() - whole_left];
    let mut theirs = Vec::new();
    let mut input = BytesMut::from(consumed);
    let refused = loop {
        match decode_bytes_mut(&mut input) {
            Ok(Some((frame, _, _))) => theirs.push(ours(frame)),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    if refused {
        assert!(
            std::str::from_utf8(consumed).is_err(),
            "redis-protocol refused what we read: {consumed:?}"
        );
    } else {
        assert_eq!(whole, theirs);
    }
    for frame in whole {
        let _ = value(frame);
    }
});
