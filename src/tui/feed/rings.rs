//! The frame rings behind `w`: for every flow its most recent frames (bounded in frames,
//! bytes and flows; buffers are reused), and writing a flow and its peer to a pcapng.

use super::*;

struct Stored {
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    data: Vec<u8>,
}

#[derive(Default)]
struct Ring {
    frames: VecDeque<Stored>,
    bytes: usize,
}

/// The recent frames of every flow, for `w`.
#[derive(Default)]
pub struct Rings {
    map: HashMap<(Addr, Addr, Qpn), Ring>,
}

/// `top live`'s sink: every frame goes to its flow's ring.
impl Sink for Rings {
    fn after(&mut self, f: &Frame<'_>, d: Option<&Decoded>, _: &Analyzer) -> ControlFlow<()> {
        if let Some(d) = d {
            self.push(f, d);
        }
        ControlFlow::Continue(())
    }
}

impl Rings {
    /// Keeps `f` (decoded as `d`) in its flow's ring.
    pub fn push(&mut self, f: &Frame<'_>, d: &Decoded) {
        let (Some(r), Some((src, dst))) = (&d.roce, d.endpoints()) else {
            return;
        };
        let key = (src, dst, r.bth.dest_qp);
        let n = self.map.len();
        let ring = match self.map.get_mut(&key) {
            Some(r) => r,
            None if n < RING_FLOWS => self.map.entry(key).or_default(),
            None => return,
        };
        let mut buf = if ring.frames.len() >= RING_FRAMES || ring.bytes + f.data.len() > RING_BYTES
        {
            match ring.frames.pop_front() {
                Some(old) => {
                    ring.bytes -= old.data.len();
                    old.data
                }
                None => Vec::new(),
            }
        } else {
            Vec::new()
        };
        while ring.bytes + f.data.len() > RING_BYTES {
            match ring.frames.pop_front() {
                Some(old) => ring.bytes -= old.data.len(),
                None => break,
            }
        }
        buf.clear();
        buf.extend_from_slice(f.data);
        ring.bytes += buf.len();
        ring.frames.push_back(Stored {
            ts_ns: f.ts_ns,
            link: f.link,
            orig_len: f.orig_len,
            data: buf,
        });
    }

    /// Writes the frames of `keys` in time order to a new `rocetap-flow<id>[-n].pcapng`
    /// in `dir`; returns its name and the number of frames.
    pub fn write(
        &self,
        dir: &Path,
        id: u32,
        keys: &[FlowKey],
    ) -> Result<(String, u64), WriteError> {
        let mut frames: Vec<&Stored> = self
            .map
            .iter()
            .filter(|((s, d, q), _)| keys.iter().any(|k| (k.src, k.dst, k.qp) == (*s, *d, *q)))
            .flat_map(|(_, r)| r.frames.iter())
            .collect();
        if frames.is_empty() {
            return Err(WriteError::NoFrames(id));
        }
        frames.sort_by_key(|s| s.ts_ns);
        let mut links: Vec<LinkType> = Vec::new();
        for s in &frames {
            if !links.contains(&s.link) {
                links.push(s.link);
            }
        }
        let ifaces: Vec<Interface> = links
            .iter()
            .map(|&link| Interface {
                link,
                snaplen: crate::config::DEFAULT_SNAPLEN,
                name: None,
                description: None,
            })
            .collect();
        let mut path = dir.join(format!("rocetap-flow{id}.pcapng"));
        let mut k = 2;
        while path.exists() {
            path = dir.join(format!("rocetap-flow{id}-{k}.pcapng"));
            k += 1;
        }
        let name = path.display().to_string();
        let err = |e: std::io::Error| WriteError::Io(name.clone(), std::sync::Arc::new(e));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(err)?;
        let mut w =
            Writer::new(std::io::BufWriter::new(file), Format::PcapNg, &ifaces).map_err(err)?;
        for s in &frames {
            let iface = links.iter().position(|l| *l == s.link).unwrap_or(0) as u32;
            w.write(s.ts_ns, iface, &s.data, s.orig_len, None)
                .map_err(err)?;
        }
        let n = w.frames;
        w.into_inner().map_err(err)?;
        Ok((name, n))
    }
}

