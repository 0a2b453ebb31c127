//! Classic little-endian pcap files read whole, for tests that rewrite or compare frames.

use std::path::Path;

/// One pcap record: the timestamp words, the captured bytes, the wire length.
pub type Record = ([u8; 8], Vec<u8>, u32);

/// A classic little-endian pcap (µs or ns): its global header and its records.
pub fn read_pcap(p: &Path) -> ([u8; 24], Vec<Record>) {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    assert!(
        magic == 0xa1b2_c3d4 || magic == 0xa1b2_3c4d,
        "{}: not a little-endian pcap",
        p.display()
    );
    let mut recs = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let ts: [u8; 8] = b[off..off + 8].try_into().unwrap();
        let cap = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        let orig = u32::from_le_bytes(b[off + 12..off + 16].try_into().unwrap());
        recs.push((ts, b[off + 16..off + 16 + cap].to_vec(), orig));
        off += 16 + cap;
    }
    (b[0..24].try_into().unwrap(), recs)
}
