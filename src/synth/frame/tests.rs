//! Built frames decode back to the values they were built from.

use super::*;
use dissectors::{
    decode, Config, IcrcStatus, LinkType, Msn, Opcode, PKey, Psn, Qpn, RoceVersion, StopKind,
};
use std::net::Ipv4Addr;

fn path(src: IpAddr, dst: IpAddr, link: Link, encap: Encap) -> Path {
    Path {
        src_mac: mac_for(src),
        dst_mac: mac_for(dst),
        link,
        src,
        dst,
        encap,
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: if src.is_ipv6() { 0x1_2345 } else { 0 },
    }
}

fn bth(op: u8, psn: u32) -> BthRepr {
    BthRepr {
        opcode: Opcode(op),
        pkey: PKey(0xffff),
        dest_qp: Qpn(0x00_0a11),
        ack_req: true,
        psn: Psn(psn),
        se: op == 0x0B,
        ..Default::default()
    }
}

/// Every kind of packet the synthesizer builds, over every encapsulation it uses,
/// decodes back to the same fields with a good ICRC.
#[test]
fn built_frames_decode_to_the_same_fields() {
    let v4a = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1));
    let v4b = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2));
    let v6a: IpAddr = "2001:db8::1".parse().unwrap();
    let v6b: IpAddr = "2001:db8::2".parse().unwrap();
    let paths = [
        (
            path(
                v4a,
                v4b,
                Link::Ethernet { vlan: None },
                Encap::V2 { sport: 0xc123 },
            ),
            LinkType::Ethernet,
        ),
        (
            path(
                v4a,
                v4b,
                Link::Ethernet {
                    vlan: Some(Vlan { vid: 100, pcp: 3 }),
                },
                Encap::V2 { sport: 0xc124 },
            ),
            LinkType::Ethernet,
        ),
        (
            path(
                v6a,
                v6b,
                Link::Ethernet { vlan: None },
                Encap::V2 { sport: 0xd000 },
            ),
            LinkType::Ethernet,
        ),
        (
            path(v4a, v4b, Link::Ethernet { vlan: None }, Encap::V1),
            LinkType::Ethernet,
        ),
        (
            path(
                v4a,
                v4b,
                Link::Sll2 {
                    ifindex: 4,
                    pkt_type: 4,
                },
                Encap::V2 { sport: 0xc000 },
            ),
            LinkType::LinuxSll2,
        ),
    ];
    let reth = Some(RethRepr {
        va: 0x7f00_0000_1000,
        rkey: 0x1234,
        dma_len: 5000,
    });
    let aeth = Some(AethRepr {
        syndrome: 0x1f,
        msn: Msn(77),
    });
    let pkts = [
        Pkt {
            bth: bth(0x06, 10),
            reth,
            payload_len: 1024,
            fill: 0xab,
            ..Default::default()
        },
        Pkt {
            bth: bth(0x0B, 0xff_ffff),
            reth,
            immdt: Some(ImmDtRepr { data: 0xcafe }),
            payload_len: 13,
            ..Default::default()
        },
        Pkt {
            bth: bth(0x17, 5),
            ieth: Some(IethRepr { rkey: 0x99 }),
            payload_len: 1,
            ..Default::default()
        },
        Pkt {
            bth: bth(0x0C, 6),
            reth,
            ..Default::default()
        },
        Pkt {
            bth: bth(0x0F, 7),
            aeth,
            payload_len: 906,
            ..Default::default()
        },
        Pkt {
            bth: bth(0x11, 7),
            aeth: Some(AethRepr {
                syndrome: 0x60,
                msn: Msn(3),
            }),
            ..Default::default()
        },
        Pkt {
            bth: bth(0x14, 8),
            atomic_eth: Some(AtomicEthRepr {
                va: 0x1000,
                rkey: 7,
                swap_add: 1,
                compare: 0,
            }),
            ..Default::default()
        },
        Pkt {
            bth: bth(0x12, 8),
            aeth,
            atomic_ack_eth: Some(AtomicAckEthRepr { orig_rem_data: 41 }),
            ..Default::default()
        },
        Pkt {
            bth: bth(0x64, 1),
            deth: Some(DethRepr {
                qkey: 0x1111_1111,
                src_qp: Qpn(0x22),
            }),
            payload_len: 256,
            ..Default::default()
        },
        Pkt {
            bth: bth(0xA4, 2),
            xrceth: Some(XrcethRepr { xrc_srq: Qpn(0x45) }),
            payload_len: 30,
            ..Default::default()
        },
        Pkt {
            bth: BthRepr {
                opcode: Opcode::CNP,
                pkey: PKey(0xffff),
                becn: true,
                dest_qp: Qpn(0x1f3a),
                ..Default::default()
            },
            ..Default::default()
        },
    ];
    let cfg = Config::default();
    let mut buf = Vec::new();
    for (p, link) in &paths {
        for pkt in &pkts {
            let ecn = if pkt.bth.opcode == Opcode(0x06) {
                Ecn::Ce
            } else {
                p.ecn
            };
            let lay = roce(&mut buf, p, ecn, pkt);
            assert_eq!(lay.len, buf.len());
            let d = decode(*link, &buf, buf.len() as u32, &cfg);
            assert_eq!(d.stop.kind, StopKind::Complete, "{pkt:?} {p:?}: {}", d.stop);
            let r = d.roce.unwrap();
            assert_eq!(r.icrc, IcrcStatus::Ok, "{pkt:?}");
            let mut want = pkt.bth;
            want.pad_cnt = ((4 - pkt.payload_len % 4) % 4) as u8;
            assert_eq!(r.bth, want);
            assert_eq!(r.reth, pkt.reth);
            assert_eq!(r.aeth, pkt.aeth);
            assert_eq!(r.deth, pkt.deth);
            assert_eq!(r.xrceth, pkt.xrceth);
            assert_eq!(r.immdt, pkt.immdt);
            assert_eq!(r.ieth, pkt.ieth);
            assert_eq!(r.atomic_eth, pkt.atomic_eth);
            assert_eq!(r.atomic_ack_eth, pkt.atomic_ack_eth);
            assert_eq!(r.payload_len, pkt.payload_len);
            assert_eq!(r.bth_offset as usize, lay.bth);
            assert_eq!(r.payload_offset as usize, lay.payload);
            assert_eq!(d.ecn(), Some(ecn));
            assert_eq!(d.dscp(), Some(26));
            let (s, t) = d.endpoints().unwrap();
            assert_eq!(s.to_string(), p.src.to_string());
            assert_eq!(t.to_string(), p.dst.to_string());
            match p.encap {
                Encap::V1 => assert_eq!(r.version, RoceVersion::V1),
                Encap::V2 { sport } => {
                    assert_eq!(r.version, RoceVersion::V2);
                    assert_eq!(d.udp.unwrap().src_port, sport);
                }
            }
            if let Link::Ethernet { vlan: Some(v) } = p.link {
                assert_eq!(d.pcp(), Some(v.pcp));
                assert_eq!(d.vlans[0].unwrap().vid, v.vid);
            }
            if let Link::Sll2 { ifindex, .. } = p.link {
                assert_eq!(d.sll.unwrap().ifindex, Some(ifindex));
            }
            // A single flipped payload bit must break the ICRC.
            if pkt.payload_len > 0 {
                buf[lay.payload] ^= 1;
                let d = decode(*link, &buf, buf.len() as u32, &cfg);
                assert_eq!(d.roce.unwrap().icrc, IcrcStatus::Bad);
            }
        }
    }
}

