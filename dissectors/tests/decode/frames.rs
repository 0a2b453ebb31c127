//! Whole-frame decoding through every link layer and encapsulation, built with `emit`:
//! QinQ with PCP, Linux cooked v1/v2 (interface index kept), raw IP, IPv6, RoCE v1,
//! PFC and 802.3x pause, ARP; and the stop reason (layer, kind, offset) for frames cut
//! by a snaplen or malformed at each layer.

use dissectors::ib::icrc;
use dissectors::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// BTH + AETH with syndrome 0x60 (a NAK: PSN sequence error).
fn ack_transport() -> Vec<u8> {
    crate::common::ack_transport(0x60)
}

/// IP / UDP 4791 / transport / ICRC.
fn ip_packet(src: IpAddr, dst: IpAddr, ecn: Ecn, transport: &[u8]) -> Vec<u8> {
    let ip = IpRepr {
        src,
        dst,
        dscp: 26,
        ecn,
        ttl: 64,
        flow_label: 0xabcde,
        ident: 1,
        protocol: 17,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    };
    let udp_len = 8 + transport.len() + 4;
    let mut p = vec![0u8; 40 + udp_len];
    let h = ip.emit(udp_len, &mut p);
    p.truncate(h + udp_len);
    UdpRepr {
        src_port: 0xc123,
        dst_port: 4791,
        length: udp_len as u16,
        checksum: 0,
    }
    .emit(&mut p[h..]);
    p[h + 8..h + 8 + transport.len()].copy_from_slice(transport);
    let crc = icrc::roce_v2(&p[..h], &p[h..h + 8 + transport.len()]);
    let n = p.len();
    p[n - 4..].copy_from_slice(&crc.to_le_bytes());
    p
}

fn v4(a: u8, b: u8) -> (IpAddr, IpAddr) {
    (
        Ipv4Addr::new(198, 18, 0, a).into(),
        Ipv4Addr::new(198, 18, 0, b).into(),
    )
}

fn eth(ethertype: u16) -> Vec<u8> {
    let mut e = vec![0u8; 14];
    EthernetRepr {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
        ethertype,
    }
    .emit(&mut e);
    e
}

fn dec(link: LinkType, f: &[u8]) -> Decoded {
    decode(link, f, f.len() as u32, &Config::default())
}

#[test]
fn qinq_keeps_both_tags_and_the_pcp() {
    let (s, d) = v4(1, 2);
    let mut f = eth(0x88a8);
    let mut tags = [0u8; 8];
    VlanRepr {
        tpid: 0x88a8,
        pcp: 5,
        dei: false,
        vid: 200,
        ethertype: 0x8100,
    }
    .emit(&mut tags);
    VlanRepr {
        tpid: 0x8100,
        pcp: 3,
        dei: false,
        vid: 100,
        ethertype: 0x0800,
    }
    .emit(&mut tags[4..]);
    f.extend_from_slice(&tags);
    f.extend_from_slice(&ip_packet(s, d, Ecn::Ce, &ack_transport()));
    let x = dec(LinkType::Ethernet, &f);
    assert_eq!(x.stop.kind, StopKind::Complete, "{:?}", x.stop);
    assert_eq!(x.vlans[0].unwrap().vid, 200);
    assert_eq!(x.vlans[1].unwrap().vid, 100);
    assert_eq!(x.vlans[1].unwrap().pcp, 3);
    assert_eq!(x.pcp(), Some(5));
    assert_eq!(x.ecn(), Some(Ecn::Ce));
    let r = x.roce.unwrap();
    assert_eq!(r.icrc, IcrcStatus::Ok, "CE marking must not break the ICRC");
    assert_eq!(
        r.aeth.unwrap().kind(),
        AethKind::Nak(NakCode::PsnSequenceError)
    );
    // A third tag is not decoded, and says so.
    let mut f3 = eth(0x8100);
    let mut t = [0u8; 4];
    for _ in 0..3 {
        VlanRepr {
            tpid: 0x8100,
            pcp: 0,
            dei: false,
            vid: 1,
            ethertype: 0x8100,
        }
        .emit(&mut t);
        f3.extend_from_slice(&t);
    }
    assert_eq!(
        dec(LinkType::Ethernet, &f3).stop.kind,
        StopKind::Unsupported
    );
}

