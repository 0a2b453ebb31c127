//! Live and streamed frame sources behind one API: libpcap devices (a netdev, `any`, an
//! RDMA device when libpcap supports it) and capture files / stdin through the file
//! reader. Every source runs on its own thread and hands owned frames in [`Batch`]es over
//! one bounded channel; the consumer merges them back into timestamp order.
//!
//! Guarantees:
//! - Live sources never block on a slow consumer: when the channel is full the batch is
//!   dropped and every frame in it is counted in [`SourceStats::queue_dropped`]. Kernel
//!   and interface drops (pcap stats) are collected too, so nothing is lost silently.
//! - File sources block instead and lose nothing.
//! - Frames of one source keep their order; frames of several sources come out of
//!   [`Merger`] in timestamp order (each live source sends a watermark with every batch,
//!   idle ones too, so a quiet interface holds the others back by at most
//!   [`FLUSH_INTERVAL`]).
//! - Per-frame work allocates nothing: frame bytes are appended to the batch's one buffer.
//!
//! Use: [`LiveSource::open`] (privileged: opens every handle and compiles the filters),
//! then drop privileges, then [`Opened::start`].

use super::file::Reader;
use super::Frame;
use dissectors::LinkType;
use nix::poll::{poll, PollFd, PollFlags};
use pcap::{Active, Capture, Precision};
use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A live source sends what it has at least this often (and a heartbeat when idle).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(20);
/// libpcap read timeout (TPACKET_V3 block timeout when not in immediate mode).
const READ_TIMEOUT_MS: i32 = 50;

/// Where frames come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// A libpcap device: a netdev, `any`, or an RDMA device (`mlx5_0`, `mlx5_0:2`).
    Device(String),
    /// A pcap / pcapng file; `-` is standard input.
    File(PathBuf),
}

/// Settings for live sources.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Bytes kept of each frame.
    pub snaplen: u32,
    /// Kernel buffer size in bytes.
    pub buffer_bytes: u32,
    pub promisc: bool,
    /// libpcap immediate mode: every frame is delivered at once. On Linux this makes
    /// libpcap use TPACKET_V2, whose ring holds only buffer / snaplen frames, so bursts
    /// of whole frames overflow it (measured with benches/capture.sh: at ~400k pps with
    /// snaplen 262144 and 8 MiB it lost 50-87 % in the kernel, without it nothing).
    /// Without it (TPACKET_V3) frames wait up to the block timeout (50 ms) but the ring
    /// is packed. Off by default; turn it on with a small snaplen when latency matters.
    pub immediate: bool,
    /// Capture filter for every device.
    pub filter: Filter,
    /// Frames per batch at most.
    pub batch_frames: usize,
    /// Batches the channel holds before live sources start dropping.
    pub queue_batches: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            snaplen: 262_144,
            buffer_bytes: 8 << 20,
            promisc: true,
            immediate: false,
            filter: Filter::All,
            batch_frames: 256,
            queue_batches: 256,
        }
    }
}

/// Which frames a device delivers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Everything.
    All,
    /// A BPF expression, as tcpdump takes it.
    Expr(String),
    /// RoCE and what explains it: see [`roce_filter`].
    Roce { port: u16 },
}

/// The default capture filter: RoCE v2 (UDP to `port`), RoCE v1 (EtherType 0x8915), ARP
/// and MAC control / PFC (EtherType 0x8808), with or without a VLAN tag. Linux cooked
/// captures (`any`) have no VLAN tags in the frame (libpcap has no `vlan` for them).
pub fn roce_filter(link: LinkType, port: u16) -> String {
    let base = format!("udp dst port {port} or ether proto 0x8915 or arp or ether proto 0x8808");
    match link {
        LinkType::LinuxSll | LinkType::LinuxSll2 => base,
        _ => format!("({base}) or (vlan and ({base}))"),
    }
}

/// What a source is.
#[derive(Clone, Debug)]
pub struct SourceInfo {
    pub name: String,
    pub link: LinkType,
    pub snaplen: u32,
    /// A libpcap device (as opposed to a file or stdin).
    pub live: bool,
    /// The filter applied, if any.
    pub filter: Option<String>,
}

