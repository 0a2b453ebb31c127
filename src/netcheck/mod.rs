//! `rocetap netcheck`: loads one network namespace's routing state (live over rtnetlink,
//! from `--netns`/`--pid`, or offline from `ip -j` dumps with `--from DIR`), answers routing
//! questions the way the kernel would (`lookup`), and checks it for the multi-homed RDMA
//! pod failure modes: replies that do not go back out of the interface a request came in
//! on (missing `sbr`), nodes that source traffic to pods from an RDMA address (address-less
//! `cali*` devices and device order), ARP/rp_filter sysctls, and RoCE readiness from sysfs.
//! With `--capture FILE...` the captures' ARP / reply-path symptoms are added (`capture`),
//! alone or next to a namespace's state.
//! Exit 0 when clean, 1 with findings (errors or warnings), 2 when the state cannot be read.
//!
//! One concern per folder: `fib` (the routing model, its loaders, `lookup`), `host` (RoCE
//! readiness and QoS from sysfs and DCB outputs), `checks` (reply paths, node source, ARP,
//! capture symptoms), `nad` (the NAD lint), `report` (text and JSON). Checks return
//! typed values ([`found::Found`]); `report::words` is the one place that words them.

#![warn(missing_docs)]

pub mod checks;
mod error;
pub mod fib;
pub mod found;
pub mod host;
pub mod nad;
pub mod report;

pub use checks::capture;
pub use error::Error;
pub use fib::{load_json, lookup, model, netlink};
pub use host::{dcb, qos, sysfs};

use crate::error::exit;
use std::path::PathBuf;

/// How a netcheck report is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetcheckFormat {
    /// For people.
    Text,
    /// One JSON document (`rocetap.netcheck/…`).
    Json,
}

/// What `netcheck` is asked to do (the command line, checked by the command).
#[derive(Clone, Debug)]
pub struct Config {
    /// `--netns NAME`: a named network namespace.
    pub netns: Option<String>,
    /// `--pid PID`: the network namespace of a process.
    pub pid: Option<u32>,
    /// `--from DIR`: a saved state (with `--nad`: node facts, several).
    pub from: Vec<PathBuf>,
    /// `--sysfs-root DIR`: where sysfs is (see [`crate::config::sysfs_dir`]); `None`:
    /// `/sys` when live, not read offline.
    pub sysfs_root: Option<PathBuf>,
    /// `--qos-from DIR`: recorded `dcb` / `mlnx_qos` outputs (see [`dcb::load`]).
    pub qos_from: Option<PathBuf>,
    /// `--peer-sysfs-root DIR`: other nodes' sysfs, whose GID indices are compared.
    pub peer_sysfs: Vec<PathBuf>,
    /// `--route-get SPEC`: only answer these routing questions.
    pub route_get: Vec<String>,
    /// `--capture FILE`: captures whose ARP symptoms to add.
    pub capture: Vec<PathBuf>,
    /// The report's format.
    pub format: NetcheckFormat,
    /// Text: the effect of every interface sysctl.
    pub verbose: bool,
    /// `--nad FILE`: lint NetworkAttachmentDefinitions instead.
    pub nad: Vec<PathBuf>,
    /// With `--nad`: SriovNetworkNodePolicy files.
    pub sriov_policy: Vec<PathBuf>,
    /// With `--nad`: the nodes' facts.
    pub nodes: Option<PathBuf>,
    /// With `--nad`: the CNI plugin directory.
    pub cni_bin_dir: Option<PathBuf>,
    /// With `--nad`: the installed sbr's version.
    pub sbr_version: Option<String>,
    /// Findings at least this severe fail the run (exit 1).
    pub gate: checks::Severity,
}

/// The severity at or above which findings fail the run.
fn gate(a: &Config) -> checks::Severity {
    a.gate
}

/// `--nad`: the command line turned into the lint's own configuration, then the report.
fn run_nad(a: &Config, color: bool) -> Result<i32, Error> {
    let cfg = nad::Config {
        nads: a.nad.clone(),
        policies: a.sriov_policy.clone(),
        nodes_file: a.nodes.clone(),
        node_dirs: a.from.clone(),
        cni_bin_dir: a.cni_bin_dir.clone(),
        sbr_version: a.sbr_version.clone(),
        gate: Some(gate(a)),
    };
    let rep = nad::check(&cfg).map_err(Error::Nad)?;
    let text = match a.format {
        NetcheckFormat::Json => json_text(&rep)?,
        NetcheckFormat::Text => rep.text(crate::report::style::Paint::new(color)),
    };
    let code = if rep.failed() {
        exit::FINDINGS
    } else {
        exit::OK
    };
    emit(&text, code)
}

