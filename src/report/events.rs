//! An event in words: the `detail` sentence (text output, the JSON `detail` key, the
//! TUI's event lists) and the events list line of the text report.

use crate::analysis::{Event, EventKind, Report};
use crate::report::style::{Paint, Tone};

/// One line of plain words about an event (text output and JSON `detail`).
pub(crate) fn detail(e: &Event) -> String {
    match e.kind {
        EventKind::PsnGap => format!("{} PSNs missing", e.count),
        EventKind::GapRecovered => "filled by a resend".into(),
        EventKind::GapUnrecovered => format!(
            "{} PSNs never seen{}",
            e.count,
            if e.capture_loss == Some(true) {
                " (likely capture loss)"
            } else {
                " (NAKed, resend not captured)"
            }
        ),
        EventKind::Nak => format!(
            "NAK: {}",
            dissectors::NakCode::from_value(e.code.unwrap_or(0)).name()
        ),
        EventKind::RnrNak => {
            let c = e.code.unwrap_or(0);
            format!(
                "RNR NAK, timer code {c} ({} µs)",
                dissectors::ib::aeth::rnr_timer_us(c)
            )
        }
        EventKind::Retransmission => format!(
            "{} packets, trigger {}{}",
            e.count,
            e.trigger.map_or("?", |t| t.name()),
            e.latency_ns.map_or(String::new(), |l| format!(
                ", after {:.1} µs",
                l as f64 / 1e3
            ))
        ),
        EventKind::ReadRerequest => "READ re-issued for the rest".into(),
        EventKind::Duplicate => "seen again, not resent: a copy made by the network".into(),
        EventKind::Reordered => "original arrived after later PSNs (reordered), no resend".into(),
        EventKind::CnpWithoutCe => "CNP with no CE-marked traffic before it".into(),
        EventKind::ArpReplyPathMismatch => {
            let (x, p) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "{x} sends to {p} out of iface {} although {p}'s requests came in elsewhere (x{})",
                e.iface.unwrap_or(0),
                e.count.max(1)
            )
        }
        EventKind::ArpDuplicateAddress => {
            let (x, _) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "{x} claimed by a second MAC on iface {}",
                e.iface.unwrap_or(0)
            )
        }
        EventKind::ArpCrossSubnet | EventKind::ArpUnanswered => {
            let (s, d) = e.arp.unwrap_or((
                std::net::Ipv4Addr::UNSPECIFIED,
                std::net::Ipv4Addr::UNSPECIFIED,
            ));
            format!(
                "who-has {d} tell {s} iface {} x{}",
                e.iface.unwrap_or(0),
                e.count.max(1)
            )
        }
    }
}

pub(super) fn secs(r: &Report, t: u64) -> f64 {
    t.saturating_sub(r.first_ts_ns.unwrap_or(0)) as f64 / 1e9
}

/// The color of an event kind in the text report.
fn event_tone(k: EventKind) -> Option<Tone> {
    match k {
        EventKind::Nak | EventKind::GapUnrecovered | EventKind::ArpReplyPathMismatch => {
            Some(Tone::Bad)
        }
        EventKind::PsnGap
        | EventKind::Retransmission
        | EventKind::RnrNak
        | EventKind::ReadRerequest
        | EventKind::ArpCrossSubnet
        | EventKind::ArpUnanswered
        | EventKind::ArpDuplicateAddress => Some(Tone::Warn),
        EventKind::CnpWithoutCe | EventKind::Duplicate | EventKind::Reordered => Some(Tone::Mark),
        EventKind::GapRecovered => None,
    }
}

/// One line of the events list (without its indentation).
pub(super) fn event_line(r: &Report, e: &Event, paint: Paint) -> String {
    let flow = e.flow.map_or("-".into(), |f| f.to_string());
    let psn = match (e.psn, e.psn_end) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
        (Some(a), _) => a.to_string(),
        _ => "-".into(),
    };
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let kind = format!("{kind:<16}");
    let kind = match event_tone(e.kind) {
        Some(t) => paint.tone(t, &kind).into_owned(),
        None => kind,
    };
    format!(
        "{:.9} flow {:>4} {} psn {:<17} {}",
        secs(r, e.t_ns),
        flow,
        kind,
        psn,
        detail(e)
    )
}

/// An event kind in a word or two, where columns are narrow (the TUI).
pub fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::PsnGap => "gap",
        EventKind::GapRecovered => "recovered",
        EventKind::GapUnrecovered => "unrecovered",
        EventKind::Nak => "NAK",
        EventKind::RnrNak => "RNR NAK",
        EventKind::Retransmission => "resend",
        EventKind::ReadRerequest => "READ again",
        EventKind::Duplicate => "duplicate",
        EventKind::Reordered => "reordered",
        EventKind::CnpWithoutCe => "CNP w/o CE",
        EventKind::ArpCrossSubnet => "ARP x-subnet",
        EventKind::ArpUnanswered => "ARP no reply",
        EventKind::ArpReplyPathMismatch => "reply path",
        EventKind::ArpDuplicateAddress => "dup address",
    }
}
