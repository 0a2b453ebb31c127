//! The MAD and CM columns of the field table: the common MAD header of every UD SEND to
//! QP0 / QP1, and the CM messages after it, under Wireshark's names where Wireshark has
//! the field (`infiniband.mad.*`, `infiniband.cm.*`) and `rocetap.cm.*` where it has
//! none (MRA, SIDR, LAP, APR, names of codes).

use super::{Ctx, Extract, Value};
use dissectors::cm::{CmMsg, ServiceId};
use dissectors::Mad;

fn mad<'a>(c: &'a Ctx<'_>) -> Option<&'a Mad> {
    c.d.roce.as_ref().and_then(|r| r.mad.as_ref())
}

fn cm(c: &Ctx<'_>) -> Option<CmMsg> {
    mad(c).and_then(|m| m.cm)
}

/// A field of one CM message kind: `msg!(Variant, v => expr)`.
macro_rules! msg {
    ($variant:ident, $v:ident => $e:expr) => {
        |c| match cm(c) {
            Some(CmMsg::$variant($v)) => $e,
            _ => None,
        }
    };
}

fn hex(v: impl Into<u64>, w: usize) -> Option<Value> {
    Some(Value::Hex(v.into(), w))
}

fn int(v: impl Into<u64>) -> Option<Value> {
    Some(Value::Int(v.into()))
}

fn rdma_ip(s: ServiceId) -> Option<(u8, u16)> {
    s.rdma_ip_port()
}

