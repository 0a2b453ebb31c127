//! Test helpers: locating `../shared/captures` and reading pcap files into memory.

#![allow(dead_code)]

use dissectors::LinkType;
use pcap_parser::pcapng::Block;
use pcap_parser::{PcapBlockOwned, PcapError};
use std::path::PathBuf;

/// `../shared/captures` beside the repository, or `None` (after printing why) when it is
/// absent. Under CI (`CI` set) an absent folder is a failure, not a skip.
pub fn captures_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/captures");
    if dir.is_dir() {
        return Some(dir);
    }
    let msg = format!(
        "SKIP: {} not found (the shared captures live beside the repository)",
        dir.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{msg}; CI must have it");
    eprintln!("{msg}");
    None
}

/// Every capture file (pcap or pcapng) under `captures/public` and `captures/reference`.
pub fn capture_files() -> Vec<PathBuf> {
    let Some(dir) = captures_dir() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for sub in ["public", "reference"] {
        let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".md") || name.ends_with(".json") {
                continue;
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// (link type, frame bytes, original length) of every frame in a pcap / pcapng file.
pub fn read_frames(path: &PathBuf) -> Vec<(LinkType, Vec<u8>, u32)> {
    let f = std::fs::File::open(path).unwrap();
    let mut r = pcap_parser::create_reader(1 << 20, f).unwrap();
    let mut link = LinkType::Ethernet;
    let mut ifaces = Vec::new();
    let mut out = Vec::new();
    loop {
        match r.next() {
            Ok((off, b)) => {
                match b {
                    PcapBlockOwned::LegacyHeader(h) => {
                        link = LinkType::from_linktype(h.network.0 as u32);
                    }
                    PcapBlockOwned::Legacy(b) => out.push((link, b.data.to_vec(), b.origlen)),
                    PcapBlockOwned::NG(Block::InterfaceDescription(i)) => {
                        ifaces.push(LinkType::from_linktype(i.linktype.0 as u32));
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(e)) => out.push((
                        ifaces[e.if_id as usize],
                        e.data[..e.caplen as usize].to_vec(),
                        e.origlen,
                    )),
                    PcapBlockOwned::NG(_) => {}
                }
                r.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => r.refill().unwrap(),
            Err(e) => panic!("{}: {e:?}", path.display()),
        }
    }
    out
}

/// Ethernet / IPv4 198.18.0.1 → 198.18.0.2 (`dscp`, `ecn`) / UDP `src_port` → 4791 /
/// `transport` / a correct ICRC: a RoCE v2 frame around the given transport headers.
pub fn roce_v2_frame(transport: &[u8], dscp: u8, ecn: dissectors::Ecn, src_port: u16) -> Vec<u8> {
    use dissectors::ib::icrc;
    use dissectors::{EthernetRepr, IpRepr, UdpRepr};
    use std::net::{IpAddr, Ipv4Addr};
    let ip = IpRepr {
        src: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
        dscp,
        ecn,
        ttl: 64,
        flow_label: 0,
        ident: 1,
        protocol: 17,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    };
    let udp_len = 8 + transport.len() + 4;
    let mut f = vec![0u8; 14 + 20 + udp_len];
    EthernetRepr {
        dst: [2, 0, 0, 0, 0, 2],
        src: [2, 0, 0, 0, 0, 1],
        ethertype: 0x0800,
    }
    .emit(&mut f);
    let h = ip.emit(udp_len, &mut f[14..]);
    UdpRepr {
        src_port,
        dst_port: 4791,
        length: udp_len as u16,
        checksum: 0,
    }
    .emit(&mut f[14 + h..]);
    f[14 + h + 8..14 + h + 8 + transport.len()].copy_from_slice(transport);
    let n = f.len();
    let crc = icrc::roce_v2(&f[14..14 + h], &f[14 + h..n - 4]);
    f[n - 4..].copy_from_slice(&crc.to_le_bytes());
    f
}

/// BTH + AETH of an ACK to QP 0x00a011, PSN 77, MSN 9, with the AETH `syndrome`.
pub fn ack_transport(syndrome: u8) -> Vec<u8> {
    use dissectors::{AethRepr, BthRepr, Msn, Opcode, PKey, Psn, Qpn};
    let mut t = vec![0u8; 16];
    BthRepr {
        opcode: Opcode(0x11),
        pkey: PKey(0xffff),
        dest_qp: Qpn(0x00a011),
        psn: Psn(77),
        ..Default::default()
    }
    .emit(&mut t);
    AethRepr {
        syndrome,
        msn: Msn(9),
    }
    .emit(&mut t[12..]);
    t
}
