//! `rocetap capture` end to end on a veth pair between two network namespaces the test
//! creates (addresses and traffic never leave them): frames replayed with tcpreplay on
//! one side are captured by rocetap on the other and must arrive byte for byte; rotation,
//! SIGINT / SIGUSR1, missing CAP_NET_RAW, write errors, pcapng annotations read back by
//! tshark, RDMA-device errors against a fake sysfs, and `-r -` in a pipe.
//!
//! Needs root (namespaces); otherwise every test prints `SKIP:` (and fails under CI).

use crate::common;

use common::{bin, have, is_root, pcap_bytes, run_ok as run, skip, TempDir};
use pcap_parser::{PcapBlockOwned, PcapError};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// True when the test can run; prints why not otherwise.
fn ready(tools: &[&str]) -> bool {
    if !is_root() {
        skip("needs root for network namespaces");
        return false;
    }
    for t in tools {
        if !have(t)
            && !Command::new(t)
                .arg("-V")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            skip(&format!("{t} is not installed"));
            return false;
        }
    }
    true
}

static SEQ: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// Interface names of the pcapng files read on this thread, in order.
    static IFACE_NAMES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Two namespaces joined by a veth pair (MTU 9000, IPv6 off so nothing but the test's
/// frames crosses it), removed on drop — also when the test fails.
struct Netns {
    a: String,
    b: String,
    if_a: String,
    if_b: String,
    tag: String,
}

impl Netns {
    fn new() -> Netns {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let a = format!("rtcap-{pid}-{n}-a");
        let b = format!("rtcap-{pid}-{n}-b");
        // Interface names are at most 15 bytes.
        let tag = format!("{:x}{n}", pid % 0xfffff);
        let ns = Netns {
            a: a.clone(),
            b: b.clone(),
            if_a: format!("rc{tag}a"),
            if_b: format!("rc{tag}b"),
            tag: tag.clone(),
        };
        run(&["ip", "netns", "add", &a]);
        run(&["ip", "netns", "add", &b]);
        run(&[
            "ip", "link", "add", &ns.if_a, "netns", &a, "type", "veth", "peer", "name", &ns.if_b,
            "netns", &b,
        ]);
        for (n, i, addr) in [
            (&a, &ns.if_a, "198.19.255.1/24"),
            (&b, &ns.if_b, "198.19.255.2/24"),
        ] {
            let _ = Command::new("ip")
                .args(["netns", "exec", n, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1"))
                .output();
            run(&["ip", "-n", n, "link", "set", i, "mtu", "9000"]);
            run(&["ip", "-n", n, "addr", "add", addr, "dev", i]);
            run(&["ip", "-n", n, "link", "set", i, "up"]);
        }
        ns
    }

    /// A second veth pair between the same namespaces; returns (A side, B side).
    fn second_link(&self) -> (String, String) {
        let (x, y) = (format!("rc{}x", self.tag), format!("rc{}y", self.tag));
        run(&[
            "ip", "link", "add", &x, "netns", &self.a, "type", "veth", "peer", "name", &y, "netns",
            &self.b,
        ]);
        for (n, i) in [(&self.a, &x), (&self.b, &y)] {
            let _ = Command::new("ip")
                .args(["netns", "exec", n, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{i}.disable_ipv6=1"))
                .output();
            run(&["ip", "-n", n, "link", "set", i, "mtu", "9000"]);
            run(&["ip", "-n", n, "link", "set", i, "up"]);
        }
        (x, y)
    }

    /// Replays `pcap` out of side A (tcpreplay, top speed unless `pps`).
    fn replay(&self, pcap: &Path, pps: Option<u32>) {
        self.replay_on(&self.if_a, pcap, pps);
    }

    fn replay_on(&self, iface: &str, pcap: &Path, pps: Option<u32>) {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.a, "tcpreplay", "-q", "-i", iface]);
        match pps {
            Some(p) => c.arg(format!("--pps={p}")),
            None => c.arg("-t"),
        };
        let o = c.arg(pcap).output().expect("tcpreplay");
        assert!(
            o.status.success(),
            "tcpreplay: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Starts `rocetap analyze -i <side B> ARGS` inside B (stdout kept) and waits until
    /// it captures.
    fn analyze(&self, args: &[&str], stdout: &Path) -> Running {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.b, bin(), "analyze", "-i", &self.if_b])
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(stdout).unwrap())
            .stderr(Stdio::piped());
        Running::start(c)
    }

    /// Starts `rocetap capture -i <side B> ARGS` inside B and waits until it captures.
    fn capture(&self, args: &[&str]) -> Running {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.b, bin(), "capture", "-i", &self.if_b])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Running::start(c)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.a]).output();
        let _ = Command::new("ip").args(["netns", "del", &self.b]).output();
    }
}

