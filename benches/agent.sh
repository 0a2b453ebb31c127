#!/usr/bin/env bash
# Benchmark of `rocetap agent` (issues #12, #39): with 1, 4 and 8 sources, the agent's
# resident size (VmRSS and its peak VmHWM, against the --memory-limit budget) and its CPU
# per million packets analyzed; with one source also `analyze`'s cost on the same traffic
# for reference and the /metrics render time and size.
#
# Traffic: `rocetap synth many-qp --qps QPS --peers 128` (2 x QPS flows, 128-byte
# snaplen) replayed LOOPS times with tcpreplay (--topspeed, or --pps=PPS) into every
# source at once: N veth pairs whose far ends are in one network namespace this script
# creates; the agent captures the near ends. Then one /report (the transient
# re-analysis is part of the budget). The namespace, the veths and the agent are removed
# at the end (by name and PID). Needs root, tcpreplay and curl.
#
# CPU per million packets: user + system time of the agent (/proc/PID/stat: every
# thread, capture included) from before the first replay to after the last, divided by
# the frames the agent analyzed (rocetap_frames_total; frames the capture dropped are
# counted separately and printed).
#
# FRAMES=n (1000000) frames per loop, LOOPS=n (3), QPS=n (5000), SOURCES="1 4 8",
# PPS=n (0: --topspeed), LIMIT=SIZE (the agent's default), BIN=path (a release build).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "benches/agent.sh needs root (a network namespace)" >&2; exit 2; }
for t in tcpreplay curl bc; do
    command -v $t >/dev/null || { echo "benches/agent.sh needs $t" >&2; exit 2; }
done
FRAMES=${FRAMES:-1000000}
LOOPS=${LOOPS:-3}
QPS=${QPS:-5000}
SOURCES=${SOURCES:-"1 4 8"}
PPS=${PPS:-0}
LIMIT=${LIMIT:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-agentbench.XXXXXX")
NS=rtbench-$$
TAG=$(printf '%x' $(($$ % 0xfffff)))
PORT=$((20000 + $$ % 20000))
AGENT=
HOSTS=()
cleanup() {
    if [ -n "$AGENT" ]; then kill "$AGENT" 2>/dev/null || true; wait "$AGENT" 2>/dev/null || true; fi
    for h in "${HOSTS[@]}"; do ip link del "$h" 2>/dev/null || true; done
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

if [ -z "${BIN:-}" ]; then
    cargo build --release -q
    BIN=${CARGO_TARGET_DIR:-target}/release/rocetap
fi
"$BIN" synth many-qp --qps "$QPS" --peers 128 --msg-size 16384 --packets "$FRAMES" \
    --snaplen 128 -o "$TMP/t.pcap" >/dev/null

# analyze on the same file, for the per-frame reference (best of 3).
best=999999
for _ in 1 2 3; do
    s=$(date +%s.%N)
    "$BIN" analyze --format json "$TMP/t.pcap" >/dev/null
    e=$(date +%s.%N)
    best=$(echo "$e - $s" | bc -l | awk -v b="$best" '{print ($1 < b) ? $1 : b}')
done
an_ns=$(echo "$best * 1000000000 / $FRAMES" | bc -l)

ip netns add "$NS"
max=0
for n in $SOURCES; do [ "$n" -gt "$max" ] && max=$n; done
for i in $(seq 0 $((max - 1))); do
    h=rb${TAG}h$i p=rb${TAG}p$i
    ip link add "$h" mtu 9000 type veth peer name "$p" mtu 9000 netns "$NS"
    HOSTS+=("$h")
    sysctl -qw "net.ipv6.conf.$h.disable_ipv6=1" || true
    ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$p.disable_ipv6=1" || true
    ip link set "$h" up
    ip -n "$NS" link set "$p" up
done

metric() { curl -s "127.0.0.1:$PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $NF} END {printf "%d", s}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$AGENT/stat"; }
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$AGENT/status"; }
hz=$(getconf CLK_TCK)
replay_opt=--topspeed
[ "$PPS" != 0 ] && replay_opt=--pps=$PPS

echo "agent: $QPS QPs ($((QPS * 2)) flows) a source, $FRAMES frames x $LOOPS loops into every source, tcpreplay $replay_opt"
printf '%-8s %12s %12s %10s %10s %10s %10s %12s\n' sources frames analyzed dropped "RSS MiB" "HWM MiB" "budget" "CPU s/Mpkt"
declare -A results
for n in $SOURCES; do
    args=(agent --listen "127.0.0.1:$PORT" --netcheck-interval 0 --idle-timeout 10m)
    [ -n "$LIMIT" ] && args+=(--memory-limit "$LIMIT")
    for i in $(seq 0 $((n - 1))); do args+=(-i "${HOSTS[$i]}"); done
    "$BIN" "${args[@]}" 2>"$TMP/agent-$n.log" &
    AGENT=$!
    for _ in $(seq 50); do curl -sf "127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
    budget=$(metric rocetap_memory_budget_bytes)
    c0=$(cpu_ticks)
    for _ in $(seq "$LOOPS"); do
        pids=()
        for i in $(seq 0 $((n - 1))); do
            ip netns exec "$NS" tcpreplay -q $replay_opt -i "rb${TAG}p$i" "$TMP/t.pcap" >/dev/null 2>&1 &
            pids+=($!)
        done
        wait "${pids[@]}"
    done
    sleep 2
    c1=$(cpu_ticks)
    analyzed=$(metric rocetap_frames_total)
    dropped=$(metric rocetap_capture_dropped_packets_total)
    curl -s -o /dev/null "127.0.0.1:$PORT/report"
    sleep 1
    cpu_m=$(echo "($c1 - $c0) / $hz * 1000000 / $analyzed" | bc -l)
    printf '%-8s %12d %12d %10d %10.1f %10.1f %10s %12.2f\n' "$n" $((n * LOOPS * FRAMES)) "$analyzed" \
        "$dropped" "$(echo "$(kib VmRSS) / 1024" | bc -l)" "$(echo "$(kib VmHWM) / 1024" | bc -l)" \
        "$((budget >> 20))M" "$cpu_m"
    if [ "$n" = 1 ]; then
        results[ag_ns]=$(echo "$cpu_m * 1000" | bc -l)
        results[tracked]=$(metric rocetap_connections_tracked)
        mbest=999
        for _ in 1 2 3 4 5; do
            t=$(curl -s -o "$TMP/m.txt" -w '%{time_total}' "127.0.0.1:$PORT/metrics")
            mbest=$(echo "$t" | awk -v b="$mbest" '{print ($1 < b) ? $1 : b}')
        done
        results[metrics]=$(printf '%.1f ms, %d bytes, %d series' "$(echo "$mbest * 1000" | bc -l)" \
            "$(stat -c %s "$TMP/m.txt")" "$(grep -vc '^#' "$TMP/m.txt")")
    fi
    kill "$AGENT"
    wait "$AGENT" 2>/dev/null || true
    AGENT=
done
printf '\nanalyze, per frame         %.0f ns (best of 3 runs over %d frames)\n' "$an_ns" "$FRAMES"
if [ -n "${results[ag_ns]:-}" ]; then
    printf 'agent (1 source), per frame %.0f ns CPU (capture threads, analysis, recorder, publishing)\n' "${results[ag_ns]}"
    printf 'agent / analyze            %.2fx\n' "$(echo "${results[ag_ns]} / $an_ns" | bc -l)"
    printf 'connections tracked        %d (1 source)\n' "${results[tracked]}"
    printf '/metrics (1 source)        %s\n' "${results[metrics]}"
fi
