//! `dissectors`: bytes in, typed headers out, for everything a RoCE user meets on the
//! wire — Ethernet / 802.1Q / QinQ, Linux cooked capture v1 and v2, raw IP, ERF and
//! native InfiniBand (LRH/GRH), IPv4/IPv6/UDP (through etherparse), RoCE v2 and v1, every
//! IBTA transport header (BTH, RDETH, DETH, XRCETH, FETH, RETH, AtomicETH, AETH,
//! AtomicAckETH, ImmDt, IETH), CNP, the ICRC, ARP and MAC control (PAUSE / PFC) frames.
//!
//! The contract: [`decode`] never panics and never fails as a whole. It returns every
//! layer it understood as owned, `Copy` values (no allocation, no borrowed data) plus a
//! [`Stop`] that says why decoding ended — complete, unsupported protocol, truncated by
//! the capture's snaplen, or malformed — with the layer and byte offset. No I/O, no clock,
//! no printing.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod arp;
mod bytes;
pub mod erf;
pub mod ethernet;
pub mod ib;
pub mod ip;
pub mod pfc;
pub mod sll;
pub mod types;
pub mod udp;
pub mod vlan;

use core::fmt;
use core::net::IpAddr;

pub use arp::{ArpOp, ArpRepr};
pub use erf::ErfRepr;
pub use ethernet::EthernetRepr;
pub use ib::aeth::{AethKind, AethRepr, NakCode};
pub use ib::atomic_ack_eth::AtomicAckEthRepr;
pub use ib::atomic_eth::AtomicEthRepr;
pub use ib::bth::BthRepr;
pub use ib::cnp::CnpRepr;
pub use ib::deth::DethRepr;
pub use ib::feth::FethRepr;
pub use ib::grh::GrhRepr;
pub use ib::icrc::IcrcStatus;
pub use ib::ieth::IethRepr;
pub use ib::immdt::ImmDtRepr;
pub use ib::lrh::LrhRepr;
pub use ib::opcode::{Chain, Opcode, Operation, Transport};
pub use ib::rdeth::RdethRepr;
pub use ib::reth::RethRepr;
pub use ib::xrceth::XrcethRepr;
pub use ip::{Ecn, IpRepr};
pub use pfc::PauseRepr;
pub use sll::SllRepr;
pub use types::{Msn, PKey, Psn, Qpn};
pub use udp::UdpRepr;
pub use vlan::VlanRepr;

/// Why a single header could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The input ended `need` bytes into a header that needs more.
    Truncated { need: usize, have: usize },
    /// The bytes contradict the protocol.
    Malformed(&'static str),
    /// A valid code point this crate does not decode further.
    Unsupported(&'static str),
}

impl Error {
    #[inline]
    pub(crate) fn need(b: &[u8], n: usize) -> Result<(), Error> {
        if b.len() < n {
            Err(Error::Truncated {
                need: n,
                have: b.len(),
            })
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { need, have } => write!(f, "needs {need} bytes, has {have}"),
            Error::Malformed(w) => write!(f, "malformed: {w}"),
            Error::Unsupported(w) => write!(f, "unsupported: {w}"),
        }
    }
}

/// The link layer of a capture (pcap LINKTYPE values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    Ethernet,
    LinuxSll,
    LinuxSll2,
    RawIp,
    Ipv4,
    Ipv6,
    Erf,
    Infiniband,
    IpOverIb,
    Other(u32),
}

impl LinkType {
    pub fn from_linktype(v: u32) -> LinkType {
        match v {
            1 => LinkType::Ethernet,
            12 | 14 | 101 => LinkType::RawIp,
            113 => LinkType::LinuxSll,
            197 => LinkType::Erf,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            242 => LinkType::IpOverIb,
            247 => LinkType::Infiniband,
            276 => LinkType::LinuxSll2,
            n => LinkType::Other(n),
        }
    }
    pub fn linktype(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::RawIp => 101,
            LinkType::LinuxSll => 113,
            LinkType::Erf => 197,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::IpOverIb => 242,
            LinkType::Infiniband => 247,
            LinkType::LinuxSll2 => 276,
            LinkType::Other(n) => n,
        }
    }
}