/// A running capture whose stderr is collected line by line.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    fn start(mut c: Command) -> Running {
        let mut child = c.spawn().expect("start rocetap");
        let err = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut r = Running {
            child,
            lines: rx,
            seen: Vec::new(),
        };
        r.wait_for("capturing on", Duration::from_secs(20));
        r
    }

    fn wait_for(&mut self, needle: &str, limit: Duration) {
        let end = Instant::now() + limit;
        while !self.seen.iter().any(|l| l.contains(needle)) {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("no {needle:?} from rocetap; stderr: {:?}", self.seen);
                }
            }
        }
    }

    fn signal(&self, sig: &str) {
        run(&["kill", &format!("-{sig}"), &self.child.id().to_string()]);
    }

    /// Waits (bounded) for the exit; returns the code and all of stderr.
    fn finish(mut self, limit: Duration) -> (Option<i32>, String) {
        let end = Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("rocetap did not stop; stderr: {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends with the pipe.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (status.code(), self.seen.join("\n"))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every frame of a pcap / pcapng file, read with pcap-parser (not rocetap's reader).
/// Panics when the file is not valid up to its end.
fn frames_of(path: &Path) -> Vec<Vec<u8>> {
    records_of(path).into_iter().map(|r| r.2).collect()
}

/// (interface id, timestamp in the file's units, bytes) of every frame.
fn records_of(path: &Path) -> Vec<(u32, u64, Vec<u8>)> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = pcap_parser::create_reader(1 << 20, f).expect("a capture file");
    let mut out = Vec::new();
    loop {
        match r.next() {
            Ok((off, block)) => {
                match block {
                    PcapBlockOwned::Legacy(b) => out.push((
                        0,
                        u64::from(b.ts_sec) * 1_000_000_000 + u64::from(b.ts_usec),
                        b.data[..b.caplen as usize].to_vec(),
                    )),
                    PcapBlockOwned::NG(pcap_parser::Block::EnhancedPacket(b)) => out.push((
                        b.if_id,
                        (u64::from(b.ts_high) << 32) | u64::from(b.ts_low),
                        b.data[..b.caplen as usize].to_vec(),
                    )),
                    PcapBlockOwned::NG(pcap_parser::Block::InterfaceDescription(i)) => {
                        let name = i
                            .options
                            .iter()
                            .find(|o| o.code == pcap_parser::pcapng::OptionCode::IfName)
                            .map(|o| {
                                String::from_utf8_lossy(&o.value)
                                    .trim_end_matches('\0')
                                    .to_string()
                            });
                        IFACE_NAMES.with(|n| n.borrow_mut().push(name.unwrap_or_default()));
                    }
                    _ => {}
                }
                r.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => r.refill().unwrap(),
            Err(e) => panic!("{}: invalid capture: {e:?}", path.display()),
        }
    }
    out
}

// ---- frames -------------------------------------------------------------------------

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

struct Roce {
    opcode: u8,
    qp: u32,
    psn: u32,
    /// AETH syndrome.
    aeth: Option<u8>,
    ecn: u8,
    vlan: Option<u16>,
    payload: usize,
    bad_icrc: bool,
    /// Source host (1 = A, 2 = B).
    from: u8,
}

impl Roce {
    fn send(qp: u32, psn: u32, payload: usize) -> Roce {
        Roce {
            opcode: 0x04,
            qp,
            psn,
            aeth: None,
            ecn: 0b10,
            vlan: None,
            payload,
            bad_icrc: false,
            from: 1,
        }
    }

    /// Ethernet [/ 802.1Q] / IPv4 / UDP 4791 / BTH [/ AETH] [/ CNP pad] / payload / ICRC.
    fn bytes(&self) -> Vec<u8> {
        let (q, p) = (self.qp.to_be_bytes(), self.psn.to_be_bytes());
        let mut t = vec![
            self.opcode,
            0,
            0xff,
            0xff,
            0,
            q[1],
            q[2],
            q[3],
            0x80,
            p[1],
            p[2],
            p[3],
        ];
        if let Some(s) = self.aeth {
            t.extend_from_slice(&[s, 0, 0, 9]);
        }
        if self.opcode == 0x81 {
            t[4] = 0x40; // BECN
            t.extend_from_slice(&[0; 16]);
        }
        t.extend((0..self.payload).map(|i| (i as u32 ^ self.psn) as u8));
        let mut udp = vec![0xc3, 0x50, 0x12, 0xb7];
        udp.extend_from_slice(&((8 + t.len() + 4) as u16).to_be_bytes());
        udp.extend_from_slice(&[0, 0]);
        udp.extend_from_slice(&t);
        let (src, dst) = if self.from == 1 { (1, 2) } else { (2, 1) };
        let mut ip = vec![0x45, (26 << 2) | self.ecn];
        ip.extend_from_slice(&((20 + udp.len() + 4) as u16).to_be_bytes());
        ip.extend_from_slice(&[
            0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, src, 198, 18, 0, dst,
        ]);
        let sum = ipv4_checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let crc = dissectors::ib::icrc::roce_v2(&ip, &udp) ^ u32::from(self.bad_icrc);
        let (sm, dm) = if self.from == 1 {
            (MAC_A, MAC_B)
        } else {
            (MAC_B, MAC_A)
        };
        let mut f = Vec::new();
        f.extend_from_slice(&dm);
        f.extend_from_slice(&sm);
        if let Some(v) = self.vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&((3 << 13) | v).to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&udp);
        f.extend_from_slice(&crc.to_le_bytes());
        f
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn arp_request() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[198, 18, 0, 1, 0, 0, 0, 0, 0, 0, 198, 18, 0, 2]);
    f
}

/// Frames the default filter must not capture: plain UDP to another port, and TCP.
fn noise() -> Vec<Vec<u8>> {
    let mut udp = Roce::send(1, 1, 10).bytes();
    udp[14 + 20 + 2..14 + 20 + 4].copy_from_slice(&5000u16.to_be_bytes());
    let mut tcp = Roce::send(1, 1, 30).bytes();
    tcp[14 + 9] = 6;
    vec![udp, tcp]
}

/// A RoCE conversation: SENDs and WRITEs of various sizes on two QPs, ACKs back, a few
/// VLAN-tagged, and ARP.
fn roce_trace(n: u32) -> Vec<Vec<u8>> {
    let mut v = vec![arp_request()];
    for i in 0..n {
        let mut r = Roce::send(0x11 + i % 2, 1000 + i / 2, (i as usize * 37) % 1400);
        if i % 5 == 0 {
            r.vlan = Some(100);
        }
        if i % 3 == 0 {
            r.opcode = 0x0a; // WRITE Only (no RETH here: decoded as truncated, still RoCE)
        }
        v.push(r.bytes());
        if i % 4 == 3 {
            let mut ack = Roce::send(0x21, 1000 + i / 2, 0);
            ack.opcode = 0x11;
            ack.aeth = Some(0x1f);
            ack.from = 2;
            v.push(ack.bytes());
        }
    }
    v
}

fn write_trace(dir: &TempDir, name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let p = dir.path(name);
    std::fs::write(&p, pcap_bytes(frames)).unwrap();
    p
}

fn report_number(stderr: &str, what: &str) -> u64 {
    stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_suffix(what).and_then(|n| n.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {what:?} line in {stderr}"))
}

// ---- tests --------------------------------------------------------------------------

#[test]
fn replayed_roce_frames_arrive_byte_identical_and_filter_drops_the_rest() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-ident");
    let ns = Netns::new();
    let roce = roce_trace(300);
    let mut mixed = Vec::new();
    for (i, f) in roce.iter().enumerate() {
        mixed.push(f.clone());
        if i % 50 == 0 {
            mixed.extend(noise());
        }
    }
    let trace = write_trace(&dir, "in.pcap", &mixed);
    let out = dir.path("out.pcap");
    let cap = ns.capture(&[
        "-w",
        out.to_str().unwrap(),
        "-c",
        &roce.len().to_string(),
        "--duration",
        "30",
    ]);
    ns.replay(&trace, None);
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    let got = frames_of(&out);
    assert_eq!(got.len(), roce.len(), "{err}");
    let same = got.iter().zip(&roce).filter(|(a, b)| a == b).count();
    if let Some((i, (a, b))) = got.iter().zip(&roce).enumerate().find(|(_, (a, b))| a != b) {
        eprintln!(
            "first difference at frame {}: got {a:02x?}\nsent {b:02x?}",
            i + 1
        );
    }
    assert_eq!(same, roce.len(), "every captured frame equals the sent one");
    assert_eq!(
        report_number(&err, "packets dropped by rocetap (queue full)"),
        0
    );
    eprintln!("byte-identical: {same} of {} RoCE/ARP frames", roce.len());
}

#[test]
fn shared_captures_replayed_arrive_byte_identical() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let Some(dir) = common::captures_dir() else {
        return;
    };
    let mut traces: Vec<PathBuf> = std::fs::read_dir(dir.join("public"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .filter(|p| {
            // Classic pcap, Ethernet, frames that fit the veth MTU.
            let b = std::fs::read(p).unwrap_or_default();
            b.len() > 24 && b[0..4] == [0xd4, 0xc3, 0xb2, 0xa1] && b[20..24] == [1, 0, 0, 0]
        })
        .collect();
    traces.sort();
    if traces.is_empty() {
        skip("no Ethernet pcap among the shared captures");
        return;
    }
    let tmp = TempDir::new("cap-shared");
    let ns = Netns::new();
    let mut total = 0;
    for (k, t) in traces.iter().enumerate() {
        let sent: Vec<Vec<u8>> = frames_of(t)
            .into_iter()
            .filter(|f| f.len() <= 9000 + 14 && f.len() >= 14)
            .collect();
        if sent.is_empty() {
            continue;
        }
        let input = write_trace(&tmp, &format!("in{k}.pcap"), &sent);
        let out = tmp.path(&format!("out{k}.pcapng"));
        let cap = ns.capture(&[
            "--all",
            "-w",
            out.to_str().unwrap(),
            "-c",
            &sent.len().to_string(),
            "--duration",
            "30",
        ]);
        ns.replay(&input, None);
        let (code, err) = cap.finish(Duration::from_secs(40));
        assert_eq!(code, Some(0), "{}: {err}", t.display());
        let got = frames_of(&out);
        assert_eq!(got.len(), sent.len(), "{}: {err}", t.display());
        for (i, (a, b)) in got.iter().zip(&sent).enumerate() {
            assert_eq!(a, b, "{} frame {}", t.display(), i + 1);
        }
        total += got.len();
    }
    eprintln!(
        "byte-identical: {total} frames from {} shared captures",
        traces.len()
    );
    assert!(total > 0);
}

#[test]
fn size_rotation_makes_a_ring_of_files() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-rot-c");
    let ns = Netns::new();
    // 50 frames of exactly 1000 bytes; 10 kB files hold 9 of them (24 + 9 x 1016).
    let frames: Vec<Vec<u8>> = (0..50)
        .map(|i| {
            let mut f = Roce::send(0x33, i, 0).bytes();
            let pad = 1000 - f.len();
            f = Roce::send(0x33, i, pad).bytes();
            assert_eq!(f.len(), 1000);
            f
        })
        .collect();
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("ring.pcap");
    let cap = ns.capture(&[
        "-w",
        out.to_str().unwrap(),
        "-C",
        "0.01",
        "-W",
        "3",
        "-c",
        "50",
        "--duration",
        "30",
    ]);
    ns.replay(&trace, Some(1000));
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ring"))
        .collect();
    names.sort();
    assert_eq!(names, ["ring.pcap", "ring.pcap1", "ring.pcap2"]);
    // Six files were written (9, 9, 9, 9, 9, 5 frames); the ring keeps the last three:
    // ring.pcap (file 4), ring.pcap1 (file 5), ring.pcap2 (file 6).
    let mut kept = Vec::new();
    for n in &names {
        let p = dir.path(n);
        assert!(
            std::fs::metadata(&p).unwrap().len() <= 10_000,
            "{n} too big"
        );
        kept.extend(frames_of(&p));
    }
    assert_eq!(kept.len(), 23);
    assert_eq!(kept, frames[27..].to_vec());
    assert!(err.contains("50 packets written to 6 files"), "{err}");
}

#[test]
fn time_rotation_names_files_by_second() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-rot-g");
    let ns = Netns::new();
    let frames: Vec<Vec<u8>> = (0..35).map(|i| Roce::send(0x44, i, 64).bytes()).collect();
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("t.pcap");
    let cap = ns.capture(&[
        "-w",
        out.to_str().unwrap(),
        "-G",
        "1",
        "-c",
        "35",
        "--duration",
        "30",
    ]);
    ns.replay(&trace, Some(10)); // 3.5 s
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("t.pcap"))
        .collect();
    names.sort();
    assert!(
        (3..=5).contains(&names.len()),
        "3.5 s at -G 1 makes 3 to 5 files: {names:?}"
    );
    let mut all = Vec::new();
    let mut prev = 0u64;
    for n in &names {
        let secs: u64 = n
            .strip_prefix("t.pcap.")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{n} is not t.pcap.<seconds>"));
        assert!(secs > prev);
        prev = secs;
        all.extend(frames_of(&dir.path(n)));
    }
    assert_eq!(all, frames);
}

