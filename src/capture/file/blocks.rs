//! pcap / pcapng blocks turned into frames: the link type and the timestamp unit and
//! offset of every pcapng interface, in the byte order of its section.
//!
//! Timestamps follow the pcapng specification as Wireshark reads it: `if_tsresol` with
//! its high bit clear is 10^-n s per unit, with it set 2^-n s per unit (absent: 10^-6);
//! `if_tsoffset` is a number of seconds added to every timestamp of the interface. The
//! obsolete Packet Block (type 2, which old tools and some converters still write) is
//! read like an Enhanced Packet Block: a 16-bit interface id, a 16-bit drops count, the
//! timestamp, the lengths and the data.

use super::{Damage, ReadError, ReadStats};
use crate::capture::Frame;
use dissectors::LinkType;
use pcap_parser::pcapng::{Block, InterfaceDescriptionBlock, OptionCode};
use pcap_parser::PcapBlockOwned;

/// The obsolete Packet Block's type.
const OBSOLETE_PACKET_BLOCK: u32 = 2;
/// Its fixed fields before the data: interface id (16 bits), drops count (16 bits),
/// timestamp high and low, captured length, original length.
const OBSOLETE_PACKET_HEADER: usize = 20;

struct Iface {
    link: LinkType,
    /// Timestamp units per second (10^n or 2^n).
    resolution: u64,
    /// Seconds added to every timestamp.
    offset_s: i64,
}

/// Units per second of an `if_tsresol` value, or `None` for one finer than a `u64`
/// counts (10^-20 and finer, 2^-64 and finer).
pub(super) fn resolution(tsresol: u8) -> Option<u64> {
    let n = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 == 0 {
        10u64.checked_pow(n)
    } else {
        1u64.checked_shl(n).filter(|_| n < 64)
    }
}

/// `if_tsresol` as a person reads it: "10^-9" or "2^-20".
fn resolution_words(tsresol: u8) -> String {
    let base = if tsresol & 0x80 == 0 { 10 } else { 2 };
    format!("{base}^-{}", tsresol & 0x7f)
}

/// Turns pcap / pcapng blocks into frames: remembers the link type and timestamp unit
/// of every interface and the byte order of the current section.
#[derive(Default)]
pub(super) struct State {
    /// Legacy pcap: one link type and nanoseconds per timestamp unit.
    legacy: Option<(LinkType, u64)>,
    ifaces: Vec<Iface>,
    /// The current pcapng section is big-endian.
    big_endian: bool,
    pub(super) stats: ReadStats,
}

