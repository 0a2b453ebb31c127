//! Writers for `rocetap analyze`: a text summary for people (findings worst first, then
//! a flows table, then events on request), a JSON document (`rocetap.analyze/1`) and CSV
//! with one row per flow. They only format an [`analysis::Report`]; they compute nothing
//! a rule could depend on. The text report can be colored (severity words, failed rules,
//! flows in trouble, event kinds) and, with `-v`, shows each finding's evidence.

use crate::analysis::flow::Trigger;
use crate::analysis::report::Severity;
use crate::analysis::{Event, EventKind, FlowSummary, Report};
use crate::cli::AnalyzeFormat;
use crate::report::findings::{flow_label, message, seen, symptom_message, FindingJson};
use crate::report::rules::Verdict;
use crate::report::style::{Paint, Tone};
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

/// What was read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Input {
    pub files: Vec<String>,
    pub frames: u64,
    pub bytes: u64,
    /// Inputs that end in the middle of a record, with the complete frames read.
    pub cut_short: Vec<crate::source::CutShort>,
}

/// The value of a `--fail-on` name: a key of `totals` or of `derived`.
pub fn lookup(r: &Report, name: &str) -> Option<f64> {
    for v in [
        serde_json::to_value(r.totals).ok()?,
        serde_json::to_value(r.derived).ok()?,
    ] {
        if let Some(x) = v.get(name).and_then(Value::as_f64) {
            return Some(x);
        }
    }
    None
}

/// A number without a useless fraction.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.6}")
    }
}

/// How the text report looks: in color or not, and with each finding's evidence (`-v`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Look {
    pub paint: Paint,
    pub verbose: bool,
}

pub fn write_report(
    out: &mut impl Write,
    format: AnalyzeFormat,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
) -> io::Result<()> {
    match format {
        AnalyzeFormat::Text => text(out, events, look, input, r, verdicts),
        AnalyzeFormat::Json => {
            let rules: Vec<RuleOut> = verdicts
                .iter()
                .map(|v| RuleOut {
                    rule: v.rule.to_string(),
                    actual: v.actual,
                    failed: v.failed,
                })
                .collect();
            let doc = Doc {
                schema: "rocetap.analyze/1",
                input,
                totals: &r.totals,
                derived: &r.derived,
                flows: &r.flows,
                connections: &r.connections,
                findings: r
                    .findings
                    .iter()
                    .map(|f| FindingJson {
                        finding: f,
                        report: r,
                    })
                    .collect(),
                pfc: &r.pfc,
                arp: &r.arp,
                arp_symptoms: &r.arp_symptoms,
                rules,
                events: events.then_some(Events(&r.events)),
            };
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
            out.write_all(b"\n")
        }
        AnalyzeFormat::Csv => csv_flows(out, r),
    }
}

/// The JSON document, serialized straight from the report (no `serde_json::Value` tree
/// in between). Field order is the document's key order: `schema`, `input`, `totals`,
/// `derived`, `flows`, `connections`, `findings`, `pfc`, `arp`, `arp_symptoms`, `rules`,
/// and `events` last, only with `--events`.
#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    input: &'a Input,
    totals: &'a crate::analysis::report::Totals,
    derived: &'a crate::analysis::report::Derived,
    flows: &'a [FlowSummary],
    connections: &'a [crate::analysis::report::Connection],
    findings: Vec<FindingJson<'a>>,
    pfc: &'a [crate::analysis::report::PfcSummary],
    arp: &'a [crate::analysis::report::ArpSummary],
    arp_symptoms: &'a [crate::analysis::report::ArpSymptom],
    rules: Vec<RuleOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<Events<'a>>,
}

/// One `--fail-on` rule and its verdict.
#[derive(Serialize)]
struct RuleOut {
    rule: String,
    actual: f64,
    failed: bool,
}

/// The event list, each event followed by its `detail` sentence.
struct Events<'a>(&'a [Event]);

impl Serialize for Events<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| WithDetail {
            event: e,
            detail: detail(e),
        }))
    }
}

/// An event's own fields, then `detail` (the key the old `Value` writer appended last).
#[derive(Serialize)]
struct WithDetail<'a> {
    #[serde(flatten)]
    event: &'a Event,
    detail: String,
}

fn csv_flows(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let mut cells: Vec<(String, String)> = Vec::new();
    for (i, f) in r.flows.iter().enumerate() {
        cells.clear();
        f.serialize(Flat {
            prefix: String::new(),
            out: &mut cells,
        })
        .map_err(io::Error::other)?;
        if i == 0 {
            w.write_record(cells.iter().map(|(k, _)| k.as_str()))
                .map_err(io::Error::other)?;
        }
        w.write_record(cells.iter().map(|(_, c)| c.as_str()))
            .map_err(io::Error::other)?;
    }
    w.flush()
}

