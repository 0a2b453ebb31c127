//! Reading pcap (microsecond and nanosecond, either byte order) and pcapng (several
//! interfaces, any timestamp resolution) from a file or a stream such as stdin, with
//! pcap-parser: it reads from any `Read` (so `ibdump -w - | rocetap ...` needs no file
//! descriptor tricks), hands out frames without copying, and is faster than going
//! through libpcap for files.
//!
//! Classic pcap — what most RoCE sniffers write — takes a direct path instead: 16-byte
//! record headers read straight out of one large buffer, a few instructions per frame
//! where the generic block reader spends a few hundred (measured: it was a fifth of
//! `rocetap analyze`'s time). pcapng and the rarer pcap variants go through pcap-parser.
//!
//! pcapng blocks become frames in `file/blocks.rs`: every interface's timestamp
//! unit (`if_tsresol`, 10^-n or 2^-n s) and offset (`if_tsoffset`), and the obsolete
//! Packet Block (type 2) as well as the Enhanced and Simple ones.
//!
//! Guarantees: a file that is not a capture, a corrupt record header and a file cut in
//! the middle of a record are reported as [`ReadError`]s that say what and where — after
//! every complete frame before the damage has been delivered. Nothing panics.

mod blocks;

use super::Frame;
use blocks::State;
use dissectors::LinkType;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::PcapError;
use std::fmt;
use std::io::{self, Read};
use std::ops::ControlFlow;

/// Initial reader buffer; it grows for frames larger than this, up to [`MAX_BUFFER`].
const INITIAL_BUFFER: usize = 1 << 20;
/// No sane record is larger than this.
const MAX_BUFFER: usize = crate::config::limits::CAPTURE_RECORD_BYTES;

/// Why a capture could not be read (further).
#[derive(Debug)]
pub enum ReadError {
    /// Nothing to read at all.
    Empty,
    /// The first bytes are no pcap or pcapng header.
    NotACapture,
    /// Reading failed.
    Io(std::io::Error),
    /// The file ends inside a record, after `frames` complete frames.
    Truncated {
        /// Complete frames before the cut.
        frames: u64,
    },
    /// A record header is inconsistent (e.g. a length beyond any real packet).
    Corrupt {
        /// Complete frames before the damage.
        frames: u64,
        /// What is wrong.
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
    /// Frames delivered.
    pub frames: u64,
    /// Their captured bytes.
    pub bytes: u64,
    /// Interfaces described (1 for classic pcap).
    pub interfaces: u32,
}

/// A pull reader over one pcap / pcapng stream.
pub struct Reader<'r> {
    inner: Box<dyn PcapReaderIterator + Send + 'r>,
    state: State,
    capacity: usize,
}

impl<'r> Reader<'r> {
    /// A reader over `input`, its file header read (and checked).
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

