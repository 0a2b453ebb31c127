//! Reading pcap (microsecond and nanosecond, either byte order) and pcapng (several
//! interfaces, any timestamp resolution) from a file or a stream such as stdin, with
//! pcap-parser: it reads from any `Read` (so `ibdump -w - | rocetap ...` needs no file
//! descriptor tricks), hands out frames without copying, and is faster than going
//! through libpcap for files.
//!
//! Guarantees: a file that is not a capture, a corrupt record header and a file cut in
//! the middle of a record are reported as [`ReadError`]s that say what and where — after
//! every complete frame before the damage has been delivered. Nothing panics.

use super::Frame;
use dissectors::LinkType;
use pcap_parser::pcapng::Block;
use pcap_parser::{PcapBlockOwned, PcapError};
use std::fmt;
use std::io::Read;
use std::ops::ControlFlow;

/// Initial reader buffer; it grows for frames larger than this, up to [`MAX_BUFFER`].
const INITIAL_BUFFER: usize = 1 << 20;
/// No sane record is larger than this (libpcap's own limit is 256 KiB per packet).
const MAX_BUFFER: usize = 64 << 20;

/// Why a capture could not be read (further).
#[derive(Debug)]
pub enum ReadError {
    Empty,
    NotACapture,
    Io(std::io::Error),
    /// The file ends inside a record, after `frames` complete frames.
    Truncated {
        frames: u64,
    },
    /// A record header is inconsistent (e.g. a length beyond any real packet).
    Corrupt {
        frames: u64,
        what: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Empty => write!(f, "empty input, not a pcap or pcapng capture"),
            ReadError::NotACapture => write!(f, "not a pcap or pcapng capture (unknown file header)"),
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Truncated { frames } => write!(
                f,
                "capture is truncated: it ends in the middle of a record after {frames} complete frames"
            ),
            ReadError::Corrupt { frames, what } => {
                write!(f, "corrupt capture after {frames} frames: {what}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// Summary of what a reader delivered.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadStats {
    pub frames: u64,
    pub bytes: u64,
    pub interfaces: u32,
}

struct Iface {
    link: LinkType,
    /// Timestamp units per second.
    resolution: u64,
    offset_s: i64,
}

/// Reads every frame of a pcap/pcapng stream and hands it to `f`, which may stop early
/// by returning `ControlFlow::Break`.
pub fn for_each_frame<R, F>(input: R, mut f: F) -> Result<ReadStats, ReadError>
where
    R: Read + Send,
    F: FnMut(&Frame<'_>) -> ControlFlow<()>,
{
    let mut reader = match pcap_parser::create_reader(INITIAL_BUFFER, input) {
        Ok(r) => r,
        Err(PcapError::Eof) => return Err(ReadError::Empty),
        Err(PcapError::ReadError) => {
            return Err(ReadError::Io(std::io::Error::other("read failed")))
        }
        Err(PcapError::Incomplete(_)) => return Err(ReadError::Truncated { frames: 0 }),
        Err(_) => return Err(ReadError::NotACapture),
    };
    let mut stats = ReadStats::default();
    // Legacy pcap: one link type and a fixed unit.
    let mut legacy: Option<(LinkType, u64)> = None;
    let mut ifaces: Vec<Iface> = Vec::new();
    let mut capacity = INITIAL_BUFFER;
    loop {
        let step = match reader.next() {
            Ok((offset, block)) => {
                let flow = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        let nanos = h.is_nanosecond_precision();
                        legacy = Some((
                            LinkType::from_linktype(h.network.0 as u32),
                            if nanos { 1 } else { 1000 },
                        ));
                        stats.interfaces = 1;
                        ControlFlow::Continue(())
                    }
                    PcapBlockOwned::Legacy(b) => {
                        let (link, unit) = legacy.unwrap_or((LinkType::Ethernet, 1000));
                        let frame = Frame {
                            ts_ns: u64::from(b.ts_sec) * 1_000_000_000
                                + u64::from(b.ts_usec) * unit,
                            link,
                            data: b.data,
                            orig_len: b.origlen.max(b.caplen),
                            iface: 0,
                        };
                        stats.frames += 1;
                        stats.bytes += b.data.len() as u64;
                        f(&frame)
                    }
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        // A new section starts a new interface numbering.
                        ifaces.clear();
                        ControlFlow::Continue(())
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        ifaces.push(Iface {
                            link: LinkType::from_linktype(idb.linktype.0 as u32),
                            resolution: idb.ts_resolution().unwrap_or(1_000_000).max(1),
                            offset_s: idb.ts_offset(),
                        });
                        stats.interfaces += 1;
                        ControlFlow::Continue(())
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        let Some(iface) = ifaces.get(epb.if_id as usize) else {
                            return Err(ReadError::Corrupt {
                                frames: stats.frames,
                                what: format!(
                                    "packet block names interface {} which was never described",
                                    epb.if_id
                                ),
                            });
                        };
                        let raw = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        let ns = (u128::from(raw) * 1_000_000_000 / u128::from(iface.resolution))
                            as i128
                            + i128::from(iface.offset_s) * 1_000_000_000;
                        let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                        let frame = Frame {
                            ts_ns: ns.clamp(0, i128::from(u64::MAX)) as u64,
                            link: iface.link,
                            data,
                            orig_len: epb.origlen.max(data.len() as u32),
                            iface: epb.if_id,
                        };
                        stats.frames += 1;
                        stats.bytes += data.len() as u64;
                        f(&frame)
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                        let link = ifaces.first().map_or(LinkType::Ethernet, |i| i.link);
                        let frame = Frame {
                            ts_ns: 0,
                            link,
                            data: spb.data,
                            orig_len: spb.origlen.max(spb.data.len() as u32),
                            iface: 0,
                        };
                        stats.frames += 1;
                        stats.bytes += spb.data.len() as u64;
                        f(&frame)
                    }
                    PcapBlockOwned::NG(_) => ControlFlow::Continue(()),
                };
                reader.consume(offset);
                flow
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    return Err(ReadError::Io(std::io::Error::other("read failed")));
                }
                ControlFlow::Continue(())
            }
            Err(PcapError::BufferTooSmall) => {
                if capacity >= MAX_BUFFER {
                    return Err(ReadError::Corrupt {
                        frames: stats.frames,
                        what: format!("a record is larger than {} MiB", MAX_BUFFER >> 20),
                    });
                }
                capacity *= 4;
                reader.grow(capacity);
                if reader.refill().is_err() {
                    return Err(ReadError::Io(std::io::Error::other("read failed")));
                }
                ControlFlow::Continue(())
            }
            Err(PcapError::UnexpectedEof) => {
                return Err(ReadError::Truncated {
                    frames: stats.frames,
                })
            }
            Err(PcapError::ReadError) => {
                return Err(ReadError::Io(std::io::Error::other("read failed")))
            }
            Err(e) => {
                return Err(ReadError::Corrupt {
                    frames: stats.frames,
                    what: describe(&e),
                })
            }
        };
        if step.is_break() {
            break;
        }
    }
    Ok(stats)
}

fn describe<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => {
            format!("unparseable record ({k:?})")
        }
        PcapError::HeaderNotRecognized => "unknown block".to_string(),
        _ => "unreadable record".to_string(),
    }
}
