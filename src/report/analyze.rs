//! Writers for `rocetap analyze`: a text summary for people (findings worst first, then
//! a flows table, then events on request; `super::text`), a JSON document
//! (`rocetap.analyze/1`, here) and CSV with one row per flow (`super::csv`). They only
//! format an [`analysis::Report`](crate::analysis::Report); they compute nothing a rule
//! could depend on. The text report can be colored (severity words, failed rules, flows
//! in trouble, event kinds) and, with `-v`, shows each finding's evidence.

use super::csv::csv_flows;
use super::events::detail;
use super::text::text;
use crate::analysis::{Event, Report};
use crate::config::OutputFormat as AnalyzeFormat;
use crate::report::findings::FindingJson;
use crate::report::rules::Verdict;
use crate::report::style::Paint;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

/// What was read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Input {
    /// The inputs' names as given (`-` for stdin).
    pub files: Vec<String>,
    /// Frames read, over every input.
    pub frames: u64,
    /// Captured bytes of those frames (what the snaplen kept, not the wire length).
    pub bytes: u64,
    /// Inputs that end in the middle of a record, with the complete frames read.
    pub cut_short: Vec<crate::capture::input::CutShort>,
    /// With `--qp-table`: the kernel's QPs behind each flow (the document's top-level
    /// `qp_table` key, not part of `input`).
    #[serde(skip)]
    pub qp_table: Option<Vec<crate::qptable::FlowQps>>,
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
    /// Color or not.
    pub paint: Paint,
    /// Print each finding's evidence (`-v`).
    pub verbose: bool,
}

/// Writes the `analyze` report of `r` to `out`: the text report, the JSON document
/// (`rocetap.analyze/1`, with the event list when `events` is set) or the per-flow CSV,
/// each with the `--fail-on` verdicts where the format has room for them.
pub fn write_report(
    out: &mut impl Write,
    format: AnalyzeFormat,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
) -> io::Result<()> {
    write_report_taps(out, format, events, look, input, r, verdicts, None)
}

/// [`write_report`] with the merged analysis of several taps (`analyze --tap`): its
/// section after the text report, its keys in the JSON document (`totals` gains
/// `lost_before_first_tap`, `lost_between_taps`, `lost_after_last_tap`,
/// `queueing_delay_median_s`; a `taps` object at the end). CSV rows are the flows'.
#[allow(clippy::too_many_arguments)]
pub fn write_report_taps(
    out: &mut impl Write,
    format: AnalyzeFormat,
    events: bool,
    look: Look,
    input: &Input,
    r: &Report,
    verdicts: &[Verdict<'_>],
    taps: Option<&crate::taps::Report>,
) -> io::Result<()> {
    match format {
        AnalyzeFormat::Text => {
            text(&mut *out, events, look, input, r, verdicts)?;
            match taps {
                Some(t) => super::taps::text(out, t),
                None => Ok(()),
            }
        }
        AnalyzeFormat::Json => {
            let rules: Vec<RuleOut> = verdicts
                .iter()
                .map(|v| RuleOut {
                    rule: v.rule.to_string(),
                    actual: v.actual,
                    failed: v.failed,
                })
                .collect();
            let findings: Vec<FindingJson<'_>> = r
                .findings
                .iter()
                .map(|f| FindingJson {
                    finding: f,
                    report: r,
                })
                .collect();
            json_doc(&mut *out, input, r, &findings, &rules, events, taps)
                .map_err(io::Error::from)?;
            out.write_all(b"\n")
        }
        AnalyzeFormat::Csv => csv_flows(out, r),
    }
}

/// The JSON document, serialized straight from the report (no `serde_json::Value` tree
/// in between), its keys in this order: `schema`, `input`, `totals`, `derived`, `flows`,
/// `connections`, `findings`, `pfc`, `arp`, `arp_symptoms`, `rules`, `events` only with
/// `--events`, `qp_table` only with `--qp-table`, `cm` only when the capture has CM setups,
/// `mirrors` only for a capture of switch mirrors, and `taps` last with `--tap`. Every value is written by serde_json from its `Serialize` impl
/// (`super::pretty_json`); the flows and connections, thousands on a busy node, render on
/// two threads (`ObjectWriter::list_field`).
fn json_doc(
    out: &mut impl Write,
    input: &Input,
    r: &Report,
    findings: &[FindingJson<'_>],
    rules: &[RuleOut],
    events: bool,
    taps: Option<&crate::taps::Report>,
) -> Result<(), serde_json::Error> {
    let mut w = super::pretty_json::ObjectWriter::new(out);
    w.field("schema", "rocetap.analyze/1")?;
    w.field("input", input)?;
    match taps {
        Some(t) => w.field(
            "totals",
            &super::taps::TotalsJson {
                base: &r.totals,
                taps: t,
            },
        )?,
        None => w.field("totals", &r.totals)?,
    }
    w.field("derived", &r.derived)?;
    w.list_field("flows", &r.flows)?;
    w.list_field("connections", &r.connections)?;
    w.field("findings", findings)?;
    w.field("pfc", &r.pfc)?;
    w.field("arp", &r.arp)?;
    w.field("arp_symptoms", &r.arp_symptoms)?;
    w.field("rules", rules)?;
    if events {
        w.field("events", &Events(&r.events))?;
    }
    // With `--qp-table` only: the kernel's QPs behind each flow.
    if let Some(q) = input.qp_table.as_deref() {
        w.field("qp_table", q)?;
    }
    // Connection setups from the capture's CM messages, only when there were some.
    if !r.cm.is_empty() {
        w.field("cm", &r.cm)?;
    }
    // The mirror sessions (ERSPAN, GRE, VXLAN, Geneve), only for a capture of mirrors.
    if !r.mirrors.is_empty() {
        w.field("mirrors", &r.mirrors)?;
        w.field("mirrors_other_frames", &r.mirrors_other_frames)?;
    }
    // The merged analysis of several taps (`analyze --tap`).
    if let Some(t) = taps {
        w.field("taps", &super::taps::TapsJson(t))?;
    }
    w.finish()
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