    /// What was delivered so far.
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
            // Where the next block starts, for messages.
            let at = self.inner.consumed();
            match self.inner.next() {
                Ok((offset, block)) => {
                    let out = match self.state.frame(&block, at)? {
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
                        what: Damage::of(&e).describe(at),
                    });
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

/// Reads every frame of a pcap/pcapng stream and hands it to `f`, which may stop early
/// by returning `ControlFlow::Break`.
pub fn for_each_frame<R, F>(mut input: R, f: F) -> Result<ReadStats, ReadError>
where
    R: Read + Send,
    F: FnMut(&Frame<'_>) -> ControlFlow<()>,
{
    let mut buf = vec![0u8; INITIAL_BUFFER];
    let n = fill(&mut input, &mut buf, 0, LEGACY_HEADER).map_err(ReadError::Io)?;
    if let Some(fmt) = LegacyFormat::of(&buf[..n]) {
        return legacy(input, buf, n, fmt, f);
    }
    // Anything else: hand the bytes already read back in front of the stream.
    buf.truncate(n);
    generic(io::Cursor::new(buf).chain(input), f)
}

const LEGACY_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// Byte order and timestamp unit of a classic pcap file.
#[derive(Clone, Copy)]
struct LegacyFormat {
    big_endian: bool,
    /// Nanoseconds per timestamp fraction unit.
    unit: u64,
}

impl LegacyFormat {
    fn of(head: &[u8]) -> Option<Self> {
        let magic: [u8; 4] = head.get(..4)?.try_into().ok()?;
        let (big_endian, unit) = match magic {
            [0xd4, 0xc3, 0xb2, 0xa1] => (false, 1000),
            [0xa1, 0xb2, 0xc3, 0xd4] => (true, 1000),
            [0x4d, 0x3c, 0xb2, 0xa1] => (false, 1),
            [0xa1, 0xb2, 0x3c, 0x4d] => (true, 1),
            _ => return None,
        };
        Some(LegacyFormat { big_endian, unit })
    }
    #[inline]
    fn u32_at(self, b: &[u8], off: usize) -> u32 {
        let v = [b[off], b[off + 1], b[off + 2], b[off + 3]];
        if self.big_endian {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        }
    }
}

/// Reads into `buf[have..]` until at least `want` bytes are in `buf[..]` or the input
/// ends; returns how many bytes `buf` holds.
fn fill<R: Read>(input: &mut R, buf: &mut [u8], mut have: usize, want: usize) -> io::Result<usize> {
    while have < want {
        match input.read(&mut buf[have..]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(have)
}

/// The classic pcap loop: `buf[start..end]` holds unread bytes.
fn legacy<R, F>(
    mut input: R,
    mut buf: Vec<u8>,
    mut end: usize,
    fmt: LegacyFormat,
    mut f: F,
) -> Result<ReadStats, ReadError>
where
    R: Read,
    F: FnMut(&Frame<'_>) -> ControlFlow<()>,
{
    let mut stats = ReadStats::default();
    if end < LEGACY_HEADER {
        return Err(ReadError::Truncated { frames: 0 });
    }
    // The link type is the low 28 bits; the top ones may carry an FCS length.
    let link = LinkType::from_linktype(fmt.u32_at(&buf, 20) & 0x0fff_ffff);
    stats.interfaces = 1;
    let mut start = LEGACY_HEADER;
    loop {
        if end - start < RECORD_HEADER {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
            // Asks for no more than the header: a live stream delivers each frame as
            // soon as it is complete, while a file read still fills the whole buffer.
            end = fill(&mut input, &mut buf, end, RECORD_HEADER).map_err(ReadError::Io)?;
            if end == 0 {
                return Ok(stats);
            }
            if end < RECORD_HEADER {
                return Err(ReadError::Truncated {
                    frames: stats.frames,
                });
            }
        }
        let h = &buf[start..start + RECORD_HEADER];
        let ts_sec = fmt.u32_at(h, 0);
        let ts_frac = fmt.u32_at(h, 4);
        let incl = fmt.u32_at(h, 8) as usize;
        let orig = fmt.u32_at(h, 12);
        let need = RECORD_HEADER + incl;
        if need > MAX_BUFFER {
            return Err(ReadError::Corrupt {
                frames: stats.frames,
                what: format!("a record is larger than {} MiB", MAX_BUFFER >> 20),
            });
        }
        if end - start < need {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
            if buf.len() < need {
                buf.resize(need.next_power_of_two(), 0);
            }
            end = fill(&mut input, &mut buf, end, need).map_err(ReadError::Io)?;
            if end < need {
                return Err(ReadError::Truncated {
                    frames: stats.frames,
                });
            }
        }
        let data = &buf[start + RECORD_HEADER..start + need];
        let frame = Frame {
            ts_ns: u64::from(ts_sec) * 1_000_000_000 + u64::from(ts_frac) * fmt.unit,
            link,
            data,
            orig_len: orig.max(incl as u32),
            iface: 0,
            source: 0,
        };
        stats.frames += 1;
        stats.bytes += incl as u64;
        start += need;
        if f(&frame).is_break() {
            return Ok(stats);
        }
    }
}

/// pcapng and every other format, through pcap-parser.
fn generic<R, F>(input: R, mut f: F) -> Result<ReadStats, ReadError>
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

/// What is wrong with a pcapng block, in a reader's words (pcap-parser's errors name its
/// parser's internals).
enum Damage {
    /// Its two length fields disagree, or a length is impossible.
    Lengths,
    /// A block type the parser does not know where a known one must be.
    Unknown,
    /// Its contents do not fit its length.
    Contents,
}

impl Damage {
    fn of<I>(e: &PcapError<I>) -> Self {
        match e {
            PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k)
                if *k == pcap_parser::nom::error::ErrorKind::Verify =>
            {
                Damage::Lengths
            }
            PcapError::HeaderNotRecognized => Damage::Unknown,
            _ => Damage::Contents,
        }
    }

    /// The damage of the block at byte `at`.
    fn describe(&self, at: usize) -> String {
        match self {
            Damage::Lengths => format!(
                "damaged block at byte {at} (its length fields disagree with each other or with its contents)"
            ),
            Damage::Unknown => format!("unknown block at byte {at}"),
            Damage::Contents => {
                format!("damaged block at byte {at} (its contents do not fit its length)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic pcap file in either byte order / timestamp unit with the given frames.
    fn pcap(big_endian: bool, nanos: bool, frames: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
        let w = |v: &mut Vec<u8>, x: u32| {
            v.extend_from_slice(&if big_endian {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            });
        };
        let mut v = Vec::new();
        w(&mut v, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        let ver = if big_endian {
            [0, 2, 0, 4]
        } else {
            [2, 0, 4, 0]
        };
        v.extend_from_slice(&ver);
        w(&mut v, 0);
        w(&mut v, 0);
        w(&mut v, 65535);
        w(&mut v, 1);
        for (s, frac, data, orig) in frames {
            w(&mut v, *s);
            w(&mut v, *frac);
            w(&mut v, data.len() as u32);
            w(&mut v, *orig);
            v.extend_from_slice(data);
        }
        v
    }

    /// A reader that hands out one byte per call, like a slow pipe.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), out.first_mut()) {
                (Some((b, rest)), Some(o)) => {
                    *o = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    type Frames = Vec<(u64, Vec<u8>, u32)>;

    fn collect<R: Read + Send>(r: R) -> (Frames, Result<ReadStats, ReadError>) {
        let mut got = Vec::new();
        let res = for_each_frame(r, |f| {
            got.push((f.ts_ns, f.data.to_vec(), f.orig_len));
            ControlFlow::Continue(())
        });
        (got, res)
    }

    #[test]
    fn classic_pcap_every_byte_order_and_unit() {
        let big = vec![7u8; 3 << 20]; // larger than the initial buffer
        for (be, nanos) in [(false, false), (true, false), (false, true), (true, true)] {
            let file = pcap(
                be,
                nanos,
                &[
                    (1, 5, &[1, 2, 3], 60),
                    (2, 0, &big, big.len() as u32),
                    (3, 1, &[], 0),
                ],
            );
            let unit = if nanos { 1 } else { 1000 };
            for trickle in [false, true] {
                let (got, res) = if trickle {
                    collect(Trickle(&file))
                } else {
                    collect(&file[..])
                };
                assert_eq!(res.unwrap().frames, 3);
                assert_eq!(got[0], (1_000_000_000 + 5 * unit, vec![1, 2, 3], 60));
                assert_eq!(got[1].1.len(), big.len());
                assert_eq!(got[2], (3_000_000_000 + unit, vec![], 0));
            }
        }
    }

    #[test]
    fn classic_pcap_damage_is_reported_after_the_good_frames() {
        let file = pcap(false, false, &[(1, 0, &[9; 40], 40), (2, 0, &[9; 40], 40)]);
        for cut in [file.len() - 1, file.len() - 40, file.len() - 50] {
            let (got, res) = collect(&file[..cut]);
            assert_eq!(got.len(), 1, "cut {cut}");
            assert!(
                matches!(res, Err(ReadError::Truncated { frames: 1 })),
                "{res:?}"
            );
        }
        let (_, res) = collect(&file[..10]);
        assert!(matches!(res, Err(ReadError::Truncated { frames: 0 })));
        let mut huge = pcap(false, false, &[]);
        huge.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]);
        let (_, res) = collect(&huge[..]);
        assert!(
            matches!(res, Err(ReadError::Corrupt { frames: 0, .. })),
            "{res:?}"
        );
    }
}
