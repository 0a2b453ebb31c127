//! `rocetap sflow`'s words: the `rocetap.sflow/1` JSON document (`--json`, `/report`)
//! and the text summary. Every count of sampled packets is given with what it stands
//! for: `{samples, estimate, error_pct, low, high}`, the estimate being the sum of the
//! sampling rates of the samples and `error_pct` the 95 % relative error
//! `196 · sqrt(1 / samples)` of sFlow's sampling theory.

use crate::sflow::port::{slot_reason, CLASSES, REASONS};
use crate::sflow::{Agent, AgentId, Collector, Port, Sampled};
use dissectors::sflow::flow::drop_reason_name;
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// The schema name of the document.
pub const SCHEMA: &str = "rocetap.sflow/1";

/// The formula of `error_pct`, as the document states it.
pub const ERROR_FORMULA: &str = "95% relative error = 196 * sqrt(1 / samples) percent";

/// A sampled count in the document.
pub fn estimate(s: &Sampled) -> Value {
    match s.error_pct() {
        None => json!({"samples": 0, "estimate": 0}),
        Some(e) => {
            let est = s.scaled as f64;
            let d = est * e / 100.0;
            json!({
                "samples": s.samples,
                "estimate": s.scaled,
                "error_pct": round2(e),
                "low": (est - d).max(s.samples as f64).round() as u64,
                "high": (est + d).round() as u64,
            })
        }
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn port(p: &Port) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("sampling_rate".into(), json!(p.sampling_rate));
    m.insert("sample_pool".into(), json!(p.sample_pool));
    m.insert("exporter_drops".into(), json!(p.exporter_drops));
    m.insert("flow_samples".into(), json!(p.flow_samples));
    m.insert("packets".into(), estimate(&p.packets));
    m.insert("roce".into(), estimate(&p.roce));
    let classes: Map<String, Value> = CLASSES
        .iter()
        .zip(&p.classes)
        .filter(|(_, s)| s.samples > 0)
        .map(|(n, s)| ((*n).to_string(), estimate(s)))
        .collect();
    m.insert("opcodes".into(), Value::Object(classes));
    m.insert("naks".into(), estimate(&p.naks));
    m.insert("cnps".into(), estimate(&p.cnps));
    m.insert("ce".into(), estimate(&p.ce));
    if p.roce.samples > 0 {
        m.insert(
            "ce_share".into(),
            json!(round4(p.ce.samples as f64 / p.roce.samples as f64)),
        );
    }
    if p.malformed_headers > 0 {
        m.insert("malformed_headers".into(), json!(p.malformed_headers));
    }
    let top: Vec<Value> = p
        .top()
        .iter()
        .map(|e| {
            json!({
                "src": e.pair.src.to_string(),
                "dst": e.pair.dst.to_string(),
                "dest_qp": format!("0x{:06x}", e.pair.dest_qp),
                "samples": e.samples,
                "estimate": e.scaled,
                "overcount_max": e.error,
            })
        })
        .collect();
    m.insert("top_qp_pairs".into(), Value::Array(top));
    let discards: Map<String, Value> = (0..REASONS)
        .filter(|&i| p.discards[i] > 0)
        .map(|i| {
            let name = slot_reason(i).and_then(drop_reason_name).unwrap_or("other");
            (name.to_string(), json!(p.discards[i]))
        })
        .collect();
    if !discards.is_empty() {
        m.insert("discards".into(), Value::Object(discards));
    }
    if let Some(q) = p.max_queue_depth {
        m.insert("max_queue_depth_bytes".into(), json!(q));
    }
    if let Some(t) = p.max_transit_ns {
        m.insert("max_transit_delay_ns".into(), json!(t));
    }
    m.insert("counter_samples".into(), json!(p.counter_samples));
    if let Some(i) = &p.interface {
        m.insert(
            "interface".into(),
            json!({
                "ifindex": i.if_index, "iftype": i.if_type, "ifspeed": i.if_speed,
                "ifdirection": i.if_direction, "ifstatus": i.if_status,
                "ifinoct": i.in_octets, "ifinpkt": i.in_ucast_pkts,
                "ifinmcast": i.in_multicast_pkts, "ifinbcast": i.in_broadcast_pkts,
                "ifindisc": i.in_discards, "ifinerr": i.in_errors, "ifinunk": i.in_unknown_protos,
                "ifoutoct": i.out_octets, "ifoutpkt": i.out_ucast_pkts,
                "ifoutmcast": i.out_multicast_pkts, "ifoutbcast": i.out_broadcast_pkts,
                "ifoutdisc": i.out_discards, "ifouterr": i.out_errors,
                "ifpromisc": i.promiscuous_mode,
            }),
        );
    }
    if let Some(e) = &p.ethernet {
        m.insert(
            "ethernet".into(),
            json!({
                "dot3StatsAlignmentErrors": e.alignment_errors,
                "dot3StatsFCSErrors": e.fcs_errors,
                "dot3StatsSingleCollisionFrames": e.single_collision_frames,
                "dot3StatsMultipleCollisionFrames": e.multiple_collision_frames,
                "dot3StatsSQETestErrors": e.sqe_test_errors,
                "dot3StatsDeferredTransmissions": e.deferred_transmissions,
                "dot3StatsLateCollisions": e.late_collisions,
                "dot3StatsExcessiveCollisions": e.excessive_collisions,
                "dot3StatsInternalMacTransmitErrors": e.internal_mac_transmit_errors,
                "dot3StatsCarrierSenseErrors": e.carrier_sense_errors,
                "dot3StatsFrameTooLongs": e.frame_too_longs,
                "dot3StatsInternalMacReceiveErrors": e.internal_mac_receive_errors,
                "dot3StatsSymbolErrors": e.symbol_errors,
            }),
        );
    }
    m
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

fn agent(id: Option<&AgentId>, a: &Agent) -> Value {
    let mut m = Map::new();
    match id {
        Some(id) => {
            m.insert("agent".into(), json!(id.addr.to_string()));
            m.insert("sub_agent_id".into(), json!(id.sub_agent));
        }
        None => {
            m.insert("agent".into(), json!("other"));
        }
    }
    m.insert("datagrams".into(), json!(a.datagrams));
    m.insert(
        "sequence".into(),
        json!({
            "last": a.seq.last,
            "lost": a.seq.lost,
            "reordered": a.seq.reordered,
            "duplicates": a.seq.duplicates,
            "resets": a.seq.resets,
        }),
    );
    m.insert("uptime_ms".into(), json!(a.uptime_ms));
    let mut ports: Vec<Value> = a
        .ports
        .iter()
        .map(|(s, p)| {
            let mut o = Map::new();
            o.insert("source_id_type".into(), json!(s.kind));
            o.insert("source_id_index".into(), json!(s.index));
            o.extend(port(p));
            Value::Object(o)
        })
        .collect();
    if a.ports_overflow > 0 {
        let mut o = Map::new();
        o.insert("source_id_type".into(), json!("other"));
        o.extend(port(&a.other));
        ports.push(Value::Object(o));
    }
    m.insert("ports".into(), Value::Array(ports));
    m.insert("ports_overflow".into(), json!(a.ports_overflow));
    Value::Object(m)
}

/// The `rocetap.sflow/1` document.
pub fn document(c: &Collector) -> Value {
    let mut agents: Vec<Value> = c.agents.iter().map(|(id, a)| agent(Some(id), a)).collect();
    if c.agents_overflow > 0 {
        agents.push(agent(None, &c.other));
    }
    json!({
        "schema": SCHEMA,
        "datagrams": c.datagrams,
        "not_sflow_frames": c.not_sflow,
        "lost_datagrams": c.lost(),
        "damaged": {
            "bad_header": c.damage.bad_header,
            "truncated": c.damage.truncated,
            "malformed": c.damage.malformed,
            "last": c.damage.last.map(|s| s.to_string()),
        },
        "samples": {
            "flow": c.flow_samples,
            "counters": c.counter_samples,
            "discards": c.discard_samples,
            "unknown": c.unknown_samples,
        },
        "unknown_records": c.unknown_records,
        "error_formula": ERROR_FORMULA,
        "agents_overflow": c.agents_overflow,
        "agents": agents,
    })
}

/// The document, pretty-printed, with a final newline.
pub fn json(out: &mut impl Write, c: &Collector) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document(c))?;
    writeln!(out)
}

