//! `netcheck --capture FILE...`: the capture-side evidence of the same failure modes.
//! The captures (merged in timestamp order, one interface per file and pcapng/SLL2
//! interface) go through the analyzer; its ARP and reply-path symptoms become netcheck
//! findings with the frames that prove them (time from the capture's start, interface,
//! `who-has` lines): cross-subnet ARP nobody answers (the missing-`sbr` symptom), an
//! address answering on one interface while its replies leave another, duplicate
//! addresses, and other unanswered ARP requests.

use super::Severity;
use crate::analysis::{Analyzer, ArpSymptom, ArpSymptomKind, Config, Report, UnansweredAsk};
use crate::pipeline::{NoSink, Pipeline};
use std::path::PathBuf;

/// Findings of one kind shown with their evidence; the rest are counted in the last one.
const SHOWN_PER_KIND: usize = 8;

/// Runs the analyzer over `paths` (merged) and returns its report.
pub fn analyze(paths: &[PathBuf]) -> Result<Report, crate::netcheck::Error> {
    let mut p = Pipeline::new(
        dissectors::Config::default(),
        Analyzer::new(Config::default()),
    );
    p.name_sources(paths.iter().map(|path| {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        )
    }));
    let cut = p
        .read_files(paths, true, &mut NoSink)
        .map_err(crate::netcheck::Error::Capture)?;
    for c in &cut {
        eprintln!("{}", c.warning());
    }
    Ok(p.finish())
}

/// What a capture shows, with the frames that prove it (`capture-*` findings).
#[derive(Clone, Copy, Debug)]
pub enum Capture<'r> {
    /// An ARP / reply-path symptom of the analyzer.
    Symptom {
        /// The symptom, with its evidence frames.
        symptom: &'r ArpSymptom,
        /// The capture's first timestamp (evidence times are counted from it).
        first_ns: u64,
    },
    /// An ARP request inside one subnet that was never answered
    /// (`capture-arp-unanswered`).
    Unanswered {
        /// The interface it was seen on.
        iface: &'r str,
        /// The requests.
        ask: &'r UnansweredAsk,
    },
}

impl Capture<'_> {
    /// The finding's stable identifier.
    pub fn id(&self) -> &'static str {
        match self {
            Capture::Symptom { symptom, .. } => match symptom.kind() {
                ArpSymptomKind::CrossSubnetUnanswered => "capture-arp-cross-subnet",
                ArpSymptomKind::ReplyPathMismatch => "capture-reply-path",
                ArpSymptomKind::DuplicateAddress => "capture-duplicate-address",
                ArpSymptomKind::CrossSubnet => "capture-arp-cross-subnet-answered",
            },
            Capture::Unanswered { .. } => "capture-arp-unanswered",
        }
    }

    /// How bad it is: the symptom's own severity; an unanswered request is a warning.
    pub fn severity(&self) -> Severity {
        match self {
            Capture::Symptom { symptom, .. } => symptom.severity(),
            Capture::Unanswered { .. } => Severity::Warning,
        }
    }
}

/// The report's ARP / reply-path symptoms (and other unanswered ARP), at most
/// `SHOWN_PER_KIND` of each kind.
pub fn findings(r: &Report) -> Vec<Capture<'_>> {
    let first_ns = r.first_ts_ns.unwrap_or(0);
    let mut out = Vec::new();
    let mut shown: Vec<(ArpSymptomKind, usize)> = Vec::new();
    for s in &r.arp_symptoms {
        let n = match shown.iter_mut().find(|(k, _)| *k == s.kind()) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                shown.push((s.kind(), 1));
                1
            }
        };
        if n > SHOWN_PER_KIND {
            continue;
        }
        out.push(Capture::Symptom {
            symptom: s,
            first_ns,
        });
    }
    // What the symptoms do not already cover: unanswered asks inside one subnet.
    for a in &r.arp {
        for ask in &a.unanswered_asks {
            let covered = r.arp_symptoms.iter().any(|s| {
                s.kind() == ArpSymptomKind::CrossSubnetUnanswered
                    && s.iface == a.name
                    && s.addr == ask.target
                    && s.peer == ask.sender
            });
            if covered {
                continue;
            }
            out.push(Capture::Unanswered {
                iface: &a.name,
                ask,
            });
        }
    }
    out
}