#[test]
fn linux_cooked_v1_and_v2() {
    let (s, d) = v4(1, 2);
    let pkt = ip_packet(s, d, Ecn::Ect0, &ack_transport());
    for version in [1u8, 2] {
        let sll = SllRepr {
            version,
            pkt_type: 4,
            arphrd: 1,
            addr_len: 6,
            addr: [2, 0, 0, 0, 0, 1, 0, 0],
            protocol: 0x0800,
            ifindex: (version == 2).then_some(42),
        };
        let mut f = vec![0u8; sll.header_len()];
        sll.emit(&mut f);
        f.extend_from_slice(&pkt);
        let link = if version == 2 {
            LinkType::LinuxSll2
        } else {
            LinkType::LinuxSll
        };
        let x = dec(link, &f);
        assert_eq!(x.stop.kind, StopKind::Complete);
        assert_eq!(x.sll.unwrap().ifindex, (version == 2).then_some(42));
        assert_eq!(x.src_mac(), Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(x.roce.unwrap().icrc, IcrcStatus::Ok);
    }
}

#[test]
fn raw_ip_and_ipv6() {
    let s: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 1).into();
    let d: IpAddr = Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 2).into();
    let pkt = ip_packet(s, d, Ecn::Ect1, &ack_transport());
    for link in [LinkType::RawIp, LinkType::Ipv6] {
        let x = dec(link, &pkt);
        assert_eq!(x.stop.kind, StopKind::Complete);
        assert_eq!(x.ip.unwrap().flow_label, 0xabcde);
        assert_eq!(x.roce.unwrap().icrc, IcrcStatus::Ok);
    }
}

#[test]
fn roce_v1_with_grh() {
    let t = ack_transport();
    let g = GrhRepr {
        ip_ver: 6,
        tclass: 0x6b,
        flow_label: 1,
        pay_len: (t.len() + 4) as u16,
        nxt_hdr: 0x1b,
        hop_lmt: 1,
        sgid: Ipv4Addr::new(198, 18, 0, 1).to_ipv6_mapped().octets(),
        dgid: Ipv4Addr::new(198, 18, 0, 2).to_ipv6_mapped().octets(),
    };
    let mut grh = [0u8; 40];
    g.emit(&mut grh);
    let crc = icrc::roce_v1(&grh, &t);
    let mut f = eth(0x8915);
    f.extend_from_slice(&grh);
    f.extend_from_slice(&t);
    f.extend_from_slice(&crc.to_le_bytes());
    let x = dec(LinkType::Ethernet, &f);
    assert_eq!(x.stop.kind, StopKind::Complete);
    let r = x.roce.unwrap();
    assert_eq!(r.version, RoceVersion::V1);
    assert_eq!(r.icrc, IcrcStatus::Ok);
    assert_eq!(x.ecn(), Some(Ecn::Ce));
    assert_eq!(
        x.endpoints().unwrap().0,
        Addr::Ip(Ipv4Addr::new(198, 18, 0, 1).into())
    );
}

