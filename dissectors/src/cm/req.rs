//! ConnectRequest (IBTA Vol. 1 table 106): the active side's QP, the PSN it expects to
//! receive first, the service it wants and the path(s) to use.
//!
//! ```text
//!  0 Local Communication ID (32)        4 reserved (8) | VendorID (24)
//!  8 ServiceID (64)                    16 Local CA GUID (64)
//! 24 reserved                          28 Local Q_Key (32)
//! 32 Local QPN (24) | Responder Res.   36 Local EECN (24) | Initiator Depth
//! 40 Remote EECN (24) | RemoteCMTmo(5) TransportType(2) E2E(1)
//! 44 Starting PSN (24) | LocalCMTmo(5) RetryCount(3)
//! 48 P_Key (16) | PathMTU(4) RDC(1) RNRRetry(3) | MaxCMRetries(4) SRQ(1) ExtTransport(3)
//! 52 primary path (44 bytes)           96 alternate path (44 bytes)
//! 140 PrivateData (92 bytes; the RDMA-CM's IP header first, see `ip`)
//!
//! a path: 0 local LID | 2 remote LID | 4 local GID (128) | 20 remote GID (128)
//!        36 FlowLabel(20) rsvd(6) PacketRate(6) | 40 TrafficClass | 41 HopLimit
//!        42 SL(4) SubnetLocal(1) rsvd(3) | 43 LocalAckTimeout(5) rsvd(3)
//! ```

use super::ip::IpPrivateRepr;
use super::ServiceId;
use crate::bytes::{array, be16, be24, be32, be64, put16, put24, put32, put64, u8_at};
use crate::types::{PKey, Psn, Qpn};
use crate::Error;

pub const LOCAL_COMM_ID: usize = 0;
pub const VENDOR_ID: usize = 5;
pub const SERVICE_ID: usize = 8;
pub const LOCAL_CA_GUID: usize = 16;
pub const LOCAL_QKEY: usize = 28;
pub const LOCAL_QPN: usize = 32;
pub const RESP_RES: usize = 35;
pub const LOCAL_EECN: usize = 36;
pub const INIT_DEPTH: usize = 39;
pub const REMOTE_EECN: usize = 40;
pub const FLAGS43: usize = 43;
pub const START_PSN: usize = 44;
pub const FLAGS47: usize = 47;
pub const PKEY: usize = 48;
pub const FLAGS50: usize = 50;
pub const FLAGS51: usize = 51;
pub const PRIMARY: usize = 52;
pub const ALTERNATE: usize = 96;
pub const PRIVATE: usize = 140;
/// Length of the fixed part (without private data).
pub const LEN: usize = 140;
/// Length of one path description.
pub const PATH_LEN: usize = 44;

/// One path of a REQ (primary or alternate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathRepr {
    /// Local port LID (0xffff on RoCE).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID.
    pub local_gid: [u8; 16],
    /// Remote port GID.
    pub remote_gid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Packet rate code (6 bits).
    pub packet_rate: u8,
    /// Traffic class the data is to carry (the GRH / IP traffic class: DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level.
    pub sl: u8,
    /// Subnet local.
    pub subnet_local: bool,
    /// Local ACK timeout code (4.096 us * 2^code).
    pub local_ack_timeout: u8,
}

impl PathRepr {
    /// Parses a path from its 44 bytes.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        Error::need(b, PATH_LEN)?;
        let w = be32(b, 36).unwrap_or(0);
        let byte = |o| u8_at(b, o).unwrap_or(0);
        Ok(PathRepr {
            local_lid: be16(b, 0).unwrap_or(0),
            remote_lid: be16(b, 2).unwrap_or(0),
            local_gid: array(b, 4).unwrap_or_default(),
            remote_gid: array(b, 20).unwrap_or_default(),
            flow_label: w >> 12,
            packet_rate: (w & 0x3f) as u8,
            traffic_class: byte(40),
            hop_limit: byte(41),
            sl: byte(42) >> 4,
            subnet_local: byte(42) & 0x08 != 0,
            local_ack_timeout: byte(43) >> 3,
        })
    }
    /// Writes the path into `b[..PATH_LEN]`.
    pub fn emit(&self, b: &mut [u8]) {
        put16(b, 0, self.local_lid);
        put16(b, 2, self.remote_lid);
        b[4..20].copy_from_slice(&self.local_gid);
        b[20..36].copy_from_slice(&self.remote_gid);
        put32(
            b,
            36,
            (self.flow_label & 0xf_ffff) << 12 | u32::from(self.packet_rate & 0x3f),
        );
        b[40] = self.traffic_class;
        b[41] = self.hop_limit;
        b[42] = (self.sl & 0xf) << 4 | u8::from(self.subnet_local) << 3;
        b[43] = (self.local_ack_timeout & 0x1f) << 3;
    }
}

/// A zero-copy view of a REQ.
#[derive(Clone, Copy, Debug)]
pub struct Req<'a>(&'a [u8]);

