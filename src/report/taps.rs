//! The words and JSON of `analyze --tap`: where the loss is, per connection direction
//! and segment of the path, the delay between taps, and the taps that disagree.

use crate::analysis::report::Totals as BaseTotals;
use crate::taps::{Delay, Direction, Report, Segment};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use std::io::{self, Write};
use std::net::IpAddr;

/// A segment's location code (the `location` values of the analyze schema) and its two
/// ends: `before_tap` (no start), `between_taps`, `after_tap` (no end).
fn place<'a>(
    r: &'a Report,
    d: &Direction,
    i: usize,
) -> (&'static str, Option<&'a str>, Option<&'a str>) {
    let name = |k: usize| r.taps[d.path[k]].name.as_str();
    let n = d.path.len();
    if i == 0 {
        ("before_tap", None, Some(name(0)))
    } else if i == n {
        ("after_tap", Some(name(n - 1)), None)
    } else {
        ("between_taps", Some(name(i - 1)), Some(name(i)))
    }
}

fn where_words(code: &str, a: Option<&str>, b: Option<&str>) -> String {
    let t = |s: Option<&str>| crate::escape::term(s.unwrap_or("")).to_string();
    match code {
        "before_tap" => format!("before {}", t(b)),
        "after_tap" => format!("after {}", t(a)),
        _ => format!("{} -> {}", t(a), t(b)),
    }
}

fn us(s: f64) -> String {
    format!("{:.1} us", s * 1e6)
}

fn psns(s: &Segment) -> String {
    let mut out = s
        .psns
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if s.lost > s.psns.len() as u64 {
        out.push_str(",...");
    }
    out
}

