//! The bookkeeping every RoCE packet gets in its flow, whatever its role: counts, bytes,
//! times, ECN and ICRC, DSCP/PCP/VLAN and their changes (`track`, on the
//! QoS marks of `qos`), the opcode mix, the PMTU, PFC stalls.

use super::flow::Flow;
use super::qos::{opt, NONE};
use dissectors::{Decoded, Ecn, IcrcStatus, NakCode, Operation, Roce, StopKind, Transport};

/// The per-packet bookkeeping every RoCE packet gets in its flow.
pub(super) fn account(f: &mut Flow, ts: u64, d: &Decoded, r: &Roce, pause_start: Option<u64>) {
    if let Some(ps) = pause_start {
        // The flow's priority was paused after its previous packet: it stalled.
        if ps > f.last_ts && ps <= ts && f.packets > 0 {
            f.counters.pfc_stalls += 1;
            f.counters.pfc_stall_ns += ts - ps;
        }
    }
    f.packets += 1;
    f.bytes += u64::from(d.wire_len());
    f.first_ts = f.first_ts.min(ts);
    f.last_ts = f.last_ts.max(ts);
    if let Some(e) = d.ecn() {
        f.ecn[e.bits() as usize] += 1;
        if e == Ecn::Ce {
            f.counters.ce_marked += 1;
            if f.ce_since_cnp == 0 {
                f.ce_first_since_cnp = ts;
            }
            f.ce_since_cnp += 1;
            f.last_ce_ts = ts;
        }
    }
    // A malformed frame is already counted as such; its ICRC verdict would count the
    // same damage twice.
    match r.icrc {
        _ if d.stop.kind == StopKind::Malformed => f.icrc[2] += 1,
        IcrcStatus::Ok => f.icrc[0] += 1,
        IcrcStatus::Bad => f.icrc[1] += 1,
        IcrcStatus::Truncated | IcrcStatus::Absent => f.icrc[2] += 1,
    }
    track(f, d, r);
    let t = r.transport();
    if f.transport.is_none() && t != Transport::Cnp {
        f.transport = Some(t);
    }
    match r.operation {
        Some(o) => {
            f.ops.add(o);
            // First and Middle packets are exactly one PMTU long.
            if matches!(
                o,
                Operation::SendFirst
                    | Operation::SendMiddle
                    | Operation::WriteFirst
                    | Operation::WriteMiddle
                    | Operation::ReadResponseFirst
                    | Operation::ReadResponseMiddle
            ) && r.payload_len.is_power_of_two()
                && (256..=4096).contains(&r.payload_len)
            {
                f.pmtu = f.pmtu.max(r.payload_len);
            }
            if o != Operation::Cnp {
                f.first_psn.get_or_insert(r.bth.psn);
                f.last_psn = Some(r.bth.psn);
            }
        }
        None => f.other_ops += 1,
    }
}

pub(super) fn nak_value(c: NakCode) -> u8 {
    match c {
        NakCode::PsnSequenceError => 0,
        NakCode::InvalidRequest => 1,
        NakCode::RemoteAccessError => 2,
        NakCode::RemoteOperationalError => 3,
        NakCode::InvalidRdRequest => 4,
        NakCode::Unknown(n) => n,
    }
}

/// Notes one packet's marks in its flow (no allocation).
fn track(f: &mut Flow, d: &Decoded, r: &Roce) {
    let dscp = d.dscp().unwrap_or(NONE);
    let pcp = d.pcp().unwrap_or(NONE);
    let m = &mut f.marks;
    if r.operation == Some(Operation::Cnp) {
        if m.cnp_dscp == NONE {
            m.cnp_dscp = dscp;
        }
        if m.cnp_pcp == NONE {
            m.cnp_pcp = pcp;
        }
        if f.vlan.is_none() && f.pcp.is_none() {
            f.vlan = d.vlans[0].map(|v| v.vid);
        }
        return;
    }
    if m.started {
        let n = &mut f.mark_counts;
        n.dscp_changes += u32::from(dscp != m.dscp);
        n.pcp_changes += u32::from(pcp != m.pcp);
        n.encap_changes += u32::from(r.version != m.version);
    }
    m.started = true;
    m.dscp = dscp;
    m.pcp = pcp;
    m.version = r.version;
    if f.dscp.is_none() {
        f.dscp = opt(dscp);
    }
    if f.pcp.is_none() {
        f.pcp = opt(pcp);
        f.vlan = d.vlans[0].map(|v| v.vid);
    }
}
