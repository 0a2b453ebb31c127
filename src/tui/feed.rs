//! The feeder threads: read frames (files at recorded speed, a multiple of it, or as fast
//! as possible; or live devices through [`LiveSource`]), decode, analyze, and send the UI
//! a [`Snapshot`] at most every [`SNAPSHOT_EVERY`] over a bounded channel with
//! `try_send`, so neither side waits for the other (a snapshot the UI has no room for is
//! skipped; the next one carries everything). The final report is sent with a blocking
//! send: it is the one that must arrive.
//!
//! `w` (write a flow): the feeder keeps, for every flow, a ring of its most recent frames
//! ([`RING_FRAMES`] frames and [`RING_BYTES`] bytes at most, for at most [`RING_FLOWS`]
//! flows; buffers are reused, so a full ring allocates nothing), in replay and live alike,
//! and writes the selected flow's and its peer's frames to a pcapng on request. So
//! for a long flow the file holds its newest frames, not all of them.
//!
//! RDMA devices (given as `mlx5_0` or as the netdev of one) also get their
//! `hw_counters` read from sysfs once a second, with per-second deltas.

use super::app::{Action, Drops, FeedState, HwCounter, Snapshot};
use crate::analysis::flow::FlowKey;
use crate::analysis::{Analyzer, Config};
use crate::capture::live::{LiveSource, Merger};
use crate::capture::writer::{Format, Interface, Writer};
use crate::capture::{rdma, Frame};
use crate::source::for_each_frame_of;
use dissectors::{Addr, Decoded, LinkType, Qpn};
use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, Instant};

pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);
pub const RING_FRAMES: usize = 2048;
pub const RING_BYTES: usize = 2 << 20;
pub const RING_FLOWS: usize = 128;

/// Replay speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    /// Times the recorded speed.
    Factor(f64),
    Max,
}

impl Speed {
    pub fn parse(s: &str) -> Result<Speed, String> {
        match s {
            "max" => Ok(Speed::Max),
            "realtime" => Ok(Speed::Factor(1.0)),
            _ => match s.trim_end_matches('x').parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => Ok(Speed::Factor(v)),
                _ => Err(format!(
                    "--speed {s}: give realtime, max, or a positive multiple such as 0.5 or 10"
                )),
            },
        }
    }
}

/// What the UI asks of the feeder.
#[derive(Debug)]
pub enum Control {
    Pause(bool),
    Step,
    Write { id: u32, keys: Vec<FlowKey> },
    Quit,
}

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

