//! Mirrored and overlaid RoCE: a RoCE v2 frame wrapped (by `tunnel::encap`) in GRE
//! (gretap and plain IP), ERSPAN I / II / III (with and without the platform
//! subheader), VXLAN and Geneve decodes to the same inner layers as the bare frame, with
//! the outer identity in `Decoded::tunnel`; every cut of every wrapped frame stops
//! cleanly (truncated, never malformed, for a snaplen cut); and broken outer headers
//! stop at the right layer.

use dissectors::tunnel::encap::{wrap, Encap};
use dissectors::*;
use std::net::{IpAddr, Ipv4Addr};

/// Ethernet / IPv4 / UDP 4791 / BTH + AETH / ICRC.
fn roce_frame() -> Vec<u8> {
    let t = crate::common::ack_transport(0x1f);
    crate::common::roce_v2_frame(&t, 26, Ecn::Ect0, 0xc123)
}

fn encaps() -> Vec<Encap> {
    let mut v = Vec::new();
    let mut e = Encap::new(TunnelKind::Gre, 0);
    v.push(e);
    e.gre_key = true;
    e.session = 0xabcd_0123;
    e.gre_checksum = true;
    v.push(e);
    e.ip_payload = true;
    v.push(e);
    v.push(Encap::new(TunnelKind::ErspanI, 0));
    let mut e = Encap::new(TunnelKind::ErspanII, 0x155);
    e.port = 0x2_0003;
    e.vlan = 100;
    e.cos = 3;
    v.push(e);
    let mut e = Encap::new(TunnelKind::ErspanIII, 0x3ff);
    e.port = 0x21;
    e.egress = true;
    v.push(e);
    e.platform = Some((3, 0x1234_5678_9abc));
    v.push(e);
    v.push(Encap::new(TunnelKind::Vxlan, 0x00ab_cdef));
    v.push(Encap::new(TunnelKind::Geneve, 42));
    let mut e = Encap::new(TunnelKind::Geneve, 43);
    e.ip_payload = true;
    v.push(e);
    v
}

fn dec(f: &[u8], orig: usize) -> Decoded {
    decode(LinkType::Ethernet, f, orig as u32, &Config::default())
}

#[test]
fn every_encapsulation_decodes_to_the_bare_frame() {
    let bare_f = roce_frame();
    let bare = dec(&bare_f, bare_f.len());
    assert_eq!(bare.stop.kind, StopKind::Complete);
    assert!(bare.tunnel.is_none());
    for e in encaps() {
        let mut f = Vec::new();
        wrap(&e, 7, 0x0102_0304, &bare_f, &mut f).unwrap();
        let d = dec(&f, f.len());
        assert_eq!(d.stop.kind, StopKind::Complete, "{e:?}: {:?}", d.stop);
        let t = d.tunnel.unwrap_or_else(|| panic!("{e:?}: no tunnel"));
        assert_eq!(t.kind, e.kind);
        assert_eq!(
            t.outer_ip.src,
            IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)),
            "{e:?}"
        );
        assert_eq!(t.outer_eth.unwrap().src, [2, 0, 0, 0, 0, 0x0a]);
        // The ordinary fields are the inner frame's.
        assert_eq!(d.ip, bare.ip, "{e:?}");
        assert_eq!(d.udp, bare.udp, "{e:?}");
        if e.ip_payload {
            assert_eq!(d.eth, None);
        } else {
            assert_eq!(d.eth, bare.eth, "{e:?}");
        }
        let (r, b) = (d.roce.unwrap(), bare.roce.unwrap());
        assert_eq!(r.bth, b.bth);
        assert_eq!(r.aeth, b.aeth);
        assert_eq!(r.icrc, IcrcStatus::Ok, "{e:?}");
        assert_eq!(r.payload_len, b.payload_len);
        assert_eq!(
            r.bth_offset as usize - b.bth_offset as usize,
            t.inner_offset as usize - if e.ip_payload { 14 } else { 0 },
            "{e:?}"
        );
        let tap = t.tap();
        match e.kind {
            TunnelKind::ErspanII => {
                let x = t.erspan.unwrap();
                assert_eq!(
                    (x.session, x.index, x.vlan, x.cos),
                    (0x155, 0x2_0003, 100, 3)
                );
                assert_eq!(t.gre.unwrap().seq, Some(7));
                assert_eq!((tap.session, tap.port, tap.egress), (0x155, 0x2_0003, None));
            }
            TunnelKind::ErspanIII => {
                let x = t.erspan.unwrap();
                assert_eq!(x.timestamp, 0x0102_0304);
                assert_eq!(x.platform, e.platform);
                assert_eq!(
                    (tap.session, tap.port, tap.egress),
                    (0x3ff, 0x21, Some(true))
                );
            }
            TunnelKind::Vxlan => assert_eq!(tap.session, 0x00ab_cdef),
            TunnelKind::Geneve => assert_eq!(tap.session, e.session),
            TunnelKind::Gre if e.gre_key => {
                assert_eq!(tap.session, 0xabcd_0123);
                assert!(t.gre.unwrap().checksum.is_some());
            }
            _ => assert_eq!(tap.session, 0),
        }
    }
}

