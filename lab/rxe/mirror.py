#!/usr/bin/env python3
"""The Linux kernel as a switch-mirror exporter: one lab VM, three network namespaces.

usage: lab/rxe/mirror.py OUTDIR [SAMPLE...]     (default samples: clean-rc loss-upstream many-qp)

    snd: s0 ──veth── s1 :exp (tc ingress matchall → mirred egress mirror dev TUNNEL)
                      TUNNEL over u0 (198.51.100.1, 2001:db8::1) ──veth── u1 (…2) :col

In the guest (Debian's kernel, the lab's initramfs) tcpreplay replays each sample into s0;
the exporter namespace mirrors every frame s1 receives into one tunnel at a time — erspan
type II (`erspan_ver 1`) and type III (`erspan_ver 2`), ip6erspan, gretap (key, sequence,
checksum), vxlan and geneve — to the collector namespace, where `rocetap capture -i u1`
(its default filter) and tcpdump record it. Writes OUTDIR/SAMPLE.EXPORTER.pcap (rocetap's),
OUTDIR/SAMPLE.EXPORTER.tcpdump.pcap and OUTDIR/mirror.json (kernel, commands, counts).
rocetap is ROCETAP_BIN (default: this tree's target/debug/rocetap), appended to a copy of
build.sh's initramfs with the samples. Needs root and the lab (build.sh). No RDMA is used.
"""
import base64
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import vm  # noqa: E402

REPO = os.path.abspath(os.path.join(here, "..", ".."))
DEFAULT_SAMPLES = ["clean-rc", "loss-upstream", "many-qp"]
PPS = int(os.environ.get("RXE_MIRROR_PPS", "1000"))

# name -> the `ip link add` arguments of the exporter (in namespace exp), device name
V4 = "local 198.51.100.1 remote 198.51.100.2"
V6 = "local 2001:db8::1 remote 2001:db8::2"
EXPORTERS = [
    ("erspan2", "er2", f"type erspan seq key 100 {V4} erspan_ver 1 erspan 123"),
    ("erspan3", "er3", f"type erspan seq key 101 {V4} erspan_ver 2 erspan_dir egress erspan_hwid 7"),
    ("ip6erspan", "e6", f"type ip6erspan seq key 102 {V6} erspan_ver 2 erspan_dir ingress erspan_hwid 9"),
    ("gretap", "gt", f"type gretap seq csum key 42 {V4}"),
    ("vxlan", "vx", "type vxlan id 4242 local 198.51.100.1 remote 198.51.100.2 dstport 4789 dev u0"),
    ("geneve", "gn", "type geneve id 77 remote 198.51.100.2"),
]

SETUP = r"""
set -e
for m in veth ip_gre ip6_gre vxlan geneve act_mirred cls_matchall sch_ingress; do modprobe $m; done
for n in snd exp col; do ip netns add $n; done
ip link add s0 netns snd type veth peer name s1 netns exp
ip link add u0 netns exp address 02:00:00:00:00:01 type veth peer name u1 netns col address 02:00:00:00:00:02
for x in "snd s0" "exp s1"; do set -- $x
  ip netns exec $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
  ip -n $1 link set $2 mtu 9200 up
done
ip netns exec col sysctl -qw net.ipv6.conf.u1.accept_ra=0
ip -n exp addr add 198.51.100.1/24 dev u0; ip -n exp addr add 2001:db8::1/64 dev u0 nodad
ip -n col addr add 198.51.100.2/24 dev u1; ip -n col addr add 2001:db8::2/64 dev u1 nodad
ip -n exp link set u0 mtu 9200 up; ip -n col link set u1 mtu 9200 up
ip -n exp link set lo up; ip -n col link set lo up
# no transmit checksum offload: veth would hand the collector a GRE checksum left to
# "the hardware" (0x0000 on the wire, which tshark calls bad)
ip netns exec exp ethtool -K u0 tx off >/dev/null
# static neighbours: no ARP / ND in the mirror stream
ip -n exp neigh add 198.51.100.2 lladdr 02:00:00:00:00:02 dev u0 nud permanent
ip -n exp neigh add 2001:db8::2 lladdr 02:00:00:00:00:02 dev u0 nud permanent
ip -n col neigh add 198.51.100.1 lladdr 02:00:00:00:00:01 dev u1 nud permanent
sleep 1
uname -r; tcpreplay --version 2>&1 | head -1; tcpdump --version 2>&1 | head -1; ip -V; /usr/local/bin/rocetap --version
"""

