//! `rocetap sflow --metrics`: the collector in the Prometheus text exposition format,
//! written by the `prometheus` crate's encoder (as the agent's `/metrics` is) from
//! families built here at each scrape. Every series carries `agent` (address and
//! sub-agent, `198.51.100.1/0`; `other` past `--max-agents`); per-port series carry
//! `port` (`type:index` of the data source; `other` past `--max-ports`). Estimated
//! counts are the sampled counts scaled by the sampling rate; `_samples_total` series
//! give the samples behind them, from which the error follows
//! (`rocetap_sflow_roce_error_ratio`). Names are listed in `deploy/metrics.txt`.

use super::port::{slot_reason, CLASSES, REASONS};
use super::{Agent, Collector, Port, Sampled};
use dissectors::sflow::flow::drop_reason_name;
use prometheus::proto::{Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{Encoder, TextEncoder};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

struct Fams(Vec<MetricFamily>);

impl Fams {
    fn family(&mut self, name: &str, help: &str, kind: MetricType) -> usize {
        let mut f = MetricFamily::default();
        f.set_name(name.to_string());
        f.set_help(help.to_string());
        f.set_field_type(kind);
        self.0.push(f);
        self.0.len() - 1
    }

    fn add(&mut self, fam: usize, labels: &[(&str, &str)], v: f64) {
        let mut m = Metric::from_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name((*k).to_string());
                    l.set_value((*v).to_string());
                    l
                })
                .collect(),
        );
        let f = &mut self.0[fam];
        if f.get_field_type() == MetricType::COUNTER {
            let mut c = Counter::default();
            c.set_value(v);
            m.set_counter(c);
        } else {
            let mut g = Gauge::default();
            g.set_value(v);
            m.set_gauge(g);
        }
        f.mut_metric().push(m);
    }
}

/// The families with a port label, in order.
struct PortFams {
    samples: usize,
    packets: usize,
    roce: usize,
    roce_samples: usize,
    error: usize,
    naks: usize,
    cnps: usize,
    ce: usize,
    ce_share: usize,
    rate: usize,
    pool: usize,
    top: usize,
    discards: usize,
    queue: usize,
    if_octets: usize,
    if_pkts: usize,
    if_errors: usize,
    if_discards: usize,
    if_speed: usize,
}

impl PortFams {
    fn new(f: &mut Fams) -> PortFams {
        use MetricType::{COUNTER, GAUGE};
        PortFams {
            samples: f.family(
                "rocetap_sflow_flow_samples_total",
                "Flow samples received per port.",
                COUNTER,
            ),
            packets: f.family(
                "rocetap_sflow_packets_estimated_total",
                "Packets the port carried, estimated from the samples (sum of sampling rates).",
                COUNTER,
            ),
            roce: f.family(
                "rocetap_sflow_roce_packets_estimated_total",
                "RoCE packets the port carried by opcode class, estimated from the samples.",
                COUNTER,
            ),
            roce_samples: f.family(
                "rocetap_sflow_roce_samples_total",
                "RoCE packets sampled by opcode class (the samples behind the estimate).",
                COUNTER,
            ),
            error: f.family(
                "rocetap_sflow_roce_error_ratio",
                "95% relative error of the port's RoCE estimate: 1.96 * sqrt(1 / samples).",
                GAUGE,
            ),
            naks: f.family(
                "rocetap_sflow_naks_estimated_total",
                "RoCE NAKs (incl. RNR NAKs), estimated.",
                COUNTER,
            ),
            cnps: f.family(
                "rocetap_sflow_cnps_estimated_total",
                "RoCE CNPs, estimated.",
                COUNTER,
            ),
            ce: f.family(
                "rocetap_sflow_ce_estimated_total",
                "RoCE packets marked ECN CE, estimated.",
                COUNTER,
            ),
            ce_share: f.family(
                "rocetap_sflow_ce_share",
                "Share of the sampled RoCE packets marked ECN CE.",
                GAUGE,
            ),
            rate: f.family(
                "rocetap_sflow_sampling_rate",
                "The port's sampling rate (1 in N) in its last flow sample.",
                GAUGE,
            ),
            pool: f.family(
                "rocetap_sflow_sample_pool",
                "The port's sample pool in its last flow sample.",
                GAUGE,
            ),
            top: f.family(
                "rocetap_sflow_top_qp_packets_estimated",
                "RoCE packets of the port's top QP pairs, estimated (bounded top-k).",
                GAUGE,
            ),
            discards: f.family(
                "rocetap_sflow_discards_total",
                "Discarded packet notifications by drop reason.",
                COUNTER,
            ),
            queue: f.family(
                "rocetap_sflow_max_queue_depth_bytes",
                "Deepest egress queue reported with a sample.",
                GAUGE,
            ),
            if_octets: f.family(
                "rocetap_sflow_if_octets_total",
                "Interface octets from the counter samples, by direction.",
                COUNTER,
            ),
            if_pkts: f.family(
                "rocetap_sflow_if_unicast_packets_total",
                "Interface unicast packets from the counter samples, by direction.",
                COUNTER,
            ),
            if_errors: f.family(
                "rocetap_sflow_if_errors_total",
                "Interface errors from the counter samples, by direction.",
                COUNTER,
            ),
            if_discards: f.family(
                "rocetap_sflow_if_discards_total",
                "Interface discards from the counter samples, by direction.",
                COUNTER,
            ),
            if_speed: f.family(
                "rocetap_sflow_if_speed_bps",
                "Interface speed from the counter samples.",
                GAUGE,
            ),
        }
    }

