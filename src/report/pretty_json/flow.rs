//! The flows of the `analyze` document written straight into the buffer, without serde:
//! with thousands of QPs they are most of the document (16,384 flows, about 50 MB), and
//! through serde each of a flow's 110 keys took a trip through the map-key serializer
//! (the counters are flattened into the flow's object) and several small copies. Here a
//! key is one comma, one newline-and-indent slice and the name, a value is formatted in
//! place, and zeros (most counters) are one byte.
//!
//! The bytes are exactly what the serde path writes (`FlowSummary`'s `Serialize`,
//! through [`super::to_writer_pretty`]); the tests hold the two equal field by field. A
//! field added to `FlowSummary` does not compile here until it is written: the summary
//! is taken apart whole. The counters come from `FlowCounters::named`, the list serde
//! uses too.

use super::{escape_into, float_digits, needs_escape};
use crate::analysis::flow::FlowCounters;
use crate::analysis::flow::N_COUNTERS;
use crate::analysis::report::Latency;
use crate::analysis::FlowSummary;
use dissectors::{Addr, Qpn};
use std::fmt::Display;
use std::io::Write;
use std::net::IpAddr;
use std::sync::OnceLock;

/// A comma, a newline and 64 spaces: [`Obj::key`] slices a field's start out of it.
const COMMA_NL: &[u8] = b",\n                                                                ";

/// A newline and 64 spaces: [`newline`] slices the indentation of a depth out of it.
const NL: &[u8] = COMMA_NL.split_at(1).1;

/// The deepest a flow may sit: its fields are one level deeper, its latencies two.
pub(in crate::report) const MAX_DEPTH: usize = (NL.len() - 1) / 2 - 2;

/// Writes a newline and the indentation of nesting depth `d` (two spaces a level).
/// A flow's fields sit 3 or 4 deep: one fixed 16-byte copy of the constant (not of
/// bytes just stored, see [`Obj::key`]), cut to length, instead of a `memcpy` call of a
/// length only known at run time.
#[inline(always)]
pub(super) fn newline(buf: &mut Vec<u8>, d: usize) {
    let n = 1 + 2 * d;
    if n <= 16 {
        buf.extend_from_slice(&NL[..16]);
        buf.truncate(buf.len() - (16 - n));
    } else {
        buf.extend_from_slice(&NL[..n]);
    }
}

/// An object being written: `{`, then `"key": value` pairs at `depth`.
pub(super) struct Obj<'a> {
    buf: &'a mut Vec<u8>,
    depth: usize,
    first: bool,
}

impl<'a> Obj<'a> {
    /// Opens an object that is itself at `depth`.
    #[inline]
    pub(super) fn open(buf: &'a mut Vec<u8>, depth: usize) -> Self {
        buf.push(b'{');
        Obj {
            buf,
            depth: depth + 1,
            first: true,
        }
    }

    /// `,` (unless first), newline, indentation, `"key": `. Keys here are field names,
    /// which never need escaping.
    #[inline(always)]
    pub(super) fn key(&mut self, k: &str) {
        debug_assert!(!needs_escape(k.as_bytes()), "{k}");
        // `,` newline indentation in one fixed 32-byte copy cut to length (the fields of
        // a flow sit 3 or 4 deep), then `"`, the name and `": `, all of a length known
        // where this is inlined: no `memcpy` call of a length known only at run time. The
        // 32 bytes come from the constant: built on the stack with byte stores, their wide
        // reload stalled (no store forwarding), a quarter of the writer's samples.
        let from = usize::from(self.first); // the first field has no comma
        let n = 2 + 2 * self.depth;
        if n <= 32 {
            self.buf.extend_from_slice(&COMMA_NL[from..from + 32]);
            self.buf.truncate(self.buf.len() - (32 - (n - from)));
        } else {
            self.buf.extend_from_slice(&COMMA_NL[from..n]);
        }
        self.buf.push(b'"');
        self.first = false;
        self.buf.extend_from_slice(k.as_bytes());
        self.buf.extend_from_slice(b"\": ");
    }

