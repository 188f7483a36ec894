//! The per-operation cost of routing, side by side with the peers a user
//! would pick instead, in one run so every chart shows a ratio.
//!
//! `just bench` runs this, records the medians and renders the dashboard;
//! `cargo bench -p zaris-bench --bench routing -- slot-ascii` runs a part.
//!
//! Peers (versions pinned in `Cargo.lock`): the `crc16` crate (what redis-rs
//! hashes with; timed on the whole key, no tag search, which only flatters
//! it), `redis-protocol`'s `redis_keyslot`, redis-rs's own
//! `cluster_routing::Slot::for_key`, the `crc` crate's `CRC_16_XMODEM` with
//! a 16-slice table, and `crc-fast` (the fastest published SIMD CRC-16; its
//! widest engine on this CPU); the last two on the whole key, no tag search.
//!
//! Every CRC engine of the core against these peers, interleaved so that a
//! noisy machine cannot skew the ratios, is `benches/tiers.rs`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zaris_bench::keys::{self, KeyKind, ROUTE_KEYS};
use zaris_core::{
    retry_delay, slot_for_key, slot_for_utf16, KvStatus, Outcome, OwnerId, OwnershipChange,
    RetryLoop, RetryPolicy, SegmentTable, NO_OWNER, SLOT_COUNT,
};

const CRC_SLICE16: crc::Crc<u16, crc::Table<16>> =
    crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);

fn slot_by_kind(c: &mut Criterion) {
    for kind in KeyKind::ALL {
        let mut group = c.benchmark_group(format!("slot-{}", kind.name()));
        for len in keys::LENGTHS {
            let key = kind.key(len);
            group.throughput(Throughput::Bytes(len as u64));
            group.bench_with_input(BenchmarkId::new("zaris", len), &key, |b, k| {
                b.iter(|| slot_for_key(black_box(k)))
            });
            group.bench_with_input(BenchmarkId::new("crc16", len), &key, |b, k| {
                b.iter(|| crc16::State::<crc16::XMODEM>::calculate(black_box(k)) % SLOT_COUNT)
            });
            group.bench_with_input(BenchmarkId::new("redis-protocol", len), &key, |b, k| {
                b.iter(|| redis_protocol::redis_keyslot(black_box(k)))
            });
            group.bench_with_input(BenchmarkId::new("redis-rs", len), &key, |b, k| {
                b.iter(|| redis::cluster_routing::Slot::for_key(black_box(k)))
            });
            group.bench_with_input(BenchmarkId::new("crc-slice16", len), &key, |b, k| {
                b.iter(|| CRC_SLICE16.checksum(black_box(k)) % SLOT_COUNT)
            });
            group.bench_with_input(BenchmarkId::new("crc-fast", len), &key, |b, k| {
                b.iter(|| {
                    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc16Xmodem, black_box(k)) as u16
                        % SLOT_COUNT
                })
            });
        }
        group.finish();
    }
}

/// UTF-16 hosts: the core hashes the code units directly; the peer is what
/// such a host does otherwise, encode to UTF-8 and hash that.
fn slot_utf16(c: &mut Criterion) {
    let mut group = c.benchmark_group("slot-utf16");
    for (name, text) in [
        ("ascii", keys::ascii_text(256)),
        ("non-ascii", keys::utf8_text(256)),
    ] {
        let units: Vec<u16> = text.encode_utf16().collect();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("zaris", name), &units, |b, u| {
            b.iter(|| slot_for_utf16(black_box(u)))
        });
        group.bench_with_input(BenchmarkId::new("encode+redis-rs", name), &units, |b, u| {
            b.iter(|| {
                let utf8 = String::from_utf16_lossy(black_box(u));
                redis::cluster_routing::Slot::for_key(utf8.as_bytes())
            })
        });
    }
    group.finish();
}