/// Runs the checks and prints the report; returns the exit code.
pub fn run(a: Config, color: bool) -> Result<i32, Error> {
    if !a.nad.is_empty() {
        return run_nad(&a, color);
    }
    if a.from.len() > 1 {
        return Err(Error::FromTwice);
    }
    // With only captures, no namespace is read (not even the current one).
    let need_state = !a.from.is_empty()
        || a.netns.is_some()
        || a.pid.is_some()
        || a.capture.is_empty()
        || !a.route_get.is_empty();
    if !need_state && a.sysfs_root.is_some() {
        return Err(Error::SysfsWithoutState);
    }
    let capture = if a.capture.is_empty() {
        None
    } else {
        Some(capture::analyze(&a.capture)?)
    };
    let state = if need_state {
        Some(load_state(&a)?)
    } else {
        None
    };
    let captured: &[PathBuf] = if capture.is_some() { &a.capture } else { &[] };
    let origin = report::origin(state.as_ref().map(|s| s.origin.as_str()), captured);
    let mut found = Vec::new();
    let mut interfaces = Vec::new();
    let mut ports = Vec::new();
    let mut host_qos = None;
    if let Some(state) = &state {
        if let Some(code) = route_get(&a, state)? {
            return Ok(code);
        }
        // sysfs: live default `/sys`; offline only when asked (it describes this machine)
        let sysfs_root: Option<PathBuf> = match (&a.sysfs_root, a.from.first()) {
            (Some(r), _) => Some(r.clone()),
            (None, None) => Some(PathBuf::from(crate::config::SYSFS_ROOT)),
            (None, Some(_)) => None,
        };
        if let Some(root) = &sysfs_root {
            if a.sysfs_root.is_some() && !root.is_dir() {
                return Err(Error::NotADirectory {
                    flag: "--sysfs-root",
                    dir: root.clone(),
                    hint: "give sysfs's directory, which holds class/infiniband (default /sys)",
                });
            }
            ports = sysfs::read_ports(root).map_err(Error::Sysfs)?;
        }
        found.extend(host_checks(state, sysfs_root.as_deref(), &ports)?);
        if let Some(root) = &sysfs_root {
            let q = read_qos(&a, root, state, &ports)?;
            qos::host::check(&q, &mut found);
            qos::gids::compare(&q, &read_peers(&a.peer_sysfs)?, &mut found);
            if let Some(r) = &capture {
                qos::joined::check(r, state, &q, &mut found);
            }
            host_qos = Some(q);
        } else if a.qos_from.is_some() || !a.peer_sysfs.is_empty() {
            let flag = if a.qos_from.is_some() {
                "--qos-from"
            } else {
                "--peer-sysfs-root"
            };
            return Err(Error::NeedsPorts { flag });
        }
        interfaces = report::words::interfaces(&checks::iface_sysctls(state));
    }
    if let Some(r) = &capture {
        found.extend(capture::findings(r).into_iter().map(found::Found::Capture));
        qos::joined::from_capture(r, host_qos.is_some(), &mut found);
    }
    let findings = report::words::findings(&found);
    let mut rep = report::Report::new(origin, findings, interfaces, ports);
    rep.qos = host_qos;
    let text = match a.format {
        NetcheckFormat::Json => json_text(&rep)?,
        NetcheckFormat::Text => rep.text(crate::report::style::Paint::new(color), a.verbose),
    };
    let code = if rep.findings.iter().any(|f| f.severity >= gate(&a)) {
        exit::FINDINGS
    } else {
        exit::OK
    };
    emit(&text, code)
}

/// A report as its pretty JSON document, ending in a newline.
fn json_text(rep: &impl serde::Serialize) -> Result<String, Error> {
    let mut t = serde_json::to_string_pretty(rep).map_err(Error::Json)?;
    t.push('\n');
    Ok(t)
}

/// Writes the report to stdout and returns `code`, the way `analyze` does: a reader that
/// went away (`| head`) ends the run quietly with exit 0, any other write error (a full
/// disk) is a one-line failure.
fn emit(text: &str, code: i32) -> Result<i32, Error> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(code),
        Err(e) if crate::error::is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Error::Write(e)),
    }
}

/// The checks of one namespace's state: reply paths (`sbr`), node-sourced traffic, ARP
/// sysctls, and RoCE readiness from sysfs when `sysfs_root` is given (with its `ports`).
/// Err names a sysfs file that exists but cannot be read.
fn host_checks<'r>(
    state: &model::NetState,
    sysfs_root: Option<&std::path::Path>,
    ports: &[sysfs::Port],
) -> Result<Vec<found::Found<'r>>, Error> {
    let mut routing = Vec::new();
    let rdma_netdevs: Vec<String> = ports.iter().flat_map(|p| p.netdevs.clone()).collect();
    checks::reply_path(state, &mut routing);
    checks::node_source(state, &rdma_netdevs, &mut routing);
    checks::arp_sysctls(state, &mut routing);
    let mut roce = Vec::new();
    if let Some(root) = sysfs_root {
        sysfs::check(root, state, ports, &mut roce).map_err(Error::Check)?;
    }
    let routing = routing.into_iter().map(found::Found::Routing);
    Ok(routing
        .chain(roce.into_iter().map(found::Found::Roce))
        .collect())
}

