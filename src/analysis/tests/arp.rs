//! ARP and the reply path: unanswered and cross-subnet asks, replies leaving another interface,
//! duplicates, bounded tables.

use super::*;

#[test]
fn arp_unanswered_and_cross_subnet_requests() {
    let arp = |op, s: [u8; 4], t: [u8; 4]| {
        let mut d = frame();
        d.arp = Some(ArpRepr::ethernet(
            op,
            [0xee; 6],
            Ipv4Addr::from(s),
            [0; 6],
            Ipv4Addr::from(t),
        ));
        d
    };
    let r = run(&[
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [198, 19, 8, 1], [198, 18, 1, 5]),
        arp(ArpOp::Request, [10, 0, 0, 1], [10, 0, 0, 2]),
        arp(ArpOp::Reply, [10, 0, 0, 2], [10, 0, 0, 1]),
    ]);
    let t = r.totals;
    assert_eq!(t.arp_requests, 4);
    assert_eq!(t.arp_replies, 1);
    assert_eq!(t.arp_unanswered, 3);
    assert_eq!(t.arp_cross_subnet, 1);
    assert_eq!(t.arp_cross_subnet_unanswered, 1);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code() == "arp_cross_subnet_unanswered" && f.severity == Severity::Error));
}

/// An ARP frame from `mac` (sender `s`, target `t`).
fn arp_from(op: ArpOp, mac: [u8; 6], s: [u8; 4], t: [u8; 4]) -> Decoded {
    let mut d = frame();
    d.ethertype = Some(0x0806);
    d.arp = Some(ArpRepr::ethernet(
        op,
        mac,
        Ipv4Addr::from(s),
        [0; 6],
        Ipv4Addr::from(t),
    ));
    d
}

/// A plain IPv4 (ICMP) packet `src -> dst`.
fn icmp(src: [u8; 4], dst: [u8; 4]) -> Decoded {
    let mut d = frame();
    d.ip = Some(IpRepr {
        src: IpAddr::V4(Ipv4Addr::from(src)),
        dst: IpAddr::V4(Ipv4Addr::from(dst)),
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: 64,
        flow_label: 0,
        ident: 0,
        protocol: 1,
        header_len: 20,
        total_len: 84,
        fragmented: false,
    });
    d.stop.kind = dissectors::StopKind::Unsupported;
    d
}

/// Feeds (time, interface, frame), naming interfaces 1.. as `if1`, `if2`, ...
fn run_ifaces(frames: &[(u64, u32, Decoded)]) -> Report {
    let mut a = Analyzer::new(Config::default());
    for i in 1..=4 {
        a.name_iface(i, format!("if{i}"));
    }
    for (t, i, d) in frames {
        a.ingest(*t, *i, d);
    }
    a.finish()
}

const HOST_MAC: [u8; 6] = [0xee; 6];
const POD_MAC: [u8; 6] = [0x0a, 0x58, 0, 0, 0, 5];
const VF_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
/// A pod address (/32 behind a veth), the host's address in another /24, a link-local
/// gateway.
const POD: [u8; 4] = [10, 40, 1, 5];
const HOST: [u8; 4] = [10, 77, 3, 1];
const GW: [u8; 4] = [169, 254, 1, 1];

fn arp_findings(r: &Report) -> Vec<(&'static str, Severity)> {
    r.findings
        .iter()
        .filter(|f| f.code().starts_with("arp"))
        .map(|f| (f.code(), f.severity))
        .collect()
}

#[test]
fn link_local_gateway_is_never_cross_subnet() {
    let r = run_ifaces(&[
        (1_000, 1, arp_from(ArpOp::Request, POD_MAC, POD, GW)),
        (2_000, 1, arp_from(ArpOp::Reply, HOST_MAC, GW, POD)),
        // and not when it is left unanswered either
        (3_000, 2, arp_from(ArpOp::Request, POD_MAC, POD, GW)),
        (4_000, 2, arp_from(ArpOp::Request, HOST_MAC, GW, POD)),
    ]);
    let t = r.totals;
    assert_eq!(t.arp_requests, 3);
    assert_eq!(t.arp_cross_subnet, 0);
    assert_eq!(t.arp_cross_subnet_unanswered, 0);
    assert!(!r.findings.iter().any(|f| f.code().contains("cross_subnet")));
}

