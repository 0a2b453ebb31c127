//! `qos-mismarked`: one capture with every QoS marking mistake a capture alone shows,
//! next to correctly marked traffic (RC on DSCP 26, ECT(0), the usual lossless class):
//! - a connection whose requests ride DSCP 26 / PCP 3 and whose answers (ACKs, READ
//!   responses) ride DSCP 0 / PCP 0, Not-ECT;
//! - a connection entirely on DSCP 0, Not-ECT (a QP that never got a traffic class);
//! - a connection on DSCP 26 whose packets are Not-ECT (ECN off on that sender);
//! - CE marks on the correct connection answered by CNPs on DSCP 48;
//! - one host sending RoCE v2 and, on another QP, RoCE v1 (IPv4-mapped GIDs).
//!
//! Guarantees: every problem appears in the first round whatever `--packets` is; every
//! CNP answers a CE mark of the QP it names (at most one per QP per pacing interval).

use super::frame::{Encap, Link, Vlan};
use super::out::Out;
use super::rc::{Cc, Fault, Op};
use super::rng::Rng;
use super::traffic::{conn, multi_packet, v4};
use dissectors::Ecn;
use std::io;

/// Minimum time between two CNPs to one QP.
const CNP_INTERVAL_NS: u64 = 10_000;

pub fn qos_mismarked(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let hub = v4(198, 18, 2, 2);
    // The reference: DSCP 26, ECT(0) both ways, CE-marked now and then, CNPs on DSCP 48.
    let mut good = conn(rng, v4(198, 18, 2, 1), hub, 0x000301, 0x000201, 1024);
    let mut cnp_path = good.resp;
    cnp_path.dscp = 48;
    cnp_path.ecn = Ecn::NotEct;
    let mut cc = Cc::new(cnp_path, CNP_INTERVAL_NS);
    cc.mark_permille = 150;
    good.cc = Some(cc);
    // Requests marked (DSCP 26, PCP 3), answers not (DSCP 0, PCP 0, Not-ECT).
    let mut split = conn(rng, v4(198, 18, 2, 3), hub, 0x000303, 0x000203, 1024);
    split.req.link = Link::Ethernet {
        vlan: Some(Vlan { vid: 100, pcp: 3 }),
    };
    split.resp.link = Link::Ethernet {
        vlan: Some(Vlan { vid: 100, pcp: 0 }),
    };
    split.resp.dscp = 0;
    split.resp.ecn = Ecn::NotEct;
    // A QP that never got a traffic class: DSCP 0, Not-ECT both ways.
    let mut unmarked = conn(rng, v4(198, 18, 2, 4), hub, 0x000304, 0x000204, 1024);
    for p in [&mut unmarked.req, &mut unmarked.resp] {
        p.dscp = 0;
        p.ecn = Ecn::NotEct;
    }
    // DSCP 26 but ECN off on both ends: Not-ECT next to the ECT traffic of that DSCP.
    let mut not_ect = conn(rng, v4(198, 18, 2, 5), hub, 0x000305, 0x000205, 1024);
    for p in [&mut not_ect.req, &mut not_ect.resp] {
        p.ecn = Ecn::NotEct;
    }
    // One host, RoCE v2 to the hub and RoCE v1 (IPv4-mapped GIDs) to another host.
    let both = v4(198, 18, 2, 6);
    let v2 = conn(rng, both, hub, 0x000306, 0x000206, 1024);
    let mut v1 = conn(rng, both, v4(198, 18, 2, 7), 0x000307, 0x000207, 1024);
    for p in [&mut v1.req, &mut v1.resp] {
        p.encap = Encap::V1;
    }
    out.fact(
        "correct",
        serde_json::json!({"qps": ["0x000301", "0x000201"], "dscp": 26, "ecn": "ECT(0)", "cnp_dscp": 48}),
    );
    out.fact(
        "directions_differ",
        serde_json::json!({"qps": ["0x000303", "0x000203"], "requests": {"dscp": 26, "pcp": 3}, "answers": {"dscp": 0, "pcp": 0, "ecn": "Not-ECT"}}),
    );
    out.fact(
        "dscp0",
        serde_json::json!({"qps": ["0x000304", "0x000204"], "dscp": 0, "ecn": "Not-ECT"}),
    );
    out.fact(
        "not_ect_on_26",
        serde_json::json!({"qps": ["0x000305", "0x000205"], "dscp": 26, "ecn": "Not-ECT"}),
    );
    out.fact(
        "roce_v1_and_v2_host",
        serde_json::json!({"host": "198.18.2.6", "v2_qps": ["0x000306", "0x000206"], "v1_qps": ["0x000307", "0x000207"]}),
    );
    out.notes.push(
        "Five RC connections to 198.18.2.2 (and one RoCE v1 connection 198.18.2.6 -> \
         198.18.2.7): one marked correctly (DSCP 26, ECT(0); the switch CE-marks 15% of its \
         packets and the receiver answers with CNPs on DSCP 48), one whose answers ride \
         DSCP 0 / PCP 0 while its requests ride DSCP 26 / PCP 3, one on DSCP 0 and Not-ECT \
         throughout, one on DSCP 26 but Not-ECT, and a host that uses RoCE v2 on one QP and \
         RoCE v1 on another."
            .into(),
    );
    let mut conns = [good, split, unmarked, not_ect, v2, v1];
    let mut round = 0u64;
    while out.frames() < target {
        for (i, c) in conns.iter_mut().enumerate() {
            if out.frames() >= target && round > 0 {
                break;
            }
            let op = match (round, i) {
                // The split connection READs first: its READ responses ride DSCP 0.
                (0, 1) => Op::Read { len: 3 * c.pmtu },
                (0, _) => Op::Write {
                    len: 3 * c.pmtu,
                    imm: None,
                },
                _ => multi_packet(rng, c, 1, 4, 4),
            };
            c.exchange(out, rng, op, Fault::None)?;
            out.now += rng.range(300, 2_000);
        }
        round += 1;
    }
    for c in &mut conns {
        c.finish(out)?;
    }
    Ok(())
}
