//! Congestion notification: a CNP answers the CE marks of the traffic it is sent
//! against; the CE -> CNP delay and CNPs without CE marks are counted per flow.

use super::events::{Event, EventKind};
use super::Analyzer;

impl Analyzer {
    /// A CNP in flow `slot` (B -> A, DestQP = A's QP): it answers CE-marked traffic
    /// A -> B, which is this flow's peer when paired, otherwise the flow A -> B that was
    /// marked most recently. `dscp` is the CNP's: one on another DSCP than the data it
    /// answers counts in that flow's `cnp_other_dscp`.
    pub(super) fn cnp(&mut self, slot: u32, ts: u64, dscp: Option<u8>) {
        let f = self.flows.flow_mut(slot);
        f.counters.cnp_sent += 1;
        let f = self.flows.flow(slot);
        let target = f.peer.filter(|&p| {
            self.flows
                .get(p)
                .is_some_and(|pf| pf.counters.ce_marked > 0)
        });
        let target = target.or_else(|| {
            let key = f.key;
            self.flows
                .pair(key.dst, key.src)
                .iter()
                .copied()
                .filter_map(|s| self.flows.get(s).map(|x| (s, x)))
                .filter(|(_, x)| x.counters.ce_marked > 0)
                .max_by_key(|(_, x)| x.last_ce_ts)
                .map(|(s, _)| s)
        });
        let Some(t) = target else {
            self.capture.cnp_unmatched += 1;
            let id = self.flows.get(slot).map_or(0, |f| f.id);
            self.log.push(Event::new(ts, id, EventKind::CnpWithoutCe));
            return;
        };
        let tf = self.flows.flow_mut(t);
        tf.counters.cnp_received += 1;
        if dscp.is_some() && tf.dscp.is_some() && dscp != tf.dscp {
            tf.mark_counts.cnp_other_dscp += 1;
        }
        if tf.ce_since_cnp > 0 {
            let waited = ts.saturating_sub(tf.ce_first_since_cnp);
            tf.delays_mut().ce_to_cnp.record(waited);
            self.capture.latency.ce_to_cnp.record(waited);
            tf.ce_since_cnp = 0;
        } else {
            tf.counters.cnp_without_ce += 1;
            let id = tf.id;
            self.log.push(Event::new(ts, id, EventKind::CnpWithoutCe));
        }
        let tf = self.flows.flow_mut(t);
        if tf.first_cnp.is_none() {
            tf.first_cnp = Some((ts, tf.bytes));
        }
        tf.last_cnp = Some((ts, tf.bytes));
    }
}
