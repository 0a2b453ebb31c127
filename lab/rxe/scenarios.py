"""The rxe lab's scenarios: one perftest run between VM A (198.18.0.1, requester = perftest
client) and VM B (198.18.0.2, responder = perftest server), with netem faults on RoCE v2
(UDP dport 4791) only, and a tcpdump tap on one VM's eth0.

Where a fault sits relative to the tap follows from where it is installed (see README.md):
  egress  = prio qdisc on the VM's eth0, RoCE to a netem band: BEFORE the wire, so before
            every tap (the sending VM's AF_PACKET tap sees egress packets after the qdisc);
  ingress = eth0 ingress -> mirred -> ifb0 with netem: AFTER every tap (the receiving VM's
            AF_PACKET tap sees ingress packets before tc ingress).
"""
from dataclasses import dataclass, field


@dataclass
class Fault:
    vm: str          # "A" or "B"
    where: str       # "egress" or "ingress"
    netem: str       # netem arguments, e.g. "loss 2%"
    later: str = ""  # netem arguments the fault changes to `after_s` s after perftest's client starts
    after_s: float = 0.0
    # RC only: CM MADs (BTH destination QP 1) pass untouched, so a connection set up and torn
    # down through rdma_cm shows its DREQ/DREP even when the fault kills every RC packet
    spare_qp1: bool = False
    # on the switch VM S (three-VM lab): the bridge port toward "A" or "B" (its egress)
    toward: str = ""

    def direction(self):
        """The traffic direction it touches: egress of A / ingress of B touch A->B."""
        if self.vm == "S":
            return "A->B" if self.toward == "B" else "B->A"
        if (self.vm, self.where) in (("A", "egress"), ("B", "ingress")):
            return "A->B"
        return "B->A"

    def relative_to_tap(self):
        if self.vm == "S":
            return "between"
        return "before" if self.where == "egress" else "after"

    def describe(self):
        return (self.netem + (f", then {self.later} {self.after_s:g} s after the client starts" if self.later else "")
                + (" (RC only: QP1 MADs pass)" if self.spare_qp1 else ""))


@dataclass
class Scenario:
    name: str
    desc: str
    tool: str                 # ib_write_bw, ib_read_bw, ib_send_bw
    iters: int                # perftest -n (per QP)
    size: int = 4096          # perftest -s (0: none, as ib_atomic_bw's fixed 8 bytes)
    flags: str = ""           # more perftest flags, both sides
    snap: int = 256           # tcpdump -s (0 = full frames)
    tap: str = "B"            # the VM whose eth0 is captured
    mtu: int = 1500           # eth MTU; rxe's RoCE path MTU is the largest IB MTU below it
    faults: list = field(default_factory=list)
    cap_packets: int = 0      # tcpdump -c (0: no limit): bounds a capture that could fill the VM's RAM
    client_timeout: int = 0   # s the perftest client may run (0: lab.py's CLIENT_TIMEOUT)
    # run by `run.sh OUT all` and by hand, not by CI's `run.sh OUT ci` (minutes each under
    # TCG; their stories are held by committed samples or by the shorter scenarios)
    extended: bool = False
    server: bool = True       # start perftest's server on B (False: nobody listens)
    client_fails: bool = False  # the client is expected to fail (exit non-zero); None: either
    # compare `rocetap qp-table` (RDMA netlink) with `rdma res show qp` in both VMs while the
    # QPs exist: "steady" where perftest's QP lives for several samples (an RC QP must be
    # compared in full), "any" where they live about as long as one sample under TCG
    live_table: str = ""

    def perftest(self, iters=None):
        """The command on A (the requester). For ucmatose that is its passive side, which
        listens and then SENDs first (cmatose.c's run_server); `peer()` connects from B."""
        n = self.iters if iters is None else iters
        if self.tool == "ucmatose":
            return f"ucmatose -C {n} -S {self.size} {self.flags}".strip()
        size = f"-s {self.size}" if self.size else ""
        return " ".join(x for x in (self.tool, f"-n {n}", size, self.flags) if x)

    def peer(self, iters=None, server_ip="198.18.0.1"):
        """ucmatose's active side on B: connects to A, receives A's SENDs, then replies."""
        n = self.iters if iters is None else iters
        return f"ucmatose -s {server_ip} -C {n} -S {self.size} {self.flags}".strip()

    def pmtu(self):
        return max(m for m in (256, 512, 1024, 2048, 4096) if m + 100 <= self.mtu)


