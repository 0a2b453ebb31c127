//! `rocetap capture` argument and device errors, and `rocetap interfaces` against a fake
//! sysfs tree: one-line errors with a hint, exit 2, nothing written.

mod common;

use common::{is_root, rocetap, skip, TempDir};
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
        )
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
