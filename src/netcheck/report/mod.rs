//! netcheck output: plain text (the verdict in words first, then each finding with its
//! evidence and fix) or one JSON document with `"schema": "rocetap.netcheck/1"`.

use super::checks::{Evidence, Severity};
use super::lookup::{Outcome, Query};
use super::model::table_name;
use super::sysfs::Port;
use crate::report::safe::term;
use crate::report::style::{Paint, Tone};
use serde::Serialize;
use serde_json::{json, Value};
use std::fmt::Write;

pub mod nad;
pub mod words;

/// A netcheck finding in words, as the report shows it: the typed value a check found
/// ([`crate::netcheck::found::Found`]) worded by [`words`] — or, for the NAD lint, by
/// `report::words::nad`.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Stable identifier: `reply-path`, `node-source`, `arp-sysctl`, `roce-*`.
    pub id: &'static str,
    /// How bad it is; findings at or above the `--fail-on` gate make the run exit 1.
    pub severity: Severity,
    /// One line, plain words.
    pub title: String,
    /// Why it happens.
    pub detail: String,
    /// The lookups or observations that prove the finding, in the order they were made.
    pub evidence: Vec<Evidence>,
    /// Commands or settings that fix it.
    pub fix: Vec<String>,
    /// A longer configuration block to paste (e.g. the NetworkAttachmentDefinition with `sbr`
    /// chained); `None` for most findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// Per-interface sysctls and what they do here (see [`words::interfaces`]).
#[derive(Clone, Debug, Serialize)]
pub struct IfaceSysctl {
    /// The device name.
    pub dev: String,
    /// The effective `rp_filter` (the larger of `all` and the device's): 0 off, 1 strict, 2 loose;
    /// `None` when not collected.
    pub rp_filter: Option<i64>,
    /// The effective `arp_ignore` (the larger of `all` and the device's): which ARP requests the
    /// device answers; `None` when unknown.
    pub arp_ignore: Option<i64>,
    /// The effective `arp_announce` (the larger of `all` and the device's): which source address
    /// its ARP requests name; `None` when unknown.
    pub arp_announce: Option<i64>,
    /// The effective `arp_filter` (1 when `all` or the device has it set): answer ARP only when the
    /// reply would leave through this device; `None` when unknown.
    pub arp_filter: Option<i64>,
    /// One sentence per sysctl on what it does on this interface, for `--verbose` text.
    pub effect: Vec<String>,
}

/// The `schema` of netcheck's JSON report; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "rocetap.netcheck/1";

/// A netcheck run's result: the verdict, the findings worst first, and what was read to reach them.
/// Serialized as is for `--format json`.
#[derive(Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// What was checked: the namespace (`netns NAME`, `pid PID`, a `--from` directory) and/or the
    /// captures, joined with ` + `.
    pub origin: String,
    /// `ok` or `findings`.
    pub verdict: &'static str,
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning (infos are not counted).
    pub warnings: usize,
    /// Every finding, sorted worst first.
    pub findings: Vec<Finding>,
    /// The rp_filter / ARP sysctls of each interface and their effect; empty when not collected.
    pub interfaces: Vec<IfaceSysctl>,
    /// The RDMA ports read from sysfs; empty offline without `--sysfs-root` or on a machine without
    /// RDMA devices.
    pub rdma_ports: Vec<Port>,
    /// The RoCE ports' QoS state (trust, DSCP map, PFC, ECN, CNP DSCP, RDMA-CM defaults,
    /// GIDs, MTUs); left out when sysfs was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qos: Option<super::qos::HostQos>,
}

impl Report {
    /// Builds the report: sorts the findings worst first and counts errors and warnings for the
    /// verdict.
    pub fn new(
        origin: String,
        mut findings: Vec<Finding>,
        interfaces: Vec<IfaceSysctl>,
        rdma_ports: Vec<Port>,
    ) -> Self {
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        let errors = findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        let warnings = findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        Report {
            schema: SCHEMA,
            origin,
            verdict: if errors + warnings > 0 {
                "findings"
            } else {
                "ok"
            },
            errors,
            warnings,
            findings,
            interfaces,
            rdma_ports,
            qos: None,
        }
    }

