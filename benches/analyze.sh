#!/usr/bin/env bash
# Benchmark: `rocetap analyze` of a 2,000,000-frame trace cut to a 128-byte snaplen,
# against two references measured in the same run: the floor, a bare libpcap read loop
# that reads every frame and discards it (benches/floor/pcap_read.c, built here with cc
# -O2 -lpcap), and `tshark -q -Y infiniband` on a smaller trace of the same scenario
# (TSHARK_FRAMES, 200,000: tshark is ~50x slower; compared per frame). Prints wall and
# CPU time of analyze, frames/s, the ratios (floor wall / analyze wall: 1.0 means as fast
# as reading alone), analyze's peak RSS, where analyze's time goes (reading only /
# reading + decoding / everything, via the hidden `--stop-after` option), and the load
# average before and after (the machine may be shared). With a binary that has `--jobs`,
# also analyze on one thread (`--jobs 1`) and with the split read (`--jobs 2`), whatever
# the binary's default.
#
# The trace comes from `rocetap synth clean-rc` when the binary has `synth`; otherwise
# benches/replicate_pcap.py replays ../shared/captures/reference/roce_mixed_seed1_s128.pcap
# with shifted timestamps and PSNs. FRAMES=n changes the size; KEEP=1 keeps the trace;
# ROCETAP=PATH measures another binary (not built).
# Installs nothing: peak RSS comes from /usr/bin/time, or from VmHWM in /proc. Wall
# times are to the microsecond (bash's EPOCHREALTIME around the command), CPU times to
# GNU time's 10 ms. rocetap figures are the best of RUNS (3) runs, and the floor ratios
# also the median of the runs' walls; tshark runs once.
set -euo pipefail
cd "$(dirname "$0")/.."
FRAMES=${FRAMES:-2000000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-bench.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "keeping $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
BIG=$TMP/big.pcap

if [ -n "${ROCETAP:-}" ]; then
    BIN=$ROCETAP
else
    cargo build --release -q
    BIN=target/release/rocetap
fi
TSHARK_FRAMES=${TSHARK_FRAMES:-200000}
SMALL=$TMP/small.pcap
FLOOR=$TMP/pcap_read
cc -O2 -o "$FLOOR" benches/floor/pcap_read.c -lpcap
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

if "$BIN" synth --help > /dev/null 2>&1; then
    echo "trace: rocetap synth clean-rc --packets $FRAMES --snaplen 128"
    "$BIN" synth clean-rc --packets "$FRAMES" --snaplen 128 -o "$BIG"
    "$BIN" synth clean-rc --packets "$TSHARK_FRAMES" --snaplen 128 -o "$SMALL"
else
    SRC=../shared/captures/reference/roce_mixed_seed1_s128.pcap
    [ -f "$SRC" ] || { echo "no 'rocetap synth' and no $SRC" >&2; exit 2; }
    echo "trace: $SRC replayed to $FRAMES frames (this rocetap has no synth)"
    python3 benches/replicate_pcap.py "$SRC" "$FRAMES" "$BIG"
    python3 benches/replicate_pcap.py "$SRC" "$TSHARK_FRAMES" "$SMALL"
fi
cat "$BIG" > /dev/null # into the page cache: time the tools, not the disk

# measure NAME CMD...: runs CMD (stdout discarded) and sets NAME_WALL, NAME_CPU (user+sys
# seconds) and NAME_RSS (KiB).
measure() {
    local name=$1; shift
    local wall cpu rss
    if [ -x /usr/bin/time ]; then
        local t0=${EPOCHREALTIME/./}
        /usr/bin/time -f '%e %U %S %M' -o "$TMP/t" "$@" > /dev/null 2> /dev/null
        local us=$((${EPOCHREALTIME/./} - t0))
        read -r wall u s rss < "$TMP/t"
        wall=$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))
        cpu=$(echo "$u + $s" | bc -l)
    else
        local t0 t1 pid hwm=0 v
        t0=$(date +%s.%N)
        "$@" > /dev/null 2> /dev/null &
        pid=$!
        while kill -0 "$pid" 2> /dev/null; do
            v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
            [ -n "$v" ] && hwm=$v
            sleep 0.02
        done
        wait "$pid"
        t1=$(date +%s.%N)
        wall=$(echo "$t1 - $t0" | bc -l)
        cpu=$wall
        rss=$hwm
    fi
    printf -v "${name}_WALL" '%s' "$wall"
    printf -v "${name}_CPU" '%s' "$cpu"
    printf -v "${name}_RSS" '%s' "$rss"
}

# best NAME CMD...: the fastest of RUNS runs (the machine may be shared; the minimum is
# the least disturbed), largest RSS; NAME_MED is the median wall.
RUNS=${RUNS:-3}
best() {
    local name=$1; shift
    local bw=999999 bc=999999 br=0 i w c r walls=()
    for ((i = 0; i < RUNS; i++)); do
        measure ONE "$@"
        w=$ONE_WALL c=$ONE_CPU r=$ONE_RSS
        walls+=("$w")
        (($(echo "$w < $bw" | bc -l))) && bw=$w
        (($(echo "$c < $bc" | bc -l))) && bc=$c
        ((r > br)) && br=$r
    done
    printf -v "${name}_WALL" '%s' "$bw"
    printf -v "${name}_CPU" '%s' "$bc"
    printf -v "${name}_RSS" '%s' "$br"
    printf -v "${name}_MED" '%s' "$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
}

