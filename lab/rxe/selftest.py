#!/usr/bin/env python3
"""Self-test of the lab's own readers, no VM needed (`tests/lab/lab_rxe.rs` runs it):
merge_tables (the sampled QP tables) and wire.first_transmissions (the wire's count of
first transmissions). Prints one line per failed case and exits 1, else prints "ok"."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab  # noqa: E402
import wire  # noqa: E402

failed = []


def check(what, got, want):
    if got != want:
        failed.append(f"{what}: got {got!r}, want {want!r}")


def table(*qps):
    return json.dumps(list(qps))


# A QP sampled in RESET (no port yet), then INIT and RTS on port 1: one QP, its last reading.
reset = {"ifname": "rxe0", "lqpn": 17, "rqpn": 0, "state": "RESET", "type": "RC"}
init = dict(reset, port=1, state="INIT")
rts = dict(reset, port=1, state="RTS", rqpn=17)
gsi = {"ifname": "rxe0", "port": 1, "lqpn": 1, "state": "RTS", "type": "GSI"}
m = lab.merge_tables("\n".join([table(gsi, reset), table(gsi, init), table(gsi, rts)]))
check("RESET, INIT, RTS of one QP", m, [gsi, rts])
# Seen only in RESET: kept as it was seen.
check("only RESET", lab.merge_tables(table(reset)), [reset])
# QP1 exists once per port: two ports, two entries.
gsi2 = dict(gsi, port=2)
check("QP1 on two ports", lab.merge_tables(table(gsi, gsi2)), [gsi, gsi2])
# A table cut short is skipped; no parsable line at all is None.
check("cut short", lab.merge_tables(table(gsi) + "\n" + table(rts)[:-5]), [gsi])
check("nothing parses", lab.merge_tables("[{\"ifname\": \n"), None)

# First transmissions: (ipid, qp, psn, span). WRITEs of one PSN each, then a rewind to 101.
check("in order, then a rewind",
      wire.first_transmissions([(1, 5, 100, 1), (2, 5, 101, 1), (3, 5, 102, 1), (4, 5, 101, 1)]), 3)
# A READ of 4 PSNs at 200, asked again from 202 (a lost response) and 203: not new.
check("READ re-requests inside its span",
      wire.first_transmissions([(1, 5, 200, 4), (2, 5, 202, 2), (3, 5, 203, 1), (4, 5, 204, 1)]), 2)
# A copy (same IP ID) is one transmission; the PSN wraps at 2^24.
check("copy and wrap",
      wire.first_transmissions([(1, 5, 0xFFFFFF, 1), (1, 5, 0xFFFFFF, 1), (2, 5, 0, 1)]), 2)

for f in failed:
    print(f)
print("ok" if not failed else f"{len(failed)} failed")
sys.exit(1 if failed else 0)
