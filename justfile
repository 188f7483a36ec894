# Zaris: every entry point. `just` lists them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# wasm-pack finds wasm-bindgen (cargo) and wasm-opt (npm's binaryen; Debian's
# is too old and emits broken modules) on PATH instead of downloading them.
export PATH := justfile_directory() + "/node_modules/.bin:" + env_var("HOME") + "/.cargo/bin:" + env_var("PATH")

# Cross targets the core must build for without std or an allocator.
no_std_targets := "thumbv7em-none-eabihf wasm32-unknown-unknown"
# Every fuzz target, as fuzz-dir:target: the parsers of bytes from a socket
# or text from a user. Seeds are committed in each dir's seeds/TARGET.
fuzz_targets := "core/fuzz:error_reply core/fuzz:slot core/fuzz:slot_utf16 core/fuzz:cluster_nodes core/fuzz:command_info client/fuzz:resp client/fuzz:cluster_shards client/fuzz:cluster_slots wasm/fuzz:command_line"
# The oldest Rust the published crates declare (`rust-version`), from the manifest.
msrv := `sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml`
# The crates published to crates.io, packaged together (they depend on each other).
published_crates := "-p zaris-core -p zaris-client -p zaris-cli -p zaris-ffi -p zaris-wasm"

# List the recipes.
default:
    @just --list

# Every test: lint, unit/property/doc tests, real Redis and Valkey, no_std builds.
test: lint
    @echo "==> workspace tests (unit, property, doc)"
    ZARIS_EXPECT_CLMUL=1 cargo test --workspace --exclude zaris-tests
    just test-servers
    cargo test -q -p zaris-client --features metrics --test metrics
    just test-sim
    just test-engines
    @echo "==> zaris-core without std: portable CRC paths only"
    cargo test -p zaris-core --no-default-features
    @echo "==> zaris-core builds with no std and no allocator"
    for target in {{no_std_targets}}; do \
        cargo build -p zaris-core --no-default-features --features serde --target "$target"; \
    done
    just test-aarch64
    just test-baremetal
    just test-python
    just test-web
    just package
    just msrv

# The integration tests on real Redis and Valkey (tests/): the binaries two
# at a time (they wait on failovers more than they compute), the soaks
# alone after them (tools/test-lanes.sh).
[doc("The integration tests on real Redis and Valkey (tests/), two binaries at a time, the soaks after.")]
test-servers:
    #!/usr/bin/env bash
    set -euo pipefail
    echo "==> integration tests on real Redis and Valkey (tests/)"
    bins=$(cargo test -p zaris-tests --no-run 2>&1 | tee /dev/stderr | sed -n 's/.*Executable .*(\(.*\))$/\1/p')
    cargo test -q -p zaris-tests --doc
    ZARIS_EXPECT_CLMUL=1 tools/test-lanes.sh $bins

# The deterministic simulation's build: sim/ is a workspace of its own (the
# client's `sim` feature must never reach the main builds), with tokio's
# scheduler seeded by turmoil (`tokio_unstable`), in a target of its own.
sim_env := "RUSTFLAGS='--cfg tokio_unstable' CARGO_TARGET_DIR=target/sim"

# The simulation's lint and tests, then a campaign of 2,000 seeds.
test-sim: lint-sim sim-tests sim-campaign

# The simulation's formatting and lints, in the main target with the main
# build's flags: only the crates the simulation adds are checked again.
[doc("The simulation's formatting and clippy, warnings denied.")]
lint-sim:
    cargo fmt --manifest-path sim/Cargo.toml -- --check
    CARGO_TARGET_DIR=target cargo clippy --manifest-path sim/Cargo.toml --all-targets -- -D warnings

# The simulation's tests: determinism, effects, plants, findings, conformance.
sim-tests:
    @echo "==> the client in a deterministic simulation (sim/): tests"
    {{sim_env}} cargo test --release --manifest-path sim/Cargo.toml

# CI's campaign: 2,000 seeds, not recorded.
sim-campaign:
    @echo "==> the simulation: 2,000 seeds"
    {{sim_env}} cargo run -q --release --manifest-path sim/Cargo.toml --bin zaris-sim -- campaign 2000 1

