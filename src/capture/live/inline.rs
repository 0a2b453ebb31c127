//! One device read on the caller's own thread: no capture thread, no queue, no merge and
//! no copy — every frame is handed on straight from libpcap's buffer. This is the path of
//! every session with a single device (`rocetap capture -i X`, `analyze -i X`, an agent
//! with one source), where there is nothing to merge; several devices keep a thread per
//! device ([`Opened::start`]).
//!
//! Guarantees: frames come in capture order with the pcap header's timestamp; the
//! source's counters ([`SourceStats`]) are kept as a capture thread keeps them (received
//! per call, libpcap's statistics every 500 ms and at the end), so the status line and the
//! final report read the same; nothing is dropped by rocetap (there is no queue: a slow
//! consumer leaves frames in the kernel's ring, whose drops libpcap counts). A failing
//! handle ends the source with libpcap's words in [`SourceStats::error`] — or, with
//! [`LiveOptions::reopen`](super::LiveOptions::reopen), marks it down and opens the device
//! again with the capture threads' backoff, its counters carried over (they never go
//! back), between two calls of [`Inline::pump`].

use super::thread::{open_error_text, read_pcap_stats, Backoff};
use super::{
    fanout, now_ns, open_device, Joined, LiveOptions, LiveSource, Opened, PcapStats, SourceInfo,
    SourceStats, FLUSH_INTERVAL,
};
use crate::capture::Frame;
use dissectors::LinkType;
use nix::poll::{poll, PollFd, PollFlags};
use pcap::{Active, Capture};
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many frames are handed on between two looks at the clock.
const CLOCK_EVERY: u32 = 256;

/// The one device of a session, read by [`Inline::pump`] on the caller's thread.
pub struct Inline {
    cap: Option<Capture<Active>>,
    link: LinkType,
    stats: Arc<SourceStats>,
    last_stats: Instant,
    /// How a lost device is opened again, when it is.
    reopen: Option<Reopen>,
    /// Its lane's group, if it is a lane, and where its frames start.
    joined: Joined,
}

/// What [`Inline`] needs to open a lost device again.
struct Reopen {
    name: String,
    opts: LiveOptions,
    backoff: Backoff,
    /// When the current handle was opened.
    opened: Instant,
    /// When to try next while the device is down.
    next_try: Instant,
    /// libpcap's counts of the handles closed before the current one.
    base: PcapStats,
}

