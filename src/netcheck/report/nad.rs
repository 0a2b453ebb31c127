//! The NAD lint's report (`netcheck --nad`): its findings (each a typed `Lint` worded by
//! `words::nad`, with the object, field path and location it is about), as text (the
//! verdict in plain words first) or one JSON document with `"schema": "rocetap.nad/1"`.

use super::words::nad::finding;
use super::{escaped, plural, write_body, Finding};
use crate::netcheck::checks::Severity;
use crate::netcheck::nad::rules::Lint;
use crate::report::safe::term;
use crate::report::style::{Paint, Tone};
use serde::Serialize;
use std::fmt::Write;

/// The `schema` of the NAD lint's JSON report; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "rocetap.nad/1";

/// The Kubernetes object a finding is about, as the JSON report names it.
#[derive(Serialize, Clone, Debug)]
pub struct Object {
    /// The object's `kind`, e.g. `NetworkAttachmentDefinition`.
    pub kind: String,
    /// `metadata.namespace` (`default` when the object gives none).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

/// A position inside `spec.config`'s JSON text (JSON `config_position`).
#[derive(Serialize, Clone, Debug)]
pub struct ConfigPos {
    /// The line of the configuration text, counted from 1.
    pub line: usize,
    /// The column, counted from 1.
    pub column: usize,
}

/// One worded NAD finding: the netcheck [`Finding`] (flattened into the same JSON object) plus what
/// it is about and where.
#[derive(Serialize, Clone, Debug)]
pub struct NadFinding {
    /// Id, severity, title, detail, evidence, fix and snippet, as netcheck words every finding.
    #[serde(flatten)]
    pub finding: Finding,
    /// The object the finding is about; `None` for findings about the inputs as a whole
    /// (`nad-no-node-facts`, `nad-no-policies`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Object>,
    /// e.g. `spec.config.plugins[0].ipam.range`
    pub path: String,
    /// `FILE:LINE:COLUMN` in the input, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Line and column inside `spec.config`'s JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_position: Option<ConfigPos>,
    /// The whole corrected `spec.config`, for findings that have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_config: Option<serde_json::Value>,
    /// Every NAD of an overlap group (`nad-range-overlap`), the finding's own first; empty
    /// (and left out) for other findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nads: Vec<GroupNad>,
}

/// One NAD of an overlap group, as the JSON report lists it (`nads`).
#[derive(Serialize, Clone, Debug)]
pub struct GroupNad {
    /// `NetworkAttachmentDefinition`.
    pub kind: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// Its ranges as written, comma-separated.
    pub ranges: String,
    /// Its resource (without the `nvidia.com/` prefix), when annotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Its whereabouts `network_name`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_name: Option<String>,
}

/// How many objects of each kind were read (JSON `objects`).
#[derive(Serialize, Clone, Debug)]
pub struct Counts {
    /// NetworkAttachmentDefinitions linted.
    pub network_attachment_definitions: usize,
    /// SriovNetworkNodePolicies read.
    pub sriov_network_node_policies: usize,
    /// Nodes with PF facts (from `--nodes` and `--from`).
    pub nodes: usize,
    /// Objects of other kinds found in the input files and left alone.
    pub ignored_objects: usize,
}

/// The NAD lint's result: what was read, the verdict and the findings worst first. Serialized as is
/// for `--format json` (`"schema": "rocetap.nad/1"`).
#[derive(Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The object files read, as named on the command line.
    pub inputs: Vec<String>,
    /// How many objects of each kind were read.
    pub objects: Counts,
    /// The installed sbr plugin's version, when known.
    pub sbr_version: Option<String>,
    /// Findings at or above this severity fail the run (exit 1).
    pub fail_on_severity: Severity,
    /// `ok` or `findings` (at or above the gate).
    pub verdict: &'static str,
    /// Findings of severity error.
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
    /// Findings of severity info (never counted as problems by the text verdict).
    pub infos: usize,
    /// Every finding, sorted worst first.
    pub findings: Vec<NadFinding>,
}

impl Report {
    /// Builds the report from the typed lints: words each, sorts worst first, counts by severity
    /// and sets the verdict against `gate`.
    pub fn new(
        inputs: Vec<String>,
        objects: Counts,
        sbr_version: Option<String>,
        gate: Severity,
        lints: &[Lint],
    ) -> Report {
        let mut findings: Vec<NadFinding> = lints.iter().map(finding).collect();
        findings.sort_by_key(|f| std::cmp::Reverse(f.finding.severity));
        let n = |s| findings.iter().filter(|f| f.finding.severity == s).count();
        let (errors, warnings, infos) =
            (n(Severity::Error), n(Severity::Warning), n(Severity::Info));
        let failed = findings.iter().any(|f| f.finding.severity >= gate);
        Report {
            schema: SCHEMA,
            inputs,
            objects,
            sbr_version,
            fail_on_severity: gate,
            verdict: if failed { "findings" } else { "ok" },
            errors,
            warnings,
            infos,
            findings,
        }
    }

    /// True when any finding is at or above the gate (the verdict is `findings`): the run exits 1.
    pub fn failed(&self) -> bool {
        self.verdict == "findings"
    }

    /// The text report: a verdict line in plain words, then each finding with its location, field
    /// path, detail, evidence and fix. `paint` colors the severity words.
    pub fn text(&self, paint: Paint) -> String {
        let mut s = String::new();
        let o = &self.objects;
        let what =
            format!(
            "NAD lint of {} NetworkAttachmentDefinition{}, {} SriovNetworkNodePolic{}, {} node{}",
            o.network_attachment_definitions,
            plural(o.network_attachment_definitions),
            o.sriov_network_node_policies,
            if o.sriov_network_node_policies == 1 { "y" } else { "ies" },
            o.nodes,
            plural(o.nodes)
        );
        let problems = self.errors + self.warnings;
        if problems > 0 {
            let _ = writeln!(
                s,
                "{what}: {problems} problem{} found ({} error{}, {} warning{}).",
                plural(problems),
                self.errors,
                plural(self.errors),
                self.warnings,
                plural(self.warnings)
            );
        } else {
            let _ = writeln!(
                s,
                "{what}: {}",
                paint.tone(Tone::Good, "no problems found.")
            );
        }
        for f in &self.findings {
            let x = &f.finding;
            let tone = match x.severity {
                Severity::Error => Tone::Bad,
                Severity::Warning => Tone::Warn,
                Severity::Info => Tone::Note,
            };
            // names, values and keys in the words come from the input: escaped here,
            // once, for the terminal (the JSON report carries them raw, encoded)
            let x = &escaped(x);
            let _ = writeln!(
                s,
                "\n{} {}: {}",
                paint.tone(tone, x.severity.label()),
                x.id,
                x.title
            );
            let mut at = Vec::new();
            if let Some(l) = &f.location {
                at.push(term(l).into_owned());
            }
            if !f.path.is_empty() {
                at.push(term(&f.path).into_owned());
            }
            if let Some(p) = &f.config_position {
                if f.location.is_none() {
                    at.push(format!(
                        "(line {} column {} of the configuration)",
                        p.line, p.column
                    ));
                }
            }
            if !at.is_empty() {
                let _ = writeln!(s, "  at: {}", at.join("  "));
            }
            write_body(&mut s, x);
        }
        s
    }
}