# one exporter and one sample: $1 exporter device, $2 its `ip link add` arguments, $3 tag,
# $4 sample, $5 frames
RUN = r"""
dev=$1 args=$2 tag=$3 s=$4 n=$5 pps=$6
o=/tmp/out/$s.$tag
ip -n exp link add $dev $args
# no IPv6 on the tunnel: its own MLD reports would join the mirror stream
ip netns exec exp sysctl -qw net.ipv6.conf.$dev.disable_ipv6=1
ip -n exp link set $dev mtu 9000 up
tc -n exp qdisc add dev s1 ingress
tc -n exp filter add dev s1 parent ffff: protocol all matchall action mirred egress mirror dev $dev
ip netns exec col /usr/local/bin/rocetap capture -i u1 -w $o.pcap -c $n > $o.rocetap.log 2>&1 &
rp=$!
# (ip6erspan's GRE follows a destination options header, so not `ip6 proto 47`; no
# multicast: u1's own MLD reports, ICMPv6 behind a hop-by-hop header, are not `icmp6`)
ip netns exec col tcpdump -i u1 -s 0 -w $o.tcpdump.pcap -c $n \
  'ip proto 47 or (ip6 and not ip6 multicast and not icmp6) or udp dst port 4789 or udp dst port 6081' > $o.tcpdump.log 2>&1 &
tp=$!
for i in $(seq 600); do
  grep -q 'capturing on' $o.rocetap.log && grep -q 'listening on' $o.tcpdump.log && break; sleep 0.1
done
ip netns exec snd tcpreplay -q --pps=$pps -i s0 /root/samples/$s.pcap > $o.tcpreplay.log 2>&1
for i in $(seq 300); do kill -0 $rp 2>/dev/null || kill -0 $tp 2>/dev/null || break; sleep 0.1; done
kill -INT $rp $tp 2>/dev/null; wait $rp; echo "rocetap_rc $?"; wait $tp; echo "tcpdump_rc $?"
tc -n exp -s filter show dev s1 parent ffff: | grep -E 'Sent|mirror' | tr -s ' ' | head -3
tc -n exp qdisc del dev s1 ingress
ip -n exp -s link show $dev | sed -n '3,6p' | tr -s ' '
ip -n exp link del $dev
"""


