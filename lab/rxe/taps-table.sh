#!/usr/bin/env bash
# usage: lab/rxe/taps-table.sh DIR...          (switch.py's NAME.{A,B}.pcap + NAME.truth.json,
#                                               e.g. run.sh OUT switch, or samples/taps)
#        ROCETAP_BIN=path lab/rxe/taps-table.sh DIR...
# Prints, as markdown, one row per recorded three-VM scenario (A — S — B): where netem sat
# and what it did (drops per direction and segment, CE marks, jitter), and what
# `rocetap analyze --tap A=.. --tap B=.. --tap-window 2` reports per segment (lost
# before the first tap / between the taps / after the last, per direction), the CE marks
# in each tap's capture and the queueing delay median. tests/lab/lab_taps.rs holds the
# numbers to each other.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] && [ -d "$1" ] || { sed -n '2,4p' "$0" >&2; exit 2; }
bin=${ROCETAP_BIN:-$here/../../target/debug/rocetap}
[ -x "$bin" ] || { echo "taps-table: no rocetap at $bin (cargo build, or set ROCETAP_BIN)" >&2; exit 2; }
exec python3 - "$bin" "$here" "$@" <<'PY'
import json, os, subprocess, sys
binary, here, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, here)
import scenarios  # noqa: E402  (the order of the table)

SEG = [("before_first_tap", "before_tap", "before"), ("between_taps", "between_taps", "between"),
       ("after_last_tap", "after_tap", "after")]


def run(args):
    o = subprocess.run([binary, *args], capture_output=True, text=True)
    if o.returncode != 0:
        return None
    return json.loads(o.stdout)


def counts(v, direction):
    """before/between/after lost in one direction of the merged JSON."""
    out = []
    for _, loc, _ in SEG:
        out.append(sum(s["lost"] for d in v["taps"]["directions"]
                       if (d["src"] == "198.18.0.1") == (direction == "A->B")
                       for s in d["segments"] if s["location"] == loc))
    return out


print("| scenario | fault (netem) | place | netem: A→B before/between/after; B→A | "
      "rocetap: A→B before/between/after; B→A | CE at A / B (netem) | queueing median (netem jitter) |")
print("|---|---|---|---|---|---|---|")
for sc in scenarios.SWITCH_SCENARIOS:
    for d in dirs:
        tp = os.path.join(d, f"{sc.name}.truth.json")
        if not os.path.isfile(tp):
            continue
        t = json.load(open(tp))
        e = t["expected"]
        a, b = (os.path.join(d, f"{sc.name}.{x}.pcap") for x in "AB")
        v = run(["analyze", "-q", "--tap-window", "2", "--tap", f"A={a}", "--tap", f"B={b}", "-F", "json"])
        if v is None:
            print(f"| {sc.name} | | | | rocetap failed | | |")
            continue
        faults = "; ".join(f"{f['vm']} {f['where']}{' toward ' + f['toward'] if f.get('toward') else ''}: "
                           f"{f['netem']}" for f in t["faults"])
        place = "; ".join(f"{f['direction']} {f['segment']}" for f in t["faults"])
        want = "; ".join("/".join(str(e["lost"][dr][s]) for s, _, _ in SEG) for dr in ("A->B", "B->A"))
        got = "; ".join("/".join(map(str, counts(v, dr))) for dr in ("A->B", "B->A"))
        ce = ""
        if e["ce_marks_between_taps"]:
            ca = run(["analyze", "-q", a, "-F", "json"])["totals"]["ce_marked"]
            cb = run(["analyze", "-q", b, "-F", "json"])["totals"]["ce_marked"]
            ce = f"{ca} / {cb} ({e['ce_marks_between_taps']})"
        q = v["totals"].get("queueing_delay_median_s")
        qs = f"{q * 1e3:.1f} ms" if q is not None else "-"
        if "queueing_median_above_min_s" in e:
            qs += f" ({e['queueing_median_above_min_s'] * 1e3:.0f} ms)"
        print(f"| {sc.name} | {faults} | {place} | {want} | {got} | {ce} | {qs} |")
PY