impl Rings {
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
    pub fn write(&self, dir: &Path, id: u32, keys: &[FlowKey]) -> Result<(String, u64), String> {
        let mut frames: Vec<&Stored> = self
            .map
            .iter()
            .filter(|((s, d, q), _)| keys.iter().any(|k| (k.src, k.dst, k.qp) == (*s, *d, *q)))
            .flat_map(|(_, r)| r.frames.iter())
            .collect();
        if frames.is_empty() {
            return Err(format!("no frames of flow #{id} are kept"));
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
                snaplen: 262_144,
                name: None,
            })
            .collect();
        let mut path = dir.join(format!("rocetap-flow{id}.pcapng"));
        let mut k = 2;
        while path.exists() {
            path = dir.join(format!("rocetap-flow{id}-{k}.pcapng"));
            k += 1;
        }
        let name = path.display().to_string();
        let err = |e: std::io::Error| format!("{name}: {e}");
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

/// Reads the hw_counters of the RDMA devices behind the live sources.
pub struct HwReader {
    ports: Vec<(String, PathBuf)>,
    last: HashMap<(usize, String), u64>,
    last_at: Option<Instant>,
}

impl HwReader {
    /// The counter directories of `names` (RDMA devices, `dev:port`, or netdevs of an
    /// RDMA device); empty when none is an RDMA device.
    pub fn new(root: &Path, names: &[String]) -> Self {
        let mut ports = Vec::new();
        for n in names {
            let (dev, port) = match rdma::parse_name(root, n) {
                Some(x) => x,
                None => match rdma::list(root).into_iter().find(|d| d.netdevs.contains(n)) {
                    Some(d) => (d.name, None),
                    None => continue,
                },
            };
            let Some(info) = rdma::device(root, &dev) else {
                continue;
            };
            for p in info.ports {
                if port.is_some_and(|x| x != p.number) {
                    continue;
                }
                let dir = root
                    .join("class/infiniband")
                    .join(&dev)
                    .join("ports")
                    .join(p.number.to_string())
                    .join("hw_counters");
                let label = format!("{dev}/{}", p.number);
                if dir.is_dir() && !ports.iter().any(|(l, _)| *l == label) {
                    ports.push((label, dir));
                }
            }
        }
        HwReader {
            ports,
            last: HashMap::new(),
            last_at: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    pub fn read(&mut self, now: Instant) -> Vec<HwCounter> {
        let secs = self
            .last_at
            .map(|t| now.saturating_duration_since(t).as_secs_f64());
        let mut out = Vec::new();
        for (i, (label, dir)) in self.ports.iter().enumerate() {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                let Some(value) = std::fs::read_to_string(dir.join(&name))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                else {
                    continue;
                };
                let prev = self.last.insert((i, name.clone()), value);
                let per_s = match (prev, secs) {
                    (Some(p), Some(s)) if s > 0.0 => Some(value.saturating_sub(p) as f64 / s),
                    _ => None,
                };
                out.push(HwCounter {
                    port: label.clone(),
                    name,
                    value,
                    per_s,
                });
            }
        }
        self.last_at = Some(now);
        out
    }
}

fn analyzer() -> Analyzer {
    Analyzer::new(Config::default())
}

struct Replay<'a> {
    an: Analyzer,
    d: Decoded,
    dcfg: dissectors::Config,
    rings: Rings,
    tx: &'a SyncSender<Action>,
    ctl: &'a Receiver<Control>,
    speed: Speed,
    paused: bool,
    /// Frames still allowed while paused (single step).
    steps: u32,
    /// Wall clock and capture time of the pacing origin.
    base: Option<(Instant, u64)>,
    last_snap: Instant,
    sent_events: usize,
    frames: u64,
    quit: bool,
    dir: PathBuf,
    started: Instant,
}

impl Replay<'_> {
    fn snapshot(&mut self, force: bool) {
        let state = if self.paused {
            FeedState::Paused
        } else {
            FeedState::Running
        };
        let s = Snapshot {
            report: self.an.snapshot(self.sent_events),
            events_from: self.sent_events,
            complete: false,
            frames_read: self.frames,
            drops: Drops::default(),
            hw: Vec::new(),
            state,
            wall_ns: self.started.elapsed().as_nanos() as u64,
        };
        let n = self.an.events_recorded();
        let res = if force {
            self.tx
                .send(Action::Snapshot(Box::new(s)))
                .map(|_| true)
                .unwrap_or_else(|_| {
                    self.quit = true;
                    false
                })
        } else {
            match self.tx.try_send(Action::Snapshot(Box::new(s))) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => false,
                Err(TrySendError::Disconnected(_)) => {
                    self.quit = true;
                    false
                }
            }
        };
        if res {
            self.sent_events = n;
        }
        self.last_snap = Instant::now();
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Pause(p) => {
                self.paused = p;
                self.steps = 0;
                self.base = None;
                self.snapshot(true);
            }
            Control::Step => {
                self.paused = true;
                self.steps += 1;
                self.base = None;
            }
            Control::Write { id, keys } => {
                let r = self.rings.write(&self.dir, id, &keys);
                let _ = self.tx.send(Action::Written(r));
            }
            Control::Quit => self.quit = true,
        }
    }

    fn poll(&mut self) {
        loop {
            match self.ctl.try_recv() {
                Ok(c) => self.control(c),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.quit = true;
                    break;
                }
            }
        }
    }

    /// Waits while paused (no step pending) or until the frame's time has come.
    fn wait_for(&mut self, ts: u64) {
        loop {
            self.poll();
            if self.quit {
                return;
            }
            if self.paused {
                if self.steps > 0 {
                    return;
                }
                match self.ctl.recv_timeout(Duration::from_millis(100)) {
                    Ok(c) => self.control(c),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => self.quit = true,
                }
                continue;
            }
            let Speed::Factor(x) = self.speed else {
                return;
            };
            let (w0, t0) = *self.base.get_or_insert((Instant::now(), ts));
            // A tiny factor can ask for more time than an Instant holds: wait "forever"
            // (still answering keys) rather than overflow.
            let target = Duration::try_from_secs_f64(ts.saturating_sub(t0) as f64 / 1e9 / x)
                .ok()
                .and_then(|d| w0.checked_add(d));
            let now = Instant::now();
            let target = match target {
                Some(t) if now >= t => return,
                Some(t) => t,
                None => now + Duration::from_millis(50),
            };
            if self.last_snap.elapsed() >= SNAPSHOT_EVERY {
                self.snapshot(false);
            }
            std::thread::sleep((target - now).min(Duration::from_millis(50)));
        }
    }

    fn frame(&mut self, f: &Frame<'_>) -> ControlFlow<()> {
        self.wait_for(f.ts_ns);
        if self.quit {
            return ControlFlow::Break(());
        }
        dissectors::decode_into(f.link, f.data, f.orig_len, &self.dcfg, &mut self.d);
        self.an
            .ingest(f.ts_ns, (f.source << 16) | (f.iface & 0xffff), &self.d);
        self.rings.push(f, &self.d);
        self.frames += 1;
        if self.paused && self.steps > 0 {
            self.steps -= 1;
            self.snapshot(true);
        } else if self.last_snap.elapsed() >= SNAPSHOT_EVERY {
            self.snapshot(false);
        }
        ControlFlow::Continue(())
    }
}

