#!/usr/bin/env bash
# Benchmark: `rocetap analyze --format json` (output to /dev/null) as the number of queue
# pairs grows, issue #17. Traces, each 1,000,000 frames at a 128-byte snaplen made by
# `rocetap synth many-qp` (RDMA WRITEs of 16 KiB, 4 packets, with coalesced ACKs):
#   128 QPs over 128 peers, 8,192 QPs over 128 peers, 50,000 QPs between two hosts
#   (also with --max-flows 1, which keeps one finished flow's summary),
# and the 2,000,000-frame trace of benches/analyze.sh (`synth clean-rc`), for reference.
# Prints one table: wall time, frames/s, peak RSS, and the ratio of 8,192-QP to 128-QP
# frames/s (1.0 would be "as fast with thousands of QPs as with a hundred"); then, from
# `cargo bench --bench scale` (benches/scale.rs) on the same traces, what the wall time
# does not show apart: the analysis alone, memory per live flow, each report writer, and
# `top` (the feeder's snapshot, applying it, redraws) with that many flows; and last the
# targets of issue #17 against those figures.
#
# Needs /usr/bin/time (GNU time) for the peak RSS: `apt-get install -y time`.
# ROCETAP=PATH measures another rocetap binary (the traces still come from this tree's
# build, which knows many-qp); RUNS=n (3) runs per trace, best wall time kept, and
# SLOW_RUNS=n (as RUNS) for the 50,000-QP traces (one was the default while a run took
# 19 s; it takes under half a second now, and one run is a sample of this VM's noise);
# FRAMES=n changes the many-qp size; PAIRS=n (20) the pairs the ratio is judged on; KEEP=1
# keeps the traces (and prints where).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/time ]; then
    echo "benches/scale.sh needs GNU time for the peak RSS: apt-get install -y time" >&2
    exit 2
fi
FRAMES=${FRAMES:-1000000}
RUNS=${RUNS:-3}
SLOW_RUNS=${SLOW_RUNS:-$RUNS}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-scale.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "keeping $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi

cargo build --release -q
SYNTH=${CARGO_TARGET_DIR:-target}/release/rocetap
BIN=${ROCETAP:-$SYNTH}
echo "measuring $BIN ($(stat -c %y "$BIN" | cut -d. -f1))"