#[test]
fn sigint_mid_capture_leaves_a_valid_file_with_every_frame_counted() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-sigint");
    let ns = Netns::new();
    let frames: Vec<Vec<u8>> = (0..800).map(|i| Roce::send(0x55, i, 200).bytes()).collect();
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("int.pcapng");
    let mut cap = ns.capture(&["-w", out.to_str().unwrap(), "--duration", "60"]);
    // 800 frames at 200/s take 4 s; interrupt after about 1.
    let replay = {
        let a = ns.a.clone();
        let ifa = ns.if_a.clone();
        let t = trace.clone();
        std::thread::spawn(move || {
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &a,
                    "tcpreplay",
                    "-q",
                    "--pps=200",
                    "-i",
                    &ifa,
                ])
                .arg(t)
                .output()
                .unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(600));
    cap.signal("USR1");
    cap.wait_for("packets dropped by rocetap", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    cap.signal("INT");
    let (code, err) = cap.finish(Duration::from_secs(20));
    let _ = replay.join();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err.matches("packets captured").count(),
        2,
        "SIGUSR1 report and final report: {err}"
    );
    let got = frames_of(&out);
    let captured = report_number(&err, "packets captured");
    let written = err
        .lines()
        .rev()
        .find_map(|l| {
            l.split_once(" packets written")
                .and_then(|(n, _)| n.parse::<u64>().ok())
        })
        .unwrap();
    let dropped = report_number(&err, "packets dropped by rocetap (queue full)");
    assert!(
        got.len() > 50 && got.len() < 800,
        "stopped mid-capture: {} frames",
        got.len()
    );
    assert_eq!(got.len() as u64, written, "{err}");
    assert_eq!(captured, written + dropped, "{err}");
    assert_eq!(
        got,
        frames[..got.len()].to_vec(),
        "a prefix of what was sent"
    );
}