best FLOOR "$FLOOR" "$BIG"
best READ "$BIN" analyze -q --stop-after read "$BIG"
best DECODE "$BIN" analyze -q --stop-after decode "$BIG"
best FULL "$BIN" analyze -q --format json "$BIG"
if "$BIN" analyze --help 2> /dev/null | grep -q -- --jobs; then
    best SERIAL "$BIN" analyze -q --format json --jobs 1 "$BIG"
    best SPLIT "$BIN" analyze -q --format json --jobs 2 "$BIG"
fi
best SMALL "$BIN" analyze -q --format json "$SMALL"
cat "$SMALL" > /dev/null
measure TSHARK tshark -r "$SMALL" -q -Y infiniband
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

mfps() { echo "$FRAMES / $1 / 1000000" | bc -l; }
printf 'trace                 %d frames, %.1f MB\n' "$FRAMES" "$(echo "$(stat -c %s "$BIG") / 1000000" | bc -l)"
printf 'rocetap analyze json  %6.4f s wall (%.2f M frames/s), %6.3f s CPU (%.2f M frames/s), peak RSS %.1f MiB\n' \
    "$FULL_WALL" "$(mfps "$FULL_WALL")" "$FULL_CPU" "$(mfps "$FULL_CPU")" "$(echo "$FULL_RSS / 1024" | bc -l)"
if [ -n "${SERIAL_WALL:-}" ]; then
    printf '  --jobs 1            %6.4f s wall (%.2f M frames/s), %6.3f s CPU\n' \
        "$SERIAL_WALL" "$(mfps "$SERIAL_WALL")" "$SERIAL_CPU"
    printf '  --jobs 2 (split)    %6.4f s wall (%.2f M frames/s), %6.3f s CPU; %.2fx the speed of --jobs 1 (wall)\n' \
        "$SPLIT_WALL" "$(mfps "$SPLIT_WALL")" "$SPLIT_CPU" "$(echo "$SERIAL_WALL / $SPLIT_WALL" | bc -l)"
fi
printf '  read only           %6.3f s CPU (%.2f M frames/s)\n' "$READ_CPU" "$(mfps "$READ_CPU")"
printf '  read + decode       %6.3f s CPU (%.2f M frames/s)\n' "$DECODE_CPU" "$(mfps "$DECODE_CPU")"
# The shares of one thread's CPU (the split's waiting is not work).
BASE_CPU=${SERIAL_CPU:-$FULL_CPU}
printf '  shares              read %.0f %%, decode %.0f %%, analysis %.0f %% (of %.3f s CPU)\n' \
    "$(echo "100 * $READ_CPU / $BASE_CPU" | bc -l)" \
    "$(echo "100 * ($DECODE_CPU - $READ_CPU) / $BASE_CPU" | bc -l)" \
    "$(echo "100 * ($BASE_CPU - $DECODE_CPU) / $BASE_CPU" | bc -l)" "$BASE_CPU"
printf 'libpcap read loop    %6.4f s wall, %6.3f s CPU (%.2f M frames/s)\n' \
    "$FLOOR_WALL" "$FLOOR_CPU" "$(mfps "$FLOOR_WALL")"
ratio() { echo "$1 / $2" | bc -l; } # floor / analyze
printf 'analyze / floor       %.2fx the speed of the bare read loop (best wall; %.2fx median), %.2fx (CPU)\n' \
    "$(ratio "$FLOOR_WALL" "$FULL_WALL")" "$(ratio "$FLOOR_MED" "$FULL_MED")" \
    "$(ratio "$FLOOR_CPU" "$FULL_CPU")"
if [ -n "${SERIAL_WALL:-}" ]; then
    printf '  with --jobs 1       %.2fx (best wall; %.2fx median), %.2fx (CPU)\n' \
        "$(ratio "$FLOOR_WALL" "$SERIAL_WALL")" "$(ratio "$FLOOR_MED" "$SERIAL_MED")" \
        "$(ratio "$FLOOR_CPU" "$SERIAL_CPU")"
    printf '  with --jobs 2       %.2fx (best wall; %.2fx median)\n' \
        "$(ratio "$FLOOR_WALL" "$SPLIT_WALL")" "$(ratio "$FLOOR_MED" "$SPLIT_MED")"
fi
printf 'tshark -Y infiniband  %6.3f s wall, %6.3f s CPU, peak RSS %.1f MiB on %d frames (rocetap %.3f s)\n' \
    "$TSHARK_WALL" "$TSHARK_CPU" "$(echo "$TSHARK_RSS / 1024" | bc -l)" "$TSHARK_FRAMES" "$SMALL_WALL"
printf 'tshark / rocetap      %.1fx (wall per frame, the %d-frame trace against the big one), %.1fx (same trace)\n' \
    "$(echo "($TSHARK_WALL / $TSHARK_FRAMES) / ($FULL_WALL / $FRAMES)" | bc -l)" "$TSHARK_FRAMES" \
    "$(echo "$TSHARK_WALL / $SMALL_WALL" | bc -l)"
if [ -n "${SERIAL_WALL:-}" ]; then
    printf '  with --jobs 1       %.1fx (wall per frame)\n' \
        "$(echo "($TSHARK_WALL / $TSHARK_FRAMES) / ($SERIAL_WALL / $FRAMES)" | bc -l)"
fi
printf 'load average          %s before, %s after (2 cores)\n' "$LOAD0" "$LOAD1"
