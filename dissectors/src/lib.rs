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
pub mod cm;
pub mod erf;
pub mod ethernet;
pub mod ib;
pub mod ip;
mod ip_fast;
pub mod mad;
pub mod pfc;
pub mod sflow;
pub mod sll;
pub mod tunnel;
pub mod types;
pub mod udp;
pub mod vlan;
mod walk;

use core::fmt;
use core::net::IpAddr;

pub use arp::{ArpOp, ArpRepr};
pub use cm::CmMsg;
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
pub use mad::{Mad, MadHdrRepr};
pub use pfc::PauseRepr;
pub use sll::SllRepr;
pub use tunnel::{ErspanRepr, GeneveRepr, GreRepr, TapId, Tunnel, TunnelKind, VxlanRepr};
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
    /// The common MAD header of a UD SEND to QP0 / QP1.
    Mad,
    /// The CM message after a MAD header of class 0x07.
    Cm,
    Arp,
    MacControl,
    /// GRE (mirrors: ERSPAN, gretap).
    Gre,
    /// The ERSPAN type II / III header.
    Erspan,
    Vxlan,
    Geneve,
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
            Mad => "mad",
            Cm => "cm",
            Arp => "arp",
            MacControl => "macctl",
            Gre => "gre",
            Erspan => "erspan",
            Vxlan => "vxlan",
            Geneve => "geneve",
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
    /// The management datagram of a UD SEND to QP0 or QP1 (SMI / GSI).
    pub mad: Option<Mad>,
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
            mad: None,
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
    /// The mirror / overlay encapsulation the frame came in; every field above is then
    /// the inner frame's.
    pub tunnel: Option<Tunnel>,
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
            tunnel: None,
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
        self.tunnel = None;
    }

    /// The wire length of the packet the analysis follows: the frame's, or for a
    /// tunnelled frame the inner frame's (without the outer headers a mirror added).
    pub fn wire_len(&self) -> u32 {
        match &self.tunnel {
            Some(t) => self.orig_len.saturating_sub(t.inner_offset),
            None => self.orig_len,
        }
    }

    /// The captured length of that packet (see [`Decoded::wire_len`]).
    pub fn captured_len(&self) -> u32 {
        match &self.tunnel {
            Some(t) => self.cap_len.saturating_sub(t.inner_offset),
            None => self.cap_len,
        }
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
    d.stop = walk::Walker::new(frame, orig_len, cfg).link(d, link);
}

/// [`decode_into`] without the fast paths (every IP header through
/// [`IpRepr::slice_general`]): the reference the fast paths are checked against. The
/// result is the same; it is only slower.
pub fn decode_into_general(
    link: LinkType,
    frame: &[u8],
    orig_len: u32,
    cfg: &Config,
    d: &mut Decoded,
) {
    d.reset(link, frame.len(), orig_len);
    d.stop = walk::Walker::new(frame, orig_len, cfg)
        .general()
        .link(d, link);
}