# Seeded runs on every core, each a minute of the soak's workload and
# nemesis against the model cluster, judged by the soak's checker. Prints
# the command that replays each failing seed and writes
# target/sim/report.json; `--record` also records the campaign in
# bench/sim/history.jsonl (the Reliability page), so a first try leaves
# the tree as it was.
# A campaign of SEEDS seeds from FROM, judged (`--record`: and recorded).
sim SEEDS="2000" FROM="1" *FLAGS:
    {{sim_env}} cargo run -q --release --manifest-path sim/Cargo.toml --bin zaris-sim -- campaign {{SEEDS}} {{FROM}} {{FLAGS}}

# The simulator built for it by tools/sim-pgo.sh: linked whole and
# optimised with a profile of its own runs, about a fifth fewer
# instructions a seed, the same traces. Summaries go to DIR/runs.jsonl as
# seeds finish, and the same command with `--resume` takes the campaign up
# where it stopped (any build of the same code gives the same traces).
# A long campaign: `just sim-long 200000 1 --out DIR [--resume] [--record]`.
sim-long SEEDS FROM="1" *FLAGS:
    "$(tools/sim-pgo.sh)" campaign {{SEEDS}} {{FROM}} {{FLAGS}}

# Every attempt, redirect, refresh and fault of one run, and the checker's
# verdict.
# One seed's whole trace, as JSON lines in FILE.
sim-trace SEED FILE *FLAGS:
    {{sim_env}} cargo run -q --release --manifest-path sim/Cargo.toml --bin zaris-sim -- trace {{SEED}} {{FILE}} {{FLAGS}}

# A seed's trace where the playground finds it: then open the playground
# with ?seed=SEED (and &plant=PLANT when one is given).
[doc("A seed's trace where the playground finds it (?seed=SEED, &plant=PLANT).")]
replay SEED PLANT="":
    just sim-trace {{SEED}} web/traces/seed-{{SEED}}{{ if PLANT == "" { "" } else { "-" + PLANT } }}.jsonl {{ if PLANT == "" { "" } else { "--plant " + PLANT } }}
    @echo "==> ./run play, then open http://127.0.0.1:8080/?seed={{SEED}}{{ if PLANT == "" { "" } else { "&plant=" + PLANT } }}"

