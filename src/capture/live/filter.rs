//! The default live capture filters (BPF, as tcpdump takes them): RoCE and what explains
//! it, and for `capture` also the switch mirrors that carry it.

use dissectors::LinkType;

/// The default capture filter: RoCE v2 (UDP to `port`), RoCE v1 (EtherType 0x8915), ARP
/// and MAC control / PFC (EtherType 0x8808), with or without a VLAN tag. Linux cooked
/// captures (`any`) have no VLAN tags in the frame (libpcap has no `vlan` for them).
pub fn roce_filter(link: LinkType, port: u16) -> String {
    let base = format!("udp dst port {port} or ether proto 0x8915 or arp or ether proto 0x8808");
    match link {
        LinkType::LinuxSll | LinkType::LinuxSll2 => base,
        _ => format!("({base}) or (vlan and ({base}))"),
    }
}

/// Mirror streams, whatever they carry: GRE (gretap, ERSPAN I/II/III) over IPv4 or IPv6
/// (also behind the one destination options header of Linux's ip6 tunnels' encapsulation
/// limit; `ip6 protochain` would be the general form, but libpcap cannot compile it for the
/// kernel and filters every packet in user space then), VXLAN (UDP 4789) and Geneve
/// (UDP 6081).
pub const MIRROR_FILTER: &str = "ip proto 47 or ip6 proto 47 or (ip6 proto 60 and ip6[40] = 47) \
                                 or udp dst port 4789 or udp dst port 6081";

/// `capture`'s default filter: [`roce_filter`] and [`MIRROR_FILTER`], so that a collector
/// of switch mirrors records the mirrored RoCE without being told how.
pub fn mirror_filter(link: LinkType, port: u16) -> String {
    let base = format!(
        "udp dst port {port} or ether proto 0x8915 or arp or ether proto 0x8808 or {MIRROR_FILTER}"
    );
    match link {
        LinkType::LinuxSll | LinkType::LinuxSll2 => base,
        _ => format!("({base}) or (vlan and ({base}))"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::tunnel::encap::{wrap, Encap};
    use dissectors::TunnelKind;
    use pcap::{Capture, Linktype};

    /// Ethernet / IPv4 / UDP to `dport` / 12 bytes (a BTH when `dport` is 4791).
    fn udp_frame(dport: u16) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend([0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 17, 0, 0]);
        f.extend([192, 0, 2, 1, 192, 0, 2, 2]);
        f.extend([0xc0, 0x00]);
        f.extend(dport.to_be_bytes());
        f.extend([0, 20, 0, 0]);
        f.extend([0x0a, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1]);
        f
    }

    /// `inner` in ERSPAN III over IPv6 behind a destination options header whose next
    /// header is `next` (Linux's ip6erspan with its default encapsulation limit).
    fn ip6_dstopt(next: u8, inner: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        let len = (8 + 4 + 4 + 12 + inner.len()) as u16;
        f.extend([0x60, 0, 0, 0]);
        f.extend(len.to_be_bytes());
        f.extend([60, 64]);
        f.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        f.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        // next header, length 0, tunnel encapsulation limit 4, PadN of one byte
        f.extend([next, 0, 4, 1, 4, 1, 1, 0]);
        f.extend([0x10, 0, 0x22, 0xeb, 0, 0, 0, 1]);
        f.extend([0x20, 0, 0, 0x66, 0, 0, 0, 0, 0, 0, 0, 0]);
        f.extend(inner);
        f
    }

    fn passes(filter: &str, frame: &[u8]) -> bool {
        let cap = Capture::dead(Linktype::ETHERNET).unwrap();
        cap.compile(filter, true).unwrap().filter(frame)
    }

    #[test]
    fn captures_default_lets_every_mirror_through_and_tops_does_not() {
        let roce = udp_frame(4791);
        let eth = LinkType::Ethernet;
        let (with, without) = (mirror_filter(eth, 4791), roce_filter(eth, 4791));
        let mut frames = Vec::new();
        for (kind, session) in [
            (TunnelKind::ErspanII, 5),
            (TunnelKind::ErspanIII, 6),
            (TunnelKind::Gre, 7),
            (TunnelKind::Vxlan, 4242),
            (TunnelKind::Geneve, 77),
        ] {
            let mut out = Vec::new();
            wrap(&Encap::new(kind, session), 1, 0, &roce, &mut out).unwrap();
            frames.push((format!("{kind:?}"), out));
        }
        frames.push((
            "ip6erspan, encapsulation limit".into(),
            ip6_dstopt(47, &roce),
        ));
        for (name, f) in &frames {
            assert!(passes(&with, f), "{name} is filtered out");
            assert!(!passes(&without, f), "{name} passes the RoCE filter");
        }
        assert!(passes(&with, &roce) && passes(&without, &roce));
        // Not a mirror: DNS, and a destination options header before UDP.
        for f in [udp_frame(53), ip6_dstopt(17, &roce)] {
            assert!(!passes(&with, &f));
        }
        // Linux cooked captures have no VLAN: the same expression without `vlan`.
        assert!(!mirror_filter(LinkType::LinuxSll2, 4791).contains("vlan"));
    }
}
