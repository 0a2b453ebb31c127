//! A live source's thread: reads its libpcap handle into batches and, when the handle
//! fails and [`LiveOptions::reopen`] is on, reports the source down, keeps sending
//! heartbeats and opens the device again with backoff.

use super::{
    fanout, now_ns, open_device, Ctx, Joined, LiveOptions, OpenError, PcapStats, SourceStats,
    FLUSH_INTERVAL, REOPEN_FIRST, REOPEN_MAX,
};
use crate::capture::merge::Batch;
use crate::capture::Frame;
use dissectors::LinkType;
use nix::poll::{poll, PollFd, PollFlags};
use pcap::{Active, Capture};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(super) fn read_pcap_stats(cap: &mut Capture<Active>, base: PcapStats, st: &SourceStats) {
    if let Ok(s) = cap.stats() {
        let mut g = st
            .pcap
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Earlier handles' counts stay in: the counters never go back after a reopen.
        *g = Some(PcapStats {
            received: base.received + u64::from(s.received),
            kernel_dropped: base.kernel_dropped + u64::from(s.dropped),
            if_dropped: base.if_dropped + u64::from(s.if_dropped),
        });
    }
}

/// What a capture thread needs to open its device again.
pub(super) struct Device {
    pub(super) name: String,
    pub(super) opts: LiveOptions,
    /// How far behind now an idle source's watermark stays.
    pub(super) margin: Duration,
    /// Its lane's group, if it is a lane, and where its frames start.
    pub(super) joined: Joined,
}

/// Opens the device again; a lane joins its group again, and its frames start after.
fn reopen(dev: &Device, run: &mut Run) -> Result<Capture<Active>, String> {
    let (_, c) = open_device(&dev.name, &dev.opts).map_err(|e| open_error_text(&e))?;
    if let Some(g) = dev.joined.group {
        fanout::join(c.as_fd(), g, dev.opts.roce_port)
            .map_err(|e| format!("PACKET_FANOUT: {e}"))?;
        run.start_ns = now_ns();
    }
    Ok(c)
}

fn cap_link(cap: &Capture<Active>) -> LinkType {
    LinkType::from_linktype(cap.get_datalink().0 as u32)
}

/// The waits between attempts to reopen a lost device: [`REOPEN_FIRST`] doubling to
/// [`REOPEN_MAX`]; back to the first once the device stayed up for [`REOPEN_MAX`].
#[derive(Debug)]
pub(super) struct Backoff(Duration);

impl Backoff {
    pub(super) fn new() -> Self {
        Backoff(REOPEN_FIRST)
    }
    /// The wait before the next attempt (and doubles the one after).
    pub(super) fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(REOPEN_MAX);
        d
    }
    /// The device was up this long before it failed again.
    pub(super) fn was_up(&mut self, d: Duration) {
        if d >= REOPEN_MAX {
            self.0 = REOPEN_FIRST;
        }
    }
}

/// The state of a capture thread that outlives one libpcap handle.
struct Run {
    batch: Batch,
    last_ts: u64,
    /// libpcap's counts of the handles closed before the current one.
    base: PcapStats,
    /// Frames stamped earlier are skipped (a lane's, before its group was whole).
    start_ns: u64,
}

pub(super) fn run_device(cap: Capture<Active>, link: LinkType, dev: &Device, ctx: Ctx) {
    let mut run = Run {
        batch: Batch::new(ctx.source, ctx.batch_frames),
        last_ts: 0,
        base: PcapStats::default(),
        start_ns: dev.joined.start_ns,
    };
    let mut cap = Some((cap, link));
    let mut backoff = Backoff::new();
    while let Some((c, link)) = cap.take() {
        let opened = Instant::now();
        let res = capture(c, link, dev.margin, &ctx, &mut run);
        let Err(why) = res else { break };
        ctx.stats.set_error(Some(why.to_string()));
        if !dev.opts.reopen {
            break;
        }
        ctx.stats.went_down();
        backoff.was_up(opened.elapsed());
        // Down: wait, try again, and say meanwhile that nothing came.
        loop {
            if !idle_until(Instant::now() + backoff.next(), dev.margin, &ctx, &mut run) {
                break;
            }
            match reopen(dev, &mut run) {
                Ok(c) => {
                    let l = cap_link(&c);
                    cap = Some((c, l));
                    ctx.stats.came_back();
                    break;
                }
                Err(e) => ctx.stats.set_error(Some(e)),
            }
        }
    }
    run.batch.watermark_ns = u64::MAX;
    run.batch.last = true;
    let _ = ctx.offer(std::mem::replace(&mut run.batch, Batch::new(ctx.source, 0)));
}