#[test]
fn unanswered_cross_subnet_ask_is_an_error_and_an_answered_one_info() {
    let mut frames = Vec::new();
    // if1: the host asks for the pod from another subnet three times, no reply.
    for k in 0..3 {
        frames.push((
            1_000_000_000 * k,
            1,
            arp_from(ArpOp::Request, HOST_MAC, HOST, POD),
        ));
    }
    // if2: the same question, answered.
    frames.push((
        5_000_000_000,
        2,
        arp_from(ArpOp::Request, HOST_MAC, HOST, POD),
    ));
    frames.push((5_000_100_000, 2, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)));
    let r = run_ifaces(&frames);
    let t = r.totals;
    assert_eq!(t.arp_cross_subnet, 2);
    assert_eq!(t.arp_cross_subnet_unanswered, 1);
    assert_eq!(t.arp_reply_path_mismatch, 0);
    assert_eq!(
        arp_findings(&r),
        [
            ("arp_cross_subnet_unanswered", Severity::Error),
            ("arp_unanswered", Severity::Warning),
            ("arp_cross_subnet", Severity::Info),
        ]
    );
    let e = &message(&r.findings[0], &r);
    assert!(
        e.contains("who-has 10.40.1.5")
            && e.contains("10.77.3.1")
            && e.contains("if1")
            && e.contains("x3")
            && e.contains("sbr"),
        "{e}"
    );
    let s = &r.arp_symptoms[0];
    assert_eq!(
        (s.kind().code(), s.iface.as_str(), s.count),
        ("arp_cross_subnet_unanswered", "if1", 3)
    );
    assert_eq!(s.evidence[1].t_ns, 2_000_000_000, "last retry");
    let per_iface: Vec<(u64, u64)> = r
        .arp
        .iter()
        .map(|a| (a.cross_subnet_requests, a.cross_subnet_unanswered))
        .collect();
    assert_eq!(per_iface, [(1, 1), (1, 0)]);
}

#[test]
fn an_answered_cross_subnet_ask_retried_without_reply_is_unanswered_again() {
    let mut frames = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
    ];
    // Two unanswered re-probes are ordinary; the third makes it a symptom.
    for (k, expect) in [(0u64, 0u64), (1, 0), (2, 1)] {
        frames.push((10_000 + k, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)));
        let r = run_ifaces(&frames);
        assert_eq!(
            r.totals.arp_cross_subnet_unanswered,
            expect,
            "after {} retries",
            k + 1
        );
        assert_eq!(r.totals.arp_unanswered, 0, "the ask was answered once");
    }
}

/// The loose-rp_filter pattern: the pod answers the host's ARP and receives its echo
/// requests on if1, but its own traffic to the host leaves if2 (and asks there).
fn loose_reply_path() -> Vec<(u64, u32, Decoded)> {
    let mut f = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
    ];
    for k in 0..3u64 {
        let t = 10_000 + k * 1_000_000_000;
        f.push((t, 1, icmp(HOST, POD)));
        f.push((t + 100, 2, arp_from(ArpOp::Request, VF_MAC, POD, HOST)));
    }
    f
}

#[test]
fn replies_leaving_another_interface_are_a_reply_path_mismatch() {
    let r = run_ifaces(&loose_reply_path());
    let t = r.totals;
    assert_eq!(t.arp_reply_path_mismatch, 1);
    assert_eq!(
        t.arp_duplicate_address, 0,
        "two interfaces, two MACs: no conflict"
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.code() == "arp_reply_path_mismatch")
        .expect("finding");
    assert_eq!(f.severity, Severity::Error);
    let m = message(f, &r);
    assert!(
        m.starts_with("replies to 10.77.3.1 leave if2 instead of if1"),
        "{m}"
    );
    let s = r
        .arp_symptoms
        .iter()
        .find(|s| s.kind() == ArpSymptomKind::ReplyPathMismatch)
        .unwrap();
    assert_eq!(s.other_iface.as_deref(), Some("if1"));
    assert_eq!(s.t_ns, 10_100, "the first frame that left the wrong way");
    assert!(seen(&s.evidence[1].seen).contains("who-has 10.77.3.1 tell 10.40.1.5 x3"));
    assert!(r
        .events
        .iter()
        .any(|e| e.kind == EventKind::ArpReplyPathMismatch && e.iface == Some(2)));
}