def egress(vm, netem, later="", after_s=0.0, spare_qp1=False):
    return Fault(vm, "egress", netem, later, after_s, spare_qp1)


def ingress(vm, netem, later="", after_s=0.0, spare_qp1=False):
    return Fault(vm, "ingress", netem, later, after_s, spare_qp1)


SCENARIOS = [
    Scenario("clean-write", "no faults; RDMA WRITEs, full frames (ICRC checkable)",
             "ib_write_bw", 300, snap=0),
    Scenario("clean-read", "no faults; RDMA READs", "ib_read_bw", 500),
    Scenario("clean-send", "no faults; SENDs", "ib_send_bw", 500),
    Scenario("loss-upstream", "2% loss of the requester's RoCE on its egress (before the wire); tap on the responder",
             "ib_write_bw", 600, faults=[egress("A", "loss 2%")]),
    Scenario("loss-downstream", "2% loss on the responder's ingress (ifb0), AFTER the responder's tap: "
             "the tap sees every packet A sent",
             "ib_write_bw", 600, faults=[ingress("B", "loss 2%")]),
    Scenario("ack-loss", "10% loss of the responder's RoCE egress (its ACKs), before the wire; tap on the requester; "
             "tx-depth 1, so a lost ACK is recovered only by the requester's retransmit timer",
             "ib_write_bw", 200, flags="-t 1", tap="A", faults=[egress("B", "loss 10%")],
             live_table="steady"),
    Scenario("read-loss", "2% loss of the responder's RoCE egress (READ responses and ACKs); tap on the requester",
             "ib_read_bw", 600, tap="A", faults=[egress("B", "loss 2%")]),
    Scenario("read-loss-full", "as read-loss, full frames (ICRC checkable; snaplen-independence check)",
             "ib_read_bw", 200, snap=0, tap="A", faults=[egress("B", "loss 2%")]),
    Scenario("rnr", "no faults; the responder's receive queue holds 1 WQE (-r 1), so SENDs meet RNR NAKs",
             "ib_send_bw", 150, flags="-r 1"),
    Scenario("reorder", "reordering on the requester's egress: netem delays 5% of RoCE packets by 2 ms and sends the "
             "rest at once, in order (a delay distribution of two values, see lab.DIST_TABLES); tap on the "
             "responder", "ib_write_bw", 400, faults=[egress("A", "delay 1ms 1ms distribution reorder5")]),
    Scenario("duplicate", "netem duplicates 3% of the requester's RoCE packets; tap on the responder",
             "ib_write_bw", 600, faults=[egress("A", "duplicate 3%")]),
    Scenario("ecn", "traffic class 2 (ECT(0)); netem marks 3% CE (instead of dropping) on the requester's egress; "
             "tap on the responder; rxe has no DCQCN, so no CNPs are expected",
             "ib_write_bw", 600, flags="--tclass=2", faults=[egress("A", "loss 3% ecn")]),
    Scenario("jumbo-loss", "eth MTU 4200 (RoCE path MTU 4096), 64 KiB WRITEs, 1% loss on the requester's egress; "
             "tap on the responder",
             "ib_write_bw", 200, size=65536, mtu=4200, faults=[egress("A", "loss 1%")]),
    Scenario("multi-qp", "4 QPs (-q 4), 2% loss on the responder's ingress AFTER its tap, so every QP retries",
             "ib_write_bw", 200, flags="-q 4", faults=[ingress("B", "loss 2%")]),
    Scenario("rdma-cm", "connection setup through rdma_cm (-R): CM MADs (UD to QP1) on the wire, full frames",
             "ib_write_bw", 1000, flags="-R", snap=0, live_table="any"),
    Scenario("rdma-cm-no-server", "rdma_cm (-R) client with no server listening on B: the CM's REQ meets no "
             "listener (a REJ, or REQ retries); the client fails; full frames",
             "ib_write_bw", 10, flags="-R", snap=0, server=False, client_fails=True),
    # issue 38: faults whose story (cause and place) the analyzer must tell, not just count
    Scenario("rnr-loss", "receive queue of 1 WQE (-r 1) and 1% loss of the requester's RoCE on its egress "
             "(before the tap); tap on the responder: RNR NAKs, their follow-up sequence NAKs and real loss together",
             "ib_send_bw", 150, flags="-r 1", faults=[egress("A", "loss 1%")]),
    Scenario("loss-upstream-send", "SENDs, 2% loss of the requester's RoCE on its egress (before the tap); tap on "
             "the responder", "ib_send_bw", 600, faults=[egress("A", "loss 2%")]),
    Scenario("loss-downstream-send", "SENDs, 2% loss on the responder's ingress (ifb0), AFTER its tap",
             "ib_send_bw", 600, faults=[ingress("B", "loss 2%")]),
    Scenario("loss-upstream-atomic", "atomics (ib_atomic_bw, fetch-and-add), 2% loss of the requester's RoCE on its "
             "egress (before the tap); tap on the responder",
             "ib_atomic_bw", 2000, size=0, faults=[egress("A", "loss 2%")]),
    Scenario("loss-downstream-atomic", "atomics, 2% loss on the responder's ingress (ifb0), AFTER its tap",
             "ib_atomic_bw", 2000, size=0, faults=[ingress("B", "loss 2%")]),
    Scenario("read-overload", "8 QPs of 64 KiB READs (-q 8), no faults: the responder cannot keep up; tap on the "
             "requester", "ib_read_bw", 40, size=65536, flags="-q 8", tap="A", extended=True),
    Scenario("ud-loss", "UD SENDs of 1 KiB (-c UD), 2% loss of the requester's RoCE on its egress (before the "
             "tap); tap on the responder: UD has no retries, the sender's PSN jumps once per lost datagram",
             "ib_send_bw", 600, size=1024, flags="-c UD", faults=[egress("A", "loss 2%")], extended=True),
    Scenario("bidir", "bidirectional WRITEs (-b: both sides are requesters), 2% loss of A's RoCE on its egress "
             "(before the tap); tap on B", "ib_write_bw", 300, flags="-b", faults=[egress("A", "loss 2%")],
             # perftest -b's client exited 1 in 1 of 2 runs with every count still equal
             extended=True),
    Scenario("dead-ack", "every ACK lost: 100% loss of the responder's RoCE egress (before the wire); tap on the "
             "requester: A retries by its timer until it gives up (retry_exceeded_err); the client fails",
             "ib_write_bw", 100, tap="A", faults=[egress("B", "loss 100%")], client_fails=True,
             cap_packets=200000, extended=True),
    Scenario("dead-link-midrun", "the link dies mid-run after the responder's tap: its RoCE ingress (ifb0) goes "
             "from 0% to 100% loss 4 s after the client starts; tap on the responder, which sees A's retries of the "
             "same PSN until A gives up (retry_exceeded_err); the client fails",
             "ib_write_bw", 20000, faults=[ingress("B", "loss 0%", later="loss 100%", after_s=4.0)],
             client_fails=True, cap_packets=200000, client_timeout=45),
    Scenario("dead-link-upstream", "the link dies mid-run before the responder's tap: the requester's RoCE egress "
             "goes from 0% to 100% loss 4 s after the client starts; tap on the responder, which sees the traffic "
             "stop and never resume (no retries reach it) while A gives up; the client fails",
             "ib_write_bw", 20000, faults=[egress("A", "loss 0%", later="loss 100%", after_s=4.0)],
             client_fails=True, cap_packets=200000, client_timeout=45,
             # where the stream stops between messages, all acknowledged, one tap cannot tell
             # a dead link from a finished job: the story check reads the wire's last request
             # (mid-message: a stall; between messages: no claim). Both seen (of 3 runs, the
             # last stopped after an acknowledged WRITE Last). Extended for its 90-111 s.
             extended=True),
    # A requester that gives up. perftest sets retry_cnt 7, which rxe treats as "retry
    # forever"; librdmacm's ucmatose connects with retry_count 5 (cmatose.c), so rxe's
    # completer gives up after 5 timer retries (retry_exceeded_err) and flushes the QP.
    # ucmatose's passive side SENDs first, so it runs on A (the requester) and B connects
    # to it; -a 16 is the ACK timeout (4.096 us * 2^16 = 268 ms per retry). The faults drop
    # RC packets only: the CM's MADs (QP1) pass, so the DREQ A sends after giving up shows.
    # bookworm's ucmatose does not check completion statuses: it exits 0 once A's DREQ is
    # answered or timed out, or is killed by its timeout; either is fine (client_fails None).
    Scenario("dead-rc-after-tap", "ucmatose (retry_count 5): the RC traffic dies 5 s after A starts listening, "
             "after the responder's tap (B ingress, RC only; CM MADs pass): the tap sees A's 5 retries of the "
             "same PSNs, then A gives up (retry_exceeded_err) and sends a DREQ B's busy application never answers",
             "ucmatose", 10000, size=4096, flags="-a 16",
             faults=[ingress("B", "loss 0%", later="loss 100%", after_s=5.0, spare_qp1=True)],
             client_fails=None, cap_packets=200000, client_timeout=25,
             # 88-106 s under load; CI runs dead-rc-at-once (54 s) for the same story
             extended=True),
    Scenario("dead-rc-before-tap", "as dead-rc-after-tap, but the RC traffic dies before the responder's tap "
             "(A egress, RC only): the tap sees A's SENDs stop mid-message and never resume, then A's DREQ",
             "ucmatose", 10000, size=4096, flags="-a 16",
             faults=[egress("A", "loss 0%", later="loss 100%", after_s=5.0, spare_qp1=True)],
             client_fails=None, cap_packets=200000, client_timeout=25, extended=True),
    Scenario("dead-rc-at-once", "ucmatose, every RC packet A sends lost after the responder's tap from the start "
             "(B ingress, RC only; CM MADs pass): the connection is set up, A's first SENDs are retried 5 times "
             "and A gives up; small (the sample rxe-retry-exhausted)",
             "ucmatose", 20, size=1024, flags="-a 14",
             faults=[ingress("B", "loss 100%", spare_qp1=True)],
             client_fails=None, client_timeout=20),
    Scenario("dead-rc-two-qps", "as dead-rc-at-once with two connections (-c 2): both requester QPs give up "
             "(retry_exceeded_err 2), so retry_exhausted must count two",
             "ucmatose", 20, size=1024, flags="-a 14 -c 2",
             faults=[ingress("B", "loss 100%", spare_qp1=True)],
             client_fails=None, client_timeout=20, extended=True),
]