pub(super) fn open_error_text(e: &OpenError) -> String {
    match e {
        OpenError::Device { message, .. } => message.clone(),
        OpenError::Filter {
            filter, message, ..
        } => format!("filter '{filter}': {message}"),
        OpenError::Lanes { why, .. } => why.clone(),
    }
}

/// Sends heartbeats until `until` (a lost device delivers nothing: the merger must not
/// wait for it); false when asked to stop or the consumer is gone.
fn idle_until(until: Instant, margin: Duration, ctx: &Ctx, run: &mut Run) -> bool {
    while Instant::now() < until {
        if ctx.stop.load(Ordering::Relaxed) {
            return false;
        }
        let mut b = Batch::new(ctx.source, 0);
        b.watermark_ns = now_ns()
            .saturating_sub(margin.as_nanos() as u64)
            .max(run.last_ts);
        if !ctx.offer(b) {
            return false;
        }
        std::thread::sleep(FLUSH_INTERVAL);
    }
    !ctx.stop.load(Ordering::Relaxed)
}

/// Captures from one handle until asked to stop (`Ok`) or the handle fails (`Err`,
/// libpcap's error). The batch being filled stays in `run` across handles.
fn capture(
    cap: Capture<Active>,
    link: LinkType,
    margin: Duration,
    ctx: &Ctx,
    run: &mut Run,
) -> Result<(), pcap::Error> {
    // Non-blocking reads plus poll(2): libpcap 1.10's blocking read does not return on
    // its timeout in immediate mode, and an idle device must still send heartbeats.
    let mut cap = cap.setnonblock()?;
    let mut last_stats = Instant::now();
    let received = &ctx.stats.received;
    // The capture's own clock decides when a busy source hands its batch over: the
    // timestamp (from the pcap header) of the batch's first frame, not a clock call per
    // frame (that was 10-15 % of the live CPU). An idle source hands over what it has.
    let mut batch_start_ns = None::<u64>;
    // Frames read and not yet added to `received` (one atomic add per batch).
    let mut unsent = 0u64;
    let poll_ms = FLUSH_INTERVAL.as_millis() as u16;
    let mut failed = None;
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
                if ts_ns < run.start_ns {
                    // A lane's frame from before its group was whole: every lane had it.
                    continue;
                }
                run.last_ts = run.last_ts.max(ts_ns);
                run.batch.push(&Frame {
                    ts_ns,
                    link,
                    data: p.data,
                    orig_len: h.len,
                    iface: 0,
                    source: ctx.source,
                });
                unsent += 1;
                batch_start_ns.get_or_insert(ts_ns);
                false
            }
            Err(pcap::Error::TimeoutExpired | pcap::Error::NoMorePackets) => true,
            Err(e) => {
                failed = Some(e);
                // Whatever was read before the failure still goes out.
                true
            }
        };
        let batch = &mut run.batch;
        let due = batch_start_ns
            .is_some_and(|t| run.last_ts.saturating_sub(t) >= FLUSH_INTERVAL.as_nanos() as u64);
        if batch.len() >= ctx.batch_frames || due || idle {
            received.fetch_add(unsent, Ordering::Relaxed);
            unsent = 0;
            batch_start_ns = None;
            // Idle: libpcap had nothing ready, so anything later is stamped after now
            // minus a margin for frames in a block the kernel has not handed over yet.
            let wm = if idle {
                now_ns()
                    .saturating_sub(margin.as_nanos() as u64)
                    .max(run.last_ts)
            } else {
                run.last_ts
            };
            if !batch.is_empty() || idle {
                // An empty heartbeat allocates nothing; a filled batch is handed over.
                let mut b = if batch.is_empty() {
                    Batch::new(ctx.source, 0)
                } else {
                    std::mem::replace(batch, Batch::new(ctx.source, ctx.batch_frames))
                };
                b.watermark_ns = wm;
                if !ctx.offer(b) {
                    return Ok(());
                }
            }
            if last_stats.elapsed() >= Duration::from_millis(500) {
                read_pcap_stats(&mut cap, run.base, &ctx.stats);
                last_stats = Instant::now();
            }
        }
        if failed.is_some() {
            break;
        }
        if idle {
            let mut fds = [PollFd::new(cap.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, poll_ms);
        }
    }
    received.fetch_add(unsent, Ordering::Relaxed);
    read_pcap_stats(&mut cap, run.base, &ctx.stats);
    if let Some(p) = ctx.stats.pcap_stats() {
        run.base = p;
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_bound_and_restarts_after_a_long_run() {
        let mut b = Backoff::new();
        let got: Vec<u64> = (0..7).map(|_| b.next().as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30]);
        b.was_up(Duration::from_secs(5));
        assert_eq!(b.next().as_secs(), 30, "a short run keeps the long wait");
        b.was_up(REOPEN_MAX);
        assert_eq!(b.next().as_secs(), 1);
    }
}
