//! The words of findings and ARP symptoms.

use super::*;

const X: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 5);
const P: Ipv4Addr = Ipv4Addr::new(198, 19, 8, 1);

#[test]
fn durations_switch_to_ms_at_10_ms() {
    assert_eq!(duration(900), "0.9 µs");
    assert_eq!(duration(9_999_999), "10000.0 µs");
    assert_eq!(duration(33_600_000), "33.6 ms");
}

#[test]
fn every_observation_has_its_line() {
    let asks = |answer| ArpSeen::Asks {
        target: X,
        sender: P,
        requests: 42,
        answer,
    };
    assert_eq!(
        seen(&asks(AskAnswer::Never)),
        "who-has 198.18.1.5 tell 198.19.8.1 x42, never answered"
    );
    assert_eq!(
        seen(&asks(AskAnswer::AnsweredThenSilent { pending: 3 })),
        "who-has 198.18.1.5 tell 198.19.8.1 x42, answered, then 3 more requests with no reply"
    );
    let t = |arp, ip| Traffic { arp, ip };
    let came = |traffic| ArpSeen::CameIn {
        addr: X,
        peer: P,
        traffic,
    };
    assert_eq!(
        seen(&came(t(1, 0))),
        "198.18.1.5 answered 1 ARP request(s) from 198.19.8.1; nothing from 198.18.1.5 to 198.19.8.1 leaves here"
    );
    assert!(seen(&came(t(1, 2))).contains("and received 2 IP packet(s) from it"));
    let out = ArpSeen::WentOut {
        addr: X,
        peer: P,
        traffic: t(3, 4),
    };
    assert_eq!(
        seen(&out),
        "who-has 198.19.8.1 tell 198.18.1.5 x3, then 4 IP packet(s) 198.18.1.5 > 198.19.8.1; nothing from 198.19.8.1 to 198.18.1.5 arrives here"
    );
    let claimed = ArpSeen::Claimed {
        ip: X,
        first: [2, 0, 0, 0, 0, 1],
        other: [2, 0, 0, 0, 0, 2],
    };
    assert_eq!(
        seen(&claimed),
        "198.18.1.5 is-at 02:00:00:00:00:01, then 198.18.1.5 is-at 02:00:00:00:00:02"
    );
}

#[test]
fn a_reply_path_mismatch_names_every_interface_it_leaves() {
    let s = ArpSymptom {
        problem: ArpProblem::ReplyPathMismatch {
            came_in: Traffic { arp: 1, ip: 0 },
            out_ifaces: vec!["net1".into(), "net2".into()],
        },
        iface: "net1".into(),
        other_iface: Some("eth0".into()),
        addr: X,
        peer: P,
        t_ns: 0,
        count: 1,
        evidence: Vec::new(),
    };
    let m = symptom_message(&s);
    assert!(
        m.starts_with("replies to 198.19.8.1 leave net1, net2 instead of eth0: 198.18.1.5 answered 1 ARP request(s) from 198.19.8.1 on eth0"),
        "{m}"
    );
    assert_eq!(
        symptom_short(&s),
        "198.18.1.5 → 198.19.8.1 on net1 (not eth0)"
    );
    assert_eq!(
        ask(&UnansweredAsk {
            target: X,
            sender: P,
            requests: 2
        }),
        "who-has 198.18.1.5 tell 198.19.8.1 x2"
    );
}

/// Interface names are capture file and device names: escaped in the words.
#[test]
fn interface_names_are_escaped_in_symptoms() {
    let mut s = ArpSymptom {
        problem: ArpProblem::ReplyPathMismatch {
            came_in: Traffic { arp: 1, ip: 0 },
            out_ifaces: vec!["net\u{1b}[2J".into()],
        },
        iface: "net\u{1b}[2J".into(),
        other_iface: Some("eth\u{7}".into()),
        addr: X,
        peer: P,
        t_ns: 0,
        count: 1,
        evidence: Vec::new(),
    };
    let m = symptom_message(&s);
    assert!(
        m.starts_with("replies to 198.19.8.1 leave net\\x1b[2J instead of eth\\x07: "),
        "{m}"
    );
    assert_eq!(
        symptom_short(&s),
        "198.18.1.5 → 198.19.8.1 on net\\x1b[2J (not eth\\x07)"
    );
    s.problem = ArpProblem::DuplicateAddress {
        macs: [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]],
    };
    assert!(!symptom_message(&s).contains(|c: char| c.is_control()));
}