impl<'a> Req<'a> {
    /// The message at the start of `b`, when `b` holds its fixed part (the private data
    /// may be cut).
    pub fn new_checked(b: &'a [u8]) -> Result<Self, Error> {
        Error::need(b, LEN)?;
        Ok(Req(b))
    }
    fn byte(&self, off: usize) -> u8 {
        u8_at(self.0, off).unwrap_or(0)
    }
    /// The requester's communication ID.
    pub fn local_comm_id(&self) -> u32 {
        be32(self.0, LOCAL_COMM_ID).unwrap_or(0)
    }
    /// The service asked for.
    pub fn service_id(&self) -> ServiceId {
        ServiceId(be64(self.0, SERVICE_ID).unwrap_or(0))
    }
    /// The requester's QP.
    pub fn local_qpn(&self) -> Qpn {
        Qpn(be24(self.0, LOCAL_QPN).unwrap_or(0))
    }
    /// The starting PSN of the requester's receive queue: the first PSN the responder
    /// sends with.
    pub fn start_psn(&self) -> Psn {
        Psn(be24(self.0, START_PSN).unwrap_or(0))
    }
    /// The private data that was captured (up to 92 bytes).
    pub fn private_data(&self) -> &'a [u8] {
        self.0.get(PRIVATE..).unwrap_or(&[])
    }
}

/// A ConnectRequest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqRepr {
    /// The requester's communication ID.
    pub local_comm_id: u32,
    /// Vendor ID.
    pub vendor_id: u32,
    /// The service asked for.
    pub service_id: ServiceId,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// The requester's QP.
    pub local_qpn: Qpn,
    /// RDMA READ / atomic requests the requester serves at once.
    pub responder_resources: u8,
    /// Local EE context (RD).
    pub local_eecn: u32,
    /// RDMA READ / atomic requests the requester issues at once.
    pub initiator_depth: u8,
    /// Remote EE context (RD).
    pub remote_eecn: u32,
    /// How long the requester waits for the remote CM (4.096 us * 2^code).
    pub remote_cm_timeout: u8,
    /// Transport service type: 0 RC, 1 UC, 2 RD, 3 extended ([`Self::ext_transport`]).
    pub transport_type: u8,
    /// End-to-end flow control.
    pub e2e_flow_control: bool,
    /// The starting PSN of the requester's receive queue, i.e. the first PSN the
    /// *responder* sends with (each side announces the PSN it expects; the Linux CM
    /// loads it as the local QP's rq_psn and the peer's sq_psn, and the public captures
    /// rdma_cm, rping and ib2 show the responder's first request at this PSN).
    pub start_psn: Psn,
    /// How long the remote waits for this CM (4.096 us * 2^code).
    pub local_cm_timeout: u8,
    /// Transport retry count.
    pub retry_count: u8,
    /// Partition key.
    pub pkey: PKey,
    /// Path MTU code (1 = 256 .. 5 = 4096).
    pub path_mtu: u8,
    /// RDC exists.
    pub rdc_exists: bool,
    /// RNR NAK retry count.
    pub rnr_retry: u8,
    /// How often the CM retries this REQ.
    pub max_cm_retries: u8,
    /// The requester uses an SRQ.
    pub srq: bool,
    /// Extended transport type (1 = XRC) when the transport type is 3.
    pub ext_transport: u8,
    /// The primary path.
    pub primary: PathRepr,
    /// The alternate path (all zero when there is none).
    pub alternate: PathRepr,
    /// The RDMA-CM's IP addressing, when the service ID is an RDMA IP CM one and the
    /// private data begins with a valid header.
    pub ip: Option<IpPrivateRepr>,
}

