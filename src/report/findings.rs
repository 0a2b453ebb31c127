//! The words for what the analyzer found: a finding's sentence, an ARP symptom's
//! explanation and the line of each observation behind it, a flow's label, a duration.
//! The analyzer hands back values (`analysis::report::Finding`, `analysis::ArpSymptom`, ...); the
//! text report, the JSON document (`message`, `what`, `unanswered_asks`), netcheck
//! `--capture` and the TUI all word them here, so a sentence is written once.

use super::safe::term;
use crate::analysis::report::{Congestion, Finding, FindingKind, NakError, Worst};
use crate::analysis::{
    ArpProblem, ArpSeen, ArpSummary, ArpSymptom, ArpSymptomKind, AskAnswer, FlowSummary, Report,
    Traffic, UnansweredAsk,
};
use dissectors::ethernet::Mac;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use std::net::Ipv4Addr;

mod cm;
mod loss;
mod qos;

/// `198.18.0.1 → 198.18.0.2 QP 0x000201`
pub fn flow_label(f: &FlowSummary) -> String {
    format!("{} → {} QP {}", f.src, f.dst, f.qp)
}

/// `198.18.0.1→198.18.0.2 0x000201`: the label where columns are narrow (the TUI).
pub fn flow_short(f: &FlowSummary) -> String {
    format!("{}→{} {}", f.src, f.dst, f.qp)
}

