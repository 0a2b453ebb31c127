//! The words of a capture's ARP / reply-path symptoms (`capture-*`): the frames that prove
//! them (time from the capture's start, interface, `who-has` lines), worded with
//! `crate::report::findings`, which `analyze` shares.

use super::{ev, Words};
use crate::analysis::ArpSymptomKind;
use crate::netcheck::checks::capture::Capture;
use crate::report::findings::{ask as ask_text, seen, symptom_message};

pub(super) fn words(c: &Capture<'_>) -> Words {
    match *c {
        Capture::Unanswered { iface, ask } => {
            let ask = ask_text(ask);
            Words::new(
                format!("capture: ARP request never answered on {iface}: {ask}"),
                format!(
                    "{ask} on {iface}: the target is down, absent from this segment, or drops the \
                     request (arp_ignore, rp_filter)."
                ),
                vec![ev(iface, format!("{ask}, no reply on this interface"))],
                Vec::new(),
            )
        }
        Capture::Symptom {
            symptom: s,
            first_ns,
        } => {
            let at = |t: u64| format!("{:.6} s", t.saturating_sub(first_ns) as f64 / 1e9);
            let evidence = s
                .evidence
                .iter()
                .map(|e| ev(format!("{} {}", at(e.t_ns), e.iface), seen(&e.seen)))
                .collect();
            let (title, fix) = match s.kind() {
                ArpSymptomKind::CrossSubnetUnanswered => (
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
                    format!(
                        "capture: {} asks who-has {} on {} from another subnet (answered)",
                        s.peer, s.addr, s.iface
                    ),
                    Vec::new(),
                ),
            };
            Words::new(title, symptom_message(s), evidence, fix)
        }
    }
}