/// Replays `paths` (merged in timestamp order) into the UI until they end or the UI
/// quits; then serves `w` requests until told to quit.
pub fn replay(
    paths: Vec<PathBuf>,
    speed: Speed,
    dcfg: dissectors::Config,
    dir: PathBuf,
    tx: SyncSender<Action>,
    ctl: Receiver<Control>,
) {
    let mut an = analyzer();
    if paths.len() > 1 {
        for (i, p) in paths.iter().enumerate() {
            let short = p
                .file_name()
                .map_or(p.display().to_string(), |n| n.to_string_lossy().into());
            an.name_iface((i as u32) << 16, short);
        }
    }
    let mut r = Replay {
        an,
        d: dissectors::decode(LinkType::Ethernet, &[], 0, &dcfg),
        dcfg,
        rings: Rings::default(),
        tx: &tx,
        ctl: &ctl,
        speed,
        paused: false,
        steps: 0,
        base: None,
        last_snap: Instant::now(),
        sent_events: 0,
        frames: 0,
        quit: false,
        dir,
        started: Instant::now(),
    };
    let res = for_each_frame_of(&paths, true, |f| r.frame(f));
    if r.quit {
        return;
    }
    let state = match res {
        Ok(cut) => {
            // A file cut short is a finding of the report, not a failure of the replay.
            for c in &cut {
                r.an.input_cut_short(&c.file, c.frames);
            }
            FeedState::Ended
        }
        Err(e) => FeedState::Failed(e.what),
    };
    let Replay {
        an,
        rings,
        frames,
        started,
        ..
    } = r;
    let report = an.finish();
    let s = Snapshot {
        report,
        events_from: 0,
        complete: true,
        frames_read: frames,
        drops: Drops::default(),
        hw: Vec::new(),
        state,
        wall_ns: started.elapsed().as_nanos() as u64,
    };
    if tx.send(Action::Snapshot(Box::new(s))).is_err() {
        return;
    }
    serve_writes(&rings, &r.dir, &tx, &ctl);
}

fn serve_writes(rings: &Rings, dir: &Path, tx: &SyncSender<Action>, ctl: &Receiver<Control>) {
    while let Ok(c) = ctl.recv() {
        match c {
            Control::Write { id, keys } => {
                let _ = tx.send(Action::Written(rings.write(dir, id, &keys)));
            }
            Control::Quit => return,
            Control::Pause(_) | Control::Step => {}
        }
    }
}

fn drops(live: &LiveSource) -> Drops {
    let mut d = Drops::default();
    for s in live.stats() {
        let p = s
            .pcap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_default();
        d.kernel += p.kernel_dropped;
        d.iface += p.if_dropped;
        d.rocetap += s.queue_dropped.load(Ordering::Relaxed);
    }
    d
}

