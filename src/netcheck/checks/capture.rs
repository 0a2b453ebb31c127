//! `netcheck --capture FILE...`: the capture-side evidence of the same failure modes.
//! The captures (merged in timestamp order, one interface per file and pcapng/SLL2
//! interface) go through the analyzer; its ARP and reply-path symptoms become netcheck
//! findings with the frames that prove them (time from the capture's start, interface,
//! `who-has` lines): cross-subnet ARP nobody answers (the missing-`sbr` symptom), an
//! address answering on one interface while its replies leave another, duplicate
//! addresses, and other unanswered ARP requests.

use super::{Evidence, Finding, Severity};
use crate::analysis::{Analyzer, ArpSymptom, ArpSymptomKind, Config, Report};
use crate::pipeline::{NoSink, Pipeline};
use crate::report::findings::{ask as ask_text, seen, symptom_message};
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

/// The report's ARP / reply-path symptoms (and other unanswered ARP) as findings.
pub fn findings(r: &Report) -> Vec<Finding> {
    let first = r.first_ts_ns.unwrap_or(0);
    let at = |t: u64| format!("{:.6} s", t.saturating_sub(first) as f64 / 1e9);
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
        out.push(finding_of(s, &at));
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
            let ask = ask_text(ask);
            out.push(Finding {
                id: "capture-arp-unanswered",
                severity: Severity::Warning,
                title: format!("capture: ARP request never answered on {}: {ask}", a.name),
                detail: format!(
                    "{ask} on {}: the target is down, absent from this segment, or drops the \
                     request (arp_ignore, rp_filter).",
                    a.name
                ),
                evidence: vec![Evidence {
                    query: a.name.clone(),
                    answer: format!("{ask}, no reply on this interface"),
                }],
                fix: Vec::new(),
                snippet: None,
            });
        }
    }
    out
}

fn finding_of(s: &ArpSymptom, at: &dyn Fn(u64) -> String) -> Finding {
    let evidence = s
        .evidence
        .iter()
        .map(|e| Evidence {
            query: format!("{} {}", at(e.t_ns), e.iface),
            answer: seen(&e.seen),
        })
        .collect();
    let (id, title, fix) = match s.kind() {
        ArpSymptomKind::CrossSubnetUnanswered => (
            "capture-arp-cross-subnet",
            format!(
                "capture: {} asks who-has {} on {} from another subnet and gets no answer",
                s.peer, s.addr, s.iface
            ),
            vec![
                "add the sbr CNI plugin to the pod's RDMA network attachment (after the SR-IOV \
                 plugin in its CNI chain): ip rule from <RDMA address> table <n>, the RDMA subnet \
                 route moved to that table"
                    .to_string(),
                "confirm from the pod's routing state: rocetap netcheck --netns/--pid/--from"
                    .into(),
            ],
        ),
        ArpSymptomKind::ReplyPathMismatch => (
            "capture-reply-path",
            format!(
                "capture: replies to {} leave {} instead of {}",
                s.peer,
                s.iface,
                s.other_iface.as_deref().unwrap_or("?")
            ),
            vec![
                format!(
                    "source-based routing for {} (the sbr CNI plugin) so that traffic from {} \
                     follows the interface its peers reach it on",
                    s.iface, s.addr
                ),
                "confirm from the routing state: rocetap netcheck --netns/--pid/--from".into(),
            ],
        ),
        ArpSymptomKind::DuplicateAddress => (
            "capture-duplicate-address",
            format!(
                "capture: {} is claimed by two MACs on {} ({})",
                s.addr,
                s.iface,
                s.macs()
                    .iter()
                    .map(|m| dissectors::ethernet::Mac(m).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            vec!["find the two hosts (MACs above) and give one of them another address".into()],
        ),
        ArpSymptomKind::CrossSubnet => (
            "capture-arp-cross-subnet-answered",
            format!(
                "capture: {} asks who-has {} on {} from another subnet (answered)",
                s.peer, s.addr, s.iface
            ),
            Vec::new(),
        ),
    };
    Finding {
        id,
        severity: s.severity(),
        title,
        detail: symptom_message(s),
        evidence,
        fix,
        snippet: None,
    }
}
