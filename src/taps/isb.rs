//! What a pcapng capture says it dropped: the `isb_ifdrop` counters of its Interface
//! Statistics Blocks (cumulative per interface: the last of each, summed). A tap that
//! reports drops is not trusted where the taps disagree.

use crate::capture::input;
use pcap_parser::{Block, PcapBlockOwned, PcapError};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Frames the capture of `path` reports dropped; `None` for classic pcap, a pcapng file
/// without the counter, or one that cannot be read (its frames are read, and any
/// damage reported, by the main pass).
pub fn dropped(path: &Path) -> Option<u64> {
    let mut opened = input::open(path).ok()?;
    // The reader reads its header in one call: hand it a whole first block of bytes.
    let mut head = Vec::new();
    opened
        .reader
        .by_ref()
        .take(1 << 16)
        .read_to_end(&mut head)
        .ok()?;
    if !head.starts_with(&PCAPNG_MAGIC) {
        return None;
    }
    let stream = std::io::Cursor::new(head).chain(opened.reader);
    let mut r = pcap_parser::create_reader(1 << 16, stream).ok()?;
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    loop {
        match r.next() {
            Ok((offset, block)) => {
                if let PcapBlockOwned::NG(Block::InterfaceStatistics(isb)) = &block {
                    if let Some(Ok(n)) = isb.isb_ifdrop() {
                        last.insert(isb.if_id, n);
                    }
                }
                r.consume(offset);
            }
            Err(PcapError::Incomplete(_)) => {
                if r.refill().is_err() {
                    break;
                }
            }
            Err(PcapError::BufferTooSmall) => {
                // A record larger than the buffer: grow once, as far as any frame goes.
                if !r.grow(crate::config::limits::CAPTURE_RECORD_BYTES) || r.refill().is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    (!last.is_empty()).then(|| last.values().sum())
}
