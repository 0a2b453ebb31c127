"""The three-VM lab: A — S — B, S a Linux bridge between two links, taps at A and B at once.

One run of a switch scenario (scenarios.SWITCH_SCENARIOS) writes OUTDIR/NAME.A.pcap,
OUTDIR/NAME.B.pcap and OUTDIR/NAME.truth.json. The truth is netem's counters at each
place a fault sits, read after the run (each netem qdisc is created for the run, so its
counters start at zero), with the place in the terms of `rocetap analyze --tap A=.. --tap
B=..`: per direction, the segment before the first tap, between the taps, after the last.

Where a fault sits (an AF_PACKET tap sees a host's egress after its qdisc and its ingress
before tc ingress, see README.md):
  A egress (netem on A's eth0)        A->B before A's tap = before the first tap
  S egress toward B (S's eth1)        A->B between the taps (the switch drops or marks)
  S egress toward A (S's eth0)        B->A between the taps
  B ingress (ifb0)                    A->B after B's tap = after the last tap
  B egress                            B->A before the first tap (B's tap is its first)
  A ingress (ifb0)                    B->A after the last tap
"""
import json
import os
import re
import signal
import time

import lab
import scenarios
import vm as vmmod
import wire

# S's bridge: its NICs in order (eth0 toward A, eth1 toward B), no address, no rxe
BRIDGE = ("rdma link delete rxe0 2>/dev/null; ip addr flush dev {e0}; "
          "ip link add br0 type bridge stp_state 0 forward_delay 0 && "
          "ip link set {e1} mtu {mtu} && ethtool -K {e1} tso off gso off gro off >/dev/null 2>&1; "
          "ip link set {e0} master br0 && ip link set {e1} master br0 && ip link set {e1} up && "
          "ip link set br0 up && bridge link show")


def place(f):
    """(direction, segment) of a fault in the merged analysis of taps A and B."""
    d = f.direction()
    if f.vm == "S":
        return d, "between_taps"
    first = "A" if d == "A->B" else "B"
    if f.where == "egress":
        return d, "before_first_tap" if f.vm == first else "after_last_tap"
    return d, "after_last_tap" if f.vm != first else "before_first_tap"


def s_port(v, toward):
    """S's NIC toward A (its first) or B (its second)."""
    return v.nics[0 if toward == "A" else 1]


def tc_stats(v, devs):
    """`tc -s qdisc` of `devs`, parsed as lab.tc_stats does."""
    rc, raw = v.sh("; ".join(f"echo '== dev {d}'; tc -s qdisc show dev {d}" for d in devs) + "; true")
    qd, dev, cur = [], None, None
    for line in raw.splitlines():
        s = line.strip()
        if s.startswith("== dev "):
            dev = s[7:]
        elif s.startswith("qdisc ") and dev:
            f = s.split()
            cur = {"dev": dev, "kind": f[1], "handle": f[2], "spec": s}
            qd.append(cur)
        elif cur is not None and (m := lab.SENT_RE.search(s)):
            cur.update(sent_bytes=int(m[1]), sent_pkts=int(m[2]), dropped=int(m[3]),
                       overlimits=int(m[4]), requeues=int(m[5]))
            cur = None
    return {"raw": raw, "qdiscs": qd}


def netem_truth(sc, tc, vms, dlt):
    """Per fault: its place and what its netem did (lost, CE marks, copies)."""
    out = []
    for f in sc.faults:
        dev = (s_port(vms["S"], f.toward) if f.vm == "S" else "eth0" if f.where == "egress" else "ifb0")
        q = next((q for q in tc[f.vm]["qdiscs"] if q["dev"] == dev and q["kind"] == "netem"), None)
        d, seg = place(f)
        rec = {"vm": f.vm, "where": f.where, "dev": dev, "netem": f.netem, "direction": d, "segment": seg}
        if q is None or "sent_pkts" not in q:
            rec["error"] = "no netem statistics"
            out.append(rec)
            continue
        sender = "A" if d == "A->B" else "B"
        offered = dlt[sender]["sent_pkts"]
        ecn = " ecn" in f" {f.netem}"
        real = 0 if ecn else q["dropped"]
        rec.update(sent_pkts=q["sent_pkts"], dropped=q["dropped"], requeues=q["requeues"],
                   offered_pkts=offered, offered_from=f"{sender} hw_counters sent_pkts delta",
                   lost=real, ce_marks=q["dropped"] if ecn else 0,
                   duplicates=q["sent_pkts"] + real - offered)
        out.append(rec)
    return out