/// Decoder settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// UDP destination port that carries RoCE v2 (4791).
    pub roce_port: u16,
    /// Compute and compare the ICRC.
    pub check_icrc: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            roce_port: udp::ROCE_V2_PORT,
            check_icrc: true,
        }
    }
}

/// The layer a [`Stop`] refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    Link,
    Erf,
    Ethernet,
    Vlan,
    Sll,
    IpOverIb,
    Lrh,
    Grh,
    Ip,
    Udp,
    Bth,
    Rdeth,
    Deth,
    Xrceth,
    Feth,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Cnp,
    Payload,
    Icrc,
    Arp,
    MacControl,
}

impl Layer {
    pub fn name(self) -> &'static str {
        use Layer::*;
        match self {
            Link => "link",
            Erf => "erf",
            Ethernet => "eth",
            Vlan => "vlan",
            Sll => "sll",
            IpOverIb => "ipoib",
            Lrh => "lrh",
            Grh => "grh",
            Ip => "ip",
            Udp => "udp",
            Bth => "bth",
            Rdeth => "rdeth",
            Deth => "deth",
            Xrceth => "xrceth",
            Feth => "feth",
            Reth => "reth",
            AtomicEth => "atomiceth",
            Aeth => "aeth",
            AtomicAckEth => "atomicacketh",
            ImmDt => "immdt",
            Ieth => "ieth",
            Cnp => "cnp",
            Payload => "payload",
            Icrc => "icrc",
            Arp => "arp",
            MacControl => "macctl",
        }
    }
}

/// How decoding ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StopKind {
    /// Everything the frame claims to hold was decoded.
    #[default]
    Complete,
    /// A protocol or code point this decoder does not go into (TCP, IPv6 ND, ...).
    Unsupported,
    /// The capture's snaplen cut the frame inside this layer.
    Truncated,
    /// The bytes contradict the protocol (a length that does not fit, a bad field).
    Malformed,
}

impl StopKind {
    pub fn name(self) -> &'static str {
        match self {
            StopKind::Complete => "ok",
            StopKind::Unsupported => "unsupported",
            StopKind::Truncated => "truncated",
            StopKind::Malformed => "malformed",
        }
    }
}

/// Why and where decoding stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stop {
    pub kind: StopKind,
    pub layer: Layer,
    /// Byte offset in the frame where the layer that stopped begins (or was cut).
    pub offset: u32,
    pub why: &'static str,
}

impl fmt::Display for Stop {
    /// `ok`, or `kind:layer@offset` (e.g. `truncated:reth@54`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == StopKind::Complete {
            f.write_str("ok")
        } else {
            write!(
                f,
                "{}:{}@{}",
                self.kind.name(),
                self.layer.name(),
                self.offset
            )
        }
    }
}

/// Which framing carried the transport headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoceVersion {
    /// EtherType 0x8915 + GRH.
    V1,
    /// IP/UDP port 4791.
    V2,
    /// Native InfiniBand (LRH [+ GRH]).
    Ib,
}

/// Everything decoded from the transport headers of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roce {
    pub version: RoceVersion,
    pub bth: BthRepr,
    /// `None` for an opcode outside the IBTA table (reserved, manufacturer-specific).
    pub operation: Option<Operation>,
    pub rdeth: Option<RdethRepr>,
    pub deth: Option<DethRepr>,
    pub xrceth: Option<XrcethRepr>,
    pub feth: Option<FethRepr>,
    pub reth: Option<RethRepr>,
    pub atomic_eth: Option<AtomicEthRepr>,
    pub aeth: Option<AethRepr>,
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    pub immdt: Option<ImmDtRepr>,
    pub ieth: Option<IethRepr>,
    pub cnp: Option<CnpRepr>,
    /// Offset of the BTH in the frame.
    pub bth_offset: u32,
    /// Offset of the payload in the frame.
    pub payload_offset: u32,
    /// Payload length as the packet declares it (without pad and ICRC), whether or not
    /// the capture kept it all.
    pub payload_len: u32,
    pub icrc: IcrcStatus,
    /// The ICRC stored in the packet, when captured.
    pub icrc_stored: Option<u32>,
    /// The ICRC computed over the packet, when it could be.
    pub icrc_computed: Option<u32>,
}

