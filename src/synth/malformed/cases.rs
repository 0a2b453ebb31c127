//! The damaged frames: each built from a correct frame (made by `super::super::frame`)
//! by one documented change, with the stop kind and layer the decoder must give it.

use super::frames::{fix_ipv4, Base, OtherFrames, RcFrames};
use crate::synth::traffic::{path, v4};
use dissectors::{Layer, StopKind};
use Layer as L;
use StopKind::{Malformed as M, Truncated as T};

/// One damaged frame and what the decoder must say about it.
pub struct Case {
    pub what: &'static str,
    pub data: Vec<u8>,
    pub orig_len: usize,
    pub kind: StopKind,
    pub layer: Layer,
}

/// Every damaged frame of the scenario, in order.
pub fn cases() -> Vec<Case> {
    let p = path(v4(198, 18, 0, 1), v4(198, 18, 0, 2), 0xc001);
    let r = path(v4(198, 18, 0, 2), v4(198, 18, 0, 1), 0xc002);
    let rc = RcFrames::new(&p, &r);
    let other = OtherFrames::new(&p, &r);
    let mut v = Cases(Vec::new());
    link_ip_udp(&mut v, &rc, &other);
    transport(&mut v, &rc);
    more_transport(&mut v, &rc, &other);
    grh_arp_pfc(&mut v, &other);
    v.0
}

/// The cases, as they are added.
struct Cases(Vec<Case>);

impl Cases {
    fn add(
        &mut self,
        what: &'static str,
        (data, orig_len): (Vec<u8>, usize),
        kind: StopKind,
        layer: Layer,
    ) {
        self.0.push(Case {
            what,
            data,
            orig_len,
            kind,
            layer,
        });
    }
}

/// `x` with one change, as a frame that really was that long.
fn edit(x: &Base, f: &dyn Fn(&mut Vec<u8>)) -> (Vec<u8>, usize) {
    let mut d = x.f.clone();
    f(&mut d);
    let n = d.len();
    (d, n)
}

/// Where `x`'s BTH starts.
fn b(x: &Base) -> usize {
    x.lay.bth
}

