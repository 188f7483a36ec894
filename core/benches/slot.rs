//! `slot_for_key` against the peers a user would otherwise pick, side by
//! side in one run: the `crc16` crate (what redis-rs hashes with; timed on
//! the whole key with no tag search, which only flatters it) and
//! `redis-protocol`'s `redis_keyslot`.
//!
//! `cargo bench -p zaris-core --bench slot`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zaris_core::{_benchable, slot_for_key, slot_for_utf16, CrcEngine};

const LENGTHS: [usize; 5] = [8, 16, 32, 64, 256];

/// A printable key of `len` bytes with no `{`.
fn plain_key(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i * 7 % 26) as u8).collect()
}

/// A key of `len` bytes whose first `len / 2` bytes are a hash tag.
fn tagged_key(len: usize) -> Vec<u8> {
    let mut key = plain_key(len);
    key[0] = b'{';
    key[len / 2] = b'}';
    key
}

fn slot_by_length(c: &mut Criterion) {
    let mut group = c.benchmark_group("slot");
    for len in LENGTHS {
        let key = plain_key(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("zaris", len), &key, |b, k| {
            b.iter(|| slot_for_key(black_box(k)))
        });
        group.bench_with_input(
            BenchmarkId::new("zaris-tagged", len),
            &tagged_key(len),
            |b, k| b.iter(|| slot_for_key(black_box(k))),
        );
        group.bench_with_input(BenchmarkId::new("crc16-crate", len), &key, |b, k| {
            b.iter(|| crc16::State::<crc16::XMODEM>::calculate(black_box(k)) % 16384)
        });
        group.bench_with_input(BenchmarkId::new("redis-protocol", len), &key, |b, k| {
            b.iter(|| redis_protocol::redis_keyslot(black_box(k)))
        });
    }
    group.finish();
}

fn crc_paths(c: &mut Criterion) {
    let mut group = c.benchmark_group("crc16-paths");
    for len in [64usize, 256, 1024, 4096] {
        let key = plain_key(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("crc-fast", len), &key, |b, k| {
            b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc16Xmodem, black_box(k)))
        });
        for engine in CrcEngine::ALL.into_iter().filter(|e| e.is_supported()) {
            group.bench_with_input(BenchmarkId::new(engine.name(), len), &key, |b, k| {
                b.iter(|| _benchable::crc16_on(engine, black_box(k)))
            });
            group.bench_with_input(
                BenchmarkId::new(format!("slot-{engine}"), len),
                &key,
                |b, k| b.iter(|| _benchable::slot_for_key_on(engine, black_box(k))),
            );
        }
    }
    group.finish();
}

fn utf16(c: &mut Criterion) {
    let mut group = c.benchmark_group("slot-utf16");
    for (name, text) in [
        ("ascii", "user:1000:followers:2026".repeat(4)),
        ("greek", "κλειδί:χρήστη".repeat(4)),
    ] {
        let units: Vec<u16> = text.encode_utf16().collect();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| b.iter(|| slot_for_utf16(black_box(&units))));
    }
    group.finish();
}

criterion_group!(benches, slot_by_length, crc_paths, utf16);
criterion_main!(benches);