#[test]
fn sigterm_flushes_the_file_and_exits_0() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-term");
    let ns = Netns::new();
    let frames: Vec<Vec<u8>> = (0..25).map(|i| Roce::send(0x5a, i, 500).bytes()).collect();
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("term.pcap");
    let cap = ns.capture(&["-w", out.to_str().unwrap(), "--duration", "60"]);
    ns.replay(&trace, None);
    std::thread::sleep(Duration::from_millis(500));
    cap.signal("TERM");
    let (code, err) = cap.finish(Duration::from_secs(20));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("capture signal"), "{err}");
    assert_eq!(frames_of(&out), frames, "{err}");
    assert_eq!(report_number(&err, "packets captured"), 25);
}

#[test]
fn capture_without_cap_net_raw_fails_cleanly() {
    if !ready(&[]) {
        return;
    }
    let dir = TempDir::new("cap-priv");
    let out = dir.path("x.pcap");
    let mut cases: Vec<Vec<String>> = vec![[
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ]
    .map(String::from)
    .to_vec()];
    if Command::new("capsh").arg("--help").output().is_ok() {
        cases.push(vec![
            "capsh".into(),
            "--drop=cap_net_raw".into(),
            "--".into(),
        ]);
    }
    for prefix in cases {
        let mut c = Command::new(&prefix[0]);
        c.args(&prefix[1..]);
        let rocetap_args = [
            "capture",
            "-i",
            "lo",
            "-w",
            out.to_str().unwrap(),
            "-c",
            "1",
        ];
        if prefix[0] == "capsh" {
            let line = std::iter::once(bin())
                .chain(rocetap_args)
                .collect::<Vec<_>>()
                .join(" ");
            c.args(["-c", &line]);
        } else {
            c.arg(bin()).args(rocetap_args);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{prefix:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "one line and a hint: {err}");
        assert!(
            lines[0].starts_with("rocetap: capturing on lo: permission denied")
                && lines[0].contains("CAP_NET_RAW"),
            "{err}"
        );
        assert!(
            lines[1].starts_with("hint: ")
                && lines[1].contains("sudo")
                && lines[1].contains("setcap cap_net_raw,cap_net_admin+eip"),
            "{err}"
        );
        assert!(!out.exists(), "no output file on failure");
    }
}

#[test]
fn annotate_writes_comments_tshark_shows() {
    if !ready(&["tcpreplay", "tshark"]) {
        return;
    }
    let dir = TempDir::new("cap-annot");
    let ns = Netns::new();
    let mut frames = vec![
        Roce::send(0x66, 10, 32).bytes(),
        Roce::send(0x66, 11, 32).bytes(),
        Roce::send(0x66, 14, 32).bytes(), // gap: 12, 13 missing
    ];
    let mut nak = Roce::send(0x77, 12, 0);
    nak.opcode = 0x11;
    nak.aeth = Some(0x60);
    nak.from = 2;
    frames.push(nak.bytes());
    let mut rnr = Roce::send(0x77, 12, 0);
    rnr.opcode = 0x11;
    rnr.aeth = Some(0x2e);
    rnr.from = 2;
    frames.push(rnr.bytes());
    let mut cnp = Roce::send(0xa022, 0, 0);
    cnp.opcode = 0x81;
    cnp.from = 2;
    cnp.ecn = 0;
    frames.push(cnp.bytes());
    let mut ce = Roce::send(0x66, 15, 32);
    ce.ecn = 0b11;
    frames.push(ce.bytes());
    let mut bad = Roce::send(0x66, 16, 32);
    bad.bad_icrc = true;
    frames.push(bad.bytes());
    frames.push(Roce::send(0x66, 17, 32).bytes());
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("a.pcapng");
    let cap = ns.capture(&[
        "-w",
        out.to_str().unwrap(),
        "--annotate",
        "-c",
        &frames.len().to_string(),
        "--duration",
        "30",
    ]);
    ns.replay(&trace, None);
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    // tshark 4.0 calls the field frame.comment (pkt_comment before 1.12 / after 4.2 too).
    let o = Command::new("tshark")
        .args([
            "-r",
            out.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.comment",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    assert_eq!(lines[0], "");
    assert_eq!(lines[1], "");
    assert_eq!(lines[2], "PSN gap: expected 12, got 14");
    assert_eq!(lines[3], "NAK 0x60 PSN sequence error (PSN 12)");
    assert!(lines[4].starts_with("RNR NAK, timer 14"), "{}", lines[4]);
    assert_eq!(lines[5], "CNP for QP 0x00a022");
    assert_eq!(lines[6], "ECN CE");
    assert!(lines[7].starts_with("ICRC bad: stored 0x"), "{}", lines[7]);
    assert_eq!(lines[8], "");
}

#[test]
fn stdin_in_a_pipe_from_tcpdump() {
    if !ready(&["tcpreplay", "tcpdump"]) {
        return;
    }
    let dir = TempDir::new("cap-pipe");
    let ns = Netns::new();
    let frames = roce_trace(40);
    let trace = write_trace(&dir, "in.pcap", &frames);
    let script = format!(
        "timeout 30 tcpdump -U -q -i {} -w - -c {} 2>/dev/null | {} decode -r -",
        ns.if_b,
        frames.len(),
        bin()
    );
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.b, "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    ns.replay(&trace, None);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), frames.len(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("RC SEND Only QP=0x000011 PSN=1001")),
        "{text}"
    );
}

#[test]
fn write_errors_stop_with_a_valid_file_and_exit_2() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-full");
    let ns = Netns::new();
    // /dev/full: the very first write fails.
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.b,
            bin(),
            "capture",
            "-i",
            &ns.if_b,
            "-w",
            "/dev/full",
            "--force",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rocetap: writing /dev/full: No space left on device"),
        "{err}"
    );
    // A 256 KiB tmpfs filled mid-capture: the file keeps every complete frame.
    let (frames, stdout, err) = onto_a_full_disk(&dir, &ns, "capture", "full.pcap", "copy.pcap");
    assert!(stdout.contains("rc=2"), "{stdout} {err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("valid up to the last complete frame"), "{err}");
    let got = frames_of(&dir.path("copy.pcap"));
    assert!(got.len() > 50 && got.len() < 600, "{} frames", got.len());
    assert_eq!(got, frames[..got.len()].to_vec());
}

/// Runs `rocetap CMD -i IF -w FILE` in `ns`'s B side onto a 256 KiB tmpfs of its own mount
/// namespace while 600 RoCE frames of 1,400 bytes are replayed to it, so the disk fills
/// mid-run; `copy` (in `dir`) keeps what was written. Returns the frames sent, the
/// script's stdout (with `rc=N`) and rocetap's stderr.
fn onto_a_full_disk(
    dir: &TempDir,
    ns: &Netns,
    cmd: &str,
    file: &str,
    copy: &str,
) -> (Vec<Vec<u8>>, String, String) {
    let mnt = dir.path("small");
    std::fs::create_dir(&mnt).unwrap();
    let frames: Vec<Vec<u8>> = (0..600)
        .map(|i| Roce::send(0x88, i, 1400).bytes())
        .collect();
    let trace = write_trace(dir, "in.pcap", &frames);
    let out = mnt.join(file);
    let script = format!(
        "mount -t tmpfs -o size=256k rtcap {m} && {b} {cmd} -i {i} -w {o} --duration 30 -c 600; echo rc=$?; cp {o} {copy}; umount {m}",
        m = mnt.display(),
        b = bin(),
        i = ns.if_b,
        o = out.display(),
        copy = dir.path(copy).display()
    );
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.b, "unshare", "-m", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    ns.replay(&trace, Some(2000));
    let o = child.wait_with_output().unwrap();
    (
        frames,
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `analyze -i -w` on a disk that fills up: the analysis of every frame captured is still
/// printed, then the write error (exit 2); the pcapng file keeps every complete frame and
/// ends with a comment that says it was cut.
#[test]
fn analyze_live_on_a_full_disk_still_prints_the_analysis() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("analyze-full");
    let ns = Netns::new();
    let (frames, stdout, err) =
        onto_a_full_disk(&dir, &ns, "analyze", "full.pcapng", "copy.pcapng");
    assert!(stdout.contains("rc=2"), "{stdout} {err}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{}: ", ns.if_b)) && first.contains(" frames, "),
        "the analysis comes first: {stdout}"
    );
    assert!(
        err.contains("rocetap: writing") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(
        err.contains("it ends with a comment that says where and why it was cut"),
        "{err}"
    );
    let copy = dir.path("copy.pcapng");
    let got = frames_of(&copy);
    assert!(got.len() > 50 && got.len() < 600, "{} frames", got.len());
    assert_eq!(got, frames[..got.len()].to_vec());
    let note = format!(
        "rocetap: capture cut here: No space left on device (os error 28); the {} frames before it are complete",
        got.len()
    );
    let bytes = std::fs::read(&copy).unwrap();
    assert!(
        bytes.windows(note.len()).any(|w| w == note.as_bytes()),
        "{note}"
    );
}

#[test]
fn several_interfaces_merge_in_timestamp_order_into_pcapng() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-multi");
    let ns = Netns::new();
    let (x, y) = ns.second_link();
    let one: Vec<Vec<u8>> = (0..80).map(|i| Roce::send(0x91, i, 100).bytes()).collect();
    let two: Vec<Vec<u8>> = (0..60).map(|i| Roce::send(0x92, i, 300).bytes()).collect();
    let t1 = write_trace(&dir, "one.pcap", &one);
    let t2 = write_trace(&dir, "two.pcap", &two);
    let out = dir.path("multi.pcapng");
    let cap = ns.capture(&[
        "-i",
        &y,
        "-w",
        out.to_str().unwrap(),
        "-c",
        "140",
        "--duration",
        "30",
    ]);
    // Both links at once, at different rates: frames interleave in time.
    std::thread::scope(|s| {
        s.spawn(|| ns.replay_on(&ns.if_a, &t1, Some(200)));
        s.spawn(|| ns.replay_on(&x, &t2, Some(150)));
    });
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    IFACE_NAMES.with(|n| n.borrow_mut().clear());
    let recs = records_of(&out);
    let names = IFACE_NAMES.with(|n| n.borrow().clone());
    assert_eq!(names, vec![ns.if_b.clone(), y.clone()]);
    assert_eq!(recs.len(), 140, "{err}");
    assert!(
        recs.windows(2).all(|w| w[0].1 <= w[1].1),
        "timestamps never go back"
    );
    let on = |i: u32| -> Vec<Vec<u8>> {
        recs.iter()
            .filter(|r| r.0 == i)
            .map(|r| r.2.clone())
            .collect()
    };
    assert_eq!(
        on(0),
        one,
        "interface 0 ({}) holds what was sent on it",
        ns.if_b
    );
    assert_eq!(on(1), two, "interface 1 ({y}) holds what was sent on it");
    let switches = recs.windows(2).filter(|w| w[0].0 != w[1].0).count();
    assert!(
        switches > 10,
        "the two links interleave ({switches} switches)"
    );
    assert!(
        err.contains(&format!("  {}: 80 captured", ns.if_b)),
        "{err}"
    );
    assert!(err.contains(&format!("  {y}: 60 captured")), "{err}");
}

