#!/usr/bin/env bash
# The agent answering `/report` while it captures: how long each `/report` takes with a
# full flight recorder, and whether the capture dropped anything meanwhile.
#
# The agent reads each source's ring on the source's own thread, which waits while the
# `/report` re-analysis reads its flight recorder: the frames that arrive meanwhile wait
# in the kernel ring. This checks that ring holds them at RATE.
#
# Traffic: a `rocetap synth many-qp` trace (64 QPs over 4 peers, 256-byte WRITEs and their
# ACKs, 2,048 frames) as a trafgen config, sent by `trafgen --cpus 1` into a veth between
# two network namespaces this script creates (rtrep-PID-a sends, rtrep-PID-b captures;
# 198.18.253.0/24). The agent is first sent 600,000 frames unpaced (its recorder, 32 MiB
# of 128-byte slots with one source, is then full), then trafgen sends RATE pps for
# SECONDS while the script asks for `/report` REPORTS times, half a second apart. Last:
# the agent's frames and drops (`rocetap_frames_total`,
# `rocetap_capture_dropped_packets_total` per layer) and its memory budget line.
#
# Usage (root): benches/report.sh
# Env: RATE (1000000), SECONDS_SENT (6), REPORTS (3), ROCETAP=path (default
# target/release/rocetap, built if missing).
# Needs trafgen and netsniff-ng (apt-get install netsniff-ng), curl.
# Everything is removed on exit: the namespaces by name, the agent and trafgen by PID.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
RATE=${RATE:-1000000}
SECONDS_SENT=${SECONDS_SENT:-6}
REPORTS=${REPORTS:-3}
BIN=${ROCETAP:-$here/target/release/rocetap}

needs_root_and benches/report.sh "apt-get install netsniff-ng curl" trafgen netsniff-ng curl
[ -x "$BIN" ] || (cd "$here" && cargo build --release --quiet)

A=rtrep-$$-a
B=rtrep-$$-b
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rocetap-report.XXXXXX")
AGENT=
SENDER=
cleanup() { netns_cleanup "$A" "$B" "$TMP" "$SENDER" "$AGENT"; }
trap cleanup EXIT INT TERM

veth_pair "$A" rtr0 198.18.253.1/24 "$B" rtr1 198.18.253.2/24
trafgen_config "$BIN" "$TMP" benches/report.sh

PORT=$((20000 + $$ % 20000))
ip netns exec "$B" "$BIN" agent -i rtr1 --listen "127.0.0.1:$PORT" --netcheck-interval 0 \
    --idle-timeout 10m 2> "$TMP/err" &
AGENT=$!
for _ in $(seq 50); do ip netns exec "$B" curl -sf "127.0.0.1:$PORT/healthz" > /dev/null && break; sleep 0.2; done
ip netns exec "$A" trafgen --dev rtr0 --conf "$TMP/t.cfg" --num 600000 --cpus 1 -q > /dev/null 2>&1
sleep 1
echo "agent: $BIN; recorder full (600,000 frames sent); $REPORTS /report while $RATE pps for $SECONDS_SENT s"
ip netns exec "$A" trafgen --dev rtr0 --conf "$TMP/t.cfg" --num $((RATE * SECONDS_SENT)) --cpus 1 -q \
    --rate "${RATE}pps" > /dev/null 2>&1 &
SENDER=$!
sleep 1
for _ in $(seq "$REPORTS"); do
    ip netns exec "$B" curl -s -o "$TMP/report.json" \
        -w '/report  %{time_total} s, %{size_download} bytes\n' "127.0.0.1:$PORT/report"
    sleep 0.5
done
wait "$SENDER"
SENDER=
sleep 1.5
ip netns exec "$B" curl -s "127.0.0.1:$PORT/metrics" |
    grep -E '^rocetap_(frames_total|capture_dropped_packets_total)' | sed 's/{node="[^"]*",/{/'
grep -o 'memory_budget.*' "$TMP/err" | head -1
kill -INT "$AGENT"
wait "$AGENT" || true
AGENT=
