//! Every public function of the core, run under a counting allocator:
//! placement runs on every operation and must never allocate.

// A global allocator is unsafe to implement; this one only counts.
#![allow(unsafe_code)]
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use zaris_core::*;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: defers every call to `System`; only counts on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn the_core_never_allocates() {
    // Inputs are built before counting starts.
    let long: Vec<u8> = (0..4096).map(|i| (i * 31 % 251) as u8).collect();
    let tagged = b"{user1000}.following".to_vec();
    let units: Vec<u16> = "κλειδί{δ}😀\u{0}".encode_utf16().chain([0xD800]).collect();
    let ascii_units: Vec<u16> = "user:1000:".repeat(100).encode_utf16().collect();
    let mut table = SegmentTable::new(vec![NO_OWNER; 16384].into_boxed_slice()).unwrap();
    let mut utf8 = [0u8; 64];
    let search_info: &[u8] =
        b"*1\r\n*10\r\n$9\r\nFT.SEARCH\r\n:-1\r\n*2\r\n+readonly\r\n+module\r\n\
        :1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n\
        $12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n\
        *2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n\
        $4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n\
        *0\r\n";
    #[cfg(feature = "simulate")]
    let script = [
        Outcome::Status(KvStatus::Moved),
        Outcome::Ask,
        Outcome::Status(KvStatus::Migrating),
        Outcome::Status(KvStatus::Ok),
    ];
    let nodes = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,h myself,master - 0 0 1 connected 0-5460 [93->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\nbad line";
    // Warm up run-time CPU detection (std_detect may initialise lazily).
    for engine in CrcEngine::ALL {
        let _ = engine.is_supported();
    }
    let _ = zaris_core::crc_engine();

    let n = allocations_during(|| {
        let mut sink = 0u64;
        let mut eat = |v: u64| sink = sink.wrapping_add(v);
        for key in [&long[..], &tagged[..], b"", b"{}{a}"] {
            eat(crc16(key).into());
            eat(crc16_bitwise(key).into());
            let mut c = Crc16::new();
            c.update(key);
            eat(c.finish().into());
            eat(hash_tag(key).len() as u64);
            eat(hash_tag_span(key).map_or(0, |r| r.start as u64));
            eat(slot_for_key(key).into());
            eat(segment_for_key(key, 7).into());
        }
        for u in [&units[..], &ascii_units[..]] {
            eat(slot_for_utf16(u).into());
            eat(hash_tag_span_utf16(u).map_or(0, |r| r.end as u64));
            eat(utf8_from_utf16_lossy(u, &mut utf8).1 as u64);
        }
        eat(segment_for_slot(16383, 0).into());
        eat(SegmentCount::new(7).map_or(0, |c| c.first_slot(3).into()));
        for s in KvStatus::ALL {
            eat(u64::from(s.should_retry())
                + u64::from(s.requires_map_refresh())
                + u64::from(s.is_answer()));
            eat(s.name().len() as u64);
        }
        eat(ownership_failure_status(true).name().len() as u64);
        eat(retry_delay(2, DEFAULT_BACKOFF, Some(KvStatus::Migrating), None).as_millis() as u64);
        eat(u64::from(parse_request_timeout("2.5").is_ok()));
        eat(u64::from(parse_disable_retries("true").is_ok()));
        eat(u64::from(parse_refresh_wait_ms("15000").is_ok()));
        eat(u64::from(
            RetryPolicy::DEFAULT.without_retries().attempt_budget(),
        ));
        let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
        for outcome in [
            Outcome::Status(KvStatus::Moved),
            Outcome::Ask,
            Outcome::Transport(TransportFailure::ConnectionReset),
        ] {
            eat(matches!(
                retries.record(outcome, Some(Duration::from_secs(1))),
                Decision::Retry { .. }
            ) as u64);
        }
        for reply in [
            &b"-MOVED 1 127.0.0.1:7000\r\n"[..],
            b"ASK 2 [::1]:1",
            b"-TRYAGAIN x",
            b"-ERR no",
            b"MOVED x",
        ] {
            eat(parse_error_reply(reply).map_or(1, |r| r.status().name().len() as u64));
            eat(parse_error_reply(reply).map_or(1, |r| r.outcome().name().len() as u64));
        }
        for engine in CrcEngine::ALL {
            eat(u64::from(
                _benchable::slot_for_key_on(engine, &long).unwrap_or(0),
            ));
            eat(u64::from(_benchable::crc16_on(engine, &long).unwrap_or(0)));
        }
        #[cfg(feature = "simulate")]
        for step in replay(&script, RetryPolicy::DEFAULT, Duration::from_millis(1)) {
            eat(matches!(step, Step::Wait { .. }) as u64);
        }
        for key in key_lines(b"a\r\nb\n\nc") {
            eat(u64::from(slot_for_key(key)));
        }
        #[cfg(feature = "simulate")]
        for outcome in parse_script("Moved, Migrating -> Ask, Bogus") {
            eat(outcome.map_or(1, |o| o.name().len() as u64));
        }
        for line in [
            &[&b"HSET"[..], b"k", b"f", b"v"][..],
            &[b"EVAL", b"return 1", b"2", b"{a}1", b"{a}2"],
            &[
                b"XREADGROUP",
                b"GROUP",
                b"g",
                b"c",
                b"STREAMS",
                b"s1",
                b"s2",
                b">",
                b">",
            ],
            &[b"MSET", b"a", b"1", b"b", b"2"],
            &[b"nosuch"],
        ] {
            eat(command_target(line).map_or(1, |t| matches!(t, Target::Slot(_)) as u64));
            eat(command_route(line).map_or(1, |(_, i)| i.is_write() as u64));
            eat(command_keys(line).map_or(1, |keys| keys.count() as u64));
            eat(command_info(line).map_or(1, |i| i.name().len() as u64));
        }
        // A command learned from a server (RediSearch's FT.SEARCH, as
        // redis-server 7 describes it), read and routed.
        let learned = learn_command(search_info).unwrap().unwrap();
        eat(learned
            .route(&[b"FT.SEARCH", b"idx", b"q"])
            .map_or(1, |(_, i)| i.name().len() as u64));
        eat(learn_command(b"*1\r\n$-1\r\n").map_or(1, |c| c.is_none() as u64));
        for node in parse_cluster_nodes(nodes).flatten() {
            eat(u64::from(node.port) + node.slots().filter_map(Result::ok).count() as u64);
        }
        eat(table
            .apply(&OwnershipChange {
                first_slot: 0,
                last_slot: 9000,
                owner: 1,
            })
            .into());
        eat(table.assign_segments(9001..=16383, 2).into());
        eat(table.owner_for_key(&long).map_or(0, u64::from));
        eat(table.owner_for_utf16(&units).map_or(0, u64::from));
        eat(table.owner_of_segment(20000).map_or(7, u64::from));
        eat(table.runs().count() as u64);
        eat(table.distinct_owners::<8>().map_or(0, |v| v.len() as u64));
        std::hint::black_box(sink);
    });
    assert_eq!(n, 0, "the core allocated {n} times");
}

#[test]
fn the_counter_counts() {
    // Proves the allocator above is live, so the zero above means something.
    let n = allocations_during(|| {
        std::hint::black_box(vec![1u8; 10]);
    });
    assert_eq!(n, 1);
}
