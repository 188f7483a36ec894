#![no_main]
//! Any bytes off a socket, through the client's RESP decoder: never a
//! panic; the same frames and the same verdict whether the bytes arrive in
//! one read or two (the first input byte says where the second starts);
//! and what it accepts, `redis-protocol`'s decoder reads the same way.

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use redis_protocol::resp2::decode::decode_bytes_mut;
use zaris_client::_fuzz::{replies, value};

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
    // The oracle: the same frames, from the same bytes. Where an error
    // reply's text is not UTF-8 (servers echo raw argument bytes in
    // errors), it refuses the reply; ours reads the text lossily, on
    // purpose (a regression test in src/resp.rs holds that).
    let consumed = &wire[..wire.len() - whole_left];
    let mut theirs = Vec::new();
    let mut input = BytesMut::from(consumed);
    let refused = loop {
        match decode_bytes_mut(&mut input) {
            Ok(Some((frame, _, _))) => theirs.push(frame),
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