/// Key -> owner index for 1024 different keys in turn, so no lookup is
/// predicted from the last one.
fn route(c: &mut Criterion) {
    let keys = keys::route_keys();
    let mut group = c.benchmark_group("route");
    let mut next = cycle(&keys);
    group.bench_function("slot_for_key", |b| b.iter(|| slot_for_key(next())));

    let table = SegmentTable::new(vec![NO_OWNER; usize::from(SLOT_COUNT)]).unwrap();
    let table = keys::split_evenly(table, 3);
    let mut next = cycle(&keys);
    group.bench_function("zaris-table", |b| b.iter(|| table.owner_for_key(next())));

    for ranges in [3u16, 100] {
        // redis-rs keeps its slot map as a BTreeMap keyed by each range's
        // last slot and looks up the first range ending at or after the slot.
        let tree: BTreeMap<u16, OwnerId> = keys::slot_ranges(ranges)
            .iter()
            .map(|&(_, last, owner)| (last, owner))
            .collect();
        let mut next = cycle(&keys);
        group.bench_function(BenchmarkId::new("btreemap", ranges), |b| {
            b.iter(|| {
                tree.range(slot_for_key(next())..)
                    .next()
                    .map(|(_, &owner)| owner)
            })
        });
        // go-redis and fred: a sorted vector of ranges, binary searched.
        let sorted = keys::slot_ranges(ranges);
        let mut next = cycle(&keys);
        group.bench_function(BenchmarkId::new("sorted-ranges", ranges), |b| {
            b.iter(|| {
                let slot = slot_for_key(next());
                let i = sorted.partition_point(|&(_, last, _)| last < slot);
                sorted.get(i).map(|&(_, _, owner)| owner)
            })
        });
    }
    group.finish();
}

/// The next key of `keys` on every call, wrapping around.
fn cycle<'a>(keys: &'a [Vec<u8>; ROUTE_KEYS]) -> impl FnMut() -> &'a [u8] + 'a {
    let mut i = 0;
    move || {
        i = (i + 1) % ROUTE_KEYS;
        black_box(&keys[i])
    }
}

fn retry_brain(c: &mut Criterion) {
    let mut group = c.benchmark_group("retry");
    let left = Some(Duration::from_secs(5));
    group.bench_function("retry_delay", |b| {
        b.iter(|| {
            retry_delay(
                black_box(2),
                black_box(Duration::from_millis(100)),
                Some(KvStatus::Migrating),
                left,
            )
        })
    });
    group.bench_function("decision", |b| {
        b.iter(|| {
            let mut retries = RetryLoop::new(RetryPolicy::DEFAULT);
            retries.record(black_box(Outcome::Status(KvStatus::Moved)), left)
        })
    });

    // One push event: 1000 slots handed to another owner, flipping between
    // two owners so every application really changes 1000 segments.
    let base = keys::split_evenly(SegmentTable::new(vec![NO_OWNER; 16384]).unwrap(), 3);
    let mut table = base.clone();
    let mut owner = 0;
    group.bench_function("apply-16384", |b| {
        b.iter(|| {
            owner ^= 1;
            table.apply(black_box(&OwnershipChange {
                first_slot: 0,
                last_slot: 999,
                owner,
            }))
        })
    });
    let unchanged = OwnershipChange {
        first_slot: 0,
        last_slot: 999,
        owner: 0,
    };
    let mut table = base.clone();
    group.bench_function("apply-unchanged-16384", |b| {
        b.iter(|| table.apply(black_box(&unchanged)))
    });
    // What the client pays per push: copy the snapshot, patch it (then swap).
    group.bench_function("clone-apply-16384", |b| {
        b.iter(|| {
            let mut next = black_box(&base).clone();
            next.apply(&OwnershipChange {
                first_slot: 0,
                last_slot: 999,
                owner: 1,
            });
            next
        })
    });
    group.finish();
}

fn config() -> Criterion {
    // Short windows and a lighter analysis: ~155 benchmarks in about five
    // minutes on 2 cores. These operations take nanoseconds, so a second of
    // samples is plenty; the dashboard draws its own charts.
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(900))
        .sample_size(40)
        .nresamples(10_000)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = slot_by_kind, slot_utf16, route, retry_brain
}
criterion_main!(benches);
