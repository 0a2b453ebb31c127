//! Each source read, decoded, analyzed and recorded on a thread of its own, straight from
//! libpcap's buffer (no copy, no queue, no merge: sources are analyzed apart). The
//! analysis loop's thread takes a source's [`Work`] for its once-a-second publishing, a
//! `/report` or a dump; a thread holds it only while it reads frames that are there (it
//! waits for more without it), and gives it up within 64 frames when the loop asks
//! ([`Lane::lock`]).

use crate::agent::private::Privacy;
use crate::agent::recorder::Recorder;
use crate::analysis::Analyzer;
use crate::capture::live::{Inline, FLUSH_INTERVAL};
use crate::pipeline::Pipeline;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// What a source's thread updates and the loop reads.
pub(super) struct Work {
    /// Its decoder and analyzer.
    pub pipe: Pipeline,
    /// Its flight recorder.
    pub rec: Recorder,
}

/// One source's work, shared by its thread and the analysis loop.
pub(super) struct Lane {
    work: Mutex<Work>,
    /// The loop is waiting for the work: the thread lets go of it before it reads more.
    wanted: AtomicU32,
    /// The thread is gone: the device failed for good (or the loop stopped it).
    ended: AtomicBool,
}

impl Lane {
    pub(super) fn new(work: Work) -> Arc<Lane> {
        Arc::new(Lane {
            work: Mutex::new(work),
            wanted: AtomicU32::new(0),
            ended: AtomicBool::new(false),
        })
    }

    /// The source's work, for the loop: the thread finishes the frames in hand (at most 64)
    /// and waits until the guard is dropped.
    pub(super) fn lock(&self) -> MutexGuard<'_, Work> {
        self.wanted.fetch_add(1, Ordering::SeqCst);
        let g = self
            .work
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.wanted.fetch_sub(1, Ordering::SeqCst);
        g
    }

    /// True once the source's thread has ended.
    pub(super) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}

/// Records each frame the pipeline decoded, as [`Privacy`] keeps it.
pub(super) struct Recording<'a> {
    pub rec: &'a mut Recorder,
    pub privacy: &'a Privacy,
}

impl crate::pipeline::Sink for Recording<'_> {
    #[inline]
    fn after(
        &mut self,
        f: &crate::capture::Frame<'_>,
        d: Option<&dissectors::Decoded>,
        _: &Analyzer,
    ) -> ControlFlow<()> {
        self.rec.record(f, d, self.privacy);
        ControlFlow::Continue(())
    }
}

/// How long a thread that was asked to let go waits before it looks again.
const YIELD: Duration = Duration::from_micros(200);

/// Starts source `index`'s thread (`rocetap-src-INDEX`): it reads `src` into `lane` until
/// `stop` is set or the device fails for good.
pub(super) fn spawn(
    index: usize,
    mut src: Inline,
    lane: Arc<Lane>,
    privacy: Privacy,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("rocetap-src-{index}"))
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) && !src.ended() {
                if lane.wanted.load(Ordering::SeqCst) > 0 {
                    std::thread::sleep(YIELD);
                    continue;
                }
                // Waiting for frames without the work, so the loop never waits for a quiet
                // source; then what the ring holds (at most 256 frames a turn).
                src.wait_ready(FLUSH_INTERVAL);
                let mut w = lane
                    .work
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let Work { pipe, rec } = &mut *w;
                let mut sink = Recording {
                    rec,
                    privacy: &privacy,
                };
                let wanted = &lane.wanted;
                let mut n = 0u32;
                let _ = src.pump(Duration::ZERO, |f| {
                    let flow = pipe.feed(f, &mut sink);
                    n = n.wrapping_add(1);
                    // Every 64 frames, a look at whether the loop is waiting.
                    if n & 63 == 0 && wanted.load(Ordering::Relaxed) > 0 {
                        return ControlFlow::Break(());
                    }
                    flow
                });
            }
            src.finish();
            lane.ended.store(true, Ordering::SeqCst);
        })
}
