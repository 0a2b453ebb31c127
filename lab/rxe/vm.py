"""Boot and drive the rxe lab VMs (qemu under TCG) over a virtio-serial control port.

Every qemu process this module starts has its PID written to RUN_DIR/NAME.pid before
anything else can fail; stop() and kill_recorded() end exactly those processes.
"""
import base64
import os
import signal
import socket
import subprocess
import time

LAB = os.environ.get("RXE_LAB", "/var/tmp/rxe-lab")
# the guests' addresses: 198.18.0.0/15 only (RFC 2544 benchmarking range)
A_IP, B_IP = "198.18.0.1", "198.18.0.2"


def qemu_bin():
    for p in (os.path.join(LAB, "qemu/usr/bin/qemu-system-x86_64"), "/usr/bin/qemu-system-x86_64"):
        if os.access(p, os.X_OK):
            return p
    raise SystemExit(f"qemu-system-x86_64 not found under {LAB}; run lab/rxe/build.sh")


def initrd(rocetap=False):
    """build.sh's initramfs, or with `rocetap` run.sh's copy with this tree's rocetap appended
    (RXE_INITRD; only the scenarios that run it boot the bigger image)."""
    if rocetap and os.environ.get("RXE_INITRD"):
        return os.environ["RXE_INITRD"]
    return os.path.join(LAB, "rocetap-initrd.img")


def accel():
    """TCG unless RXE_ACCEL=kvm. On this project's machines /dev/kvm is kvm-pvm (no vmx/svm):
    a stock Debian kernel does not boot under it (hangs after 'Probing EDD')."""
    return os.environ.get("RXE_ACCEL", "tcg")


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _is_our_qemu(pid, run_dir):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return any(b"qemu-system" in a for a in argv[:1]) and any(run_dir.encode() in a for a in argv)


