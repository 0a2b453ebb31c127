//! The walk from the link layer down to the RoCE transport headers: one method per
//! layer, each reading its header at an offset and handing the rest of the frame to the
//! next, until a layer completes the frame or gives the [`Stop`] that ends it. The
//! header chain after the BTH comes from the opcode table (`ib::opcode`), never from
//! scattered checks; the ICRC is checked over what the chain covered.

use crate::*;

/// One frame being walked layer by layer: the bytes, whether the capture cut them, and
/// the decoder's configuration.
pub(crate) struct Walker<'a, 'c> {
    frame: &'a [u8],
    /// The frame is shorter than the packet: the capture's snaplen cut it. Set from the
    /// record's wire length, or later when a length field (IP total length, GRH PayLen,
    /// LRH PktLen) claims more than was captured — some capture paths (the mlx5 sniffer)
    /// record the cut length as the wire length.
    cut: core::cell::Cell<bool>,
    cfg: &'c Config,
    /// Every header the general way, without the fast paths (the reference for tests).
    general: bool,
}

const fn complete(layer: Layer, offset: usize) -> Stop {
    Stop {
        kind: StopKind::Complete,
        layer,
        offset: offset as u32,
        why: "",
    }
}

const fn unsupported(layer: Layer, offset: usize, why: &'static str) -> Stop {
    Stop {
        kind: StopKind::Unsupported,
        layer,
        offset: offset as u32,
        why,
    }
}

const fn malformed(layer: Layer, offset: usize, why: &'static str) -> Stop {
    Stop {
        kind: StopKind::Malformed,
        layer,
        offset: offset as u32,
        why,
    }
}

/// Internal result: `Err` carries the stop of a layer that could not continue.
type Step<T> = Result<T, Stop>;

mod tunnel;

impl<'a, 'c> Walker<'a, 'c> {
    pub(crate) fn new(frame: &'a [u8], orig_len: u32, cfg: &'c Config) -> Self {
        Walker {
            frame,
            cut: core::cell::Cell::new((frame.len() as u64) < u64::from(orig_len)),
            cfg,
            general: false,
        }
    }

    /// The walk without the fast paths (see [`crate::decode_into_general`]).
    pub(crate) fn general(mut self) -> Self {
        self.general = true;
        self
    }
}

