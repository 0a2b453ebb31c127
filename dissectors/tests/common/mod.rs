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