def kill_recorded(run_dir):
    """Kill every qemu whose PID file is in run_dir (and that is still that qemu)."""
    if not os.path.isdir(run_dir):
        return
    for n in os.listdir(run_dir):
        if not n.endswith(".pid"):
            continue
        p = os.path.join(run_dir, n)
        try:
            pid = int(open(p).read().strip())
        except (OSError, ValueError):
            continue
        if _is_our_qemu(pid, run_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.unlink(p)
        except OSError:
            pass


class VM:
    def __init__(self, name, ip, mac, mtu, netdev, run_dir, mem=768, rocetap=False, netdev2=None, mac2=None):
        self.name, self.ip, self.mtu, self.run_dir = name, ip, mtu, run_dir
        os.makedirs(run_dir, exist_ok=True)
        self.ctl = os.path.join(run_dir, f"{name}.ctl")
        self.console = os.path.join(run_dir, f"{name}.console")
        self.pidfile = os.path.join(run_dir, f"{name}.pid")
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)
        env = dict(os.environ)
        moddir = os.path.join(LAB, "qemu/usr/lib/x86_64-linux-gnu/qemu")
        if os.path.isdir(moddir):
            env["QEMU_MODULE_DIR"] = moddir  # the unpacked .deb's accel-tcg module
        acc = (["-accel", "kvm", "-cpu", "host,-arch-capabilities"] if accel() == "kvm"
               else ["-accel", "tcg", "-cpu", "max"])
        self.cmdline = [
            qemu_bin(), "-L", os.path.join(LAB, "fw"), *acc, "-m", str(mem), "-smp", "1",
            "-kernel", os.path.join(LAB, "vmlinuz"), "-initrd", initrd(rocetap),
            "-append", f"console=ttyS0 panic=-1 quiet loglevel=4 lab.name={name} lab.ip={ip}/24 lab.mtu={mtu}",
            "-display", "none", "-no-reboot", "-monitor", "none", "-serial", f"file:{self.console}",
            "-netdev", netdev, "-device", f"virtio-net-pci,netdev=n0,mac={mac},romfile=",
            *(["-netdev", netdev2, "-device", f"virtio-net-pci,netdev=n1,mac={mac2},romfile="] if netdev2 else []),
            "-device", "virtio-serial-pci",
            "-chardev", f"socket,id=ctl,path={self.ctl},server=on,wait=off",
            "-device", "virtserialport,chardev=ctl,name=ctl"]
        self.proc = subprocess.Popen(self.cmdline, env=env, stdin=subprocess.DEVNULL,
                                     stdout=open(os.path.join(run_dir, f"{name}.qemu.log"), "w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        with open(self.pidfile, "w") as f:
            f.write(str(self.proc.pid))
        self.sock = None
        self.buf = b""
        self.seq = 0
        self.eth = "eth0"

    # ---- control port -------------------------------------------------------------------
    def _connect(self, deadline):
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: qemu exited rc={self.proc.returncode}; see {self.console}")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.ctl)
                self.sock = s
                return
            except OSError:
                s.close()
                time.sleep(0.5)
        raise TimeoutError(f"{self.name}: control socket never appeared")

    def _readline(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no reply from the agent")
            self.sock.settimeout(min(left, 2.0))
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name}: qemu exited")
                continue
            if not chunk:
                raise RuntimeError(f"{self.name}: control socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def _send(self, cmd):
        self.seq += 1
        rid = f"{self.name}{self.seq}"
        self.sock.sendall(f"{rid} {base64.b64encode(cmd.encode()).decode()}\n".encode())
        return rid

    def _reply(self, rid, deadline):
        while True:
            parts = self._readline(deadline).decode().split(" ", 3)
            if parts[0] == "RES" and parts[1] == rid:
                out = base64.b64decode(parts[3]).decode(errors="replace") if len(parts) > 3 else ""
                return int(parts[2]), out

    def wait_ready(self, timeout=300):
        """Until the agent answers and rxe0 exists (about 17 s under TCG)."""
        deadline = time.time() + timeout
        self._connect(deadline)
        while time.time() < deadline:
            rid = self._send("cat /run/eth && rdma link show rxe0/1")
            try:
                rc, out = self._reply(rid, min(deadline, time.time() + 5))
                if rc == 0:
                    self.eth = out.split()[0]
                    return out
            except TimeoutError:
                pass  # the agent was not up yet; the late reply is skipped by its id
            time.sleep(1)
        raise TimeoutError(f"{self.name}: agent not ready after {timeout} s; see {self.console}")

    def sh(self, cmd, timeout=60, check=False):
        """Run cmd (bash) in the VM; returns (rc, stdout+stderr). The command is wrapped in
        timeout(1) so the agent is never stuck for longer than `timeout` seconds."""
        rid = self._send(f"timeout -k 5 {int(timeout)} bash -c {shquote(cmd)}")
        rc, out = self._reply(rid, time.time() + timeout + 30)
        if check and rc != 0:
            raise RuntimeError(f"{self.name}: `{cmd}` rc={rc}\n{out}")
        return rc, out

    def get(self, path, dest, timeout=300):
        rc, out = self.sh(f"base64 -w0 {path}", timeout=timeout)
        if rc != 0:
            raise RuntimeError(f"{self.name}: cannot read {path}: {out[:200]}")
        data = base64.b64decode(out)
        with open(dest, "wb") as f:
            f.write(data)
        return len(data)

    def counters(self):
        """rxe0's hw_counters (sysfs), name -> value."""
        _, out = self.sh("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | sed 's/:/ /'")
        d = {}
        for line in out.splitlines():
            k, _, v = line.partition(" ")
            if k and v.strip().lstrip("-").isdigit():
                d[k] = int(v)
        return d

    def sysfs_facts(self):
        """What `rocetap netcheck` reads of rxe0 and its netdev (port state, link layer,
        active_mtu, the GID table with types and netdevs, the netdev MTU, RDMA-CM's configfs
        defaults and the RDMA netns mode where present): sysfs-relative path -> content
        (left out where the kernel refuses to read, as for unused GID entries' types)."""
        p = "class/infiniband/rxe0/ports/1"
        files = (f"{p}/state {p}/link_layer {p}/active_mtu {p}/gids/* {p}/gid_attrs/types/* "
                 f"{p}/gid_attrs/ndevs/* class/net/{self.eth}/mtu "
                 "kernel/config/rdma_cm/rxe0/ports/1/default_roce_mode "
                 "kernel/config/rdma_cm/rxe0/ports/1/default_roce_tos "
                 "module/ib_core/parameters/netns_mode")
        # one grep for every file (a shell loop is slow under TCG): "path:content" lines
        _, out = self.sh(f"cd /sys && grep -H . {files} 2>/dev/null; true", timeout=120)
        d = {}
        for line in out.splitlines():
            k, sep, v = line.partition(":")
            if sep and k.startswith(("class/", "kernel/", "module/")):
                d[k] = v
        return d

    # ---- teardown -----------------------------------------------------------------------------
    def stop(self):
        """Power off (sysrq o), then SIGTERM/SIGKILL the recorded qemu if it lingers."""
        try:
            if self.sock and self.proc.poll() is None:
                self._send("sync; echo o > /proc/sysrq-trigger")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(self.proc.pid, sig)
                    self.proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except OSError:
                    break
        if self.sock:
            self.sock.close()
            self.sock = None
        for p in (self.pidfile, self.ctl):
            try:
                os.unlink(p)
            except OSError:
                pass


def shquote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


def pair(run_dir, mtu=1500, rocetap=False):
    """Two VMs on one L2 'cable': a qemu socket netdev over 127.0.0.1 (A listens, B connects).
    With `rocetap`, both boot the initramfs that has this tree's rocetap."""
    port = free_port()
    a = VM("A", A_IP, "52:54:00:18:00:01", mtu, f"socket,id=n0,listen=127.0.0.1:{port}", run_dir,
           rocetap=rocetap)
    try:
        time.sleep(1.0)
        b = VM("B", B_IP, "52:54:00:18:00:02", mtu, f"socket,id=n0,connect=127.0.0.1:{port}", run_dir,
               rocetap=rocetap)
    except BaseException:
        a.stop()
        raise
    return a, b


# the switch VM of the three-VM lab (A — S — B): a Linux bridge between its two NICs, no RDMA
S_IP = "198.18.0.3"


def triple(run_dir, mtu=1500):
    """Three VMs, A — S — B: two qemu socket 'cables' over 127.0.0.1 (A listens, S connects
    with its first NIC and listens with its second, B connects to that). S bridges them
    (lab.py's switch run sets br0 up over the control port)."""
    p1, p2 = free_port(), free_port()
    a = VM("A", A_IP, "52:54:00:18:00:01", mtu, f"socket,id=n0,listen=127.0.0.1:{p1}", run_dir)
    started = [a]
    try:
        time.sleep(1.0)
        s = VM("S", S_IP, "52:54:00:18:00:03", mtu, f"socket,id=n0,connect=127.0.0.1:{p1}", run_dir,
               netdev2=f"socket,id=n1,listen=127.0.0.1:{p2}", mac2="52:54:00:18:00:04")
        started.append(s)
        time.sleep(1.0)
        b = VM("B", B_IP, "52:54:00:18:00:02", mtu, f"socket,id=n0,connect=127.0.0.1:{p2}", run_dir)
    except BaseException:
        for v in started:
            v.stop()
        raise
    return a, s, b
