#!/usr/bin/env bash
# Records the small real-stack captures committed as samples/rxe-*.pcap, each with its truth
# as samples/rxe-NAME.pcap.truth.json (lab.py's truth.json; `capture.file` renamed).
# usage: lab/rxe/make-samples.sh [SAMPLES_DIR]      (default: the repository's samples/)
#        RXE_SAMPLES="rnr-loss ud-loss" lab/rxe/make-samples.sh   (only those of the list)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../samples}
tmp=$(mktemp -d /tmp/rxe-samples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# scenario, perftest -n, snaplen: small enough for a few hundred KB each
while read -r name iters snap; do
  case " ${RXE_SAMPLES:-$name} " in *" $name "*) ;; *) continue ;; esac
  bash "$here/run.sh" -n "$iters" -s "$snap" "$tmp" "$name"
  cp "$tmp/$name.pcap" "$dest/rxe-$name.pcap"
  python3 - "$tmp/$name.truth.json" "$dest/rxe-$name.pcap.truth.json" "rxe-$name.pcap" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["capture"]["file"] = sys.argv[3]
t["sample_command"] = "lab/rxe/make-samples.sh (" + t["lab_command"] + ", renamed to " + sys.argv[3] + ")"
with open(sys.argv[2], "w") as f:
    json.dump(t, f, indent=1)
    f.write("\n")
PY
done <<'LIST'
clean-write 60 0
loss-upstream 150 128
read-loss 150 128
rnr 40 128
duplicate 150 128
rdma-cm 200 320
rdma-cm-no-server 10 0
rnr-loss 60 128
ud-loss 300 128
dead-rc-at-once 20 320
LIST
# the three-VM lab's recordings (switch.py): two taps each, as samples/taps/NAME.{A,B}.pcap
# and NAME.truth.json (RXE_TAPS_SAMPLES picks; RXE_TAPS_SAMPLES=none skips them)
while read -r name iters snap; do
  case " ${RXE_TAPS_SAMPLES:-$name} " in *" $name "*) ;; *) continue ;; esac
  bash "$here/run.sh" -n "$iters" -s "$snap" "$tmp" "$name"
  mkdir -p "$dest/taps"
  for t in A B; do cp "$tmp/$name.$t.pcap" "$dest/taps/$name.$t.pcap"; done
  python3 - "$tmp/$name.truth.json" "$dest/taps/$name.truth.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["sample_command"] = "lab/rxe/make-samples.sh (" + t["lab_command"] + ")"
with open(sys.argv[2], "w") as f:
    json.dump(t, f, indent=1)
    f.write("\n")
PY
done <<'LIST'
switch-write-s 40 128
switch-read-s 40 128
LIST
ls -la "$dest"/rxe-* "$dest"/taps/switch-*
