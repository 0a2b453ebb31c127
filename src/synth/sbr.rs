//! `sbr-arp`: what a capture inside an RDMA pod shows when its second interface (`net1`,
//! an SR-IOV VF in the node's RDMA subnet) has no `sbr` (source-based routing): the node
//! asks `who-has <pod eth0 ip> tell <node RDMA ip>` on the pod's `eth0` and never gets an
//! answer, because the pod's reply route to the node's RDMA address leaves through
//! `net1` (`/work/shared/scenarios/sbr-arp/expected/README.md`, phase `broken`).
//!
//! The trace is a Linux cooked v2 capture (`tcpdump -i any`, linktype 276) whose SLL2
//! headers carry the interface index of `eth0` and `net1`. On `net1` ARP works and RoCE
//! RC traffic flows; on `eth0` the node's broadcasts for the pod's address go
//! unanswered, attempt after attempt.
//!
//! Guarantees: every ARP request counted in `arp_unanswered` has no reply anywhere in the
//! trace; every other request is answered within a millisecond on the same interface.

use super::frame::{mac_for, Encap, Link, Path, BROADCAST};
use super::out::Out;
use super::rc::{Conn, Ends, Fault, Op};
use super::rng::Rng;
use super::traffic::random_op;
use dissectors::{ArpOp, ArpRepr, Ecn};
use std::io;
use std::net::{IpAddr, Ipv4Addr};

const ETH0_IFINDEX: u32 = 3;
const NET1_IFINDEX: u32 = 4;
/// The host side of a Calico veth (`cali*`): no IPv4 address, this fixed MAC.
const CALI_MAC: [u8; 6] = [0xee; 6];
const POD_NET1_MAC: [u8; 6] = [0x02, 0x00, 0xc6, 0x13, 0x08, 0x0b];
const SECOND: u64 = 1_000_000_000;

/// SLL2 packet types.
const TO_US: u8 = 0;
const BROADCAST_IN: u8 = 1;
const OUTGOING: u8 = 4;

const POD_ETH0: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 5);
const NODE_RDMA: Ipv4Addr = Ipv4Addr::new(198, 19, 8, 1);
const POD_NET1: Ipv4Addr = Ipv4Addr::new(198, 19, 8, 11);
const PEER_NET1: Ipv4Addr = Ipv4Addr::new(198, 19, 8, 12);

fn eth0(pkt_type: u8) -> Link {
    Link::Sll2 {
        ifindex: ETH0_IFINDEX,
        pkt_type,
    }
}

fn net1(pkt_type: u8) -> Link {
    Link::Sll2 {
        ifindex: NET1_IFINDEX,
        pkt_type,
    }
}

pub fn sbr_arp(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let mut rdma = rdma_conn(rng);
    facts(out);
    let mut round = 0u64;
    while out.frames() < target {
        let start = out.now;
        net1_round(out, rng, &mut rdma, round, start)?;
        eth0_unanswered(out, rng, start)?;
        round += 1;
    }
    out.fact("rounds", round);
    Ok(())
}

/// RoCE between the pod's VF and a peer pod's VF, on net1.
fn rdma_conn(rng: &mut Rng) -> Conn {
    let req = Path {
        src_mac: POD_NET1_MAC,
        dst_mac: mac_for(IpAddr::V4(PEER_NET1)),
        link: net1(OUTGOING),
        src: IpAddr::V4(POD_NET1),
        dst: IpAddr::V4(PEER_NET1),
        encap: Encap::V2 { sport: 0xe54a },
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: 0,
    };
    let mut resp = req.reversed(0xd1f7);
    resp.link = net1(TO_US);
    let ends = Ends {
        req,
        resp,
        req_qpn: 0x000113,
        resp_qpn: 0x000247,
    };
    Conn::new(ends, rng.below(1 << 24) as u32, 4096, rng)
}

