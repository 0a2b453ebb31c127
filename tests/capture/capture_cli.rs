//! `rocetap capture` argument and device errors, and `rocetap interfaces` against a fake
//! sysfs tree: one-line errors with a hint, exit 2, nothing written.

use crate::common;

use common::{is_root, rocetap, run_ok, skip, TempDir};
use std::path::Path;
use std::process::Command;

/// Exit 2, `rocetap: ...` containing `needle`, then at most a `hint:` line containing `hint`.
fn fails(out: &std::process::Output, needle: &str, hint: Option<&str>) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("rocetap: "), "{err}");
    assert!(lines[0].contains(needle), "expected {needle:?} in {err}");
    match hint {
        Some(h) => {
            assert_eq!(lines.len(), 2, "{err}");
            assert!(
                lines[1].starts_with("hint: ") && lines[1].contains(h),
                "{err}"
            );
        }
        None => assert!(lines.len() <= 2, "{err}"),
    }
}

/// A fake `/sys` with mlx5_0 (port 1 active, RoCE v1 and v2 GIDs on ens1f0np0) and
/// mlx5_1 (port 1 down, no netdev).
fn fake_sysfs(root: &Path) {
    use std::fs;
    let d = root.join("class/infiniband/mlx5_0");
    let p = d.join("ports/1");
    for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        fs::create_dir_all(p.join(sub)).unwrap();
    }
    fs::create_dir_all(d.join("device/net/ens1f0np0")).unwrap();
    fs::write(p.join("state"), "4: ACTIVE\n").unwrap();
    fs::write(p.join("link_layer"), "Ethernet\n").unwrap();
    for (i, g, t) in [
        ("0", "fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f", "IB/RoCE v1"),
        ("1", "fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f", "RoCE v2"),
        ("2", "0000:0000:0000:0000:0000:ffff:c612:0001", "IB/RoCE v1"),
        ("3", "0000:0000:0000:0000:0000:ffff:c612:0001", "RoCE v2"),
        ("4", "0000:0000:0000:0000:0000:0000:0000:0000", ""),
    ] {
        fs::write(p.join("gids").join(i), format!("{g}\n")).unwrap();
        fs::write(p.join("gid_attrs/types").join(i), format!("{t}\n")).unwrap();
        if !t.is_empty() {
            fs::write(p.join("gid_attrs/ndevs").join(i), "ens1f0np0\n").unwrap();
        }
    }
    let p1 = root.join("class/infiniband/mlx5_1/ports/1");
    fs::create_dir_all(&p1).unwrap();
    fs::write(p1.join("state"), "1: DOWN\n").unwrap();
    fs::write(p1.join("link_layer"), "InfiniBand\n").unwrap();
}