#[test]
fn every_cut_of_every_encapsulation_stops_cleanly() {
    let bare_f = roce_frame();
    for e in encaps() {
        let mut f = Vec::new();
        wrap(&e, 1, 2, &bare_f, &mut f).unwrap();
        for n in 0..f.len() {
            let cut = dec(&f[..n], f.len());
            assert_eq!(
                cut.stop.kind,
                StopKind::Truncated,
                "{e:?} cut {n}: {:?}",
                cut.stop
            );
            assert!(cut.stop.offset as usize <= n);
            // The same bytes claiming to be whole are malformed, never a panic.
            let short = dec(&f[..n], n);
            assert_ne!(short.stop.kind, StopKind::Complete, "{e:?} short {n}");
        }
    }
}

#[test]
fn broken_outer_headers_stop_at_their_layer() {
    let bare_f = roce_frame();
    let mut f = Vec::new();
    wrap(&Encap::new(TunnelKind::ErspanII, 1), 1, 0, &bare_f, &mut f).unwrap();
    let gre = 14 + 20;
    // ERSPAN version 2 under protocol 0x88BE.
    let mut g = f.clone();
    g[gre + 8] = 0x20 | (g[gre + 8] & 0x0f);
    let d = dec(&g, g.len());
    assert_eq!(
        (d.stop.kind, d.stop.layer),
        (StopKind::Malformed, Layer::Erspan)
    );
    // An ERSPAN version nobody defined.
    g[gre + 8] = 0x70;
    let d = dec(&g, g.len());
    assert_eq!(
        (d.stop.kind, d.stop.layer),
        (StopKind::Unsupported, Layer::Erspan)
    );
    // GRE version 1 (PPTP) and source routing.
    for b1 in [0x10u8 | 0x40, 0x10] {
        let mut g = f.clone();
        g[gre] = b1;
        g[gre + 1] = u8::from(b1 == 0x10);
        let d = dec(&g, g.len());
        assert_eq!(
            (d.stop.kind, d.stop.layer),
            (StopKind::Unsupported, Layer::Gre)
        );
        assert!(d.tunnel.is_none());
        assert!(
            d.ip.is_some(),
            "the outer IP stays when the tunnel is not entered"
        );
    }
    // A GRE protocol that is not a mirror.
    let mut g = f.clone();
    g[gre + 2..gre + 4].copy_from_slice(&0x880bu16.to_be_bytes());
    assert_eq!(dec(&g, g.len()).stop.layer, Layer::Gre);
    // VXLAN without the I flag.
    let mut v = Vec::new();
    wrap(&Encap::new(TunnelKind::Vxlan, 5), 1, 0, &bare_f, &mut v).unwrap();
    v[14 + 20 + 8] = 0;
    let d = dec(&v, v.len());
    assert_eq!(
        (d.stop.kind, d.stop.layer),
        (StopKind::Malformed, Layer::Vxlan)
    );
    // A tunnel inside a tunnel is not entered twice.
    let mut inner = Vec::new();
    wrap(&Encap::new(TunnelKind::Vxlan, 5), 1, 0, &bare_f, &mut inner).unwrap();
    let mut outer = Vec::new();
    wrap(
        &Encap::new(TunnelKind::ErspanII, 9),
        1,
        0,
        &inner,
        &mut outer,
    )
    .unwrap();
    let d = dec(&outer, outer.len());
    assert_eq!(d.stop.kind, StopKind::Unsupported);
    assert_eq!(d.tunnel.unwrap().kind, TunnelKind::ErspanII);
    assert!(d.roce.is_none());
}
