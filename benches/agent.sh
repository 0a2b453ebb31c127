#!/usr/bin/env bash
# Benchmark of `rocetap agent` (issue #12): the agent's cost per frame next to
# `analyze`'s on the same traffic, /metrics render time and size with ~10,000 tracked
# connections, and the agent's RSS while 10 million frames are replayed into it (it must
# stay flat: memory depends on live connections, not on packets or time).
#
# Traffic: `rocetap synth many-qp --qps 5000 --peers 128` (10,000 flows: both directions
# of 5,000 RC connections, 128-byte snaplen), replayed LOOPS times with tcpreplay
# --topspeed from a network namespace this script creates into a veth whose other end
# the agent captures; the namespace, the veth and the agent are removed at the end (by
# name and PID). Needs root, tcpreplay and curl. Frames the capture dropped are counted
# by the agent and printed: per-frame cost is over the frames the agent analyzed.
#
# FRAMES=n (1000000) frames per loop, LOOPS=n (10), QPS=n (5000).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "benches/agent.sh needs root (a network namespace)" >&2; exit 2; }
for t in tcpreplay curl; do
    command -v $t >/dev/null || { echo "benches/agent.sh needs $t" >&2; exit 2; }
done
FRAMES=${FRAMES:-1000000}
LOOPS=${LOOPS:-10}
QPS=${QPS:-5000}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-agentbench.XXXXXX")
NS=rtbench-$$
HOST_IF=rtb$$h
NS_IF=rtb$$p
PORT=$((20000 + $$ % 20000))
AGENT=
cleanup() {
    [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null || true
    ip link del "$HOST_IF" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

cargo build --release -q
BIN=${CARGO_TARGET_DIR:-target}/release/rocetap
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
ip link add "$HOST_IF" mtu 9000 type veth peer name "$NS_IF" mtu 9000 netns "$NS"
sysctl -qw "net.ipv6.conf.$HOST_IF.disable_ipv6=1" || true
ip netns exec "$NS" sysctl -qw "net.ipv6.conf.$NS_IF.disable_ipv6=1" || true
ip link set "$HOST_IF" up
ip -n "$NS" link set "$NS_IF" up

"$BIN" agent -i "$HOST_IF" --listen "127.0.0.1:$PORT" --netcheck-interval 0 \
    --idle-timeout 10m 2>"$TMP/agent.log" &
AGENT=$!
for _ in $(seq 50); do curl -sf "127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done

metric() { curl -s "127.0.0.1:$PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $NF} END {printf "%d", s}'; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$AGENT/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$AGENT/status"; }

echo "agent: $QPS QPs ($((QPS * 2)) flows), $FRAMES frames x $LOOPS loops, tcpreplay --topspeed"
printf '%-6s %12s %12s %10s %8s\n' loop frames analyzed dropped "RSS MiB"
cpu0=$(cpu_s)
for i in $(seq "$LOOPS"); do
    ip netns exec "$NS" tcpreplay -q --topspeed -i "$NS_IF" "$TMP/t.pcap" >/dev/null 2>&1
    sleep 1.5
    printf '%-6s %12d %12d %10d %8.1f\n' "$i" $((i * FRAMES)) "$(metric rocetap_frames_total)" \
        "$(metric rocetap_capture_dropped_packets_total)" "$(echo "$(rss_kib) / 1024" | bc -l)"
done
cpu1=$(cpu_s)
analyzed=$(metric rocetap_frames_total)
tracked=$(metric rocetap_connections_tracked)
ag_ns=$(echo "($cpu1 - $cpu0) * 1000000000 / $analyzed" | bc -l)
# /metrics with every flow still tracked: best of 5 renders.
mbest=999
for _ in 1 2 3 4 5; do
    t=$(curl -s -o "$TMP/m.txt" -w '%{time_total}' "127.0.0.1:$PORT/metrics")
    mbest=$(echo "$t" | awk -v b="$mbest" '{print ($1 < b) ? $1 : b}')
done
printf '\nconnections tracked        %d\n' "$tracked"
printf 'analyze, per frame         %.0f ns (best of 3 runs over %d frames)\n' "$an_ns" "$FRAMES"
printf 'agent, CPU per frame       %.0f ns (capture threads, analysis, recorder, publishing; %d frames analyzed)\n' "$ag_ns" "$analyzed"
printf 'agent / analyze            %.2fx\n' "$(echo "$ag_ns / $an_ns" | bc -l)"
printf '/metrics                   %.1f ms, %d bytes, %d series\n' "$(echo "$mbest * 1000" | bc -l)" \
    "$(stat -c %s "$TMP/m.txt")" "$(grep -vc '^#' "$TMP/m.txt")"