/// Ethernet, 802.1Q, IPv4 and UDP damaged.
fn link_ip_udp(v: &mut Cases, rc: &RcFrames, other: &OtherFrames) {
    let (ack, write_first, vlan) = (&rc.ack, &rc.write_first, &other.vlan);
    let net = write_first.lay.net;
    let udp = write_first.lay.bth - 8;
    v.add(
        "Ethernet header cut by the capture",
        write_first.cut(10),
        T,
        L::Ethernet,
    );
    v.add(
        "frame shorter than an Ethernet header",
        ack.short(10),
        M,
        L::Ethernet,
    );
    v.add("802.1Q tag cut by the capture", vlan.cut(16), T, L::Vlan);
    v.add("IP version 7", edit(ack, &|d| d[net] = 0x75), M, L::Ip);
    v.add(
        "IPv4 header length 12 bytes (IHL 3)",
        edit(ack, &|d| {
            d[net] = 0x43;
            fix_ipv4(d, net);
        }),
        M,
        L::Ip,
    );
    v.add(
        "frame ends inside the IPv4 header",
        ack.short(net + 12),
        M,
        L::Ip,
    );
    v.add(
        "IPv4 header cut by the capture",
        ack.cut(net + 12),
        T,
        L::Ip,
    );
    v.add(
        "IPv4 total length beyond the end of the frame",
        edit(ack, &|d| {
            let tl = u16::from_be_bytes([d[net + 2], d[net + 3]]) + 40;
            d[net + 2..net + 4].copy_from_slice(&tl.to_be_bytes());
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 40;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Payload,
    );
    v.add(
        "UDP length 4, shorter than its header",
        edit(ack, &|d| d[udp + 5] = 4),
        M,
        L::Udp,
    );
    v.add(
        "UDP length beyond the IP payload",
        edit(ack, &|d| {
            let ul = u16::from_be_bytes([d[udp + 4], d[udp + 5]]) + 100;
            d[udp + 4..udp + 6].copy_from_slice(&ul.to_be_bytes());
        }),
        M,
        L::Udp,
    );
    v.add(
        "IPv4 total length leaves 4 bytes for the UDP header",
        edit(ack, &|d| {
            d.truncate(udp + 4);
            d[net + 2..net + 4].copy_from_slice(&24u16.to_be_bytes());
            fix_ipv4(d, net);
        }),
        M,
        L::Udp,
    );
    v.add("UDP header cut by the capture", ack.cut(udp + 4), T, L::Udp);
}

/// The BTH, the payload, the RETH and the AETH damaged.
fn transport(v: &mut Cases, rc: &RcFrames) {
    let (write_first, ack, read) = (&rc.write_first, &rc.ack, &rc.read);
    v.add("lengths leave 6 bytes for the BTH", ack.relen(6), M, L::Bth);
    v.add("BTH cut by the capture", ack.cut(b(ack) + 6), T, L::Bth);
    v.add(
        "no room for the ICRC after the BTH",
        ack.relen(14),
        M,
        L::Icrc,
    );
    v.add(
        "BTH PadCnt 3 on an ACK, which has no payload",
        edit(ack, &|d| d[b(ack) + 1] |= 0x30),
        M,
        L::Payload,
    );
    v.add(
        "RDMA READ Request carrying 8 payload bytes",
        read.relen(read.f.len() - b(read) + 8),
        M,
        L::Payload,
    );
    v.add(
        "lengths too short for the RETH",
        write_first.relen(12 + 8 + 4),
        M,
        L::Reth,
    );
    v.add(
        "RETH cut by the capture",
        write_first.cut(b(write_first) + 20),
        T,
        L::Reth,
    );
    v.add(
        "frame ends inside the AETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        ack.short(b(ack) + 14),
        T,
        L::Aeth,
    );
    v.add("AETH cut by the capture", ack.cut(b(ack) + 14), T, L::Aeth);
}

/// The ImmDt, IETH, atomic, DETH, XRCETH and CNP headers damaged.
fn more_transport(v: &mut Cases, rc: &RcFrames, other: &OtherFrames) {
    let (write_imm, send_inv, fadd, aack) = (&rc.write_imm, &rc.send_inv, &rc.fadd, &rc.aack);
    let (ud, xrc, cnp) = (&other.ud, &other.xrc, &other.cnp);
    v.add(
        "lengths too short for the ImmDt",
        write_imm.relen(12 + 16 + 3),
        M,
        L::ImmDt,
    );
    v.add(
        "ImmDt cut by the capture",
        write_imm.cut(b(write_imm) + 30),
        T,
        L::ImmDt,
    );
    v.add(
        "frame ends inside the IETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        send_inv.short(b(send_inv) + 14),
        T,
        L::Ieth,
    );
    v.add(
        "IETH cut by the capture",
        send_inv.cut(b(send_inv) + 14),
        T,
        L::Ieth,
    );
    v.add(
        "lengths too short for the AtomicETH",
        fadd.relen(12 + 14 + 4),
        M,
        L::AtomicEth,
    );
    v.add(
        "AtomicETH cut by the capture",
        fadd.cut(b(fadd) + 26),
        T,
        L::AtomicEth,
    );
    v.add(
        "lengths too short for the AtomicAckETH",
        aack.relen(12 + 4 + 4),
        M,
        L::AtomicAckEth,
    );
    v.add(
        "AtomicAckETH cut by the capture",
        aack.cut(b(aack) + 20),
        T,
        L::AtomicAckEth,
    );
    v.add(
        "lengths too short for the DETH",
        ud.relen(12 + 4),
        M,
        L::Deth,
    );
    v.add("DETH cut by the capture", ud.cut(b(ud) + 16), T, L::Deth);
    v.add(
        "frame ends inside the XRCETH, its IP length claiming the whole packet (a capture that recorded no wire length)",
        xrc.short(b(xrc) + 14),
        T,
        L::Xrceth,
    );
    v.add(
        "XRCETH cut by the capture",
        xrc.cut(b(xrc) + 14),
        T,
        L::Xrceth,
    );
    v.add(
        "lengths too short for the CNP body",
        cnp.relen(12 + 8 + 4),
        M,
        L::Cnp,
    );
    v.add(
        "CNP body cut by the capture",
        cnp.cut(b(cnp) + 20),
        T,
        L::Cnp,
    );
}

/// The GRH (RoCE v1), ARP and PFC damaged.
fn grh_arp_pfc(v: &mut Cases, other: &OtherFrames) {
    let (v1, arp, pfc) = (&other.v1, &other.arp, &other.pfc);
    v.add(
        "frame ends inside the GRH",
        v1.short(v1.lay.net + 20),
        M,
        L::Grh,
    );
    v.add("GRH cut by the capture", v1.cut(v1.lay.net + 20), T, L::Grh);
    v.add(
        "GRH payload length too short for a BTH",
        v1.relen(8),
        M,
        L::Bth,
    );
    v.add(
        "GRH payload length beyond the end of the frame (as a capture that recorded no wire length leaves it)",
        edit(v1, &|d| {
            let g = v1.lay.net;
            let pl = u16::from_be_bytes([d[g + 4], d[g + 5]]) + 200;
            d[g + 4..g + 6].copy_from_slice(&pl.to_be_bytes());
        }),
        T,
        L::Payload,
    );
    let arp_len = arp.len();
    v.add(
        "ARP hardware address length 21",
        {
            let mut d = arp.clone();
            d[14 + 4] = 21;
            (d, arp_len)
        },
        M,
        L::Arp,
    );
    v.add(
        "frame ends inside the ARP message",
        (arp[..34].to_vec(), 34),
        M,
        L::Arp,
    );
    v.add(
        "ARP message cut by the capture",
        (arp[..34].to_vec(), arp_len),
        T,
        L::Arp,
    );
    v.add(
        "frame ends inside the PFC frame",
        (pfc[..24].to_vec(), 24),
        M,
        L::MacControl,
    );
    v.add(
        "PFC frame cut by the capture",
        (pfc[..24].to_vec(), pfc.len()),
        T,
        L::MacControl,
    );
}
