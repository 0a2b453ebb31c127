//! The one live source: libpcap devices (a netdev, `any`, an RDMA device when libpcap
//! supports it). Every device runs on its own thread and hands owned frames in
//! [`Batch`]es over one bounded channel; the consumer merges them back into timestamp
//! order with the [`Merger`](super::merge::Merger). (Files and stdin are read in the
//! consumer's thread instead: [`super::input`].)
//!
//! Guarantees:
//! - Live sources never block on a slow consumer: when the channel is full the batch is
//!   dropped and every frame in it is counted in [`SourceStats::queue_dropped`]. Kernel
//!   and interface drops (pcap stats) are collected too, so nothing is lost silently.
//! - Frames of one source keep their order; frames of several sources come out of
//!   the merger in timestamp order (each live source sends a watermark with every batch,
//!   idle ones too, so a quiet interface holds the others back by at most
//!   [`FLUSH_INTERVAL`]).
//! - Per-frame work allocates nothing: frame bytes are appended to the batch's one buffer.
//!
//! - A device read in lanes ([`LiveOptions::lanes`], [`fanout`]) is several sources, one
//!   per libpcap handle, each frame in one of them; the merger puts them back in order.
//!
//! Use: [`LiveSource::open`] (privileged: opens every handle and compiles the filters),
//! then drop privileges, then [`Opened::start`] — or, for a single device whose frames
//! need no merging, [`Opened::start_inline`]: no thread, no queue, no copy ([`Inline`]).

use super::merge::Batch;
use dissectors::LinkType;
use pcap::{Active, Capture, Precision};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A live source sends what it has at least this often (and a heartbeat when idle).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(20);
/// libpcap read timeout (TPACKET_V3 block timeout when not in immediate mode).
const READ_TIMEOUT_MS: i32 = 50;

/// Settings for live sources.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Bytes kept of each frame.
    pub snaplen: u32,
    /// Kernel buffer size in bytes.
    pub buffer_bytes: u32,
    /// Put the device into promiscuous mode.
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
    /// A device that fails (deleted, down, driver reset) is opened again with backoff
    /// ([`REOPEN_FIRST`] doubling to [`REOPEN_MAX`]) instead of ending its source; the
    /// source keeps sending heartbeats meanwhile, so the others are not held back.
    pub reopen: bool,
    /// Libpcap handles per interface, joined in one `PACKET_FANOUT` group that splits the
    /// frames by host pair ([`fanout`]); each is a source of its own. 1: one handle.
    pub lanes: u16,
    /// The UDP port the lanes take for RoCE v2 (the RoCE filter's port otherwise).
    pub roce_port: u16,
}

/// The first wait before reopening a lost device.
pub const REOPEN_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two attempts to reopen a lost device.
pub const REOPEN_MAX: Duration = Duration::from_secs(30);

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            snaplen: crate::config::DEFAULT_SNAPLEN,
            buffer_bytes: crate::config::DEFAULT_BUFFER_KIB * 1024,
            promisc: true,
            immediate: false,
            filter: Filter::All,
            batch_frames: 256,
            queue_batches: 256,
            reopen: false,
            lanes: 1,
            roce_port: crate::config::ROCE_PORT,
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
    Roce {
        /// The UDP destination port of RoCE v2.
        port: u16,
    },
    /// [`Filter::Roce`] and switch mirrors carrying it: see [`mirror_filter`].
    RoceAndMirrors {
        /// The UDP destination port of RoCE v2.
        port: u16,
    },
}

/// What a source is.
#[derive(Clone, Debug)]
pub struct SourceInfo {
    /// The device name as given.
    pub name: String,
    /// The device's link type (Linux cooked v2 for `any` when libpcap has it).
    pub link: LinkType,
    /// Bytes kept of each frame.
    pub snaplen: u32,
    /// The filter applied, if any.
    pub filter: Option<String>,
    /// Its lane, when the device is read in lanes ([`LiveOptions::lanes`]).
    pub lane: Option<fanout::Lane>,
}

impl SourceInfo {
    /// The name, with the lane when there is one: `eth0`, `eth0 lane 2/4`.
    pub fn label(&self) -> String {
        match self.lane {
            Some(l) => format!("{} lane {}/{}", self.name, l.index + 1, l.count),
            None => self.name.clone(),
        }
    }
}

/// Why a source could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// libpcap refused the device; `message` is libpcap's text.
    Device {
        /// The device.
        name: String,
        /// libpcap's words.
        message: String,
        /// libpcap said it lacks the permission (CAP_NET_RAW).
        permission: bool,
        /// libpcap does not know the device.
        no_such_device: bool,
    },
    /// The filter does not compile for this device.
    Filter {
        /// The device.
        name: String,
        /// The expression.
        filter: String,
        /// libpcap's words.
        message: String,
    },
    /// The device cannot be read in lanes (`--lanes`).
    Lanes {
        /// The device.
        name: String,
        /// Why, in words (the kernel's error, or the link type).
        why: String,
    },
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
    /// Why the source stopped early, if it did; with [`LiveOptions::reopen`], why it is
    /// down now (cleared when it is back).
    pub error: Mutex<Option<String>>,
    /// The device is open and capturing (set when the thread starts).
    pub up: AtomicBool,
    /// Times the device was lost (its capture failed).
    pub losses: AtomicU64,
    /// Times a lost device was opened again.
    pub reopens: AtomicU64,
}

