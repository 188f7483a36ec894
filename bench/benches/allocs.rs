//! Heap allocations per operation on the routing path, counted by a global
//! allocator: every figure must be 0. Printed, and written for the
//! dashboard to `target/zaris-bench/allocs.json`.
//!
//! `cargo bench -p zaris-bench --bench allocs`

// A global allocator is unsafe to implement; this one only counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use zaris_bench::keys::{self, KeyKind};
use zaris_core::{
    hash_tag, parse_error_reply, retry_delay, segment_for_key, slot_for_key, slot_for_utf16,
    utf8_from_utf16_lossy, KvStatus, Outcome, OwnershipChange, RetryLoop, RetryPolicy,
    SegmentTable, NO_OWNER,
};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const RUNS: u32 = 10_000;

/// Allocations per call of `op`, over `RUNS` calls.
fn per_op<R>(mut op: impl FnMut() -> R) -> f64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..RUNS {
        black_box(op());
    }
    (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / f64::from(RUNS)
}

fn main() {
    let mut counts = BTreeMap::new();
    for kind in KeyKind::ALL {
        for len in [8, 256, 4096] {
            let key = kind.key(len);
            counts.insert(
                format!("slot_for_key/{}/{len}", kind.name()),
                per_op(|| slot_for_key(black_box(&key))),
            );
        }
    }
    let units: Vec<u16> = keys::utf8_text(256).encode_utf16().collect();
    counts.insert(
        "slot_for_utf16/non-ascii/256".into(),
        per_op(|| slot_for_utf16(black_box(&units))),
    );
    let mut utf8 = [0u8; 64];
    counts.insert(
        "utf8_from_utf16_lossy/non-ascii/256".into(),
        per_op(|| utf8_from_utf16_lossy(black_box(&units), &mut utf8).1),
    );
    counts.insert(
        "hash_tag".into(),
        per_op(|| hash_tag(black_box(b"{user1000}.following")).len()),
    );
    counts.insert(
        "segment_for_key".into(),
        per_op(|| segment_for_key(black_box(b"user:1"), 1024)),
    );

    let mut table = keys::split_evenly(SegmentTable::new(vec![NO_OWNER; 16384]).unwrap(), 3);
    let route_keys = keys::route_keys();
    let mut i = 0;
    counts.insert(
        "route/owner_for_key".into(),
        per_op(|| {
            i = (i + 1) % keys::ROUTE_KEYS;
            table.owner_for_key(&route_keys[i])
        }),
    );
    let mut owner = 0;
    counts.insert(
        "apply/16384".into(),
        per_op(|| {
            owner ^= 1;
            table.apply(&OwnershipChange {
                first_slot: 0,
                last_slot: 999,
                owner,
            })
        }),
    );
    counts.insert(
        "distinct_owners".into(),
        per_op(|| table.distinct_owners::<16>().map(|o| o.len())),
    );
    let left = Some(Duration::from_secs(5));
    counts.insert(
        "retry_delay".into(),
        per_op(|| {
            retry_delay(
                black_box(2),
                Duration::from_millis(100),
                Some(KvStatus::Migrating),
                left,
            )
        }),
    );
    counts.insert(
        "retry_decision".into(),
        per_op(|| {
            RetryLoop::new(RetryPolicy::DEFAULT).record(Outcome::Status(KvStatus::Moved), left)
        }),
    );
    counts.insert(
        "parse_error_reply".into(),
        per_op(|| parse_error_reply(black_box(b"-MOVED 3443 [::1]:7001\r\n")).map(|r| r.status())),
    );

    let width = counts.keys().map(String::len).max().unwrap_or(0);
    println!("heap allocations per operation ({RUNS} calls each):");
    for (op, n) in &counts {
        println!("  {op:width$}  {n}");
    }
    let dirty: Vec<&String> = counts
        .iter()
        .filter(|(_, n)| **n != 0.0)
        .map(|(op, _)| op)
        .collect();
    if dirty.is_empty() {
        println!("all {} operations allocate nothing", counts.len());
    } else {
        println!("ALLOCATING: {dirty:?}");
    }
    let out = out_file();
    std::fs::create_dir_all(out.parent().expect("a file in a directory"))
        .expect("create target/zaris-bench");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&counts).expect("counts serialize"),
    )
    .expect("write allocs.json");
    println!("written to {}", out.display());
}

fn out_file() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("zaris-bench/allocs.json")
}
