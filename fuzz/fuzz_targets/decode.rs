//! Fuzz target: `dissectors::decode` on arbitrary bytes, for every link type and both
//! "cut by snaplen" and "complete" framing. It must never panic, and its stop offset
//! must lie inside the frame.
#![no_main]

use dissectors::{decode, Config, LinkType};
use libfuzzer_sys::fuzz_target;

const LINKS: [u32; 9] = [1, 101, 113, 197, 228, 229, 242, 247, 276];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let link = LinkType::from_linktype(LINKS[usize::from(sel & 0x0f) % LINKS.len()]);
    let orig = if sel & 0x10 != 0 {
        frame.len() as u32 + 100
    } else {
        frame.len() as u32
    };
    let cfg = Config {
        roce_port: 4791,
        check_icrc: sel & 0x20 == 0,
    };
    let d = decode(link, frame, orig, &cfg);
    assert!(
        d.stop.offset as usize <= frame.len(),
        "stop offset outside the frame"
    );
    if let Some(r) = d.roce {
        assert!(r.bth_offset as usize + 12 <= frame.len());
    }
});