    /// True when there are errors or warnings (infos alone leave the verdict `ok`).
    pub fn has_findings(&self) -> bool {
        self.errors + self.warnings > 0
    }

    /// The text report; `paint` colors the verdict and severity words, `verbose` shows the
    /// effect of every interface sysctl (otherwise: rp_filter, and ARP knobs not at 0).
    /// Every string read from outside (interface, namespace, device names, dump paths) is
    /// escaped for the terminal by [`term`].
    pub fn text(&self, paint: Paint, verbose: bool) -> String {
        let mut s = String::new();
        if self.has_findings() {
            let _ = writeln!(
                s,
                "{}: {} problem{} found ({} error{}, {} warning{}).",
                term(&self.origin),
                self.errors + self.warnings,
                plural(self.errors + self.warnings),
                self.errors,
                plural(self.errors),
                self.warnings,
                plural(self.warnings)
            );
        } else {
            let _ = writeln!(
                s,
                "{}: {}",
                term(&self.origin),
                paint.tone(Tone::Good, "no routing, ARP or RoCE problems found.")
            );
        }
        for f in &self.findings {
            let tone = match f.severity {
                Severity::Error => Tone::Bad,
                Severity::Warning => Tone::Warn,
                Severity::Info => Tone::Note,
            };
            let label = paint.tone(tone, f.severity.label());
            // names in the words come from outside: escaped once, here
            let f = &escaped(f);
            let _ = writeln!(s, "\n{label} {}: {}", f.id, f.title);
            write_body(&mut s, f);
        }
        if !self.interfaces.is_empty() {
            let _ = writeln!(s, "\ninterfaces (effective sysctls):");
            for i in &self.interfaces {
                let v = |x: Option<i64>| x.map_or("?".to_string(), |v| v.to_string());
                let _ = writeln!(
                    s,
                    "  {:<16} rp_filter {}  arp_ignore {}  arp_announce {}  arp_filter {}",
                    term(&i.dev),
                    v(i.rp_filter),
                    v(i.arp_ignore),
                    v(i.arp_announce),
                    v(i.arp_filter)
                );
                // what the values do: rp_filter always, the ARP knobs when not default
                for e in &i.effect {
                    if verbose || e.starts_with("rp_filter") || !e.contains(" 0:") {
                        let _ = writeln!(s, "    {}", term(e));
                    }
                }
            }
        }
        for p in &self.rdma_ports {
            let _ = writeln!(
                s,
                "rdma {} port {}: netdevs {}, {} GIDs, active_mtu {}",
                term(&p.device),
                term(&p.port),
                term(&p.netdevs.join(",")),
                p.gids.len(),
                p.active_mtu.map_or("?".into(), |m| m.to_string())
            );
        }
        if let Some(q) = &self.qos {
            for line in words::qos_summary(q) {
                let _ = writeln!(s, "{}", term(&line));
            }
        }
        s
    }
}