/// Where the IPv4 header of `f` (Ethernet, at most one 802.1Q tag) starts.
fn ip_at(f: &[u8]) -> usize {
    if f[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    }
}

/// `f` (IPv4) from `src` to `dst`, its IP checksum made again.
fn between(mut f: Vec<u8>, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let ip = ip_at(&f);
    f[ip + 12..ip + 16].copy_from_slice(&src);
    f[ip + 16..ip + 20].copy_from_slice(&dst);
    f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let sum = ipv4_checksum(&f[ip..ip + 20]);
    f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    f
}

#[test]
fn lanes_split_by_host_pair_and_merge_back_whole() {
    use rocetap::capture::live::fanout::lane_of;
    use std::net::Ipv4Addr;
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-lanes");
    let ns = Netns::new();
    // 16 host pairs, requests one way (every third VLAN-tagged: the kernel takes the tag
    // off before the lane program runs, libpcap puts it back) and ACKs the other,
    // interleaved; ARP among them.
    let mut sent = vec![arp_request()];
    for i in 0..10u32 {
        for n in 0..16u8 {
            let (a, b) = ([198, 18, 1, n], [198, 18, 2, n]);
            let mut req = Roce::send(0x40 + u32::from(n), i, 64);
            if (i + u32::from(n)) % 3 == 0 {
                req.vlan = Some(100);
            }
            sent.push(between(req.bytes(), a, b));
            if i % 2 == 1 {
                let mut ack = Roce::send(0x80 + u32::from(n), i, 0);
                ack.opcode = 0x11;
                ack.aeth = Some(0x1f);
                ack.from = 2;
                sent.push(between(ack.bytes(), b, a));
            }
        }
    }
    sent.push(arp_request());
    let trace = write_trace(&dir, "pairs.pcap", &sent);
    let out = dir.path("lanes.pcapng");
    let total = sent.len().to_string();
    let cap = ns.capture(&[
        "--lanes",
        "2",
        "-w",
        out.to_str().unwrap(),
        "-c",
        &total,
        "--duration",
        "30",
    ]);
    ns.replay(&trace, Some(1000));
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    IFACE_NAMES.with(|n| n.borrow_mut().clear());
    let recs = records_of(&out);
    let names = IFACE_NAMES.with(|n| n.borrow().clone());
    assert_eq!(
        names,
        vec![ns.if_b.clone(), ns.if_b.clone()],
        "one interface block a lane"
    );
    let file = std::fs::read(&out).unwrap();
    for lane in 1..=2 {
        let d = format!("{} lane {lane}/2 (PACKET_FANOUT by IP pair)", ns.if_b);
        assert!(
            file.windows(d.len()).any(|w| w == d.as_bytes()),
            "if_description {d:?}"
        );
    }
    assert!(
        recs.windows(2).all(|w| w[0].1 <= w[1].1),
        "timestamps never go back"
    );
    // Every frame once, in the order sent (one sender, so time order is send order).
    let got: Vec<Vec<u8>> = recs.iter().map(|r| r.2.clone()).collect();
    assert_eq!(got, sent, "{err}");
    let mut per_lane = [0u32; 2];
    for (lane, _, f) in &recs {
        per_lane[*lane as usize] += 1;
        let at = ip_at(f);
        let want = if f[at - 2..at] == [0x08, 0x00] {
            let ip = |o: usize| Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]).into();
            u32::from(lane_of(ip(at + 12), ip(at + 16), 2))
        } else {
            0
        };
        assert_eq!(*lane, want, "frame {:02x?}", &f[..34]);
    }
    assert!(
        per_lane.iter().all(|&n| n >= 30),
        "both lanes used: {per_lane:?}"
    );
    for (i, n) in per_lane.iter().enumerate() {
        let line = format!("  {} lane {}/2: {n} captured", ns.if_b, i + 1);
        assert!(err.contains(&line), "{line:?} in {err}");
    }
}

