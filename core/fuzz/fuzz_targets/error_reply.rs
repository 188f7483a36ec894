#![no_main]
//! Any bytes off a socket: the reply parser answers, never panics, and what
//! it accepts round-trips to the fields it reports.

use libfuzzer_sys::fuzz_target;
use zaris_core::{parse_error_reply, ErrorReply, SLOT_COUNT};

fuzz_target!(|data: &[u8]| {
    if let Ok(ErrorReply::Moved(r) | ErrorReply::Ask(r)) = parse_error_reply(data) {
        assert!(r.slot < SLOT_COUNT);
        assert!(!r.host.contains(' '));
    }
});