impl SourceStats {
    /// libpcap's counters as last read, every handle's so far (`None` before the first
    /// read).
    pub fn pcap_stats(&self) -> Option<PcapStats> {
        *self
            .pcap
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why the source is down or ended (`None`: it is fine).
    pub fn error(&self) -> Option<String> {
        self.error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Says why the source is down or ended (`None`: it is fine).
    fn set_error(&self, e: Option<String>) {
        *self
            .error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = e;
    }

    /// The device was lost and will be opened again.
    fn went_down(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.losses.fetch_add(1, Ordering::SeqCst);
    }

    /// A lost device was opened again.
    fn came_back(&self) {
        self.set_error(None);
        self.reopens.fetch_add(1, Ordering::SeqCst);
        self.up.store(true, Ordering::SeqCst);
    }
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

/// Sources opened but not yet running: every privileged step is done.
pub struct Opened {
    sources: Vec<(SourceInfo, Capture<Active>, Joined)>,
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
    /// Opens every device: activates libpcap handles (nanosecond timestamps, the buffer
    /// size and snaplen asked for) and sets their filters. Needs the capture privileges;
    /// nothing runs yet.
    pub fn open(devices: &[String], opts: LiveOptions) -> Result<Opened, OpenError> {
        let mut sources = Vec::with_capacity(devices.len());
        for name in devices {
            if opts.lanes > 1 {
                sources.extend(open_lanes(name, &opts)?);
            } else {
                let (info, cap) = open_device(name, &opts)?;
                sources.push((info, cap, Joined::default()));
            }
        }
        Ok(Opened { sources, opts })
    }

    /// The sources, in the order given.
    pub fn sources(&self) -> &[SourceInfo] {
        &self.infos
    }

    /// Every source's counters, in the order of [`LiveSource::sources`].
    pub fn stats(&self) -> &[Arc<SourceStats>] {
        &self.stats
    }

    /// The raw batches, in arrival order (feed them to a [`Merger`](super::merge::Merger) for timestamp order).
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
    /// The sources, in the order given.
    pub fn sources(&self) -> Vec<SourceInfo> {
        self.sources.iter().map(|(i, _, _)| i.clone()).collect()
    }

    /// Starts one thread per source.
    pub fn start(self) -> LiveSource {
        let (tx, rx) = sync_channel(self.opts.queue_batches.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let mut infos = Vec::new();
        let mut stats = Vec::new();
        let mut threads = Vec::new();
        for (i, (info, cap, joined)) in self.sources.into_iter().enumerate() {
            let st = Arc::new(SourceStats::default());
            st.up.store(true, Ordering::Relaxed);
            let ctx = Ctx {
                source: i as u32,
                tx: tx.clone(),
                stop: stop.clone(),
                stats: st.clone(),
                batch_frames: self.opts.batch_frames.max(1),
            };
            let margin = if self.opts.immediate {
                FLUSH_INTERVAL
            } else {
                FLUSH_INTERVAL + Duration::from_millis(READ_TIMEOUT_MS as u64)
            };
            let dev = Device {
                name: info.name.clone(),
                opts: self.opts.clone(),
                margin,
                joined,
            };
            let t = std::thread::Builder::new()
                .name(format!("rocetap-src-{i}"))
                .spawn({
                    let link = info.link;
                    move || run_device(cap, link, &dev, ctx)
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
        Filter::RoceAndMirrors { port } => Some(mirror_filter(link, *port)),
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
            filter,
            lane: None,
        },
        cap,
    ))
}

/// A lane's group, and the time from which its frames are its own: see [`fanout`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Joined {
    /// The group the lane is in (`None`: not a lane).
    pub group: Option<fanout::Group>,
    /// Frames stamped earlier are not the lane's alone: they are skipped.
    pub start_ns: u64,
}

/// Opens `opts.lanes` handles on `name` and joins them in one fanout group.
fn open_lanes(
    name: &str,
    opts: &LiveOptions,
) -> Result<Vec<(SourceInfo, Capture<Active>, Joined)>, OpenError> {
    let lanes_err = |why: String| OpenError::Lanes {
        name: name.to_string(),
        why,
    };
    let count = opts.lanes.min(fanout::MAX_LANES);
    let mut out = Vec::with_capacity(usize::from(count));
    let mut group = None;
    for index in 0..count {
        let (mut info, cap) = open_device(name, opts)?;
        if info.link != LinkType::Ethernet {
            return Err(lanes_err(format!(
                "lanes need an Ethernet interface; this one is {:?}",
                info.link
            )));
        }
        let fd = cap.as_fd();
        let joined = match group {
            None => fanout::create(fd, opts.roce_port).map(|g| group = Some(g)),
            Some(g) => fanout::join(fd, g, opts.roce_port),
        };
        joined.map_err(|e| lanes_err(format!("PACKET_FANOUT: {e}")))?;
        info.lane = Some(fanout::Lane { index, count });
        out.push((info, cap, Joined { group, start_ns: 0 }));
    }
    // Every lane is in the group: frames stamped from now on went to one lane only.
    let start_ns = now_ns();
    for (_, _, j) in &mut out {
        j.start_ns = start_ns;
    }
    Ok(out)
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

pub mod fanout;
mod inline;
mod thread;
pub use inline::Inline;
use thread::{run_device, Device};
mod filter;
pub use filter::{mirror_filter, roce_filter, MIRROR_FILTER};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::merge::tests::batch;

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
}