/// Why a source could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// libpcap refused the device; `message` is libpcap's text.
    Device {
        name: String,
        message: String,
        /// libpcap said it lacks the permission (CAP_NET_RAW).
        permission: bool,
        /// libpcap does not know the device.
        no_such_device: bool,
    },
    /// The filter does not compile for this device.
    Filter {
        name: String,
        filter: String,
        message: String,
    },
    /// A file or stdin could not be opened or is not a capture.
    File(crate::error::Failure),
}

/// Counters of one source, shared between its thread and the consumer.
#[derive(Debug, Default)]
pub struct SourceStats {
    /// Frames the source read (from libpcap or the file).
    pub received: AtomicU64,
    /// Frames dropped because the consumer fell behind (live sources only).
    pub queue_dropped: AtomicU64,
    /// The latest libpcap statistics (live sources only).
    pub pcap: Mutex<Option<PcapStats>>,
    /// Why the source stopped early, if it did.
    pub error: Mutex<Option<String>>,
}

/// libpcap's counters for one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcapStats {
    /// Packets that passed the filter (Linux: including those the kernel then dropped).
    pub received: u64,
    /// Dropped by the kernel: no room in the capture buffer.
    pub kernel_dropped: u64,
    /// Dropped by the interface or its driver.
    pub if_dropped: u64,
}

/// Frame metadata inside a batch; the bytes live in [`Batch::data`].
#[derive(Clone, Copy, Debug)]
struct Meta {
    ts_ns: u64,
    link: LinkType,
    offset: u32,
    len: u32,
    orig_len: u32,
    iface: u32,
}

/// Owned frames of one source, in order.
#[derive(Debug)]
pub struct Batch {
    /// Index of the source in [`LiveSource::sources`].
    pub source: u32,
    data: Vec<u8>,
    meta: Vec<Meta>,
    /// No later frame of this source has a smaller timestamp.
    pub watermark_ns: u64,
    /// The source has ended; nothing follows.
    pub last: bool,
}

impl Batch {
    fn new(source: u32, frames: usize) -> Self {
        Batch {
            source,
            data: Vec::with_capacity(frames * 256),
            meta: Vec::with_capacity(frames),
            watermark_ns: 0,
            last: false,
        }
    }
    fn push(&mut self, f: &Frame<'_>) {
        self.meta.push(Meta {
            ts_ns: f.ts_ns,
            link: f.link,
            offset: self.data.len() as u32,
            len: f.data.len() as u32,
            orig_len: f.orig_len,
            iface: f.iface,
        });
        self.data.extend_from_slice(f.data);
    }
    pub fn len(&self) -> usize {
        self.meta.len()
    }
    pub fn is_empty(&self) -> bool {
        self.meta.is_empty()
    }
    /// The `i`-th frame.
    pub fn frame(&self, i: usize) -> Frame<'_> {
        let m = self.meta[i];
        Frame {
            ts_ns: m.ts_ns,
            link: m.link,
            data: &self.data[m.offset as usize..(m.offset + m.len) as usize],
            orig_len: m.orig_len,
            iface: m.iface,
            source: self.source,
        }
    }
    pub fn frames(&self) -> impl Iterator<Item = Frame<'_>> {
        (0..self.len()).map(|i| self.frame(i))
    }
}