/// A latency or wait for a sentence: microseconds below 10 ms (`36.9 µs`), milliseconds
/// above (`33.6 ms`), one decimal.
pub fn duration(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// The label of a flow of the report by id (`#id` if it is not there).
fn label_of(r: &Report, id: u32) -> String {
    match r.flows.binary_search_by_key(&id, |f| f.id) {
        Ok(i) => flow_label(&r.flows[i]),
        Err(_) => format!("#{id}"),
    }
}

/// `label (n), label (n), label (n) and 4 more flows`
fn worst_text(r: &Report, w: &Worst) -> String {
    let shown: Vec<String> = w
        .top
        .iter()
        .map(|&(id, n)| format!("{} ({n})", label_of(r, id)))
        .collect();
    let more = if w.more > 0 {
        format!(" and {} more flows", w.more)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// A finding's sentence, as the text report and the JSON `message` show it.
pub fn message(f: &Finding, r: &Report) -> String {
    let first = r.first_ts_ns.unwrap_or(0);
    let at = f
        .t_ns
        .map(|x| format!(", first at {:.6} s", x.saturating_sub(first) as f64 / 1e9))
        .unwrap_or_default();
    let w = worst_text(r, &f.worst);
    match &f.kind {
        FindingKind::NakPsnSeq { .. }
        | FindingKind::TimeoutRetransmissions { .. }
        | FindingKind::UnrecoveredGaps { .. }
        | FindingKind::RetryExhausted { .. }
        | FindingKind::ConnectionStalled { .. }
        | FindingKind::QpFailed { .. }
        | FindingKind::ReorderedPackets { .. }
        | FindingKind::UdPsnJumps { .. }
        | FindingKind::RnrNak { .. }
        | FindingKind::ReadRerequests { .. } => loss::message(f, r, &w, &at).unwrap_or_default(),
        FindingKind::NakError { code, naks } => {
            let what = match code {
                NakError::InvalidRequest => "invalid request",
                NakError::RemoteAccess => {
                    "remote access error (bad R_Key, address or permissions)"
                }
                NakError::RemoteOperational => "remote operational error",
                NakError::InvalidRdRequest => "invalid RD request",
                NakError::Reserved => "reserved NAK code",
            };
            format!("{naks} NAKs: {what} — the QP goes to the error state{at}; on {w}")
        }
        FindingKind::IcrcNotPreserved { bad, checked } => format!(
            "every ICRC fails ({bad} of {checked} checked packets): this capture path does not preserve the ICRC (typical of the mlx5 RDMA sniffer) — not evidence of corruption"
        ),
        FindingKind::IcrcBad { bad, checked } => format!(
            "{bad} of {checked} packets fail the ICRC (corrupted in flight or by the capture); on {w}"
        ),
        FindingKind::CaptureLoss { gaps, missing_psns } => format!(
            "{gaps} PSN gaps ({missing_psns} PSNs in all gaps) were never filled, with no NAK and no resend: the capture most likely missed these packets (sniffer overrun), they were not lost in the network{at}; on {w}"
        ),
        FindingKind::UnknownRetransmissions { packets } => format!(
            "{packets} packets were sent again with no NAK seen and no original captured (trigger unknown); on {w}"
        ),
        FindingKind::DuplicatePackets { packets } => format!(
            "{packets} request packets were seen twice although nothing asked for them again (same IPv4 identification, or within 8 µs): copies made by the network or the capture path, not retransmissions; on {w}"
        ),
        FindingKind::PfcPause { frames, stalls } => pfc_message(r, *frames, *stalls, &w),
        FindingKind::Arp { kind, total } => arp_message(r, *kind, *total, &at),
        FindingKind::ArpUnanswered { requests } => {
            let asks: Vec<String> = r
                .arp
                .iter()
                .flat_map(|a| {
                    a.unanswered_asks
                        .iter()
                        .take(3)
                        .map(move |s| format!("{} on {}", ask(s), term(&a.name)))
                })
                .take(3)
                .collect();
            format!("{requests} ARP requests got no reply ({})", asks.join(", "))
        }
        FindingKind::Congestion(c) => congestion_message(r, c, &w),
        FindingKind::Malformed { frames } => {
            format!("{frames} malformed frames (see rocetap decode)")
        }
        FindingKind::Truncated {
            frames,
            icrc_cut,
            snaplen,
        } => truncated_message(*frames, *icrc_cut, *snaplen),
        FindingKind::Qos(q) => qos::message(r, q, &w),
        k @ (FindingKind::CmRejected { .. }
        | FindingKind::CmUnanswered { .. }
        | FindingKind::CmNoRtu { .. }
        | FindingKind::CmNoDrep { .. }
        | FindingKind::CmFirstPacketsMissing { .. }
        | FindingKind::CmNotSetUp { .. }
        | FindingKind::CmTrafficClass { .. }
        | FindingKind::CmSetup { .. }) => cm::message(k, &w, &at).unwrap_or_default(),
        FindingKind::FlowsNotFollowed { packets, max_flows } => format!(
            "{packets} RoCE packets belong to flows that were not followed: {max_flows} flows were live already (the memory bound); they count as frames only"
        ),
        FindingKind::InputCutShort { file, frames } => format!(
            "{file} was cut short: it ends in the middle of a record after {frames} complete frames (a capture killed mid-write, a full disk or a partial copy); every complete frame was analyzed, what came after the cut is unknown"
        ),
    }
}

/// Frames cut by the snaplen: the RoCE packets whose ICRC went unchecked, and the rest.
fn truncated_message(frames: u64, icrc_cut: u64, snaplen: u32) -> String {
    if icrc_cut == 0 {
        return format!(
            "{frames} frames cut by the capture snaplen: their ICRC could not be checked"
        );
    }
    let mut m = match snaplen {
        0 => format!("ICRC not checked on {icrc_cut} frames: the capture cut them short"),
        n => format!("ICRC not checked on {icrc_cut} frames: the capture cut them at {n} bytes"),
    };
    if frames > icrc_cut {
        let rest = frames - icrc_cut;
        m.push_str(&format!(
            "; {rest} more frames cut before their headers ended"
        ));
    }
    m
}

/// PFC / PAUSE: the frames per sender and priority, and the flows that stalled.
fn pfc_message(r: &Report, frames: u64, stalls: u64, w: &str) -> String {
    let srcs: Vec<String> = r
        .pfc
        .iter()
        .map(|s| {
            let prios: Vec<String> = s
                .per_priority
                .iter()
                .map(|p| {
                    format!(
                        "prio {} x{} ({})",
                        p.priority,
                        p.frames,
                        duration(p.pause_ns)
                    )
                })
                .collect();
            format!("{}: {}", Mac(&s.src_mac), prios.join(", "))
        })
        .collect();
    let w = if w.is_empty() {
        String::new()
    } else {
        format!(": {w}")
    };
    format!(
        "{frames} PFC/PAUSE frames ({}); {stalls} RoCE flow stalls during pauses{w}",
        srcs.join("; ")
    )
}

/// ARP / reply-path symptoms of one kind: the first in full, then a few more in short.
fn arp_message(r: &Report, kind: ArpSymptomKind, total: u64, at: &str) -> String {
    let mut of = r.arp_symptoms.iter().filter(|s| s.kind() == kind);
    let Some(head) = of.next() else {
        return String::new();
    };
    let more: Vec<String> = of.take(3).map(symptom_short).collect();
    let rest = total.saturating_sub(1);
    let rest = if rest == 0 {
        String::new()
    } else {
        format!("; {rest} more: {}", more.join(", "))
    };
    format!("{}{at}{rest}", symptom_message(head))
}

/// Congestion: CE marks, CNPs, the CE→CNP latency and the senders' rates.
fn congestion_message(r: &Report, c: &Congestion, w: &str) -> String {
    let Congestion {
        ce_marked,
        cnp,
        ce_without_cnp,
        cnp_without_ce,
        ce_to_cnp_ns,
        rates,
    } = c;
    let lat = ce_to_cnp_ns
        .map(|l| format!("; CE→CNP median up to {}", duration(l)))
        .unwrap_or_default();
    let slow: Vec<String> = rates
        .iter()
        .map(|x| {
            format!(
                "{} {:.2}→{:.2} Gb/s",
                label_of(r, x.flow),
                x.gbps_before,
                x.gbps_after
            )
        })
        .collect();
    let slow = if slow.is_empty() {
        String::new()
    } else {
        format!(
            "; sender rate before first / after last CNP: {}",
            slow.join(", ")
        )
    };
    let w = if w.is_empty() {
        String::new()
    } else {
        format!("; marked: {w}")
    };
    format!(
        "congestion: {ce_marked} CE-marked packets, {cnp} CNPs ({ce_without_cnp} CE marks never answered by a CNP, {cnp_without_ce} CNPs without CE){lat}{slow}{w}"
    )
}

/// A further symptom of a kind, in a finding's "N more:" list.
fn symptom_short(s: &ArpSymptom) -> String {
    let iface = term(&s.iface);
    match s.other_iface.as_deref().map(term) {
        Some(o) => format!("{} → {} on {iface} (not {o})", s.addr, s.peer),
        None if s.addr == s.peer => format!("{} on {iface}", s.addr),
        None => format!("who-has {} tell {} on {iface}", s.addr, s.peer),
    }
}

/// `who-has T tell S xN`
pub fn ask(a: &UnansweredAsk) -> String {
    format!("who-has {} tell {} x{}", a.target, a.sender, a.requests)
}

/// `who-has T tell S xN, never answered` (or `, answered`, or
/// `, answered, then P more requests with no reply`).
fn asks_text(target: Ipv4Addr, sender: Ipv4Addr, requests: u64, answer: AskAnswer) -> String {
    match answer {
        AskAnswer::Never => format!("who-has {target} tell {sender} x{requests}, never answered"),
        AskAnswer::Answered => format!("who-has {target} tell {sender} x{requests}, answered"),
        AskAnswer::AnsweredThenSilent { pending } => format!(
            "who-has {target} tell {sender} x{requests}, answered, then {pending} more requests with no reply"
        ),
    }
}

/// What `addr` took from `peer` on the interface its requests came in on.
fn came_in(addr: Ipv4Addr, peer: Ipv4Addr, t: Traffic) -> String {
    match (t.arp, t.ip) {
        (a, 0) => format!("{addr} answered {a} ARP request(s) from {peer}"),
        (0, n) => format!("{addr} received {n} IP packet(s) from {peer}"),
        (a, n) => format!(
            "{addr} answered {a} ARP request(s) from {peer} and received {n} IP packet(s) from it"
        ),
    }
}

/// One observation's line (`what` in JSON).
pub fn seen(s: &ArpSeen) -> String {
    match *s {
        ArpSeen::Asks {
            target,
            sender,
            requests,
            answer,
        } => asks_text(target, sender, requests, answer),
        ArpSeen::FirstAsk { target, sender } => format!("who-has {target} tell {sender}"),
        ArpSeen::LastAsk { target, sender } => format!("last who-has {target} tell {sender}"),
        ArpSeen::Reply { target, mac, to } => {
            format!("reply {target} is-at {} to {to}", Mac(&mac))
        }
        ArpSeen::CameIn {
            addr,
            peer,
            traffic,
        } => format!(
            "{}; nothing from {addr} to {peer} leaves here",
            came_in(addr, peer, traffic)
        ),
        ArpSeen::WentOut {
            addr,
            peer,
            traffic,
        } => {
            let what = match (traffic.arp, traffic.ip) {
                (a, 0) => format!("who-has {peer} tell {addr} x{a}"),
                (0, p) => format!("{addr} > {peer}: {p} IP packet(s)"),
                (a, p) => format!(
                    "who-has {peer} tell {addr} x{a}, then {p} IP packet(s) {addr} > {peer}"
                ),
            };
            format!("{what}; nothing from {peer} to {addr} arrives here")
        }
        ArpSeen::Claimed { ip, first, other } => {
            format!(
                "{ip} is-at {}, then {ip} is-at {}",
                Mac(&first),
                Mac(&other)
            )
        }
    }
}

/// A symptom's explanation: what it is, why it happens and the fix. Interface names
/// (capture file and device names) are escaped for the terminal.
pub fn symptom_message(s: &ArpSymptom) -> String {
    let (t, peer, name) = (s.addr, s.peer, term(&s.iface));
    match &s.problem {
        ArpProblem::CrossSubnetUnanswered { requests, answer } => {
            let what = asks_text(t, peer, *requests, *answer);
            format!(
                "{peer} asks who-has {t} on {name} from outside {t}'s subnet and gets no answer ({what}): \
                 a multi-homed host uses the address of one interface for traffic that belongs to another. \
                 Typical in an RDMA pod without source-based routing: the node resolves the pod's \
                 eth0 (Calico) address from its RDMA address (its route to the pod goes through an \
                 address-less cali* device, so the kernel picks its first global address), and the \
                 pod's route back to that address leads out of its RDMA interface (net1), so \
                 rp_filter drops the request — or, with loose rp_filter, the pod answers but its own \
                 traffic from the eth0 address leaves net1 and asks there, unanswered. Traffic towards \
                 {t} fails. Fix: the sbr CNI plugin on the pod's RDMA interface (ip rule from <RDMA \
                 address> table <n>, that interface's subnet route moved there); `rocetap netcheck \
                 --netns/--pid/--from` shows the pod's reply route"
            )
        }
        ArpProblem::CrossSubnet { requests } => {
            let what = asks_text(t, peer, *requests, AskAnswer::Answered);
            format!(
                "{peer} asks who-has {t} on {name} from another subnet, and {t} answers ({what}): \
                 the asking host uses an address of another interface as the ARP source; harmless \
                 while the pod routes its replies to {peer} back out of {name}"
            )
        }
        ArpProblem::ReplyPathMismatch {
            came_in: traffic,
            out_ifaces,
        } => {
            let (x, iname) = (t, term(s.other_iface.as_deref().unwrap_or("?")));
            let came = came_in(x, peer, *traffic);
            let out = term(&out_ifaces.join(", ")).into_owned();
            format!(
                "replies to {peer} leave {out} instead of {iname}: {came} on {iname}, but {x}'s own traffic to \
                 {peer} goes out of {out} (asymmetric routing — the route back to {peer} follows the \
                 destination, typically the subnet route of a second interface, not the interface the \
                 request came in on); the far side drops it (rp_filter) or never answers. Fix: \
                 source-based routing for the second interface (the sbr CNI plugin: ip rule from <its \
                 address> table <n>, its subnet route moved there) so that traffic from {x} follows \
                 {iname}; see `rocetap netcheck`"
            )
        }
        ArpProblem::DuplicateAddress { macs: [a, b] } => format!(
            "{t} is claimed by two MACs on {name}: {} and {} (ARP sender) — an address \
             conflict (two hosts configured with the same IP), a failover that moved it, or a \
             proxy ARP answering for a host that is present",
            Mac(a),
            Mac(b)
        ),
    }
}

/// A finding as the JSON document holds it: its values and its sentence.
pub struct FindingJson<'a> {
    /// The finding's values.
    pub finding: &'a Finding,
    /// The report it came from (for flow names and evidence in the sentence).
    pub report: &'a Report,
}

impl Serialize for FindingJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.finding;
        let flow = f.flow();
        let n = 4
            + usize::from(flow.is_some())
            + usize::from(f.t_ns.is_some())
            + 2 * usize::from(f.cause().is_some());
        let mut st = s.serialize_struct("Finding", n)?;
        st.serialize_field("severity", &f.severity)?;
        st.serialize_field("kind", f.code())?;
        st.serialize_field("count", &f.count)?;
        if let Some(flow) = flow {
            st.serialize_field("flow", &flow)?;
        }
        if let Some(t) = f.t_ns {
            st.serialize_field("t_ns", &t)?;
        }
        if let Some((cause, location)) = f.cause() {
            st.serialize_field("cause", cause.code())?;
            st.serialize_field("location", location.code())?;
        }
        st.serialize_field("message", &message(f, self.report))?;
        st.end()
    }
}

