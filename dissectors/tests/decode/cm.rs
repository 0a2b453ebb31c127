//! CM MADs in whole frames: a RoCE v2 UD SEND to QP1 carrying each CM message decodes to
//! the message that was emitted; every prefix of it stops with a reason (truncated in
//! the MAD header or the CM message when the snaplen cut it, malformed when the packet
//! itself is short), and a corrupt MAD stops as malformed, never a panic.

use dissectors::cm::*;
use dissectors::mad::{self, MadHdrRepr};
use dissectors::*;
use std::net::Ipv4Addr;

/// Ethernet / IPv4 / UDP 4791 / BTH (UD SEND Only to QP1) / DETH / MAD / ICRC.
fn frame(msg: &CmMsg, mut corrupt: impl FnMut(&mut [u8])) -> Vec<u8> {
    let mut t = vec![0u8; 12 + 8 + mad::MAD_LEN];
    BthRepr {
        opcode: Opcode(0x64),
        pkey: PKey(0xffff),
        dest_qp: Qpn(1),
        psn: Psn(5),
        ..Default::default()
    }
    .emit(&mut t);
    DethRepr {
        qkey: mad::GSI_QKEY,
        src_qp: Qpn(1),
    }
    .emit(&mut t[12..]);
    let m = &mut t[20..];
    MadHdrRepr {
        base_version: 1,
        mgmt_class: mad::CLASS_CM,
        class_version: 2,
        method: 3,
        tid: 0x1234,
        attr_id: msg.attr_id(),
        ..Default::default()
    }
    .emit(m);
    msg.emit(&mut m[mad::LEN..]);
    corrupt(m);
    crate::common::roce_v2_frame(&t, 0, Ecn::NotEct, 0xc000)
}

fn messages() -> Vec<CmMsg> {
    let ids = CommIds {
        local: 0x0102_0304,
        remote: 0x0506_0708,
    };
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&[198, 18, 0, 1]);
    let req = ReqRepr {
        local_comm_id: ids.local,
        service_id: ServiceId::rdma_ip(6, 18515),
        local_qpn: Qpn(0x11),
        start_psn: Psn(0xabcdef),
        retry_count: 7,
        rnr_retry: 7,
        path_mtu: 5,
        max_cm_retries: 15,
        pkey: PKey(0xffff),
        primary: PathRepr {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: gid,
            remote_gid: gid,
            traffic_class: 106,
            hop_limit: 64,
            ..Default::default()
        },
        ip: Some(IpPrivateRepr {
            major: 0,
            minor: 0,
            ip_version: 4,
            src_port: 40000,
            src: Ipv4Addr::new(198, 18, 0, 1).into(),
            dst: Ipv4Addr::new(198, 18, 0, 2).into(),
        }),
        ..Default::default()
    };
    vec![
        CmMsg::Req(req),
        CmMsg::Mra(MraRepr {
            ids,
            message_mraed: 0,
            service_timeout: 20,
        }),
        CmMsg::Rej(RejRepr {
            ids,
            msg_rejected: 0,
            rej_info_len: 0,
            reason: RejReason::INVALID_SERVICE_ID,
        }),
        CmMsg::Rep(RepRepr {
            ids,
            local_qpn: Qpn(0x22),
            start_psn: Psn(0x123456),
            rnr_retry: 7,
            ..Default::default()
        }),
        CmMsg::Rtu(ids),
        CmMsg::Dreq(DreqRepr {
            ids,
            remote_qpn: Qpn(0x22),
        }),
        CmMsg::Drep(ids),
        CmMsg::SidrReq(SidrReqRepr {
            request_id: 9,
            pkey: PKey(0xffff),
            service_id: ServiceId::rdma_ip(0x11, 7000),
        }),
        CmMsg::SidrRep(SidrRepRepr {
            request_id: 9,
            status: 0,
            qpn: Qpn(0x33),
            qkey: 0x1111_2222,
            service_id: ServiceId::rdma_ip(0x11, 7000),
            ..Default::default()
        }),
        CmMsg::Lap(LapRepr {
            ids,
            remote_qpn: Qpn(0x22),
            ..Default::default()
        }),
        CmMsg::Apr(AprRepr {
            ids,
            add_info_len: 0,
            ap_status: 0,
        }),
    ]
}