enum Pending {
    Device(Capture<Active>),
    File(Reader<'static>),
}

/// Sources opened but not yet running: every privileged step is done.
pub struct Opened {
    sources: Vec<(SourceInfo, Pending)>,
    opts: LiveOptions,
}

/// Running sources: one thread each, one channel.
pub struct LiveSource {
    infos: Vec<SourceInfo>,
    stats: Vec<Arc<SourceStats>>,
    rx: Receiver<Batch>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl LiveSource {
    /// Opens every source: activates libpcap handles (immediate mode, nanosecond
    /// timestamps, the buffer size and snaplen asked for) and sets their filters, or
    /// opens files and reads their headers. Needs the capture privileges; nothing runs yet.
    pub fn open(specs: &[SourceSpec], opts: LiveOptions) -> Result<Opened, OpenError> {
        let mut sources = Vec::with_capacity(specs.len());
        for spec in specs {
            match spec {
                SourceSpec::Device(name) => {
                    let (info, cap) = open_device(name, &opts)?;
                    sources.push((info, Pending::Device(cap)));
                }
                SourceSpec::File(path) => {
                    let o = crate::source::open(path).map_err(OpenError::File)?;
                    let reader = Reader::new(o.reader)
                        .map_err(|e| OpenError::File(crate::source::read_failure(&o.name, e)))?;
                    let info = SourceInfo {
                        name: o.name,
                        link: LinkType::Ethernet,
                        snaplen: opts.snaplen,
                        live: false,
                        filter: None,
                    };
                    sources.push((info, Pending::File(reader)));
                }
            }
        }
        Ok(Opened { sources, opts })
    }

    pub fn sources(&self) -> &[SourceInfo] {
        &self.infos
    }

    pub fn stats(&self) -> &[Arc<SourceStats>] {
        &self.stats
    }

    /// The raw batches, in arrival order (feed them to a [`Merger`] for timestamp order).
    pub fn receiver(&self) -> &Receiver<Batch> {
        &self.rx
    }

    /// Waits up to `timeout` for the next batch; `None` on timeout or when every source
    /// has ended (see [`LiveSource::finished`]).
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Batch> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Asks every source to stop; they send what they hold and end within ~20 ms.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// A handle that stops the sources from elsewhere.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// True when every source thread has ended (their last batches may still be queued).
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Stops the sources, waits for their threads and returns the batches still queued.
    pub fn finish(mut self) -> Vec<Batch> {
        self.stop();
        let mut rest = Vec::new();
        // Drain while waiting so a blocked file source can finish its send.
        while !self.threads.iter().all(JoinHandle::is_finished) {
            if let Ok(b) = self.rx.recv_timeout(Duration::from_millis(10)) {
                rest.push(b);
            }
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        rest.extend(self.rx.try_iter());
        rest
    }
}

impl Opened {
    pub fn sources(&self) -> Vec<SourceInfo> {
        self.sources.iter().map(|(i, _)| i.clone()).collect()
    }

    /// Starts one thread per source.
    pub fn start(self) -> LiveSource {
        let (tx, rx) = sync_channel(self.opts.queue_batches.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let mut infos = Vec::new();
        let mut stats = Vec::new();
        let mut threads = Vec::new();
        for (i, (info, pending)) in self.sources.into_iter().enumerate() {
            let st = Arc::new(SourceStats::default());
            let ctx = Ctx {
                source: i as u32,
                tx: tx.clone(),
                stop: stop.clone(),
                stats: st.clone(),
                batch_frames: self.opts.batch_frames.max(1),
            };
            let link = info.link;
            let margin = if self.opts.immediate {
                FLUSH_INTERVAL
            } else {
                FLUSH_INTERVAL + Duration::from_millis(READ_TIMEOUT_MS as u64)
            };
            let t = std::thread::Builder::new()
                .name(format!("rocetap-src-{i}"))
                .spawn(move || match pending {
                    Pending::Device(cap) => run_device(cap, link, margin, ctx),
                    Pending::File(r) => run_file(r, ctx),
                })
                .expect("spawn a capture thread");
            infos.push(info);
            stats.push(st);
            threads.push(t);
        }
        LiveSource {
            infos,
            stats,
            rx,
            stop,
            threads,
        }
    }
}

fn open_device(name: &str, opts: &LiveOptions) -> Result<(SourceInfo, Capture<Active>), OpenError> {
    let dev_err = |e: pcap::Error| {
        let message = match e {
            pcap::Error::PcapError(s) => s,
            other => other.to_string(),
        };
        let lower = message.to_lowercase();
        OpenError::Device {
            name: name.to_string(),
            permission: lower.contains("permission") || lower.contains("not permitted"),
            no_such_device: lower.contains("no such device"),
            message,
        }
    };
    let cap = Capture::from_device(name)
        .map_err(dev_err)?
        .immediate_mode(opts.immediate)
        .timeout(READ_TIMEOUT_MS)
        .promisc(opts.promisc)
        .snaplen(opts.snaplen.min(i32::MAX as u32) as i32)
        .buffer_size(opts.buffer_bytes.min(i32::MAX as u32) as i32)
        .precision(Precision::Nano)
        .open()
        .map_err(dev_err)?;
    let mut cap = cap;
    // `any` defaults to Linux cooked v1; v2 also records the interface index.
    if cap.get_datalink().0 == 113
        && cap
            .list_datalinks()
            .is_ok_and(|l| l.iter().any(|d| d.0 == 276))
    {
        let _ = cap.set_datalink(pcap::Linktype(276));
    }
    let link = LinkType::from_linktype(cap.get_datalink().0 as u32);
    let filter = match &opts.filter {
        Filter::All => None,
        Filter::Expr(e) => Some(e.clone()),
        Filter::Roce { port } => Some(roce_filter(link, *port)),
    };
    if let Some(f) = &filter {
        cap.filter(f, true).map_err(|e| OpenError::Filter {
            name: name.to_string(),
            filter: f.clone(),
            message: match e {
                pcap::Error::PcapError(s) => s,
                other => other.to_string(),
            },
        })?;
    }
    Ok((
        SourceInfo {
            name: name.to_string(),
            link,
            snaplen: opts.snaplen,
            live: true,
            filter,
        },
        cap,
    ))
}

struct Ctx {
    source: u32,
    tx: SyncSender<Batch>,
    stop: Arc<AtomicBool>,
    stats: Arc<SourceStats>,
    batch_frames: usize,
}

impl Ctx {
    /// Hands a batch over without blocking; a full channel drops it (and counts it).
    /// Returns false when the consumer is gone.
    fn offer(&self, b: Batch) -> bool {
        let n = b.len() as u64;
        match self.tx.try_send(b) {
            Ok(()) => true,
            Err(TrySendError::Full(b)) => {
                if b.last {
                    // The end marker must arrive: wait for room.
                    return self.tx.send(b).is_ok();
                }
                self.stats.queue_dropped.fetch_add(n, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

fn read_pcap_stats(cap: &mut Capture<Active>, st: &SourceStats) {
    if let Ok(s) = cap.stats() {
        let mut g = st.pcap.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(PcapStats {
            received: u64::from(s.received),
            kernel_dropped: u64::from(s.dropped),
            if_dropped: u64::from(s.if_dropped),
        });
    }
}

fn run_device(cap: Capture<Active>, link: LinkType, margin: Duration, ctx: Ctx) {
    // Non-blocking reads plus poll(2): libpcap 1.10's blocking read does not return on
    // its timeout in immediate mode, and an idle device must still send heartbeats.
    let mut cap = match cap.setnonblock() {
        Ok(c) => c,
        Err(e) => {
            *ctx.stats.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            let mut b = Batch::new(ctx.source, 0);
            b.watermark_ns = u64::MAX;
            b.last = true;
            let _ = ctx.offer(b);
            return;
        }
    };
    let mut batch = Batch::new(ctx.source, ctx.batch_frames);
    let mut last_send = Instant::now();
    let mut last_stats = Instant::now();
    let mut last_ts = 0u64;
    let received = &ctx.stats.received;
    let poll_ms = FLUSH_INTERVAL.as_millis() as u16;
    loop {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let idle = match cap.next_packet() {
            Ok(p) => {
                let h = p.header;
                // Nanosecond precision was asked for; Linux always grants it, so the
                // "usec" field holds nanoseconds.
                let ts_ns = (h.ts.tv_sec as u64)
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(h.ts.tv_usec as u64);
                last_ts = last_ts.max(ts_ns);
                batch.push(&Frame {
                    ts_ns,
                    link,
                    data: p.data,
                    orig_len: h.len,
                    iface: 0,
                    source: ctx.source,
                });
                received.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(pcap::Error::TimeoutExpired | pcap::Error::NoMorePackets) => true,
            Err(e) => {
                *ctx.stats.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                break;
            }
        };
        if batch.len() >= ctx.batch_frames || last_send.elapsed() >= FLUSH_INTERVAL || idle {
            // Idle: libpcap had nothing ready, so anything later is stamped after now
            // minus a margin for frames in a block the kernel has not handed over yet.
            let wm = if idle {
                now_ns()
                    .saturating_sub(margin.as_nanos() as u64)
                    .max(last_ts)
            } else {
                last_ts
            };
            if !batch.is_empty() || idle {
                // An empty heartbeat allocates nothing; a filled batch is handed over.
                let mut b = if batch.is_empty() {
                    Batch::new(ctx.source, 0)
                } else {
                    std::mem::replace(&mut batch, Batch::new(ctx.source, ctx.batch_frames))
                };
                b.watermark_ns = wm;
                if !ctx.offer(b) {
                    return;
                }
            }
            last_send = Instant::now();
            if last_stats.elapsed() >= Duration::from_millis(500) {
                read_pcap_stats(&mut cap, &ctx.stats);
                last_stats = Instant::now();
            }
        }
        if idle {
            let mut fds = [PollFd::new(cap.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, poll_ms);
        }
    }
    read_pcap_stats(&mut cap, &ctx.stats);
    batch.watermark_ns = u64::MAX;
    batch.last = true;
    let _ = ctx.offer(batch);
}

fn run_file(mut r: Reader<'static>, ctx: Ctx) {
    let mut batch = Batch::new(ctx.source, ctx.batch_frames);
    let mut last_ts = 0u64;
    loop {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        match r.next_with(|f| {
            last_ts = last_ts.max(f.ts_ns);
            batch.push(f);
        }) {
            Ok(Some(())) => {
                ctx.stats.received.fetch_add(1, Ordering::Relaxed);
                if batch.len() >= ctx.batch_frames {
                    let mut b =
                        std::mem::replace(&mut batch, Batch::new(ctx.source, ctx.batch_frames));
                    b.watermark_ns = last_ts;
                    // Files block: they lose nothing.
                    if ctx.tx.send(b).is_err() {
                        return;
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                *ctx.stats.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                break;
            }
        }
    }
    batch.watermark_ns = u64::MAX;
    batch.last = true;
    let _ = ctx.tx.send(batch);
}

/// Puts batches of several sources back into timestamp order. A frame is released once
/// every other source that is still running has either a later frame queued or a
/// watermark at or past it. Ties go to the lower source index.
pub struct Merger {
    queues: Vec<VecDeque<(Batch, usize)>>,
    watermark: Vec<u64>,
    done: Vec<bool>,
}

impl Merger {
    pub fn new(sources: usize) -> Self {
        Merger {
            queues: (0..sources).map(|_| VecDeque::new()).collect(),
            watermark: vec![0; sources],
            done: vec![false; sources],
        }
    }

    pub fn push(&mut self, b: Batch) {
        let s = b.source as usize;
        self.watermark[s] = self.watermark[s].max(b.watermark_ns);
        if b.last {
            self.done[s] = true;
        }
        if !b.is_empty() {
            self.queues[s].push_back((b, 0));
        }
    }

    /// True when every source has ended and every frame was released.
    pub fn is_done(&self) -> bool {
        self.done.iter().all(|d| *d) && self.queues.iter().all(VecDeque::is_empty)
    }

    fn head(&self, s: usize) -> Option<u64> {
        self.queues[s].front().map(|(b, i)| b.frame(*i).ts_ns)
    }

    /// Hands every releasable frame to `f`, in timestamp order, until `f` breaks.
    /// With `all`, releases everything queued regardless of watermarks (at the end).
    pub fn drain(
        &mut self,
        all: bool,
        mut f: impl FnMut(&Frame<'_>) -> std::ops::ControlFlow<()>,
    ) -> std::ops::ControlFlow<()> {
        loop {
            let Some((ts, s)) = (0..self.queues.len())
                .filter_map(|s| self.head(s).map(|t| (t, s)))
                .min()
            else {
                return std::ops::ControlFlow::Continue(());
            };
            if !all {
                let blocked = (0..self.queues.len()).any(|o| {
                    o != s && !self.done[o] && self.queues[o].is_empty() && self.watermark[o] < ts
                });
                if blocked {
                    return std::ops::ControlFlow::Continue(());
                }
            }
            let q = &mut self.queues[s];
            let (b, i) = q.front_mut().expect("head exists");
            let flow = f(&b.frame(*i));
            *i += 1;
            if *i >= b.len() {
                q.pop_front();
            }
            flow?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::ControlFlow;

    fn batch(source: u32, ts: &[u64], wm: u64, last: bool) -> Batch {
        let mut b = Batch::new(source, 4);
        for t in ts {
            b.push(&Frame {
                ts_ns: *t,
                link: LinkType::Ethernet,
                data: &[source as u8, *t as u8],
                orig_len: 2,
                iface: 0,
                source,
            });
        }
        b.watermark_ns = wm;
        b.last = last;
        b
    }

    fn drain(m: &mut Merger, all: bool) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let _ = m.drain(all, |f| {
            assert_eq!(f.data, &[f.source as u8, f.ts_ns as u8]);
            out.push((f.source, f.ts_ns));
            ControlFlow::Continue(())
        });
        out
    }

    #[test]
    fn merger_waits_for_the_slower_source() {
        let mut m = Merger::new(2);
        m.push(batch(0, &[10, 20, 30], 30, false));
        // Source 1 has said nothing yet: nothing may be released.
        assert!(drain(&mut m, false).is_empty());
        m.push(batch(1, &[], 15, false));
        assert_eq!(drain(&mut m, false), vec![(0, 10)]);
        m.push(batch(1, &[25], 25, false));
        assert_eq!(drain(&mut m, false), vec![(0, 20), (1, 25)]);
        m.push(batch(1, &[], u64::MAX, true));
        assert_eq!(drain(&mut m, false), vec![(0, 30)]);
        assert!(!m.is_done());
        m.push(batch(0, &[], u64::MAX, true));
        assert!(m.is_done());
    }

    #[test]
    fn merger_orders_interleaved_batches_and_breaks() {
        let mut m = Merger::new(3);
        m.push(batch(2, &[5, 6], u64::MAX, true));
        m.push(batch(0, &[1, 4, 9], u64::MAX, true));
        m.push(batch(1, &[2, 3, 7], u64::MAX, true));
        let mut got = Vec::new();
        let flow = m.drain(false, |f| {
            got.push(f.ts_ns);
            if got.len() == 4 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(flow.is_break());
        assert_eq!(got, vec![1, 2, 3, 4]);
        let rest: Vec<u64> = drain(&mut m, false).into_iter().map(|x| x.1).collect();
        assert_eq!(rest, vec![5, 6, 7, 9]);
        assert!(m.is_done());
    }

    #[test]
    fn a_full_queue_drops_whole_batches_and_counts_their_frames() {
        let (tx, rx) = sync_channel(1);
        let ctx = Ctx {
            source: 0,
            tx,
            stop: Arc::new(AtomicBool::new(false)),
            stats: Arc::new(SourceStats::default()),
            batch_frames: 4,
        };
        assert!(ctx.offer(batch(0, &[1, 2, 3], 3, false)));
        // The consumer is not reading: the next two batches are dropped and counted.
        assert!(ctx.offer(batch(0, &[4, 5], 5, false)));
        assert!(ctx.offer(batch(0, &[6], 6, false)));
        assert_eq!(ctx.stats.queue_dropped.load(Ordering::Relaxed), 3);
        assert_eq!(rx.recv().unwrap().len(), 3);
        // The end marker waits for room instead of being dropped.
        assert!(ctx.offer(batch(0, &[7], 7, false)));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let a = rx.recv().unwrap();
            let b = rx.recv().unwrap();
            (a.len(), b.last)
        });
        assert!(ctx.offer(batch(0, &[], u64::MAX, true)));
        assert_eq!(t.join().unwrap(), (1, true));
        assert_eq!(ctx.stats.queue_dropped.load(Ordering::Relaxed), 3);
        drop(ctx);
    }

    #[test]
    fn file_sources_deliver_everything_in_order() {
        use crate::capture::writer::{Format, Interface, Writer};
        let dir = std::env::temp_dir().join(format!("rocetap-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for (k, start) in [(0u64, 0u64), (1, 5)] {
            let ifs = [Interface {
                link: LinkType::Ethernet,
                snaplen: 65535,
                name: None,
            }];
            let mut w = Writer::new(Vec::new(), Format::PcapNs, &ifs).unwrap();
            for i in 0..1000u64 {
                w.write(start + i * 10, 0, &[k as u8; 60], 60, None)
                    .unwrap();
            }
            let p = dir.join(format!("{k}.pcap"));
            std::fs::write(&p, w.into_inner().unwrap()).unwrap();
            paths.push(SourceSpec::File(p));
        }
        let opts = LiveOptions {
            batch_frames: 7,
            queue_batches: 2,
            ..LiveOptions::default()
        };
        let live = LiveSource::open(&paths, opts).unwrap().start();
        let mut m = Merger::new(2);
        let mut got = Vec::new();
        while !m.is_done() {
            if let Some(b) = live.recv_timeout(Duration::from_secs(5)) {
                m.push(b);
            }
            let _ = m.drain(false, |f| {
                got.push((f.ts_ns, f.source, f.data[0]));
                ControlFlow::Continue(())
            });
        }
        assert_eq!(got.len(), 2000);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(got.iter().all(|(_, s, b)| u32::from(*b) == *s));
        let stats = live.stats().to_vec();
        assert_eq!(stats[0].received.load(Ordering::Relaxed), 1000);
        assert_eq!(stats[1].queue_dropped.load(Ordering::Relaxed), 0);
        live.finish();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