/// Flattens a flow summary into (column, cell) pairs as it serializes, with no
/// `serde_json::Value` in between: nested objects become `a.b` columns, the maps of
/// counts (`opcodes`, `rnr_timers`) one `k=v;...` cell, `null` an empty cell, strings
/// as they are and numbers as JSON writes them (the cells of the former Value-based
/// writer, byte for byte).
struct Flat<'a> {
    prefix: String,
    out: &'a mut Vec<(String, String)>,
}

/// Columns whose map is one `k=v;...` cell.
fn one_cell(prefix: &str) -> bool {
    prefix == "opcodes" || prefix == "rnr_timers"
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A map key or a value inside a one-cell map, as the JSON text of a `Value` shows it.
fn json_text<T: Serialize + ?Sized>(v: &T) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(v)? {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

impl<'a> Flat<'a> {
    fn cell(self, c: String) -> Result<(), serde_json::Error> {
        self.out.push((self.prefix, c));
        Ok(())
    }
    fn json<T: Serialize>(self, v: T) -> Result<(), serde_json::Error> {
        let c = serde_json::to_string(&v)?;
        self.cell(c)
    }
}

/// Collects a compound the flattener does not split (a sequence) as one JSON cell.
struct FlatSeq<'a> {
    flat: Flat<'a>,
    items: Vec<Value>,
}

struct FlatMap<'a> {
    prefix: String,
    out: &'a mut Vec<(String, String)>,
    key: Option<String>,
    /// `Some` while collecting a one-cell map's `k=v` parts.
    parts: Option<Vec<String>>,
}

