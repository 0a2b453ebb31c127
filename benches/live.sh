#!/usr/bin/env bash
# Live benchmark: CPU per packet and drops of `rocetap capture -s 128 -w`, `rocetap agent`
# and `rocetap analyze -i` against `tcpdump -s 128 -w`, side by side on the same traffic.
#
# Traffic: a `rocetap synth many-qp` trace (64 QPs over 4 peers, 256-byte WRITEs and their
# ACKs, 2,048 frames) turned into a trafgen config by netsniff-ng, sent by `trafgen` from
# netsniff-ng (one process, `--cpus 1`) into a veth between two network namespaces this
# script creates (rtlive-PID-a sends, rtlive-PID-b captures; 198.18.254.0/24). The trace
# loops, so the analyzers see PSNs jump back every 2,048 frames (as any looped replay).
#
# For each of RUNS (3) runs, each rate of RATES (pps; 0: unpaced), each tool in turn
# (interleaved, so a busy minute on the shared machine hits every tool alike): the tool
# starts in namespace b on the veth, trafgen sends PACKETS frames, the script waits a
# second, reads the tool's CPU time (the sum over its threads of
# /proc/PID/task/*/schedstat, nanoseconds on the CPU), then stops it with SIGINT and reads
# its own counters: frames it handled, and drops (kernel + its own queue: tcpdump's and
# `rocetap capture`'s final lines, the agent's rocetap_capture_dropped_packets_total,
# `analyze -i`'s capture report). CPU µs per packet = CPU time / frames handled. The load
# average is printed with every row: the machine is shared. `x tcpdump` is the tool's CPU
# per packet over tcpdump's in the same run and rate (tcpdump runs first: keep it first in
# TOOLS). `threads` splits a rocetap tool's CPU per packet by thread name (`main`: the
# main thread, which analyzes or, for `capture`, writes; `rocetap-src-N`: a capture
# thread, or the agent's thread that reads and analyzes source N; `rocetap-web`: the
# agent's HTTP server; threads of one name summed), so that a change can be placed.
#
# `capture-lanes` is `rocetap capture --lanes LANES` (2): the interface read by LANES
# libpcap handles in one PACKET_FANOUT group, a capture thread each, the main thread
# merging them back in time order and writing (not in the default TOOLS).
#
# `agent-warm` is the agent in its steady state: before its measured packets it is sent
# WARM (600,000) frames unpaced, enough to write its flight recorder's ring through once
# (32 MiB of 128-byte slots with one source), so the first pass's page faults, which a
# long-running agent takes once, are not counted; its handled and dropped frames are
# counted from there. `agent` counts from its start. `agent-lanes` is `agent-warm` with
# `--lanes LANES`: the interface read and analyzed by LANES threads (not in the default
# TOOLS).
#
# Usage (root): benches/live.sh
# Env: PACKETS (300000), RATES ("100000 300000 0"), RUNS (3), ROCETAP=path (default
# target/release/rocetap, built if missing), TOOLS ("tcpdump capture agent agent-warm
# analyze"; also capture-lanes and agent-lanes), WARM (600000), LANES (2).
# Needs trafgen and netsniff-ng (apt-get install netsniff-ng), tcpdump, curl, python3.
# Everything is removed on exit: the namespaces by name, the tools by PID.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
PACKETS=${PACKETS:-300000}
RATES=${RATES:-100000 300000 0}
RUNS=${RUNS:-3}
TOOLS=${TOOLS:-tcpdump capture agent agent-warm analyze}
WARM=${WARM:-600000}
LANES=${LANES:-2}
BIN=${ROCETAP:-$here/target/release/rocetap}

needs_root_and benches/live.sh "apt-get install netsniff-ng tcpdump curl" trafgen netsniff-ng tcpdump curl python3
[ -x "$BIN" ] || (cd "$here" && cargo build --release --quiet)

A=rtlive-$$-a
B=rtlive-$$-b
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-live.XXXXXX")
TOOL_PID=
cleanup() { netns_cleanup "$A" "$B" "$TMP" "$TOOL_PID"; }
trap cleanup EXIT INT TERM

veth_pair "$A" rtl0 198.18.254.1/24 "$B" rtl1 198.18.254.2/24
trafgen_config "$BIN" "$TMP" benches/live.sh