/// The text section "Where the loss is".
pub fn text(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Where the loss is ({} taps in path order from the host that sends first: {}):",
        r.taps.len(),
        r.taps
            .iter()
            .map(|t| crate::escape::term(&t.name).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let t = &r.totals;
    writeln!(
        out,
        "  lost before the first tap {}, between taps {}, after the last tap {}",
        t.lost_before_first_tap, t.lost_between_taps, t.lost_after_last_tap
    )?;
    if let Some(q) = t.queueing_delay_median_s {
        writeln!(
            out,
            "  queueing delay between the first two taps, median above its minimum: {}",
            us(q)
        )?;
    }
    for d in &r.directions {
        writeln!(
            out,
            "  {} -> {} QP {:#08x}: {} packets, {} seen at more than one tap",
            d.key.src, d.key.dst, d.key.qpn, d.packets, d.matched
        )?;
        for l in direction_lines(r, d) {
            writeln!(out, "    {l}")?;
        }
    }
    if !r.clocks_synced {
        writeln!(
            out,
            "  (one-way delays need synchronised clocks: --clocks-synced)"
        )?;
    }
    for tap in &r.taps {
        let name = crate::escape::term(&tap.name);
        if let Some(m) = &tap.mirror {
            writeln!(out, "  tap {name}: mirror session {m}")?;
        }
        if tap.roce == 0 {
            writeln!(out, "  tap {name}: no RoCE packets ({} frames)", tap.frames)?;
        }
        if tap.missed > 0 {
            writeln!(
                out,
                "  tap {name} missed {} packets a tap after it saw: its capture dropped frames; not counted as loss",
                tap.missed
            )?;
        }
        if let Some(n) = tap.capture_dropped.filter(|&n| n > 0) {
            writeln!(
                out,
                "  tap {name}: its capture reports {n} frames dropped (pcapng statistics): not trusted where the taps disagree"
            )?;
        }
        if tap.cut_short {
            writeln!(
                out,
                "  tap {name}: the capture ends in the middle of a record"
            )?;
        }
        if tap.alone > 0 {
            writeln!(
                out,
                "  tap {name}: {} packets of directions no other tap saw (unrelated traffic?)",
                tap.alone
            )?;
        }
    }
    Ok(())
}

/// A direction's story, a line each: segments with loss, NAKs or timer retries, then
/// the delays between adjacent taps (the text report's lines under the direction, and
/// `top`'s detail view).
pub fn direction_lines(r: &Report, d: &Direction) -> Vec<String> {
    let mut out = Vec::new();
    if d.matched == 0 {
        out.push("only one tap saw this direction: nothing to compare".to_string());
        return out;
    }
    for (i, s) in d.segments.iter().enumerate() {
        let (code, a, b) = place(r, d, i);
        if s.lost == 0 && s.naks == 0 && s.timer_retries == 0 {
            continue;
        }
        out.push(format!(
            "{:<24} lost {:>5}  NAKs {:>4}  timer retries {:>4}  PSNs {}",
            where_words(code, a, b),
            s.lost,
            s.naks,
            s.timer_retries,
            psns(s)
        ));
    }
    for (i, dl) in d.delays.iter().enumerate() {
        let Some(dl) = dl else { continue };
        let (_, a, b) = place(r, d, i + 1);
        let abs = match (dl.min_s, dl.median_s, dl.p99_s) {
            (Some(m), Some(md), Some(p)) => {
                format!("one-way min {}, median {}, p99 {}; ", us(m), us(md), us(p))
            }
            _ => String::new(),
        };
        out.push(format!(
            "delay {:<18} {}above min: median {}, p99 {}, max {} ({} packets)",
            where_words("between_taps", a, b),
            abs,
            us(dl.median_above_min_s),
            us(dl.p99_above_min_s),
            us(dl.max_above_min_s),
            dl.count
        ));
    }
    out
}

/// The direction of the merged analysis that is this flow (source, destination,
/// DestQP), if the taps saw it.
pub fn direction_of(r: &Report, src: IpAddr, dst: IpAddr, qpn: u32) -> Option<&Direction> {
    r.directions
        .iter()
        .find(|d| d.key.src == src && d.key.dst == dst && d.key.qpn == qpn)
}

/// Where a direction's packets were lost, in a few words for a table cell: each segment
/// with loss and its count, in path order (`before a 1, a→s 4, after s 1`); `no loss`;
/// `-` when no packet was seen at two taps (nothing to compare).
pub fn lost_at(r: &Report, d: &Direction) -> String {
    if d.matched == 0 {
        return "-".into();
    }
    let v: Vec<String> = d
        .segments
        .iter()
        .enumerate()
        .filter(|(_, s)| s.lost > 0)
        .map(|(i, s)| format!("{} {}", segment_short(r, d, i), s.lost))
        .collect();
    if v.is_empty() {
        return "no loss".into();
    }
    v.join(", ")
}

/// A direction's segments and delays in short lines (`top`'s detail view): each
/// segment with loss, NAKs or timer retries, then each delay between adjacent taps.
pub fn direction_short(r: &Report, d: &Direction) -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in d.segments.iter().enumerate() {
        if s.lost == 0 && s.naks == 0 && s.timer_retries == 0 {
            continue;
        }
        out.push(format!(
            "{}: lost {}, NAKs {}, timer retries {}, PSNs {}",
            segment_short(r, d, i),
            s.lost,
            s.naks,
            s.timer_retries,
            if s.psns.is_empty() {
                "-".into()
            } else {
                psns(s)
            }
        ));
    }
    for (i, dl) in d.delays.iter().enumerate() {
        let Some(dl) = dl else { continue };
        let abs = match dl.median_s {
            Some(m) => format!("one-way median {}; ", us(m)),
            None => String::new(),
        };
        out.push(format!(
            "delay {}: {}above min median {}, p99 {}, max {} ({} packets)",
            segment_short(r, d, i + 1),
            abs,
            us(dl.median_above_min_s),
            us(dl.p99_above_min_s),
            us(dl.max_above_min_s),
            dl.count
        ));
    }
    out
}

/// A segment's short name: `before a`, `a→s`, `after s`.
pub fn segment_short(r: &Report, d: &Direction, i: usize) -> String {
    let (code, a, b) = place(r, d, i);
    let t = |s: Option<&str>| crate::escape::term(s.unwrap_or("")).to_string();
    match code {
        "before_tap" => format!("before {}", t(b)),
        "after_tap" => format!("after {}", t(a)),
        _ => format!("{}→{}", t(a), t(b)),
    }
}