impl Roce {
    fn new(version: RoceVersion, bth: BthRepr, bth_offset: usize) -> Self {
        Roce {
            version,
            bth,
            operation: None,
            rdeth: None,
            deth: None,
            xrceth: None,
            feth: None,
            reth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack_eth: None,
            immdt: None,
            ieth: None,
            cnp: None,
            bth_offset: bth_offset as u32,
            payload_offset: 0,
            payload_len: 0,
            icrc: IcrcStatus::Absent,
            icrc_stored: None,
            icrc_computed: None,
        }
    }
    pub fn transport(&self) -> Transport {
        self.bth.opcode.transport()
    }
    pub fn is_cnp(&self) -> bool {
        self.bth.opcode == Opcode::CNP
    }
    /// "RC RDMA WRITE First", "CNP Congestion Notification", "MFR opcode 0xf0".
    pub fn describe(&self) -> OpName {
        OpName(self.bth.opcode, self.operation)
    }
}

/// Display helper for an opcode: transport and operation name.
#[derive(Clone, Copy, Debug)]
pub struct OpName(pub Opcode, pub Option<Operation>);

impl fmt::Display for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(Operation::Cnp) => f.write_str("CNP"),
            Some(o) => write!(f, "{} {}", self.0.transport().name(), o.name()),
            None => write!(
                f,
                "{} opcode 0x{:02x}",
                self.0.transport().name(),
                self.0 .0
            ),
        }
    }
}

/// An endpoint address: an IP address (RoCE v2, or a RoCE v1 / IB GID) or, on native
/// InfiniBand without a GRH, a LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    Ip(IpAddr),
    Lid(u16),
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Ip(a) => write!(f, "{a}"),
            Addr::Lid(l) => write!(f, "LID {l}"),
        }
    }
}

/// Everything [`decode`] understood about one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub link: LinkType,
    pub cap_len: u32,
    pub orig_len: u32,
    pub erf: Option<ErfRepr>,
    pub sll: Option<SllRepr>,
    pub eth: Option<EthernetRepr>,
    /// Outer tag first.
    pub vlans: [Option<VlanRepr>; 2],
    /// The innermost EtherType (or SLL / IPoIB protocol).
    pub ethertype: Option<u16>,
    pub lrh: Option<LrhRepr>,
    pub grh: Option<GrhRepr>,
    pub ip: Option<IpRepr>,
    pub udp: Option<UdpRepr>,
    pub roce: Option<Roce>,
    pub arp: Option<ArpRepr>,
    pub pause: Option<PauseRepr>,
    pub stop: Stop,
}

impl Decoded {
    fn new(link: LinkType, cap_len: usize, orig_len: u32) -> Self {
        Decoded {
            link,
            cap_len: cap_len as u32,
            orig_len,
            erf: None,
            sll: None,
            eth: None,
            vlans: [None; 2],
            ethertype: None,
            lrh: None,
            grh: None,
            ip: None,
            udp: None,
            roce: None,
            arp: None,
            pause: None,
            stop: Stop {
                kind: StopKind::Complete,
                layer: Layer::Link,
                offset: 0,
                why: "",
            },
        }
    }

    /// Forgets every layer (writing only the `Option` tags) for a new frame.
    fn reset(&mut self, link: LinkType, cap_len: usize, orig_len: u32) {
        self.link = link;
        self.cap_len = cap_len as u32;
        self.orig_len = orig_len;
        self.erf = None;
        self.sll = None;
        self.eth = None;
        self.vlans = [None; 2];
        self.ethertype = None;
        self.lrh = None;
        self.grh = None;
        self.ip = None;
        self.udp = None;
        self.roce = None;
        self.arp = None;
        self.pause = None;
    }

