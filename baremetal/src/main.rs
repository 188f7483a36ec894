//! zaris-core where there is no OS and no allocator: a Cortex-M3 (qemu's
//! lm3s6965evb) computes the slots of 300 keys a real `redis-server` hashed
//! (`vectors.rs`), segments and hash tags, reads redirect replies and runs
//! the retry machine through MOVED, ASK and TRYAGAIN; it prints through
//! semihosting and ends qemu with exit code 0 only if every check held.
//!
//! `just test-baremetal` (in `just test`), or `cd baremetal && cargo run --release`.

#![no_std]
#![no_main]

mod vectors;

use core::time::Duration;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use zaris_core::{
    crc_engine, hash_tag, parse_error_reply, segment_for_slot, slot_for_key, Decision, KvStatus,
    Outcome, RetryLoop, RetryPolicy, StopReason, TransportFailure,
};

#[entry]
fn main() -> ! {
    let mut failures = 0u32;
    let mut check = |ok: bool, what: &str| {
        if !ok {
            hprintln!("FAILED: {}", what);
            failures += 1;
        }
    };

    // Slots: every vector from the server.
    let mut wrong = 0u32;
    for (i, &(key, slot)) in vectors::VECTORS.iter().enumerate() {
        let ours = slot_for_key(key);
        if ours != slot {
            hprintln!("key {}: slot {}, redis-server {}", i, ours, slot);
            wrong += 1;
        }
    }
    check(wrong == 0, "slots of the server's vectors");
    check(
        slot_for_key(b"{user1000}.following") == 3443,
        "the README's key",
    );
    check(hash_tag(b"{user1000}.following") == b"user1000", "hash tag");
    check(
        hash_tag(b"foo{}{bar}") == b"foo{}{bar}",
        "an empty tag hashes the whole key",
    );
    check(segment_for_slot(16383, 4) == 3, "last segment");

    // Redirects read, and the retry machine through them.
    let left = Some(Duration::from_secs(60));
    let mut retries = RetryLoop::new(RetryPolicy {
        max_attempts: 5,
        ..RetryPolicy::DEFAULT
    });
    let steps: [(&[u8], Decision); 3] = [
        (
            b"-MOVED 3999 127.0.0.1:6381",
            Decision::Retry {
                refresh_map: true,
                delay: Duration::from_millis(100),
            },
        ),
        (b"-ASK 3999 10.0.0.7:7002", Decision::FollowAsk),
        (
            b"-TRYAGAIN Multiple keys request during rehashing of slot",
            Decision::Retry {
                refresh_map: false,
                delay: Duration::from_millis(2000),
            },
        ),
    ];
    for (reply, want) in steps {
        match parse_error_reply(reply) {
            Ok(parsed) => check(
                retries.record(parsed.outcome(), left) == want,
                "a redirect's decision",
            ),
            Err(_) => check(false, "a redirect parsed"),
        }
    }
    let reset = Outcome::Transport(TransportFailure::ConnectionReset);
    check(
        retries.record(reset, left)
            == Decision::Retry {
                refresh_map: true,
                delay: Duration::from_millis(400),
            },
        "after a reset",
    );
    check(
        retries.record(Outcome::Status(KvStatus::Migrating), left)
            == Decision::GiveUp(StopReason::AttemptsExhausted),
        "the budget spent",
    );

    hprintln!(
        "zaris-core on a Cortex-M3: {} keys checked against redis-server, {} failures, CRC engine {}",
        vectors::VECTORS.len(),
        failures,
        crc_engine().name()
    );
    debug::exit(if failures == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}