impl Serialize for UnansweredAsk {
    /// As its `who-has ... xN` line.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&ask(self))
    }
}

impl Serialize for ArpSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ArpSummary", 9)?;
        st.serialize_field("iface", &self.iface)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("requests", &self.requests)?;
        st.serialize_field("replies", &self.replies)?;
        st.serialize_field("gratuitous", &self.gratuitous)?;
        st.serialize_field("unanswered", &self.unanswered)?;
        st.serialize_field("cross_subnet_requests", &self.cross_subnet_requests)?;
        st.serialize_field("cross_subnet_unanswered", &self.cross_subnet_unanswered)?;
        st.serialize_field("unanswered_asks", &self.unanswered_asks)?;
        st.end()
    }
}

/// An observation as JSON: `t_ns`, `iface`, `what`.
#[derive(Serialize)]
struct EvidenceJson<'a> {
    t_ns: u64,
    iface: &'a str,
    what: String,
}

impl Serialize for ArpSymptom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let macs: Vec<String> = self.macs().iter().map(|m| Mac(m).to_string()).collect();
        let evidence: Vec<EvidenceJson<'_>> = self
            .evidence
            .iter()
            .map(|e| EvidenceJson {
                t_ns: e.t_ns,
                iface: &e.iface,
                what: seen(&e.seen),
            })
            .collect();
        let n = 9 + usize::from(self.other_iface.is_some()) + usize::from(!macs.is_empty());
        let mut st = s.serialize_struct("ArpSymptom", n)?;
        st.serialize_field("kind", self.kind().code())?;
        st.serialize_field("severity", &self.severity())?;
        st.serialize_field("iface", &self.iface)?;
        if let Some(o) = &self.other_iface {
            st.serialize_field("other_iface", o)?;
        }
        st.serialize_field("addr", &self.addr)?;
        st.serialize_field("peer", &self.peer)?;
        if !macs.is_empty() {
            st.serialize_field("macs", &macs)?;
        }
        st.serialize_field("t_ns", &self.t_ns)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("evidence", &evidence)?;
        st.serialize_field("message", &symptom_message(self))?;
        st.end()
    }
}

#[cfg(test)]
mod tests;