    /// Source and destination of the packet at the network layer.
    pub fn endpoints(&self) -> Option<(Addr, Addr)> {
        if let Some(ip) = &self.ip {
            return Some((Addr::Ip(ip.src), Addr::Ip(ip.dst)));
        }
        if let Some(g) = &self.grh {
            return Some((
                Addr::Ip(ip::gid_to_ip(g.sgid)),
                Addr::Ip(ip::gid_to_ip(g.dgid)),
            ));
        }
        self.lrh.map(|l| (Addr::Lid(l.slid), Addr::Lid(l.dlid)))
    }

    /// ECN bits of the IP header (RoCE v2) or the GRH traffic class (RoCE v1 / IB).
    pub fn ecn(&self) -> Option<Ecn> {
        if let Some(ip) = &self.ip {
            return Some(ip.ecn);
        }
        self.grh.map(|g| Ecn::from_bits(g.tclass))
    }

    /// DSCP of the IP header or the GRH traffic class.
    pub fn dscp(&self) -> Option<u8> {
        if let Some(ip) = &self.ip {
            return Some(ip.dscp);
        }
        self.grh.map(|g| g.tclass >> 2)
    }

    /// 802.1Q priority of the outer tag.
    pub fn pcp(&self) -> Option<u8> {
        self.vlans[0].map(|v| v.pcp)
    }

    /// The source MAC address, when the frame has one (Ethernet, or SLL with 6 bytes).
    pub fn src_mac(&self) -> Option<[u8; 6]> {
        if let Some(e) = &self.eth {
            return Some(e.src);
        }
        let s = self.sll.as_ref()?;
        if s.addr_len == 6 {
            let mut m = [0u8; 6];
            m.copy_from_slice(&s.addr[..6]);
            Some(m)
        } else {
            None
        }
    }
}

/// Decodes one frame of the given link type. `orig_len` is the length on the wire; when
/// it exceeds `frame.len()` the capture cut the frame, and running out of bytes is
/// reported as truncation instead of malformation.
pub fn decode(link: LinkType, frame: &[u8], orig_len: u32, cfg: &Config) -> Decoded {
    let mut d = Decoded::new(link, frame.len(), orig_len);
    decode_into(link, frame, orig_len, cfg, &mut d);
    d
}

/// [`decode`] into an existing `Decoded`, which is reset first: the hot path of a long
/// analysis reuses one value instead of moving a fresh one per frame.
pub fn decode_into(link: LinkType, frame: &[u8], orig_len: u32, cfg: &Config, d: &mut Decoded) {
    d.reset(link, frame.len(), orig_len);
    let cx = Cx {
        frame,
        cut: core::cell::Cell::new((frame.len() as u64) < u64::from(orig_len)),
        cfg,
    };
    d.stop = cx.link(d, link);
}

struct Cx<'a, 'c> {
    frame: &'a [u8],
    /// The frame is shorter than the packet: the capture's snaplen cut it. Set from the
    /// record's wire length, or later when a length field (IP total length, GRH PayLen,
    /// LRH PktLen) claims more than was captured — some capture paths (the mlx5 sniffer)
    /// record the cut length as the wire length.
    cut: core::cell::Cell<bool>,
    cfg: &'c Config,
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

impl<'a> Cx<'a, '_> {
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

    fn link(&self, d: &mut Decoded, link: LinkType) -> Stop {
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
                Some(4) | Some(6) => self.ip(d, 0),
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
        let s = match IpRepr::slice(self.at(off)) {
            Ok(s) => s,
            Err(e) => return self.fail(e, Layer::Ip, off),
        };
        d.ip = Some(s.repr);
        let ip_end = off + s.repr.total_len as usize;
        self.note_declared_end(ip_end);
        let l4 = off + s.payload_offset;
        if s.repr.fragmented {
            return unsupported(Layer::Ip, l4, "IP fragment");
        }
        if s.repr.protocol != ip::PROTO_UDP {
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
        let stop = self.chain(r, &chain, off, end, icrc_off);
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