fn est_text(s: &Sampled) -> String {
    match s.error_pct() {
        None => "0".to_string(),
        Some(e) => format!("~{} ±{:.0}% ({} samples)", s.scaled, e, s.samples),
    }
}

/// The text summary: one block per agent, one line per port.
pub fn text(out: &mut impl Write, c: &Collector) -> io::Result<()> {
    writeln!(
        out,
        "{} datagrams, {} lost (sequence gaps), {} damaged; samples: {} flow, {} counters, {} discards",
        c.datagrams,
        c.lost(),
        c.damage.bad_header + c.damage.truncated + c.damage.malformed,
        c.flow_samples,
        c.counter_samples,
        c.discard_samples
    )?;
    for (id, a) in &c.agents {
        writeln!(
            out,
            "agent {} sub-agent {}: {} datagrams, last seq {}, lost {}, reordered {}, resets {}",
            id.addr,
            id.sub_agent,
            a.datagrams,
            a.seq.last,
            a.seq.lost,
            a.seq.reordered,
            a.seq.resets
        )?;
        for (s, p) in &a.ports {
            writeln!(
                out,
                "  port {}:{} rate 1/{}: packets {}, RoCE {}, NAK {}, CNP {}, CE {}",
                s.kind,
                s.index,
                p.sampling_rate,
                est_text(&p.packets),
                est_text(&p.roce),
                est_text(&p.naks),
                est_text(&p.cnps),
                est_text(&p.ce)
            )?;
        }
    }
    if c.agents_overflow > 0 {
        writeln!(
            out,
            "{} datagrams of further agents counted as 'other'",
            c.agents_overflow
        )?;
    }
    writeln!(out, "({ERROR_FORMULA})")
}
