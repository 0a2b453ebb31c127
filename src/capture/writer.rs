//! Writing pcap (microsecond or nanosecond timestamps) and pcapng (several interfaces,
//! nanosecond timestamps, optional per-packet comments that Wireshark shows).
//!
//! The writer is byte-for-byte deterministic for the same input, which the trace
//! synthesizer relies on; it never reorders or drops frames, and every write error is
//! returned to the caller.

use dissectors::LinkType;
use std::io::{self, Write};

/// On-disk format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap, microsecond timestamps.
    Pcap,
    /// Classic pcap, nanosecond timestamps (magic 0xa1b23c4d).
    PcapNs,
    /// pcapng with nanosecond timestamps.
    PcapNg,
}

/// One interface of the output.
#[derive(Clone, Debug)]
pub struct Interface {
    /// Link type of its frames.
    pub link: LinkType,
    /// Bytes kept per frame.
    pub snaplen: u32,
    /// Its name (pcapng `if_name`).
    pub name: Option<String>,
    /// What it is, when the name does not say (pcapng `if_description`).
    pub description: Option<String>,
}

/// Writes frames as pcap or pcapng to any `Write`.
pub struct Writer<W: Write> {
    w: W,
    format: Format,
    snaplen: u32,
    /// Frames written.
    pub frames: u64,
    /// Bytes written (headers included).
    pub bytes: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a file: writes the pcap header, or the pcapng section header and one
    /// interface description per interface (classic pcap uses the first one).
    pub fn new(w: W, format: Format, ifaces: &[Interface]) -> io::Result<Self> {
        Self::with_comment(w, format, ifaces, None)
    }

    /// Like [`Writer::new`]; pcapng also gets `comment` on its section header (Wireshark
    /// shows it under Statistics > Capture File Properties). Classic pcap has no place for it.
    pub fn with_comment(
        mut w: W,
        format: Format,
        ifaces: &[Interface],
        comment: Option<&str>,
    ) -> io::Result<Self> {
        let first = ifaces
            .first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no interface"))?;
        let mut bytes = 0;
        match format {
            Format::Pcap | Format::PcapNs => {
                let magic: u32 = if format == Format::PcapNs {
                    0xa1b2_3c4d
                } else {
                    0xa1b2_c3d4
                };
                let mut h = Vec::with_capacity(24);
                h.extend_from_slice(&magic.to_le_bytes());
                h.extend_from_slice(&2u16.to_le_bytes());
                h.extend_from_slice(&4u16.to_le_bytes());
                h.extend_from_slice(&0i32.to_le_bytes());
                h.extend_from_slice(&0u32.to_le_bytes());
                h.extend_from_slice(&first.snaplen.to_le_bytes());
                h.extend_from_slice(&first.link.linktype().to_le_bytes());
                w.write_all(&h)?;
                bytes += h.len() as u64;
            }
            Format::PcapNg => {
                let shb = section_header(comment);
                w.write_all(&shb)?;
                bytes += shb.len() as u64;
                for i in ifaces {
                    let mut opts = Vec::new();
                    if let Some(n) = &i.name {
                        push_option(&mut opts, 2, n.as_bytes());
                    }
                    if let Some(d) = &i.description {
                        push_option(&mut opts, 3, d.as_bytes());
                    }
                    push_option(&mut opts, 9, &[9]); // if_tsresol: 10^-9
                    push_option(&mut opts, 0, &[]);
                    let len = 20 + opts.len() as u32;
                    let mut idb = Vec::with_capacity(len as usize);
                    idb.extend_from_slice(&1u32.to_le_bytes());
                    idb.extend_from_slice(&len.to_le_bytes());
                    idb.extend_from_slice(&(i.link.linktype() as u16).to_le_bytes());
                    idb.extend_from_slice(&0u16.to_le_bytes());
                    idb.extend_from_slice(&i.snaplen.to_le_bytes());
                    idb.extend_from_slice(&opts);
                    idb.extend_from_slice(&len.to_le_bytes());
                    w.write_all(&idb)?;
                    bytes += idb.len() as u64;
                }
            }
        }
        Ok(Writer {
            w,
            format,
            snaplen: first.snaplen,
            frames: 0,
            bytes,
        })
    }

