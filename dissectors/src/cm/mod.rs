//! Communication Management messages (IBTA Vol. 1 chapter 12): the MADs of class 0x07
//! that set up, tear down and re-path a connection. One module per message family, each
//! a zero-copy view plus a `Repr` with `parse` and `emit`; offsets are from the start of
//! the MAD data (after the 24-byte common header), as in the IBTA tables 106-120.
//!
//! | attribute | message | module |
//! |---|---|---|
//! | 0x0010 | REQ (ConnectRequest) | [`req`] |
//! | 0x0011 | MRA (MsgRcptAck) | [`mra`] |
//! | 0x0012 | REJ (ConnectReject) | [`rej`] |
//! | 0x0013 | REP (ConnectReply) | [`rep`] |
//! | 0x0014 | RTU (ReadyToUse) | [`rtu`] |
//! | 0x0015 / 0x0016 | DREQ / DREP (Disconnect) | [`dreq`] |
//! | 0x0017 / 0x0018 | SIDR REQ / REP | [`sidr`] |
//! | 0x0019 / 0x001A | LAP / APR (alternate path) | [`lap`] |
//!
//! The RDMA-CM (IBTA Annex A11) puts its IP addressing in the REQ's private data:
//! [`ip`].

pub mod dreq;
pub mod ip;
pub mod lap;
pub mod mra;
pub mod rej;
pub mod rep;
pub mod req;
pub mod rtu;
pub mod sidr;

use crate::Error;

pub use dreq::DreqRepr;
pub use ip::IpPrivateRepr;
pub use lap::{AprRepr, LapRepr};
pub use mra::MraRepr;
pub use rej::{RejReason, RejRepr};
pub use rep::RepRepr;
pub use req::{PathRepr, ReqRepr};
pub use rtu::CommIds;
pub use sidr::{SidrRepRepr, SidrReqRepr};

/// CM attribute IDs.
pub mod attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// ConnectRequest.
    pub const REQ: u16 = 0x0010;
    /// MsgRcptAck.
    pub const MRA: u16 = 0x0011;
    /// ConnectReject.
    pub const REJ: u16 = 0x0012;
    /// ConnectReply.
    pub const REP: u16 = 0x0013;
    /// ReadyToUse.
    pub const RTU: u16 = 0x0014;
    /// DisconnectRequest.
    pub const DREQ: u16 = 0x0015;
    /// DisconnectReply.
    pub const DREP: u16 = 0x0016;
    /// ServiceIDResReq.
    pub const SIDR_REQ: u16 = 0x0017;
    /// ServiceIDResReqResp.
    pub const SIDR_REP: u16 = 0x0018;
    /// LoadAlternatePath.
    pub const LAP: u16 = 0x0019;
    /// AlternatePathResponse.
    pub const APR: u16 = 0x001a;
}

/// One decoded CM message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmMsg {
    /// ConnectRequest.
    Req(ReqRepr),
    /// MsgRcptAck.
    Mra(MraRepr),
    /// ConnectReject.
    Rej(RejRepr),
    /// ConnectReply.
    Rep(RepRepr),
    /// ReadyToUse.
    Rtu(CommIds),
    /// DisconnectRequest.
    Dreq(DreqRepr),
    /// DisconnectReply.
    Drep(CommIds),
    /// ServiceIDResReq.
    SidrReq(SidrReqRepr),
    /// ServiceIDResReqResp.
    SidrRep(SidrRepRepr),
    /// LoadAlternatePath.
    Lap(LapRepr),
    /// AlternatePathResponse.
    Apr(AprRepr),
}

impl CmMsg {
    /// Parses the MAD data of a CM MAD with attribute `attr_id`: `Ok(None)` for the
    /// attributes that are not connection messages (ClassPortInfo, reserved IDs).
    pub fn parse(attr_id: u16, data: &[u8]) -> Result<Option<CmMsg>, Error> {
        Ok(Some(match attr_id {
            attr::REQ => CmMsg::Req(ReqRepr::parse(data)?),
            attr::MRA => CmMsg::Mra(MraRepr::parse(data)?),
            attr::REJ => CmMsg::Rej(RejRepr::parse(data)?),
            attr::REP => CmMsg::Rep(RepRepr::parse(data)?),
            attr::RTU => CmMsg::Rtu(CommIds::parse(data)?),
            attr::DREQ => CmMsg::Dreq(DreqRepr::parse(data)?),
            attr::DREP => CmMsg::Drep(CommIds::parse(data)?),
            attr::SIDR_REQ => CmMsg::SidrReq(SidrReqRepr::parse(data)?),
            attr::SIDR_REP => CmMsg::SidrRep(SidrRepRepr::parse(data)?),
            attr::LAP => CmMsg::Lap(LapRepr::parse(data)?),
            attr::APR => CmMsg::Apr(AprRepr::parse(data)?),
            _ => return Ok(None),
        }))
    }

    /// The attribute ID this message travels under.
    pub fn attr_id(&self) -> u16 {
        match self {
            CmMsg::Req(_) => attr::REQ,
            CmMsg::Mra(_) => attr::MRA,
            CmMsg::Rej(_) => attr::REJ,
            CmMsg::Rep(_) => attr::REP,
            CmMsg::Rtu(_) => attr::RTU,
            CmMsg::Dreq(_) => attr::DREQ,
            CmMsg::Drep(_) => attr::DREP,
            CmMsg::SidrReq(_) => attr::SIDR_REQ,
            CmMsg::SidrRep(_) => attr::SIDR_REP,
            CmMsg::Lap(_) => attr::LAP,
            CmMsg::Apr(_) => attr::APR,
        }
    }