impl ReqRepr {
    /// Parses the fixed part and, for an RDMA IP CM service ID, the IP private data.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        let v = Req::new_checked(b)?;
        let f43 = v.byte(FLAGS43);
        let f47 = v.byte(FLAGS47);
        let f50 = v.byte(FLAGS50);
        let f51 = v.byte(FLAGS51);
        let service_id = v.service_id();
        let ip = match service_id.rdma_ip_port() {
            Some(_) => IpPrivateRepr::parse(v.private_data()).ok(),
            None => None,
        };
        Ok(ReqRepr {
            local_comm_id: v.local_comm_id(),
            vendor_id: be24(b, VENDOR_ID).unwrap_or(0),
            service_id,
            local_ca_guid: be64(b, LOCAL_CA_GUID).unwrap_or(0),
            local_qkey: be32(b, LOCAL_QKEY).unwrap_or(0),
            local_qpn: v.local_qpn(),
            responder_resources: v.byte(RESP_RES),
            local_eecn: be24(b, LOCAL_EECN).unwrap_or(0),
            initiator_depth: v.byte(INIT_DEPTH),
            remote_eecn: be24(b, REMOTE_EECN).unwrap_or(0),
            remote_cm_timeout: f43 >> 3,
            transport_type: (f43 >> 1) & 3,
            e2e_flow_control: f43 & 1 != 0,
            start_psn: v.start_psn(),
            local_cm_timeout: f47 >> 3,
            retry_count: f47 & 7,
            pkey: PKey(be16(b, PKEY).unwrap_or(0)),
            path_mtu: f50 >> 4,
            rdc_exists: f50 & 0x08 != 0,
            rnr_retry: f50 & 7,
            max_cm_retries: f51 >> 4,
            srq: f51 & 0x08 != 0,
            ext_transport: f51 & 7,
            primary: PathRepr::parse(&b[PRIMARY..PRIMARY + PATH_LEN])?,
            alternate: PathRepr::parse(&b[ALTERNATE..ALTERNATE + PATH_LEN])?,
            ip,
        })
    }
    /// Writes the fixed part into `b[..LEN]` and, when `ip` is set, the IP private data
    /// after it (`b` must then hold `LEN + ip::LEN` bytes).
    pub fn emit(&self, b: &mut [u8]) {
        put32(b, LOCAL_COMM_ID, self.local_comm_id);
        b[4] = 0;
        put24(b, VENDOR_ID, self.vendor_id);
        put64(b, SERVICE_ID, self.service_id.0);
        put64(b, LOCAL_CA_GUID, self.local_ca_guid);
        b[24..28].fill(0);
        put32(b, LOCAL_QKEY, self.local_qkey);
        put24(b, LOCAL_QPN, self.local_qpn.0);
        b[RESP_RES] = self.responder_resources;
        put24(b, LOCAL_EECN, self.local_eecn);
        b[INIT_DEPTH] = self.initiator_depth;
        put24(b, REMOTE_EECN, self.remote_eecn);
        b[FLAGS43] = (self.remote_cm_timeout & 0x1f) << 3
            | (self.transport_type & 3) << 1
            | u8::from(self.e2e_flow_control);
        put24(b, START_PSN, self.start_psn.0);
        b[FLAGS47] = (self.local_cm_timeout & 0x1f) << 3 | (self.retry_count & 7);
        put16(b, PKEY, self.pkey.0);
        b[FLAGS50] =
            (self.path_mtu & 0xf) << 4 | u8::from(self.rdc_exists) << 3 | (self.rnr_retry & 7);
        b[FLAGS51] =
            (self.max_cm_retries & 0xf) << 4 | u8::from(self.srq) << 3 | (self.ext_transport & 7);
        self.primary.emit(&mut b[PRIMARY..PRIMARY + PATH_LEN]);
        self.alternate.emit(&mut b[ALTERNATE..ALTERNATE + PATH_LEN]);
        if let Some(ip) = &self.ip {
            ip.emit(&mut b[PRIVATE..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{IpAddr, Ipv4Addr};

    pub(crate) fn sample() -> ReqRepr {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[198, 51, 100, 1]);
        ReqRepr {
            local_comm_id: 0x64c0_c56d,
            vendor_id: 0x0000_02c9,
            service_id: ServiceId::rdma_ip(6, 18515),
            local_ca_guid: 0x0250_56ff_fea7_7d03,
            local_qkey: 0,
            local_qpn: Qpn(0x3d),
            responder_resources: 1,
            local_eecn: 0,
            initiator_depth: 2,
            remote_eecn: 0,
            remote_cm_timeout: 20,
            transport_type: 0,
            e2e_flow_control: false,
            start_psn: Psn(0x007c_c204),
            local_cm_timeout: 20,
            retry_count: 7,
            pkey: PKey(0xffff),
            path_mtu: 3,
            rdc_exists: false,
            rnr_retry: 7,
            max_cm_retries: 15,
            srq: false,
            ext_transport: 0,
            primary: PathRepr {
                local_lid: 0xffff,
                remote_lid: 0xffff,
                local_gid: gid,
                remote_gid: gid,
                flow_label: 0x0091a,
                packet_rate: 0x11,
                traffic_class: 0x68,
                hop_limit: 64,
                sl: 3,
                subnet_local: true,
                local_ack_timeout: 0x11,
            },
            alternate: PathRepr::default(),
            ip: Some(IpPrivateRepr {
                major: 0,
                minor: 0,
                ip_version: 4,
                src_port: 0xccf7,
                src: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(198, 51, 100, 2)),
            }),
        }
    }

    #[test]
    fn round_trip_and_prefixes() {
        let r = sample();
        let mut b = [0u8; 232];
        r.emit(&mut b);
        assert_eq!(&b[44..48], &[0x7c, 0xc2, 0x04, 0xa7]);
        assert_eq!(b[50], 0x37);
        assert_eq!(b[PRIMARY + 40], 0x68);
        assert_eq!(ReqRepr::parse(&b).unwrap(), r);
        for n in 0..LEN {
            assert!(ReqRepr::parse(&b[..n]).is_err());
        }
        // A REQ whose private data was cut still decodes, without the IP header.
        let cut = ReqRepr::parse(&b[..LEN + 10]).unwrap();
        assert_eq!(cut.ip, None);
        assert_eq!(cut.start_psn, r.start_psn);
        // Not an RDMA IP CM service: the private data is the consumer's.
        let mut other = r;
        other.service_id = ServiceId(0x1000_0000_0000_0001);
        other.emit(&mut b);
        assert_eq!(ReqRepr::parse(&b).unwrap().ip, None);
    }
}