/// The MAD and CM columns, in order.
pub(super) const FIELDS: &[(&str, Extract)] = &[
    ("infiniband.mad.baseversion", |c| {
        mad(c).and_then(|m| hex(m.hdr.base_version, 2))
    }),
    ("infiniband.mad.mgmtclass", |c| {
        mad(c).and_then(|m| hex(m.hdr.mgmt_class, 2))
    }),
    ("rocetap.mad.class", |c| {
        mad(c).map(|m| Value::Str(m.hdr.class_name()))
    }),
    ("infiniband.mad.classversion", |c| {
        mad(c).and_then(|m| hex(m.hdr.class_version, 2))
    }),
    ("infiniband.mad.method", |c| {
        mad(c).and_then(|m| hex(m.hdr.method, 2))
    }),
    ("rocetap.mad.method", |c| {
        mad(c).map(|m| Value::Str(m.hdr.method_name()))
    }),
    ("infiniband.mad.status", |c| {
        mad(c).and_then(|m| hex(m.hdr.status, 4))
    }),
    ("infiniband.mad.classspecific", |c| {
        mad(c).and_then(|m| hex(m.hdr.class_specific, 4))
    }),
    ("infiniband.mad.transactionid", |c| {
        mad(c).and_then(|m| hex(m.hdr.tid, 16))
    }),
    ("infiniband.mad.attributeid", |c| {
        mad(c).and_then(|m| hex(m.hdr.attr_id, 4))
    }),
    ("infiniband.mad.attributemodifier", |c| {
        mad(c).and_then(|m| hex(m.hdr.attr_mod, 8))
    }),
    ("rocetap.cm.msg", |c| cm(c).map(|m| Value::Str(m.name()))),
    // ConnectRequest.
    ("infiniband.cm.req", msg!(Req, r => hex(r.local_comm_id, 8))),
    (
        "infiniband.cm.req.serviceid",
        msg!(Req, r => hex(r.service_id.0, 16)),
    ),
    (
        "infiniband.cm.req.serviceid.protocol",
        msg!(Req, r => rdma_ip(r.service_id).and_then(|(p, _)| hex(p, 2))),
    ),
    (
        "rocetap.cm.req.port_space",
        msg!(Req, r => rdma_ip(r.service_id)
            .and_then(|(p, _)| ServiceId::port_space_name(p).map(Value::Str))),
    ),
    (
        "infiniband.cm.req.serviceid.dport",
        msg!(Req, r => rdma_ip(r.service_id).and_then(|(_, p)| int(p))),
    ),
    (
        "infiniband.cm.req.localcaguid",
        msg!(Req, r => hex(r.local_ca_guid, 16)),
    ),
    (
        "infiniband.cm.req.localqkey",
        msg!(Req, r => hex(r.local_qkey, 8)),
    ),
    (
        "infiniband.cm.req.localqpn",
        msg!(Req, r => hex(r.local_qpn.0, 6)),
    ),
    (
        "infiniband.cm.req.responderres",
        msg!(Req, r => int(r.responder_resources)),
    ),
    (
        "infiniband.cm.req.initdepth",
        msg!(Req, r => int(r.initiator_depth)),
    ),
    (
        "infiniband.cm.req.remoteresptout",
        msg!(Req, r => int(r.remote_cm_timeout)),
    ),
    (
        "infiniband.cm.req.transpsvctype",
        msg!(Req, r => int(r.transport_type)),
    ),
    (
        "infiniband.cm.req.e2eflowctrl",
        msg!(Req, r => int(r.e2e_flow_control)),
    ),
    (
        "infiniband.cm.req.startpsn",
        msg!(Req, r => int(r.start_psn.0)),
    ),
    (
        "infiniband.cm.req.localresptout",
        msg!(Req, r => int(r.local_cm_timeout)),
    ),
    (
        "infiniband.cm.req.retrcount",
        msg!(Req, r => int(r.retry_count)),
    ),
    ("infiniband.cm.req.pkey", msg!(Req, r => hex(r.pkey.0, 4))),
    ("infiniband.cm.req.pppmtu", msg!(Req, r => int(r.path_mtu))),
    (
        "rocetap.cm.req.mtu",
        msg!(Req, r => dissectors::cm::mtu_bytes(r.path_mtu).and_then(int)),
    ),
    (
        "infiniband.cm.req.rnrretrcount",
        msg!(Req, r => int(r.rnr_retry)),
    ),
    (
        "infiniband.cm.req.maxcmretr",
        msg!(Req, r => int(r.max_cm_retries)),
    ),
    ("infiniband.cm.req.srq", msg!(Req, r => int(r.srq))),
    (
        "infiniband.cm.req.ext_transport",
        msg!(Req, r => int(r.ext_transport)),
    ),
    (
        "infiniband.cm.req.prim_locallid",
        msg!(Req, r => int(r.primary.local_lid)),
    ),
    (
        "infiniband.cm.req.prim_remotelid",
        msg!(Req, r => int(r.primary.remote_lid)),
    ),
    (
        "infiniband.cm.req.prim_localgid",
        msg!(Req, r => Some(Value::Gid(r.primary.local_gid))),
    ),
    (
        "infiniband.cm.req.prim_remotegid",
        msg!(Req, r => Some(Value::Gid(r.primary.remote_gid))),
    ),
    (
        "infiniband.cm.req.prim_flowlabel",
        msg!(Req, r => hex(r.primary.flow_label, 5)),
    ),
    (
        "infiniband.cm.req.prim_pktrate",
        msg!(Req, r => int(r.primary.packet_rate)),
    ),
    (
        "infiniband.cm.req.prim_tfcclass",
        msg!(Req, r => int(r.primary.traffic_class)),
    ),
    (
        "infiniband.cm.req.prim_hoplim",
        msg!(Req, r => int(r.primary.hop_limit)),
    ),
    (
        "infiniband.cm.req.prim_sl",
        msg!(Req, r => int(r.primary.sl)),
    ),
    (
        "infiniband.cm.req.prim_subnetlocal",
        msg!(Req, r => int(r.primary.subnet_local)),
    ),
    (
        "infiniband.cm.req.prim_localacktout",
        msg!(Req, r => int(r.primary.local_ack_timeout)),
    ),
    (
        "infiniband.cm.req.ip_cm.majv",
        msg!(Req, r => r.ip.and_then(|i| int(i.major))),
    ),
    (
        "infiniband.cm.req.ip_cm.minv",
        msg!(Req, r => r.ip.and_then(|i| int(i.minor))),
    ),
    (
        "infiniband.cm.req.ip_cm.ipv",
        msg!(Req, r => r.ip.and_then(|i| int(i.ip_version))),
    ),
    (
        "infiniband.cm.req.ip_cm.sport",
        msg!(Req, r => r.ip.and_then(|i| int(i.src_port))),
    ),
    (
        "infiniband.cm.req.ip_cm.sip4",
        msg!(Req, r => r.ip.filter(|i| i.ip_version == 4).map(|i| Value::Ip(i.src))),
    ),
    (
        "infiniband.cm.req.ip_cm.dip4",
        msg!(Req, r => r.ip.filter(|i| i.ip_version == 4).map(|i| Value::Ip(i.dst))),
    ),
    (
        "infiniband.cm.req.ip_cm.sip6",
        msg!(Req, r => r.ip.filter(|i| i.ip_version == 6).map(|i| Value::Ip(i.src))),
    ),
    (
        "infiniband.cm.req.ip_cm.dip6",
        msg!(Req, r => r.ip.filter(|i| i.ip_version == 6).map(|i| Value::Ip(i.dst))),
    ),
    // MsgRcptAck (Wireshark 4.0 has no fields for it).
    (
        "rocetap.cm.mra.localcommid",
        msg!(Mra, r => hex(r.ids.local, 8)),
    ),
    (
        "rocetap.cm.mra.remotecommid",
        msg!(Mra, r => hex(r.ids.remote, 8)),
    ),
    (
        "rocetap.cm.mra.msgmraed",
        msg!(Mra, r => int(r.message_mraed)),
    ),
    (
        "rocetap.cm.mra.svctimeout",
        msg!(Mra, r => int(r.service_timeout)),
    ),
    // ConnectReject.
    (
        "infiniband.cm.rej.localcommid",
        msg!(Rej, r => hex(r.ids.local, 8)),
    ),
    (
        "infiniband.cm.rej.remotecommid",
        msg!(Rej, r => hex(r.ids.remote, 8)),
    ),
    (
        "infiniband.cm.rej.msgrej",
        msg!(Rej, r => int(r.msg_rejected)),
    ),
    (
        "infiniband.cm.rej.rejinfolen",
        msg!(Rej, r => int(r.rej_info_len)),
    ),
    ("infiniband.cm.rej.reason", msg!(Rej, r => int(r.reason.0))),
    (
        "rocetap.cm.rej.reason",
        msg!(Rej, r => Some(Value::Str(r.reason.name()))),
    ),
    // ConnectReply.
    ("infiniband.cm.rep", msg!(Rep, r => hex(r.ids.local, 8))),
    (
        "infiniband.cm.rep.remotecommid",
        msg!(Rep, r => hex(r.ids.remote, 8)),
    ),
    (
        "infiniband.cm.rep.localqkey",
        msg!(Rep, r => hex(r.local_qkey, 8)),
    ),
    (
        "infiniband.cm.rep.localqpn",
        msg!(Rep, r => hex(r.local_qpn.0, 6)),
    ),
    (
        "infiniband.cm.rep.localeecn",
        msg!(Rep, r => hex(r.local_eecn, 6)),
    ),
    (
        "infiniband.cm.rep.startpsn",
        msg!(Rep, r => int(r.start_psn.0)),
    ),
    (
        "infiniband.cm.rep.respres",
        msg!(Rep, r => int(r.responder_resources)),
    ),
    (
        "infiniband.cm.rep.initdepth",
        msg!(Rep, r => int(r.initiator_depth)),
    ),
    (
        "infiniband.cm.rep.tgtackdelay",
        msg!(Rep, r => int(r.target_ack_delay)),
    ),
    (
        "infiniband.cm.rep.failoveracc",
        msg!(Rep, r => int(r.failover_accepted)),
    ),
    (
        "infiniband.cm.rep.e2eflowctrl",
        msg!(Rep, r => int(r.e2e_flow_control)),
    ),
    (
        "infiniband.cm.rep.rnrretrcount",
        msg!(Rep, r => int(r.rnr_retry)),
    ),
    ("infiniband.cm.rep.srq", msg!(Rep, r => int(r.srq))),
    (
        "infiniband.cm.rep.localcaguid",
        msg!(Rep, r => hex(r.local_ca_guid, 16)),
    ),
    // ReadyToUse.
    (
        "infiniband.cm.rtu.localcommid",
        msg!(Rtu, r => hex(r.local, 8)),
    ),
    (
        "infiniband.cm.rtu.remotecommid",
        msg!(Rtu, r => hex(r.remote, 8)),
    ),
    // DisconnectRequest (Wireshark files its remote QPN under `req`).
    (
        "infiniband.cm.dreq.localcommid",
        msg!(Dreq, r => hex(r.ids.local, 8)),
    ),
    (
        "infiniband.cm.dreq.remotecommid",
        msg!(Dreq, r => hex(r.ids.remote, 8)),
    ),
    (
        "infiniband.cm.req.remoteqpneecn",
        msg!(Dreq, r => hex(r.remote_qpn.0, 6)),
    ),
    // DisconnectReply.
    (
        "infiniband.cm.drsp.localcommid",
        msg!(Drep, r => hex(r.local, 8)),
    ),
    (
        "infiniband.cm.drsp.remotecommid",
        msg!(Drep, r => hex(r.remote, 8)),
    ),
    // Service ID resolution.
    (
        "rocetap.cm.sidr_req.requestid",
        msg!(SidrReq, r => hex(r.request_id, 8)),
    ),
    (
        "rocetap.cm.sidr_req.pkey",
        msg!(SidrReq, r => hex(r.pkey.0, 4)),
    ),
    (
        "rocetap.cm.sidr_req.serviceid",
        msg!(SidrReq, r => hex(r.service_id.0, 16)),
    ),
    (
        "rocetap.cm.sidr_rep.requestid",
        msg!(SidrRep, r => hex(r.request_id, 8)),
    ),
    (
        "rocetap.cm.sidr_rep.status",
        msg!(SidrRep, r => int(r.status)),
    ),
    (
        "rocetap.cm.sidr_rep.qpn",
        msg!(SidrRep, r => hex(r.qpn.0, 6)),
    ),
    (
        "rocetap.cm.sidr_rep.serviceid",
        msg!(SidrRep, r => hex(r.service_id.0, 16)),
    ),
    (
        "rocetap.cm.sidr_rep.qkey",
        msg!(SidrRep, r => hex(r.qkey, 8)),
    ),
    // Alternate path.
    (
        "rocetap.cm.lap.localcommid",
        msg!(Lap, r => hex(r.ids.local, 8)),
    ),
    (
        "rocetap.cm.lap.remotecommid",
        msg!(Lap, r => hex(r.ids.remote, 8)),
    ),
    (
        "rocetap.cm.lap.remoteqpn",
        msg!(Lap, r => hex(r.remote_qpn.0, 6)),
    ),
    (
        "rocetap.cm.lap.alt_tfcclass",
        msg!(Lap, r => int(r.alternate.traffic_class)),
    ),
    (
        "rocetap.cm.apr.localcommid",
        msg!(Apr, r => hex(r.ids.local, 8)),
    ),
    (
        "rocetap.cm.apr.remotecommid",
        msg!(Apr, r => hex(r.ids.remote, 8)),
    ),
    ("rocetap.cm.apr.status", msg!(Apr, r => int(r.ap_status))),
];
