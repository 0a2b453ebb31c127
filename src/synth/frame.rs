//! Builds byte-exact frames from readable values with the dissectors' `emit` functions:
//! Ethernet [802.1Q] or Linux cooked v2 / IPv4 or IPv6 / UDP 4791 / BTH / extended
//! headers / payload / pad / ICRC (RoCE v2), Ethernet / GRH / BTH / ... (RoCE v1), ARP and
//! PFC frames.
//!
//! Guarantees: the extended headers written are exactly the ones the opcode's chain in
//! `dissectors::ib::opcode` says it carries, in wire order; BTH PadCnt pads the payload to
//! a multiple of 4; IP, UDP and GRH lengths are consistent; the ICRC is computed over the
//! complete packet and stored least-significant byte first. Snaplen cuts happen later, in
//! the capture writer, so a cut frame still carries the length and ICRC of the original.

use dissectors::ethernet::{
    ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_MAC_CONTROL, ETHERTYPE_ROCE_V1,
    ETHERTYPE_VLAN,
};
use dissectors::ib::{self, icrc};
use dissectors::{
    AethRepr, ArpRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, CnpRepr, DethRepr, Ecn,
    EthernetRepr, GrhRepr, IethRepr, ImmDtRepr, IpRepr, PauseRepr, RethRepr, SllRepr, UdpRepr,
    VlanRepr, XrcethRepr,
};
use std::net::IpAddr;

/// Destination MAC of 802.1Qbb / 802.3x MAC control frames.
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// The Ethernet broadcast address (ARP requests).
pub const BROADCAST: [u8; 6] = [0xff; 6];
/// Ethernet frames shorter than this (without FCS) are padded on the wire.
pub const MIN_ETHERNET: usize = 60;

/// An 802.1Q tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vlan {
    /// VLAN id (12 bits).
    pub vid: u16,
    /// 802.1p priority (3 bits), the PFC priority of the traffic.
    pub pcp: u8,
}

/// The link-layer framing of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Ethernet II, with an optional 802.1Q tag.
    Ethernet {
        /// The tag, or `None` for untagged frames.
        vlan: Option<Vlan>,
    },
    /// Linux cooked capture v2 (`tcpdump -i any`): interface index and packet type
    /// (0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us).
    Sll2 {
        /// Interface index recorded in the SLL2 header.
        ifindex: u32,
        /// Packet type recorded in the SLL2 header (see above).
        pkt_type: u8,
    },
}

/// RoCE v2 (UDP source port) or RoCE v1 (GRH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encap {
    /// RoCE v2: IP/UDP to port 4791.
    V2 {
        /// The UDP source port (the flow's entropy for ECMP).
        sport: u16,
    },
    /// RoCE v1: a GRH straight after the link header (ethertype 0x8915).
    V1,
}

/// One direction between two RoCE endpoints: everything below the BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Link-layer framing.
    pub link: Link,
    /// Source address (IPv4 or IPv6; the GID for RoCE v1).
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// RoCE v2 or v1.
    pub encap: Encap,
    /// DSCP of the IP header / GRH traffic class (6 bits).
    pub dscp: u8,
    /// ECN of ordinary packets on this path (a CE mark overrides it per packet).
    pub ecn: Ecn,
    /// IP TTL / hop limit (GRH hop limit for RoCE v1).
    pub ttl: u8,
    /// IPv6 / GRH flow label (20 bits; unused for IPv4).
    pub flow_label: u32,
}

impl Path {
    /// The same endpoints in the other direction, with the given UDP source port.
    pub fn reversed(&self, sport: u16) -> Path {
        Path {
            src_mac: self.dst_mac,
            dst_mac: self.src_mac,
            src: self.dst,
            dst: self.src,
            encap: match self.encap {
                Encap::V2 { .. } => Encap::V2 { sport },
                Encap::V1 => Encap::V1,
            },
            ..*self
        }
    }
}

/// The transport part of a packet: BTH, the extended headers its opcode needs, and the
/// payload (its length and fill byte; pad and ICRC are added by the builder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pkt {
    /// The base transport header (opcode, PSN, DestQP, ...).
    pub bth: BthRepr,
    /// DETH, for UD packets.
    pub deth: Option<DethRepr>,
    /// XRCETH, for XRC packets.
    pub xrceth: Option<XrcethRepr>,
    /// RETH, for the first packet of a WRITE and READ Requests.
    pub reth: Option<RethRepr>,
    /// AtomicETH, for atomic requests.
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH, for ACKs, NAKs and READ responses that carry one.
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH, for atomic ACKs.
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// Immediate data, for the `with Immediate` opcodes.
    pub immdt: Option<ImmDtRepr>,
    /// IETH, for the `with Invalidate` opcodes.
    pub ieth: Option<IethRepr>,
    /// Payload bytes (pad not included).
    pub payload_len: u32,
    /// The byte the payload is filled with.
    pub fill: u8,
}

impl Pkt {
    fn pad(&self) -> usize {
        (4 - self.payload_len as usize % 4) % 4
    }