/// Analyzes live sources until the UI quits (or every source ends).
pub fn live(
    live: LiveSource,
    mut hw: HwReader,
    dcfg: dissectors::Config,
    dir: PathBuf,
    tx: SyncSender<Action>,
    ctl: Receiver<Control>,
) {
    let names: Vec<String> = live.sources().iter().map(|s| s.name.clone()).collect();
    let mut an = analyzer();
    for (i, n) in names.iter().enumerate() {
        an.name_iface((i as u32) << 16, n.clone());
    }
    let mut merger = Merger::new(names.len());
    let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, &dcfg);
    let mut rings = Rings::default();
    let mut frames = 0u64;
    let mut sent_events = 0usize;
    let mut last_snap = Instant::now();
    let mut hw_last: Option<Instant> = None;
    let mut counters = Vec::new();
    let mut quit = false;
    let started = Instant::now();
    loop {
        if let Some(b) = live.recv_timeout(Duration::from_millis(50)) {
            merger.push(b);
            while let Ok(b) = live.receiver().try_recv() {
                merger.push(b);
            }
        }
        let _ = merger.drain(false, |f| {
            dissectors::decode_into(f.link, f.data, f.orig_len, &dcfg, &mut d);
            an.ingest(f.ts_ns, (f.source << 16) | (f.iface & 0xffff), &d);
            rings.push(f, &d);
            frames += 1;
            ControlFlow::Continue(())
        });
        loop {
            match ctl.try_recv() {
                Ok(Control::Write { id, keys }) => {
                    let _ = tx.send(Action::Written(rings.write(&dir, id, &keys)));
                }
                Ok(Control::Quit) | Err(TryRecvError::Disconnected) => {
                    quit = true;
                    break;
                }
                Ok(Control::Pause(_) | Control::Step) => {}
                Err(TryRecvError::Empty) => break,
            }
        }
        if quit {
            live.stop();
            let _ = live.finish();
            return;
        }
        if !hw.is_empty() && hw_last.is_none_or_elapsed(Duration::from_secs(1)) {
            let now = Instant::now();
            counters = hw.read(now);
            hw_last = Some(now);
        }
        if merger.is_done() {
            let dr = drops(&live);
            let mut errors = Vec::new();
            for (n, s) in names.iter().zip(live.stats()) {
                if let Some(e) = s.error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                    errors.push(format!("{n}: {e}"));
                }
            }
            let _ = live.finish();
            let s = Snapshot {
                report: an.finish(),
                events_from: 0,
                complete: true,
                frames_read: frames,
                drops: dr,
                hw: counters,
                state: if errors.is_empty() {
                    FeedState::Ended
                } else {
                    FeedState::Failed(errors.join("; "))
                },
                wall_ns: started.elapsed().as_nanos() as u64,
            };
            if tx.send(Action::Snapshot(Box::new(s))).is_ok() {
                serve_writes(&rings, &dir, &tx, &ctl);
            }
            return;
        }
        if last_snap.elapsed() >= SNAPSHOT_EVERY {
            last_snap = Instant::now();
            let n = an.events_recorded();
            let s = Snapshot {
                report: an.snapshot(sent_events),
                events_from: sent_events,
                complete: false,
                frames_read: frames,
                drops: drops(&live),
                hw: counters.clone(),
                state: FeedState::Running,
                wall_ns: started.elapsed().as_nanos() as u64,
            };
            match tx.try_send(Action::Snapshot(Box::new(s))) {
                Ok(()) => sent_events = n,
                Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => {
                    live.stop();
                    let _ = live.finish();
                    return;
                }
            }
        }
    }
}

trait Due {
    fn is_none_or_elapsed(&self, d: Duration) -> bool;
}

impl Due for Option<Instant> {
    fn is_none_or_elapsed(&self, d: Duration) -> bool {
        self.map_or(true, |t| t.elapsed() >= d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_parses() {
        assert_eq!(Speed::parse("max"), Ok(Speed::Max));
        assert_eq!(Speed::parse("realtime"), Ok(Speed::Factor(1.0)));
        assert_eq!(Speed::parse("10"), Ok(Speed::Factor(10.0)));
        assert_eq!(Speed::parse("0.5x"), Ok(Speed::Factor(0.5)));
        assert!(Speed::parse("0").is_err());
        assert!(Speed::parse("-1").is_err());
        assert!(Speed::parse("fast").is_err());
    }

    #[test]
    fn hw_counters_of_rdma_devices_and_their_netdevs() {
        let root = std::env::temp_dir().join(format!("rocetap-hw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dev = root.join("class/infiniband/mlx5_0");
        let hc = dev.join("ports/1/hw_counters");
        std::fs::create_dir_all(&hc).unwrap();
        std::fs::create_dir_all(dev.join("device/net/eth7")).unwrap();
        std::fs::write(hc.join("out_of_sequence"), "10\n").unwrap();
        std::fs::write(hc.join("np_cnp_sent"), "0\n").unwrap();
        // Not an RDMA device: nothing to read.
        assert!(HwReader::new(&root, &["lo".into()]).is_empty());
        for name in ["mlx5_0", "mlx5_0:1", "eth7"] {
            let mut r = HwReader::new(&root, &[name.to_string()]);
            assert!(!r.is_empty(), "{name}");
            std::fs::write(hc.join("out_of_sequence"), "10\n").unwrap();
            let t0 = Instant::now();
            let first = r.read(t0);
            assert_eq!(first.len(), 2);
            assert!(first
                .iter()
                .all(|c| c.per_s.is_none() && c.port == "mlx5_0/1"));
            std::fs::write(hc.join("out_of_sequence"), "30\n").unwrap();
            let second = r.read(t0 + Duration::from_secs(2));
            let oos = second.iter().find(|c| c.name == "out_of_sequence").unwrap();
            assert_eq!(oos.value, 30);
            assert_eq!(oos.per_s, Some(10.0));
        }
        assert!(HwReader::new(&root, &["mlx5_0:2".into()]).is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

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
        for_each_frame_of(&[path], true, |f| {
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
        for_each_frame_of(&[p], true, |fr| {
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
