# Zaris: every entry point. `just` lists them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Cross targets the core must build for without std or an allocator.
no_std_targets := "thumbv7em-none-eabihf wasm32-unknown-unknown"
fuzz_targets := "error_reply slot slot_utf16"

# List the recipes.
default:
    @just --list

# Every test: lint, unit/property/doc tests, real Redis and Valkey, no_std builds.
test: lint
    @echo "==> workspace tests (unit, property, doc, real servers)"
    cargo test --workspace
    @echo "==> zaris-core without std: portable CRC paths only"
    cargo test -p zaris-core --no-default-features
    @echo "==> zaris-core builds with no std and no allocator"
    for target in {{no_std_targets}}; do \
        cargo build -p zaris-core --no-default-features --features serde --target "$target"; \
    done

# Formatting and clippy, warnings denied (also for the no_std targets).
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    for target in {{no_std_targets}}; do \
        cargo clippy -p zaris-core --no-default-features --features serde --target "$target" -- -D warnings; \
    done

# The core's criterion benches vs the crc16 crate and redis-protocol (args go to criterion).
bench-core *ARGS:
    cargo bench -p zaris-core --bench slot -- {{ARGS}}

# Run every fuzz target for SECONDS each (cargo-fuzz on the stable toolchain).
fuzz SECONDS="60":
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    for target in {{fuzz_targets}}; do \
        echo "==> fuzzing $target for {{SECONDS}} s"; \
        RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir core/fuzz -O "$target" -- -max_total_time={{SECONDS}}; \
    done
