//! Mirror and overlay encapsulations around a RoCE frame: GRE (gretap, plain IP),
//! ERSPAN type I / II / III in GRE, VXLAN and Geneve. The walker decodes the outer
//! headers into a [`Tunnel`] and then the inner frame as usual, so `Decoded`'s ordinary
//! fields (`eth`, `ip`, `udp`, `roce`, ...) are the mirrored packet's; the tunnel keeps
//! the outer identity — who mirrored it, which session, port and direction — which
//! names the capture point ([`Tunnel::tap`]).

pub mod encap;
pub mod erspan;
pub mod geneve;
pub mod gre;
pub mod vxlan;

use crate::{EthernetRepr, IpRepr, UdpRepr};
use core::net::IpAddr;
pub use erspan::ErspanRepr;
pub use geneve::GeneveRepr;
pub use gre::GreRepr;
pub use vxlan::VxlanRepr;

/// Which encapsulation carried the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TunnelKind {
    /// GRE with an Ethernet (gretap) or IP payload.
    Gre,
    /// ERSPAN type I: GRE 0x88BE without a sequence number, no ERSPAN header.
    ErspanI,
    ErspanII,
    ErspanIII,
    Vxlan,
    Geneve,
}

impl TunnelKind {
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::Gre => "gre",
            TunnelKind::ErspanI => "erspan1",
            TunnelKind::ErspanII => "erspan2",
            TunnelKind::ErspanIII => "erspan3",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::Geneve => "geneve",
        }
    }
}

/// The outer headers of a tunnelled frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunnel {
    pub kind: TunnelKind,
    /// The outer Ethernet header (absent on raw-IP / SLL captures).
    pub outer_eth: Option<EthernetRepr>,
    pub outer_ip: IpRepr,
    /// The outer UDP header (VXLAN, Geneve).
    pub outer_udp: Option<UdpRepr>,
    pub gre: Option<GreRepr>,
    pub erspan: Option<ErspanRepr>,
    pub vxlan: Option<VxlanRepr>,
    pub geneve: Option<GeneveRepr>,
    /// Byte offset of the inner frame (Ethernet or IP) in the captured frame.
    pub inner_offset: u32,
}

/// The identity of a mirror stream: one per exporter and session (ERSPAN session and
/// direction, GRE key, VNI). Small and `Copy`, usable as a map key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TapId {
    pub kind: TunnelKind,
    /// The exporter (outer source address).
    pub exporter: IpAddr,
    /// ERSPAN session id, GRE key or VNI (0 when the header has none).
    pub session: u32,
    /// ERSPAN type II index (source port) or type III hardware id.
    pub port: u32,
    /// ERSPAN type III direction: `Some(true)` egress, `Some(false)` ingress.
    pub egress: Option<bool>,
}

impl Tunnel {
    pub(crate) fn new(kind: TunnelKind, outer_ip: IpRepr, inner_offset: usize) -> Self {
        Tunnel {
            kind,
            outer_eth: None,
            outer_ip,
            outer_udp: None,
            gre: None,
            erspan: None,
            vxlan: None,
            geneve: None,
            inner_offset: inner_offset as u32,
        }
    }

    /// The mirror stream this frame belongs to.
    pub fn tap(&self) -> TapId {
        let (session, port, egress) = match (self.erspan, self.vxlan, self.geneve) {
            (Some(e), _, _) if e.is_type_iii() => {
                (u32::from(e.session), u32::from(e.hw_id), Some(e.egress))
            }
            (Some(e), _, _) => (u32::from(e.session), e.index, None),
            (_, Some(v), _) => (v.vni, 0, None),
            (_, _, Some(g)) => (g.vni, 0, None),
            _ => (self.gre.and_then(|g| g.key).unwrap_or(0), 0, None),
        };
        TapId {
            kind: self.kind,
            exporter: self.outer_ip.src,
            session,
            port,
            egress,
        }
    }
}
