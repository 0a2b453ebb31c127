#!/usr/bin/env bash
# usage: lab/rxe/run.sh list | list-ci | list-switch
#        lab/rxe/run.sh [-n ITERS] [-s SNAPLEN] OUTDIR SCENARIO... | all | ci | switch
# (`ci`: every scenario but the extended ones, as tests/lab/lab_rxe.rs runs them;
#  `switch`: the three-VM A — S — B scenarios, taps at A and B, see switch.py)
# Boots two Soft-RoCE VMs per scenario (qemu/TCG, Debian's kernel with rdma_rxe), injects the
# scenario's faults, captures on the tap VM and writes OUTDIR/SCENARIO.pcap and
# OUTDIR/SCENARIO.truth.json. Scenarios run one at a time. -n overrides perftest's message
# count, -s the capture snaplen (0 = full frames). Runs build.sh first (a no-op when built).
# Exit status: 0 if every scenario succeeded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
L=${RXE_LAB:-/var/tmp/rxe-lab}
SCENARIO_TIMEOUT=${RXE_SCENARIO_TIMEOUT:-420}   # s per scenario (normally 35-60 s)

if [ "${1:-list}" = list ] || [ "${1:-}" = list-ci ] || [ "${1:-}" = list-switch ]; then exec python3 "$here/lab.py" "${1:-list}"; fi
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) extra+=(--iters "$2"); shift 2 ;;
    -s) extra+=(--snaplen "$2"); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: run.sh [-n ITERS] [-s SNAPLEN] OUTDIR SCENARIO... | all | ci" >&2; exit 2; }
out=$1; shift
# idempotent (about 1 s when everything is built); repacks the initramfs if init.sh changed
bash "$here/build.sh"
# This tree's rocetap goes into the VMs (/usr/local/bin/rocetap) as a second cpio archive
# appended to the initramfs (the kernel unpacks concatenated archives in order): ROCETAP_BIN,
# else the release build of this tree (cargo build --release, a no-op when up to date).
# The host is Debian bookworm like the guests, so the binary's glibc and libpcap are the
# guests' own; lab.py runs `rocetap --version` in each VM of the scenarios that use it and
# records why it does not run (tests/lab/lab_rxe.rs then fails those scenarios' QP-table rows).
repo=$(cd "$here/../.." && pwd)
bin=${ROCETAP_BIN:-}
if [ -z "$bin" ] && command -v cargo >/dev/null; then
  echo "building this tree's rocetap (release) for the VMs"
  if (cd "$repo" && cargo build --release --locked --quiet --bin rocetap); then
    bin=${CARGO_TARGET_DIR:-$repo/target}/release/rocetap
    case "$bin" in /*) ;; *) bin=$repo/$bin ;; esac
  fi
fi
overlay=
if [ -n "$bin" ] && [ -x "$bin" ]; then
  mkdir -p "$L/run"
  overlay=$(mktemp -d "$L/run/rocetap-bin.XXXXXX")
  mkdir -p "$overlay/root/usr/local/bin"
  strip -o "$overlay/root/usr/local/bin/rocetap" "$bin" 2>/dev/null || cp "$bin" "$overlay/root/usr/local/bin/rocetap"
  chmod 0755 "$overlay/root/usr" "$overlay/root/usr/local" "$overlay/root/usr/local/bin" "$overlay/root/usr/local/bin/rocetap"
  # only usr/...: an entry for "." would give the guest's / the temporary directory's mode
  # not compressed, as build.sh's image: copied faster than a TCG guest gunzips it
  ( cd "$overlay/root" && find usr -print | cpio -o -H newc -R 0:0 --quiet ) > "$overlay/bin.cpio"
  cat "$L/rocetap-initrd.img" "$overlay/bin.cpio" > "$overlay/initrd.img"
  export RXE_INITRD="$overlay/initrd.img" RXE_ROCETAP_BIN="$bin"
else
  echo "no rocetap binary for the VMs (set ROCETAP_BIN or install cargo): the QP-table checks will fail" >&2
fi
if [ "$1" = all ] || [ "$1" = ci ] || [ "$1" = switch ]; then
  mapfile -t all < <(python3 "$here/lab.py" "$(case "$1" in ci) echo list-ci ;; switch) echo list-switch ;; *) echo list ;; esac)" | awk '{print $1}')
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
trap 'cleanup; [ -z "$overlay" ] || rm -rf "$overlay"' EXIT
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
  if ! wait "$child"; then
    echo "scenario $s failed" >&2; rc=1
    # the VMs' consoles say why (a guest kernel panic ends its qemu: panic=-1, -no-reboot)
    for c in "$rundir"/*.console; do [ -f "$c" ] && tail -c 20000 "$c" > "$out/$s.failed.$(basename "$c")"; done
  fi
  child=
  cleanup
done
exit $rc
