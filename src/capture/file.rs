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
use pcap_parser::traits::PcapReaderIterator;
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

/// Turns pcap / pcapng blocks into frames: remembers the link type and timestamp unit
/// of every interface.
#[derive(Default)]
struct State {
    /// Legacy pcap: one link type and nanoseconds per timestamp unit.
    legacy: Option<(LinkType, u64)>,
    ifaces: Vec<Iface>,
    stats: ReadStats,
}

impl State {
    fn frame<'b>(&mut self, block: &PcapBlockOwned<'b>) -> Result<Option<Frame<'b>>, ReadError> {
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
            PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                // A new section starts a new interface numbering.
                self.ifaces.clear();
                return Ok(None);
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.ifaces.push(Iface {
                    link: LinkType::from_linktype(u32::from(idb.linktype.0 as u16)),
                    resolution: idb.ts_resolution().unwrap_or(1_000_000).max(1),
                    offset_s: idb.ts_offset(),
                });
                self.stats.interfaces += 1;
                return Ok(None);
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let Some(iface) = self.ifaces.get(epb.if_id as usize) else {
                    return Err(ReadError::Corrupt {
                        frames: self.stats.frames,
                        what: format!(
                            "packet block names interface {} which was never described",
                            epb.if_id
                        ),
                    });
                };
                let raw = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let ns = (u128::from(raw) * 1_000_000_000 / u128::from(iface.resolution)) as i128
                    + i128::from(iface.offset_s) * 1_000_000_000;
                let data = &epb.data[..(epb.caplen as usize).min(epb.data.len())];
                Frame {
                    ts_ns: ns.clamp(0, i128::from(u64::MAX)) as u64,
                    link: iface.link,
                    data,
                    orig_len: epb.origlen.max(data.len() as u32),
                    iface: epb.if_id,
                    source: 0,
                }
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => Frame {
                ts_ns: 0,
                link: self.ifaces.first().map_or(LinkType::Ethernet, |i| i.link),
                data: spb.data,
                orig_len: spb.origlen.max(spb.data.len() as u32),
                iface: 0,
                source: 0,
            },
            PcapBlockOwned::NG(_) => return Ok(None),
        };
        self.stats.frames += 1;
        self.stats.bytes += frame.data.len() as u64;
        Ok(Some(frame))
    }
}

/// A pull reader over one pcap / pcapng stream.
pub struct Reader<'r> {
    inner: Box<dyn PcapReaderIterator + Send + 'r>,
    state: State,
    capacity: usize,
}

impl<'r> Reader<'r> {
    pub fn new<R: Read + Send + 'r>(input: R) -> Result<Self, ReadError> {
        let inner = match pcap_parser::create_reader(INITIAL_BUFFER, input) {
            Ok(r) => r,
            Err(PcapError::Eof) => return Err(ReadError::Empty),
            Err(PcapError::ReadError) => {
                return Err(ReadError::Io(std::io::Error::other("read failed")))
            }
            Err(PcapError::Incomplete(_)) => return Err(ReadError::Truncated { frames: 0 }),
            Err(_) => return Err(ReadError::NotACapture),
        };
        Ok(Reader {
            inner,
            state: State::default(),
            capacity: INITIAL_BUFFER,
        })
    }

    pub fn stats(&self) -> ReadStats {
        self.state.stats
    }

    /// Hands the next frame to `f` (without copying it) and returns what `f` returned,
    /// or `None` at the end of the stream.
    pub fn next_with<T>(
        &mut self,
        f: impl FnOnce(&Frame<'_>) -> T,
    ) -> Result<Option<T>, ReadError> {
        let mut f = Some(f);
        loop {
            match self.inner.next() {
                Ok((offset, block)) => {
                    let out = match self.state.frame(&block)? {
                        Some(frame) => f.take().map(|f| f(&frame)),
                        None => None,
                    };
                    self.inner.consume(offset);
                    if out.is_some() {
                        return Ok(out);
                    }
                }
                Err(PcapError::Eof) => return Ok(None),
                Err(PcapError::Incomplete(_)) => self.refill()?,
                Err(PcapError::BufferTooSmall) => {
                    if self.capacity >= MAX_BUFFER {
                        return Err(ReadError::Corrupt {
                            frames: self.state.stats.frames,
                            what: format!("a record is larger than {} MiB", MAX_BUFFER >> 20),
                        });
                    }
                    self.capacity *= 4;
                    self.inner.grow(self.capacity);
                    self.refill()?;
                }
                Err(PcapError::UnexpectedEof) => {
                    return Err(ReadError::Truncated {
                        frames: self.state.stats.frames,
                    })
                }
                Err(PcapError::ReadError) => {
                    return Err(ReadError::Io(std::io::Error::other("read failed")))
                }
                Err(e) => {
                    return Err(ReadError::Corrupt {
                        frames: self.state.stats.frames,
                        what: describe(&e),
                    })
                }
            }
        }
    }

    fn refill(&mut self) -> Result<(), ReadError> {
        self.inner
            .refill()
            .map_err(|_| ReadError::Io(std::io::Error::other("read failed")))
    }
}

#[allow(dead_code)] // the commands read through `source::for_each_frame_of`
/// Reads every frame of a pcap/pcapng stream and hands it to `f`, which may stop early
/// by returning `ControlFlow::Break`.
pub fn for_each_frame<R, F>(input: R, mut f: F) -> Result<ReadStats, ReadError>
where
    R: Read + Send,
    F: FnMut(&Frame<'_>) -> ControlFlow<()>,
{
    let mut r = Reader::new(input)?;
    while let Some(flow) = r.next_with(&mut f)? {
        if flow.is_break() {
            break;
        }
    }
    Ok(r.stats())
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