def pcap_records(path):
    """Records of a classic pcap (either byte order), or None if its frames are not
    Ethernet (tcpreplay replays Ethernet only: sbr-arp.pcap is Linux cooked v2)."""
    with open(path, "rb") as f:
        b = f.read()
    e = "<" if b[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    if struct.unpack(e + "I", b[20:24])[0] != 1:
        return None
    n, off = 0, 24
    while off + 16 <= len(b):
        cap = struct.unpack(e + "I", b[off + 8:off + 12])[0]
        off += 16 + cap
        n += 1
    return n


def overlay(samples, out_img):
    """build.sh's initramfs + a cpio of usr/local/bin/rocetap and root/samples/*.pcap."""
    binp = os.environ.get("ROCETAP_BIN") or os.path.join(REPO, "target/debug/rocetap")
    if not os.access(binp, os.X_OK):
        raise SystemExit(f"no rocetap binary at {binp} (cargo build, or set ROCETAP_BIN)")
    d = tempfile.mkdtemp(dir=os.path.dirname(out_img))
    try:
        os.makedirs(f"{d}/usr/local/bin")
        os.makedirs(f"{d}/root/samples")
        if subprocess.call(["strip", "-o", f"{d}/usr/local/bin/rocetap", binp]) != 0:
            shutil.copy(binp, f"{d}/usr/local/bin/rocetap")
        os.chmod(f"{d}/usr/local/bin/rocetap", 0o755)
        for s in samples:
            shutil.copy(os.path.join(REPO, "samples", f"{s}.pcap"), f"{d}/root/samples/")
        for p in ("usr", "usr/local", "usr/local/bin", "root", "root/samples"):
            os.chmod(f"{d}/{p}", 0o755)
        cpio = subprocess.run("find usr root -print | cpio -o -H newc -R 0:0 --quiet",
                              shell=True, cwd=d, check=True, stdout=subprocess.PIPE).stdout
        with open(out_img, "wb") as f:
            with open(os.path.join(vm.LAB, "rocetap-initrd.img"), "rb") as base:
                shutil.copyfileobj(base, f)
            f.write(cpio)
    finally:
        shutil.rmtree(d)
    return binp


def _stop(sig, _frame):
    """SIGTERM / SIGHUP (timeout(1), the test's budget): unwind, so the VM is stopped."""
    raise SystemExit(128 + sig)


def main():
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    out = os.path.abspath(sys.argv[1])
    samples = sys.argv[2:] or DEFAULT_SAMPLES
    os.makedirs(out, exist_ok=True)
    run_dir = os.environ.get("RXE_RUN_DIR") or os.path.join(vm.LAB, "run", f"mirror-{os.getpid()}")
    os.makedirs(run_dir, exist_ok=True)
    img = os.path.join(run_dir, "initrd.img")
    t0 = time.time()
    # idempotent (about 1 s when everything is built); tcpreplay and the tunnel modules
    subprocess.run(["bash", os.path.join(here, "build.sh")], check=True, stdout=sys.stderr)
    binp = overlay(samples, img)
    os.environ["RXE_INITRD"] = img
    frames = {s: pcap_records(os.path.join(REPO, "samples", f"{s}.pcap")) for s in samples}
    skipped = {s: "not Ethernet (tcpreplay cannot replay it)" for s, n in frames.items() if n is None}
    samples = [s for s in samples if s not in skipped]
    frames = {s: frames[s] for s in samples}
    truth = {"samples": frames, "skipped": skipped, "pps": PPS, "rocetap_bin": binp, "exporters": {},
             "runs": []}
    for s, why in skipped.items():
        print(f"{s}: skipped, {why}", flush=True)
    g = None
    try:
        g = vm.VM("M", "198.18.0.9", "52:54:00:18:00:09", 1500,
                  f"socket,id=n0,listen=127.0.0.1:{vm.free_port()}", run_dir, mem=1024, rocetap=True)
        g.wait_ready(timeout=240)
        truth["boot_s"] = round(time.time() - t0, 1)
        rc, o = g.sh(SETUP, timeout=120)
        truth["setup"] = o
        if rc != 0:
            raise RuntimeError(f"setup failed rc={rc}:\n{o}")
        g.sh("mkdir -p /tmp/out", check=True)
        for tag, dev, args in EXPORTERS:
            truth["exporters"][tag] = f"ip link add {dev} {args}"
            for s in samples:
                t = time.time()
                cmd = f"bash -s {dev} {vm.shquote(args)} {tag} {s} {frames[s]} {PPS} <<'EOF'\n{RUN}\nEOF"
                rc, o = g.sh(cmd, timeout=150)
                logs = {}
                for k in ("rocetap", "tcpdump", "tcpreplay"):
                    _, logs[k] = g.sh(f"cat /tmp/out/{s}.{tag}.{k}.log")
                truth["runs"].append({"exporter": tag, "sample": s, "frames": frames[s], "rc": rc,
                                      "output": o, "logs": logs, "seconds": round(time.time() - t, 1)})
                print(f"{tag:9} {s:14} {time.time() - t:5.1f} s rc={rc}", flush=True)
        _, tgz = g.sh("cd /tmp/out && tar czf - *.pcap | base64 -w0", timeout=300)
        subprocess.run(["tar", "xzf", "-", "-C", out], input=base64.b64decode(tgz), check=True)
    finally:
        if g:
            g.stop()
        vm.kill_recorded(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    truth["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out, "mirror.json"), "w") as f:
        json.dump(truth, f, indent=1)
    print(f"mirror: {len(truth['runs'])} runs in {truth['seconds']} s -> {out}")
    return 0 if all(r["rc"] == 0 for r in truth["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
