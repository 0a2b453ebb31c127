//! Reading files on one thread, analyzing on another ([`Pipeline::read_files`] with a
//! [`Sink::detached`](super::Sink::detached) sink, on a machine with two cores or more).
//!
//! A reading thread (`rocetap-read`) reads and decodes each frame into a batch of
//! [`BATCH`] frames; the calling thread analyzes the batches in the order they were
//! filled. [`SLOTS`] batches go round, so nothing is allocated per frame. The analyzer sees
//! the frames in the order they were read, one at a time, exactly as on one thread: only
//! the time they take changes (reading and decoding, about half of a run with a hundred
//! QPs, overlap the analysis).
//!
//! The analysis stays on the calling thread on purpose: what it allocates comes from the
//! same `malloc` arena as the rest of the run, which frees it at the end. Analyzing on a
//! new thread put every flow's rings in a second arena, slower to grow and to free from
//! (with 50,000 QPs, the end of the run took a quarter longer).
//!
//! A batch is handed over by a counter, not a channel: a thread that finds nothing to do
//! spins, then yields, then parks until the other wakes it, which the other does only
//! when it is parked. Parking and waking for every batch (a channel's way) cost a system
//! call and a context switch each, which with thousands of batches a second was a fifth
//! of a run; parking when there is nothing to do keeps a slow pipe from costing a core.
//!
//! The analysis warms each coming frame's flow into its cache a few frames ahead
//! (`crate::analysis::warm`), as the one-thread read ahead does, within each batch.
//!
//! Contract, for whoever changes this file or the analyzer:
//! - Threads: one scoped reading thread per run, joined before [`Pipeline::read_files`]
//!   returns (a panic on it is resumed on the caller's thread); the analyzer's own
//!   helper thread (`crate::analysis::store`) is separate. A reading thread that cannot
//!   be started is an error ([`InputError::Thread`](crate::capture::input::InputError::Thread)), not a silent fall back to one thread.
//! - The analyzer is only ever called from the calling thread, frame by frame in read
//!   order: its results are those of the one-thread pipeline, byte for byte (the tests of
//!   `lookahead` compare them).
//! - Either side ending (input done, analysis stopped or panicked) marks the ring closed
//!   or gone (`EndOnDrop`) and wakes the other, so neither waits forever.
//! - No `unsafe` here: batches are handed over under a `Mutex` each, ordered by the
//!   counters. The cache hints (`crate::prefetch`) change only how long a load or store
//!   waits, never what it reads or writes.

use super::{Pipeline, AHEAD, WARM_STEPS};
use crate::analysis::{Analyzer, Hint};
use crate::capture::input::{for_each_frame_of, CutShort, InputError};
use crate::prefetch;
use dissectors::{Decoded, LinkType};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::Duration;

/// Frames per batch: enough that handing one over costs little per frame (a frame
/// decoded is about 950 bytes, of which the analysis reads a few hundred).
pub const BATCH: usize = 256;

/// Batches going round: one being filled, one analyzed, the rest waiting. Sixteen (about
/// 3.8 MB of decoded frames) rather than eight: a slot comes back to the reader after its
/// lines left the analysis core's own caches, which makes them quicker to take back.
/// `--jobs 2`, release build, wall (6 runs each, twice, alternating): `clean-rc` 2M
/// frames 0.146 -> 0.137 s, 128 QPs 0.069-0.072 -> 0.066 s, 8,192 QPs 0.108 s both.
const SLOTS: usize = 16;

/// A frame read and decoded, for the analysis thread.
struct Item {
    ts: u64,
    iface: u32,
    decoded: Decoded,
    /// Its hint's first part, made by the reader while the analysis warms (`Ring::warm`).
    hint: Option<Hint>,
}

/// Frames `items[..len]`.
struct Batch {
    items: Box<[Item]>,
    len: usize,
}

/// What the two threads share. Batch `n` is filled in slot `n % SLOTS`; `filled` and
/// `analyzed` count batches. The reader fills slot `filled % SLOTS` only while fewer than
/// `SLOTS` batches are filled and not analyzed, so the two never want the same slot (its
/// lock is never waited for: it only lets the slot move between threads in safe code).
struct Ring {
    slots: Vec<Mutex<Batch>>,
    filled: AtomicUsize,
    analyzed: AtomicUsize,
    /// The reader is done: no batch after `filled` will come.
    closed: AtomicBool,
    /// The analysis thread ended (normally only after `closed`).
    gone: AtomicBool,
    /// The analysis warms coming frames (it holds [`crate::pipeline::WARM_FROM`] flows or
    /// more): the reader then makes each frame's hint ([`Hint::of`], a function of the
    /// frame alone), work taken off the analysis. That helps while flows keep appearing
    /// (8,192 QPs: the first 100,000-200,000 frames, where the analysis is the slower
    /// side); afterwards the reader is the slower side again, and making the hints on
    /// whichever side had time measured no different.
    warm: AtomicBool,
    reader: Waiter,
    analysis: Waiter,
}