/// The taps in path order, for a title: `a, s`.
pub fn tap_names(r: &Report) -> String {
    r.taps
        .iter()
        .map(|t| crate::escape::term(&t.name).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `totals` of the analyze document with the merged analysis's keys added.
pub struct TotalsJson<'a> {
    /// The first tap's analysis.
    pub base: &'a BaseTotals,
    /// The merged one.
    pub taps: &'a Report,
}

impl Serialize for TotalsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let base = serde_json::to_value(self.base).map_err(serde::ser::Error::custom)?;
        let mut m = s.serialize_map(None)?;
        if let serde_json::Value::Object(o) = &base {
            for (k, v) in o {
                m.serialize_entry(k, v)?;
            }
        }
        let t = &self.taps.totals;
        m.serialize_entry("lost_before_first_tap", &t.lost_before_first_tap)?;
        m.serialize_entry("lost_between_taps", &t.lost_between_taps)?;
        m.serialize_entry("lost_after_last_tap", &t.lost_after_last_tap)?;
        m.serialize_entry("queueing_delay_median_s", &t.queueing_delay_median_s)?;
        m.end()
    }
}

/// The `taps` object of the analyze document.
pub struct TapsJson<'a>(pub &'a Report);

impl Serialize for TapsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut st = s.serialize_struct("taps", 3)?;
        st.serialize_field("clocks_synced", &r.clocks_synced)?;
        let points: Vec<_> = r
            .taps
            .iter()
            .map(|t| {
                let mut p = serde_json::json!({
                    "name": t.name,
                    "frames": t.frames,
                    "roce_packets": t.roce,
                    "missed": t.missed,
                    "alone": t.alone,
                    "clock_offset_s": t.offset_ns as f64 / 1e9,
                    "cut_short": t.cut_short,
                    "capture_dropped": t.capture_dropped,
                    "trusted": t.trusted(),
                });
                // Only for a mirror session: other documents stay as they were.
                if let (Some(m), Some(o)) = (&t.mirror, p.as_object_mut()) {
                    o.insert("mirror_session".into(), m.to_string().into());
                }
                p
            })
            .collect();
        st.serialize_field("points", &points)?;
        let dirs: Vec<_> = r.directions.iter().map(|d| DirJson(r, d)).collect();
        st.serialize_field("directions", &dirs)?;
        st.end()
    }
}

struct DirJson<'a>(&'a Report, &'a Direction);

impl Serialize for DirJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, d) = (self.0, self.1);
        let mut st = s.serialize_struct("direction", 8)?;
        st.serialize_field("src", &d.key.src.to_string())?;
        st.serialize_field("dst", &d.key.dst.to_string())?;
        st.serialize_field("dest_qp", &d.key.qpn)?;
        let path: Vec<&str> = d.path.iter().map(|&i| r.taps[i].name.as_str()).collect();
        st.serialize_field("path", &path)?;
        st.serialize_field("packets", &d.packets)?;
        st.serialize_field("matched", &d.matched)?;
        let segs: Vec<_> = d
            .segments
            .iter()
            .enumerate()
            .map(|(i, sg)| {
                let (code, a, b) = place(r, d, i);
                serde_json::json!({
                    "location": code,
                    "segment": [a, b],
                    "lost": sg.lost,
                    "psns": sg.psns,
                    "first_s": sg.first_ns.map(|t| t as f64 / 1e9),
                    "last_s": sg.last_ns.map(|t| t as f64 / 1e9),
                    "naks": sg.naks,
                    "timer_retries": sg.timer_retries,
                })
            })
            .collect();
        st.serialize_field("segments", &segs)?;
        let delays: Vec<_> = d
            .delays
            .iter()
            .enumerate()
            .map(|(i, dl)| {
                let (_, a, b) = place(r, d, i + 1);
                delay_json(a, b, dl.as_ref())
            })
            .collect();
        st.serialize_field("delays", &delays)?;
        st.end()
    }
}

fn delay_json(a: Option<&str>, b: Option<&str>, d: Option<&Delay>) -> serde_json::Value {
    serde_json::json!({
        "segment": [a, b],
        "count": d.map_or(0, |d| d.count),
        "min_s": d.and_then(|d| d.min_s),
        "median_s": d.and_then(|d| d.median_s),
        "p99_s": d.and_then(|d| d.p99_s),
        "median_above_min_s": d.map(|d| d.median_above_min_s),
        "p99_above_min_s": d.map(|d| d.p99_above_min_s),
        "max_above_min_s": d.map(|d| d.max_above_min_s),
    })
}