    #[inline]
    pub(super) fn close(self) {
        if !self.first {
            newline(self.buf, self.depth - 1);
        }
        self.buf.push(b'}');
    }

    #[inline(always)]
    fn int(&mut self, k: &str, v: impl Into<u64>) {
        self.key(k);
        int(self.buf, v.into());
    }

    #[inline(always)]
    fn opt_int<T: Into<u64>>(&mut self, k: &str, v: Option<T>) {
        self.key(k);
        match v {
            Some(v) => int(self.buf, v.into()),
            None => self.buf.extend_from_slice(b"null"),
        }
    }

    /// A float as serde_json writes it: shortest digits, `null` when not finite.
    #[inline(always)]
    fn float(&mut self, k: &str, v: f64) {
        self.key(k);
        float(self.buf, v);
    }

    #[inline(always)]
    fn opt_float(&mut self, k: &str, v: Option<f64>) {
        self.key(k);
        match v {
            Some(v) => float(self.buf, v),
            None => self.buf.extend_from_slice(b"null"),
        }
    }

    #[inline(always)]
    fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        self.buf.push(b'"');
        escape_into(self.buf, v);
        self.buf.push(b'"');
    }

    /// An address as its `Display` text; an IPv4 one (the usual) without `fmt`.
    pub(super) fn addr(&mut self, k: &str, a: &Addr) {
        let Addr::Ip(IpAddr::V4(ip)) = a else {
            return self.display(k, a);
        };
        self.key(k);
        self.buf.push(b'"');
        let [a, b, c, d] = ip.octets();
        for (i, o) in [a, b, c, d].into_iter().enumerate() {
            if i > 0 {
                self.buf.push(b'.');
            }
            int(self.buf, o.into());
        }
        self.buf.push(b'"');
    }

    /// A QPN as its `Display` text (see [`qpn`]).
    fn qpn(&mut self, k: &str, q: Qpn) {
        self.key(k);
        qpn(self.buf, q);
    }

    /// An array of `items` as the value of the key just written, each item written by
    /// `item` on a line of its own, one level deeper than the keys.
    pub(super) fn array<T>(&mut self, items: &[T], item: impl Fn(&mut Vec<u8>, &T)) {
        self.buf.push(b'[');
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            newline(self.buf, self.depth + 1);
            item(self.buf, x);
        }
        if !items.is_empty() {
            newline(self.buf, self.depth);
        }
        self.buf.push(b']');
    }

    /// A value's `Display` text as a string, escaped if it must be.
    fn display(&mut self, k: &str, v: &impl Display) {
        self.key(k);
        self.buf.push(b'"');
        let at = self.buf.len();
        // Writing into a Vec cannot fail; the Display impls here do not either.
        let _ = write!(self.buf, "{v}");
        if needs_escape(&self.buf[at..]) {
            let text = self.buf.split_off(at);
            escape_into(self.buf, &String::from_utf8_lossy(&text));
        }
        self.buf.push(b'"');
    }

    /// A latency; one with no sample (most of a flow's five) copied whole from `t`.
    #[inline(always)]
    fn latency(&mut self, k: &str, l: &Latency, t: &Template) {
        self.key(k);
        let Latency {
            count,
            min_ns,
            median_ns,
            p99_ns,
            max_ns,
        } = *l;
        if count == 0 && [min_ns, median_ns, p99_ns, max_ns] == [None; 4] {
            self.buf.extend_from_slice(&t.no_latency);
        } else {
            latency_object(self.buf, self.depth, l);
        }
    }

    /// The counters, in `FlowCounters::named` order (never a first field): each run of
    /// zeros (on a healthy flow, nearly all of them) one copy out of `t`, a counter that
    /// is not zero its key out of `t` and its value.
    #[inline(always)]
    fn counters(&mut self, c: &FlowCounters, t: &Template) {
        debug_assert!(!self.first);
        let mut zeros_from = None;
        for (i, (_, v)) in c.named().into_iter().enumerate() {
            if v == 0 {
                zeros_from.get_or_insert(t.at[i]);
                continue;
            }
            let from = zeros_from.take().unwrap_or(t.at[i]);
            // The text up to this counter's value: its zero is the last byte.
            self.buf
                .extend_from_slice(&t.counters[from..t.at[i + 1] - 1]);
            int(self.buf, v);
        }
        if let Some(from) = zeros_from {
            self.buf.extend_from_slice(&t.counters[from..]);
        }
    }

    /// A map's entries, in order, as a JSON object, each key in quotes as `key` writes
    /// it into the buffer.
    fn map<K, V: Into<u64>>(
        &mut self,
        k: &str,
        entries: impl IntoIterator<Item = (K, V)>,
        key: impl Fn(&mut Vec<u8>, K),
    ) {
        self.key(k);
        let mut o = Obj::open(self.buf, self.depth);
        for (mk, v) in entries {
            if !o.first {
                o.buf.push(b',');
            }
            o.first = false;
            newline(o.buf, o.depth);
            o.buf.push(b'"');
            key(o.buf, mk);
            o.buf.extend_from_slice(b"\": ");
            int(o.buf, v.into());
        }
        o.close();
    }
}