# The traces the playground carries (web/traces/*.jsonl.gz, listed in
# index.json with why each is worth a look), written again by this build.
[doc("Write again the traces the playground carries (web/traces/), with why each is worth a look.")]
replay-traces:
    #!/usr/bin/env bash
    set -euo pipefail
    commit=$(git rev-parse --short HEAD)
    # seed|plant|what it stages (one of the model's counts, which
    # sim/tests/traces.rs holds it to)|why it is worth a look
    shipped=(
      "13||maps given from a partial view|every node replaced at new addresses; a new node deaf to a master answers with a partial map, and the client takes the complete one"
      "1||blocked commands let go by a demotion|a BLPOP let go by a manual failover (-UNBLOCKED) blocks again on the new master"
      "13|map-from-fewer-slots|maps given from a partial view|a planted bug: every node replaced at new addresses, a new node deaf to a master answers with a partial map, the client takes it, and the checker catches it"
    )
    entries=()
    for s in "${shipped[@]}"; do
      IFS='|' read -r seed plant stages why <<<"$s"
      name="seed-$seed${plant:+-$plant}.jsonl"
      just sim-trace "$seed" "target/sim/$name" ${plant:+--plant "$plant"}
      gzip -9n -c "target/sim/$name" > "web/traces/$name.gz"
      entries+=("$(node -e 'const [seed, plant, stages, why, commit] = process.argv.slice(1);
        console.log(JSON.stringify({ seed: Number(seed), ...(plant ? { plant } : {}), stages, why, commit }))' \
        "$seed" "$plant" "$stages" "$why" "$commit")")
    done
    (IFS=,; echo "[${entries[*]}]") | node -e 'console.log(JSON.stringify(JSON.parse(require("fs").readFileSync(0, "utf8")), null, 2))' > web/traces/index.json
    echo "==> web/traces/: ${#shipped[@]} traces at $commit"

# zaris-core's whole suite once per CRC engine this CPU runs, each forced
# in turn (`ZARIS_CRC_ENGINE` caps the dispatch at compile time).
[doc("zaris-core's whole suite once per CRC engine this CPU runs, each forced in turn.")]
test-engines:
    #!/usr/bin/env bash
    set -euo pipefail
    engines=$(cargo run -q -p zaris-core --example engines)
    echo "==> zaris-core's suite on each CRC engine this CPU runs: $(echo $engines)"
    for engine in $engines; do
        echo "==> zaris-core on the $engine engine"
        ZARIS_CRC_ENGINE=$engine cargo test -q -p zaris-core --release --lib --tests
    done

# zaris-core on aarch64 under qemu-user: the PMULL engine found at run time
# (std), then chosen at compile time (no std, `+aes`).
[doc("zaris-core on aarch64 under qemu-user: PMULL found at run time, then chosen at compile time.")]
test-aarch64:
    @echo "==> zaris-core on aarch64 (qemu-user): PMULL detected at run time"
    # Emulated, so fewer property cases (the native runs take the full 2,000).
    PROPTEST_CASES=200 ZARIS_EXPECT_CLMUL=1 cargo test -p zaris-core --features simulate --target aarch64-unknown-linux-gnu
    @echo "==> zaris-core on aarch64 without std: PMULL by target feature"
    ZARIS_EXPECT_CLMUL=1 CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+aes" \
        cargo test -p zaris-core --no-default-features --target aarch64-unknown-linux-gnu --lib

# The wasm build in headless Chromium (wasm-bindgen-test), the npm package, the playground end to end.
test-web: npm-pack dashboard
    @echo "==> wasm-bindgen tests in headless Chromium"
    CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=120 \
        cargo test -p zaris-wasm --target wasm32-unknown-unknown
    @echo "==> the nodejs package and the playground in Chromium (playwright-core)"
    node --test tests/e2e/*.test.mjs

# Formatting and clippy, warnings denied (also for the no_std targets).
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    cargo clippy -p zaris-client --features metrics --all-targets -- -D warnings
    cargo clippy -p zaris-client --features redis-compat --all-targets -- -D warnings
    for target in {{no_std_targets}}; do \
        cargo clippy -p zaris-core --no-default-features --features serde --target "$target" -- -D warnings; \
    done
    cargo clippy -p zaris-wasm --target wasm32-unknown-unknown --all-targets -- -D warnings
    cargo clippy -p zaris-core --target aarch64-unknown-linux-gnu --all-targets -- -D warnings
    cargo fmt --manifest-path python/Cargo.toml -- --check
    cargo clippy --manifest-path python/Cargo.toml -- -D warnings
    cargo fmt --manifest-path baremetal/Cargo.toml -- --check
    cd baremetal && cargo clippy --release -- -D warnings
    @echo "==> rustdoc, warnings denied"
    RUSTDOCFLAGS="-D warnings" cargo doc -q --workspace --no-deps

# The benchmark suite: recorded in bench/history.jsonl, charted into web/dashboard/
# (`just bench --quick`: criterion's quick mode, charted but not recorded).
[doc("The benchmark suite, recorded and charted into web/dashboard/ (--quick: charted, not recorded).")]
bench MODE="":
    #!/usr/bin/env bash
    set -euo pipefail
    case "{{MODE}}" in ""|--quick) ;; *) echo "usage: just bench [--quick]" >&2; exit 2;; esac
    since=$(date +%s)
    echo "==> [1/5] building the benches"
    cargo bench -p zaris-bench --no-run
    echo "==> [2/5] heap allocations per operation (counting allocator)"
    cargo bench -p zaris-bench --bench allocs
    echo "==> [3/5] criterion: slot by key kind and length, UTF-16, route lookup, retry brain"
    cargo bench -p zaris-bench --bench routing -- {{MODE}}
    echo "==> [4/5] every CRC engine against the peers, interleaved (the speed bars' figures)"
    cargo bench -p zaris-bench --bench tiers -- {{MODE}}
    echo "==> [5/5] recording the run and rendering the dashboard"
    cargo run -q -p zaris-bench --bin zaris-dashboard -- record --since "$since" {{MODE}}
    cargo run -q -p zaris-bench --bin zaris-dashboard -- render {{MODE}}
    echo "==> open web/dashboard/index.html (or \`just play\` and follow the link)"

# Each benchmark's change between the last two recorded runs on this CPU model; regressions marked.
bench-compare:
    cargo run -q -p zaris-bench --bin zaris-dashboard -- compare

# Zaris's client vs fred and redis-rs on a local cluster: throughput, latency,
# and per operation CPU, syscalls by kind, context switches (root: kernel
# tracepoints) and callgrind instructions (valgrind); failover.
[doc("Zaris's client against fred and redis-rs on a local cluster: throughput, latency, CPU, syscalls, instructions.")]
bench-client MODE="":
    cargo bench -p zaris-bench --bench client -- {{MODE}}

# The seeded nemesis soak: a 3+3 cluster behind fault-injecting proxies,
# a mixed workload through zaris-client, a churn event every few seconds,
# a history checker at the end. SEED defaults to the time (printed; the
# same seed replays the same events). The report and its timeline go to
# target/soak/ and are recorded in bench/soak/ for the dashboard's
# Reliability page. ZARIS_REDIS_SERVER=valkey-server runs it on Valkey.
[doc("The seeded nemesis soak on a real 3+3 cluster, judged by the history checker and recorded.")]
soak SECONDS="60" SEED="":
    cargo run --release -q -p zaris-tests --bin zaris-soak -- {{SECONDS}} "{{SEED}}" --record
    cargo run -q -p zaris-bench --bin zaris-dashboard -- render

# A local cluster for manual use (3 masters, 3 replicas); its seeds are printed. SERVER: redis-server or valkey-server.
cluster-up SERVER="redis-server":
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p target/zaris-cluster
    if [ -f target/zaris-cluster/pid ] && kill -0 "$(cat target/zaris-cluster/pid)" 2>/dev/null; then
        echo "a cluster is already up: $(cat target/zaris-cluster/seeds)"; exit 0
    fi
    cargo build -q -p zaris-tests --bin zaris-cluster
    rm -f target/zaris-cluster/seeds
    nohup target/debug/zaris-cluster {{SERVER}} target/zaris-cluster/seeds > target/zaris-cluster/log 2>&1 &
    echo $! > target/zaris-cluster/pid
    for _ in $(seq 600); do [ -s target/zaris-cluster/seeds ] && break; kill -0 "$(cat target/zaris-cluster/pid)" || { cat target/zaris-cluster/log; exit 1; }; sleep 0.1; done
    echo "cluster up: $(cat target/zaris-cluster/seeds)   (just cluster-down stops it)"
    seed=$(cut -d' ' -f1 target/zaris-cluster/seeds)
    echo "try it:"
    echo "  cargo run -p zaris-client --example quickstart -- $seed"
    echo "  cargo run -p zaris-client --example pubsub -- $seed 20"
    echo "  cargo run -p zaris-client --example churn -- $seed 60    # then fail a master over: redis-cli -p PORT cluster failover (PORT: a replica's)"
    echo "  cargo run -p zaris-client --example tls -- SEED ca.pem   # against a TLS cluster"
    echo "  cargo run -p zaris-cli -- map $seed"
    echo "  cargo run -p zaris-cli -- watch $seed"

# Stops the cluster `just cluster-up` started.
cluster-down:
    #!/usr/bin/env bash
    if [ -f target/zaris-cluster/pid ] && kill "$(cat target/zaris-cluster/pid)" 2>/dev/null; then echo "cluster stopped"; else echo "no cluster running"; fi
    rm -f target/zaris-cluster/pid target/zaris-cluster/seeds

# The dashboard page and charts from the recorded history (no benchmarking).
dashboard:
    ./run dashboard

# Regenerate core/src/command_table.rs from the COMMAND replies of Redis and Valkey (both started here).
command-table:
    cargo run -q -p zaris-tests --bin zaris-command-table
    cargo fmt -p zaris-core

# The crates as crates.io would take them (`cargo package`, each one built
# from its own tarball), and the npm package as `npm publish` would send it.
[doc("The crates as crates.io would take them, and the npm package as npm publish would send it.")]
package: npm-pack
    @echo "==> cargo package: zaris-core, zaris-client, zaris-cli, zaris-ffi, zaris-wasm"
    # cargo verifies each tarball against the others through a registry in
    # target/package/, unpacks them under CARGO_HOME once per registry path,
    # and takes registry sources (and what it built of them) as never
    # changing: a clone at a path packaged before would build against the
    # old sources still unpacked there, or reuse what it built of them. So
    # the unpacked copies go (only our own crates are ever there), and the
    # check builds in a target directory of its own, from nothing.
    find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -mindepth 2 -maxdepth 2 -name 'zaris-*' -exec rm -rf {} +
    rm -rf target/package target/package-check
    CARGO_TARGET_DIR=target/package-check cargo package -q --allow-dirty {{published_crates}}
    @echo "==> npm publish --dry-run: only what a user needs"
    node tools/npm-dry-run.mjs

# The published crates on the Rust they declare (`rust-version`), installed
# by rustup if missing: a check, in a target directory of its own.
[doc("The published crates checked on the Rust they declare (rust-version).")]
msrv:
    @echo "==> the published crates on Rust {{msrv}} (rust-version)"
    rustup toolchain list | grep -q '^{{msrv}}-' || rustup toolchain install {{msrv}} --profile minimal
    CARGO_TARGET_DIR=target/msrv cargo +{{msrv}} check -q {{published_crates}}
    CARGO_TARGET_DIR=target/msrv cargo +{{msrv}} check -q -p zaris-core --no-default-features
    CARGO_TARGET_DIR=target/msrv cargo +{{msrv}} check -q -p zaris-client --features redis-compat

# Regenerate the C header ffi/include/zaris.h from the zaris-ffi crate (cbindgen).
ffi-header:
    ZARIS_BLESS=1 cargo test -q -p zaris-ffi --test header

# The Python package as a user installs it: the wheel (`just wheel`) in a
# fresh venv whose PATH has no cargo and no rustc, its tests run there
# against a real redis-server and redis-py; and the sdist built from source
# (with cargo) in another, as pip does where no wheel fits.
[doc("The Python wheel in a fresh venv with no cargo, and the sdist built from source, against real Redis.")]
test-python: wheel
    #!/usr/bin/env bash
    set -euo pipefail
    echo "==> the Python wheel in a fresh venv, with no cargo or rustc on PATH"
    venv=target/python-wheel-venv
    rm -rf "$venv" target/python-path
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q pytest redis
    "$venv/bin/pip" install -q --no-index --only-binary=:all: target/wheels/zaris-*.whl
    # PATH: the venv and the server the tests start, nothing of Rust's.
    mkdir -p target/python-path
    ln -s "$(command -v redis-server)" target/python-path/redis-server
    path="$PWD/$venv/bin:$PWD/target/python-path"
    PATH="$path" "$venv/bin/python" -c 'import shutil, sys; found = [t for t in ("cargo", "rustc") if shutil.which(t)]; sys.exit(f"on PATH: {found}" if found else 0)'
    PATH="$path" "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
    echo "==> the Python sdist, built from source by pip (cargo on PATH)"
    "$venv/bin/pip" install -q --force-reinstall --no-deps --no-binary=zaris target/wheels/zaris-*.tar.gz
    "$venv/bin/python" -c 'import zaris; assert zaris.key_slot("{user1000}.following") == 3443; print("sdist: built, key_slot ok on", zaris.crc_engine())'

# The Python package's abi3 wheel (tagged for the manylinux level its glibc
# symbols allow, as maturin checks them) and its sdist, in target/wheels.
[doc("The Python package's abi3 wheel and its sdist, in target/wheels.")]
wheel: python-venv
    #!/usr/bin/env bash
    set -euo pipefail
    target/python-venv/bin/pip install -q 'maturin>=1.7,<2'
    rm -rf target/wheels
    (cd python && ../target/python-venv/bin/maturin build -q --release --out ../target/wheels)
    (cd python && ../target/python-venv/bin/maturin sdist --out ../target/wheels)
    ls target/wheels

# zaris against redis-py's key_slot, per key and for a batch of 100,000 (not a test).
bench-python: wheel
    target/python-venv/bin/pip install -q --force-reinstall target/wheels/zaris-*.whl
    target/python-venv/bin/python -P python/bench.py

[doc("A Python venv in target/python-venv with maturin, pytest and redis-py.")]
python-venv:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x target/python-venv/bin/pytest ]; then
        echo "==> a Python venv in target/python-venv (pytest, redis-py)"
        python3 -m venv target/python-venv
        target/python-venv/bin/pip install -q --upgrade pip
        target/python-venv/bin/pip install -q pytest redis
    fi

# zaris-core on a Cortex-M3 with no OS and no allocator, under qemu-system-arm:
# slots against vectors from a real redis-server, and the retry machine.
[doc("zaris-core on a Cortex-M3 under qemu-system-arm: slots against real vectors, and the retry machine.")]
test-baremetal:
    @echo "==> zaris-core bare metal: a Cortex-M3 under qemu-system-arm (semihosting)"
    cd baremetal && cargo run -q --release

# Regenerate baremetal/src/vectors.rs from the installed redis-server.
baremetal-vectors:
    cargo run -q -p zaris-tests --bin zaris-baremetal-vectors

# The core's own criterion benches (args go to criterion, e.g. `slot/ --quick`).
bench-core *ARGS:
    cargo bench -p zaris-core --bench slot -- {{ARGS}}

# Run every fuzz target (or those named in ONLY, space-separated) for SECONDS
# each (cargo-fuzz on the stable toolchain), from its committed seeds;
# executions and crashes per target at the end.
[doc("Every fuzz target (or those in ONLY) for SECONDS each, from its committed seeds.")]
fuzz SECONDS="60" ONLY="":
    #!/usr/bin/env bash
    set -uo pipefail
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
    mkdir -p target/fuzz
    summary=()
    crashed=0
    for entry in {{fuzz_targets}}; do
        dir=${entry%%:*} target=${entry#*:} log=target/fuzz/${entry#*:}.log
        [ -z "{{ONLY}}" ] || [[ " {{ONLY}} " == *" $target "* ]] || continue
        echo "==> fuzzing $target ($dir) for {{SECONDS}} s; log: $log"
        mkdir -p "$dir/corpus/$target"
        RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir "$dir" -O "$target" "$dir/corpus/$target" "$dir/seeds/$target" \
            -- -max_total_time={{SECONDS}} >"$log" 2>&1 &
        pid=$!
        while kill -0 "$pid" 2>/dev/null; do
            sleep 30
            progress=$(grep -aE '^#[0-9]+' "$log" | tail -n 1)
            [ -z "$progress" ] || echo "    $progress"
        done
        wait "$pid"; status=$?
        runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
        if [ "$status" -ne 0 ]; then
            crashed=$((crashed + 1))
            summary+=("$target: CRASHED after ${runs:-?} runs (artifact in $dir/artifacts/$target; see $log)")
        else
            summary+=("$target: ${runs:-?} runs, no crash")
        fi
    done
    echo "==> fuzzing done, {{SECONDS}} s a target:"
    printf '    %s\n' "${summary[@]}"
    exit "$crashed"

# Node tools (wasm-opt from npm's binaryen, playwright-core, the benchmark peer).
npm-deps:
    [ -x node_modules/.bin/wasm-opt ] && [ -d node_modules/playwright-core ] && [ -d node_modules/axe-core ] || npm ci --no-audit --no-fund

# The wasm package for browsers (web/pkg) and Node (target/pkg-node), and the page's vendored peer.
web-build: npm-deps
    ./run web-build web node

# The npm package `zaris` (Node, bundlers, browsers), packed to target/npm/zaris-<version>.tgz.
npm-pack: web-build
    ./run npm-pack

# zaris's generate and generateBatch against cluster-key-slot in one Node process (not a test).
bench-node: npm-pack
    node tools/bench-node.mjs

# What the client cache's checks cost the servers, and a hit against a read.
cache-cost:
    cargo run --release -q -p zaris-tests --bin zaris-cache-cost

# How long the playground takes to analyse 1k, 10k and 100k pasted keys.
analysis-speed: web-build
    node tools/analysis-speed.mjs

# Build and serve the playground and the dashboard on 127.0.0.1:PORT (Ctrl-C stops it).
play PORT="8080":
    ./run play {{PORT}}