/// The scenario's facts and note in the truth file.
fn facts(out: &mut Out) {
    out.fact("pod_eth0", serde_json::json!({"ifindex": ETH0_IFINDEX, "ip": POD_ETH0.to_string(), "mac": "0a:58:c6:12:01:05"}));
    out.fact("pod_net1", serde_json::json!({"ifindex": NET1_IFINDEX, "ip": "198.19.8.11/24", "mac": "02:00:c6:13:08:0b"}));
    out.fact("host_rdma_ip", NODE_RDMA.to_string());
    out.fact("unanswered_who_has", serde_json::json!({"target": POD_ETH0.to_string(), "sender": NODE_RDMA.to_string(), "ifindex": ETH0_IFINDEX}));
    out.notes.push(
        "The node resolves the pod's eth0 address with its RDMA address as the ARP source \
         ('who-has 198.18.1.5 tell 198.19.8.1'); without sbr the pod routes 198.19.8.1 via \
         net1, so its reverse-path filter drops the request: no reply on either \
         interface. Fix: the sbr CNI plugin (ip rule from 198.19.8.11 lookup 100)."
            .into(),
    );
}

/// net1: the pod resolves its RDMA peer (and, the first round, the node's RDMA
/// address), both answered, and runs a few RDMA messages.
fn net1_round(
    out: &mut Out,
    rng: &mut Rng,
    rdma: &mut Conn,
    round: u64,
    start: u64,
) -> io::Result<()> {
    let (node_mac, peer_mac) = (
        mac_for(IpAddr::V4(NODE_RDMA)),
        mac_for(IpAddr::V4(PEER_NET1)),
    );
    let (pod_net1, peer_net1, node_rdma) = (POD_NET1, PEER_NET1, NODE_RDMA);
    let ask = ArpRepr::ethernet(ArpOp::Request, POD_NET1_MAC, pod_net1, [0; 6], peer_net1);
    out.arp(
        start + 1_000,
        POD_NET1_MAC,
        BROADCAST,
        &net1(OUTGOING),
        &ask,
        false,
    )?;
    let reply = ArpRepr::ethernet(ArpOp::Reply, peer_mac, peer_net1, POD_NET1_MAC, pod_net1);
    out.arp(
        start + 61_000,
        peer_mac,
        POD_NET1_MAC,
        &net1(TO_US),
        &reply,
        false,
    )?;
    if round == 0 {
        // ... and the node's RDMA address, also answered on net1.
        let ask = ArpRepr::ethernet(ArpOp::Request, POD_NET1_MAC, pod_net1, [0; 6], node_rdma);
        out.arp(
            start + 90_000,
            POD_NET1_MAC,
            BROADCAST,
            &net1(OUTGOING),
            &ask,
            false,
        )?;
        let reply = ArpRepr::ethernet(ArpOp::Reply, node_mac, node_rdma, POD_NET1_MAC, pod_net1);
        out.arp(
            start + 140_000,
            node_mac,
            POD_NET1_MAC,
            &net1(TO_US),
            &reply,
            false,
        )?;
    }
    out.now = start + 200_000;
    for k in 0..rng.range(4, 8) {
        let op = if round == 0 && k == 0 {
            Op::Write {
                len: 3 * rdma.pmtu,
                imm: None,
            }
        } else {
            random_op(rng, rdma)
        };
        rdma.exchange(out, rng, op, Fault::None)?;
        out.now += rng.range(2_000, 20_000);
    }
    rdma.finish(out)?;
    Ok(())
}

/// eth0: traffic for the pod (a kubelet probe, a peer's packets the node forwards)
/// makes the node resolve the pod: three broadcasts one second apart, twice. None is
/// answered. (Only documentation addresses appear here, so the pod's own ARP for
/// Calico's 169.254.1.1 gateway, answered by proxy ARP, is left out.)
fn eth0_unanswered(out: &mut Out, rng: &mut Rng, start: u64) -> io::Result<()> {
    let who_has_pod = ArpRepr::ethernet(ArpOp::Request, CALI_MAC, NODE_RDMA, [0; 6], POD_ETH0);
    let mut t = out.now.max(start + SECOND / 2);
    for _attempt in 0..2 {
        for _ in 0..3 {
            let jitter = rng.below(2_000_000);
            out.arp(
                t + jitter,
                CALI_MAC,
                BROADCAST,
                &eth0(BROADCAST_IN),
                &who_has_pod,
                false,
            )?;
            out.obs.arp_unanswered += 1;
            t += SECOND;
        }
        t += rng.range(1, 3) * SECOND;
    }
    out.now = t + rng.range(2, 6) * SECOND;
    Ok(())
}