impl<'a> Walker<'a, '_> {
    fn at(&self, off: usize) -> &'a [u8] {
        self.frame.get(off..).unwrap_or(&[])
    }

    /// A network-layer length field says the packet ends at `end`: when that is beyond
    /// the captured bytes, the capture cut the frame.
    fn note_declared_end(&self, end: usize) {
        if end > self.frame.len() {
            self.cut.set(true);
        }
    }

    /// Maps a header parse error at `off` to a stop.
    fn fail(&self, e: Error, layer: Layer, off: usize) -> Stop {
        match e {
            Error::Truncated { .. } if self.cut.get() => Stop {
                kind: StopKind::Truncated,
                layer,
                offset: self.frame.len() as u32,
                why: "cut by the capture snaplen",
            },
            Error::Truncated { .. } => malformed(
                layer,
                off.min(self.frame.len()),
                "frame ends inside the header",
            ),
            Error::Malformed(w) => malformed(layer, off.min(self.frame.len()), w),
            Error::Unsupported(w) => unsupported(layer, off.min(self.frame.len()), w),
        }
    }

    /// Bytes `[off, off+n)` of a packet whose own length fields say it ends at `end`.
    fn need(&self, layer: Layer, off: usize, n: usize, end: usize) -> Step<&'a [u8]> {
        if off + n > end {
            return Err(malformed(
                layer,
                off,
                "packet length too short for this header",
            ));
        }
        match self.frame.get(off..off + n) {
            Some(s) => Ok(s),
            None => Err(self.fail(
                Error::Truncated {
                    need: n,
                    have: self.frame.len().saturating_sub(off),
                },
                layer,
                off,
            )),
        }
    }

    pub(crate) fn link(&self, d: &mut Decoded, link: LinkType) -> Stop {
        match link {
            LinkType::Ethernet => self.ethernet(d, 0),
            LinkType::LinuxSll | LinkType::LinuxSll2 => {
                let r = if link == LinkType::LinuxSll {
                    SllRepr::parse_v1(self.frame)
                } else {
                    SllRepr::parse_v2(self.frame)
                };
                match r {
                    Ok(s) => {
                        d.sll = Some(s);
                        self.ethertype(d, s.protocol, s.header_len(), 0)
                    }
                    Err(e) => self.fail(e, Layer::Sll, 0),
                }
            }
            LinkType::RawIp => match self.frame.first().map(|b| b >> 4) {
                Some(4 | 6) => self.ip(d, 0),
                Some(_) => malformed(
                    Layer::Ip,
                    0,
                    "raw IP frame with an IP version other than 4 or 6",
                ),
                None => self.fail(Error::Truncated { need: 1, have: 0 }, Layer::Ip, 0),
            },
            LinkType::Ipv4 | LinkType::Ipv6 => self.ip(d, 0),
            LinkType::Erf => match ErfRepr::parse(self.frame) {
                Ok(e) => {
                    d.erf = Some(e);
                    let off = usize::from(e.header_len);
                    match e.rec_type {
                        erf::TYPE_INFINIBAND | erf::TYPE_INFINIBAND_LINK => self.infiniband(d, off),
                        erf::TYPE_ETH => self.ethernet(d, off + 2),
                        _ => unsupported(Layer::Erf, 0, "ERF record type"),
                    }
                }
                Err(e) => self.fail(e, Layer::Erf, 0),
            },
            LinkType::Infiniband => self.infiniband(d, 0),
            LinkType::IpOverIb => {
                // Linux IPoIB pseudo-header: 20-byte source and destination hardware
                // addresses, then protocol (2) and reserved (2).
                const IPOIB_LEN: usize = 44;
                match self.need(Layer::IpOverIb, 0, IPOIB_LEN, usize::MAX) {
                    Ok(h) => {
                        let proto = u16::from_be_bytes([h[40], h[41]]);
                        self.ethertype(d, proto, IPOIB_LEN, 0)
                    }
                    Err(s) => s,
                }
            }
            LinkType::Other(_) => unsupported(Layer::Link, 0, "link type"),
        }
    }

    fn ethernet(&self, d: &mut Decoded, off: usize) -> Stop {
        match EthernetRepr::parse(self.at(off)) {
            Ok(e) => {
                d.eth = Some(e);
                self.ethertype(d, e.ethertype, off + ethernet::LEN, 0)
            }
            Err(e) => self.fail(e, Layer::Ethernet, off),
        }
    }

    fn ethertype(&self, d: &mut Decoded, et: u16, off: usize, depth: usize) -> Stop {
        use ethernet::*;
        d.ethertype = Some(et);
        match et {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => self.ip(d, off),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => {
                if depth >= d.vlans.len() {
                    return unsupported(Layer::Vlan, off, "more than two VLAN tags");
                }
                match VlanRepr::parse(et, self.at(off)) {
                    Ok(v) => {
                        d.vlans[depth] = Some(v);
                        self.ethertype(d, v.ethertype, off + vlan::LEN, depth + 1)
                    }
                    Err(e) => self.fail(e, Layer::Vlan, off),
                }
            }
            ETHERTYPE_ROCE_V1 => self.roce_v1(d, off),
            ETHERTYPE_ARP => match ArpRepr::parse(self.at(off)) {
                Ok(a) => {
                    d.arp = Some(a);
                    complete(Layer::Arp, off)
                }
                Err(e) => self.fail(e, Layer::Arp, off),
            },
            ETHERTYPE_MAC_CONTROL => match PauseRepr::parse(self.at(off)) {
                Ok(p) => {
                    d.pause = Some(p);
                    complete(Layer::MacControl, off)
                }
                Err(e) => self.fail(e, Layer::MacControl, off),
            },
            n if n < 0x0600 => unsupported(Layer::Ethernet, off, "802.3 length field (LLC)"),
            _ => unsupported(Layer::Ethernet, off, "EtherType"),
        }
    }

    fn ip(&self, d: &mut Decoded, off: usize) -> Stop {
        // The fast path writes the header into `d.ip` in place (`ip_fast::slice_into`).
        let fast = if self.general {
            None
        } else {
            crate::ip_fast::slice_into(self.at(off), &mut d.ip)
        };
        let s = match fast {
            Some(s) => s,
            None => match IpRepr::slice_general(self.at(off)) {
                Ok(s) => {
                    d.ip = Some(s.repr);
                    s.shape
                }
                Err(e) => return self.fail(e, Layer::Ip, off),
            },
        };
        let Some(ip) = d.ip.as_ref() else {
            // Both paths above set it: this is never taken.
            return malformed(Layer::Ip, off, "IP header not kept");
        };
        let (total_len, fragmented, protocol) = (ip.total_len, ip.fragmented, ip.protocol);
        let ip_end = off + total_len as usize;
        self.note_declared_end(ip_end);
        let l4 = off + s.payload_offset;
        if fragmented {
            return unsupported(Layer::Ip, l4, "IP fragment");
        }
        if protocol == ip::PROTO_GRE {
            let repr = *ip;
            return self.gre(d, repr, l4, ip_end);
        }
        if protocol != ip::PROTO_UDP {
            return unsupported(Layer::Ip, l4, "IP protocol");
        }
        let u = match self.need(Layer::Udp, l4, udp::LEN, ip_end) {
            Ok(b) => match UdpRepr::parse(b) {
                Ok(u) => u,
                Err(e) => return self.fail(e, Layer::Udp, l4),
            },
            Err(s) => return s,
        };
        d.udp = Some(u);
        if u.dst_port != self.cfg.roce_port {
            let repr = *ip;
            if let Some(stop) = self.udp_tunnel(d, repr, u, l4, ip_end) {
                return stop;
            }
            return unsupported(Layer::Udp, l4 + udp::LEN, "UDP port");
        }
        let ulen = usize::from(u.length);
        if ulen < udp::LEN {
            return malformed(Layer::Udp, l4, "UDP length shorter than its header");
        }
        let end = l4 + ulen;
        if end > ip_end {
            return malformed(Layer::Udp, l4, "UDP length exceeds the IP payload");
        }
        let ip_hdr = &self.frame[off..off + s.icrc_header_len.min(s.payload_offset)];
        self.transport(
            d,
            RoceVersion::V2,
            l4 + udp::LEN,
            end,
            IcrcCtx::V2 {
                ip_hdr,
                udp_off: l4,
            },
        )
    }

    fn roce_v1(&self, d: &mut Decoded, off: usize) -> Stop {
        let g = match self.need(Layer::Grh, off, ib::grh::LEN, usize::MAX) {
            Ok(b) => match GrhRepr::parse(b) {
                Ok(g) => g,
                Err(e) => return self.fail(e, Layer::Grh, off),
            },
            Err(s) => return s,
        };
        d.grh = Some(g);
        if g.nxt_hdr != ib::grh::NXT_HDR_BTH {
            return unsupported(
                Layer::Grh,
                off + ib::grh::LEN,
                "GRH next header is not a BTH",
            );
        }
        let bth = off + ib::grh::LEN;
        let end = bth + usize::from(g.pay_len);
        self.note_declared_end(end);
        let grh = &self.frame[off..bth];
        self.transport(d, RoceVersion::V1, bth, end, IcrcCtx::V1 { grh })
    }

    fn infiniband(&self, d: &mut Decoded, off: usize) -> Stop {
        let l = match LrhRepr::parse(self.at(off)) {
            Ok(l) => l,
            Err(e) => return self.fail(e, Layer::Lrh, off),
        };
        d.lrh = Some(l);
        let end = off + usize::from(l.pkt_len) * 4;
        self.note_declared_end(end);
        let lrh = &self.frame[off..off + ib::lrh::LEN];
        match l.lnh {
            2 => self.transport(
                d,
                RoceVersion::Ib,
                off + 8,
                end,
                IcrcCtx::Ib { lrh, grh: None },
            ),
            3 => {
                let goff = off + ib::lrh::LEN;
                let g = match self.need(Layer::Grh, goff, ib::grh::LEN, end) {
                    Ok(b) => match GrhRepr::parse(b) {
                        Ok(g) => g,
                        Err(e) => return self.fail(e, Layer::Grh, goff),
                    },
                    Err(s) => return s,
                };
                d.grh = Some(g);
                if g.nxt_hdr != ib::grh::NXT_HDR_BTH {
                    return unsupported(
                        Layer::Grh,
                        goff + ib::grh::LEN,
                        "GRH next header is not a BTH",
                    );
                }
                let grh = &self.frame[goff..goff + ib::grh::LEN];
                self.transport(
                    d,
                    RoceVersion::Ib,
                    goff + ib::grh::LEN,
                    end,
                    IcrcCtx::Ib {
                        lrh,
                        grh: Some(grh),
                    },
                )
            }
            _ => unsupported(
                Layer::Lrh,
                off + ib::lrh::LEN,
                "LRH next header is raw or IP",
            ),
        }
    }

    /// Decodes BTH .. ICRC in `[off, end)`, where `end` is the packet end the outer
    /// length field declares (the ICRC's last byte + 1).
    fn transport(
        &self,
        d: &mut Decoded,
        version: RoceVersion,
        off: usize,
        end: usize,
        icrc: IcrcCtx<'a>,
    ) -> Stop {
        let bth = match self.need(Layer::Bth, off, ib::bth::LEN, end) {
            Ok(b) => match BthRepr::parse(b) {
                Ok(b) => b,
                Err(e) => return self.fail(e, Layer::Bth, off),
            },
            Err(s) => return s,
        };
        // Built in place: `Roce` is a couple of hundred bytes, and moving it into
        // `d.roce` afterwards was a measurable part of the per-packet cost.
        let r = d.roce.insert(Roce::new(version, bth, off));
        // The ICRC covers everything up to the last 4 bytes, whatever the opcode.
        if end < off + ib::bth::LEN + 4 {
            return malformed(Layer::Icrc, off, "no room for the ICRC");
        }
        let icrc_off = end - 4;
        match self.frame.get(icrc_off..end) {
            Some(stored) if self.cfg.check_icrc => {
                let covered = &self.frame[..icrc_off];
                let computed = icrc.compute(covered, off);
                r.icrc_stored = ib::icrc::stored(stored);
                r.icrc_computed = Some(computed);
                r.icrc = if r.icrc_stored == Some(computed) {
                    IcrcStatus::Ok
                } else {
                    IcrcStatus::Bad
                };
            }
            Some(stored) => r.icrc_stored = ib::icrc::stored(stored),
            None => r.icrc = IcrcStatus::Truncated,
        }
        let Some((op, chain)) = bth.opcode.decode() else {
            return unsupported(Layer::Bth, off, "opcode outside the IBTA table");
        };
        r.operation = Some(op);
        let mut stop = self.chain(r, &chain, off, end, icrc_off);
        if is_mad(r) && matches!(stop.kind, StopKind::Complete | StopKind::Truncated) {
            if let Some(s) = self.mad(r, icrc_off) {
                stop = s;
            }
        }
        // mlx5 Dynamically Connected traffic reuses the RD opcode range with its own
        // headers after the BTH; a packet there that does not fit IBTA RD is not
        // malformed, just not RD.
        if stop.kind == StopKind::Malformed && bth.opcode.transport() == Transport::Rd {
            return unsupported(
                stop.layer,
                stop.offset as usize,
                "RD-range opcode that does not fit IBTA RD (mlx5 DC?)",
            );
        }
        stop
    }

    /// Extended headers, payload and pad of a packet whose opcode decoded to `chain`.
    fn chain(&self, r: &mut Roce, chain: &Chain, off: usize, end: usize, icrc_off: usize) -> Stop {
        let mut p = off + ib::bth::LEN;
        if let Some(s) = self.ext_headers(r, chain, &mut p, end) {
            return s;
        }
        let pad = usize::from(r.bth.pad_cnt);
        r.payload_offset = p as u32;
        let Some(payload_len) = icrc_off.checked_sub(p + pad) else {
            return malformed(Layer::Payload, p, "pad count larger than the payload");
        };
        r.payload_len = payload_len as u32;
        if !chain.payload && payload_len != 0 {
            return malformed(Layer::Payload, p, "payload on an opcode that carries none");
        }
        if end > self.frame.len() {
            if self.cut.get() {
                return Stop {
                    kind: StopKind::Truncated,
                    layer: if self.frame.len() < icrc_off {
                        Layer::Payload
                    } else {
                        Layer::Icrc
                    },
                    offset: self.frame.len() as u32,
                    why: "cut by the capture snaplen",
                };
            }
            return malformed(
                Layer::Payload,
                p,
                "length fields claim more bytes than the frame has",
            );
        }
        complete(Layer::Payload, p)
    }

    /// Decodes the MAD in the payload of a UD SEND to QP0 / QP1 (the payload ends at
    /// `icrc_off`, less the pad). `None` when it decoded; otherwise the stop that ends
    /// the frame inside the MAD header or the CM message.
    fn mad(&self, r: &mut Roce, icrc_off: usize) -> Option<Stop> {
        let p = r.payload_offset as usize;
        let end = (p + r.payload_len as usize).min(icrc_off);
        let captured = self.frame.get(p..end.min(self.frame.len())).unwrap_or(&[]);
        match Mad::parse(captured) {
            Ok(m) => {
                r.mad = Some(m);
                None
            }
            Err(mad::MadError::Header(e)) => Some(self.fail(e, Layer::Mad, p)),
            Err(mad::MadError::Cm(hdr, e)) => {
                r.mad = Some(Mad { hdr, cm: None });
                Some(self.fail(e, Layer::Cm, p + mad::LEN))
            }
        }
    }

    /// Parses the extended headers of `chain` in wire order, advancing `p`.
    fn ext_headers(&self, r: &mut Roce, c: &Chain, p: &mut usize, end: usize) -> Option<Stop> {
        macro_rules! hdr {
            ($flag:expr, $layer:expr, $module:ident, $repr:ty, $field:ident) => {
                if $flag {
                    match self.need($layer, *p, ib::$module::LEN, end) {
                        Ok(b) => match <$repr>::parse(b) {
                            Ok(v) => r.$field = Some(v),
                            Err(e) => return Some(self.fail(e, $layer, *p)),
                        },
                        Err(s) => return Some(s),
                    }
                    *p += ib::$module::LEN;
                }
            };
        }
        hdr!(c.rdeth, Layer::Rdeth, rdeth, RdethRepr, rdeth);
        hdr!(c.deth, Layer::Deth, deth, DethRepr, deth);
        hdr!(c.xrceth, Layer::Xrceth, xrceth, XrcethRepr, xrceth);
        hdr!(c.feth, Layer::Feth, feth, FethRepr, feth);
        hdr!(c.reth, Layer::Reth, reth, RethRepr, reth);
        hdr!(
            c.atomic_eth,
            Layer::AtomicEth,
            atomic_eth,
            AtomicEthRepr,
            atomic_eth
        );
        hdr!(c.aeth, Layer::Aeth, aeth, AethRepr, aeth);
        hdr!(
            c.atomic_ack_eth,
            Layer::AtomicAckEth,
            atomic_ack_eth,
            AtomicAckEthRepr,
            atomic_ack_eth
        );
        hdr!(c.immdt, Layer::ImmDt, immdt, ImmDtRepr, immdt);
        hdr!(c.ieth, Layer::Ieth, ieth, IethRepr, ieth);
        hdr!(c.cnp, Layer::Cnp, cnp, CnpRepr, cnp);
        None
    }
}

