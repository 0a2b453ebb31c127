//! The NAD lint itself: typed findings (`Rule` with the numbers, addresses and paths that
//! prove them), no wording — `netcheck::report::words::nad` turns them into words. Follows
//! each NAD from its resource annotation to the SriovNetworkNodePolicy that defines the
//! resource, its `pfNames`, and the nodes' addresses on those PFs, the way a pod's VF gets
//! its address.

use super::cni;
use super::ipv4::{Cidr, Set};
use super::objects::{Inputs, Loc, Nad, ObjRef};
use crate::netcheck::checks::Severity;
use crate::yaml::Pos;

mod cross;
mod ipam;
mod per_nad;
use cross::cross;
use per_nad::lint_nad;

mod rule;
pub use rule::Rule;

/// A version of the CNI plugins (`v1.4.0`); the fourth number counts the commits after
/// the tag in a `git describe` build (`v1.9.1-12-gabcdef0` is newer than v1.9.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32, pub u32);

impl Version {
    /// Parses `v1.4.0`, `1.4`, `1.9.1-12-gabcdef0` (12 commits after v1.9.1) and the like; other
    /// suffixes (`-rc1`, `+dirty`) count as the tag itself. `None` when the core is not two or
    /// three numbers.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches('v');
        let (core, rest) = match s.find(['-', '+']) {
            Some(i) => (&s[..i], &s[i + 1..]),
            None => (s, ""),
        };
        let mut it = core.split('.');
        let (a, b, c) = (
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next().unwrap_or("0").parse().ok()?,
        );
        if it.next().is_some() {
            return None;
        }
        // `N-gHASH` after the tag: N commits later; anything else (rc, dirty) counts 0
        let dev = match rest.split_once("-g") {
            Some((n, _)) => n.parse().unwrap_or(0),
            None => 0,
        };
        Some(Version(a, b, c, dev))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)?;
        if self.3 > 0 {
            write!(f, "+{}", self.3)?;
        }
        Ok(())
    }
}

/// Which versions honour an sbr option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Versions from this one on.
    AtLeast(Version),
    /// Versions after this one only (an option merged after a release: `git describe` builds past
    /// the tag have it).
    NewerThan(Version),
}

impl Needs {
    /// True when version `v` honours the option.
    pub fn met_by(self, v: Version) -> bool {
        match self {
            Needs::AtLeast(m) => v >= m,
            Needs::NewerThan(m) => v > m,
        }
    }
}

impl std::fmt::Display for Needs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Needs::AtLeast(m) => write!(f, ">= {m}"),
            Needs::NewerThan(m) => write!(f, "newer than {m}"),
        }
    }
}

/// What is known about the installed sbr plugin.
#[derive(Clone, Debug, Default)]
pub struct SbrInstalled {
    /// The installed version, from `--sbr-version` or by running `--cni-bin-dir`'s sbr; `None` when
    /// unknown.
    pub version: Option<Version>,
    /// `--cni-bin-dir` was given but holds no sbr binary.
    pub missing_in: Option<String>,
}

/// The options of sbr that older binaries silently ignore, and the versions that know them.
pub const SBR_OPTIONS: &[(&str, Needs)] = &[
    ("table", Needs::AtLeast(Version(1, 6, 0, 0))),
    ("gateways", Needs::NewerThan(Version(1, 9, 1, 0))),
    ("addSourceHints", Needs::NewerThan(Version(1, 9, 1, 0))),
];

/// How many of the other NADs in a subnet an `nad-arp-flux` finding names: every NAD of
/// the subnet gets one, so naming all would grow with the square of the NADs.
pub const ARP_FLUX_NAMED: usize = 4;

/// How many off-subnet peers an `nad-sbr-gateway` note names (it counts them all).
pub const SBR_PEERS_NAMED: usize = 8;

/// Whose a host address in a range is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whose {
    /// A node's address on a PF.
    Pf {
        /// The node.
        node: String,
        /// The PF.
        pf: String,
    },
    /// The IPAM's own `gateway`.
    IpamGateway,
    /// The gateway of a node's routes through a PF.
    PfGateway {
        /// The node.
        node: String,
        /// The PF.
        pf: String,
    },
}

/// Why a subnet is an off-subnet peer of a NAD chaining sbr (`nad-sbr-gateway`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerOf {
    /// Another NAD's range (another rail).
    Nad(ObjRef),
    /// A node routes it through a PF (behind the ToR).
    Routed {
        /// The node.
        node: String,
        /// The PF.
        pf: String,
    },
}

/// Where a PF MTU the VF MTU is held to comes from (`nad-mtu-vf-above-pf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MtuOf {
    /// A node's PF (the node facts).
    Pf {
        /// The node.
        node: String,
        /// The PF.
        pf: String,
    },
    /// The SriovNetworkNodePolicy's `spec.mtu`.
    Policy(ObjRef),
}