    /// Writes the message into `data` (the MAD data, 232 bytes for an IBTA MAD).
    pub fn emit(&self, data: &mut [u8]) {
        match self {
            CmMsg::Req(r) => r.emit(data),
            CmMsg::Mra(r) => r.emit(data),
            CmMsg::Rej(r) => r.emit(data),
            CmMsg::Rep(r) => r.emit(data),
            CmMsg::Rtu(r) | CmMsg::Drep(r) => r.emit(data),
            CmMsg::Dreq(r) => r.emit(data),
            CmMsg::SidrReq(r) => r.emit(data),
            CmMsg::SidrRep(r) => r.emit(data),
            CmMsg::Lap(r) => r.emit(data),
            CmMsg::Apr(r) => r.emit(data),
        }
    }

    /// The message's name as the IBTA (and Wireshark) spell it: "ConnectRequest", ...
    pub fn name(&self) -> &'static str {
        attr_name(self.attr_id())
    }

    /// The sender's communication ID (the request ID of a SIDR message).
    pub fn local_comm_id(&self) -> u32 {
        match self {
            CmMsg::Req(r) => r.local_comm_id,
            CmMsg::Mra(r) => r.ids.local,
            CmMsg::Rej(r) => r.ids.local,
            CmMsg::Rep(r) => r.ids.local,
            CmMsg::Rtu(r) | CmMsg::Drep(r) => r.local,
            CmMsg::Dreq(r) => r.ids.local,
            CmMsg::SidrReq(r) => r.request_id,
            CmMsg::SidrRep(r) => r.request_id,
            CmMsg::Lap(r) => r.ids.local,
            CmMsg::Apr(r) => r.ids.local,
        }
    }

    /// The receiver's communication ID, for the messages that carry one.
    pub fn remote_comm_id(&self) -> Option<u32> {
        match self {
            CmMsg::Req(_) | CmMsg::SidrReq(_) | CmMsg::SidrRep(_) => None,
            CmMsg::Mra(r) => Some(r.ids.remote),
            CmMsg::Rej(r) => Some(r.ids.remote),
            CmMsg::Rep(r) => Some(r.ids.remote),
            CmMsg::Rtu(r) | CmMsg::Drep(r) => Some(r.remote),
            CmMsg::Dreq(r) => Some(r.ids.remote),
            CmMsg::Lap(r) => Some(r.ids.remote),
            CmMsg::Apr(r) => Some(r.ids.remote),
        }
    }
}

/// CM attribute names: "ConnectRequest", "ClassPortInfo", "CM attribute" for others.
pub fn attr_name(id: u16) -> &'static str {
    match id {
        attr::CLASS_PORT_INFO => "ClassPortInfo",
        attr::REQ => "ConnectRequest",
        attr::MRA => "MsgRcptAck",
        attr::REJ => "ConnectReject",
        attr::REP => "ConnectReply",
        attr::RTU => "ReadyToUse",
        attr::DREQ => "DisconnectRequest",
        attr::DREP => "DisconnectReply",
        attr::SIDR_REQ => "ServiceIDResReq",
        attr::SIDR_REP => "ServiceIDResReqResp",
        attr::LAP => "LoadAlternatePath",
        attr::APR => "AlternatePathResponse",
        _ => "CM attribute",
    }
}

/// A 64-bit service ID, and the RDMA-CM's reading of it (IBTA Annex A11): prefix
/// 0x0000_0000_01, then the port space (protocol) and the 16-bit port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServiceId(pub u64);

impl ServiceId {
    /// An RDMA IP CM service ID for `protocol` (6 TCP, 0x11 UDP, 0x3f IB) and `port`.
    pub fn rdma_ip(protocol: u8, port: u16) -> ServiceId {
        ServiceId((1u64 << 24) | (u64::from(protocol) << 16) | u64::from(port))
    }
    /// (protocol, port) when this is an RDMA IP CM service ID.
    pub fn rdma_ip_port(self) -> Option<(u8, u16)> {
        (self.0 >> 24 == 1).then_some(((self.0 >> 16) as u8, self.0 as u16))
    }
    /// The RDMA-CM port space's name: "TCP", "UDP", "IB", or `None` for another value.
    pub fn port_space_name(protocol: u8) -> Option<&'static str> {
        match protocol {
            0x06 => Some("TCP"),
            0x11 => Some("UDP"),
            0x3f => Some("IB"),
            _ => None,
        }
    }
}

/// Bytes of a path MTU code (1 = 256 .. 5 = 4096), `None` for a reserved code.
pub fn mtu_bytes(code: u8) -> Option<u32> {
    (1..=5).contains(&code).then(|| 128u32 << code)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn service_ids_and_mtus() {
        let s = ServiceId(0x0000_0000_0106_4853);
        assert_eq!(s.rdma_ip_port(), Some((6, 0x4853)));
        assert_eq!(ServiceId::rdma_ip(6, 0x4853), s);
        assert_eq!(ServiceId(0x1234_5678_0000_0001).rdma_ip_port(), None);
        assert_eq!(ServiceId::port_space_name(0x11), Some("UDP"));
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(6), None);
    }

    #[test]
    fn unknown_attributes_are_not_messages() {
        assert_eq!(CmMsg::parse(attr::CLASS_PORT_INFO, &[0; 232]), Ok(None));
        assert_eq!(CmMsg::parse(0x0099, &[]), Ok(None));
        assert!(CmMsg::parse(attr::RTU, &[0; 7]).is_err());
    }
}