impl Ring {
    fn slot(&self, n: usize) -> MutexGuard<'_, Batch> {
        self.slots[n % SLOTS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// One side's way of waiting for the other: spinning briefly, then yielding the core a
/// few times, then parked until the other side wakes it (or [`NAP`] passes). The other
/// side wakes it only when it is parked: batch after batch, neither thread makes a
/// system call to hand one over.
struct Waiter {
    thread: OnceLock<Thread>,
    parked: AtomicBool,
}

/// The longest a parked thread sleeps before it looks again (a missed wake costs this).
const NAP: Duration = Duration::from_millis(1);

impl Waiter {
    fn new() -> Self {
        Waiter {
            thread: OnceLock::new(),
            parked: AtomicBool::new(false),
        }
    }

    /// Waits until `ready` holds; the calling thread must be this side's thread.
    fn wait_until(&self, mut ready: impl FnMut() -> bool) {
        let mut tries = 0u32;
        while !ready() {
            tries += 1;
            if tries < 64 {
                std::hint::spin_loop();
            } else if tries < 96 {
                std::thread::yield_now();
            } else {
                self.parked.store(true, Ordering::SeqCst);
                // Looked at again after saying so: a wake that came in between is not lost.
                if !ready() {
                    std::thread::park_timeout(NAP);
                }
                self.parked.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Wakes this side if it is parked.
    fn wake(&self) {
        if self.parked.load(Ordering::SeqCst) {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
        }
    }
}

/// Sets its flag when dropped and wakes the other side: a thread's end, even by a panic,
/// is seen by the other.
struct EndOnDrop<'a>(&'a AtomicBool, &'a Waiter);

impl Drop for EndOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        self.1.wake();
    }
}

impl Pipeline {
    /// [`Pipeline::read_files`] for a detached sink: see the module documentation.
    pub(super) fn read_split(
        &mut self,
        paths: &[PathBuf],
        quiet: bool,
    ) -> Result<Vec<CutShort>, InputError> {
        let blank = dissectors::decode(LinkType::Ethernet, &[], 0, &self.dcfg);
        let ring = Ring {
            slots: (0..SLOTS)
                .map(|_| {
                    let items = (0..BATCH)
                        .map(|_| Item {
                            ts: 0,
                            iface: 0,
                            decoded: blank,
                            hint: None,
                        })
                        .collect();
                    Mutex::new(Batch { items, len: 0 })
                })
                .collect(),
            filled: AtomicUsize::new(0),
            analyzed: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            gone: AtomicBool::new(false),
            warm: AtomicBool::new(false),
            reader: Waiter::new(),
            analysis: Waiter::new(),
        };
        let _ = ring.analysis.thread.set(std::thread::current());
        let Pipeline {
            dcfg,
            an,
            warm_from,
            frames,
            bytes,
            ..
        } = self;
        let warm_from = *warm_from;
        let ring = &ring;
        std::thread::scope(|s| {
            let reader = std::thread::Builder::new()
                .name("rocetap-read".into())
                .spawn_scoped(s, move || {
                    let _ = ring.reader.thread.set(std::thread::current());
                    let _closed = EndOnDrop(&ring.closed, &ring.analysis);
                    read(paths, quiet, dcfg, ring, frames, bytes)
                })
                .map_err(InputError::Thread)?;
            {
                let _gone = EndOnDrop(&ring.gone, &ring.reader);
                analyze(an, warm_from, ring);
            }
            match reader.join() {
                Ok(res) => res,
                Err(p) => std::panic::resume_unwind(p),
            }
        })
    }
}

/// How many frames ahead of the one being decoded the reader takes a slot's lines for
/// writing (`prefetch::own`), and the analysis loads them (`prefetch::lines`). Without
/// it, decoding into a slot the analysis thread read on the previous turn stalled on
/// every line (the stores wait for the other core to give the line up): the reading
/// thread took longer than a whole run on one thread. `clean-rc`, 2M frames,
/// `--jobs 2`, wall: 0.225 s without, 0.146-0.154 s at 2-8 frames ahead, 0.168-0.187 s at
/// 16-40 (the lines come too early and are taken back).
const ITEM_AHEAD: usize = 6;

/// The reading thread: reads and decodes every frame of `paths` into the batches, counting
/// them in `frames` and `bytes`, until the input ends (or the analysis is gone).
fn read(
    paths: &[PathBuf],
    quiet: bool,
    dcfg: &dissectors::Config,
    ring: &Ring,
    frames: &mut u64,
    bytes: &mut u64,
) -> Result<Vec<CutShort>, InputError> {
    let mut n = 0;
    let mut b = Some(ring.slot(0));
    let own = prefetch::can_own();
    let res = for_each_frame_of(paths, quiet, |f| {
        let Some(g) = b.as_mut() else {
            return ControlFlow::Break(());
        };
        *frames += 1;
        *bytes += f.data.len() as u64;
        let at = g.len;
        if let Some(ahead) = g.items.get(at + ITEM_AHEAD) {
            prefetch::own(ahead, own);
        }
        let it = &mut g.items[at];
        it.ts = f.ts_ns;
        it.iface = f.iface_id().get();
        dissectors::decode_into(f.link, f.data, f.orig_len, dcfg, &mut it.decoded);
        it.hint = ring
            .warm
            .load(Ordering::Relaxed)
            .then(|| Hint::of(&it.decoded));
        g.len += 1;
        if g.len < BATCH {
            return ControlFlow::Continue(());
        }
        n += 1;
        // The guard goes before the count says the batch is there.
        drop(b.take());
        b = hand_over(ring, n);
        if b.is_none() {
            // The analysis ended early (it panicked: the panic goes on from there).
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    if b.take().is_some_and(|g| g.len > 0) {
        ring.filled.store(n + 1, Ordering::SeqCst);
    }
    res
}

/// Publishes batch `n - 1` (its slot's guard dropped) and returns the guard of slot `n`
/// once that slot's previous batch was analyzed; `None` if the analysis thread is gone.
fn hand_over(ring: &Ring, n: usize) -> Option<MutexGuard<'_, Batch>> {
    ring.filled.store(n, Ordering::SeqCst);
    ring.analysis.wake();
    ring.reader.wait_until(|| {
        n - ring.analyzed.load(Ordering::SeqCst) < SLOTS || ring.gone.load(Ordering::SeqCst)
    });
    if ring.gone.load(Ordering::SeqCst) {
        return None;
    }
    let mut next = ring.slot(n);
    next.len = 0;
    Some(next)
}

/// The analysis thread: every batch in order, until the reader is done.
fn analyze(an: &mut Analyzer, warm_from: usize, ring: &Ring) {
    let mut hints = [Hint::NONE; BATCH];
    let mut n = 0;
    loop {
        let mut more = false;
        ring.analysis.wait_until(|| {
            // `closed` first: a batch published before it is then seen below.
            let closed = ring.closed.load(Ordering::SeqCst);
            more = ring.filled.load(Ordering::SeqCst) > n;
            more || closed
        });
        if !more {
            return;
        }
        {
            let b = ring.slot(n);
            let items = &b.items[..b.len];
            let warm = an.live_flows() >= warm_from;
            ring.warm.store(warm, Ordering::Relaxed);
            if !warm {
                for (i, it) in items.iter().enumerate() {
                    load_ahead(items, i);
                    an.ingest(it.ts, it.iface, &it.decoded);
                }
            } else {
                warmed(an, items, &mut hints);
            }
        }
        n += 1;
        ring.analyzed.store(n, Ordering::SeqCst);
        // A parked reader is woken once half the batches are free: it then has several
        // to fill before it waits again.
        if ring.filled.load(Ordering::SeqCst) - n <= SLOTS / 2 {
            ring.reader.wake();
        }
    }
}

/// Starts loading the frame [`ITEM_AHEAD`] after `items[i]` into this core's cache.
#[inline]
fn load_ahead(items: &[Item], i: usize) {
    if let Some(ahead) = items.get(i + ITEM_AHEAD) {
        prefetch::lines(ahead, 0, std::mem::size_of::<Item>());
    }
}

/// Analyzes `items` in order, each frame's hint started [`AHEAD`] − 1 frames before it is
/// analyzed and taken a step further at [`WARM_STEPS`] (as `Pipeline::feed_ahead`).
fn warmed(an: &mut Analyzer, items: &[Item], hints: &mut [Hint; BATCH]) {
    let n = items.len();
    let [slot, flow, peer] = WARM_STEPS;
    for j in 0..n + AHEAD - 1 {
        load_ahead(items, j);
        if let Some(it) = items.get(j) {
            hints[j] = match it.hint {
                Some(h) => {
                    an.warm_home(&h);
                    h
                }
                None => an.warm_index(&it.decoded),
            };
        }
        if let Some(k) = j.checked_sub(slot).filter(|&k| k < n) {
            an.warm_slot(&items[k].decoded, &mut hints[k]);
        }
        if let Some(k) = j.checked_sub(flow).filter(|&k| k < n) {
            an.warm_flow(&hints[k]);
        }
        if let Some(k) = j.checked_sub(peer).filter(|&k| k < n) {
            an.warm_peer(&hints[k]);
        }
        if let Some(k) = j.checked_sub(AHEAD - 1) {
            let it = &items[k];
            an.ingest_warmed(it.ts, it.iface, &it.decoded, &hints[k]);
        }
    }
}
