#!/usr/bin/env bash
# Builds the simulator for a long campaign: the `campaign` profile (fat
# LTO, one codegen unit), optimised with a profile of its own runs (PGO).
# The same code as `just sim` runs, so the same traces to the byte; about
# a fifth fewer instructions a seed (callgrind, seed 7: 1,539M in
# `release`, 1,395M linked whole, 1,240M with the profile). Two builds
# and 40 training seeds: about 5 minutes on 2 cores, once per change.
# Prints the binary's path (target/sim-pgo/use/campaign/zaris-sim).
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/sim-pgo
profdata() { find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f | head -n 1; }
if [[ -z "$(profdata)" ]]; then
    echo "==> llvm-tools (llvm-profdata), from rustup" >&2
    rustup component add llvm-tools >&2
fi
build() { # TARGET_DIR RUSTFLAGS...
    local dir=$1
    shift
    RUSTFLAGS="--cfg tokio_unstable $*" CARGO_TARGET_DIR="$dir" \
        cargo build -q --profile campaign --manifest-path sim/Cargo.toml --bin zaris-sim >&2
}
rm -rf "$out/raw" "$out/train"
echo "==> the simulator, instrumented" >&2
build "$out/gen" "-Cprofile-generate=$PWD/$out/raw"
echo "==> 40 training seeds (far from any campaign's: their verdicts do not matter)" >&2
"$out/gen/campaign/zaris-sim" campaign 40 1000000000 --jobs 1 --out "$out/train" >/dev/null 2>&1 || true
"$(profdata)" merge -o "$out/merged.profdata" "$out"/raw/*.profraw
echo "==> the simulator, optimised with that profile" >&2
build "$out/use" "-Cprofile-use=$PWD/$out/merged.profdata"
echo "$out/use/campaign/zaris-sim"
