#!/usr/bin/env bash
# usage: lab/rxe/story-table.sh DIR...        (run.sh's NAME.pcap + NAME.truth.json, or the
#                                               samples' rxe-NAME.pcap + rxe-NAME.pcap.truth.json)
#        ROCETAP_BIN=path lab/rxe/story-table.sh DIR...
# Prints, as markdown, one row per recorded scenario: where its faults sit relative to the
# tap, what the kernel's and netem's counters imply, and what rocetap's report says — the
# first finding, each loss finding's `cause`/`location`, and the QPs it says gave up,
# stalled or failed. The implications are read from the truth only (never from rocetap);
# tests/lab/lab_story.rs holds rocetap to them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { sed -n '2,4p' "$0" >&2; exit 2; }
bin=${ROCETAP_BIN:-$here/../../target/debug/rocetap}
[ -x "$bin" ] || { echo "story-table: no rocetap at $bin (cargo build, or set ROCETAP_BIN)" >&2; exit 2; }
exec python3 - "$bin" "$here" "$@" <<'PY'
import json, os, subprocess, sys
binary, here, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, here)
import scenarios  # noqa: E402  (the order of the table)


def d(t, vm, k):
    return t["hw_counters_delta"][vm].get(k, 0)


def implied(t):
    """What the kernel's and netem's counters (and the fault's place) imply, in words."""
    parts = []
    for n in t.get("netem", []):
        if n.get("lost"):
            parts.append(f"{n['lost']} {n['direction']} lost {n['relative_to_tap']} the tap")
        if n.get("duplicates"):
            parts.append(f"{n['duplicates']} copies before the tap")
        if n.get("ce_marks"):
            parts.append(f"{n['ce_marks']} CE marks")
    link = [(a, b, d(t, a, "sent_pkts") - sum(n.get("lost", 0) - n.get("duplicates", 0)
                                             for n in t.get("netem", []) if n.get("direction") == f"{a}->{b}")
             - d(t, b, "rcvd_pkts")) for a, b in (("A", "B"), ("B", "A"))]
    for a, b, n in link:
        if n > 0:
            parts.append(f"{n} {a}->{b} lost by the VMs' own link")
    if any("reorder" in f.get("netem", "") for f in t.get("faults", [])):
        parts.append("reordering before the tap")
    if d(t, "B", "send_rnr_err"):
        parts.append(f"{d(t, 'B', 'send_rnr_err')} RNR NAKs")
    seq = d(t, "B", "out_of_seq_request")
    if seq:
        parts.append(f"{seq} seq NAKs")
    ex = d(t, "A", "retry_exceeded_err")
    if ex:
        before = any(f["direction"] == "A->B" and f["relative_to_tap"] == "before"
                     and "100%" in (f.get("netem", "") + f.get("later", "")) for f in t.get("faults", []))
        parts.append(f"{ex} {'QP' if ex == 1 else 'QPs'} gave up ({'behind the dead link: a stall at the tap' if before else 'retries seen at the tap'})")
    elif t["perftest"].get("client_rc") == 124:
        parts.append(f"no give-up, {d(t, 'A', 'completer_retry_err')} retries without end")
    if not parts:
        parts.append("no loss")
    return "; ".join(parts)


def place(t):
    tap = t["tap"]
    b, a = tap.get("faults_before_tap", []), tap.get("faults_after_tap", [])
    words = [f"before: {x}" for x in b] + [f"after: {x}" for x in a]
    return f"tap {tap['vm']}; " + ("; ".join(words) if words else "no fault")


def said(r):
    f = r.get("findings", [])
    loss = [f"{x['kind']} {x['cause']}/{x['location']}" for x in f if "cause" in x]
    tot = r["totals"]
    first = f[0]["kind"] if f else "-"
    stops = (f"exhausted {tot.get('retry_exhausted', 0)}, stalled {tot.get('stalled_connections', 0)}, "
             f"failed {tot.get('qps_failed', 0)}")
    return first, "; ".join(loss) or "none", stops


names = [s.name for s in scenarios.SCENARIOS]
# scenario -> (pcap, truth): the first directory that has it wins
found = {}
for out in dirs:
    for n in sorted(os.listdir(out)):
        if not n.endswith(".truth.json"):
            continue
        truth = os.path.join(out, n)
        pcap = truth[:-11] if n.endswith(".pcap.truth.json") else truth[:-11] + ".pcap"
        t = json.load(open(truth)) if os.path.exists(pcap) else {}
        if "hw_counters_delta" in t and "tap" in t:  # the lab's (not a synthetic sample's)
            found.setdefault(t.get("scenario", n), (pcap, truth))
present = sorted(found, key=lambda n: (names.index(n) if n in names else len(names), n))
print("| scenario | fault's place | the counters imply | rocetap: first finding | cause/location of each loss finding | QPs gave up / stalled / failed |")
print("|---|---|---|---|---|---|")
for n in present:
    pcap, truth = found[n]
    t = json.load(open(truth))
    if os.path.basename(pcap) != n + ".pcap":
        n += f" ({os.path.basename(pcap)})"
    p = subprocess.run([binary, "analyze", "--format", "json", pcap], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"| {n} | {place(t)} | {implied(t)} | rocetap failed: {p.stderr.strip()[:80]} | | |")
        continue
    first, loss, stops = said(json.loads(p.stdout))
    print(f"| {n} | {place(t)} | {implied(t)} | {first} | {loss} | {stops} |")
PY