    /// BTH through ICRC, in bytes.
    pub fn transport_len(&self) -> usize {
        let ext = self.bth.opcode.decode().map_or(0, |(_, c)| c.ext_len());
        ib::bth::LEN + ext + self.payload_len as usize + self.pad() + 4
    }
}

/// Bytes of the link header.
fn link_len(link: &Link) -> usize {
    match link {
        Link::Ethernet { vlan: None } => dissectors::ethernet::LEN,
        Link::Ethernet { vlan: Some(_) } => dissectors::ethernet::LEN + dissectors::vlan::LEN,
        Link::Sll2 { .. } => dissectors::sll::V2_LEN,
    }
}

/// Writes the link header for `ethertype` at the start of `b`; returns its length.
fn emit_link(b: &mut [u8], src: [u8; 6], dst: [u8; 6], link: &Link, ethertype: u16) -> usize {
    match *link {
        Link::Ethernet { vlan } => {
            let outer = if vlan.is_some() {
                ETHERTYPE_VLAN
            } else {
                ethertype
            };
            EthernetRepr {
                dst,
                src,
                ethertype: outer,
            }
            .emit(b);
            if let Some(v) = vlan {
                VlanRepr {
                    tpid: ETHERTYPE_VLAN,
                    pcp: v.pcp,
                    dei: false,
                    vid: v.vid,
                    ethertype,
                }
                .emit(&mut b[dissectors::ethernet::LEN..]);
            }
        }
        Link::Sll2 { ifindex, pkt_type } => {
            let mut addr = [0u8; 8];
            addr[..6].copy_from_slice(&src);
            SllRepr {
                version: 2,
                pkt_type: u16::from(pkt_type),
                arphrd: 1,
                addr_len: 6,
                addr,
                protocol: ethertype,
                ifindex: Some(ifindex),
            }
            .emit(b);
        }
    }
    link_len(link)
}

/// The GID of an address: IPv6 as is, IPv4 as an IPv4-mapped IPv6 address (RoCE v1 and
/// RoCE v2 GID tables hold IPv4 that way).
pub fn gid(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Where the parts of a built RoCE frame lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Length of the whole frame, bytes.
    pub len: usize,
    /// Offset of the network header (IP, or the GRH for RoCE v1).
    pub net: usize,
    /// Offset of the BTH.
    pub bth: usize,
    /// Offset of the payload.
    pub payload: usize,
    /// Offset of the 4-byte ICRC.
    pub icrc: usize,
}

/// Builds a RoCE frame into `buf` (replacing its contents). `ecn` overrides the path's
/// ECN for this packet (CE marks).
pub fn roce(buf: &mut Vec<u8>, path: &Path, ecn: Ecn, p: &Pkt) -> Layout {
    // An opcode outside the IBTA table gets no extended headers: just BTH and payload.
    let chain = p.bth.opcode.decode().map(|(_, c)| c).unwrap_or_default();
    let pad = p.pad();
    let tlen = p.transport_len();
    let l2 = link_len(&path.link);
    let v6 = path.src.is_ipv6() || path.dst.is_ipv6();
    let net_len = match path.encap {
        Encap::V2 { .. } if v6 => dissectors::ip::IPV6_LEN + dissectors::udp::LEN,
        Encap::V2 { .. } => dissectors::ip::IPV4_LEN + dissectors::udp::LEN,
        Encap::V1 => ib::grh::LEN,
    };
    let len = l2 + net_len + tlen;
    buf.clear();
    buf.resize(len, 0);
    let ethertype = match path.encap {
        Encap::V1 => ETHERTYPE_ROCE_V1,
        Encap::V2 { .. } if v6 => ETHERTYPE_IPV6,
        Encap::V2 { .. } => ETHERTYPE_IPV4,
    };
    let net = emit_link(buf, path.src_mac, path.dst_mac, &path.link, ethertype);
    let bth_off = emit_network(buf, path, ecn, net, tlen);
    let (payload, o) = emit_transport(buf, p, &chain, bth_off, pad);
    let crc = match path.encap {
        Encap::V2 { .. } => {
            let udp = bth_off - dissectors::udp::LEN;
            icrc::roce_v2(&buf[net..udp], &buf[udp..o])
        }
        Encap::V1 => icrc::roce_v1(&buf[net..bth_off], &buf[bth_off..o]),
    };
    buf[o..o + 4].copy_from_slice(&crc.to_le_bytes());
    Layout {
        len,
        net,
        bth: bth_off,
        payload,
        icrc: o,
    }
}