#[test]
fn pause_pfc_and_arp() {
    let mut f = eth(0x8808);
    let p = PauseRepr::Pfc {
        enable: 0x08,
        quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
    };
    let mut b = [0u8; 20];
    p.emit(&mut b);
    f.extend_from_slice(&b);
    f.resize(60, 0);
    let x = dec(LinkType::Ethernet, &f);
    assert_eq!(x.pause, Some(p));
    assert_eq!(x.stop.kind, StopKind::Complete);
    let mut f = eth(0x8808);
    f.extend_from_slice(&[0, 1, 0x12, 0x34]);
    assert_eq!(
        dec(LinkType::Ethernet, &f).pause,
        Some(PauseRepr::Global { quanta: 0x1234 })
    );
    let mut f = eth(0x0806);
    let a = ArpRepr::ethernet(
        ArpOp::Request,
        [0xee; 6],
        Ipv4Addr::new(198, 19, 8, 1),
        [0; 6],
        Ipv4Addr::new(198, 18, 1, 5),
    );
    let mut b = [0u8; 28];
    a.emit(&mut b);
    f.extend_from_slice(&b);
    let x = dec(LinkType::Ethernet, &f);
    assert_eq!(x.arp, Some(a));
}

/// Cutting a frame inside each layer names that layer; the same bytes as a complete
/// frame are malformed.
#[test]
fn stop_reasons_name_the_layer_and_offset() {
    let (s, d) = v4(1, 2);
    let mut t = vec![0u8; 28];
    BthRepr {
        opcode: Opcode(0x06),
        pkey: PKey(0xffff),
        dest_qp: Qpn(1),
        psn: Psn(1),
        ..Default::default()
    }
    .emit(&mut t);
    RethRepr {
        va: 1,
        rkey: 2,
        dma_len: 4096,
    }
    .emit(&mut t[12..]);
    t.extend_from_slice(&[0xab; 64]);
    let mut f = eth(0x0800);
    f.extend_from_slice(&ip_packet(s, d, Ecn::NotEct, &t));
    let full = f.len() as u32;
    for (cut, layer) in [
        (10, Layer::Ethernet),
        (20, Layer::Ip),
        (36, Layer::Udp),
        (45, Layer::Bth),
        (60, Layer::Reth),
        (80, Layer::Payload),
        (f.len() - 2, Layer::Icrc),
    ] {
        let x = decode(LinkType::Ethernet, &f[..cut], full, &Config::default());
        assert_eq!(
            (x.stop.kind, x.stop.layer),
            (StopKind::Truncated, layer),
            "cut at {cut}: {:?}",
            x.stop
        );
        assert_eq!(x.stop.offset as usize, cut);
        let y = decode(
            LinkType::Ethernet,
            &f[..cut],
            cut as u32,
            &Config::default(),
        );
        assert_ne!(
            y.stop.kind,
            StopKind::Complete,
            "cut at {cut} as a complete frame"
        );
        if cut >= 54 {
            assert_eq!(x.roce.unwrap().icrc, IcrcStatus::Truncated);
        }
    }
    // UDP length shorter than its header.
    let mut bad = f.clone();
    bad[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&4u16.to_be_bytes());
    let x = dec(LinkType::Ethernet, &bad);
    assert_eq!(
        (x.stop.kind, x.stop.layer),
        (StopKind::Malformed, Layer::Udp)
    );
    // A pad count larger than the payload.
    let mut t2 = ack_transport();
    t2[1] |= 0x30;
    let mut g = eth(0x0800);
    g.extend_from_slice(&ip_packet(s, d, Ecn::NotEct, &t2));
    let x = dec(LinkType::Ethernet, &g);
    assert_eq!(
        (x.stop.kind, x.stop.layer),
        (StopKind::Malformed, Layer::Payload),
        "{:?}",
        x.stop
    );
    // An opcode outside the table: BTH kept, unsupported, ICRC still checked.
    let mut t3 = ack_transport();
    t3[0] = 0xf0;
    let mut h = eth(0x0800);
    h.extend_from_slice(&ip_packet(s, d, Ecn::NotEct, &t3));
    let x = dec(LinkType::Ethernet, &h);
    assert_eq!(
        (x.stop.kind, x.stop.layer),
        (StopKind::Unsupported, Layer::Bth)
    );
    assert_eq!(x.roce.unwrap().icrc, IcrcStatus::Ok);
    assert!(x.roce.unwrap().operation.is_none());
}