#[test]
fn replies_by_the_same_interface_or_a_mirrored_capture_are_no_mismatch() {
    // Fixed: the pod answers and replies on if1; its RDMA interface talks on if2 from
    // its own address only.
    let mut fixed = vec![
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
        (3_000, 1, icmp(HOST, POD)),
        (4_000, 1, icmp(POD, HOST)),
    ];
    let vf = [10, 77, 3, 11];
    fixed.push((5_000, 2, arp_from(ArpOp::Request, VF_MAC, vf, HOST)));
    fixed.push((6_000, 2, arp_from(ArpOp::Reply, HOST_MAC, HOST, vf)));
    fixed.push((7_000, 2, icmp(vf, HOST)));
    fixed.push((8_000, 2, icmp(HOST, vf)));
    let r = run_ifaces(&fixed);
    assert_eq!(r.totals.arp_reply_path_mismatch, 0);
    assert_eq!(arp_findings(&r), [("arp_cross_subnet", Severity::Info)]);
    // The broken pattern captured twice on the request side (pod veth and host veth)
    // is still one mismatch, and the same link seen twice is none.
    let mut twice = Vec::new();
    for (t, i, d) in loose_reply_path() {
        if i == 1 {
            twice.push((t, 3, d));
        }
        twice.push((t, i, d));
    }
    assert_eq!(run_ifaces(&twice).totals.arp_reply_path_mismatch, 1);
    let mut mirrored = Vec::new();
    for (t, _, d) in fixed.iter().take(4) {
        mirrored.push((*t, 1, *d));
        mirrored.push((*t, 3, *d));
    }
    assert_eq!(run_ifaces(&mirrored).totals.arp_reply_path_mismatch, 0);
}

#[test]
fn plain_ip_without_arp_state_is_not_followed() {
    // No ARP: IP frames alone never create state (they stay cheap).
    let r = run_ifaces(&[(1_000, 1, icmp(HOST, POD)), (2_000, 2, icmp(POD, HOST))]);
    assert_eq!(r.totals.arp_reply_path_mismatch, 0);
    assert_eq!(r.totals.arp_state_dropped, 0);
}

#[test]
fn an_address_claimed_by_two_macs_on_one_interface_is_a_duplicate() {
    let other: [u8; 6] = [0x02, 0xde, 0xad, 0, 0, 1];
    let r = run_ifaces(&[
        (1_000, 1, arp_from(ArpOp::Request, HOST_MAC, HOST, POD)),
        (2_000, 1, arp_from(ArpOp::Reply, POD_MAC, POD, HOST)),
        (3_000, 1, arp_from(ArpOp::Reply, other, POD, HOST)),
        // again: still one conflict
        (4_000, 1, arp_from(ArpOp::Reply, other, POD, HOST)),
        // gratuitous, on another interface: a different segment, no conflict
        (5_000, 2, arp_from(ArpOp::Request, VF_MAC, POD, POD)),
    ]);
    assert_eq!(r.totals.arp_duplicate_address, 1);
    let f = r
        .findings
        .iter()
        .find(|f| f.code() == "arp_duplicate_address")
        .expect("finding");
    assert_eq!(f.severity, Severity::Warning);
    let m = message(f, &r);
    assert!(
        m.contains("0a:58:00:00:00:05") && m.contains("02:de:ad:00:00:01"),
        "{m}"
    );
    assert!(m.contains("10.40.1.5") && m.contains("if1"));
}

#[test]
fn arp_tables_are_capped_and_what_does_not_fit_is_counted() {
    let mut a = Analyzer::new(Config::default());
    let n = 6_000u32;
    for i in 0..n {
        let t = [10, 9, (i >> 8) as u8, i as u8];
        a.ingest(
            u64::from(i),
            1,
            &arp_from(ArpOp::Request, HOST_MAC, [10, 9, 255, 1], t),
        );
    }
    // IP to the addresses ARP showed still works through the table that exists.
    a.ingest(1 << 40, 1, &icmp([10, 9, 0, 1], [10, 9, 255, 1]));
    let r = a.finish();
    assert_eq!(r.totals.arp_requests, u64::from(n));
    assert_eq!(r.totals.arp_unanswered, u64::from(n), "asks fit");
    assert!(
        r.totals.arp_state_dropped > 0,
        "address pairs did not all fit"
    );
}