/// Checks one live network namespace as `netcheck --netns NAME` / `--pid PID` does
/// (sysfs read from `sysfs_root` when it is a directory; the recorded DCB outputs of
/// `qos_from`, as `--qos-from`), joined with `captures` as `--capture` joins them: its
/// findings, or why its state could not be read. The agent runs this on every namespace
/// of the node with its sources' analyses.
pub fn check_live(
    target: &netlink::Target,
    sysfs_root: &std::path::Path,
    qos_from: Option<&std::path::Path>,
    captures: &[crate::analysis::Report],
) -> Result<Vec<checks::Finding>, Error> {
    let state = load_live(target)?;
    let root = sysfs_root.is_dir().then_some(sysfs_root);
    let ports = match root {
        Some(r) => sysfs::read_ports(r).map_err(Error::Sysfs)?,
        None => Vec::new(),
    };
    let mut found = host_checks(&state, root, &ports)?;
    // The host's QoS (ECN, CNP DSCP, traffic class, RDMA-CM defaults, GIDs, MTUs, and the
    // DCB state of `qos_from`), alone and joined with the captures.
    if let Some(r) = root {
        let q = qos::read(r, qos_from, &state, &ports).map_err(Error::Check)?;
        qos::host::check(&q, &mut found);
        for c in captures {
            qos::joined::check(c, &state, &q, &mut found);
        }
    }
    Ok(report::words::findings(&found))
}

fn load_live(target: &netlink::Target) -> Result<model::NetState, Error> {
    netlink::load(target).map_err(Error::Live)
}

/// The host's QoS state under `root`, with `--qos-from`'s recorded DCB outputs.
fn read_qos(
    a: &Config,
    root: &std::path::Path,
    st: &model::NetState,
    ports: &[sysfs::Port],
) -> Result<qos::HostQos, Error> {
    if let Some(d) = &a.qos_from {
        if !d.is_dir() {
            return Err(Error::NotADirectory {
                flag: "--qos-from",
                dir: d.clone(),
                hint: "give the directory holding IF.dcb-app, IF.dcb-apptrust, IF.dcb-pfc or IF.mlnx_qos",
            });
        }
    }
    qos::read(root, a.qos_from.as_deref(), st, ports).map_err(Error::Check)
}

/// The RDMA ports of each `--peer-sysfs-root DIR`, named by the directory (its parent
/// when the directory is a `sys`).
fn read_peers(dirs: &[PathBuf]) -> Result<Vec<qos::gids::Peer>, Error> {
    dirs.iter()
        .map(|d| {
            if !d.is_dir() {
                return Err(Error::NotADirectory {
                    flag: "--peer-sysfs-root",
                    dir: d.clone(),
                    hint: "give another node's sysfs directory (holding class/infiniband)",
                });
            }
            let named = if d.file_name().is_some_and(|n| n == "sys") {
                d.parent().unwrap_or(d)
            } else {
                d
            };
            let name = named
                .file_name()
                .map_or(d.display().to_string(), |n| n.to_string_lossy().into());
            let ports = sysfs::read_ports(d).map_err(Error::PeerSysfs)?;
            Ok(qos::gids::Peer { name, ports })
        })
        .collect()
}

/// The namespace's routing state: offline from `--from`, else live.
fn load_state(a: &Config) -> Result<model::NetState, Error> {
    if let Some(dir) = a.from.first() {
        load_json::load_dir(dir).map_err(Error::State)
    } else {
        let target = match (&a.netns, a.pid) {
            (Some(n), _) => netlink::Target::Netns(n.clone()),
            (None, Some(p)) => netlink::Target::Pid(p),
            (None, None) => netlink::Target::Current,
        };
        load_live(&target)
    }
}

/// `--route-get`: answers the questions and returns the exit code; None when not asked.
fn route_get(a: &Config, state: &model::NetState) -> Result<Option<i32>, Error> {
    if !a.route_get.is_empty() {
        let mut answers = Vec::new();
        for spec in &a.route_get {
            let q = lookup::Query::parse(spec).map_err(|error| Error::RouteGet {
                spec: spec.clone(),
                error,
            })?;
            let o = lookup::lookup(state, &q);
            answers.push((q, o));
        }
        let text = match a.format {
            NetcheckFormat::Json => report::route_get_doc(&state.origin, &answers),
            NetcheckFormat::Text => report::route_get_text(&answers),
        };
        return emit(&text, exit::OK).map(Some);
    }
    Ok(None)
}