    /// Appends one frame. `data` longer than the snaplen is cut to it; `orig_len` is the
    /// length on the wire. `comment` is kept in pcapng only.
    pub fn write(
        &mut self,
        ts_ns: u64,
        iface: u32,
        data: &[u8],
        orig_len: u32,
        comment: Option<&str>,
    ) -> io::Result<()> {
        let data = &data[..data.len().min(self.snaplen as usize)];
        let orig = orig_len.max(data.len() as u32);
        match self.format {
            Format::Pcap | Format::PcapNs => {
                let (sec, frac) = if self.format == Format::PcapNs {
                    (ts_ns / 1_000_000_000, ts_ns % 1_000_000_000)
                } else {
                    (ts_ns / 1_000_000_000, (ts_ns % 1_000_000_000) / 1000)
                };
                let mut h = [0u8; 16];
                h[0..4].copy_from_slice(&(sec as u32).to_le_bytes());
                h[4..8].copy_from_slice(&(frac as u32).to_le_bytes());
                h[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
                h[12..16].copy_from_slice(&orig.to_le_bytes());
                self.w.write_all(&h)?;
                self.w.write_all(data)?;
                self.bytes += 16 + data.len() as u64;
            }
            Format::PcapNg => {
                let pad = (4 - data.len() % 4) % 4;
                let mut opts = Vec::new();
                if let Some(c) = comment {
                    push_option(&mut opts, 1, c.as_bytes());
                    push_option(&mut opts, 0, &[]);
                }
                let len = (32 + data.len() + pad + opts.len()) as u32;
                let mut h = [0u8; 28];
                h[0..4].copy_from_slice(&6u32.to_le_bytes());
                h[4..8].copy_from_slice(&len.to_le_bytes());
                h[8..12].copy_from_slice(&iface.to_le_bytes());
                h[12..16].copy_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                h[16..20].copy_from_slice(&(ts_ns as u32).to_le_bytes());
                h[20..24].copy_from_slice(&(data.len() as u32).to_le_bytes());
                h[24..28].copy_from_slice(&orig.to_le_bytes());
                self.w.write_all(&h)?;
                self.w.write_all(data)?;
                self.w.write_all(&[0u8; 3][..pad])?;
                self.w.write_all(&opts)?;
                self.w.write_all(&len.to_le_bytes())?;
                self.bytes += u64::from(len);
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// The underlying writer (e.g. to commit a buffer between frames).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// Flushes the underlying writer (the file stays open).
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

/// A pcapng section header block, with an `opt_comment` when asked for. On its own (no
/// interface, no packet) it is an empty section: what a cut file ends with to say why
/// (see [`crate::capture::output`]); Wireshark and capinfos show its comment as a
/// capture comment.
pub fn section_header(comment: Option<&str>) -> Vec<u8> {
    let mut opts = Vec::new();
    if let Some(c) = comment {
        // An option holds at most 65,535 bytes: a longer comment is cut at a character.
        let mut end = c.len().min(usize::from(u16::MAX));
        while !c.is_char_boundary(end) {
            end -= 1;
        }
        push_option(&mut opts, 1, &c.as_bytes()[..end]);
        push_option(&mut opts, 0, &[]);
    }
    let len = 28 + opts.len() as u32;
    let mut shb = Vec::with_capacity(len as usize);
    shb.extend_from_slice(&0x0A0D_0D0Au32.to_le_bytes());
    shb.extend_from_slice(&len.to_le_bytes());
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    shb.extend_from_slice(&opts);
    shb.extend_from_slice(&len.to_le_bytes());
    shb
}

fn push_option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    let pad = (4 - value.len() % 4) % 4;
    out.extend_from_slice(&[0u8; 3][..pad]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::file::for_each_frame;
    use std::ops::ControlFlow;

    #[test]
    fn pcap_and_pcapng_round_trip_through_the_reader() {
        for format in [Format::Pcap, Format::PcapNs, Format::PcapNg] {
            let ifaces = [
                Interface {
                    link: LinkType::Ethernet,
                    snaplen: 65535,
                    name: Some("eth0".into()),
                    description: None,
                },
                Interface {
                    link: LinkType::LinuxSll2,
                    snaplen: 65535,
                    name: None,
                    description: None,
                },
            ];
            let mut w =
                Writer::with_comment(Vec::new(), format, &ifaces, Some("section note")).unwrap();
            w.write(1_700_000_000_123_456_789, 0, &[1, 2, 3], 3, Some("hello"))
                .unwrap();
            let iface = u32::from(format == Format::PcapNg);
            w.write(1_700_000_001_000_001_000, iface, &[4; 61], 100, None)
                .unwrap();
            let buf = w.into_inner().unwrap();
            let has_note = buf.windows(12).any(|w| w == b"section note");
            assert_eq!(has_note, format == Format::PcapNg);
            let mut got = Vec::new();
            let stats = for_each_frame(&buf[..], |f| {
                got.push((f.ts_ns, f.link, f.data.to_vec(), f.orig_len, f.iface));
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(stats.frames, 2);
            let ts0 = if format == Format::Pcap {
                1_700_000_000_123_456_000
            } else {
                1_700_000_000_123_456_789
            };
            assert_eq!(got[0], (ts0, LinkType::Ethernet, vec![1, 2, 3], 3, 0));
            assert_eq!(got[1].0, 1_700_000_001_000_001_000);
            assert_eq!(got[1].3, 100);
            if format == Format::PcapNg {
                assert_eq!(got[1].1, LinkType::LinuxSll2);
                assert_eq!(got[1].4, 1);
            }
        }
    }

    #[test]
    fn reader_reports_bad_input() {
        use crate::capture::file::ReadError;
        let r = for_each_frame(&b""[..], |_| ControlFlow::Continue(()));
        assert!(matches!(r, Err(ReadError::Empty)));
        let r = for_each_frame(&b"this is not a capture file at all, no"[..], |_| {
            ControlFlow::Continue(())
        });
        assert!(matches!(r, Err(ReadError::NotACapture)));
        let ifaces = [Interface {
            link: LinkType::Ethernet,
            snaplen: 65535,
            name: None,
            description: None,
        }];
        let mut w = Writer::new(Vec::new(), Format::Pcap, &ifaces).unwrap();
        w.write(0, 0, &[0; 64], 64, None).unwrap();
        w.write(0, 0, &[0; 64], 64, None).unwrap();
        let buf = w.into_inner().unwrap();
        // Cut inside the second record: the first frame is delivered, then an error.
        let mut n = 0;
        let r = for_each_frame(&buf[..buf.len() - 10], |_| {
            n += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(n, 1);
        assert!(
            matches!(r, Err(ReadError::Truncated { frames: 1 })),
            "{r:?}"
        );
    }
}