def expected(sc, netem):
    """What the merged analysis must say: lost per direction and segment (netem's drops),
    CE marks added between the taps, and the jitter netem adds above its minimum."""
    lost = {d: {"before_first_tap": 0, "between_taps": 0, "after_last_tap": 0} for d in ("A->B", "B->A")}
    ce = 0
    for n in netem:
        lost[n["direction"]][n["segment"]] += n.get("lost", 0)
        if n["segment"] == "between_taps":
            ce += n.get("ce_marks", 0)
    e = {"lost": lost, "ce_marks_between_taps": ce}
    for f in sc.faults:
        m = re.search(r"delay (\d+(?:\.\d+)?)ms (\d+(?:\.\d+)?)ms", f.netem)
        if m:
            # netem without a distribution table draws the delay uniformly from
            # [D - J, D + J): above its minimum uniform on [0, 2J), median J
            e["queueing_median_above_min_s"] = float(m[2]) / 1000
            e["queueing_note"] = (f"netem delay {m[1]} ms, jitter {m[2]} ms, uniform (no distribution table): "
                                  "median above the minimum = the jitter")
    return e


def main_run(out_dir, name, iters=None, snaplen=None):
    sc = scenarios.SWITCH_BY_NAME[name]
    snap = sc.snap if snaplen is None else snaplen
    os.makedirs(out_dir, exist_ok=True)
    run_dir = os.environ.get("RXE_RUN_DIR") or os.path.join(vmmod.LAB, "run", f"lab-{os.getpid()}")
    t0 = time.time()

    def on_term(signum, _frame):
        raise SystemExit(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    test = sc.perftest(iters)
    srv = f"timeout {lab.SERVER_TIMEOUT} {test}"
    cli = f"timeout {sc.client_timeout or lab.CLIENT_TIMEOUT} {test} {vmmod.B_IP}"
    tcpd = f"tcpdump -i eth0 -n -s {snap} -B 16384 -w /tmp/cap.pcap udp port 4791"
    truth = {
        "scenario": name, "description": sc.desc, "topology": "A — S — B",
        "generator": "Linux Soft-RoCE (rdma_rxe) in Debian's kernel, perftest, three qemu VMs: A and B on "
                     "two qemu socket links to S, a Linux bridge",
        "lab_command": "lab/rxe/run.sh" + (f" -n {iters}" if iters else "") +
                       (f" -s {snaplen}" if snaplen is not None else "") + f" OUT {name}",
        "accel": vmmod.accel(), "eth_mtu": sc.mtu, "pmtu": sc.pmtu(),
        "vms": {"A": {"ip": vmmod.A_IP, "role": "requester (perftest client)", "tap": f"{name}.A.pcap"},
                "S": {"role": "Linux bridge br0 over eth0 (toward A) and eth1 (toward B), no address, no rxe"},
                "B": {"ip": vmmod.B_IP, "role": "responder (perftest server)", "tap": f"{name}.B.pcap"}},
        "analyze": f"rocetap analyze --tap A={name}.A.pcap --tap B={name}.B.pcap",
    }
    timing, setup = {}, []
    vms = {}
    try:
        a, s, b = vmmod.triple(run_dir, mtu=sc.mtu)
        vms = {"A": a, "S": s, "B": b}
        for v in (a, s, b):
            v.wait_ready(300)
        timing["boot_s"] = round(time.time() - t0, 1)
        _, nics = s.sh("for n in /sys/class/net/*; do [ -e $n/device ] && basename $n; done")
        s.nics = nics.split()
        if len(s.nics) != 2:
            raise RuntimeError(f"S: two NICs expected, found {s.nics}")
        rc, o = s.sh(BRIDGE.format(e0=s.nics[0], e1=s.nics[1], mtu=sc.mtu), timeout=60)
        setup.append({"vm": "S", "cmd": "bridge", "rc": rc, "out": o})
        if rc != 0:
            raise RuntimeError(f"S: bridge setup failed: {o}")
        truth["kernel"] = a.sh("uname -r")[1].strip()
        truth["perftest_version"] = a.sh("ib_write_bw --version 2>&1 | grep -i version")[1].strip()
        for i in range(10):  # the bridge forwards at once (no STP); ARP may take a moment
            if a.sh(f"ping -c 1 -W 3 {vmmod.B_IP}", timeout=30)[0] == 0:
                break
            time.sleep(1)
        a.sh(f"ping -c 2 -W 3 {vmmod.B_IP}", timeout=30, check=True)
        for f in sc.faults:
            dev = s_port(s, f.toward) if f.vm == "S" else "eth0"
            for c in lab.fault_commands(f, dev):
                rc, o = vms[f.vm].sh(c, timeout=30)
                setup.append({"vm": f.vm, "cmd": c, "rc": rc, "out": o})
                if rc != 0:
                    raise RuntimeError(f"{f.vm}: {c}: {o}")
        truth["faults"] = [{"vm": f.vm, "where": f.where, "netem": f.netem, "direction": place(f)[0],
                            "segment": place(f)[1], "toward": f.toward or None} for f in sc.faults]
        before = {n: vms[n].counters() for n in ("A", "B")}
        for v in (a, b):
            v.sh(f"nohup {tcpd} > /tmp/tcpdump.log 2>&1 & echo $! > /tmp/tcpdump.pid; "
                 "for i in $(seq 50); do grep -q 'listening on' /tmp/tcpdump.log && break; sleep 0.2; done")
        b.sh(f"nohup {srv} > /tmp/server.log 2>&1 & echo $! > /tmp/server.pid")
        b.sh("for i in $(seq 75); do ss -Hltn 'sport = :18515' | grep -q . && break; sleep 0.2; done")
        t1 = time.time()
        a.sh(f"nohup bash -c '{cli}; echo $? > /tmp/client.rc' > /tmp/client.log 2>&1 & echo $! > /tmp/client.pid")
        deadline = t1 + (sc.client_timeout or lab.CLIENT_TIMEOUT) + 20
        while time.time() < deadline:
            if a.sh("test -f /tmp/client.rc")[0] == 0:
                break
            time.sleep(0.5)
        timing["perftest_s"] = round(time.time() - t1, 1)
        rc_cli = a.sh("cat /tmp/client.rc 2>/dev/null || echo -1")[1].strip()
        out_cli = a.sh("cat /tmp/client.log")[1]
        for _ in range(60):
            if "done" in b.sh("kill -0 $(cat /tmp/server.pid) 2>/dev/null && echo run || echo done")[1]:
                break
            time.sleep(0.5)
        b.sh("kill $(cat /tmp/server.pid) 2>/dev/null; true")
        out_srv = b.sh("cat /tmp/server.log")[1]
        time.sleep(1)
        logs = {}
        for n, v in (("A", a), ("B", b)):
            logs[n] = v.sh("kill -INT $(cat /tmp/tcpdump.pid); for i in $(seq 50); do "
                           "kill -0 $(cat /tmp/tcpdump.pid) 2>/dev/null || break; sleep 0.2; done; "
                           "cat /tmp/tcpdump.log")[1]
        after = {n: vms[n].counters() for n in ("A", "B")}
        tc = {"A": tc_stats(a, ["eth0", "ifb0"]), "B": tc_stats(b, ["eth0", "ifb0"]),
              "S": tc_stats(s, s.nics)}
        t2 = time.time()
        sizes = {n: v.get("/tmp/cap.pcap", os.path.join(out_dir, f"{name}.{n}.pcap")) for n, v in (("A", a), ("B", b))}
        timing["fetch_captures_s"] = round(time.time() - t2, 1)
    finally:
        for v in vms.values():
            v.stop()
        vmmod.kill_recorded(run_dir)
        try:
            for n in os.listdir(run_dir):
                if n.endswith((".ctl", ".pid")):
                    os.unlink(os.path.join(run_dir, n))
        except OSError:
            pass

    dlt = {n: lab.delta(before[n], after[n]) for n in ("A", "B")}
    truth["captures"] = {}
    for n in ("A", "B"):
        m = re.search(r"(\d+) packets dropped by kernel", logs[n])
        truth["captures"][n] = {"file": f"{name}.{n}.pcap", "command": tcpd, "snaplen": snap or 262144,
                                "bytes": sizes[n],
                                "tcpdump_stats": [ln for ln in logs[n].strip().splitlines() if "packets" in ln],
                                "dropped_by_kernel": int(m[1]) if m else None}
    truth["perftest"] = {"server_cmd_on_B": srv, "client_cmd_on_A": cli,
                         "client_rc": int(rc_cli) if rc_cli.lstrip("-").isdigit() else rc_cli,
                         "client_qps": lab.perftest_qps(out_cli), "server_qps": lab.perftest_qps(out_srv),
                         "client_output": out_cli, "server_output": out_srv}
    truth["hw_counters_delta"] = dlt
    truth["tc"] = tc
    truth["netem"] = netem_truth(sc, tc, vms, dlt)
    truth["expected"] = expected(sc, truth["netem"])
    truth["wire"] = {n: wire.summary(os.path.join(out_dir, f"{name}.{n}.pcap"), truth["pmtu"]) for n in ("A", "B")}
    truth["setup_log"] = setup
    truth["elapsed_s"] = round(time.time() - t0, 1)
    truth["timing"] = timing
    with open(os.path.join(out_dir, f"{name}.truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    e = truth["expected"]
    print(f"{name}: rc {truth['perftest']['client_rc']}, A {sizes['A']} B {sizes['B']} bytes, "
          f"{truth['elapsed_s']} s (boot {timing.get('boot_s')}); lost {json.dumps(e['lost'])}; "
          f"CE {e['ce_marks_between_taps']}", flush=True)
    if truth["perftest"]["client_rc"] != 0:
        raise SystemExit(f"{name}: perftest client rc {rc_cli}")