/// Recomputes the ICRC of a frame `roce` built on `path` (after its payload was
/// rewritten, e.g. with a MAD).
pub fn reseal(buf: &mut [u8], path: &Path, lay: &Layout) {
    let o = lay.icrc;
    let crc = match path.encap {
        Encap::V2 { .. } => {
            let udp = lay.bth - dissectors::udp::LEN;
            icrc::roce_v2(&buf[lay.net..udp], &buf[udp..o])
        }
        Encap::V1 => icrc::roce_v1(&buf[lay.net..lay.bth], &buf[lay.bth..o]),
    };
    buf[o..o + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The IPv4/IPv6 + UDP headers (RoCE v2) or the GRH (RoCE v1) at `net`, for `tlen`
/// transport bytes; returns where the BTH starts.
fn emit_network(buf: &mut [u8], path: &Path, ecn: Ecn, net: usize, tlen: usize) -> usize {
    let tos = (path.dscp << 2) | ecn.bits();
    match path.encap {
        Encap::V2 { sport } => {
            let udp_len = dissectors::udp::LEN + tlen;
            let ip = IpRepr {
                src: path.src,
                dst: path.dst,
                dscp: path.dscp,
                ecn,
                ttl: path.ttl,
                flow_label: path.flow_label,
                ident: 0,
                protocol: dissectors::ip::PROTO_UDP,
                header_len: 0,
                total_len: 0,
                fragmented: false,
            };
            let hl = ip.emit(udp_len, &mut buf[net..]);
            UdpRepr {
                src_port: sport,
                dst_port: dissectors::udp::ROCE_V2_PORT,
                length: udp_len as u16,
                checksum: 0,
            }
            .emit(&mut buf[net + hl..]);
            net + hl + dissectors::udp::LEN
        }
        Encap::V1 => {
            GrhRepr {
                ip_ver: 6,
                tclass: tos,
                flow_label: path.flow_label,
                pay_len: tlen as u16,
                nxt_hdr: ib::grh::NXT_HDR_BTH,
                hop_lmt: path.ttl,
                sgid: gid(path.src),
                dgid: gid(path.dst),
            }
            .emit(&mut buf[net..]);
            net + ib::grh::LEN
        }
    }
}

/// The BTH, the extended headers of the opcode's chain in wire order, and the payload
/// with its pad, from `bth_off`; returns where the payload starts and where the ICRC goes.
fn emit_transport(
    buf: &mut [u8],
    p: &Pkt,
    chain: &dissectors::Chain,
    bth_off: usize,
    pad: usize,
) -> (usize, usize) {
    let mut bth = p.bth;
    bth.pad_cnt = pad as u8;
    bth.emit(&mut buf[bth_off..]);
    let mut o = bth_off + ib::bth::LEN;
    // Wire order of the extended headers, as in `dissectors::Chain`.
    macro_rules! ext {
        ($flag:expr, $field:ident, $module:ident) => {
            debug_assert_eq!($flag, p.$field.is_some(), stringify!($field));
            if $flag {
                p.$field.unwrap_or_default().emit(&mut buf[o..]);
                o += ib::$module::LEN;
            }
        };
    }
    ext!(chain.deth, deth, deth);
    ext!(chain.xrceth, xrceth, xrceth);
    ext!(chain.reth, reth, reth);
    ext!(chain.atomic_eth, atomic_eth, atomic_eth);
    ext!(chain.aeth, aeth, aeth);
    ext!(chain.atomic_ack_eth, atomic_ack_eth, atomic_ack_eth);
    ext!(chain.immdt, immdt, immdt);
    ext!(chain.ieth, ieth, ieth);
    if chain.cnp {
        CnpRepr {
            reserved_zero: true,
        }
        .emit(&mut buf[o..]);
        o += ib::cnp::LEN;
    }
    let payload = o;
    buf[o..o + p.payload_len as usize].fill(p.fill);
    o += p.payload_len as usize + pad;
    (payload, o)
}

/// Builds an Ethernet or SLL2 ARP frame; Ethernet frames are padded to the minimum
/// length when `pad` is set (as a receiver sees them; the sender's own copy is not).
pub fn arp(
    buf: &mut Vec<u8>,
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    link: &Link,
    a: &ArpRepr,
    pad: bool,
) -> usize {
    let l2 = link_len(link);
    let mut len = l2 + a.len();
    if pad && matches!(link, Link::Ethernet { .. }) {
        len = len.max(MIN_ETHERNET);
    }
    buf.clear();
    buf.resize(len, 0);
    let off = emit_link(buf, src_mac, dst_mac, link, ETHERTYPE_ARP);
    a.emit(&mut buf[off..]);
    len
}

/// Builds an 802.1Qbb PFC (or 802.3x PAUSE) frame, padded to the Ethernet minimum.
pub fn pause(buf: &mut Vec<u8>, src_mac: [u8; 6], p: &PauseRepr) -> usize {
    buf.clear();
    buf.resize(MIN_ETHERNET, 0);
    let off = emit_link(
        buf,
        src_mac,
        MAC_CONTROL_DST,
        &Link::Ethernet { vlan: None },
        ETHERTYPE_MAC_CONTROL,
    );
    p.emit(&mut buf[off..]);
    MIN_ETHERNET
}

/// A locally administered MAC derived from an address, so every host keeps one MAC.
pub fn mac_for(a: IpAddr) -> [u8; 6] {
    let o = match a {
        IpAddr::V4(v4) => v4.octets(),
        IpAddr::V6(v6) => {
            let s = v6.octets();
            [s[12], s[13], s[14], s[15]]
        }
    };
    let v6 = u8::from(a.is_ipv6());
    [0x02, v6, o[0], o[1], o[2], o[3]]
}

#[cfg(test)]
mod tests;
