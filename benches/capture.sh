#!/bin/sh
# Capture throughput: replay a RoCE trace at top speed (tcpreplay -t) into a veth pair
# between two network namespaces this script creates, capture on the far side with
# `rocetap capture -w` and with `tcpdump -w`, and report packets/s and drops side by side.
#
# Usage (root): benches/capture.sh [TRACE.pcap] [LOOPS] [RUNS]
#   TRACE  Ethernet pcap to replay (default: ../shared/captures/public/rdma-nccl2.pcap)
#   LOOPS  tcpreplay --loop count (default 400)
#   RUNS   repetitions per tool (default 3)
# Env: ROCETAP=path to the binary (default: target/release/rocetap, built if missing);
#      ROCETAP_ARGS=extra `rocetap capture` options (e.g. "--immediate" or "-s 128").
#
# Traffic stays inside the namespaces (198.19.254.0/24); both are removed on exit.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/lib.sh
. "$here/benches/lib.sh"
trace=${1:-$here/../shared/captures/public/rdma-nccl2.pcap}
loops=${2:-400}
runs=${3:-3}
rocetap=${ROCETAP:-$here/target/release/rocetap}

[ "$(id -u)" = 0 ] || { echo "capture.sh: needs root (network namespaces)" >&2; exit 2; }
[ -f "$trace" ] || { echo "capture.sh: $trace not found" >&2; exit 2; }
if [ ! -x "$rocetap" ]; then
    (cd "$here" && cargo build --release --quiet)
fi

a=rtbench-$$-a
b=rtbench-$$-b
work=$(mktemp -d)
cleanup() { netns_cleanup "$a" "$b" "$work"; }
trap cleanup EXIT INT TERM

veth_pair "$a" rtb0 198.19.254.1/24 "$b" rtb1 198.19.254.2/24

per_loop=$("$rocetap" decode -q "$trace" | wc -l)
sent=$((per_loop * loops))

# run TOOL: prints "pps_sent captured written kernel_drops own_drops seconds"
run() {
    out=$work/out.pcap
    rm -f "$out"
    case $1 in
        # shellcheck disable=SC2086 # ROCETAP_ARGS is a list of options
        rocetap) ip netns exec "$b" "$rocetap" capture -i rtb1 -w "$out" --all --force ${ROCETAP_ARGS:-} 2>"$work/err" & ;;
        tcpdump) ip netns exec "$b" tcpdump -i rtb1 -w "$out" 2>"$work/err" & ;;
    esac
    pid=$!
    sleep 1.5
    rep=$(ip netns exec "$a" tcpreplay -t --loop="$loops" -i rtb0 "$trace" 2>&1)
    sleep 1.5
    # The capture process is `ip netns exec`'s child (exec'd): signal it by pid.
    kill -INT "$pid"
    wait "$pid" || true
    pps=$(echo "$rep" | sed -n 's/.*Rated: [0-9.]* Bps, [0-9.]* Mbps, \([0-9.]*\) pps.*/\1/p' | head -1)
    secs=$(echo "$rep" | sed -n 's/.*Actual: [0-9]* packets ([0-9]* bytes) sent in \([0-9.]*\) seconds.*/\1/p' | head -1)
    err=$(cat "$work/err")
    case $1 in
        rocetap)
            cap=$(echo "$err" | sed -n 's/^\([0-9]*\) packets captured$/\1/p' | tail -1)
            written=$(echo "$err" | sed -n 's/^\([0-9]*\) packets written.*/\1/p' | tail -1)
            kern=$(echo "$err" | sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' | tail -1)
            own=$(echo "$err" | sed -n 's/^\([0-9]*\) packets dropped by rocetap.*/\1/p' | tail -1)
            ;;
        tcpdump)
            cap=$(echo "$err" | sed -n 's/^\([0-9]*\) packets captured$/\1/p' | tail -1)
            written=$("$rocetap" decode -q "$out" | wc -l)
            kern=$(echo "$err" | sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' | tail -1)
            own=-
            ;;
    esac
    echo "${pps:-?} ${cap:-?} ${written:-?} ${kern:-?} ${own} ${secs:-?}"
}

echo "trace: $(basename "$trace"), $per_loop frames x $loops loops = $sent frames per run, $runs runs"
echo "rocetap capture options: --all ${ROCETAP_ARGS:-}"
printf '%-8s %4s %12s %10s %10s %10s %10s %10s\n' tool run "sent pps" sent captured written "kernel dr" "own dr"
for tool in rocetap tcpdump; do
    i=1
    while [ "$i" -le "$runs" ]; do
        set -- $(run "$tool")
        printf '%-8s %4s %12s %10s %10s %10s %10s %10s\n' "$tool" "$i" "$1" "$sent" "$2" "$3" "$4" "$5"
        i=$((i + 1))
    done
done