/// A finding's explanation, evidence, fix and snippet, indented under its title line
/// (netcheck's and the NAD lint's text reports). The caller escapes the finding's text
/// for the terminal first (see [`Report::text`]).
pub(crate) fn write_body(s: &mut String, f: &Finding) {
    for line in wrap(&f.detail, 88) {
        let _ = writeln!(s, "  {line}");
    }
    if !f.evidence.is_empty() {
        let _ = writeln!(s, "  evidence:");
        for e in &f.evidence {
            let _ = writeln!(s, "    {}  ->  {}", e.query, e.answer);
        }
    }
    if !f.fix.is_empty() {
        let _ = writeln!(s, "  fix:");
        for x in &f.fix {
            let _ = writeln!(s, "    {x}");
        }
    }
    if let Some(sn) = &f.snippet {
        for line in sn.lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
}

/// `f` with its title, detail, evidence, fix and snippet (line by line) escaped for a
/// terminal by [`term`].
pub(crate) fn escaped(f: &Finding) -> Finding {
    let t = |x: &str| term(x).into_owned();
    Finding {
        id: f.id,
        severity: f.severity,
        title: t(&f.title),
        detail: t(&f.detail),
        evidence: f
            .evidence
            .iter()
            .map(|e| Evidence {
                query: t(&e.query),
                answer: t(&e.answer),
            })
            .collect(),
        fix: f.fix.iter().map(|x| t(x)).collect(),
        snippet: f
            .snippet
            .as_ref()
            .map(|sn| sn.lines().map(t).collect::<Vec<_>>().join("\n")),
    }
}

/// "s" unless `n` is 1.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `text` broken into lines of at most `width` characters at spaces.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > width {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

/// What was checked, as the report names it: the namespace's origin (`netns NAME`,
/// `pid PID`, a `--from` directory) and/or `capture FILE + FILE`, joined with ` + `.
pub fn origin(state: Option<&str>, captures: &[std::path::PathBuf]) -> String {
    let c = (!captures.is_empty()).then(|| {
        let names: Vec<String> = captures.iter().map(|p| p.display().to_string()).collect();
        format!("capture {}", names.join(" + "))
    });
    match (state, c) {
        (Some(o), Some(c)) => format!("{o} + {c}"),
        (Some(o), None) => o.to_string(),
        (None, Some(c)) => c,
        (None, None) => String::new(),
    }
}

/// `--route-get`'s text: one line per question, `QUERY  ->  ANSWER` (the devices are the
/// dump's names: escaped for the terminal).
pub fn route_get_text(answers: &[(Query, Outcome)]) -> String {
    let mut t = String::new();
    for (q, o) in answers {
        let line = format!("{q}  ->  {}", super::checks::show(o));
        t.push_str(&term(&line));
        t.push('\n');
    }
    t
}

/// `--route-get`'s JSON document (one line): the schema, the state's origin and each
/// answer as [`route_get_json`] shapes it.
pub fn route_get_doc(origin: &str, answers: &[(Query, Outcome)]) -> String {
    let v = json!({
        "schema": SCHEMA,
        "origin": origin,
        "route_get": answers.iter().map(|(q, o)| route_get_json(q, o)).collect::<Vec<_>>(),
    });
    format!("{v}\n")
}

/// One lookup in the shape of `ip -j route get` (plus `rule`, `route`, or `error`).
pub fn route_get_json(q: &Query, o: &Outcome) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("query".into(), json!(q.to_string()));
    match o {
        Ok(a) => {
            if a.kind != super::model::RouteType::Unicast {
                m.insert("type".into(), json!(a.kind.name()));
            }
            if let Some(d) = q.dst {
                m.insert("dst".into(), json!(d.to_string()));
            }
            if let Some(s) = q.src {
                m.insert("from".into(), json!(s.to_string()));
            }
            if let Some(g) = a.gateway {
                m.insert("gateway".into(), json!(g.to_string()));
            }
            m.insert("dev".into(), json!(a.dev));
            if let Some(p) = a.prefsrc {
                m.insert("prefsrc".into(), json!(p.to_string()));
            }
            m.insert(
                "table".into(),
                json!(a.table.map_or("unspec".to_string(), table_name)),
            );
            if let Some(i) = &q.iif {
                m.insert("iif".into(), json!(i));
            }
            if let Some(r) = a.rule {
                m.insert("rule".into(), json!(r));
            }
            if let Some(r) = &a.route {
                m.insert("route".into(), json!(r));
            }
            if let Some(n) = &a.note {
                m.insert("note".into(), json!(n));
            }
        }
        Err(e) => {
            m.insert(
                "error".into(),
                json!({"errno": e.errno, "message": e.errno.message(), "why": e.why}),
            );
        }
    }
    Value::Object(m)
}