many() { # NAME QPS PEERS
    "$SYNTH" synth many-qp --qps "$2" --peers "$3" --msg-size 16384 --packets "$FRAMES" \
        --snaplen 128 -o "$TMP/$1.pcap"
}
many q128 128 128
many q8192 8192 128
many q50k 50000 1
"$SYNTH" synth clean-rc --packets 2000000 --snaplen 128 -o "$TMP/clean.pcap"
cat "$TMP"/*.pcap > /dev/null # into the page cache: time the tool, not the disk

# quiet CMD...: runs it with stdout discarded; on failure prints its stderr and exits 2.
quiet() {
    "$@" > /dev/null 2> "$TMP/err" || {
        echo "failed: $*" >&2
        cat "$TMP/err" >&2
        exit 2
    }
}

# measure CMD...: one run; sets WALL (s) and RSS (KiB).
measure() {
    quiet /usr/bin/time -f '%e %M' -o "$TMP/t" "$@"
    read -r WALL RSS < "$TMP/t"
}

# frames_of TRACE: the trace's frame count, from its truth.
frames_of() { grep -m1 '"packets":' "$TMP/$1.pcap.truth.json" | tr -dc 0-9; }

# row LABEL TRACE RUNS [ARGS...]: best wall of RUNS runs, largest RSS; prints a row and
# sets MFPS (M frames/s).
row() {
    local label=$1 trace=$2 runs=$3
    shift 3
    local bw=999999 br=0 i frames
    if ((runs == 0)); then
        printf '%-40s skipped\n' "$label"
        return
    fi
    for ((i = 0; i < runs; i++)); do
        measure "$BIN" analyze -q --format json "$@" "$TMP/$trace.pcap"
        (($(echo "$WALL < $bw" | bc -l))) && bw=$WALL
        ((RSS > br)) && br=$RSS
    done
    frames=$(frames_of "$trace")
    flows=$(grep -m1 '"flows":' "$TMP/$trace.pcap.truth.json" | tr -dc 0-9 || true)
    [ -z "$flows" ] && flows=8
    MFPS=$(echo "$frames / $bw / 1000000" | bc -l)
    RSS_MAX=$br
    printf '%-40s %9d %7d %8.2f %10.3f %10.1f\n' "$label" "$frames" "$flows" "$bw" "$MFPS" \
        "$(echo "$br / 1024" | bc -l)"
}

printf '%-40s %9s %7s %8s %10s %10s\n' "trace (analyze --format json)" frames flows "wall s" "M frames/s" "RSS MiB"
row "128 QPs, 128 peers" q128 "$RUNS"
F128=$MFPS
row "8,192 QPs, 128 peers" q8192 "$RUNS"
F8192=$MFPS
R8192=$(echo "$RSS_MAX / 1024" | bc -l)
row "50,000 QPs, 2 hosts" q50k "$SLOW_RUNS"
F50K=$MFPS
row "50,000 QPs, 2 hosts, --max-flows 1" q50k "$SLOW_RUNS" --max-flows 1
row "clean-rc 2M frames (benches/analyze.sh)" clean "$RUNS"
RATIO=$(echo "$F8192 / $F128" | bc -l)
printf '8,192-QP / 128-QP frames/s (best of each block above): %.2f\n' "$RATIO"
# This machine's speed drifts by tens of percent within minutes (other VMs share its
# caches), and the 8,192-QP trace, whose flows do not fit in L2, drifts most: a ratio of
# two blocks of runs minutes apart measures the drift as much as the tool. So the ratio
# the target is judged on comes from PAIRS (20) back-to-back pairs of runs, one of each
# trace, each timed to the microsecond: the median of the pairs' ratios, with its spread.
# Every other pair runs the 8,192-QP trace first, so that neither trace is always the one
# run right after the other; and both traces are read into the page cache again first
# (this VM drops a few MB of an idle file's cached pages a minute: a run must not wait for
# the disk).
PAIRS=${PAIRS:-20}
wall() { # CMD...: sets US, the wall time in microseconds
    local t0=${EPOCHREALTIME/./}
    quiet "$@"
    US=$((${EPOCHREALTIME/./} - t0))
}
cat "$TMP/q128.pcap" "$TMP/q8192.pcap" > /dev/null
: > "$TMP/pairs"
for ((i = 0; i < PAIRS; i++)); do
    if ((i % 2 == 0)); then
        wall "$BIN" analyze -q --format json "$TMP/q128.pcap"
        a=$US
        wall "$BIN" analyze -q --format json "$TMP/q8192.pcap"
        b=$US
    else
        wall "$BIN" analyze -q --format json "$TMP/q8192.pcap"
        b=$US
        wall "$BIN" analyze -q --format json "$TMP/q128.pcap"
        a=$US
    fi
    echo "$a $b" >> "$TMP/pairs"
done
n128=$(frames_of q128)
n8192=$(frames_of q8192)
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratios=$(awk -v a="$n128" -v b="$n8192" '{ printf "%.6f\n", (b / $2) / (a / $1) }' "$TMP/pairs" |
    sort -g)
PAIR_MED=$(med <<< "$ratios")
PAIR_LO=$(head -1 <<< "$ratios")
PAIR_HI=$(tail -1 <<< "$ratios")
T128=$(awk '{ print $1 / 1e6 }' "$TMP/pairs" | med)
T8192=$(awk '{ print $2 / 1e6 }' "$TMP/pairs" | med)
printf '8,192-QP / 128-QP frames/s, %d back-to-back pairs (order alternating): median %.2f (lowest %.2f, highest %.2f); median walls %.3f s and %.3f s\n' \
    "$PAIRS" "$PAIR_MED" "$PAIR_LO" "$PAIR_HI" "$T128" "$T8192"
echo
if [ -n "${ROCETAP:-}" ]; then
    echo "(the in-process figures below are of this tree, not of $BIN)"
fi
INPROC=(q128.pcap q8192.pcap)
((SLOW_RUNS > 0)) && INPROC+=(q50k.pcap)
# One process per trace: memory an earlier trace freed would be reused by the next one and
# understate its memory per flow.
: > "$TMP/inproc"
for t in "${INPROC[@]}"; do
    cargo bench -q --bench scale -- "$TMP/$t" | sed "s|$TMP/||" | tee -a "$TMP/inproc"
done
echo
# target NAME OK DETAIL
target() { printf '%-58s %-4s %s\n' "$1" "$([ "$2" = 1 ] && echo met || echo MISS)" "$3"; }
num() { grep -A4 "^$1.pcap" "$TMP/inproc" | grep -E "^  $2 " | sed -E "s/.*$3.*/\1/"; }
echo "issue #17 targets"
per_flow=$(num q8192 memory ' ([0-9]+) bytes per live flow')
target "<= 2 KiB per live flow (8,192 QPs, clean)" "$((per_flow <= 2048))" "$per_flow bytes"
target "8,192 QPs under 64 MiB peak RSS" "$(echo "$R8192 < 64" | bc)" "$(printf %.1f "$R8192") MiB"
target "8,192 QPs within 1.5x the frames/s of 128 QPs" "$(echo "$PAIR_MED >= 0.6667" | bc)" \
    "ratio $(printf %.2f "$PAIR_MED"), median of $PAIRS pairs (>= 0.67)"
if ((SLOW_RUNS > 0)); then
    target "50,000 QPs between two hosts above 3 M frames/s" "$(echo "$F50K > 3" | bc)" \
        "$(printf %.2f "$F50K") M frames/s"
fi
json=$(num q8192 report 'JSON ([0-9.]+) ms.*')
csv=$(num q8192 report 'CSV ([0-9.]+) ms.*')
target "16,384 flows written in under 0.1 s (JSON / CSV)" \
    "$(echo "$json < 100 && $csv < 100" | bc)" "JSON $json ms, CSV $csv ms"
redraw=$(num q8192 top 'redraw ([0-9.]+) ms, sort.*')
snap=$(num q8192 top 'snapshot ([0-9.]+) ms.*')
apply=$(num q8192 top 'apply ([0-9.]+) ms.*')
sortr=$(num q8192 top 'sort\+redraw ([0-9.]+) ms.*')
filt=$(num q8192 top 'filter\+redraw ([0-9.]+) ms.*')
# What the UI thread does per refresh: apply the snapshot, draw. (The snapshot itself is
# taken on the feeder thread, printed for information.)
target "top, 16,384 flows: apply + redraw under 20 ms" \
    "$(echo "$apply + $redraw < 20 && $sortr < 20 && $filt < 20" | bc)" \
    "apply $apply + redraw $redraw ms; sort $sortr, filter $filt ms; (feeder's snapshot $snap ms)"