/// Why the `w` key wrote no file (cloned with the UI's messages, hence the `Arc`).
#[derive(Debug, Clone)]
pub enum WriteError {
    /// No frame of the flow is kept in the rings.
    NoFrames(u32),
    /// Creating or writing the file failed.
    Io(String, std::sync::Arc<std::io::Error>),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::NoFrames(id) => write!(f, "no frames of flow #{id} are kept"),
            WriteError::Io(name, e) => write!(f, "{name}: {e}"),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::NoFrames(_) => None,
            WriteError::Io(_, e) => Some(e.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_keep_the_newest_frames_and_write_them() {
        let dcfg = dissectors::Config {
            roce_port: 4791,
            check_icrc: true,
        };
        let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, &dcfg);
        let mut rings = Rings::default();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/loss-upstream.pcap");
        let mut n = 0;
        crate::capture::input::for_each_frame_of(&[path], true, |f| {
            dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
            rings.push(f, &d);
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        let kept: usize = rings.map.values().map(|r| r.frames.len()).sum();
        assert_eq!(kept, n, "every frame of a small trace is kept");
        let dir = std::env::temp_dir().join(format!("rocetap-rings-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = |s: &str, d: &str, q: u32| FlowKey {
            src: Addr::Ip(s.parse().unwrap()),
            dst: Addr::Ip(d.parse().unwrap()),
            qp: Qpn(q),
        };
        let keys = [
            key("198.18.0.1", "198.18.0.2", 0x000102),
            key("198.18.0.2", "198.18.0.1", 0x000202),
        ];
        let (name, frames) = rings.write(&dir, 1, &keys).unwrap();
        assert!(name.ends_with("rocetap-flow1.pcapng"));
        // 27 + 14 packets, as analyze counts them for flows 1 and 6.
        assert_eq!(frames, 41);
        let (name2, _) = rings.write(&dir, 1, &keys).unwrap();
        assert!(name2.ends_with("rocetap-flow1-2.pcapng"), "{name2}");
        assert!(rings
            .write(&dir, 9, &[key("192.0.2.1", "192.0.2.2", 0x000001)])
            .is_err());
        let _ = std::fs::remove_dir_all(&dir);

        // A full ring drops its oldest frames.
        let mut r = Rings::default();
        let f = |ts| Frame {
            ts_ns: ts,
            link: LinkType::Ethernet,
            data: &[],
            orig_len: 0,
            iface: 0,
            source: 0,
        };
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/clean-rc.pcap");
        let mut first: Option<(Vec<u8>, Decoded)> = None;
        crate::capture::input::for_each_frame_of(&[p], true, |fr| {
            if first.is_none() {
                let dd = dissectors::decode(fr.link, fr.data, fr.orig_len, &dcfg);
                if dd.roce.is_some() {
                    first = Some((fr.data.to_vec(), dd));
                }
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        let (bytes, dd) = first.unwrap();
        for ts in 0..(RING_FRAMES as u64 + 10) {
            r.push(
                &Frame {
                    data: &bytes,
                    ..f(ts)
                },
                &dd,
            );
        }
        let ring = r.map.values().next().unwrap();
        let fit = RING_FRAMES.min(RING_BYTES / bytes.len());
        assert_eq!(ring.frames.len(), fit, "bounded by frames and by bytes");
        assert!(ring.bytes <= RING_BYTES);
        assert_eq!(
            ring.frames.front().unwrap().ts_ns,
            (RING_FRAMES + 10 - fit) as u64,
            "the oldest went first"
        );
        assert_eq!(ring.frames.back().unwrap().ts_ns, RING_FRAMES as u64 + 9);
    }
}