/// A host address that whereabouts would hand to a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The address, a host-order `u32`.
    pub addr: u32,
    /// Whose address it is.
    pub whose: Whose,
    /// True for a gateway (the ToR): `ipam.gateway` or a route's next hop, which a pod must never
    /// get.
    pub gateway: bool,
}

/// How the NADs of one overlap group relate, which decides whether the overlap is a mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// All of them have the same range and network_name: one whereabouts pool.
    SharedPool,
    /// Overlapping ranges in separate pools (another range or network_name): duplicate
    /// addresses.
    SeparatePools,
    /// Different resources (rails) with overlapping ranges.
    AcrossRails,
}

/// One NAD of an overlap group, with what decides the pool it draws from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlapMember {
    /// The NAD.
    pub obj: ObjRef,
    /// Its ranges as written, comma-separated.
    pub ranges: String,
    /// Its resource, without the `nvidia.com/` prefix; `None` without the annotation.
    pub resource: Option<String>,
    /// Its whereabouts `network_name`; `None` when it has none.
    pub network_name: Option<String>,
}

/// One typed finding: the rule with its values, its severity, and the object, field and place it is
/// about.
#[derive(Clone, Debug)]
pub struct Lint {
    /// What was found, with the values that prove it.
    pub rule: Rule,
    /// How bad it is; at or above the gate (default warning) the run exits 1.
    pub severity: Severity,
    /// The NAD it is about; `None` for findings about the inputs as a whole.
    pub object: Option<ObjRef>,
    /// The field the finding is about, e.g. `spec.config.plugins[0].ipam.range`.
    pub path: String,
    /// Where in the input file, when known.
    pub loc: Option<Loc>,
    /// Where inside `spec.config`'s JSON text (line, column), for findings about it.
    pub config_pos: Option<Pos>,
}

/// One NAD as the later, cross-NAD rules need it.
struct Seen<'a> {
    nad: &'a Nad,
    resource: Option<String>,
    rdma: bool,
    ranges: Vec<(cni::Range, Set)>,
    network_name: Option<String>,
    subnet: Option<Cidr>,
    has_sbr: bool,
    gateway: bool,
    tuning_missing: Vec<&'static str>,
    tor_routed: Vec<(Cidr, PeerOf)>,
}

struct Ctx<'a> {
    nad: &'a Nad,
    out: &'a mut Vec<Lint>,
}

impl Ctx<'_> {
    fn push(&mut self, severity: Severity, path: impl Into<String>, p: Option<Pos>, rule: Rule) {
        self.push_at(severity, path, p, true, rule);
    }
    /// `in_config`: `p` is a position in the configuration text (else in the file).
    fn push_at(
        &mut self,
        severity: Severity,
        path: impl Into<String>,
        p: Option<Pos>,
        in_config: bool,
        rule: Rule,
    ) {
        let nad = self.nad;
        let (loc, config_pos) = match (p, in_config) {
            (Some(p), true) => {
                let fp = cni::file_pos(nad.config_map, p);
                (fp.map(|fp| loc(&nad.file, fp)), Some(p))
            }
            (Some(p), false) => (Some(loc(&nad.file, p)), None),
            (None, _) => (Some(loc(&nad.file, nad.pos)), None),
        };
        self.out.push(Lint {
            rule,
            severity,
            object: Some(nad.obj.clone()),
            path: path.into(),
            loc,
            config_pos,
        });
    }
}

fn loc(file: &str, p: Pos) -> Loc {
    Loc {
        file: file.to_string(),
        line: p.line,
        col: p.col,
    }
}

fn short_resource(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// Runs every rule over the inputs.
pub fn lint(inp: &Inputs, sbr: &SbrInstalled) -> Vec<Lint> {
    let mut out = Vec::new();
    let global = |rule| Lint {
        rule,
        severity: Severity::Info,
        object: None,
        path: String::new(),
        loc: None,
        config_pos: None,
    };
    if !inp.nads.is_empty() && !inp.have_nodes {
        out.push(global(Rule::NoNodeFacts));
    }
    if !inp.nads.is_empty() && inp.policies.is_empty() {
        out.push(global(Rule::NoPolicies));
    }
    let mut seen: Vec<Seen> = Vec::new();
    for nad in &inp.nads {
        if let Some(s) = lint_nad(nad, inp, sbr, &mut out) {
            seen.push(s);
        }
    }
    cross(&seen, &mut out);
    out
}

/// The corrected configuration for a finding that carries one.
pub fn fixed_config(r: &Rule) -> Option<&str> {
    match r {
        Rule::MissingSbr { fixed } | Rule::SbrBeforeMain { fixed, .. } => Some(fixed),
        _ => None,
    }
}
