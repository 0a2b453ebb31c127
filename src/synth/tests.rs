//! `synth`'s tests: every scenario decodes and analyzes to its truth, the same tuple
//! gives the same bytes, snaplen and pcapng variants, the command's refusals.

use super::*;
use crate::capture::file::for_each_frame;
use dissectors::{Config, IcrcStatus, StopKind};
use std::ops::ControlFlow;

fn gen(sc: &Scenario, packets: u64, seed: u64) -> (Vec<u8>, serde_json::Value) {
    let p = Params {
        seed,
        packets,
        snaplen: None,
        pcapng: false,
        knobs: Knobs::default(),
    };
    let mut buf = Vec::new();
    let doc = generate(sc, &p, &mut buf, "x.pcap").unwrap();
    (buf, serde_json::from_str(&doc).unwrap())
}

/// Every scenario: deterministic, close to the requested size, and every frame
/// decodes completely with a good ICRC unless the scenario damaged it on purpose.
#[test]
fn every_scenario_is_deterministic_and_decodes() {
    for sc in SCENARIOS {
        let (a, truth) = gen(sc, sc.default_packets, 3);
        let (b, _) = gen(sc, sc.default_packets, 3);
        assert!(a == b, "{}: not deterministic", sc.name);
        let (c, _) = gen(sc, sc.default_packets, 4);
        assert!(a != c, "{}: the seed changes nothing", sc.name);
        let obs = &truth["observable"];
        let mut frames = 0u64;
        let mut bad_icrc = 0u64;
        let mut malformed = 0u64;
        let mut truncated = 0u64;
        let cfg = Config::default();
        for_each_frame(&a[..], |f| {
            frames += 1;
            let d = dissectors::decode(f.link, f.data, f.orig_len, &cfg);
            match d.stop.kind {
                StopKind::Malformed => malformed += 1,
                StopKind::Truncated => truncated += 1,
                StopKind::Complete => {}
                StopKind::Unsupported => panic!("{}: frame {frames}: {}", sc.name, d.stop),
            }
            if let Some(r) = d.roce {
                if r.icrc == IcrcStatus::Bad && d.stop.kind == StopKind::Complete {
                    bad_icrc += 1;
                }
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(truth["packets"], frames, "{}", sc.name);
        let want = sc.default_packets;
        assert!(
            frames >= want && frames < want + 60,
            "{}: {frames} frames for {want}",
            sc.name
        );
        assert_eq!(obs["icrc_bad"], bad_icrc, "{}", sc.name);
        assert_eq!(obs["malformed"], malformed, "{}", sc.name);
        assert_eq!(obs["truncated"], truncated, "{}", sc.name);
    }
}

#[test]
fn packets_scale_the_scenarios() {
    for name in ["clean-rc", "loss-upstream", "congestion", "sbr-arp"] {
        let sc = find(name).unwrap();
        let (_, small) = gen(sc, 200, 1);
        let (_, big) = gen(sc, 2000, 1);
        let n = big["packets"].as_u64().unwrap();
        assert!((2000..2100).contains(&n), "{name}: {n}");
        assert!(big["packets"].as_u64() > small["packets"].as_u64());
    }
}

/// Every frame of a scenario, decoded, with its timestamp.
pub fn decoded(name: &str, packets: u64, seed: u64) -> Vec<(u64, dissectors::Decoded)> {
    decoded_with_truth(name, packets, seed).0
}

/// [`decoded`], with the scenario's truth document.
pub fn decoded_with_truth(
    name: &str,
    packets: u64,
    seed: u64,
) -> (Vec<(u64, dissectors::Decoded)>, serde_json::Value) {
    let (buf, truth) = gen(find(name).unwrap(), packets, seed);
    let mut v = Vec::new();
    for_each_frame(&buf[..], |f| {
        v.push((
            f.ts_ns,
            dissectors::decode(f.link, f.data, f.orig_len, &Config::default()),
        ));
        ControlFlow::Continue(())
    })
    .unwrap();
    (v, truth)
}

#[test]
fn pfc_storm_stalls_only_the_paused_priority() {
    let frames = decoded("pfc-storm", 1000, 2);
    let mut paused = false;
    let (mut storms, mut stalled_pcp0) = (0, 0);
    for (_, d) in &frames {
        if let Some(p) = d.pause {
            let now = p.quanta_for(3) > 0;
            storms += usize::from(now && !paused);
            paused = now;
            continue;
        }
        if paused {
            assert_ne!(d.pcp(), Some(3), "priority 3 frame during the storm");
            stalled_pcp0 += usize::from(d.pcp() == Some(0));
        }
    }
    assert!(storms >= 3 && stalled_pcp0 > 0, "{storms} {stalled_pcp0}");
}

#[test]
fn every_cnp_answers_a_ce_mark_and_is_paced() {
    use std::collections::HashMap;
    let frames = decoded("congestion", 3000, 2);
    // First CE mark per sender QP, and the last CNP to it.
    let mut marked: HashMap<u32, u64> = HashMap::new();
    let mut last_cnp: HashMap<u32, u64> = HashMap::new();
    let mut senders: HashMap<(std::net::IpAddr, std::net::IpAddr), u32> = HashMap::new();
    // Responses name the requester QP behind each (requester, responder) pair.
    for (_, d) in &frames {
        let (r, ip) = (d.roce.unwrap(), d.ip.unwrap());
        if r.aeth.is_some() {
            senders.insert((ip.dst, ip.src), r.bth.dest_qp.0);
        }
    }
    let mut cnps = 0;
    for (ts, d) in &frames {
        let (r, ip) = (d.roce.unwrap(), d.ip.unwrap());
        if r.is_cnp() {
            cnps += 1;
            assert_eq!(
                (ip.dscp, ip.ecn, ip.total_len),
                (48, dissectors::Ecn::NotEct, 60)
            );
            assert!(r.bth.becn && r.bth.pkey.0 == 0xffff && r.bth.psn.0 == 0);
            let qp = r.bth.dest_qp.0;
            // The CNP goes back to a QP whose packets to this receiver were marked.
            let sender = senders[&(ip.dst, ip.src)];
            assert_eq!(sender, qp);
            assert!(
                marked.get(&qp).is_some_and(|&t| t <= *ts),
                "CNP before any CE mark"
            );
            if let Some(prev) = last_cnp.insert(qp, *ts) {
                assert!(
                    ts - prev >= 10_000,
                    "CNPs to 0x{qp:06x} {} ns apart",
                    ts - prev
                );
            }
        } else if ip.ecn == dissectors::Ecn::Ce {
            if let Some(&q) = senders.get(&(ip.src, ip.dst)) {
                marked.entry(q).or_insert(*ts);
            }
        }
    }
    assert!(cnps > 10);
    // Senders slow down: packets inside one message are spaced by the sender's
    // current rate, so after CNPs some gaps are at least twice the line-rate gap.
    let mut prev: HashMap<u32, u64> = HashMap::new();
    let (mut min_gap, mut max_gap) = (u64::MAX, 0);
    for (ts, d) in &frames {
        let r = d.roce.unwrap();
        let op = r.bth.opcode.0;
        if matches!(op, 0x00 | 0x06) {
            prev.insert(r.bth.dest_qp.0, *ts);
        } else if matches!(op, 0x01 | 0x07) {
            if let Some(p) = prev.insert(r.bth.dest_qp.0, *ts) {
                min_gap = min_gap.min(ts - p);
                max_gap = max_gap.max(ts - p);
            }
        }
    }
    assert!(max_gap >= 2 * min_gap, "gaps {min_gap}..{max_gap} ns");
}

#[test]
fn sbr_arp_leaves_only_the_pod_address_unanswered() {
    use dissectors::ArpOp;
    let frames = decoded("sbr-arp", 400, 2);
    let mut asked_pod = 0;
    for (_, d) in &frames {
        let s = d.sll.expect("SLL2 frames");
        assert!(matches!(s.ifindex, Some(3 | 4)));
        if let Some(a) = d.arp {
            let pod = a.target_ip == std::net::Ipv4Addr::new(198, 18, 1, 5);
            if a.op == ArpOp::Request && pod && a.sender_ip.octets() == [198, 19, 8, 1] {
                asked_pod += 1;
                assert_eq!(s.ifindex, Some(3), "asked on eth0");
            }
            if a.op == ArpOp::Reply {
                assert_ne!(a.sender_ip, std::net::Ipv4Addr::new(198, 18, 1, 5));
            }
        }
        if d.roce.is_some() {
            assert_eq!(s.ifindex, Some(4), "RoCE only on net1");
        }
    }
    assert!(asked_pod >= 6);
}

#[test]
fn psn_wrap_really_wraps() {
    let frames = decoded("psn-wrap", 150, 1);
    let psns: Vec<u32> = frames
        .iter()
        .map(|(_, d)| d.roce.unwrap().bth.psn.0)
        .collect();
    let wraps = psns
        .windows(2)
        .filter(|w| w[0] >= 0xff_fff0 && w[1] <= 0x10)
        .count();
    assert!(wraps >= 2, "{wraps}");
}

#[test]
fn mixed_encap_has_every_encapsulation() {
    use dissectors::RoceVersion;
    let frames = decoded("mixed-encap", 150, 1);
    let any = |f: &dyn Fn(&dissectors::Decoded) -> bool| frames.iter().any(|(_, d)| f(d));
    assert!(any(&|d| d.pcp() == Some(3) && d.roce.is_some()));
    assert!(any(
        &|d| d.ip.is_some_and(|i| i.is_ipv6()) && d.roce.is_some()
    ));
    assert!(any(&|d| d
        .roce
        .is_some_and(|r| r.version == RoceVersion::V1)
        && d.grh.is_some_and(
            |g| g.sgid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
        )));
    assert!(any(&|d| d
        .roce
        .is_some_and(|r| r.deth.is_some() && r.bth.opcode.0 == 0x64)));
    assert!(any(&|d| d
        .roce
        .is_some_and(|r| r.deth.is_some() && r.immdt.is_some())));
    assert!(any(&|d| d.roce.is_some_and(|r| r.xrceth.is_some())));
    assert!(any(&|d| d.roce.is_some_and(|r| r.bth.opcode.0 == 0xB1)));
}

#[test]
fn tiny_and_snaplen_runs_work() {
    for sc in SCENARIOS {
        let p = Params {
            seed: 1,
            packets: 1,
            snaplen: Some(MIN_SNAPLEN),
            pcapng: true,
            knobs: Knobs::default(),
        };
        let mut buf = Vec::new();
        let doc = generate(sc, &p, &mut buf, "x.pcapng").unwrap();
        let t: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert!(t["packets"].as_u64().unwrap() >= 1, "{}", sc.name);
        let mut n = 0;
        for_each_frame(&buf[..], |f| {
            assert!(f.data.len() <= MIN_SNAPLEN as usize);
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(t["packets"], n);
    }
}

#[test]
fn many_qp_follows_its_options() {
    let sc = find("many-qp").unwrap();
    let p = Params {
        seed: 2,
        packets: 6000,
        snaplen: Some(MIN_SNAPLEN),
        pcapng: false,
        knobs: Knobs {
            qps: Some(300),
            peers: Some(260),
            loss_permille: Some(50),
            msg_size: Some(12000),
        },
    };
    let mut buf = Vec::new();
    let doc = generate(sc, &p, &mut buf, "x.pcap").unwrap();
    let t: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let n = t["packets"].as_u64().unwrap();
    assert!((6000..6010).contains(&n), "{n}");
    assert_eq!(t["observable"]["connections"], 300);
    assert_eq!(t["observable"]["flows"], 600);
    assert_eq!(t["per_direction_qp"].as_object().unwrap().len(), 600);
    assert!(t["observable"]["nak_psn_seq"].as_u64().unwrap() > 0);
    assert_eq!(
        t["observable"]["nak_psn_seq"], t["observable"]["psn_gap_events"],
        "one NAK per upstream loss"
    );
    assert!(t["per_direction_qp"]
        .as_object()
        .unwrap()
        .contains_key("198.19.0.6>198.18.0.1 qp=0x000203"));
    assert!(t["command"]
        .as_str()
        .unwrap()
        .contains("--qps 300 --peers 260 --loss 50 --msg-size 12000 --packets 6000"));
    // Other scenarios refuse the options, and --loss needs multi-packet messages.
    let k = Knobs {
        qps: Some(2),
        ..Knobs::default()
    };
    assert!(check_knobs(find("clean-rc").unwrap(), &k).is_err());
    let k = Knobs {
        loss_permille: Some(5),
        ..Knobs::default()
    };
    assert!(check_knobs(sc, &k).is_err());
}

#[test]
fn truth_path_appends_the_suffix() {
    assert_eq!(
        truth_path(Path::new("a/b.pcap")),
        PathBuf::from("a/b.pcap.truth.json")
    );
}