fn decode_eth(f: &[u8], orig: usize) -> Decoded {
    decode(LinkType::Ethernet, f, orig as u32, &Config::default())
}

#[test]
fn every_cm_message_decodes_in_a_frame() {
    for msg in messages() {
        let f = frame(&msg, |_| {});
        let d = decode_eth(&f, f.len());
        assert_eq!(d.stop.kind, StopKind::Complete, "{msg:?}: {:?}", d.stop);
        let r = d.roce.unwrap();
        assert_eq!(r.icrc, IcrcStatus::Ok);
        let m = r.mad.expect("a MAD");
        assert_eq!(m.hdr.mgmt_class, 7);
        assert_eq!(m.hdr.tid, 0x1234);
        assert_eq!(m.cm, Some(msg), "{}", msg.name());
    }
}

#[test]
fn every_prefix_stops_with_a_reason() {
    for msg in messages() {
        let f = frame(&msg, |_| {});
        let full = decode_eth(&f, f.len()).roce.unwrap().mad.unwrap();
        for n in 0..f.len() {
            let cut = decode_eth(&f[..n], f.len());
            assert_ne!(cut.stop.kind, StopKind::Malformed, "{n}: {:?}", cut.stop);
            assert_ne!(cut.stop.kind, StopKind::Complete, "{n}: {:?}", cut.stop);
            assert!(cut.stop.offset as usize <= n);
            if let Some(m) = cut.roce.and_then(|r| r.mad) {
                assert_eq!(m.hdr, full.hdr);
                if let Some(c) = m.cm {
                    assert_eq!(c.local_comm_id(), full.cm.unwrap().local_comm_id());
                }
            }
            // Within the MAD header or the message's fixed part, the stop names it.
            let mad_at = 14 + 20 + 8 + 12 + 8;
            if n > mad_at && n < mad_at + mad::LEN {
                assert_eq!(cut.stop.layer, Layer::Mad, "{n}");
                assert_eq!(cut.stop.kind, StopKind::Truncated);
            }
            let short = decode_eth(&f[..n], n);
            assert!(short.stop.offset as usize <= n);
            assert_ne!(short.stop.kind, StopKind::Complete, "{n}: {:?}", short.stop);
        }
    }
}

#[test]
fn a_req_cut_inside_its_fixed_part_is_truncated_in_the_cm_layer() {
    let f = frame(&messages()[0], |_| {});
    let at = 14 + 20 + 8 + 12 + 8 + mad::LEN + 100;
    let d = decode_eth(&f[..at], f.len());
    assert_eq!(
        (d.stop.kind, d.stop.layer),
        (StopKind::Truncated, Layer::Cm)
    );
    let m = d.roce.unwrap().mad.unwrap();
    assert_eq!(m.hdr.attr_id, attr::REQ);
    assert_eq!(m.cm, None);
}

#[test]
fn corrupt_mads_are_malformed_not_panics() {
    // A base version that is not a MAD.
    let f = frame(&messages()[0], |m| m[0] = 0x7f);
    let d = decode_eth(&f, f.len());
    assert_eq!(
        (d.stop.kind, d.stop.layer),
        (StopKind::Malformed, Layer::Mad)
    );
    assert_eq!(d.roce.unwrap().mad, None);
    // An unknown CM attribute: the header is decoded, no message.
    let f = frame(&messages()[4], |m| m[17] = 0x77);
    let d = decode_eth(&f, f.len());
    assert_eq!(d.stop.kind, StopKind::Complete);
    let m = d.roce.unwrap().mad.unwrap();
    assert_eq!((m.hdr.attr_id, m.cm), (0x0077, None));
    // Another class: its header only.
    let f = frame(&messages()[4], |m| m[1] = 0x03);
    let d = decode_eth(&f, f.len());
    let m = d.roce.unwrap().mad.unwrap();
    assert_eq!((m.hdr.class_name(), m.cm), ("SubnAdm", None));
    // Random bytes after a valid header never panic.
    let mut x: u32 = 0x1234_5678;
    for _ in 0..200 {
        let f = frame(&messages()[0], |m| {
            for b in &mut m[mad::LEN..] {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
        });
        let _ = decode_eth(&f, f.len());
    }
}