/// The `CapEff` and real/effective uid of a running process.
fn creds(pid: u32) -> (String, String) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    (field("CapEff:"), field("Uid:"))
}

#[test]
fn privileges_are_dropped_once_the_device_is_open() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-drop");
    let ns = Netns::new();
    let frames: Vec<Vec<u8>> = (0..20).map(|i| Roce::send(0x99, i, 64).bytes()).collect();
    let trace = write_trace(&dir, "in.pcap", &frames);

    // As plain root: every capability is cleared, the capture still works.
    let out = dir.path("root.pcap");
    let cap = ns.capture(&["-w", out.to_str().unwrap(), "-c", "20", "--duration", "30"]);
    let (capeff, _) = creds(cap.child.id());
    assert_eq!(
        capeff, "0000000000000000",
        "no capability left while capturing"
    );
    ns.replay(&trace, None);
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(frames_of(&out), frames);

    // Under sudo (SUDO_UID/SUDO_GID): rocetap becomes that user; the file is theirs.
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let shared = dir.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = shared.join("user.pcap");
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.b, bin(), "capture", "-i", &ns.if_b])
        .args(["-w", out.to_str().unwrap(), "-c", "20", "--duration", "30"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let cap = Running::start(c);
    let (capeff, uid) = creds(cap.child.id());
    assert_eq!(capeff, "0000000000000000");
    assert!(uid.split_whitespace().all(|u| u == "65534"), "uid {uid}");
    ns.replay(&trace, None);
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    let meta = std::fs::metadata(&out).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert_eq!(frames_of(&out), frames);
}

#[test]
fn the_any_device_captures_linux_cooked_v2() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("cap-any");
    let ns = Netns::new();
    let frames: Vec<Vec<u8>> = (0..30).map(|i| Roce::send(0x7a, i, 80).bytes()).collect();
    let trace = write_trace(&dir, "in.pcap", &frames);
    let out = dir.path("any.pcap");
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.b, bin(), "capture", "-i", "any"])
        .args(["-w", out.to_str().unwrap(), "-c", "30", "--duration", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let cap = Running::start(c);
    ns.replay(&trace, None);
    let (code, err) = cap.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("capturing on any (LinuxSll2)")
            && err.contains("filter: udp dst port 4791 or"),
        "{err}"
    );
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[20..24], &276u32.to_le_bytes(), "LINKTYPE_LINUX_SLL2");
    let got = frames_of(&out);
    assert_eq!(got.len(), 30);
    for (g, f) in got.iter().zip(&frames) {
        // SLL2: protocol (2), reserved (2), ifindex (4), ARPHRD (2), packet type (1),
        // address length (1), address (8); then the frame after its Ethernet header.
        assert_eq!(&g[0..2], &[0x08, 0x00]);
        assert_eq!(g[11], 6, "6-byte MAC");
        assert_eq!(&g[12..18], &f[6..12], "source MAC");
        assert_eq!(&g[20..], &f[14..], "network layer and up, byte for byte");
    }
}

