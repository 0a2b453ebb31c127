#!/usr/bin/env bash
# usage: lab/rxe/run.sh list
#        lab/rxe/run.sh [-n ITERS] [-s SNAPLEN] OUTDIR SCENARIO... | all
# Boots two Soft-RoCE VMs per scenario (qemu/TCG, Debian's kernel with rdma_rxe), injects the
# scenario's faults, captures on the tap VM and writes OUTDIR/SCENARIO.pcap and
# OUTDIR/SCENARIO.truth.json. Scenarios run one at a time. -n overrides perftest's message
# count, -s the capture snaplen (0 = full frames). Runs build.sh first (a no-op when built).
# Exit status: 0 if every scenario succeeded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
L=${RXE_LAB:-/var/tmp/rxe-lab}
SCENARIO_TIMEOUT=${RXE_SCENARIO_TIMEOUT:-420}   # s per scenario (normally 35-60 s)

if [ "${1:-list}" = list ]; then exec python3 "$here/lab.py" list; fi
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) extra+=(--iters "$2"); shift 2 ;;
    -s) extra+=(--snaplen "$2"); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: run.sh [-n ITERS] [-s SNAPLEN] OUTDIR SCENARIO... | all" >&2; exit 2; }
out=$1; shift
# idempotent (about 1 s when everything is built); repacks the initramfs if init.sh changed
bash "$here/build.sh"
if [ "$1" = all ]; then
  mapfile -t all < <(python3 "$here/lab.py" list | awk '{print $1}')
  set -- "${all[@]}"
fi
mkdir -p "$out"

rundir= child=
cleanup() {
  # lab.py powers its VMs off in a finally block (on SIGTERM too); then, as the backstop,
  # kill only the qemu processes whose PIDs lab.py recorded in its run dir.
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true   # timeout(1) passes it on to lab.py
    wait "$child" 2>/dev/null || true
  fi
  if [ -n "$rundir" ]; then
    python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import vm; vm.kill_recorded(sys.argv[2])" "$here" "$rundir" || true
    rm -rf "$rundir"
  fi
  child= rundir=
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

rc=0
for s in "$@"; do
  echo "=== $s $(date -u +%T)"
  rundir="$L/run/lab-$$-$s"
  # in the background so that a signal to run.sh is handled at once (wait returns);
  # timeout sends SIGTERM to lab.py (it stops its VMs), then SIGKILL 30 s later
  RXE_RUN_DIR="$rundir" timeout -k 30 "$SCENARIO_TIMEOUT" \
    python3 "$here/lab.py" run "$out" "$s" ${extra[@]+"${extra[@]}"} &
  child=$!
  if ! wait "$child"; then echo "scenario $s failed" >&2; rc=1; fi
  child=
  cleanup
done
exit $rc