/// A latency's object (`{` to `}`), the object itself at `depth`.
fn latency_object(buf: &mut Vec<u8>, depth: usize, l: &Latency) {
    let mut o = Obj::open(buf, depth);
    o.int("count", l.count);
    o.opt_int("min_ns", l.min_ns);
    o.opt_int("median_ns", l.median_ns);
    o.opt_int("p99_ns", l.p99_ns);
    o.opt_int("max_ns", l.max_ns);
    o.close();
}

/// The text of what most flows write alike, for flows at one depth: every counter at
/// zero, and a latency with no sample. With thousands of QPs on a healthy fabric nearly
/// every counter of every flow is zero and four of its five latencies are empty: 66 of a
/// flow's 110 keys, copied in a few runs instead of written key by key. Made by the same
/// [`Obj`] calls the general path makes, so the bytes are the same by construction.
struct Template {
    /// `,` newline indentation `"name": 0` for each counter, in `FlowCounters::named`
    /// order.
    counters: Vec<u8>,
    /// Where each counter's text starts in `counters`; the last is its length.
    at: [usize; N_COUNTERS + 1],
    /// A latency object with no sample: `count` 0, the rest `null`.
    no_latency: Vec<u8>,
}

impl Template {
    fn of(depth: usize) -> Template {
        let fields = depth + 1;
        let mut counters = Vec::new();
        let mut at = [0; N_COUNTERS + 1];
        let mut o = Obj {
            buf: &mut counters,
            depth: fields,
            first: false,
        };
        for (i, (k, _)) in FlowCounters::default().named().into_iter().enumerate() {
            at[i] = o.buf.len();
            o.int(k, 0u64);
        }
        at[N_COUNTERS] = counters.len();
        let mut no_latency = Vec::new();
        latency_object(&mut no_latency, fields, &Latency::default());
        Template {
            counters,
            at,
            no_latency,
        }
    }

    /// The template of flows at `depth` (at most [`MAX_DEPTH`]), made once.
    fn at(depth: usize) -> &'static Template {
        static MADE: [OnceLock<Template>; MAX_DEPTH + 1] =
            [const { OnceLock::new() }; MAX_DEPTH + 1];
        MADE[depth].get_or_init(|| Template::of(depth))
    }
}

/// A QPN as its `Display` text in quotes, `0x` and at least six lowercase hex digits,
/// without `fmt`.
pub(super) fn qpn(buf: &mut Vec<u8>, q: Qpn) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (8 - q.0.leading_zeros() as usize / 4).max(6);
    buf.extend_from_slice(b"\"0x");
    for i in (0..digits).rev() {
        buf.push(HEX[(q.0 >> (4 * i)) as usize & 0xf]);
    }
    buf.push(b'"');
}