# thread_ns PID: a line "TID NAME NS" for every live thread of PID: nanoseconds on the CPU
# (NAME with `_` for spaces; the main thread, named after the program, as `main`). The
# tools' threads all live until they are stopped.
thread_ns() {
    local t name
    for t in /proc/"$1"/task/*; do
        name=$(tr ' ' _ < "$t/comm" 2> /dev/null) || continue
        [ "${t##*/}" = "$1" ] && name=main
        echo "${t##*/} $name $(cut -d' ' -f1 "$t/schedstat" 2> /dev/null || echo 0)"
    done
}
# thread_split BEFORE AFTER: "NAME=NS,NAME=NS,..." of the CPU each thread name used between
# the two thread_ns snapshots (a thread started in between counts from zero), by name.
thread_split() {
    awk 'NR == FNR {was[$1] = $3; next}
        {used[$2] += $3 - ($1 in was ? was[$1] : 0); if (!($2 in seen)) {seen[$2] = 1; order[++n] = $2}}
        END {for (i = 1; i <= n; i++) printf "%s%s=%d", (i > 1 ? "," : ""), order[i], used[order[i]]}' "$1" "$2"
}
PORT=$((20000 + $$ % 20000))
metric() { ip netns exec "$B" curl -s "127.0.0.1:$PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $NF} END {printf "%d", s}'; }

# run TOOL RATE: prints "NS handled dropped split": CPU ns (the sum of thread_split's), and the split (- for tcpdump)
run() {
    local tool=$1 rate=$2 handled dropped err=$TMP/err
    rm -f "$TMP/out.pcap"
    case $tool in
        tcpdump) ip netns exec "$B" tcpdump -i rtl1 -n -s 128 -w "$TMP/out.pcap" 2> "$err" & ;;
        capture) ip netns exec "$B" "$BIN" capture -i rtl1 -s 128 -w "$TMP/out.pcap" --force 2> "$err" & ;;
        capture-lanes) ip netns exec "$B" "$BIN" capture -i rtl1 --lanes "$LANES" -s 128 -w "$TMP/out.pcap" --force \
            2> "$err" & ;;
        analyze) ip netns exec "$B" "$BIN" analyze -i rtl1 -s 128 > "$TMP/report" 2> "$err" & ;;
        agent | agent-warm) ip netns exec "$B" "$BIN" agent -i rtl1 --listen "127.0.0.1:$PORT" --netcheck-interval 0 \
            --idle-timeout 10m 2> "$err" & ;;
        agent-lanes) ip netns exec "$B" "$BIN" agent -i rtl1 --lanes "$LANES" --listen "127.0.0.1:$PORT" \
            --netcheck-interval 0 --idle-timeout 10m 2> "$err" & ;;
    esac
    TOOL_PID=$! # `ip netns exec` execs the tool: this is its PID
    local h0=0 d0=0
    if [ "$tool" != "${tool#agent}" ]; then
        for _ in $(seq 50); do ip netns exec "$B" curl -sf "127.0.0.1:$PORT/healthz" > /dev/null && break; sleep 0.2; done
        if [ "$tool" = agent-warm ] || [ "$tool" = agent-lanes ]; then
            # Steady state: the flight recorder's ring written through once (its pages
            # mapped) and the flows known, before the measured packets.
            ip netns exec "$A" trafgen --dev rtl0 --conf "$TMP/t.cfg" --num "$WARM" --cpus 1 -q > /dev/null 2>&1
            sleep 1
            h0=$(metric rocetap_frames_total)
            d0=$(metric rocetap_capture_dropped_packets_total)
        fi
    else
        sleep 1.5
    fi
    thread_ns "$TOOL_PID" > "$TMP/threads0"
    local opt=()
    [ "$rate" != 0 ] && opt=(--rate "${rate}pps")
    ip netns exec "$A" trafgen --dev rtl0 --conf "$TMP/t.cfg" --num "$PACKETS" --cpus 1 -q "${opt[@]}" > /dev/null 2>&1
    sleep 1
    thread_ns "$TOOL_PID" > "$TMP/threads1"
    if [ "$tool" != "${tool#agent}" ]; then
        handled=$(($(metric rocetap_frames_total) - h0))
        dropped=$(($(metric rocetap_capture_dropped_packets_total) - d0))
    fi
    kill -INT "$TOOL_PID"
    wait "$TOOL_PID" || true
    TOOL_PID=
    case $tool in
        tcpdump)
            handled=$(sed -n 's/^\([0-9]*\) packets captured$/\1/p' "$err" | tail -1)
            dropped=$(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$err" | tail -1)
            ;;
        capture | capture-lanes)
            handled=$(sed -n 's/^\([0-9]*\) packets written.*/\1/p' "$err" | tail -1)
            dropped=$(sed -n 's/^\([0-9]*\) packets dropped by \(kernel\|rocetap\).*/\1/p' "$err" | awk '{s += $1} END {print s + 0}')
            ;;
        analyze)
            handled=$(sed -n 's/^\([0-9]*\) packets captured$/\1/p' "$err" | tail -1)
            dropped=$(sed -n 's/^\([0-9]*\) packets dropped by \(kernel\|rocetap\).*/\1/p' "$err" | awk '{s += $1} END {print s + 0}')
            ;;
    esac
    local split ns
    split=$(thread_split "$TMP/threads0" "$TMP/threads1")
    ns=$(echo "$split" | tr ',' '\n' | awk -F= '{s += $2} END {printf "%d", s}')
    [ "$tool" = tcpdump ] && split=-
    echo "$ns ${handled:-0} ${dropped:-?} ${split:--}"
}

echo "trafgen: $PACKETS frames a run from a 2,048-frame many-qp trace; rates (pps, 0 = unpaced): $RATES; $RUNS interleaved runs"
echo "rocetap: $BIN"
printf '%-4s %-8s %-10s %10s %10s %10s %12s %10s %9s  %s\n' run rate tool handled dropped "CPU ms" "CPU us/pkt" "x tcpdump" "load avg" \
    "threads (us/pkt)"
for run_i in $(seq "$RUNS"); do
    for rate in $RATES; do
        ref=
        for tool in $TOOLS; do
            run "$tool" "$rate" > "$TMP/row"
            read -r ns handled dropped split < "$TMP/row"
            us=$(awk -v n="$ns" -v h="$handled" 'BEGIN {if (h > 0) printf "%.3f", n / 1000 / h; else print "-"}')
            [ "$tool" = tcpdump ] && ref=$us
            ratio=$(awk -v u="$us" -v r="${ref:--}" 'BEGIN {if (r + 0 > 0 && u + 0 > 0) printf "%.2f", u / r; else print "-"}')
            threads=$(echo "$split" | tr ',' '\n' | awk -F= -v h="$handled" \
                'NF == 2 && h > 0 {printf "%s%s %.3f", (n++ ? ", " : ""), $1, $2 / 1000 / h}')
            printf '%-4s %-8s %-10s %10s %10s %10.1f %12s %10s %9s  %s\n' "$run_i" "$rate" "$tool" "$handled" "$dropped" \
                "$(echo "$ns / 1000000" | bc -l)" "$us" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)" "${threads:--}"
        done
    done
done