#[test]
fn cnp_has_the_annex_a17_shape() {
    let a = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 6));
    let b = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 5));
    let mut p = path(a, b, Link::Ethernet { vlan: None }, Encap::V2 { sport: 0 });
    p.dscp = 48;
    let pkt = Pkt {
        bth: BthRepr {
            opcode: Opcode::CNP,
            pkey: PKey(0xffff),
            becn: true,
            dest_qp: Qpn(0x1f3a),
            ..Default::default()
        },
        ..Default::default()
    };
    let lay = roce(&mut Vec::new(), &p, Ecn::NotEct, &pkt);
    assert_eq!(lay.len - lay.net, 60, "IPv4 total length of a CNP");
}

#[test]
fn arp_and_pfc_frames_decode() {
    let cfg = Config::default();
    let mut buf = Vec::new();
    let a = ArpRepr::ethernet(
        dissectors::ArpOp::Request,
        [0xee; 6],
        Ipv4Addr::new(198, 19, 8, 1),
        [0; 6],
        Ipv4Addr::new(198, 18, 1, 5),
    );
    let n = arp(
        &mut buf,
        [0xee; 6],
        BROADCAST,
        &Link::Ethernet { vlan: None },
        &a,
        true,
    );
    assert_eq!(n, 60);
    let d = decode(LinkType::Ethernet, &buf, n as u32, &cfg);
    assert_eq!(d.arp, Some(a));
    let link = Link::Sll2 {
        ifindex: 3,
        pkt_type: 1,
    };
    let n = arp(&mut buf, [0xee; 6], BROADCAST, &link, &a, true);
    assert_eq!(n, 20 + 28);
    let d = decode(LinkType::LinuxSll2, &buf, n as u32, &cfg);
    assert_eq!(d.arp, Some(a));
    assert_eq!(d.sll.unwrap().ifindex, Some(3));
    let p = PauseRepr::Pfc {
        enable: 0x08,
        quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0],
    };
    let n = pause(&mut buf, [2, 0, 0, 0, 0, 1], &p);
    let d = decode(LinkType::Ethernet, &buf, n as u32, &cfg);
    assert_eq!(d.pause, Some(p));
    assert_eq!(d.eth.unwrap().dst, MAC_CONTROL_DST);
}
