#!/usr/bin/env bash
# Runs the real-server test binaries of zaris-tests (already built: `cargo
# test -p zaris-tests --no-run`), given as paths, two at a time: they
# spend most of their time waiting on failovers, time-outs and restarts,
# not computing. The ones named in SOLO (the soak and the cache's churn
# soak, which load the machine and check deadlines) run afterwards, one
# at a time. Each binary's output goes to target/test-lanes/NAME.log; a
# failure prints the end of its log, and the run fails.
set -euo pipefail
bins=()
for bin in "$@"; do bins+=("$(realpath "$bin")"); done
cd "$(dirname "$0")/../tests"
logs=../target/test-lanes
mkdir -p "$logs"
SOLO=" soak client_cache_churn "

run_one() {
    local bin=$1 name started
    name=$(basename "$bin" | sed 's/-[0-9a-f]*$//')
    started=$SECONDS
    if "$bin" >"$logs/$name.log" 2>&1; then
        printf '    %-28s ok   %4d s  %s\n' "$name" $((SECONDS - started)) "$(grep -h 'test result' "$logs/$name.log" | tail -n 1 | sed 's/; finished.*//')"
    else
        printf '    %-28s FAILED after %d s; the end of %s:\n' "$name" $((SECONDS - started)) "$logs/$name.log" >&2
        tail -n 40 "$logs/$name.log" >&2
        return 1
    fi
}
export -f run_one
export logs

lanes=()
solo=()
for bin in "${bins[@]}"; do
    name=$(basename "$bin" | sed 's/-[0-9a-f]*$//')
    if [[ "$SOLO" == *" $name "* ]]; then solo+=("$bin"); else lanes+=("$bin"); fi
done
echo "==> ${#lanes[@]} real-server test binaries, two at a time"
printf '%s\n' "${lanes[@]}" | xargs -P 2 -I{} bash -c 'run_one "$@"' _ {}
echo "==> ${#solo[@]} soaks, one at a time"
for bin in "${solo[@]}"; do run_one "$bin"; done
