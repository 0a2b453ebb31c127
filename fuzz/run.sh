#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) on its committed seeds (fuzz/seeds/NAME:
# small valid inputs plus every input that once found a bug) and the working corpus it
# grows (fuzz/corpus/NAME, not committed), one after the other. A crash fails the
# run and leaves the input under fuzz/artifacts/NAME/. Needs cargo-fuzz
# (`cargo install cargo-fuzz`); on a stable toolchain RUSTC_BOOTSTRAP=1 lets it use the
# sanitizer flags. Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^rocetap-fuzz$')
fi
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzz: $t for ${secs}s"
    # -rss_limit_mb: the analyzer and readers must stay small whatever the input.
    set +e
    mkdir -p "fuzz/seeds/$t"
    cargo fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 \
        -print_final_stats=1 > "fuzz/$t.log" 2>&1
    rc=$?
    set -e
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^SUMMARY|panicked at" "fuzz/$t.log" || true
    if [ $rc -ne 0 ]; then
        tail -40 "fuzz/$t.log" >&2
        echo "fuzz: $t failed (exit $rc); the input is under fuzz/artifacts/$t/" >&2
        exit 1
    fi
done
