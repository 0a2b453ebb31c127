//! `rocetap netcheck --nad`: the static view of the multi-homed RDMA pod. Lints
//! NetworkAttachmentDefinitions (and the SriovNetworkNodePolicies and node PF addresses
//! they depend on) for the mistakes that break such pods before any packet flows: no
//! `sbr` after the main plugin, ranges outside the PF's subnet, node or gateway addresses
//! a pod can get, pools too small or shared by accident, sbr options the installed plugin
//! ignores, ARP flux, MTUs that cap RoCE, and configurations the runtime cannot parse.
//!
//! `objects` reads and bounds the inputs, `cni` types `spec.config`, `rules` returns typed
//! findings; `netcheck::report::words::nad` words them and `netcheck::report::nad` (also
//! `nad::report`) is the report. Nothing here knows the command line: the command layer
//! hands over a `Config`.

pub mod cni;
pub mod ipv4;
pub mod objects;
pub mod rules;
pub mod sbrver;
pub mod static_ipam;

pub use crate::netcheck::report::nad as report;

use crate::netcheck::checks::Severity;
use objects::{Inputs, LoadError};
use std::path::PathBuf;
use std::time::Duration;

/// What to lint, already validated by the command layer.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The files holding NetworkAttachmentDefinitions (`--nad`; `-` is standard input).
    pub nads: Vec<PathBuf>,
    /// The files holding SriovNetworkNodePolicies (`--sriov-policy`).
    pub policies: Vec<PathBuf>,
    /// The nodes file (`--nodes`) with each node's PF addresses and MTUs; `None` when not given.
    pub nodes_file: Option<PathBuf>,
    /// `ip -j` dumps of nodes (`--from`).
    pub node_dirs: Vec<PathBuf>,
    /// The CNI plugin directory (`--cni-bin-dir`), where the installed `sbr` is run for its
    /// version; `None`: not probed.
    pub cni_bin_dir: Option<PathBuf>,
    /// The installed sbr's version as given (`--sbr-version X.Y.Z`); a version probed from
    /// `cni_bin_dir` takes precedence.
    pub sbr_version: Option<String>,
    /// Findings at or above this severity make the run fail.
    pub gate: Option<Severity>,
}

/// A failure to read the inputs (exit 2), with a hint where one helps.
#[derive(Debug)]
pub struct NadError {
    /// What could not be read, naming the file or option.
    pub what: String,
    /// What to do about it; `None` when there is nothing to add.
    pub hint: Option<String>,
}

impl From<LoadError> for NadError {
    fn from(e: LoadError) -> Self {
        NadError {
            what: e.0,
            hint: None,
        }
    }
}

/// Reads every input, lints it and returns the report (not yet printed); Err when an input cannot
/// be read or an option is malformed.
pub fn check(cfg: &Config) -> Result<report::Report, NadError> {
    let stdin_uses = cfg
        .nads
        .iter()
        .chain(&cfg.policies)
        .chain(&cfg.nodes_file)
        .filter(|p| p.as_os_str() == "-")
        .count();
    if stdin_uses > 1 {
        return Err(NadError {
            what: "netcheck: `-` (standard input) can be given only once".into(),
            hint: Some("put all objects on one stream: they may be mixed in one List or in several YAML documents".into()),
        });
    }
    let sbr = sbr_installed(cfg)?;
    let mut inp = Inputs::default();
    objects::load_objects(&cfg.nads, &mut inp)?;
    objects::load_objects(&cfg.policies, &mut inp)?;
    if let Some(f) = &cfg.nodes_file {
        objects::load_nodes_file(f, &mut inp)?;
    }
    if !cfg.node_dirs.is_empty() {
        objects::load_node_dirs(&cfg.node_dirs, &mut inp)?;
    }
    Ok(report_of(&inp, &sbr, cfg.gate.unwrap_or(Severity::Warning)))
}

/// The lint of text read already (the fuzz target's way in): `objects` holds NADs and
/// policies, `nodes` a nodes file when given; the inputs are named `objects.yaml` and
/// `nodes.yaml`. Nothing is read from disk and no plugin is run.
pub fn check_text(objects: &str, nodes: Option<&str>) -> Result<report::Report, NadError> {
    let mut inp = Inputs::default();
    objects::load_text("objects.yaml", objects, &mut inp)?;
    if let Some(n) = nodes {
        objects::load_nodes_text("nodes.yaml", n, &mut inp)?;
    }
    Ok(report_of(
        &inp,
        &rules::SbrInstalled::default(),
        Severity::Warning,
    ))
}

fn report_of(inp: &Inputs, sbr: &rules::SbrInstalled, gate: Severity) -> report::Report {
    let lints = rules::lint(inp, sbr);
    report::Report::new(
        inp.files.clone(),
        report::Counts {
            network_attachment_definitions: inp.nads.len(),
            sriov_network_node_policies: inp.policies.len(),
            nodes: inp.nodes.len(),
            ignored_objects: inp.ignored,
        },
        sbr.version.map(|v| v.to_string()),
        gate,
        &lints,
    )
}

fn sbr_installed(cfg: &Config) -> Result<rules::SbrInstalled, NadError> {
    let mut s = rules::SbrInstalled::default();
    if let Some(v) = &cfg.sbr_version {
        s.version = Some(rules::Version::parse(v).ok_or_else(|| NadError {
            what: format!("netcheck: --sbr-version {v:?}: not a version"),
            hint: Some("give it as X.Y.Z, e.g. --sbr-version 1.4.0".into()),
        })?);
    }
    if let Some(dir) = &cfg.cni_bin_dir {
        match sbrver::probe(dir, Duration::from_secs(5)) {
            sbrver::Probe::Found(v) => s.version = Some(v),
            sbrver::Probe::Missing => s.missing_in = Some(dir.display().to_string()),
            sbrver::Probe::NoVersion(text) => {
                eprintln!(
                    "rocetap: note: {}/sbr printed no version ({text:?}); its options are not checked against a version",
                    dir.display()
                );
            }
            sbrver::Probe::Failed(why) => {
                return Err(NadError {
                    what: format!("netcheck: --cni-bin-dir: {why}"),
                    hint: Some("or give the version with --sbr-version X.Y.Z".into()),
                })
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::check_text;
    use crate::report::style::Paint;

    /// The fuzz target's checks (`fuzz/fuzz_targets/nad.rs`) on its seeds: every seed is
    /// one error naming the input or a report with no control character in its text.
    #[test]
    fn the_fuzz_seeds_lint_or_fail_in_one_line() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/nad");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let s = std::fs::read_to_string(&p).unwrap();
            let (objects, nodes) = match s.split_once("\n#nodes\n") {
                Some((o, n)) => (o, Some(n)),
                None => (s.as_str(), None),
            };
            match check_text(objects, nodes) {
                Ok(r) => {
                    let text = r.text(Paint::new(false));
                    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{p:?}");
                    serde_json::to_string(&r).unwrap();
                }
                Err(e) => assert!(e.what.starts_with("objects.yaml:"), "{p:?}: {}", e.what),
            }
            n += 1;
        }
        assert!(n >= 9, "{n} seeds");
        // the rails, with their policies and nodes, are clean
        let rails = std::fs::read_to_string(dir.join("rails.yaml")).unwrap();
        let (o, nodes) = rails.split_once("\n#nodes\n").unwrap();
        let r = check_text(o, Some(nodes)).unwrap();
        assert_eq!(
            (r.errors, r.warnings, r.objects.nodes),
            (0, 0, 4),
            "{}",
            r.text(Paint::new(false))
        );
    }
}
