//! The analysis loop's once-a-second work: publish every source's state and the memory
//! budget's use, log what changed (sources lost and back, limits hit, counters starting
//! and stopping, capture drops), and dump when a rule holds.

use super::{budget, dump, topn, window, Loop, Published, SourceState, SourceStats, NOTABLE};
use crate::analysis::Report;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl Loop<'_> {
    /// Publishes every source's state and feeds the window.
    pub(super) fn publish(&mut self, stats: &[Arc<SourceStats>], shared: &Mutex<Published>) {
        let now = Instant::now();
        // Capture time goes on without frames: idle flows expire, gaps age (issue 39).
        let wall = std::time::UNIX_EPOCH
            .elapsed()
            .map_or(0, |d| d.as_nanos() as u64);
        let mut analyzer_bytes = 0u64;
        let mut recorded = 0u64;
        let mut states = Vec::with_capacity(self.lanes.len());
        let mut vals = Vec::new();
        for i in 0..self.lanes.len() {
            // The source's thread waits while its analysis is read.
            let mut w = self.lanes[i].lock();
            w.pipe.analyzer_mut().advance(wall);
            let an = w.pipe.analyzer();
            let snap = an.snapshot(an.events_recorded());
            let (live, events) = (an.live_flows(), an.events_recorded());
            // A lane's own name until the lanes are summed: its log lines say which.
            let mut s = SourceState {
                name: self.infos[i].label(),
                tracked: live as u64,
                untracked_packets: an.untracked_packets(),
                recorded_frames: w.rec.len() as u64,
                ..SourceState::default()
            };
            drop(w);
            recorded += s.recorded_frames;
            s.totals = snap.totals;
            s.latency = snap.latency;
            for sender in &snap.pfc {
                for pr in &sender.per_priority {
                    let e = &mut s.pfc[usize::from(pr.priority & 7)];
                    e.0 += pr.frames;
                    e.1 += pr.pause_ns as f64 / 1e9;
                }
            }
            if let Some(st) = stats.get(i) {
                s.received = st.received.load(Ordering::Relaxed);
                s.queue_dropped = st.queue_dropped.load(Ordering::Relaxed);
                let pc = st.pcap_stats().unwrap_or_default();
                s.kernel_dropped = pc.kernel_dropped;
                s.if_dropped = pc.if_dropped;
                s.error = st.error();
                s.up = st.up.load(Ordering::SeqCst);
                s.losses = st.losses.load(Ordering::SeqCst);
                s.reopens = st.reopens.load(Ordering::SeqCst);
                if !s.up {
                    s.error = Some(format!(
                        "down ({}), reopening",
                        s.error.as_deref().unwrap_or("lost")
                    ));
                }
            }
            let summaries = snap.flows.len().saturating_sub(live);
            analyzer_bytes += live as u64 * budget::FLOW_COST
                + events as u64 * budget::EVENT_COST
                + summaries as u64 * budget::SUMMARY_COST;
            let (top, other) = self.tops[i].update(now, &snap.flows, topn::totals(&snap.totals));
            s.top = top;
            s.other = other;
            let peers = &mut self.peers[i];
            peers.update(&snap.flows, self.cfg.topology.as_deref());
            s.peers = peers.series().to_vec();
            s.peer_flows_aggregated = peers.aggregated_flows;
            analyzer_bytes += peers.bytes();
            vals.push(window::values(&snap.totals));
            states.push(s);
        }
        let drops: u64 = states
            .iter()
            .map(|s| s.kernel_dropped + s.if_dropped + s.queue_dropped)
            .sum();
        self.window.push(now, window::sum(vals));
        self.note_drops(now, drops);
        self.note_sources(&states);
        let memory = self.memory(analyzer_bytes, recorded);
        let states = self.by_interface(states);
        let mut p = shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        p.sources = states;
        p.memory = memory;
        p.tick = now;
    }

    /// The lanes of each interface summed into one state (`SourceState::absorb`),
    /// named by the interface.
    fn by_interface(&self, states: Vec<SourceState>) -> Vec<SourceState> {
        let mut out: Vec<SourceState> = Vec::with_capacity(states.len());
        for (info, mut s) in self.infos.iter().zip(states) {
            match (info.lane, out.last_mut()) {
                (Some(l), Some(first)) if l.index > 0 => first.absorb(s),
                _ => {
                    s.name.clone_from(&info.name);
                    out.push(s);
                }
            }
        }
        out
    }

    /// Logs sources lost and back, and each limit of the budget a source hits (once);
    /// moves the analyzers' flow caps so that together they hold at most the plan's
    /// flows (each keeps what it has plus an even part of what is left).
    fn note_sources(&mut self, states: &[SourceState]) {
        for (i, s) in states.iter().enumerate() {
            let (was_up, losses) = self.seen[i];
            if s.losses > losses {
                self.log.event(
                    "source_lost",
                    &[
                        ("source", s.name.clone()),
                        ("error", s.error.clone().unwrap_or_default()),
                        ("losses", s.losses.to_string()),
                    ],
                );
            }
            if s.up && (!was_up || s.losses > losses) {
                self.log.event(
                    "source_back",
                    &[
                        ("source", s.name.clone()),
                        ("reopens", s.reopens.to_string()),
                    ],
                );
            }
            self.seen[i] = (s.up, s.losses);
            let hit = [
                ("flows", s.untracked_packets > 0),
                ("events", s.totals.events_dropped > 0),
                ("flow_summaries", s.totals.flow_summaries_dropped > 0),
            ];
            for (k, (what, now)) in hit.into_iter().enumerate() {
                if now && !self.limited[i][k] {
                    self.limited[i][k] = true;
                    self.log.event(
                        "memory_limit",
                        &[
                            ("source", s.name.clone()),
                            ("what", what.into()),
                            ("limit", budget::size(self.plan.limit)),
                        ],
                    );
                }
            }
        }
        let live: Vec<usize> = states.iter().map(|s| s.tracked as usize).collect();
        for (l, cap) in self
            .lanes
            .iter()
            .zip(budget::flow_caps(&live, self.plan.flows))
        {
            l.lock().pipe.analyzer_mut().set_max_flows(cap);
        }
    }

    /// The budget's parts in use (estimates from what each part holds) and the
    /// process' resident size.
    fn memory(&self, analyzer_bytes: u64, recorded: u64) -> crate::agent::state::MemoryState {
        let slot = u64::from(self.cfg.live.snaplen.max(1)) + budget::SLOT_META;
        let recorder = recorded * slot;
        let n = self.lanes.len() as u64;
        let capture = n * u64::from(self.plan.pcap_buffer);
        crate::agent::state::MemoryState {
            budget: self.plan.limit,
            shares: self.plan.shares.clone(),
            used: vec![
                ("recorder", recorder),
                ("analyzer", analyzer_bytes),
                ("report", self.report_bytes),
                ("capture", capture),
            ],
            resident: budget::resident_bytes(),
        }
    }

    fn note_drops(&mut self, now: Instant, total: u64) {
        self.drops.push_back((now, total));
        while self.drops.len() > 2 && now.duration_since(self.drops[1].0) >= self.window.span() {
            self.drops.pop_front();
        }
        let moved = self.drops.front().map_or(0, |f| total.saturating_sub(f.1));
        if moved > 0 && !self.dropping {
            self.log.event(
                "started",
                &[
                    ("what", "capture_drops".into()),
                    ("count", moved.to_string()),
                    ("window_s", self.window.span().as_secs().to_string()),
                ],
            );
        } else if moved == 0 && self.dropping {
            self.log
                .event("cleared", &[("what", "capture_drops".into())]);
        }
        self.dropping = moved > 0;
    }

    /// Logs counters starting and stopping in the window, and dumps when a rule holds.
    pub(super) fn judge(&mut self, shared: &Mutex<Published>) {
        let span = self.window.span().as_secs().to_string();
        for (i, key) in NOTABLE.iter().enumerate() {
            let v = self.window.value(key).unwrap_or(0.0);
            if v > 0.0 && !self.active[i] {
                self.log.event(
                    "started",
                    &[
                        ("what", (*key).into()),
                        ("count", crate::report::analyze::num(v)),
                        ("window_s", span.clone()),
                    ],
                );
            } else if v == 0.0 && self.active[i] {
                self.log.event(
                    "cleared",
                    &[("what", (*key).into()), ("window_s", span.clone())],
                );
            }
            self.active[i] = v > 0.0;
        }
        let held = self
            .cfg
            .dump_on
            .iter()
            .find(|r| {
                r.op.holds(self.window.value(&r.name).unwrap_or(0.0), r.value)
            })
            .cloned();
        let rising = held.is_some() && !self.holding;
        self.holding = held.is_some();
        let Some(rule) = held else { return };
        let limited = self
            .last_rule_dump
            .is_some_and(|t| t.elapsed() < self.cfg.dump_interval);
        if limited {
            if rising {
                shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .dumps
                    .suppressed += 1;
                self.log.event(
                    "dump_suppressed",
                    &[
                        ("rule", rule.to_string()),
                        ("interval_s", self.cfg.dump_interval.as_secs().to_string()),
                    ],
                );
            }
            return;
        }
        self.last_rule_dump = Some(Instant::now());
        self.dump("rule", Some(&rule), shared);
    }

    pub(super) fn dump(
        &mut self,
        why: &str,
        rule: Option<&crate::report::rules::Rule>,
        shared: &Mutex<Published>,
    ) {
        let Some(dir) = &self.cfg.dump_dir else {
            self.log.event(
                "dump_skipped",
                &[("reason", why.into()), ("why", "no --dump-dir".into())],
            );
            return;
        };
        let qp = self.tables.now();
        let lanes = self.lanes.clone();
        let work = super::lock_all(&lanes);
        let res = dump::write(
            dir,
            &self.recorded(&work),
            super::window_start_ns(&work, self.cfg.dump_seconds),
            self.analysis(),
            why,
            self.cfg.dump_keep,
            qp.as_deref(),
        );
        drop(work);
        let mut fields = vec![("reason", why.to_string())];
        if let Some(r) = rule {
            fields.push(("rule", r.to_string()));
            fields.push((
                "actual",
                crate::report::analyze::num(self.window.value(&r.name).unwrap_or(0.0)),
            ));
        }
        let mut p = shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match res {
            Ok(w) => {
                if why == "signal" {
                    p.dumps.signal += 1;
                } else {
                    p.dumps.rule += 1;
                }
                drop(p);
                fields.push(("pcapng", w.pcapng.display().to_string()));
                fields.push(("json", w.json.display().to_string()));
                fields.push(("frames", w.frames.to_string()));
                fields.push(("naks", w.naks.to_string()));
                self.log.event("dump", &fields);
            }
            Err(e) => {
                p.dumps.failed += 1;
                drop(p);
                fields.push(("error", e.to_string()));
                self.log.event("dump_failed", &fields);
            }
        }
    }
}

/// What a re-analysis held at its end (estimated): its summaries and events.
pub(super) fn report_cost(r: &Report) -> u64 {
    r.flows.len() as u64 * budget::SUMMARY_COST + r.events.len() as u64 * budget::EVENT_COST
}
