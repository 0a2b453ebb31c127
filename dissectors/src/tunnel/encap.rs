//! The inverse of the walk: wraps an Ethernet frame in a mirror / overlay encapsulation
//! (outer Ethernet, IPv4 198.51.100.1 → 198.51.100.2, then GRE [+ ERSPAN], VXLAN or
//! Geneve). For tests, fuzz seeds and tools that make mirrored copies of captures; it
//! allocates, so it has no place on a per-packet analysis path.

use super::*;
use crate::ethernet;
use crate::ip::Ecn;

/// What to wrap a frame in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encap {
    pub kind: TunnelKind,
    /// ERSPAN session (10 bits) / GRE key / VNI (24 bits).
    pub session: u32,
    /// GRE: carry a key (`session`); ERSPAN II/III always carry a sequence number.
    pub gre_key: bool,
    /// GRE: carry a checksum (computed, RFC 2784 §2.5).
    pub gre_checksum: bool,
    /// GRE: carry the inner IP packet (protocol 0x0800 / 0x86DD) instead of the frame.
    pub ip_payload: bool,
    /// ERSPAN II index / III hardware id.
    pub port: u32,
    /// ERSPAN III direction.
    pub egress: bool,
    /// ERSPAN III platform subheader.
    pub platform: Option<(u8, u64)>,
    /// ERSPAN original VLAN and COS.
    pub vlan: u16,
    pub cos: u8,
}

impl Encap {
    pub fn new(kind: TunnelKind, session: u32) -> Self {
        Encap {
            kind,
            session,
            gre_key: false,
            gre_checksum: false,
            ip_payload: false,
            port: 0,
            egress: false,
            platform: None,
            vlan: 0,
            cos: 0,
        }
    }
}

const OUTER_SRC: [u8; 4] = [198, 51, 100, 1];
const OUTER_DST: [u8; 4] = [198, 51, 100, 2];

/// Appends the encapsulated copy of `frame` (an Ethernet frame) to `out`. `seq` is the
/// GRE sequence number, `ts` the ERSPAN III timestamp. `None` when `ip_payload` is asked
/// for a frame that is not Ethernet + IPv4/IPv6.
pub fn wrap(e: &Encap, seq: u32, ts: u32, frame: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let mut inner = frame;
    let mut inner_proto = gre::PROTO_TEB;
    if e.ip_payload {
        let et = crate::EthernetRepr::parse(frame).ok()?.ethertype;
        if et != ethernet::ETHERTYPE_IPV4 && et != ethernet::ETHERTYPE_IPV6 {
            return None;
        }
        inner = &frame[ethernet::LEN..];
        inner_proto = et;
    }
    let mut hdr = [0u8; 64];
    let (proto, hlen) = match e.kind {
        TunnelKind::Vxlan => {
            VxlanRepr {
                flags: 0x0800,
                vni: e.session & 0xff_ffff,
            }
            .emit(&mut hdr[8..]);
            (crate::ip::PROTO_UDP, 8 + vxlan::LEN)
        }
        TunnelKind::Geneve => {
            let g = GeneveRepr {
                version: 0,
                opt_len: 2,
                oam: false,
                critical: false,
                protocol: inner_proto,
                vni: e.session & 0xff_ffff,
            };
            g.emit(&mut hdr[8..]);
            // One experimental-class option (0xffff, type 1, 4 bytes of data).
            hdr[16..24].copy_from_slice(&[0xff, 0xff, 0x01, 0x01, 0xde, 0xad, 0xbe, 0xef]);
            (crate::ip::PROTO_UDP, 8 + g.header_len())
        }
        _ => {
            let erspan = match e.kind {
                TunnelKind::ErspanII | TunnelKind::ErspanIII => {
                    let iii = e.kind == TunnelKind::ErspanIII;
                    Some(ErspanRepr {
                        version: if iii { 2 } else { 1 },
                        vlan: e.vlan,
                        cos: e.cos,
                        encap_bso: 0,
                        truncated: false,
                        session: (e.session & 0x3ff) as u16,
                        index: if iii { 0 } else { e.port & 0xf_ffff },
                        timestamp: if iii { ts } else { 0 },
                        sgt: 0,
                        p: false,
                        ft: 0,
                        hw_id: if iii { (e.port & 0x3f) as u8 } else { 0 },
                        egress: iii && e.egress,
                        granularity: u8::from(iii),
                        o: iii && e.platform.is_some(),
                        platform: if iii { e.platform } else { None },
                    })
                }
                _ => None,
            };
            let g = GreRepr {
                flags_and_version: 0,
                protocol: match e.kind {
                    TunnelKind::ErspanI | TunnelKind::ErspanII => gre::PROTO_ERSPAN_II,
                    TunnelKind::ErspanIII => gre::PROTO_ERSPAN_III,
                    _ => inner_proto,
                },
                checksum: e.gre_checksum.then_some(0),
                key: (e.gre_key || e.kind == TunnelKind::Gre && e.session != 0)
                    .then_some(e.session),
                seq: erspan.is_some().then_some(seq),
            };
            g.emit(&mut hdr);
            let mut n = g.header_len();
            if let Some(x) = erspan {
                x.emit(&mut hdr[n..]);
                n += x.header_len();
            }
            (47, n)
        }
    };
    let payload_len = hlen + inner.len();
    let start = out.len();
    let mut eth = [0u8; ethernet::LEN];
    crate::EthernetRepr {
        dst: [2, 0, 0, 0, 0, 0x0b],
        src: [2, 0, 0, 0, 0, 0x0a],
        ethertype: ethernet::ETHERTYPE_IPV4,
    }
    .emit(&mut eth);
    out.extend_from_slice(&eth);
    let mut ip = [0u8; crate::ip::IPV4_LEN];
    IpRepr {
        src: core::net::Ipv4Addr::from(OUTER_SRC).into(),
        dst: core::net::Ipv4Addr::from(OUTER_DST).into(),
        dscp: 0,
        ecn: Ecn::NotEct,
        ttl: 64,
        flow_label: 0,
        ident: seq as u16,
        protocol: proto,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    }
    .emit(payload_len, &mut ip);
    out.extend_from_slice(&ip);
    if proto == crate::ip::PROTO_UDP {
        UdpRepr {
            src_port: 0xc000 | (seq as u16 & 0x3fff),
            dst_port: if e.kind == TunnelKind::Vxlan {
                vxlan::PORT
            } else {
                geneve::PORT
            },
            length: payload_len as u16,
            checksum: 0,
        }
        .emit(&mut hdr[..8]);
    }
    let t = out.len();
    out.extend_from_slice(&hdr[..hlen]);
    out.extend_from_slice(inner);
    if e.gre_checksum && proto == 47 {
        let c = internet_checksum(&out[t..]);
        out[t + 4..t + 6].copy_from_slice(&c.to_be_bytes());
    }
    debug_assert!(out.len() - start == ethernet::LEN + crate::ip::IPV4_LEN + payload_len);
    Some(())
}

/// The 16-bit one's complement of the one's complement sum (RFC 1071).
fn internet_checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        sum += u32::from(w);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
