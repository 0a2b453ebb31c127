//! `/metrics`' families of the sources' state (up, lost, reopened) and of the memory
//! budget (its parts' shares and use, what was not kept because a part was full).

use super::{Families, Published};

/// Whether each source is up, and the memory budget with its parts' use.
pub(super) fn sources_and_memory(f: &mut Families, p: &Published) {
    let node = p.node.as_str();
    f.gauge(
        "rocetap_source_up",
        "1 while the source is open and capturing, 0 while it is lost and being reopened.",
    )
    .per_source(p, |s| f64::from(u8::from(s.up)));
    f.counter(
        "rocetap_source_losses_total",
        "Times the source's capture failed (interface deleted or down).",
    )
    .per_source(p, |s| s.losses as f64);
    f.counter(
        "rocetap_source_reopens_total",
        "Times a lost source was opened again.",
    )
    .per_source(p, |s| s.reopens as f64);
    f.gauge(
        "rocetap_flight_recorder_frames",
        "Frames the source's flight recorder holds.",
    )
    .per_source(p, |s| s.recorded_frames as f64);
    let fam = f.counter(
        "rocetap_memory_limited_total",
        "What was not kept because its part of the memory budget was full: packets of flows not followed, events, flow summaries.",
    );
    for s in &p.sources {
        for (what, v) in [
            ("flow_packets", s.untracked_packets),
            ("events", s.totals.events_dropped),
            ("flow_summaries", s.totals.flow_summaries_dropped),
        ] {
            fam.add(
                &[("node", node), ("source", &s.name), ("what", what)],
                v as f64,
            );
        }
    }
    let m = &p.memory;
    if m.budget == 0 {
        return;
    }
    f.gauge(
        "rocetap_memory_budget_bytes",
        "The agent's memory budget (--memory-limit).",
    )
    .add(&[("node", node)], m.budget as f64);
    let fam = f.gauge(
        "rocetap_memory_share_bytes",
        "Each part's share of the memory budget.",
    );
    for (part, b) in &m.shares {
        fam.add(&[("node", node), ("part", part)], *b as f64);
    }
    let fam = f.gauge(
        "rocetap_memory_used_bytes",
        "Each part's use of the memory budget (estimated from what it holds; capture: its rings and queue at their bound).",
    );
    for (part, b) in &m.used {
        fam.add(&[("node", node), ("part", part)], *b as f64);
    }
    if let Some((rss, hwm)) = m.resident {
        f.gauge(
            "rocetap_memory_resident_bytes",
            "The agent's resident size (VmRSS).",
        )
        .add(&[("node", node)], rss as f64);
        f.gauge(
            "rocetap_memory_resident_peak_bytes",
            "The agent's largest resident size so far (VmHWM).",
        )
        .add(&[("node", node)], hwm as f64);
    }
}
