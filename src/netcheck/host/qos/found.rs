//! What the QoS checks found (`qos-*` findings), as values: the port's QoS state they are
//! about and the numbers that prove them; `report::words` words them.

use super::PortQos;
use crate::netcheck::checks::Severity;

/// The traffic whose ToS a `qos-cm-tos` / `qos-traffic-class` finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TosSource {
    /// RDMA-CM's `default_roce_tos` (RDMA-CM connections).
    CmDefault,
    /// The device's global `tc/1/traffic_class` (every QP of the device).
    DeviceClass,
}

/// Flows of a capture behind a joined finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flows {
    /// How many flows.
    pub flows: usize,
    /// Their packets.
    pub packets: u64,
    /// Their queue pairs.
    pub qps: Vec<dissectors::Qpn>,
}

/// The GID entry a peer has at an index (`qos-gid-mismatch`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerGid {
    /// All-zero or absent.
    Empty,
    /// A GID of another kind or not IPv4-mapped.
    Gid {
        /// Its type (`IB/RoCE v1`, `RoCE v2`).
        kind: String,
        /// Its IPv4 address, or the GID itself.
        addr: String,
    },
}

/// What a QoS check found, with the port it is about.
#[derive(Clone, Debug)]
pub enum Qos<'r> {
    /// `qos-pfc`: PFC on no priority.
    PfcNone {
        /// The port.
        port: Box<PortQos>,
    },
    /// `qos-roce-mode`: RDMA-CM connects with RoCE v1.
    RoceMode {
        /// The port.
        port: Box<PortQos>,
        /// `default_roce_mode` as read.
        mode: String,
    },
    /// `qos-cm-tos` / `qos-traffic-class`: a ToS on a priority without PFC.
    Tos {
        /// The port.
        port: Box<PortQos>,
        /// Whose ToS.
        source: TosSource,
        /// The ToS byte.
        tos: u8,
        /// Its priority.
        prio: u8,
        /// The PFC-enabled priorities.
        pfc_on: Vec<u8>,
    },
    /// `qos-cnp`: CNPs on a priority without PFC.
    Cnp {
        /// The port.
        port: Box<PortQos>,
        /// The CNP DSCP.
        dscp: u8,
        /// Its priority.
        prio: u8,
        /// The PFC-enabled priorities.
        pfc_on: Vec<u8>,
    },
    /// `qos-mtu-pf`: a VF's netdev MTU holds the RoCE MTU below what its PF carries.
    MtuPf {
        /// The port.
        port: Box<PortQos>,
        /// The RoCE MTU in use.
        active: u32,
        /// The netdev's MTU.
        mtu: u32,
        /// The PF.
        pf: String,
        /// The PF's MTU.
        pf_mtu: u32,
        /// The RoCE MTU the PF's MTU carries.
        could: u32,
    },
    /// `qos-gid-mismatch`: a GID index that is RoCE v2 IPv4 here and something else on a peer.
    GidMismatch {
        /// This host's port.
        port: Box<PortQos>,
        /// The index.
        index: u32,
        /// Its address here.
        address: String,
        /// The peer node's name.
        peer: String,
        /// The peer's RDMA device.
        peer_device: String,
        /// The peer's port.
        peer_port: String,
        /// What the peer has at that index.
        there: PeerGid,
        /// The peer's RoCE v2 IPv4 GID index, if it has one.
        peer_v2: Option<u32>,
    },
    /// `qos-lossy-data`: captured data on a priority without PFC.
    LossyData {
        /// The port.
        port: Box<PortQos>,
        /// The DSCP.
        dscp: u8,
        /// The 802.1Q PCP, when tagged.
        pcp: Option<u8>,
        /// The priority.
        prio: u8,
        /// The PFC-enabled priorities.
        pfc_on: Vec<u8>,
        /// The flows.
        flows: Flows,
    },
    /// `qos-cnp-lossy`: captured CNPs on a priority without PFC.
    CnpLossy {
        /// The port.
        port: Box<PortQos>,
        /// The DSCP.
        dscp: u8,
        /// The priority.
        prio: u8,
        /// The PFC-enabled priorities.
        pfc_on: Vec<u8>,
        /// CNPs sent.
        cnps: u64,
        /// The flows they went to.
        flows: Flows,
    },
    /// `qos-not-ect`: data this host sends Not-ECT.
    NotEct {
        /// The port.
        port: Box<PortQos>,
        /// The priority.
        prio: u8,
        /// Whether ECN (`roce_rp`) is enabled on that priority.
        ecn_enabled: bool,
        /// The flows.
        flows: Flows,
    },
    /// `qos-capture-*`: one of the capture's own QoS findings.
    FromCapture {
        /// The id (`qos-capture-directions`, ...).
        id: &'static str,
        /// The analyzer's finding.
        finding: &'r crate::analysis::report::Finding,
        /// The capture's report it belongs to (for its flow labels and times).
        report: &'r crate::analysis::Report,
    },
}

impl Qos<'_> {
    /// The finding's stable identifier.
    pub fn id(&self) -> &'static str {
        match self {
            Qos::PfcNone { .. } => "qos-pfc",
            Qos::RoceMode { .. } => "qos-roce-mode",
            Qos::Tos {
                source: TosSource::CmDefault,
                ..
            } => "qos-cm-tos",
            Qos::Tos {
                source: TosSource::DeviceClass,
                ..
            } => "qos-traffic-class",
            Qos::Cnp { .. } => "qos-cnp",
            Qos::MtuPf { .. } => "qos-mtu-pf",
            Qos::GidMismatch { .. } => "qos-gid-mismatch",
            Qos::LossyData { .. } => "qos-lossy-data",
            Qos::CnpLossy { .. } => "qos-cnp-lossy",
            Qos::NotEct { .. } => "qos-not-ect",
            Qos::FromCapture { id, .. } => id,
        }
    }

    /// How bad it is.
    pub fn severity(&self) -> Severity {
        match self {
            Qos::LossyData { .. } => Severity::Error,
            Qos::PfcNone { .. } | Qos::Cnp { .. } => Severity::Info,
            Qos::FromCapture { finding, .. } => finding.severity,
            Qos::RoceMode { .. }
            | Qos::Tos { .. }
            | Qos::MtuPf { .. }
            | Qos::GidMismatch { .. }
            | Qos::CnpLossy { .. }
            | Qos::NotEct { .. } => Severity::Warning,
        }
    }
}