impl State {
    /// The frame `block` (at byte `at` of the input) holds, `None` for a block that
    /// holds none.
    pub(super) fn frame<'b>(
        &mut self,
        block: &PcapBlockOwned<'b>,
        at: usize,
    ) -> Result<Option<Frame<'b>>, ReadError> {
        let frame = match block {
            PcapBlockOwned::LegacyHeader(h) => {
                let unit = if h.is_nanosecond_precision() { 1 } else { 1000 };
                self.legacy = Some((LinkType::from_linktype(h.network.0 as u32), unit));
                self.stats.interfaces = 1;
                return Ok(None);
            }
            PcapBlockOwned::Legacy(b) => {
                let (link, unit) = self.legacy.unwrap_or((LinkType::Ethernet, 1000));
                Frame {
                    ts_ns: u64::from(b.ts_sec) * 1_000_000_000 + u64::from(b.ts_usec) * unit,
                    link,
                    data: b.data,
                    orig_len: b.origlen.max(b.caplen),
                    iface: 0,
                    source: 0,
                }
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                // A new section starts a new interface numbering, in its own byte order.
                self.ifaces.clear();
                self.big_endian = shb.big_endian();
                return Ok(None);
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                let iface = self.iface(idb)?;
                self.ifaces.push(iface);
                self.stats.interfaces += 1;
                return Ok(None);
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                self.packet(epb.if_id, epb.ts_high, epb.ts_low, data, epb.origlen)?
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => Frame {
                ts_ns: 0,
                link: self.ifaces.first().map_or(LinkType::Ethernet, |i| i.link),
                data: spb.data,
                orig_len: spb.origlen.max(spb.data.len() as u32),
                iface: 0,
                source: 0,
            },
            // pcap-parser checks the two lengths of the blocks it knows only.
            PcapBlockOwned::NG(Block::Unknown(b)) if b.block_len1 != b.block_len2 => {
                return Err(ReadError::Corrupt {
                    frames: self.stats.frames,
                    what: Damage::Lengths.describe(at),
                });
            }
            // pcap-parser keeps an unknown block's type as read little-endian.
            PcapBlockOwned::NG(Block::Unknown(b))
                if (if self.big_endian {
                    b.block_type.swap_bytes()
                } else {
                    b.block_type
                }) == OBSOLETE_PACKET_BLOCK =>
            {
                self.obsolete_packet(b.data, at)?
            }
            PcapBlockOwned::NG(_) => return Ok(None),
        };
        self.stats.frames += 1;
        self.stats.bytes += frame.data.len() as u64;
        Ok(Some(frame))
    }

    /// An interface description: its link type, timestamp unit and offset.
    fn iface(&self, idb: &InterfaceDescriptionBlock<'_>) -> Result<Iface, ReadError> {
        // pcap-parser reads `if_tsresol` (a byte) right but assumes 10^-n, and reads
        // `if_tsoffset` little-endian whatever the section's byte order: both are read
        // here from the option itself.
        let tsresol = idb.if_tsresol;
        let Some(resolution) = resolution(tsresol) else {
            return Err(ReadError::Corrupt {
                frames: self.stats.frames,
                what: format!(
                    "interface {} declares a timestamp unit of {} s, finer than pcapng allows (10^-19 or 2^-63 s)",
                    self.ifaces.len(),
                    resolution_words(tsresol)
                ),
            });
        };
        let offset_s = idb
            .options
            .iter()
            .filter(|o| o.code == OptionCode::IfTsoffset)
            .find_map(|o| o.as_bytes().ok()?.get(..8)?.try_into().ok())
            .map_or(0, |b: [u8; 8]| {
                if self.big_endian {
                    i64::from_be_bytes(b)
                } else {
                    i64::from_le_bytes(b)
                }
            });
        Ok(Iface {
            link: LinkType::from_linktype(u32::from(idb.linktype.0 as u16)),
            resolution,
            offset_s,
        })
    }

    /// A packet of interface `if_id` with a 64-bit timestamp in that interface's units.
    fn packet<'b>(
        &self,
        if_id: u32,
        ts_high: u32,
        ts_low: u32,
        data: &'b [u8],
        origlen: u32,
    ) -> Result<Frame<'b>, ReadError> {
        let Some(iface) = self.ifaces.get(if_id as usize) else {
            return Err(ReadError::Corrupt {
                frames: self.stats.frames,
                what: format!("packet block names interface {if_id} which was never described"),
            });
        };
        let raw = (u64::from(ts_high) << 32) | u64::from(ts_low);
        let ns = (u128::from(raw) * 1_000_000_000 / u128::from(iface.resolution)) as i128
            + i128::from(iface.offset_s) * 1_000_000_000;
        Ok(Frame {
            ts_ns: ns.clamp(0, i128::from(u64::MAX)) as u64,
            link: iface.link,
            data,
            orig_len: origlen.max(data.len() as u32),
            iface: if_id,
            source: 0,
        })
    }

    /// The obsolete Packet Block at byte `at` (`body`: what lies between its two length
    /// fields).
    fn obsolete_packet<'b>(&self, body: &'b [u8], at: usize) -> Result<Frame<'b>, ReadError> {
        let corrupt = |what: String| ReadError::Corrupt {
            frames: self.stats.frames,
            what,
        };
        let Some(h) = body.get(..OBSOLETE_PACKET_HEADER) else {
            return Err(corrupt(format!(
                "the packet block at byte {at} is too short ({} bytes) to hold a packet",
                body.len() + 12
            )));
        };
        let u16_at = |o: usize| {
            let b = [h[o], h[o + 1]];
            if self.big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        };
        let u32_at = |o: usize| {
            let b = [h[o], h[o + 1], h[o + 2], h[o + 3]];
            if self.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let caplen = u32_at(12) as usize;
        let room = body.len() - OBSOLETE_PACKET_HEADER;
        let Some(data) = body[OBSOLETE_PACKET_HEADER..].get(..caplen) else {
            return Err(corrupt(format!(
                "the packet block at byte {at} says it holds {caplen} bytes of packet but has room for {room}"
            )));
        };
        self.packet(u32::from(u16_at(0)), u32_at(4), u32_at(8), data, u32_at(16))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::{for_each_frame, ReadError};
    use std::ops::ControlFlow;

    /// Hand-built pcapng bytes in either byte order.
    pub(crate) struct Ng {
        pub be: bool,
        pub bytes: Vec<u8>,
    }

    impl Ng {
        /// A section header.
        pub fn new(be: bool) -> Self {
            let mut ng = Ng {
                be,
                bytes: Vec::new(),
            };
            let mut body = Vec::new();
            ng.put32(&mut body, 0x1A2B_3C4D);
            ng.put16(&mut body, 1);
            ng.put16(&mut body, 0);
            body.extend_from_slice(&[0xff; 8]);
            ng.block(0x0A0D_0D0A, &body);
            ng
        }
        fn put16(&self, v: &mut Vec<u8>, x: u16) {
            v.extend_from_slice(&if self.be {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            });
        }
        fn put32(&self, v: &mut Vec<u8>, x: u32) {
            v.extend_from_slice(&if self.be {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            });
        }
        /// A block of `kind` around `body` (padded to 32 bits).
        pub fn block(&mut self, kind: u32, body: &[u8]) -> &mut Self {
            let pad = (4 - body.len() % 4) % 4;
            let len = (12 + body.len() + pad) as u32;
            let mut b = Vec::new();
            self.put32(&mut b, kind);
            self.put32(&mut b, len);
            b.extend_from_slice(body);
            b.extend_from_slice(&[0; 3][..pad]);
            self.put32(&mut b, len);
            self.bytes.extend_from_slice(&b);
            self
        }
        /// An Ethernet interface with `if_tsresol` and `if_tsoffset` when given.
        pub fn idb(&mut self, tsresol: Option<u8>, tsoffset: Option<i64>) -> &mut Self {
            let mut b = Vec::new();
            self.put16(&mut b, 1);
            self.put16(&mut b, 0);
            self.put32(&mut b, 65535);
            if let Some(r) = tsresol {
                self.put16(&mut b, 9);
                self.put16(&mut b, 1);
                b.extend_from_slice(&[r, 0, 0, 0]);
            }
            if let Some(o) = tsoffset {
                self.put16(&mut b, 14);
                self.put16(&mut b, 8);
                b.extend_from_slice(&if self.be {
                    o.to_be_bytes()
                } else {
                    o.to_le_bytes()
                });
            }
            if tsresol.is_some() || tsoffset.is_some() {
                b.extend_from_slice(&[0; 4]);
            }
            self.block(1, &b)
        }
        /// An Enhanced Packet Block of interface `iface` with the raw timestamp `ts`.
        pub fn epb(&mut self, iface: u32, ts: u64, data: &[u8]) -> &mut Self {
            let mut b = Vec::new();
            self.put32(&mut b, iface);
            self.put32(&mut b, (ts >> 32) as u32);
            self.put32(&mut b, ts as u32);
            self.put32(&mut b, data.len() as u32);
            self.put32(&mut b, data.len() as u32 + 4);
            b.extend_from_slice(data);
            self.block(6, &b)
        }
        /// An obsolete Packet Block (type 2) of interface `iface`.
        pub fn pb(&mut self, iface: u16, ts: u64, data: &[u8]) -> &mut Self {
            let mut b = Vec::new();
            self.put16(&mut b, iface);
            self.put16(&mut b, 7); // drops
            self.put32(&mut b, (ts >> 32) as u32);
            self.put32(&mut b, ts as u32);
            self.put32(&mut b, data.len() as u32);
            self.put32(&mut b, data.len() as u32 + 4);
            b.extend_from_slice(data);
            self.block(2, &b)
        }
    }

    /// (ts_ns, iface, data, orig_len) of every frame, and the result.
    type Got = Vec<(u64, u32, Vec<u8>, u32)>;
    fn read(bytes: &[u8]) -> (Got, Result<super::ReadStats, ReadError>) {
        let mut got = Vec::new();
        let res = for_each_frame(bytes, |f| {
            got.push((f.ts_ns, f.iface, f.data.to_vec(), f.orig_len));
            ControlFlow::Continue(())
        });
        (got, res)
    }

    const T0: u64 = 1_700_000_000;

    #[test]
    fn tsresol_in_both_forms_and_tsoffset() {
        for be in [false, true] {
            let mut ng = Ng::new(be);
            ng.idb(Some(0x80 | 20), None) // 2^-20 s
                .idb(Some(9), Some(-100)) // ns, 100 s earlier
                .idb(None, Some(3600)) // µs (the default), an hour later
                .idb(Some(0x80), None) // 2^0: whole seconds
                .epb(0, (T0 << 20) | (1 << 19), &[1])
                .epb(0, (T0 << 20) + 3, &[2])
                .epb(1, T0 * 1_000_000_000 + 7, &[3])
                .epb(2, T0 * 1_000_000 + 250_000, &[4])
                .epb(3, T0, &[5]);
            let (got, res) = read(&ng.bytes);
            assert_eq!(res.unwrap().frames, 5, "be {be}");
            let ts: Vec<u64> = got.iter().map(|g| g.0).collect();
            assert_eq!(
                ts,
                [
                    T0 * 1_000_000_000 + 500_000_000,
                    // 3 / 2^20 s = 2861.02… ns, truncated as Wireshark does.
                    T0 * 1_000_000_000 + 2861,
                    (T0 - 100) * 1_000_000_000 + 7,
                    (T0 + 3600) * 1_000_000_000 + 250_000_000,
                    T0 * 1_000_000_000,
                ],
                "be {be}"
            );
        }
    }

    #[test]
    fn a_timestamp_unit_finer_than_pcapng_allows_is_an_error() {
        for (r, words) in [(20u8, "10^-20"), (0x80 | 64, "2^-64"), (0xff, "2^-127")] {
            let mut ng = Ng::new(false);
            ng.idb(Some(r), None).epb(0, 1, &[1]);
            let (got, res) = read(&ng.bytes);
            assert!(got.is_empty());
            let e = res.unwrap_err().to_string();
            assert!(e.contains(&format!("timestamp unit of {words} s")), "{e}");
        }
        assert_eq!(super::resolution(19), Some(10u64.pow(19)));
        assert_eq!(super::resolution(0x80 | 63), Some(1 << 63));
    }

    #[test]
    fn obsolete_packet_blocks_are_read() {
        for be in [false, true] {
            let mut ng = Ng::new(be);
            ng.idb(None, None)
                .idb(Some(9), None)
                .pb(0, T0 * 1_000_000 + 1, &[1, 2, 3])
                .epb(1, T0 * 1_000_000_000 + 5, &[4])
                .pb(1, T0 * 1_000_000_000 + 9, &[5; 61]);
            let (got, res) = read(&ng.bytes);
            let stats = res.unwrap();
            assert_eq!((stats.frames, stats.bytes), (3, 65));
            assert_eq!(got[0], (T0 * 1_000_000_000 + 1000, 0, vec![1, 2, 3], 7));
            assert_eq!(got[1].0, T0 * 1_000_000_000 + 5);
            assert_eq!(got[2], (T0 * 1_000_000_000 + 9, 1, vec![5; 61], 65));
            // A captured length beyond the block, and an interface never described.
            let mut bad = Ng::new(be);
            bad.idb(None, None).pb(0, 0, &[1; 8]);
            let at = bad.bytes.len() - 4 - 8 - 8;
            bad.bytes[at..at + 4].copy_from_slice(&if be {
                99u32.to_be_bytes()
            } else {
                99u32.to_le_bytes()
            });
            let e = read(&bad.bytes).1.unwrap_err().to_string();
            assert!(
                e.contains("block at byte 48 says it holds 99 bytes of packet but has room for 8"),
                "{e}"
            );
            let mut bad = Ng::new(be);
            bad.idb(None, None).pb(0, 0, &[1; 8]);
            let n = bad.bytes.len();
            bad.bytes[n - 2] ^= 1;
            let e = read(&bad.bytes).1.unwrap_err().to_string();
            assert!(e.contains("damaged block at byte 48"), "{e}");
            let mut bad = Ng::new(be);
            bad.idb(None, None).pb(3, 0, &[1; 8]);
            let e = read(&bad.bytes).1.unwrap_err().to_string();
            assert!(e.contains("interface 3 which was never described"), "{e}");
        }
    }

    /// The fuzz target's pcapng seeds reach what they are there for: timestamp units and
    /// offsets in both forms and byte orders, obsolete packet blocks, options with text.
    #[test]
    fn the_fuzz_seeds_reach_units_offsets_and_obsolete_blocks() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/capture_file");
        for (seed, frames, first_ns) in [
            ("ng-tsresol-tsoffset", 3, (T0 + 1000) * 1_000_000_000 + 2861),
            ("ng-obsolete-packet", 3, T0 * 1_000_000_000 + 1000),
            ("ng-comments", 1, T0 * 1_000_000_000),
        ] {
            for order in ["le", "be"] {
                let bytes = std::fs::read(dir.join(format!("{seed}-{order}.pcapng"))).unwrap();
                let (got, res) = read(&bytes);
                assert_eq!(res.unwrap().frames, frames, "{seed}-{order}");
                assert_eq!(got[0].0, first_ns, "{seed}-{order}");
            }
        }
    }

    #[test]
    fn damage_is_described_without_the_parser_s_words() {
        let mut ng = Ng::new(false);
        ng.idb(None, None).epb(0, 1, &[1; 8]).epb(0, 2, &[2; 8]);
        let good = ng.bytes.clone();
        let second = good.len() - 40;
        let mut cases = Vec::new();
        // The trailing length of the second packet block disagrees with the leading one.
        let mut b = good.clone();
        let n = b.len();
        b[n - 4] ^= 0x40;
        cases.push(b);
        // A packet block shorter than its fixed fields.
        let mut b = good.clone();
        b[second + 4..second + 8].copy_from_slice(&8u32.to_le_bytes());
        cases.push(b);
        // A captured length beyond the block.
        let mut b = good.clone();
        b[second + 20..second + 24].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        cases.push(b);
        // Every single-byte change of the second block's header.
        for i in second..second + 28 {
            for x in [0x01, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= x;
                cases.push(b);
            }
        }
        for (i, b) in cases.iter().enumerate() {
            let (got, res) = read(b);
            let Err(e) = res else { continue };
            let e = e.to_string();
            assert!(got.len() <= 2, "case {i}");
            for word in [
                "Verify",
                "Eof",
                "Tag",
                "Nom",
                "nom",
                "unparseable",
                "Incomplete",
                "Error(",
            ] {
                assert!(!e.contains(word), "case {i}: {word:?} in {e:?}");
            }
            if i == 0 {
                assert!(
                    e.contains(&format!("damaged block at byte {second}")),
                    "{e}"
                );
                assert!(e.contains("length fields disagree"), "{e}");
            }
        }
    }
}
