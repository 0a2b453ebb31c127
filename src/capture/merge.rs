//! The one merger: puts the frames of several sources back into timestamp order. Live
//! devices hand it owned [`Batch`]es from their threads (with watermarks, so a quiet
//! device holds the others back only briefly); several files fill it in the consumer's
//! own thread (see [`for_each_frame_of`](super::input::for_each_frame_of)). Ties go to
//! the lower source index, so the order of the inputs decides between equal timestamps.
//! Per-frame work allocates nothing: a batch's frames share one buffer.

use super::Frame;
use dissectors::LinkType;
use std::collections::VecDeque;

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
    /// Index of the source (in [`LiveSource::sources`](super::live::LiveSource::sources),
    /// or among the inputs of [`for_each_frame_of`](super::input::for_each_frame_of)).
    pub source: u32,
    data: Vec<u8>,
    meta: Vec<Meta>,
    /// No later frame of this source has a smaller timestamp.
    pub watermark_ns: u64,
    /// The source has ended; nothing follows.
    pub last: bool,
}

impl Batch {
    /// An empty batch of `source` with room for `frames` frames.
    pub fn new(source: u32, frames: usize) -> Self {
        Batch {
            source,
            data: Vec::with_capacity(frames * 256),
            meta: Vec::with_capacity(frames),
            watermark_ns: 0,
            last: false,
        }
    }
    /// Appends a copy of `f` (its bytes go to the batch's one buffer).
    pub fn push(&mut self, f: &Frame<'_>) {
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
    /// Frames in the batch.
    pub fn len(&self) -> usize {
        self.meta.len()
    }
    /// No frames (a heartbeat or an end marker).
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
    /// Every frame, in order.
    pub fn frames(&self) -> impl Iterator<Item = Frame<'_>> {
        (0..self.len()).map(|i| self.frame(i))
    }
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
    /// A merger of `sources` sources, none heard from yet.
    pub fn new(sources: usize) -> Self {
        Merger {
            queues: (0..sources).map(|_| VecDeque::new()).collect(),
            watermark: vec![0; sources],
            done: vec![false; sources],
        }
    }

    /// Queues a batch (and its watermark, and its end marker).
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

    /// True when source `s` has no frame queued.
    pub fn is_empty(&self, s: usize) -> bool {
        self.queues[s].is_empty()
    }

    /// True when source `s` has sent its end marker.
    pub fn ended(&self, s: usize) -> bool {
        self.done[s]
    }

    fn head(&self, s: usize) -> Option<u64> {
        self.queues[s].front().map(|(b, i)| b.meta[*i].ts_ns)
    }

