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
# AddressSanitizer keeps 256 MB of freed memory in quarantine by default, and with it the
# process's RSS grows with the corpus, not the input: netcheck_json's grown corpus (2,218
# inputs) reached 649 MB before fuzzing began, 211 MB with a 32 MB quarantine. With the
# smaller quarantine FUZZ_RSS_MB measures the target's own memory again.
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=32}"
# Targets that need a feature of rocetap's (`required-features` in fuzz/Cargo.toml) are
# built and run with it; the others link the engine alone.
features_of() {
    awk -v t="$1" '/^\[\[bin\]\]/{n=""} /^name = /{n=$3} /^required-features/ && n=="\""t"\"" {
        gsub(/.*\[|\].*|"| /, ""); print "--features=" $0 }' fuzz/Cargo.toml
}
cargo fuzz build -O
cargo fuzz build -O --features=agent agent_config
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzz: $t for ${secs}s"
    # Memory blow-ups are crashes: no input may make a reader or the analyzer grow past
    # FUZZ_MALLOC_MB in one allocation or FUZZ_RSS_MB in all (the process's RSS, which
    # includes AddressSanitizer's shadow memory and quarantine).
    # Inputs go up to FUZZ_MAX_LEN bytes, so that a limit on counts (routes, QPs, NADs,
    # YAML values) is reachable.
    set +e
    mkdir -p "fuzz/seeds/$t"
    # shellcheck disable=SC2046
    cargo fuzz run -O $(features_of "$t") "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- -max_total_time="$secs" \
        -rss_limit_mb="${FUZZ_RSS_MB:-640}" -malloc_limit_mb="${FUZZ_MALLOC_MB:-256}" \
        -max_len="${FUZZ_MAX_LEN:-262144}" -print_final_stats=1 > "fuzz/$t.log" 2>&1
    rc=$?
    set -e
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^SUMMARY|panicked at" "fuzz/$t.log" || true
    if [ $rc -ne 0 ]; then
        tail -40 "fuzz/$t.log" >&2
        echo "fuzz: $t failed (exit $rc); the input is under fuzz/artifacts/$t/" >&2
        exit 1
    fi
done
