//! One device read on the caller's own thread: no capture thread, no queue, no merge and
//! no copy — every frame is handed on straight from libpcap's buffer. This is the path of
//! a capture session with a single device (`rocetap capture -i X`, `analyze -i X`), where
//! there is nothing to merge; several devices, and the agent (which reopens lost
//! devices), keep a thread per device ([`Opened::start`]).
//!
//! Guarantees: frames come in capture order with the pcap header's timestamp; the
//! source's counters ([`SourceStats`]) are kept as a capture thread keeps them (received
//! per call, libpcap's statistics every 500 ms and at the end), so the status line and the
//! final report read the same; nothing is dropped by rocetap (there is no queue: a slow
//! consumer leaves frames in the kernel's ring, whose drops libpcap counts). A failing
//! handle ends the source with libpcap's words in [`SourceStats::error`].

use super::thread::read_pcap_stats;
use super::{LiveSource, Opened, PcapStats, SourceStats, FLUSH_INTERVAL};
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
}

impl Opened {
    /// With exactly one device and no reopening: the running source's description and
    /// counters (a [`LiveSource`] without threads; its queue is always empty) and the
    /// device to read with [`Inline::pump`]. Otherwise the sources unchanged, to
    /// [`Opened::start`].
    pub fn start_inline(mut self) -> Result<(LiveSource, Inline), Opened> {
        if self.sources.len() != 1 || self.opts.reopen {
            return Err(self);
        }
        let (info, cap) = self.sources.pop().expect("one source");
        let stats = Arc::new(SourceStats::default());
        stats.up.store(true, Ordering::Relaxed);
        let link = info.link;
        // Non-blocking reads plus poll(2), as the capture threads read.
        let cap = match cap.setnonblock() {
            Ok(c) => Some(c),
            Err(e) => {
                *stats
                    .error
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e.to_string());
                None
            }
        };
        // No thread sends anything: the receiver is disconnected from the start.
        let (_, rx) = sync_channel(1);
        let live = LiveSource {
            infos: vec![info],
            stats: vec![stats.clone()],
            rx,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        Ok((
            live,
            Inline {
                cap,
                link,
                stats,
                last_stats: Instant::now(),
            },
        ))
    }
}

impl Inline {
    /// True once the device failed (its error is in the source's counters).
    pub fn ended(&self) -> bool {
        self.cap.is_none()
    }

    /// Hands every frame the device delivers to `f`, straight from libpcap's buffer,
    /// for about `wait` (waiting in poll(2) while the device is idle), or until `f`
    /// breaks (`Break`) or the device fails (`Continue`, and [`Inline::ended`]).
    pub fn pump(
        &mut self,
        wait: Duration,
        mut f: impl FnMut(&Frame<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let Some(cap) = self.cap.as_mut() else {
            std::thread::sleep(wait.min(FLUSH_INTERVAL));
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
            read_pcap_stats(cap, PcapStats::default(), &self.stats);
            self.last_stats = Instant::now();
        }
        if let Some(e) = failed {
            *self
                .stats
                .error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e.to_string());
            self.cap = None;
        }
        flow
    }

    /// At the end: libpcap's final statistics into the source's counters.
    pub fn finish(mut self) {
        if let Some(cap) = self.cap.as_mut() {
            read_pcap_stats(cap, PcapStats::default(), &self.stats);
        }
    }
}