    /// Hands every releasable frame to `f`, in timestamp order, until `f` breaks.
    /// With `all`, releases everything queued regardless of watermarks (at the end).
    ///
    /// Frames go in runs: once the source with the earliest frame is found, its frames
    /// follow one another without looking at the other sources again for as long as they
    /// come before every other source's first queued frame and within every waiting
    /// source's watermark (neither changes while one source's frames are released).
    pub fn drain(
        &mut self,
        all: bool,
        mut f: impl FnMut(&Frame<'_>) -> std::ops::ControlFlow<()>,
    ) -> std::ops::ControlFlow<()> {
        if self.queues.len() == 1 {
            // One source: nothing to order, nothing to wait for.
            return self.drain_sources(&mut f);
        }
        loop {
            let Some((ts, s)) = (0..self.queues.len())
                .filter_map(|s| self.head(s).map(|t| (t, s)))
                .min()
            else {
                return std::ops::ControlFlow::Continue(());
            };
            // The run ends before the first frame of another source that sorts before
            // it (an equal time goes to the lower source index)...
            let next = (0..self.queues.len())
                .filter(|&o| o != s)
                .filter_map(|o| self.head(o).map(|t| (t, o)))
                .min();
            // ...and past what a source with nothing queued may still send.
            let mut waits = u64::MAX;
            if !all {
                for o in 0..self.queues.len() {
                    if o != s && !self.done[o] && self.queues[o].is_empty() {
                        waits = waits.min(self.watermark[o]);
                    }
                }
                if waits < ts {
                    return std::ops::ControlFlow::Continue(());
                }
            }
            let q = &mut self.queues[s];
            while let Some((b, i)) = q.front_mut() {
                let t = b.meta[*i].ts_ns;
                if t > waits || next.is_some_and(|n| (t, s) > n) {
                    break;
                }
                let flow = f(&b.frame(*i));
                *i += 1;
                if *i >= b.len() {
                    q.pop_front();
                }
                flow?;
            }
        }
    }
}

impl Merger {
    /// Hands every queued frame to `f`, source after source, each source's frames in
    /// their order, whole batches at a time, until `f` breaks: for a consumer that
    /// analyzes every source on its own (the agent), where the order across sources does
    /// not matter and no source waits for another's watermark.
    pub fn drain_sources(
        &mut self,
        mut f: impl FnMut(&Frame<'_>) -> std::ops::ControlFlow<()>,
    ) -> std::ops::ControlFlow<()> {
        for q in &mut self.queues {
            while let Some((b, i)) = q.front_mut() {
                while *i < b.len() {
                    let flow = f(&b.frame(*i));
                    *i += 1;
                    if flow.is_break() {
                        if *i >= b.len() {
                            q.pop_front();
                        }
                        return flow;
                    }
                }
                q.pop_front();
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::ops::ControlFlow;

    pub(crate) fn batch(source: u32, ts: &[u64], wm: u64, last: bool) -> Batch {
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
    fn one_source_or_each_source_alone_is_released_at_once_in_order() {
        // One source: released without waiting for a watermark, whole batches in order.
        let mut m = Merger::new(1);
        m.push(batch(0, &[3, 4], 0, false));
        m.push(batch(0, &[5], 0, false));
        assert_eq!(drain(&mut m, false), vec![(0, 3), (0, 4), (0, 5)]);
        // Several sources analyzed apart: each source's frames in order, nobody waits.
        let mut m = Merger::new(2);
        m.push(batch(1, &[1, 2], 0, false));
        m.push(batch(0, &[7, 8], 0, false));
        m.push(batch(0, &[9], 0, false));
        let mut got = Vec::new();
        let flow = m.drain_sources(|f| {
            got.push((f.source, f.ts_ns));
            if got.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(flow.is_break());
        assert_eq!(got, vec![(0, 7), (0, 8)]);
        let _ = m.drain_sources(|f| {
            got.push((f.source, f.ts_ns));
            ControlFlow::Continue(())
        });
        assert_eq!(got, vec![(0, 7), (0, 8), (0, 9), (1, 1), (1, 2)]);
        m.push(batch(0, &[], u64::MAX, true));
        m.push(batch(1, &[], u64::MAX, true));
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

    mod prop {
        use super::*;
        use proptest::prelude::*;

        /// The merger as it was before runs: every frame chosen alone, by looking at every
        /// source's first frame and every waiting source's watermark.
        #[derive(Default)]
        struct Reference {
            queues: Vec<std::collections::VecDeque<u64>>,
            watermark: Vec<u64>,
            done: Vec<bool>,
        }

        impl Reference {
            fn drain(&mut self, all: bool, mut budget: usize, out: &mut Vec<(u32, u64)>) {
                loop {
                    let Some((ts, s)) = (0..self.queues.len())
                        .filter_map(|s| self.queues[s].front().map(|t| (*t, s)))
                        .min()
                    else {
                        return;
                    };
                    let blocked = !all
                        && (0..self.queues.len()).any(|o| {
                            o != s
                                && !self.done[o]
                                && self.queues[o].is_empty()
                                && self.watermark[o] < ts
                        });
                    if blocked || budget == 0 {
                        return;
                    }
                    self.queues[s].pop_front();
                    out.push((s as u32, ts));
                    budget -= 1;
                }
            }
        }

        /// One step: a batch of a source (frames after its last, a watermark at or past
        /// its newest, maybe its end), or a drain that may stop after a few frames.
        #[derive(Clone, Debug)]
        enum Step {
            Push {
                source: usize,
                gaps: Vec<u64>,
                ahead: u64,
                last: bool,
            },
            Drain {
                all: bool,
                budget: usize,
            },
        }

        fn step(sources: usize) -> impl Strategy<Value = Step> {
            prop_oneof![
                (
                    0..sources,
                    proptest::collection::vec(0u64..4, 0..6),
                    0u64..5,
                    proptest::bool::weighted(0.1)
                )
                    .prop_map(|(source, gaps, ahead, last)| Step::Push {
                        source,
                        gaps,
                        ahead,
                        last
                    }),
                (any::<bool>(), 0usize..8).prop_map(|(all, budget)| Step::Drain { all, budget }),
            ]
        }

        proptest! {
            /// Runs release exactly what frame-by-frame choosing released, in the same
            /// order, whatever the batches, watermarks, ends and stops.
            #[test]
            fn runs_release_what_choosing_each_frame_released(
                sources in 2usize..5,
                steps in (2usize..5).prop_flat_map(|n| proptest::collection::vec(step(n), 1..40)),
            ) {
                let mut m = Merger::new(sources);
                let mut r = Reference {
                    queues: vec![Default::default(); sources],
                    watermark: vec![0; sources],
                    done: vec![false; sources],
                };
                let mut newest = vec![0u64; sources];
                let (mut got, mut want) = (Vec::new(), Vec::new());
                for st in steps {
                    match st {
                        Step::Push { source, gaps, ahead, last } => {
                            let source = source % sources;
                            if r.done[source] {
                                continue;
                            }
                            let mut ts = Vec::new();
                            for g in gaps {
                                newest[source] += g;
                                ts.push(newest[source]);
                            }
                            let wm = if last { u64::MAX } else { newest[source] + ahead };
                            newest[source] = newest[source].max(wm.min(u64::MAX / 2));
                            m.push(batch(source as u32, &ts, wm, last));
                            r.queues[source].extend(&ts);
                            r.watermark[source] = r.watermark[source].max(wm);
                            r.done[source] |= last;
                        }
                        Step::Drain { all, budget } => {
                            // The frame `f` breaks on was handed over: it counts.
                            let budget = budget.max(1);
                            let mut n = 0;
                            let _ = m.drain(all, |f| {
                                got.push((f.source, f.ts_ns));
                                n += 1;
                                if n == budget {
                                    ControlFlow::Break(())
                                } else {
                                    ControlFlow::Continue(())
                                }
                            });
                            r.drain(all, budget, &mut want);
                        }
                    }
                    prop_assert_eq!(&got, &want);
                }
            }
        }
    }
}
