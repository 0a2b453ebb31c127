//! The words of the findings the other netcheck tests do not show whole, held to golden
//! texts in `tests/golden/netcheck/` (`UPDATE_EXPECT=1 cargo test --test netcheck
//! netcheck_words::` rewrites them): `arp-sysctl` (both kinds), a reply path blocked by
//! `arp_ignore 2`, the sysctl effects of `-v`; `roce-netdev`, the `roce-mtu` note,
//! `roce-counters`; `qos-pfc`, `qos-traffic-class`; `capture-duplicate-address` and
//! `capture-arp-unanswered`; the NAD lint's addresses in use (a PF's gateway), sbr peers
//! behind the ToR and PF MTUs. Inputs are the QoS fixtures (`tests/fixtures/qos/`)
//! changed in a scratch copy, NAD and nodes files and a capture of ARP frames built here.

use crate::common::{pcap_bytes, rocetap, TempDir};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qos")
        .join(rel)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            fs::copy(e.path(), t).unwrap();
        }
    }
}

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// netcheck's text output and exit code, the scratch directory's path replaced by `T`
/// and the repository's by `REPO`.
fn run(t: &TempDir, args: &[&str]) -> String {
    let mut a = vec!["netcheck"];
    a.extend(args);
    let o = rocetap(&a);
    let text = format!(
        "{}exit {}\n",
        String::from_utf8_lossy(&o.stdout),
        o.status.code().unwrap()
    );
    text.replace(&t.0.display().to_string(), "T")
        .replace(env!("CARGO_MANIFEST_DIR"), "REPO")
}

/// Compares `got` with `tests/golden/netcheck/NAME.txt` (with UPDATE_EXPECT=1: writes it).
fn golden(name: &str, got: &str) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/netcheck")
        .join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        write(&p, got);
        return;
    }
    let want = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(got, want, "{} differs", p.display());
}

#[test]
fn arp_sysctls_and_their_effects() {
    let t = TempDir::new("words-arp");
    let st = t.path("state");
    copy_dir(&fixture("good/state"), &st);
    write(
        &st.join("sysctl.json"),
        r#"{"net.ipv4.conf.all.rp_filter": "1", "net.ipv4.conf.all.arp_ignore": "0",
            "net.ipv4.conf.all.arp_announce": "0", "net.ipv4.conf.all.arp_filter": "0",
            "net.ipv4.conf.eth0.arp_ignore": "2", "net.ipv4.conf.eth0.arp_announce": "2",
            "net.ipv4.conf.net1.arp_ignore": "8", "net.ipv4.conf.net1.arp_filter": "1",
            "net.ipv4.conf.net1.rp_filter": "2"}"#,
    );
    let st_s = st.display().to_string();
    golden("arp-sysctl", &run(&t, &["--from", &st_s, "-v"]));
    // eth0 a /32 (a Calico pod's): arp_ignore 2 leaves no sender that qualifies
    let addr = fs::read_to_string(st.join("addr.json")).unwrap();
    let addr = addr.replacen("\"prefixlen\": 24", "\"prefixlen\": 32", 1);
    write(&st.join("addr.json"), &addr);
    golden("arp-sysctl-32", &run(&t, &["--from", &st_s]));
}

#[test]
fn roce_readiness_words() {
    let t = TempDir::new("words-roce");
    let sys = t.path("sys");
    copy_dir(&fixture("good/sys"), &sys);
    let port = sys.join("class/infiniband/mlx5_2/ports/1");
    for c in ["out_of_sequence", "packet_seq_err", "local_ack_timeout_err"] {
        write(&port.join("hw_counters").join(c), "7\n");
    }
    // a netdev MTU of 1500 and no PF: the RoCE MTU note
    write(&port.join("active_mtu"), "1024 (3)\n");
    write(&sys.join("class/net/net1/mtu"), "1500\n");
    fs::remove_dir_all(sys.join("class/net/net1/device")).unwrap();
    let st = t.path("state");
    copy_dir(&fixture("good/state"), &st);
    let addr = fs::read_to_string(st.join("addr.json")).unwrap();
    write(
        &st.join("addr.json"),
        &addr.replace("\"mtu\": 9000", "\"mtu\": 1500"),
    );
    let (st, sys_s) = (st.display().to_string(), sys.display().to_string());
    golden("roce", &run(&t, &["--from", &st, "--sysfs-root", &sys_s]));
    // no GID bound to a netdev
    for e in fs::read_dir(port.join("gid_attrs/ndevs")).unwrap() {
        fs::remove_file(e.unwrap().path()).unwrap();
    }
    golden(
        "roce-netdev",
        &run(&t, &["--from", &st, "--sysfs-root", &sys_s]),
    );
}