BY_NAME = {s.name: s for s in SCENARIOS}


# ---- the three-VM lab: A — S — B, S a Linux bridge, taps at A and B at once ----------------
# S's two NICs: eth0 toward A, eth1 toward B (vm.triple). A fault "on S" is netem on the
# egress of the bridge port toward the receiver: between the two taps. Faults before A's tap
# (A egress) and after B's tap (B ingress, ifb0) are the two-VM lab's. Runs: lab.py's
# run_switch (lab/rxe/switch.py); not in `list`/`list-ci` (tests/lab/lab_taps.rs runs them).
def at_switch(toward, netem):
    """netem on S's bridge port toward `toward` ("A" or "B"): between the taps."""
    return Fault("S", "egress", netem, toward=toward)


SWITCH_SCENARIOS = [
    Scenario("switch-write-before", "WRITEs on 2 QPs, 2% loss on A's egress: before A's tap (and so before B's)",
             "ib_write_bw", 150, flags="-q 2", snap=128, tap="A+B", faults=[egress("A", "loss 2%")]),
    Scenario("switch-write-s", "WRITEs on 2 QPs, the switch drops 2% on its port toward B: between the taps",
             "ib_write_bw", 150, flags="-q 2", snap=128, tap="A+B", faults=[at_switch("B", "loss 2%")]),
    # After the last tap only the losses the receiver would otherwise have taken show (a
    # packet dropped while it discards out-of-sequence ones after an earlier loss leaves
    # no trace): one packet in flight per QP (-t 1, 1 KiB = one packet), so each drop is
    # seen as the sender's timer resend of a PSN both taps saw.
    Scenario("switch-write-after", "1 KiB WRITEs, one in flight per QP (-t 1), 2 QPs, 3% loss on B's ingress "
             "(ifb0): after B's tap, each drop resent by A's timer",
             "ib_write_bw", 150, size=1024, flags="-q 2 -t 1", snap=128, tap="A+B",
             faults=[ingress("B", "loss 3%")]),
    Scenario("switch-read-s", "READs on 2 QPs, the switch drops 2% on its port toward A (READ responses): "
             "between the taps", "ib_read_bw", 150, flags="-q 2", snap=128, tap="A+B",
             faults=[at_switch("A", "loss 2%")]),
    Scenario("switch-read-before", "READs on 4 QPs, 2% loss on A's egress (READ requests): before A's tap",
             "ib_read_bw", 100, flags="-q 4", snap=128, tap="A+B", faults=[egress("A", "loss 2%")]),
    Scenario("switch-read-after", "1 KiB READs, one in flight per QP (-t 1), 4 QPs, 3% loss on B's ingress "
             "(READ requests): after B's tap, each drop asked again by A's timer",
             "ib_read_bw", 100, size=1024, flags="-q 4 -t 1", snap=128, tap="A+B", faults=[ingress("B", "loss 3%")]),
    Scenario("switch-ecn", "WRITEs on 2 QPs, traffic class 2 (ECT(0)); the switch marks 5% CE on its port toward "
             "B, like a congested switch: CE seen at B, not at A", "ib_write_bw", 150, flags="-q 2 --tclass=2",
             snap=128, tap="A+B", faults=[at_switch("B", "loss 5% ecn")]),
    # The guests' timestamps under TCG wander by milliseconds (a vCPU waits for a host
    # core), so the jitter is large: uniform 50-150 ms, 50 ms median above the minimum. One
    # packet in flight per QP: netem's reordering reorders no QP's packets. -u 20 (a 4 s
    # retransmit timeout): rxe's timer, armed once for a stream of single packets, fires
    # early under 100 ms round trips and would resend packets that were never lost.
    # 240 messages a QP: the median of n draws from a 100 ms uniform spread wanders by
    # 50/sqrt(n) ms (one sigma), and rocetap reports the larger of the two QPs' medians;
    # with 60 (6.5 ms) runs measured 40-65 ms, with 240 (3.2 ms) the 25 % the test allows
    # is 3.9 sigma.
    Scenario("switch-jitter", "1 KiB WRITEs, one in flight per QP (-t 1, -u 20), 2 QPs; the switch delays its port "
             "toward B by 100 ms +- 50 ms (uniform): queueing between the taps, median 50 ms above the minimum",
             "ib_write_bw", 240, size=1024, flags="-q 2 -t 1 -u 20", snap=128, tap="A+B",
             faults=[at_switch("B", "delay 100ms 50ms")]),
]

SWITCH_BY_NAME = {s.name: s for s in SWITCH_SCENARIOS}
