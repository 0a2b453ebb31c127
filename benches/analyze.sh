#!/usr/bin/env bash
# Benchmark: `rocetap analyze` against `tshark -Y infiniband` on a 2,000,000-frame trace
# cut to a 128-byte snaplen. Prints from one run: wall and CPU time of analyze, tshark's
# time, the ratio, frames/s, analyze's peak RSS, and where analyze's time goes (reading
# only / reading + decoding / everything, via the hidden `--stop-after` option).
#
# The trace comes from `rocetap synth clean-rc` when the binary has `synth`; otherwise
# benches/replicate_pcap.py replays ../shared/captures/reference/roce_mixed_seed1_s128.pcap
# with shifted timestamps and PSNs. FRAMES=n changes the size; KEEP=1 keeps the trace.
# Installs nothing: peak RSS comes from /usr/bin/time, or from VmHWM in /proc. rocetap
# figures are the best of RUNS (3) runs; tshark runs once.
set -euo pipefail
cd "$(dirname "$0")/.."
FRAMES=${FRAMES:-2000000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-bench.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "keeping $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
BIG=$TMP/big.pcap

cargo build --release -q
BIN=target/release/rocetap

if "$BIN" synth --help > /dev/null 2>&1; then
    echo "trace: rocetap synth clean-rc --packets $FRAMES --snaplen 128"
    "$BIN" synth clean-rc --packets "$FRAMES" --snaplen 128 -o "$BIG"
else
    SRC=../shared/captures/reference/roce_mixed_seed1_s128.pcap
    [ -f "$SRC" ] || { echo "no 'rocetap synth' and no $SRC" >&2; exit 2; }
    echo "trace: $SRC replayed to $FRAMES frames (this rocetap has no synth)"
    python3 benches/replicate_pcap.py "$SRC" "$FRAMES" "$BIG"
fi
cat "$BIG" > /dev/null # into the page cache: time the tools, not the disk

# measure NAME CMD...: runs CMD (stdout discarded) and sets NAME_WALL, NAME_CPU (user+sys
# seconds) and NAME_RSS (KiB).
measure() {
    local name=$1; shift
    local wall cpu rss
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%e %U %S %M' -o "$TMP/t" "$@" > /dev/null 2> /dev/null
        read -r wall u s rss < "$TMP/t"
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
# the least disturbed), largest RSS.
RUNS=${RUNS:-3}
best() {
    local name=$1; shift
    local bw=999999 bc=999999 br=0 i w c r
    for ((i = 0; i < RUNS; i++)); do
        measure ONE "$@"
        w=$ONE_WALL c=$ONE_CPU r=$ONE_RSS
        (($(echo "$w < $bw" | bc -l))) && bw=$w
        (($(echo "$c < $bc" | bc -l))) && bc=$c
        ((r > br)) && br=$r
    done
    printf -v "${name}_WALL" '%s' "$bw"
    printf -v "${name}_CPU" '%s' "$bc"
    printf -v "${name}_RSS" '%s' "$br"
}

best READ "$BIN" analyze -q --stop-after read "$BIG"
best DECODE "$BIN" analyze -q --stop-after decode "$BIG"
best FULL "$BIN" analyze -q --format json "$BIG"
measure TSHARK tshark -r "$BIG" -q -Y infiniband

mfps() { echo "$FRAMES / $1 / 1000000" | bc -l; }
printf 'trace                 %d frames, %.1f MB\n' "$FRAMES" "$(echo "$(stat -c %s "$BIG") / 1000000" | bc -l)"
printf 'rocetap analyze json  %6.3f s wall (%.2f M frames/s), %6.3f s CPU (%.2f M frames/s), peak RSS %.1f MiB\n' \
    "$FULL_WALL" "$(mfps "$FULL_WALL")" "$FULL_CPU" "$(mfps "$FULL_CPU")" "$(echo "$FULL_RSS / 1024" | bc -l)"
printf '  read only           %6.3f s CPU (%.2f M frames/s)\n' "$READ_CPU" "$(mfps "$READ_CPU")"
printf '  read + decode       %6.3f s CPU (%.2f M frames/s)\n' "$DECODE_CPU" "$(mfps "$DECODE_CPU")"
printf '  shares              read %.0f %%, decode %.0f %%, analysis %.0f %%\n' \
    "$(echo "100 * $READ_CPU / $FULL_CPU" | bc -l)" \
    "$(echo "100 * ($DECODE_CPU - $READ_CPU) / $FULL_CPU" | bc -l)" \
    "$(echo "100 * ($FULL_CPU - $DECODE_CPU) / $FULL_CPU" | bc -l)"
printf 'tshark -Y infiniband  %6.3f s wall, %6.3f s CPU, peak RSS %.1f MiB\n' \
    "$TSHARK_WALL" "$TSHARK_CPU" "$(echo "$TSHARK_RSS / 1024" | bc -l)"
printf 'tshark / rocetap      %.1fx (wall), %.1fx (CPU)\n' \
    "$(echo "$TSHARK_WALL / $FULL_WALL" | bc -l)" "$(echo "$TSHARK_CPU / $FULL_CPU" | bc -l)"