#[test]
fn interfaces_lists_rdma_devices_from_sysfs() {
    let d = TempDir::new("ifaces");
    fake_sysfs(&d.0);
    let out = rocetap(&["interfaces", "--sysfs-root", d.0.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // libpcap's own list first, like tcpdump -D.
    assert!(
        text.lines().next().is_some_and(|l| l.starts_with("1.")),
        "{text}"
    );
    let l = |needle: &str| {
        assert!(
            text.lines().any(|l| l.contains(needle)),
            "{needle:?} in\n{text}"
        );
    };
    l("mlx5_0 netdev ens1f0np0 — this libpcap cannot capture from it");
    l("  port 1: state ACTIVE, link layer Ethernet");
    l("    GID   0 fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f IB/RoCE v1 ens1f0np0");
    l("    GID   3 0000:0000:0000:0000:0000:ffff:c612:0001 RoCE v2 ens1f0np0");
    l("mlx5_1 netdev -");
    l("  port 1: state DOWN, link layer InfiniBand");
    assert_eq!(
        text.matches("    GID ").count(),
        4,
        "the zero GID is not listed: {text}"
    );
}

/// Names and values from sysfs with terminal controls in them (a device, a netdev, a
/// port state, a GID type) are listed escaped, never as raw ESC or BEL bytes.
#[test]
fn interfaces_escapes_hostile_sysfs_names() {
    use std::fs;
    let d = TempDir::new("ifaces-hostile");
    let dev = d.0.join("class/infiniband/mlx5_\u{1b}[2J");
    let p = dev.join("ports/1");
    for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        fs::create_dir_all(p.join(sub)).unwrap();
    }
    fs::create_dir_all(dev.join("device/net/ens\u{1b}[31m")).unwrap();
    fs::write(p.join("state"), "4: ACT\u{1b}]0;pwned\u{7}IVE\n").unwrap();
    fs::write(p.join("link_layer"), "Ethernet\n").unwrap();
    fs::write(
        p.join("gids/1"),
        "fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f\n",
    )
    .unwrap();
    fs::write(p.join("gid_attrs/types/1"), "RoCE v2\u{202e}\n").unwrap();
    fs::write(p.join("gid_attrs/ndevs/1"), "ens\u{1b}[31m\n").unwrap();
    let out = rocetap(&["interfaces", "--sysfs-root", d.0.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.stdout.iter().any(|&b| b == 0x1b || b == 0x07),
        "raw ESC or BEL in\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\u{202e}'), "{text}");
    for want in [
        "mlx5_\\x1b[2J netdev ens\\x1b[31m — ",
        "  port 1: state ACT\\x1b]0;pwned\\x07IVE, link layer Ethernet",
        "    GID   1 fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f RoCE v2\\u{202e} ens\\x1b[31m",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

#[test]
fn rdma_device_without_rdma_libpcap_explains_why_and_what_to_do() {
    if !is_root() {
        skip("needs root (without CAP_NET_RAW the permission error comes first)");
        return;
    }
    let d = TempDir::new("rdma-err");
    fake_sysfs(&d.0);
    let out_file = d.path("x.pcap");
    for name in ["mlx5_0", "mlx5_0:1"] {
        let out = rocetap(&[
            "capture",
            "-i",
            name,
            "-w",
            out_file.to_str().unwrap(),
            "--sysfs-root",
            d.0.to_str().unwrap(),
        ]);
        fails(
            &out,
            &format!("capturing on {name}: {name} is an RDMA device, and this libpcap cannot capture from RDMA devices"),
            Some("mlx5_0 is the RDMA device of netdev ens1f0np0"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Debian and Ubuntu"), "{err}");
        for alt in [
            "libpcap built with RDMA support",
            "mellanox/tcpdump-rdma",
            "ibdump -d mlx5_0 -w - | rocetap analyze -r -",
        ] {
            assert!(err.contains(alt), "{alt:?} in {err}");
        }
        assert!(!out_file.exists());
    }
}

/// `--lanes` takes 1-64, and refuses an RDMA device (libpcap's RDMA sniffer has no
/// AF_PACKET socket to split) before opening anything; `any` (Linux cooked) is refused by
/// the open, with what the kernel path needs.
#[test]
fn lanes_errors() {
    let d = TempDir::new("cap-lanes-err");
    fake_sysfs(&d.0);
    let f = d.path("x.pcap");
    let f = f.to_str().unwrap();
    for bad in ["0", "65", "two"] {
        let out = rocetap(&["capture", "-i", "lo", "-w", f, "--lanes", bad]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--lanes"), "{err}");
    }
    let root = d.0.to_str().unwrap();
    let out = rocetap(&[
        "capture",
        "-i",
        "mlx5_0",
        "-w",
        f,
        "--lanes",
        "2",
        "--sysfs-root",
        root,
    ]);
    fails(
        &out,
        "capture: --lanes 2: mlx5_0 is an RDMA device",
        Some("capture its netdev in lanes"),
    );
    if !is_root() {
        skip("the rest needs root (opening `any`)");
        return;
    }
    let out = rocetap(&["capture", "-i", "any", "-w", f, "--lanes", "2"]);
    fails(
        &out,
        "capturing on any in lanes: lanes need an Ethernet interface",
        Some("AF_PACKET"),
    );
    assert!(!Path::new(f).exists());
}

#[test]
fn unknown_device_and_bad_filter() {
    if !is_root() {
        skip("needs root (without CAP_NET_RAW the permission error comes first)");
        return;
    }
    let d = TempDir::new("cap-args-root");
    let f = d.path("x.pcap");
    let f = f.to_str().unwrap();
    let out = rocetap(&["capture", "-i", "rtcap-nonexistent0", "-w", f]);
    fails(
        &out,
        "capturing on rtcap-nonexistent0: no such device",
        Some("rocetap interfaces"),
    );
    let out = rocetap(&["capture", "-i", "lo", "-w", f, "udp", "port"]);
    fails(&out, "capture filter \"udp port\" on lo", Some("BPF"));
    assert!(!Path::new(f).exists());
}

#[test]
fn argument_errors() {
    let d = TempDir::new("cap-args");
    let existing = d.path("old.pcap");
    std::fs::write(&existing, b"precious").unwrap();
    let e = existing.to_str().unwrap();
    let out = rocetap(&["capture", "-i", "lo", "-w", e]);
    fails(&out, "the file exists", Some("--force"));
    assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
    // With a ring, every name of the ring is checked before anything is captured.
    let ring2 = d.path("ring.pcap2");
    std::fs::write(&ring2, b"old").unwrap();
    let r = d.path("ring.pcap");
    let out = rocetap(&[
        "capture",
        "-i",
        "lo",
        "-w",
        r.to_str().unwrap(),
        "-C",
        "1",
        "-W",
        "3",
    ]);
    fails(&out, "ring.pcap2: the file exists", Some("--force"));
    assert!(!r.exists());
    let p = d.path("new.pcap");
    let p = p.to_str().unwrap();
    fails(
        &rocetap(&["capture", "-i", "lo", "-w", p, "--annotate"]),
        "--annotate needs pcapng",
        Some("--format pcapng"),
    );
    fails(
        &rocetap(&["capture", "-i", "lo", "-w", p, "-W", "3"]),
        "-W needs -C or -G",
        None,
    );
    fails(
        &rocetap(&["capture", "-i", "lo", "-w", p, "-C", "0"]),
        "-C 0",
        None,
    );
    fails(
        &rocetap(&["capture", "-i", "lo", "-w", p, "--duration", "0"]),
        "--duration",
        None,
    );
    // clap's own errors also exit 2.
    let out = rocetap(&["capture", "-w", p]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new(p).exists());
}

#[test]
fn output_directory_the_dropped_user_cannot_write_is_a_clear_error() {
    if !is_root() {
        skip("needs root (to drop to SUDO_UID)");
        return;
    }
    // Root-owned 0755: after dropping to SUDO_UID 65534 rocetap cannot create files here.
    let d = TempDir::new("cap-perm");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = d.path("x.pcap");
    let out = Command::new(common::bin())
        .args(["capture", "-i", "lo", "-w", f.to_str().unwrap(), "-c", "1"])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .output()
        .unwrap();
    fails(
        &out,
        &format!("writing {}: Permission denied", f.display()),
        Some("SUDO_UID"),
    );
    assert!(!f.exists());
}

/// One little-endian pcapng block of `kind` around `body` (padded to 32 bits).
fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let pad = (4 - body.len() % 4) % 4;
    let len = (12 + body.len() + pad) as u32;
    let mut b = kind.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(body);
    b.extend_from_slice(&[0; 3][..pad]);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// A little-endian pcapng option.
fn ng_option(code: u16, value: &[u8]) -> Vec<u8> {
    let mut o = code.to_le_bytes().to_vec();
    o.extend_from_slice(&(value.len() as u16).to_le_bytes());
    o.extend_from_slice(value);
    o.extend_from_slice(&[0; 3][..(4 - value.len() % 4) % 4]);
    o
}

/// A pcapng section: interface 0 counts 2^-20 s and is 1000 s late (`if_tsresol` with
/// the power-of-two flag, `if_tsoffset`), interface 1 counts µs (no options); two
/// Enhanced Packet Blocks on interface 0, one obsolete Packet Block (type 2) on 1.
fn pcapng_units_offsets_obsolete() -> Vec<u8> {
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    let mut f = ng_block(0x0A0D_0D0A, &shb);
    let idb = |opts: &[u8]| {
        let mut b = vec![1, 0, 0, 0, 0xff, 0xff, 0, 0];
        b.extend_from_slice(opts);
        ng_block(1, &b)
    };
    let mut opts = ng_option(9, &[0x80 | 20]);
    opts.extend(ng_option(14, &1000i64.to_le_bytes()));
    opts.extend(ng_option(0, &[]));
    f.extend(idb(&opts));
    f.extend(idb(&[]));
    let frame = common::pcap_bytes(&[]); // any bytes: only the times are read here
    let t0: u64 = 1_700_000_000;
    for ts in [(t0 << 20) + 3, (t0 << 20) + 32_347] {
        let mut b = 0u32.to_le_bytes().to_vec();
        for x in [
            (ts >> 32) as u32,
            ts as u32,
            frame.len() as u32,
            frame.len() as u32,
        ] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&frame);
        f.extend(ng_block(6, &b));
    }
    let ts = t0 * 1_000_000 + 30_848;
    let mut b = vec![1, 0, 0, 0]; // interface 1 (16 bits), no drops (16 bits)
    for x in [
        (ts >> 32) as u32,
        ts as u32,
        frame.len() as u32,
        frame.len() as u32,
    ] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b.extend_from_slice(&frame);
    f.extend(ng_block(2, &b));
    f
}

#[test]
fn pcapng_time_units_offsets_and_obsolete_blocks_read_as_tshark_reads_them() {
    let d = TempDir::new("ng-units");
    let p = d.path("units.pcapng");
    std::fs::write(&p, pcapng_units_offsets_obsolete()).unwrap();
    let p = p.to_str().unwrap();
    let out = rocetap(&["decode", "--format", "csv", p]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (h, rows) = common::parse_csv(&String::from_utf8_lossy(&out.stdout));
    let col = h.iter().position(|x| x == "frame.time_epoch").unwrap();
    let ours: Vec<&str> = rows.iter().map(|r| r[col].as_str()).collect();
    // 3 / 2^20 s = 2861.02 ns and 32347 / 2^20 s = 30848503.1 ns, truncated; + 1000 s.
    assert_eq!(
        ours,
        [
            "1700001000.000002861",
            "1700001000.030848503",
            "1700000000.030848000"
        ]
    );
    if !common::have("tshark") {
        skip("tshark not installed: the times were checked against computed values only");
        return;
    }
    let t = Command::new("tshark")
        .args(["-r", p, "-T", "fields", "-e", "frame.time_epoch"])
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&t.stdout);
    assert_eq!(theirs.lines().collect::<Vec<_>>(), ours, "tshark: {theirs}");
}

#[test]
fn a_damaged_pcapng_block_is_described_in_plain_words() {
    let d = TempDir::new("ng-damage");
    let mut f = pcapng_units_offsets_obsolete();
    let n = f.len();
    f[n - 1] ^= 0x40; // the last block's trailing length no longer matches its first
    let p = d.path("damaged.pcapng");
    std::fs::write(&p, &f).unwrap();
    let out = rocetap(&["analyze", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    fails(
        &out,
        "corrupt capture after 2 frames: damaged block at byte",
        None,
    );
    assert!(err.contains("length fields disagree"), "{err}");
    for word in ["Verify", "Eof", "Tag", "Nom", "unparseable"] {
        assert!(!err.contains(word), "{word:?} in {err}");
    }
}

#[test]
fn a_capture_out_of_time_order_says_its_span_honestly() {
    let d = TempDir::new("reversed");
    // Two frames, the second timed 1.25 s before the first.
    let mut f = common::pcap_bytes(&[vec![0u8; 60], vec![0u8; 60]]);
    f[24..32].copy_from_slice(&[0x0a, 0xf1, 0x53, 0x65, 0x10, 0x27, 0, 0]); // +10,000 µs
    let second = 24 + 16 + 60;
    f[second..second + 8].copy_from_slice(&[0x08, 0xf1, 0x53, 0x65, 0xc0, 0x98, 0x0b, 0]); // -1.25 s
    let p = d.path("reversed.pcap");
    std::fs::write(&p, &f).unwrap();
    let p = p.to_str().unwrap();
    let out = rocetap(&["analyze", p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let first = text.lines().next().unwrap();
    assert!(
        first.contains("2 frames, 0 RoCE packets over 1.250000 s (earliest to latest frame: 1 frame is timed before the one read before it);"),
        "{first}"
    );
    let out = rocetap(&["analyze", "--format", "json", p]);
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(json.contains("\"duration_s\": 1.25"), "{json}");
    // In time order, nothing is added.
    let out = rocetap(&["analyze", &common::sample("sbr-arp.pcap")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("earliest to latest"), "{text}");
}

/// Waits (at most `secs`) for `child` to exit; its code, stdout and stderr.
fn wait_bounded(mut child: std::process::Child, secs: u64) -> (Option<i32>, String, String) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > end {
            let _ = child.kill();
            panic!("rocetap did not stop within {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `analyze` of a FIFO or of stdin whose writer keeps it open: SIGINT or SIGTERM ends the
/// reading, and the report of the frames read is printed (exit 0, or 1 when a `--fail-on`
/// rule fails), as tshark does.
#[test]
fn analyze_of_an_endless_pipe_reports_what_it_read_on_sigint_or_sigterm() {
    use std::io::Write;
    use std::process::Stdio;
    let d = TempDir::new("analyze-sigint");
    let sample = std::fs::read(common::sample("sbr-arp.pcap")).unwrap();
    for (k, (via, sig, rule, want)) in [
        ("fifo", "INT", None, 0),
        ("stdin", "TERM", None, 0),
        ("stdin", "INT", None, 0),
        ("fifo", "TERM", Some("frames > 0"), 1),
    ]
    .into_iter()
    .enumerate()
    {
        let fifo = d.path(&format!("in-{k}.fifo"));
        let mut c = Command::new(common::bin());
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .arg("analyze");
        if let Some(r) = rule {
            c.args(["--fail-on", r]);
        }
        let (child, mut writer): (_, Box<dyn Write>) = if via == "fifo" {
            run_ok(&["mkfifo", fifo.to_str().unwrap()]);
            let child = c.arg(&fifo).spawn().unwrap();
            // Opening blocks until rocetap opened the other end.
            (child, Box::new(std::fs::File::create(&fifo).unwrap()))
        } else {
            let mut child = c.args(["-r", "-"]).stdin(Stdio::piped()).spawn().unwrap();
            let w = child.stdin.take().unwrap();
            (child, Box::new(w))
        };
        writer.write_all(&sample).unwrap();
        writer.flush().unwrap();
        // The writer stays open: only the signal ends the reading.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        run_ok(&["kill", &format!("-{sig}"), &child.id().to_string()]);
        let (code, out, err) = wait_bounded(child, 10);
        drop(writer);
        assert_eq!(code, Some(want), "{via} SIG{sig}: {err}");
        let first = out.lines().next().unwrap_or_default();
        assert!(
            first.contains(": 136 frames, 78 RoCE packets"),
            "{via} SIG{sig}: {out}"
        );
        assert!(
            err.contains(
                "rocetap: interrupted: the report covers the 136 frames read before the signal"
            ),
            "{via} SIG{sig}: {err}"
        );
        assert!(!err.contains("cut short"), "{err}");
    }
}

/// Text from a capture file or its name reaches a terminal escaped: a file name with
/// terminal controls in the text report, pcapng comments and interface names (the
/// fuzz seed's carry clear-screen, set-title and colour sequences) nowhere; JSON carries
/// the name as it is, encoded.
#[test]
fn file_names_and_pcapng_texts_reach_the_terminal_escaped() {
    let d = TempDir::new("hostile-name");
    let seed = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds/capture_file/ng-comments-le.pcapng");
    let p = d.path("a\x1b[2Jb\x1b]0;x\x07.pcapng");
    std::fs::copy(&seed, &p).unwrap();
    let p = p.to_str().unwrap();
    for args in [
        &["analyze", "-v", p][..],
        &["analyze", "--events", p],
        &["decode", "-v", p],
        &["decode", p],
    ] {
        let out = rocetap(args);
        assert!(out.status.success(), "{args:?}");
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !bytes.iter().any(|b| *b == 0x1b || *b == 0x07),
                "{args:?} {what}: {}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    let text = String::from_utf8_lossy(&rocetap(&["analyze", p]).stdout).into_owned();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("a\\x1b[2Jb\\x1b]0;x\\x07.pcapng: 1 frames"),
        "{text}"
    );
    let json =
        String::from_utf8_lossy(&rocetap(&["analyze", "--format", "json", p]).stdout).into_owned();
    assert!(
        json.contains("a\\u001b[2Jb\\u001b]0;x\\u0007.pcapng"),
        "{json}"
    );
    // Cut in the middle of its packet block: the warning names it, escaped.
    let bytes = std::fs::read(seed.with_file_name("ng-tsresol-tsoffset-le.pcapng")).unwrap();
    std::fs::write(p, &bytes[..bytes.len() - 8]).unwrap();
    let out = rocetap(&["analyze", p]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a\\x1b[2Jb\\x1b]0;x\\x07.pcapng was cut short"),
        "{err}"
    );
    assert!(!out.stderr.contains(&0x1b), "{err}");
}