impl Opened {
    /// With exactly one device: the running source's description and counters (a
    /// [`LiveSource`] without threads; its queue is always empty) and the device to read
    /// with [`Inline::pump`]. Otherwise the sources unchanged, to [`Opened::start`].
    pub fn start_inline(mut self) -> Result<(LiveSource, Inline), Opened> {
        if self.sources.len() != 1 {
            return Err(self);
        }
        let (info, cap, joined) = self.sources.pop().expect("one source");
        let inline = Inline::new(&info, cap, joined, &self.opts);
        // No thread sends anything: the receiver is disconnected from the start.
        let (_, rx) = sync_channel(1);
        let live = LiveSource {
            infos: vec![info],
            stats: vec![inline.stats.clone()],
            rx,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        Ok((live, inline))
    }

    /// Every device (every lane of one, [`LiveOptions::lanes`]) to be read on a thread of
    /// the caller's choosing, each with its description, in the order of
    /// [`Opened::sources`]: no queue and no merge, for a caller that keeps each source
    /// apart (the agent: a lane's frames are analyzed apart from the other lanes').
    pub fn start_each(self) -> Vec<(SourceInfo, Inline)> {
        let opts = self.opts;
        self.sources
            .into_iter()
            .map(|(info, cap, joined)| {
                let inline = Inline::new(&info, cap, joined, &opts);
                (info, inline)
            })
            .collect()
    }
}

impl Inline {
    fn new(info: &SourceInfo, cap: Capture<Active>, joined: Joined, opts: &LiveOptions) -> Inline {
        let stats = Arc::new(SourceStats::default());
        stats.up.store(true, Ordering::Relaxed);
        let reopen = opts.reopen.then(|| Reopen {
            name: info.name.clone(),
            opts: opts.clone(),
            backoff: Backoff::new(),
            opened: Instant::now(),
            next_try: Instant::now(),
            base: PcapStats::default(),
        });
        // Non-blocking reads plus poll(2), as the capture threads read.
        let (cap, failed) = match cap.setnonblock() {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let mut inline = Inline {
            cap,
            link: info.link,
            stats,
            last_stats: Instant::now(),
            reopen,
            joined,
        };
        if let Some(e) = failed {
            inline.lost(e);
        }
        inline
    }

    /// The source's counters (shared: they may be read from any thread).
    pub fn stats(&self) -> &Arc<SourceStats> {
        &self.stats
    }

    /// True once the device failed for good (its error is in the source's counters): a
    /// device that is reopened is down for a while, never ended.
    pub fn ended(&self) -> bool {
        self.cap.is_none() && self.reopen.is_none()
    }

    /// Down, with reopening: waits until the next attempt is due (at most `wait`), then
    /// tries to open the device again; true when it is back.
    fn revive(&mut self, wait: Duration) -> bool {
        let Some(r) = self.reopen.as_mut() else {
            std::thread::sleep(wait.min(FLUSH_INTERVAL));
            return false;
        };
        let now = Instant::now();
        if now < r.next_try {
            std::thread::sleep((r.next_try - now).min(wait));
            return false;
        }
        let group = self.joined.group;
        let opened = open_device(&r.name, &r.opts)
            .map_err(|e| open_error_text(&e))
            .and_then(|(_, c)| {
                // A lane joins its group again; its frames start after.
                if let Some(g) = group {
                    fanout::join(c.as_fd(), g, r.opts.roce_port)
                        .map_err(|e| format!("PACKET_FANOUT: {e}"))?;
                }
                c.setnonblock().map_err(|e| e.to_string())
            });
        match opened {
            Ok(c) => {
                if group.is_some() {
                    self.joined.start_ns = now_ns();
                }
                self.link = LinkType::from_linktype(c.get_datalink().0 as u32);
                self.cap = Some(c);
                r.opened = Instant::now();
                self.stats.came_back();
                true
            }
            Err(e) => {
                r.next_try = Instant::now() + r.backoff.next();
                self.stats.set_error(Some(e));
                false
            }
        }
    }

    /// The handle failed: with reopening, down until [`Inline::revive`] brings it back.
    fn lost(&mut self, why: String) {
        self.stats.set_error(Some(why));
        self.cap = None;
        if let Some(r) = self.reopen.as_mut() {
            self.stats.went_down();
            r.backoff.was_up(r.opened.elapsed());
            r.next_try = Instant::now() + r.backoff.next();
            if let Some(p) = self.stats.pcap_stats() {
                r.base = p;
            }
        }
    }

    /// libpcap's counts of the handles closed before the current one.
    fn base(&self) -> PcapStats {
        self.reopen
            .as_ref()
            .map_or_else(PcapStats::default, |r| r.base)
    }

    /// Waits, for at most `max`, until the device has frames to read (poll(2)), or, while
    /// a lost device is down, until its next attempt to be opened is due: for a caller
    /// that waits without holding what [`Inline::pump`] feeds.
    pub fn wait_ready(&self, max: Duration) {
        match (&self.cap, &self.reopen) {
            (Some(cap), _) => {
                let ms = max.as_millis().clamp(1, u128::from(u16::MAX)) as u16;
                let mut fds = [PollFd::new(cap.as_fd(), PollFlags::POLLIN)];
                let _ = poll(&mut fds, ms);
            }
            (None, Some(r)) => {
                let now = Instant::now();
                std::thread::sleep(r.next_try.saturating_duration_since(now).min(max));
            }
            (None, None) => std::thread::sleep(max),
        }
    }

    /// Hands every frame the device delivers to `f`, straight from libpcap's buffer,
    /// for about `wait` (waiting in poll(2) while the device is idle), or until `f`
    /// breaks (`Break`) or the device fails (`Continue`, and [`Inline::ended`] unless it
    /// is reopened). While a lost device is down, waits for the next attempt to open it.
    pub fn pump(
        &mut self,
        wait: Duration,
        mut f: impl FnMut(&Frame<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.cap.is_none() && !self.revive(wait) {
            return ControlFlow::Continue(());
        }
        let base = self.base();
        let start_ns = self.joined.start_ns;
        let Some(cap) = self.cap.as_mut() else {
            return ControlFlow::Continue(());
        };
        let start = Instant::now();
        let mut n = 0u64;
        let mut since_clock = 0u32;
        let mut failed = None;
        let mut flow = ControlFlow::Continue(());
        loop {
            match cap.next_packet() {
                Ok(p) => {
                    let h = p.header;
                    // Nanosecond precision was asked for (see the capture thread).
                    let ts_ns = (h.ts.tv_sec as u64)
                        .wrapping_mul(1_000_000_000)
                        .wrapping_add(h.ts.tv_usec as u64);
                    if ts_ns < start_ns {
                        // A lane's frame from before its group was whole: every lane had it.
                        continue;
                    }
                    n += 1;
                    flow = f(&Frame {
                        ts_ns,
                        link: self.link,
                        data: p.data,
                        orig_len: h.len,
                        iface: 0,
                        source: 0,
                    });
                    if flow.is_break() {
                        break;
                    }
                    since_clock += 1;
                    if since_clock >= CLOCK_EVERY {
                        since_clock = 0;
                        if start.elapsed() >= wait {
                            break;
                        }
                    }
                }
                Err(pcap::Error::TimeoutExpired | pcap::Error::NoMorePackets) => {
                    let left = wait.saturating_sub(start.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    let ms = left.min(FLUSH_INTERVAL).as_millis().max(1) as u16;
                    let mut fds = [PollFd::new(cap.as_fd(), PollFlags::POLLIN)];
                    let _ = poll(&mut fds, ms);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.stats.received.fetch_add(n, Ordering::Relaxed);
        if failed.is_some() || self.last_stats.elapsed() >= Duration::from_millis(500) {
            read_pcap_stats(cap, base, &self.stats);
            self.last_stats = Instant::now();
        }
        if let Some(e) = failed {
            self.lost(e.to_string());
        }
        flow
    }

    /// At the end: libpcap's final statistics into the source's counters.
    pub fn finish(mut self) {
        let base = self.base();
        if let Some(cap) = self.cap.as_mut() {
            read_pcap_stats(cap, base, &self.stats);
        }
    }
}