    fn port(&self, f: &mut Fams, agent: &str, port: &str, p: &Port) {
        let l = [("agent", agent), ("port", port)];
        f.add(self.samples, &l, p.flow_samples as f64);
        f.add(self.packets, &l, p.packets.scaled as f64);
        for (name, s) in CLASSES.iter().zip(&p.classes) {
            if s.samples > 0 {
                let l = [("agent", agent), ("port", port), ("opcode", name)];
                f.add(self.roce, &l, s.scaled as f64);
                f.add(self.roce_samples, &l, s.samples as f64);
            }
        }
        if let Some(e) = p.roce.error_pct() {
            f.add(self.error, &l, e / 100.0);
            f.add(
                self.ce_share,
                &l,
                p.ce.samples as f64 / p.roce.samples as f64,
            );
        }
        let scaled = |s: &Sampled| s.scaled as f64;
        f.add(self.naks, &l, scaled(&p.naks));
        f.add(self.cnps, &l, scaled(&p.cnps));
        f.add(self.ce, &l, scaled(&p.ce));
        if p.flow_samples > 0 {
            f.add(self.rate, &l, f64::from(p.sampling_rate));
            f.add(self.pool, &l, f64::from(p.sample_pool));
        }
        for e in p.top() {
            let (src, dst, qp) = (
                e.pair.src.to_string(),
                e.pair.dst.to_string(),
                format!("0x{:06x}", e.pair.dest_qp),
            );
            f.add(
                self.top,
                &[
                    ("agent", agent),
                    ("port", port),
                    ("src", &src),
                    ("dst", &dst),
                    ("dest_qp", &qp),
                ],
                e.scaled as f64,
            );
        }
        for i in (0..REASONS).filter(|&i| p.discards[i] > 0) {
            let r = slot_reason(i).and_then(drop_reason_name).unwrap_or("other");
            f.add(
                self.discards,
                &[("agent", agent), ("port", port), ("reason", r)],
                p.discards[i] as f64,
            );
        }
        if let Some(q) = p.max_queue_depth {
            f.add(self.queue, &l, f64::from(q));
        }
        if let Some(i) = &p.interface {
            for (dir, oct, pk, err, disc) in [
                (
                    "in",
                    i.in_octets,
                    i.in_ucast_pkts,
                    i.in_errors,
                    i.in_discards,
                ),
                (
                    "out",
                    i.out_octets,
                    i.out_ucast_pkts,
                    i.out_errors,
                    i.out_discards,
                ),
            ] {
                let l = [("agent", agent), ("port", port), ("direction", dir)];
                f.add(self.if_octets, &l, oct as f64);
                f.add(self.if_pkts, &l, f64::from(pk));
                f.add(self.if_errors, &l, f64::from(err));
                f.add(self.if_discards, &l, f64::from(disc));
            }
            f.add(self.if_speed, &l, i.if_speed as f64);
        }
    }
}

/// Renders the collector's series.
pub fn render(c: &Collector) -> Vec<u8> {
    use MetricType::COUNTER;
    let mut f = Fams(Vec::new());
    let dg = f.family(
        "rocetap_sflow_datagrams_total",
        "sFlow datagrams received per agent.",
        COUNTER,
    );
    let lost = f.family("rocetap_sflow_datagrams_lost_total", "Datagrams missing from the agent's sequence numbers (collector-side loss; late ones taken back).", COUNTER);
    let reord = f.family(
        "rocetap_sflow_datagrams_reordered_total",
        "Datagrams that arrived after a later one.",
        COUNTER,
    );
    let resets = f.family(
        "rocetap_sflow_agent_resets_total",
        "Agent restarts (sequence number and uptime went back).",
        COUNTER,
    );
    let damaged = f.family(
        "rocetap_sflow_damaged_datagrams_total",
        "Datagrams that did not decode whole, by kind.",
        COUNTER,
    );
    let overflow = f.family("rocetap_sflow_overflow_total", "Datagrams of agents past --max-agents and samples of ports past --max-ports, counted under 'other'.", COUNTER);
    let ports = PortFams::new(&mut f);
    let mut each = |name: &str, a: &Agent| {
        let l = [("agent", name)];
        f.add(dg, &l, a.datagrams as f64);
        f.add(lost, &l, a.seq.lost as f64);
        f.add(reord, &l, a.seq.reordered as f64);
        f.add(resets, &l, a.seq.resets as f64);
        f.add(
            overflow,
            &[("agent", name), ("what", "ports")],
            a.ports_overflow as f64,
        );
        for (s, p) in &a.ports {
            ports.port(&mut f, name, &format!("{}:{}", s.kind, s.index), p);
        }
        if a.ports_overflow > 0 {
            ports.port(&mut f, name, "other", &a.other);
        }
    };
    for (id, a) in &c.agents {
        each(&format!("{}/{}", id.addr, id.sub_agent), a);
    }
    if c.agents_overflow > 0 {
        each("other", &c.other);
    }
    for (kind, n) in [
        ("bad_header", c.damage.bad_header),
        ("truncated", c.damage.truncated),
        ("malformed", c.damage.malformed),
    ] {
        f.add(damaged, &[("kind", kind)], n as f64);
    }
    f.add(
        overflow,
        &[("agent", "all"), ("what", "agents")],
        c.agents_overflow as f64,
    );
    let fams: Vec<MetricFamily> =
        f.0.into_iter()
            .filter(|m| !m.get_metric().is_empty())
            .collect();
    let mut out = Vec::new();
    let _ = TextEncoder::new().encode(&fams, &mut out);
    out
}