impl<'a> serde::Serializer for Flat<'a> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = FlatSeq<'a>;
    type SerializeTuple = FlatSeq<'a>;
    type SerializeTupleStruct = FlatSeq<'a>;
    type SerializeTupleVariant = FlatSeq<'a>;
    type SerializeMap = FlatMap<'a>;
    type SerializeStruct = FlatMap<'a>;
    type SerializeStructVariant = FlatMap<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        // A `Value` holds no NaN or infinity: they were null, an empty cell.
        if v.is_finite() {
            self.json(v)
        } else {
            self.cell(String::new())
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        self.cell(v.to_string())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        self.json(v)
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Self::Error> {
        self.cell(String::new())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.cell(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        let prefix = join(&self.prefix, variant);
        v.serialize(Flat {
            prefix,
            out: self.out,
        })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<FlatSeq<'a>, Self::Error> {
        Ok(FlatSeq {
            flat: self,
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<FlatSeq<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<FlatSeq<'a>, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<FlatSeq<'a>, Self::Error> {
        let prefix = join(&self.prefix, variant);
        Flat {
            prefix,
            out: self.out,
        }
        .serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<FlatMap<'a>, Self::Error> {
        let parts = one_cell(&self.prefix).then(Vec::new);
        Ok(FlatMap {
            prefix: self.prefix,
            out: self.out,
            key: None,
            parts,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<FlatMap<'a>, Self::Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<FlatMap<'a>, Self::Error> {
        let prefix = join(&self.prefix, variant);
        Flat {
            prefix,
            out: self.out,
        }
        .serialize_map(Some(len))
    }
}

impl FlatSeq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), serde_json::Error> {
        self.items.push(serde_json::to_value(v)?);
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        let c = Value::Array(self.items).to_string();
        self.flat.cell(c)
    }
}

impl serde::ser::SerializeSeq for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTuple for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTupleStruct for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeTupleVariant for FlatSeq<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        self.push(v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl FlatMap<'_> {
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        key: String,
        v: &T,
    ) -> Result<(), serde_json::Error> {
        match &mut self.parts {
            Some(parts) => parts.push(format!("{key}={}", json_text(v)?)),
            None => v.serialize(Flat {
                prefix: join(&self.prefix, &key),
                out: &mut *self.out,
            })?,
        }
        Ok(())
    }
    fn done(self) -> Result<(), serde_json::Error> {
        if let Some(parts) = self.parts {
            self.out.push((self.prefix, parts.join(";")));
        }
        Ok(())
    }
}

impl serde::ser::SerializeMap for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Self::Error> {
        self.key = Some(json_text(k)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Self::Error> {
        let key = self.key.take().unwrap_or_default();
        self.entry(key, v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeStruct for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.entry(key.to_string(), v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

impl serde::ser::SerializeStructVariant for FlatMap<'_> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Self::Error> {
        self.entry(key.to_string(), v)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.done()
    }
}

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

fn secs(r: &Report, t: u64) -> f64 {
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
fn event_line(r: &Report, e: &Event, paint: Paint) -> String {
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

/// The color of a flow's row: red with NAKs, unrecovered gaps or bad ICRCs, yellow with
/// gaps, resends or RNR NAKs, magenta with only congestion marks.
fn flow_tone(f: &FlowSummary) -> Option<Tone> {
    let c = &f.c;
    let naks = c.naks();
    if naks > 0 || c.unrecovered_gap_events > 0 || f.icrc_bad > 0 && f.icrc_ok > 0 {
        Some(Tone::Bad)
    } else if c.psn_gap_events > 0 || c.retransmitted_packets > 0 || c.rnr_nak > 0 {
        Some(Tone::Warn)
    } else if c.ce_marked > 0 || c.cnp_sent > 0 || c.cnp_received > 0 {
        Some(Tone::Mark)
    } else {
        None
    }
}

/// What a finding counts per flow, and which events are behind it (by its `kind`).
type PerFlow = fn(&FlowSummary) -> u64;
type Behind = fn(&Event) -> bool;

fn evidence_of(kind: &str) -> (Option<PerFlow>, Option<Behind>) {
    fn nak(e: &Event, code: u8) -> bool {
        e.kind == EventKind::Nak && e.code == Some(code)
    }
    fn resent(e: &Event, t: Trigger) -> bool {
        e.kind == EventKind::Retransmission && e.trigger == Some(t)
    }
    match kind {
        "nak_psn_seq" => (
            Some(|f| f.c.nak_psn_seq),
            Some(|e| nak(e, 0) || resent(e, Trigger::Nak)),
        ),
        "timeout_retransmissions" => (
            Some(|f| f.c.timeout_retransmissions),
            Some(|e| resent(e, Trigger::Timeout)),
        ),
        "unrecovered_gaps" => (
            Some(|f| {
                f.c.unrecovered_gap_events
                    .saturating_sub(f.c.capture_loss_gap_events)
            }),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss != Some(true)),
        ),
        "nak_invalid_request" => (Some(|f| f.c.nak_invalid_request), Some(|e| nak(e, 1))),
        "nak_remote_access" => (Some(|f| f.c.nak_remote_access), Some(|e| nak(e, 2))),
        "nak_remote_operational" => (Some(|f| f.c.nak_remote_operational), Some(|e| nak(e, 3))),
        "nak_invalid_rd_request" => (Some(|f| f.c.nak_invalid_rd_request), Some(|e| nak(e, 4))),
        "nak_reserved" => (
            Some(|f| f.c.nak_reserved),
            Some(|e| e.kind == EventKind::Nak && e.code.is_some_and(|c| c > 4)),
        ),
        "icrc_bad" | "icrc_not_preserved" => (Some(|f| f.icrc_bad), None),
        "capture_loss" => (
            Some(|f| f.c.capture_loss_gap_events),
            Some(|e| e.kind == EventKind::GapUnrecovered && e.capture_loss == Some(true)),
        ),
        "rnr_nak" => (
            Some(|f| f.c.rnr_nak),
            Some(|e| e.kind == EventKind::RnrNak || resent(e, Trigger::Rnr)),
        ),
        "read_rerequests" => (
            Some(|f| f.c.read_rerequests),
            Some(|e| e.kind == EventKind::ReadRerequest || resent(e, Trigger::ReadRerequest)),
        ),
        "unknown_retransmissions" => (
            Some(|f| f.c.unknown_retransmissions),
            Some(|e| resent(e, Trigger::Unknown)),
        ),
        "pfc_pause" => (Some(|f| f.c.pfc_stalls), None),
        "congestion" => (
            Some(|f| f.c.ce_marked + f.c.cnp_sent),
            Some(|e| e.kind == EventKind::CnpWithoutCe),
        ),
        "arp_unanswered" => (None, Some(|e| e.kind == EventKind::ArpUnanswered)),
        _ => (None, None),
    }
}

/// Events shown per finding under `-v` (`--events` lists them all).
const EVIDENCE_EVENTS: usize = 20;

/// `-v`: under a finding, every flow it concerns with its count, the ARP symptoms of its
/// kind with their evidence, PFC per sender and priority, and its first events.
fn evidence(
    out: &mut impl Write,
    r: &Report,
    f: &crate::analysis::report::Finding,
    paint: Paint,
) -> io::Result<()> {
    const IN: &str = "            ";
    let (per_flow, behind) = evidence_of(f.code());
    writeln!(out, "{IN}kind {}, count {}", f.code(), f.count)?;
    if let Some(n) = per_flow {
        let mut flows: Vec<(&FlowSummary, u64)> = r
            .flows
            .iter()
            .map(|x| (x, n(x)))
            .filter(|p| p.1 > 0)
            .collect();
        flows.sort_by_key(|p| (std::cmp::Reverse(p.1), p.0.id));
        if !flows.is_empty() {
            writeln!(out, "{IN}flows ({}):", flows.len())?;
            for (x, c) in flows {
                let label = format!("{:>4} {}", x.id, flow_label(x));
                writeln!(out, "{IN}  {label:<52} {c}")?;
            }
        }
    }
    let symptoms = r
        .arp_symptoms
        .iter()
        .filter(|s| s.kind().code() == f.code());
    for s in symptoms {
        writeln!(out, "{IN}{:.9} {}", secs(r, s.t_ns), symptom_message(s))?;
        for e in &s.evidence {
            writeln!(
                out,
                "{IN}  {:.9} {}  ->  {}",
                secs(r, e.t_ns),
                e.iface,
                seen(&e.seen)
            )?;
        }
    }
    if f.code() == "pfc_pause" {
        for p in &r.pfc {
            for q in &p.per_priority {
                writeln!(
                    out,
                    "{IN}{} priority {}: {} frames, {} quanta, {:.1} µs paused",
                    p.src_mac,
                    q.priority,
                    q.frames,
                    q.quanta,
                    q.pause_ns as f64 / 1e3
                )?;
            }
        }
    }
    if let Some(pred) = behind {
        let all: Vec<&Event> = r.events.iter().filter(|e| pred(e)).collect();
        if !all.is_empty() {
            writeln!(out, "{IN}events ({}):", all.len())?;
            for e in all.iter().take(EVIDENCE_EVENTS) {
                writeln!(out, "{IN}  {}", event_line(r, e, paint))?;
            }
            if all.len() > EVIDENCE_EVENTS {
                writeln!(
                    out,
                    "{IN}  ... {} more (--events lists every event)",
                    all.len() - EVIDENCE_EVENTS
                )?;
            }
        }
    }
    Ok(())
}

/// Rows of the text report's flows table (`-v` adds the whole table after them).
pub const TEXT_FLOWS: usize = 50;

/// A flow's trouble, compared worst first: PSN gaps, resends, NAKs, RNR NAKs, CE marks,
/// CNPs, then packets.
fn trouble(f: &FlowSummary) -> [u64; 7] {
    let c = &f.c;
    let naks = c.naks();
    [
        c.psn_gap_events,
        c.retransmitted_packets,
        naks,
        c.rnr_nak,
        c.ce_marked,
        c.cnp_sent,
        f.packets,
    ]
}

/// The flows the text table shows: all of them in id order when they fit in
/// [`TEXT_FLOWS`] rows, otherwise the [`TEXT_FLOWS`] worst by
/// [`trouble`], worst first (ties by id). Selecting is O(n), sorting only the shown rows.
fn shown_flows(flows: &[FlowSummary]) -> Vec<&FlowSummary> {
    let mut v: Vec<&FlowSummary> = flows.iter().collect();
    if v.len() <= TEXT_FLOWS {
        return v;
    }
    let worse =
        |a: &&FlowSummary, b: &&FlowSummary| trouble(b).cmp(&trouble(a)).then(a.id.cmp(&b.id));
    v.select_nth_unstable_by(TEXT_FLOWS - 1, worse);
    v.truncate(TEXT_FLOWS);
    v.sort_by(worse);
    v
}

/// 16334 -> "16,334".
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut o = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

/// The flows table: its header and one row per flow, in the order given.
fn flows_table(out: &mut impl Write, paint: Paint, flows: &[&FlowSummary]) -> io::Result<()> {
    writeln!(
        out,
        "  {:>4} {:<44} {:<4} {:>8} {:>9} {:>7} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>6} {:>10}",
        "id", "flow", "tr", "packets", "Gb/s", "msgs", "pmtu", "gaps", "retx", "NAK", "RNR", "CE", "CNP", "peer", "ICRCok", "ack p50"
    )?;
    for &f in flows {
        let label = format!("{} → {} {}", f.src, f.dst, f.qp);
        let tone = flow_tone(f);
        let (on, off) = (paint.open(tone), paint.close(tone));
        writeln!(
            out,
            "  {on}{:>4} {:<44} {:<4} {:>8} {:>9.3} {:>7} {:>5} {:>5} {:>5} {:>5} {:>4} {:>4} {:>5} {:>5} {:>6} {:>10}{off}",
            f.id,
            label,
            f.transport,
            f.packets,
            f.gbps,
            f.messages,
            f.pmtu.map_or("-".into(), |p| p.to_string()),
            f.c.psn_gap_events,
            f.c.retransmitted_packets,
            f.c.naks(),
            f.c.rnr_nak,
            f.c.ce_marked,
            f.c.cnp_sent,
            f.peer.map_or("-".into(), |p| p.to_string()),
            f.icrc_ok,
            f.ack_latency
                .median_ns
                .map_or("-".into(), |n| format!("{:.1}µs", n as f64 / 1e3)),
        )?;
    }
    Ok(())
}

fn text(
    out: &mut impl Write,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
) -> io::Result<()> {
    let paint = look.paint;
    let t = &r.totals;
    writeln!(
        out,
        "{}: {} frames, {} RoCE packets over {:.6} s; {} flows, {} RC connections paired",
        input.files.join(", "),
        t.frames,
        t.roce_packets,
        r.derived.duration_s,
        t.flows,
        t.connections
    )?;
    writeln!(out)?;
    if r.findings.is_empty() {
        writeln!(out, "{}", paint.tone(Tone::Good, "No problems found."))?;
    } else {
        writeln!(out, "Findings, worst first:")?;
        for f in &r.findings {
            let (sev, pad, tone) = match f.severity {
                Severity::Error => ("ERROR", "  ", Tone::Bad),
                Severity::Warning => ("WARNING", "", Tone::Warn),
                Severity::Info => ("info", "   ", Tone::Note),
            };
            writeln!(out, "  {}{pad} {}", paint.tone(tone, sev), message(f, r))?;
            if look.verbose {
                evidence(out, r, f, paint)?;
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Totals: NAKs {} (PSN seq {}), RNR NAKs {}, PSN gaps {} ({} PSNs, {} recovered, {} unrecovered, {} likely capture loss), retransmitted {} (NAK {}, RNR {}, timeout {}, READ {}, unknown {}), retry episodes {} (NAK {}, RNR {}, timeout {}, READ {}), duplicates {}, reordered {}, READ re-requests {}, CE {}, CNP {}, ICRC ok/bad/unchecked {}/{}/{}, malformed {}, truncated {}, PFC {}, ARP unanswered {}",
        r.derived.naks, t.nak_psn_seq, t.rnr_nak, t.psn_gap_events, t.missing_psns,
        t.recovered_gap_events, t.unrecovered_gap_events, t.capture_loss_gap_events,
        t.retransmitted_packets, t.nak_retransmissions, t.rnr_retransmissions,
        t.timeout_retransmissions, t.read_retransmissions, t.unknown_retransmissions,
        t.retransmission_episodes, t.nak_retransmission_episodes,
        t.rnr_retransmission_episodes, t.timeout_retransmission_episodes,
        t.read_retransmission_episodes, t.duplicate_packets, t.reordered_packets,
        t.read_rerequests, t.ce_marked, t.cnp, t.icrc_ok, t.icrc_bad, t.icrc_unchecked,
        t.malformed, t.truncated, t.pfc_pause_frames, t.arp_unanswered
    )?;
    if !verdicts.is_empty() {
        writeln!(out)?;
        writeln!(out, "Rules:")?;
        for v in verdicts {
            writeln!(
                out,
                "  {} {} (actual {})",
                if v.failed {
                    paint.tone(Tone::Bad, "FAIL")
                } else {
                    paint.tone(Tone::Good, "ok  ")
                },
                v.rule,
                num(v.actual)
            )?;
        }
    }
    writeln!(out)?;
    let shown = shown_flows(&r.flows);
    let cut = shown.len() < r.flows.len();
    if cut {
        writeln!(
            out,
            "Flows (the {} worst of {}, worst first; -v shows all):",
            shown.len(),
            r.flows.len()
        )?;
    } else {
        writeln!(out, "Flows:")?;
    }
    flows_table(out, paint, &shown)?;
    if cut {
        writeln!(
            out,
            "  ... and {} more flows, see --format json (or -v)",
            group(r.flows.len() - shown.len())
        )?;
        if look.verbose {
            // `-v` adds to the plain report: the whole table follows the worst.
            writeln!(out)?;
            writeln!(out, "All {} flows:", r.flows.len())?;
            let all: Vec<&FlowSummary> = r.flows.iter().collect();
            flows_table(out, paint, &all)?;
        }
    }
    if events {
        writeln!(out)?;
        writeln!(out, "Events:")?;
        for e in &r.events {
            writeln!(out, "  {}", event_line(r, e, paint))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::group;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(16_334), "16,334");
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
