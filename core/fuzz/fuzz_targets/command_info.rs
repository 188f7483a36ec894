#![no_main]
//! Any bytes as a server's `COMMAND INFO` reply: read or refused with a
//! typed error, never a panic; a command read routes any line without
//! panicking, and its keys lie inside the line.

use libfuzzer_sys::fuzz_target;
use zaris_core::learn_command;

fuzz_target!(|data: &[u8]| {
    // The first bytes up to a NUL are the reply; the rest, split at
    // spaces, a command line for it.
    let (reply, line) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(Some(command)) = learn_command(reply) else {
        return;
    };
    let mut args: Vec<&[u8]> = vec![command.name().as_bytes()];
    args.extend(line.split(|&b| b == b' '));
    let _ = command.route(&args);
    if let Ok(keys) = command.keys(&args) {
        for at in keys {
            assert!(at > 0 && at < args.len(), "key {at} of {} arguments", args.len());
        }
    }
});