#[inline]
pub(super) fn int(buf: &mut Vec<u8>, v: u64) {
    if v < 10 {
        buf.push(b'0' + v as u8);
    } else {
        buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
}

#[inline]
fn float(buf: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        float_digits(buf, v);
    } else {
        buf.extend_from_slice(b"null");
    }
}

/// Writes flow `f` as a JSON object that sits at nesting `depth` (at most
/// [`MAX_DEPTH`]), byte for byte as its `Serialize` through the pretty writer would.
pub(in crate::report) fn write_flow(buf: &mut Vec<u8>, depth: usize, f: &FlowSummary) {
    assert!(depth <= MAX_DEPTH, "flow at depth {depth}");
    let FlowSummary {
        id,
        src,
        dst,
        qp,
        peer,
        transport,
        encap,
        first_ts_ns,
        last_ts_ns,
        duration_s,
        packets,
        bytes,
        messages,
        gbps,
        pps,
        pmtu,
        dscp,
        pcp,
        vlan,
        dscp_changes,
        pcp_changes,
        encap_changes,
        cnp_dscp,
        cnp_other_dscp,
        first_psn,
        last_psn,
        first_request_psn: _, // not in the document
        ecn_not_ect,
        ecn_ect1,
        ecn_ect0,
        ecn_ce,
        icrc_ok,
        icrc_bad,
        icrc_unchecked,
        counters,
        cnp_per_s,
        gbps_before_first_cnp,
        gbps_after_last_cnp,
        rnr_requested_us_mean,
        ack_latency,
        nak_to_resend,
        rnr_wait,
        timeout_observed,
        ce_to_cnp,
        opcodes,
        rnr_timers,
        stop: _,
    } = f;
    let t = Template::at(depth);
    buf.reserve(4096); // a flow is about 3 KB: no growth in the middle of one
    let mut o = Obj::open(buf, depth);
    o.int("id", *id);
    o.addr("src", src);
    o.addr("dst", dst);
    o.qpn("qp", *qp);
    o.opt_int("peer", *peer);
    o.str("transport", transport);
    o.str("encap", encap);
    o.int("first_ts_ns", *first_ts_ns);
    o.int("last_ts_ns", *last_ts_ns);
    o.float("duration_s", *duration_s);
    o.int("packets", *packets);
    o.int("bytes", *bytes);
    o.int("messages", *messages);
    o.float("gbps", *gbps);
    o.float("pps", *pps);
    o.opt_int("pmtu", *pmtu);
    o.opt_int("dscp", *dscp);
    o.opt_int("pcp", *pcp);
    o.opt_int("vlan", *vlan);
    o.int("dscp_changes", *dscp_changes);
    o.int("pcp_changes", *pcp_changes);
    o.int("encap_changes", *encap_changes);
    o.opt_int("cnp_dscp", *cnp_dscp);
    o.int("cnp_other_dscp", *cnp_other_dscp);
    o.opt_int("first_psn", first_psn.map(|p| p.0));
    o.opt_int("last_psn", last_psn.map(|p| p.0));
    o.int("ecn_not_ect", *ecn_not_ect);
    o.int("ecn_ect1", *ecn_ect1);
    o.int("ecn_ect0", *ecn_ect0);
    o.int("ecn_ce", *ecn_ce);
    o.int("icrc_ok", *icrc_ok);
    o.int("icrc_bad", *icrc_bad);
    o.int("icrc_unchecked", *icrc_unchecked);
    o.counters(counters, t);
    o.float("cnp_per_s", *cnp_per_s);
    o.opt_float("gbps_before_first_cnp", *gbps_before_first_cnp);
    o.opt_float("gbps_after_last_cnp", *gbps_after_last_cnp);
    o.opt_float("rnr_requested_us_mean", *rnr_requested_us_mean);
    o.latency("ack_latency", ack_latency, t);
    o.latency("nak_to_resend", nak_to_resend, t);
    o.latency("rnr_wait", rnr_wait, t);
    o.latency("timeout_observed", timeout_observed, t);
    o.latency("ce_to_cnp", ce_to_cnp, t);
    o.map("opcodes", opcodes.iter(), escape_into);
    o.map(
        "rnr_timers",
        rnr_timers.iter().map(|(&k, &v)| (k, v)),
        |buf, code| int(buf, u64::from(code)),
    );
    o.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::flow::OpCounts;
    use crate::analysis::report::Opcodes;
    use crate::report::pretty_json::testing::{sample_reports, serde_at};
    use dissectors::Operation;

    /// Every flow of every sample.
    fn sample_flows() -> Vec<FlowSummary> {
        let flows: Vec<FlowSummary> = sample_reports().into_iter().flat_map(|r| r.flows).collect();
        assert!(flows.len() > 50, "{} flows", flows.len());
        flows
    }

    fn ours_at(f: &FlowSummary, depth: usize) -> String {
        crate::report::pretty_json::testing::ours_at(write_flow, f, depth)
    }

    #[test]
    fn every_sample_flow_is_written_as_serde_writes_it_at_every_depth() {
        let flows = sample_flows();
        for f in &flows {
            for depth in [0, 2] {
                assert_eq!(ours_at(f, depth), serde_at(f, depth), "flow {}", f.id);
            }
        }
        for depth in 0..=MAX_DEPTH {
            assert_eq!(
                ours_at(&flows[0], depth),
                serde_at(&flows[0], depth),
                "depth {depth}"
            );
        }
    }

    /// The shapes no sample has: other address kinds, QPNs of every width, nulls and
    /// non-finite floats, strings and map keys that must be escaped, every counter set.
    #[test]
    fn unusual_values_are_written_as_serde_writes_them() {
        let base = sample_flows()
            .into_iter()
            .find(|f| !f.opcodes.is_empty())
            .unwrap();
        let mut cases = Vec::new();
        for (i, qp) in [0, 0x7, 0xabcdef, 0x100_0000, 0xffff_ffff]
            .into_iter()
            .enumerate()
        {
            let mut f = base.clone();
            f.qp = Qpn(qp);
            f.src = Addr::Ip("2001:db8::1".parse().unwrap());
            f.dst = Addr::Lid(0x1234 + i as u16);
            f.peer = None;
            f.transport = "R\"C\\\n\u{1}é";
            f.duration_s = [f64::NAN, f64::INFINITY, -0.0, 1e-300, 12345.678][i];
            f.gbps = f64::NEG_INFINITY;
            f.gbps_before_first_cnp = Some(0.1);
            f.gbps_after_last_cnp = Some(f64::NAN);
            f.rnr_requested_us_mean = Some(1e21);
            f.pmtu = None;
            f.dscp = Some(63);
            f.vlan = Some(4095);
            f.first_psn = None;
            f.first_ts_ns = u64::MAX;
            f.counters.pfc_stall_ns = u64::MAX;
            f.counters.psn_gap_events = 10;
            f.counters.reads = 9;
            f.rnr_wait = Latency {
                count: 3,
                min_ns: Some(0),
                median_ns: Some(10),
                p99_ns: None,
                max_ns: Some(u64::MAX),
            };
            // Every operation (the full table, not the inline slots) and `other`.
            let mut ops = OpCounts::default();
            for o in Operation::ALL.into_iter().cycle().take(40 + i) {
                ops.add(o);
            }
            f.opcodes = Opcodes::new(ops, i as u64);
            f.rnr_timers = [(0, 1), (14, 10), (31, u32::MAX)].into_iter().collect();
            cases.push(f);
        }
        let mut empty = base.clone();
        empty.opcodes = Opcodes::default();
        empty.rnr_timers.clear();
        cases.push(empty);
        for f in &cases {
            assert_eq!(ours_at(f, 2), serde_at(f, 2), "qp {}", f.qp);
        }
    }

    /// The counters written in runs of zeros out of the template: runs at either end, in
    /// the middle, none at all; and latencies that are empty, not quite empty, full.
    #[test]
    fn runs_of_zero_counters_and_empty_latencies_are_written_as_serde_writes_them() {
        let base = sample_flows()
            .into_iter()
            .find(|f| f.ack_latency.count > 0)
            .unwrap();
        let every = |n: u64| FlowCounters {
            psn_gap_events: n,
            missing_psns: n,
            recovered_gap_events: n,
            unrecovered_gap_events: n,
            capture_loss_gap_events: n,
            gaps_filled_late: n,
            retransmitted_packets: n,
            retransmission_episodes: n,
            nak_retransmission_episodes: n,
            rnr_retransmission_episodes: n,
            timeout_retransmission_episodes: n,
            read_retransmission_episodes: n,
            duplicate_packets: n,
            reordered_packets: n,
            nak_retransmissions: n,
            rnr_retransmissions: n,
            timeout_retransmissions: n,
            read_retransmissions: n,
            unknown_retransmissions: n,
            nak_psn_seq: n,
            nak_invalid_request: n,
            nak_remote_access: n,
            nak_remote_operational: n,
            nak_invalid_rd_request: n,
            nak_reserved: n,
            rnr_nak: n,
            reads: n,
            read_rerequests: n,
            read_responses_resent: n,
            read_missing_responses: n,
            ce_marked: n,
            cnp_sent: n,
            cnp_received: n,
            ce_without_cnp: n,
            cnp_without_ce: n,
            pfc_stalls: n,
            pfc_stall_ns: n,
            nak_psn_seq_after_rnr: n,
            nak_psn_seq_gap_at_tap: n,
            timeout_episodes_gap_at_tap: n,
            timeout_episodes_acked: n,
            retry_exhausted: n,
            stalled: n,
            ud_psn_jumps: n,
            nak_psn_seq_reorder: n,
        };
        assert!(
            every(1).named().iter().all(|&(_, v)| v == 1),
            "every field set"
        );
        let mut counters = vec![FlowCounters::default(), every(7), every(u64::MAX)];
        let first = FlowCounters {
            psn_gap_events: 12,
            ..Default::default()
        };
        let last = FlowCounters {
            pfc_stall_ns: 5,
            ..Default::default()
        };
        let inner = FlowCounters {
            reads: 1,
            read_rerequests: 10,
            cnp_received: 100,
            ..Default::default()
        };
        let mut holes = every(3);
        (holes.psn_gap_events, holes.rnr_nak, holes.pfc_stall_ns) = (0, 0, 0);
        counters.extend([first, last, inner, holes]);
        let almost_empty = Latency {
            min_ns: Some(0),
            ..Latency::default()
        };
        for c in counters {
            for l in [Latency::default(), almost_empty, base.ack_latency] {
                let mut f = base.clone();
                f.counters = c;
                (f.nak_to_resend, f.ce_to_cnp) = (l, l);
                for depth in [0, 2, MAX_DEPTH] {
                    assert_eq!(ours_at(&f, depth), serde_at(&f, depth), "{c:?} {l:?}");
                }
            }
        }
    }

    #[test]
    fn the_counters_serde_writes_are_the_named_ones_in_their_order() {
        let mut c = crate::analysis::flow::FlowCounters {
            missing_psns: 2,
            pfc_stall_ns: 3,
            ..Default::default()
        };
        c.ce_marked = 4;
        let v = serde_json::to_value(c).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let named: Vec<&str> = c.named().iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, named); // serde_json keeps the order here (preserve_order)
        assert_eq!(named.len(), crate::analysis::flow::N_COUNTERS);
        for (k, n) in c.named() {
            assert_eq!(v[k].as_u64(), Some(n), "{k}");
        }
    }
}