/// `analyze -i` analyzes while capturing (and writes the frames with -w): a replayed
/// sample gives the numbers of its ground truth, and the file holds every frame.
#[test]
fn analyze_live_gives_the_truth_of_a_replayed_sample() {
    if !ready(&["tcpreplay"]) {
        return;
    }
    let dir = TempDir::new("analyze-live");
    let ns = Netns::new();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/loss-upstream.pcap");
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sample.with_extension("pcap.truth.json")).unwrap())
            .unwrap();
    let n = frames_of(&sample).len();
    let out = dir.path("live.pcap");
    let json = dir.path("report.json");
    let an = ns.analyze(
        &[
            "--format",
            "json",
            "-w",
            out.to_str().unwrap(),
            "-c",
            &n.to_string(),
            "--duration",
            "30",
        ],
        &json,
    );
    ns.replay(&sample, Some(2000));
    let (code, err) = an.finish(Duration::from_secs(40));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        frames_of(&out),
        frames_of(&sample),
        "the -w file holds every frame"
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {err}"));
    let totals = &report["totals"];
    assert_eq!(totals["frames"], n as u64);
    for key in [
        "nak_psn_seq",
        "psn_gap_events",
        "retransmitted_packets",
        "rnr_nak",
        "cnp",
        "ce_marked",
        "read_rerequests",
        "icrc_bad",
    ] {
        assert_eq!(totals[key], truth["observable"][key], "{key}: {err}");
    }
    assert!(err.contains("0 packets dropped by kernel"), "{err}");
}