/// A UD SEND Only to QP0 (SMI) or QP1 (GSI): its payload is a MAD.
fn is_mad(r: &Roce) -> bool {
    r.operation == Some(Operation::SendOnly)
        && r.transport() == Transport::Ud
        && r.bth.dest_qp.0 <= 1
        && r.deth.is_some()
}

/// What the ICRC of a packet covers besides the transport.
#[derive(Clone, Copy)]
enum IcrcCtx<'a> {
    V2 {
        ip_hdr: &'a [u8],
        udp_off: usize,
    },
    V1 {
        grh: &'a [u8],
    },
    Ib {
        lrh: &'a [u8],
        grh: Option<&'a [u8]>,
    },
}

impl IcrcCtx<'_> {
    /// `covered` is the frame up to the ICRC; `bth` the BTH offset.
    fn compute(&self, covered: &[u8], bth: usize) -> u32 {
        match *self {
            IcrcCtx::V2 { ip_hdr, udp_off } => ib::icrc::roce_v2(ip_hdr, &covered[udp_off..]),
            IcrcCtx::V1 { grh } => ib::icrc::roce_v1(grh, &covered[bth..]),
            IcrcCtx::Ib { lrh, grh } => ib::icrc::infiniband(lrh, grh, &covered[bth..]),
        }
    }
}
