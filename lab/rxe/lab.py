#!/usr/bin/env python3
"""rxe lab: run scenarios between two Soft-RoCE VMs and record ground truth.

usage: lab.py list | list-ci | list-switch
       lab.py run OUTDIR SCENARIO [--iters N] [--snaplen S]
          -> OUTDIR/SCENARIO.pcap, OUTDIR/SCENARIO.truth.json

One fresh pair of VMs per scenario (A = requester = perftest client 198.18.0.1,
B = responder = perftest server 198.18.0.2); faults with tc/netem on RoCE v2 only; tcpdump
on the tap VM's eth0; the kernel's own counters (rxe hw_counters) and netem's counters
before and after. The VMs are powered off, or killed by their recorded PID, on every exit
path (including SIGTERM from an outer timeout).
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios  # noqa: E402
import vm as vmmod  # noqa: E402
import wire  # noqa: E402

CLIENT_TIMEOUT = 200   # s, perftest client (its own timeout(1) inside the VM)
SERVER_TIMEOUT = 240   # s, perftest server
HW = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
ROCETAP = "/usr/local/bin/rocetap"   # put there by run.sh (not on the agent's PATH)


# ---- faults ---------------------------------------------------------------------------------
def later_command(f):
    """The background command that changes a fault's netem `after_s` s after the client starts
    (a link that dies mid-run); the netem qdisc keeps its handle and counters."""
    dev = "eth0 parent 1:3" if f.where == "egress" else ("ifb0 parent 1:3" if f.spare_qp1 else "ifb0 root")
    env = dist_setup(f.later)[1]
    return (f"nohup sh -c 'sleep {f.after_s:g}; {env}tc qdisc change dev {dev} handle 30: netem {f.later}' "
            "> /tmp/fault-later.log 2>&1 &")


# netem delay distributions of our own (`distribution NAME` in a fault's netem), written
# into the guest's TC_LIB_DIR before the fault is set. A table holds values in units of
# sigma/8192, drawn uniformly: `delay 1ms 1ms distribution reorder5` gives 0 ms (-1 sigma)
# to 19 packets in 20 and 2 ms (+1 sigma) to the 20th.
# Why not `delay 2ms reorder 95%`: netem puts its "reordered" packets (the 95 % sent at
# once) at the head of its queue, so whenever the guest's NIC backs up they leave last in,
# first out: bursts of 60-110 packets reversed on the wire (2 of 19 lab runs on a quiet
# host), no longer "5 % of packets 2 ms late". A jitter distribution keeps netem's time
# order: packets sent at once stay in order, and only the delayed ones come late.
DIST_TABLES = {"reorder5": [-8192] * 19 + [8192]}
TC_LIB_DIR = "/tmp/tc"


def dist_setup(netem):
    """The commands that write the table a netem argument string names (none if it names
    none of ours), and the prefix its `tc` needs to find it."""
    words = netem.split()
    name = words[words.index("distribution") + 1] if "distribution" in words else None
    if name not in DIST_TABLES:
        return [], ""
    table = " ".join(str(v) for v in DIST_TABLES[name])
    return ([f"mkdir -p {TC_LIB_DIR} && echo '{table}' > {TC_LIB_DIR}/{name}.dist"],
            f"TC_LIB_DIR={TC_LIB_DIR} ")


# the BTH's destination QP is 1 (a CM MAD): u32 offsets count from the IP header, which rxe
# sends without options (20 bytes), then UDP (8), then the BTH, whose bytes 5-7 are the QP
QP1_MATCH = "match u32 0x00000001 0x00ffffff at 32"


def fault_commands(f, dev="eth0"):
    setup, env = dist_setup(f.netem)
    return setup + [c.replace("tc qdisc add", env + "tc qdisc add") if " netem " in c else c
                    for c in tc_commands(f, dev)]


def tc_commands(f, dev):
    if f.where == "egress":
        # prio qdisc: everything to band 2 (pfifo); RoCE v2 (UDP dport 4791) to band 3 = netem.
        # ARP, ICMP and perftest's TCP exchange pass untouched.
        spare = [f"tc filter add dev {dev} parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff "
                 f"match ip dport 4791 0xffff {QP1_MATCH} flowid 1:2"] if f.spare_qp1 else []
        return [f"tc qdisc add dev {dev} root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
                f"tc qdisc add dev {dev} parent 1:3 handle 30: netem {f.netem}", *spare,
                f"tc filter add dev {dev} parent 1: protocol ip prio {2 if spare else 1} u32 match ip protocol 17 0xff "
                f"match ip dport 4791 0xffff flowid 1:3"]
    # ingress -> mirred -> ifb0 -> netem: after the AF_PACKET tap of dev
    # sparing QP1: ifb0 gets the same prio qdisc as an egress fault (the guest has no
    # act_gact for an ingress `action ok`)
    ifb = (["tc qdisc add dev ifb0 root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
            "tc qdisc add dev ifb0 parent 1:3 handle 30: netem " + f.netem,
            f"tc filter add dev ifb0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff "
            f"match ip dport 4791 0xffff {QP1_MATCH} flowid 1:2",
            "tc filter add dev ifb0 parent 1: protocol ip prio 2 u32 match ip protocol 17 0xff "
            "match ip dport 4791 0xffff flowid 1:3"]
           if f.spare_qp1 else ["tc qdisc add dev ifb0 root handle 30: netem " + f.netem])
    return ["ip link set ifb0 up",
            f"tc qdisc add dev {dev} handle ffff: ingress",
            f"tc filter add dev {dev} parent ffff: protocol ip prio 1 u32 match ip protocol 17 0xff "
            f"match ip dport 4791 0xffff action mirred egress redirect dev ifb0", *ifb]


SENT_RE = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)")


def tc_stats(v):
    """`tc -s qdisc` of eth0 and ifb0, parsed: one record per qdisc."""
    rc, raw = v.sh("for d in eth0 ifb0; do echo \"== dev $d\"; tc -s qdisc show dev $d; done; "
                   "echo '== filters eth0 ingress'; tc -s filter show dev eth0 ingress 2>/dev/null; true")
    qd, dev, cur = [], None, None
    for line in raw.splitlines():
        s = line.strip()
        if s.startswith("== dev "):
            dev = s[7:]
        elif s.startswith("== "):
            dev = None
        elif s.startswith("qdisc ") and dev:
            f = s.split()
            cur = {"dev": dev, "kind": f[1], "handle": f[2], "spec": s}
            qd.append(cur)
        elif cur is not None and dev and (m := SENT_RE.search(s)):
            cur.update(sent_bytes=int(m[1]), sent_pkts=int(m[2]), dropped=int(m[3]),
                       overlimits=int(m[4]), requeues=int(m[5]))
            cur = None
    return {"raw": raw, "qdiscs": qd}


# ---- perftest ---------------------------------------------------------------------------------
QP_RE = re.compile(r"(local|remote) address: LID (\w+) QPN (0x[0-9a-fA-F]+) PSN (0x[0-9a-fA-F]+)")


def perftest_qps(out):
    """perftest's 'local address' / 'remote address' lines -> [{local_qpn, local_psn,
    remote_qpn, remote_psn}] in the order printed (one per QP)."""
    loc, rem = [], []
    for m in QP_RE.finditer(out):
        (loc if m[1] == "local" else rem).append((int(m[3], 16), int(m[4], 16)))
    return [{"local_qpn": lq, "local_psn": lp, "remote_qpn": rq, "remote_psn": rp}
            for (lq, lp), (rq, rp) in zip(loc, rem)]


def perftest_lines(out):
    return [ln.strip() for ln in out.splitlines()
            if "local address" in ln or "remote address" in ln or " GID:" in ln]


# ---- rdma res snapshots -------------------------------------------------------------------------
# Every 0.2 s while the traffic runs, the QP tables (plain and -dd) are appended to a file
# when they hold an RC QP; read_snapshot merges them into one table: every RC QP that existed
# at some point of the run, with the values of its last snapshot. (A single "last table"
# misses a QP that lives less than the sampling interval, such as perftest -R's data QP on
# a fast run.)
SNAP_LOOP = (
    "(: > /tmp/qp.jsonl; : > /tmp/qpdd.jsonl; while :; do "
    "rdma res show qp -j > /tmp/qp.tmp 2>&1; "
    "if grep -q '\"RC\"' /tmp/qp.tmp; then cat /tmp/qp.tmp >> /tmp/qp.jsonl; echo >> /tmp/qp.jsonl; "
    "rdma res show qp -dd -j >> /tmp/qpdd.jsonl 2>&1; echo >> /tmp/qpdd.jsonl; fi; "
    "sleep 0.2 2>/dev/null || sleep 1; done) > /dev/null 2>&1 & echo $! > /tmp/snap.pid")

# In the scenarios with `live_table` the loop also reads the table through this tree's
# rocetap (`rocetap qp-table`, RDMA netlink), bracketed by rdma in time: `rdma res show qp -d
# -j` (the "before" table, also the plain snapshot: rdma prints the same QP keys with and
# without -d), `rocetap qp-table`, `rdma res show qp -dd -j` (the "after" table, also the -dd
# snapshot: -d's keys plus the driver's drv_* ones). So rocetap adds one command per sample.
# Up to LIVE_SAMPLES samples are taken back to back (no sleep) while an RC QP exists, so that
# perftest -R's short-lived data QP is read steady at least once; each is written to
# /tmp/live.txt as "#sample T0 T1 T2 T3" (bash's $EPOCHREALTIME before each command and at
# the end), "#before", "#rocetap", "#rc RC", "#after", "#end" blocks. tests/lab/lab_rxe.rs
# compares the QPs the two rdma tables agree on with rocetap's. This loop ends at its next
# turn once /tmp/snap.stop exists.
LIVE_SAMPLES = 40
LIVE_LOOP = (
    "(rm -f /tmp/snap.stop; n=0; : > /tmp/qp.jsonl; : > /tmp/qpdd.jsonl; : > /tmp/live.txt; "
    "while [ ! -e /tmp/snap.stop ]; do "
    "t0=$EPOCHREALTIME; rdma res show qp -d -j > /tmp/qp.tmp 2>&1; "
    "if grep -q '\"RC\"' /tmp/qp.tmp; then cat /tmp/qp.tmp >> /tmp/qp.jsonl; echo >> /tmp/qp.jsonl; "
    f"if [ $n -lt {LIVE_SAMPLES} ]; then n=$((n+1)); "
    f"t1=$EPOCHREALTIME; {ROCETAP} qp-table > /tmp/live.tmp 2>&1; rc=$?; t2=$EPOCHREALTIME; "
    "rdma res show qp -dd -j > /tmp/qpdd.tmp 2>&1; t3=$EPOCHREALTIME; "
    "{ echo \"#sample $t0 $t1 $t2 $t3\"; echo '#before'; cat /tmp/qp.tmp; echo '#rocetap'; cat /tmp/live.tmp; "
    "echo \"#rc $rc\"; echo '#after'; cat /tmp/qpdd.tmp; echo '#end'; } >> /tmp/live.txt; "
    "cat /tmp/qpdd.tmp >> /tmp/qpdd.jsonl; echo >> /tmp/qpdd.jsonl; continue; fi; "
    "rdma res show qp -dd -j >> /tmp/qpdd.jsonl 2>&1; echo >> /tmp/qpdd.jsonl; fi; "
    "sleep 0.2 2>/dev/null || sleep 1; done) > /dev/null 2>&1 & echo $! > /tmp/snap.pid")


def snap_loop(live):
    return LIVE_LOOP if live else SNAP_LOOP


def parse_live(txt):
    """/tmp/live.txt -> [{t, before, rocetap, rocetap_rc, after}]: `t` the four times of the
    sample (s), each table the parsed JSON (or {"unparsed": text} when it is not JSON, such
    as an error message). A sample cut short (no "#end") is left out."""
    out, cur, key, buf = [], None, None, []

    def flush():
        if cur is not None and key is not None:
            t = "\n".join(buf).strip()
            try:
                cur[key] = json.loads(t)
            except ValueError:
                cur[key] = {"unparsed": t[:2000]}
    for line in txt.splitlines():
        if line.startswith("#") and line.split(" ")[0] in ("#sample", "#before", "#rocetap", "#rc", "#after", "#end"):
            flush()
            buf, key = [], None
            word, _, rest = line.partition(" ")
            if word == "#sample":
                try:
                    cur = {"t": [float(x) for x in rest.split()]}
                except ValueError:
                    cur = {"t": rest}
            elif cur is None:
                continue
            elif word in ("#before", "#rocetap", "#after"):
                key = word[1:]
            elif word == "#rc":
                cur["rocetap_rc"] = int(rest) if rest.lstrip("-").isdigit() else rest
            elif word == "#end":
                out.append(cur)
                cur = None
        else:
            buf.append(line)
    return out


def merge_tables(txt):
    """The union of the JSON tables in `txt` (one per line), keyed by (ifname, port, lqpn),
    each QP as its last table showed it; None when no line parses. The port is in the key
    because QP0/QP1 exist once per port; a QP in RESET has no port yet, so a later reading
    of the same (ifname, lqpn) with a port is that QP and replaces it."""
    merged, order, any_parsed = {}, [], False
    for line in txt.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            table = json.loads(line)
        except ValueError:
            continue
        any_parsed = True
        for q in table if isinstance(table, list) else []:
            k = (q.get("ifname"), q.get("port"), q.get("lqpn"))
            portless = (k[0], None, k[2])
            if k[1] is not None and portless in merged:
                del merged[portless]
                order[order.index(portless)] = k
            elif k not in merged:
                order.append(k)
            merged[k] = q
    return [merged[k] for k in order] if any_parsed else None


def read_snapshot(v, live=False):
    """The loop's tables. The live loop was told to stop (/tmp/snap.stop, see main_run) and
    ends at its next turn, so no sample is cut in half; the plain loop is killed at once (a
    table cut short is one line merge_tables skips)."""
    if live:
        v.sh("for i in $(seq 50); do kill -0 $(cat /tmp/snap.pid) 2>/dev/null || break; sleep 0.2; done; "
             "kill $(cat /tmp/snap.pid) 2>/dev/null; true", timeout=30)
    else:
        v.sh("kill $(cat /tmp/snap.pid) 2>/dev/null; true")
    out = {}
    if live:
        rc, txt = v.sh("cat /tmp/live.txt 2>/dev/null", timeout=120)
        out["live"] = parse_live(txt) if rc == 0 else {"error": txt[:2000]}
    for key, path in (("qp", "/tmp/qp.jsonl"), ("qp_dd", "/tmp/qpdd.jsonl")):
        rc, txt = v.sh(f"cat {path} 2>/dev/null")
        if rc != 0 or not txt.strip():
            out[key] = None
            continue
        t = merge_tables(txt)
        out[key] = t if t is not None else {"unparsed": txt[:4000]}
    return out


# ---- the run ---------------------------------------------------------------------------------------
def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in sorted(b) if k != "lifespan"}


def netem_facts(sc, tc, dlt):
    """What netem did, from its own counters: for each fault, the packets offered to it
    (the sending VM's rxe sent_pkts, every one of which is UDP dport 4791 and so classified
    to the netem band; for ifb0 the packets the mirred filter redirected = netem sent +
    dropped), sent, dropped, and the derived duplicates / CE marks."""
    out = []
    for f in sc.faults:
        dev = "eth0" if f.where == "egress" else "ifb0"
        q = next((q for q in tc[f.vm]["qdiscs"] if q["dev"] == dev and q["kind"] == "netem"), None)
        if q is None or "sent_pkts" not in q:
            out.append({"vm": f.vm, "where": f.where, "netem": f.netem, "error": "no netem statistics"})
            continue
        sender = "A" if f.direction() == "A->B" else "B"
        # sparing QP1, netem sees only the RC packets: no offered count, and it copies nothing
        offered = dlt[sender]["sent_pkts"] if f.where == "egress" and not f.spare_qp1 else None
        rec = {"vm": f.vm, "where": f.where, "dev": dev, "netem": f.netem, "direction": f.direction(),
               "relative_to_tap": f.relative_to_tap(), "sent_pkts": q["sent_pkts"], "dropped": q["dropped"],
               "requeues": q["requeues"], "offered_pkts": offered,
               "offered_from": f"{sender} hw_counters sent_pkts delta" if offered is not None else None}
        ecn = " ecn" in f" {f.netem}"
        if offered is not None:
            # netem counts a CE mark as a drop (qdisc_qstats_drop) but sends the packet on:
            # sent = offered - real drops + duplicates
            real_drops = 0 if ecn else q["dropped"]
            rec["duplicates"] = q["sent_pkts"] + real_drops - offered
            rec["lost"] = real_drops
            if ecn:
                rec["ce_marks"] = q["dropped"]
                rec["ce_marks_note"] = ("netem's 'dropped' with ecn counts marked packets (they are sent on): "
                                        "sent_pkts == offered_pkts confirms nothing was really dropped")
        else:
            rec["lost"] = q["dropped"]
            rec["duplicates"] = 0
        out.append(rec)
    return out


def main_run(out_dir, name, iters=None, snaplen=None):
    sc = scenarios.BY_NAME[name]
    snap = sc.snap if snaplen is None else snaplen
    os.makedirs(out_dir, exist_ok=True)
    run_dir = os.environ.get("RXE_RUN_DIR") or os.path.join(vmmod.LAB, "run", f"lab-{os.getpid()}")
    t0 = time.time()

    def on_term(signum, _frame):
        raise SystemExit(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    test = sc.perftest(iters)
    client_timeout = sc.client_timeout or CLIENT_TIMEOUT
    ucma = sc.tool == "ucmatose"
    if ucma:
        # A listens and SENDs first (the requester); B connects to it once it listens
        srv = f"timeout {client_timeout + 10} {sc.peer(iters, vmmod.A_IP)}"
        cli = f"timeout {client_timeout} {test}"
    else:
        srv = f"timeout {SERVER_TIMEOUT} {test}"
        cli = f"timeout {client_timeout} {test} {vmmod.B_IP}"
    count = f"-c {sc.cap_packets} " if sc.cap_packets else ""
    tcpd = f"tcpdump -i eth0 -n -s {snap} -B 16384 {count}-w /tmp/cap.pcap udp port 4791"
    truth = {
        "scenario": name, "description": sc.desc,
        "generator": "Linux Soft-RoCE (rdma_rxe) in Debian's kernel, perftest, two qemu VMs on a qemu socket netdev",
        "lab_command": "lab/rxe/run.sh" + (f" -n {iters}" if iters else "") +
                       (f" -s {snaplen}" if snaplen is not None else "") + f" OUT {name}",
        "accel": vmmod.accel(), "eth_mtu": sc.mtu, "pmtu": sc.pmtu(),
        "vms": {"A": {"ip": vmmod.A_IP, "mac": "52:54:00:18:00:01", "role": "requester (perftest client)"},
                "B": {"ip": vmmod.B_IP, "mac": "52:54:00:18:00:02", "role": "responder (perftest server)"}},
    }
    setup = []
    timing = {}
    a = b = None
    try:
        a, b = vmmod.pair(run_dir, mtu=sc.mtu, rocetap=bool(sc.live_table))
        vms = {"A": a, "B": b}
        for v in (a, b):
            v.wait_ready(300)
        timing["boot_s"] = round(time.time() - t0, 1)
        truth["kernel"] = a.sh("uname -r")[1].strip()
        truth["perftest_version"] = a.sh("ib_write_bw --version 2>&1 | grep -i version")[1].strip()
        truth["qemu"] = {"argv_A": a.cmdline}
        truth["sysfs"] = {n: v.sysfs_facts() for n, v in vms.items()}
        if sc.live_table:
            truth["rocetap_in_vm"] = rocetap_in_vms(vms)
        a.sh(f"ping -c 2 -W 3 {vmmod.B_IP}", timeout=30, check=True)
        b.sh(f"ping -c 1 -W 3 {vmmod.A_IP}", timeout=30, check=True)
        for f in sc.faults:
            for c in fault_commands(f):
                rc, o = vms[f.vm].sh(c, timeout=30)
                setup.append({"vm": f.vm, "cmd": c, "rc": rc, "out": o})
                if rc != 0:
                    raise RuntimeError(f"{f.vm}: {c}: {o}")
        truth["faults"] = [{"vm": f.vm, "where": f.where, "netem": f.netem, "direction": f.direction(),
                            "relative_to_tap": f.relative_to_tap(), "commands": fault_commands(f),
                            **({"later": f.later, "after_s": f.after_s, "later_command": later_command(f)}
                               if f.later else {})}
                           for f in sc.faults]
        a_to_b_before = [f.netem for f in sc.faults if f.direction() == "A->B" and f.where == "egress"]
        b_to_a_before = [f.netem for f in sc.faults if f.direction() == "B->A" and f.where == "egress"]
        truth["tap"] = {
            "vm": sc.tap, "iface": "eth0", "snaplen": snap or 262144, "full_frames": snap == 0,
            "relation": tap_relation(sc),
            "faults_before_tap": [f"{f.vm} {f.where}: {f.describe()}" for f in sc.faults if f.relative_to_tap() == "before"],
            "faults_after_tap": [f"{f.vm} {f.where}: {f.describe()}" for f in sc.faults if f.relative_to_tap() == "after"],
            # the tap sees exactly the packets the sender sent in that direction when nothing
            # touches that direction before the tap
            "sees_all_requester_packets": not a_to_b_before,
            "sees_all_responder_packets": not b_to_a_before,
        }
        before = {n: v.counters() for n, v in vms.items()}
        stat_before = {n: v.sh("rdma statistic show link rxe0/1")[1] for n, v in vms.items()}
        cap = vms[sc.tap]
        # tcpdump says "listening on" once its socket is open
        cap.sh(f"nohup {tcpd} > /tmp/tcpdump.log 2>&1 & echo $! > /tmp/tcpdump.pid; "
               "for i in $(seq 50); do grep -q 'listening on' /tmp/tcpdump.log && break; sleep 0.2; done; "
               "cat /tmp/tcpdump.log")
        for v in (a, b):
            v.sh(snap_loop(bool(sc.live_table)))
        if sc.server and not ucma:
            b.sh(f"nohup {srv} > /tmp/server.log 2>&1 & echo $! > /tmp/server.pid")
        # perftest's server is ready once it listens for the client's TCP exchange (port
        # 18515); with -R (rdma_cm) there is no TCP listener to see, so wait a fixed time
        if ucma:
            pass
        elif " -R" in f" {test}" or not sc.server:
            time.sleep(3)
        else:
            b.sh("for i in $(seq 75); do ss -Hltn 'sport = :18515' | grep -q . && break; sleep 0.2; done")
        t1 = time.time()
        a.sh(f"nohup bash -c '{cli}; echo $? > /tmp/client.rc' > /tmp/client.log 2>&1 & echo $! > /tmp/client.pid")
        for f in sc.faults:
            if f.later:
                vms[f.vm].sh(later_command(f))
        if ucma:
            # ucmatose's listener (port 7471, rdma_cm's TCP port space) is up: B connects
            # (its stdout is a file, so fully buffered: nothing to wait for but time)
            time.sleep(2)
            b.sh(f"nohup {srv} > /tmp/server.log 2>&1 & echo $! > /tmp/server.pid")
        deadline = t1 + client_timeout + 20
        while time.time() < deadline:
            if a.sh("test -f /tmp/client.rc")[0] == 0:
                break
            time.sleep(0.5)
        t_cli = time.time() - t1
        timing["perftest_s"] = round(t_cli, 1)
        rc_cli = a.sh("cat /tmp/client.rc 2>/dev/null || echo -1")[1].strip()
        out_cli = a.sh("cat /tmp/client.log")[1]
        for _ in range(4 if ucma else 60):
            if "done" in b.sh("kill -0 $(cat /tmp/server.pid) 2>/dev/null && echo run || echo done")[1]:
                break
            time.sleep(0.5)
        b.sh("kill $(cat /tmp/server.pid) 2>/dev/null; true")
        out_srv = b.sh("cat /tmp/server.log")[1]
        if sc.live_table:
            for v in (a, b):  # both loops finish their last sample at the same time
                v.sh("touch /tmp/snap.stop")
        snaps = {n: read_snapshot(v, bool(sc.live_table)) for n, v in vms.items()}
        live = {n: snaps[n].pop("live") for n in snaps if "live" in snaps[n]}
        time.sleep(1)
        _, tcpd_log = cap.sh("kill -INT $(cat /tmp/tcpdump.pid); for i in $(seq 50); do "
                             "kill -0 $(cat /tmp/tcpdump.pid) 2>/dev/null || break; sleep 0.2; done; cat /tmp/tcpdump.log")
        after = {n: v.counters() for n, v in vms.items()}
        stat_after = {n: v.sh("rdma statistic show link rxe0/1")[1] for n, v in vms.items()}
        tc = {n: tc_stats(v) for n, v in vms.items()}
        pcap = os.path.join(out_dir, f"{name}.pcap")
        t2 = time.time()
        size = cap.get("/tmp/cap.pcap", pcap)
        timing["fetch_capture_s"] = round(time.time() - t2, 1)
        t3 = time.time()
    finally:
        for v in (a, b):
            if v is not None:
                v.stop()
        vmmod.kill_recorded(run_dir)
        if "fetch_capture_s" in timing:
            timing["poweroff_s"] = round(time.time() - t3, 1)
        try:
            for n in os.listdir(run_dir):
                if n.endswith((".ctl", ".pid")):
                    os.unlink(os.path.join(run_dir, n))
        except OSError:
            pass

    m = re.search(r"(\d+) packets dropped by kernel", tcpd_log)
    dlt = {n: delta(before[n], after[n]) for n in ("A", "B")}
    truth["capture"] = {"file": f"{name}.pcap", "vm": sc.tap, "iface": "eth0", "command": tcpd,
                        "snaplen": snap or 262144, "bytes": size,
                        "tcpdump_stats": [ln for ln in tcpd_log.strip().splitlines() if "packets" in ln],
                        "dropped_by_kernel": int(m[1]) if m else None}
    truth["perftest"] = {
        "server_cmd_on_B": srv, "client_cmd_on_A": cli, "client_rc": int(rc_cli) if rc_cli.lstrip("-").isdigit() else rc_cli,
        "client_wall_s": round(t_cli, 2),
        "client_qp_lines": perftest_lines(out_cli), "server_qp_lines": perftest_lines(out_srv),
        # A's local QPN/PSN = the requester's QP and its first request PSN; remote = B's
        "client_qps": perftest_qps(out_cli), "server_qps": perftest_qps(out_srv),
        "client_output": out_cli, "server_output": out_srv}
    truth["hw_counters_before"] = before
    truth["hw_counters_after"] = after
    truth["hw_counters_delta"] = dlt
    truth["rdma_statistic"] = {n: {"before": stat_before[n], "after": stat_after[n]} for n in ("A", "B")}
    truth["tc"] = tc
    truth["netem"] = netem_facts(sc, tc, dlt)
    truth["rdma_res_qp"] = snaps
    if sc.live_table:
        # the bracketed samples, or why there are none (no rocetap in the VMs)
        truth["qp_table_live"] = dict(live, require_steady_rc=sc.live_table == "steady") \
            if truth["rocetap_in_vm"].get("ok") else {
                "error": truth["rocetap_in_vm"].get("error", "rocetap did not run in the VMs")}
    truth["wire"] = wire.summary(pcap, truth["pmtu"])
    truth["observable"] = observable(sc, truth)
    truth["setup_log"] = setup
    truth["elapsed_s"] = round(time.time() - t0, 1)
    truth["timing"] = timing
    with open(os.path.join(out_dir, f"{name}.truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    o = truth["observable"]
    print(f"{name}: rc {truth['perftest']['client_rc']}, {size} bytes, {truth['elapsed_s']} s; "
          f"A sent {o['requester_sent_pkts']} retries {dlt['A'].get('completer_retry_err', 0)}; "
          f"B NAKs {o['nak_psn_seq']} RNR {o['rnr_nak']}; netem lost {o.get('netem_lost', 0)} "
          f"dup {o.get('duplicate_packets', 0)} CE {o.get('ce_marked', 0)}", flush=True)
    if sc.client_fails is not None and (truth["perftest"]["client_rc"] != 0) != sc.client_fails:
        raise SystemExit(f"{name}: perftest client rc {rc_cli}, expected "
                         f"{'a failure' if sc.client_fails else '0'}")


def rocetap_in_vms(vms):
    """This tree's rocetap (ROCETAP, appended to the initramfs by run.sh) runs in each VM: its
    version, or why not (then tests/lab/lab_rxe.rs fails the QP-table rows of `live_table`
    scenarios, with this reason)."""
    info = {"binary_on_host": os.environ.get("RXE_ROCETAP_BIN")}
    if not os.environ.get("RXE_INITRD"):
        info["error"] = "run.sh had no rocetap binary for the VMs (ROCETAP_BIN, or cargo for a release build)"
        return info
    for n, v in vms.items():
        rc, out = v.sh(f"{ROCETAP} --version", timeout=60)
        info[n] = out.strip()
        if rc != 0:
            info["error"] = f"{n}: rocetap --version rc={rc}: {out.strip()[:500]}"
    info["ok"] = "error" not in info
    return info


def tap_relation(sc):
    if not sc.faults:
        return f"no faults; tap on {sc.tap} eth0"
    parts = []
    for f in sc.faults:
        if f.where == "egress":
            parts.append(f"faults BEFORE the tap: netem on {f.vm}'s egress ({f.netem}, {f.direction()}); "
                         f"the tap on {sc.tap} eth0 sees {f.direction()} after the fault")
        else:
            parts.append(f"faults AFTER the tap: tap on {sc.tap} eth0 (AF_PACKET sees ingress before tc ingress), "
                         f"netem ({f.netem}) on {f.vm}'s ifb0 (ingress redirect)")
    return "; ".join(parts)


def observable(sc, t):
    """The kernel's numbers an analyzer at this tap must reproduce, named after rocetap's
    totals, with where each comes from. Only the equalities that hold at this tap are given."""
    dA, dB = t["hw_counters_delta"]["A"], t["hw_counters_delta"]["B"]
    tap = t["tap"]
    w = t["wire"].get(f"{vmmod.A_IP}->{vmmod.B_IP}", {})
    o = {
        "nak_psn_seq": dB.get("out_of_seq_request", 0),
        "rnr_nak": dB.get("send_rnr_err", 0),
        "retransmission_episodes": dA.get("completer_retry_err", 0),
        "requester_rcvd_rnr_err": dA.get("rcvd_rnr_err", 0),
        "requester_rcvd_seq_err": dA.get("rcvd_seq_err", 0),
        "responder_duplicate_request": dB.get("duplicate_request", 0),
        "requester_sent_pkts": dA.get("sent_pkts", 0),
        "responder_sent_pkts": dB.get("sent_pkts", 0),
        "request_distinct_psns_at_tap": w.get("distinct_request_psns"),
        "capture_dropped_by_kernel": t["capture"]["dropped_by_kernel"],
    }
    if not any(n.get("lost") for n in t["netem"] if n.get("direction") == "A->B" and n.get("relative_to_tap") == "before"):
        # A's sent_pkts also counts its ACKs (responder side of perftest's rdma_cm control
        # QP) and its CM MADs on QP1
        o["requester_resent_packets"] = (dA.get("sent_pkts", 0) - w.get("request_first_transmissions", 0)
                                         - w.get("responses", 0) - w.get("qp1_mads", 0))
    for n in t["netem"]:
        if n.get("duplicates"):
            o["duplicate_packets"] = o.get("duplicate_packets", 0) + n["duplicates"]
        if "ce_marks" in n:
            o["ce_marked"] = n["ce_marks"]
        o.setdefault("netem_lost", 0)
        o["netem_lost"] += n.get("lost", 0)
    o["wire_ce_marked"] = sum(d["ce_marked"] for d in t["wire"].values())
    o["note"] = ("nak_psn_seq = B out_of_seq_request, rnr_nak = B send_rnr_err, retransmission_episodes = "
                 "A completer_retry_err; requester_resent_packets = A sent_pkts - first transmissions at the tap "
                 "- A's ACKs - QP1 MADs (only where nothing A sent is lost before the tap); duplicate_packets / ce_marked from netem's counters")
    return o


def main(argv):
    if argv[1:2] == ["list-switch"]:
        for s in scenarios.SWITCH_SCENARIOS:
            print(f"{s.name:16s} {s.desc}")
        return 0
    if len(argv) < 2 or argv[1] in ("list", "list-ci"):
        for s in scenarios.SCENARIOS:
            if argv[1:2] == ["list-ci"] and s.extended:
                continue
            print(f"{s.name:16s} {s.desc}")
        return 0
    if argv[1] != "run" or len(argv) < 4 or (argv[3] not in scenarios.BY_NAME
                                              and argv[3] not in scenarios.SWITCH_BY_NAME):
        print(__doc__, file=sys.stderr)
        return 2
    out, name, rest = argv[2], argv[3], argv[4:]
    iters = snaplen = None
    while rest:
        if rest[0] == "--iters" and len(rest) > 1:
            iters, rest = int(rest[1]), rest[2:]
        elif rest[0] == "--snaplen" and len(rest) > 1:
            snaplen, rest = int(rest[1]), rest[2:]
        else:
            print(f"unknown argument {rest[0]}", file=sys.stderr)
            return 2
    if name in scenarios.SWITCH_BY_NAME:
        import switch  # the three-VM lab (A — S — B)
        switch.main_run(out, name, iters, snaplen)
        return 0
    main_run(out, name, iters, snaplen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