#[test]
fn qos_pfc_and_traffic_class_words() {
    let t = TempDir::new("words-qos");
    let sys = t.path("sys");
    copy_dir(&fixture("bad/sys"), &sys);
    write(
        &sys.join("class/infiniband/mlx5_2/tc/1/traffic_class"),
        "Global tclass=0\n",
    );
    let dcb = t.path("dcb");
    copy_dir(&fixture("bad/dcb"), &dcb);
    let (state, sys_s, dcb_s) = (
        fixture("bad/state").display().to_string(),
        sys.display().to_string(),
        dcb.display().to_string(),
    );
    golden(
        "qos-traffic-class",
        &run(
            &t,
            &[
                "--from",
                &state,
                "--sysfs-root",
                &sys_s,
                "--qos-from",
                &dcb_s,
            ],
        ),
    );
    let pfc = fs::read_to_string(dcb.join("net1.dcb-pfc")).unwrap();
    write(&dcb.join("net1.dcb-pfc"), &pfc.replace("3:on", "3:off"));
    golden(
        "qos-pfc",
        &run(
            &t,
            &[
                "--from",
                &state,
                "--sysfs-root",
                &sys_s,
                "--qos-from",
                &dcb_s,
            ],
        ),
    );
}

/// An Ethernet ARP frame: `op` 1 request, 2 reply.
fn arp(op: u16, smac: [u8; 6], sip: [u8; 4], tmac: [u8; 6], tip: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&if op == 1 { [0xff; 6] } else { tmac });
    f.extend_from_slice(&smac);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&smac);
    f.extend_from_slice(&sip);
    f.extend_from_slice(&tmac);
    f.extend_from_slice(&tip);
    f.extend_from_slice(&[0; 18]);
    f
}

#[test]
fn capture_duplicate_address_and_unanswered_arp_words() {
    let t = TempDir::new("words-capture");
    let (m1, m2, m3) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 3]);
    let (asker, dup) = ([192, 0, 2, 1], [192, 0, 2, 5]);
    let mut frames = Vec::new();
    for _ in 0..3 {
        frames.push(arp(1, m3, asker, [0; 6], [192, 0, 2, 9]));
    }
    frames.push(arp(1, m3, asker, [0; 6], dup));
    frames.push(arp(2, m1, dup, m3, asker));
    frames.push(arp(2, m2, dup, m3, asker));
    let cap = t.path("arp.pcap");
    fs::write(&cap, pcap_bytes(&frames)).unwrap();
    let cap = cap.display().to_string();
    golden("capture-arp", &run(&t, &["--capture", &cap]));
}

#[test]
fn nad_words_of_whose_addresses_peers_and_pf_mtus() {
    let t = TempDir::new("words-nad");
    // rail 0 with sbr and no IPAM gateway, the ToR's address not excluded, a VF MTU above
    // the PF's
    let nad = t.path("nad.yaml");
    write(
        &nad,
        r#"apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: rdma-rail0
  namespace: training
  annotations:
    k8s.v1.cni.cncf.io/resourceName: nvidia.com/rdma_rail0
spec:
  config: '{"cniVersion": "0.3.1", "name": "rdma-rail0", "plugins": [{"type": "sriov", "mtu": 9500, "ipam": {"type": "whereabouts", "range": "198.51.100.0/24", "exclude": ["198.51.100.1/32", "198.51.100.3/32", "198.51.100.4/32"]}}, {"type": "sbr"}]}'
"#,
    );
    // node1 routes 198.18.0.0/15 through its PF's gateway (the ToR)
    let nodes = t.path("nodes.yaml");
    write(
        &nodes,
        "nodes:\n  node1:\n    ens1f0: {address: 198.51.100.1/24, mtu: 9000, gateway: 198.51.100.254, routes: [198.18.0.0/15]}\n  node2:\n    ens1f0: {address: 198.51.100.2/24, mtu: 9000, gateway: 198.51.100.254}\n",
    );
    // no PF MTU known: the policy's spec.mtu holds the VF's
    let bare = t.path("nodes-no-mtu.yaml");
    write(
        &bare,
        "nodes:\n  node1:\n    ens1f0: {address: 198.51.100.1/24}\n",
    );
    let policies =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nad/policies.yaml");
    let (nad, policies) = (nad.display().to_string(), policies.display().to_string());
    for (name, nodes) in [("nad", nodes), ("nad-policy-mtu", bare)] {
        let nodes = nodes.display().to_string();
        golden(
            name,
            &run(
                &t,
                &[
                    "--nad",
                    &nad,
                    "--sriov-policy",
                    &policies,
                    "--nodes",
                    &nodes,
                ],
            ),
        );
    }
}
