//! The NAD lint itself: typed findings (`Rule` with the numbers, addresses and paths that
//! prove them), no wording — `report` turns them into words. Follows each NAD from its
//! resource annotation to the SriovNetworkNodePolicy that defines the resource, its
//! `pfNames`, and the nodes' addresses on those PFs, the way a pod's VF gets its address.

use super::cni::{self, Config, ConfigError, Ipam, Plugin};
use super::ipv4::{Cidr, Set};
use super::objects::{Inputs, Loc, Nad, NodeFacts, ObjRef, Policy};
use super::yaml::{Node, Pos};
use crate::netcheck::checks::Severity;

/// A version of the CNI plugins (`v1.4.0`); the fourth number counts the commits after
/// the tag in a `git describe` build (`v1.9.1-12-gabcdef0` is newer than v1.9.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32, pub u32);

impl Version {
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
    AtLeast(Version),
    NewerThan(Version),
}

impl Needs {
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

/// A host address that whereabouts would hand to a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub addr: u32,
    /// `node1 ens1f0`, or `ipam.gateway`, or `node1 ens1f0 route via`.
    pub whose: String,
    pub gateway: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// The same range and network_name: one whereabouts pool.
    SharedPool,
    /// Overlapping ranges in separate pools: duplicate addresses.
    SeparatePools {
        mine: Option<String>,
        theirs: Option<String>,
    },
    /// Different resources (rails) with overlapping ranges.
    AcrossRails { mine: String, theirs: String },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    NoNodeFacts,
    NoPolicies,
    ConfigMissing,
    ConfigNotString,
    ConfigNotObject,
    ConfigJson {
        line: usize,
        col: usize,
        msg: String,
    },
    CniVersionMissing,
    CniVersionUnknown {
        found: String,
    },
    UnknownKey {
        key: String,
        within: String,
        suggestion: Option<String>,
    },
    BadValue {
        what: String,
    },
    MissingSbr {
        fixed: String,
    },
    SbrBeforeMain {
        main: String,
        fixed: String,
    },
    NoPolicy {
        resource: String,
    },
    PfNotOnAnyNode {
        pfs: Vec<String>,
        resource: String,
    },
    RangeOffSubnet {
        range: Cidr,
        pfs: Vec<String>,
        subnets: Vec<(Cidr, Vec<String>)>,
    },
    BoundOutside {
        key: &'static str,
        addr: u32,
        range: Cidr,
    },
    StartAfterEnd {
        start: u32,
        end: u32,
    },
    ExcludeOutside {
        exclude: Cidr,
        range: Cidr,
        partly: bool,
    },
    HostAllocatable {
        range: Cidr,
        hosts: Vec<Host>,
    },
    Capacity {
        range: Cidr,
        allocatable: u64,
        nodes: usize,
        pfs: usize,
        vfs_per_pf: u32,
        needed: u64,
    },
    Overlap {
        other: ObjRef,
        mine: String,
        theirs: String,
        kind: Overlap,
    },
    SbrNoGateway {
        subnet: Cidr,
        peers: Vec<(Cidr, String)>,
    },
    SbrOptionIgnored {
        option: String,
        installed: Version,
        needs: Needs,
    },
    SbrOptionUnverified {
        option: String,
        needs: Needs,
    },
    SbrNotInstalled {
        dir: String,
    },
    ArpFlux {
        subnet: Cidr,
        others: Vec<ObjRef>,
        missing: Vec<&'static str>,
    },
    RoceMtu {
        vf_mtu: u32,
        roce_mtu: Option<u32>,
        source: String,
    },
    VfMtuAbovePf {
        vf_mtu: u32,
        source: String,
        pf_mtu: u32,
        pf: String,
    },
}

impl Rule {
    /// The stable identifier of the rule (JSON `id`).
    pub fn id(&self) -> &'static str {
        match self {
            Rule::NoNodeFacts => "nad-no-node-facts",
            Rule::NoPolicies => "nad-no-policies",
            Rule::ConfigMissing | Rule::ConfigNotString | Rule::ConfigNotObject => "nad-config",
            Rule::ConfigJson { .. } => "nad-config-json",
            Rule::CniVersionMissing | Rule::CniVersionUnknown { .. } => "nad-cni-version",
            Rule::UnknownKey { .. } => "nad-unknown-key",
            Rule::BadValue { .. } => "nad-bad-value",
            Rule::MissingSbr { .. } | Rule::SbrBeforeMain { .. } => "nad-missing-sbr",
            Rule::NoPolicy { .. } => "nad-no-policy",
            Rule::PfNotOnAnyNode { .. } => "nad-pf-unknown",
            Rule::RangeOffSubnet { .. } => "nad-range-subnet",
            Rule::BoundOutside { .. } | Rule::StartAfterEnd { .. } => "nad-range-bounds",
            Rule::ExcludeOutside { .. } => "nad-exclude-outside",
            Rule::HostAllocatable { .. } => "nad-host-allocatable",
            Rule::Capacity { .. } => "nad-capacity",
            Rule::Overlap { .. } => "nad-range-overlap",
            Rule::SbrNoGateway { .. } => "nad-sbr-gateway",
            Rule::SbrOptionIgnored { .. } | Rule::SbrOptionUnverified { .. } => "nad-sbr-version",
            Rule::SbrNotInstalled { .. } => "nad-sbr-installed",
            Rule::ArpFlux { .. } => "nad-arp-flux",
            Rule::RoceMtu { .. } => "nad-roce-mtu",
            Rule::VfMtuAbovePf { .. } => "nad-mtu",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Lint {
    pub rule: Rule,
    pub severity: Severity,
    pub object: Option<ObjRef>,
    /// The field the finding is about, e.g. `spec.config.plugins[0].ipam.range`.
    pub path: String,
    /// Where in the input file, when known.
    pub loc: Option<Loc>,
    /// Where inside `spec.config`'s JSON text (line, column), for findings about it.
    pub config_pos: Option<Pos>,
}

/// A selected PF address on a node: (node, PF, address, prefix length, MTU, VFs).
type Selected<'a> = (&'a NodeFacts, &'a str, u32, u8, Option<u32>, u32);

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
    tor_routed: Vec<(Cidr, String)>,
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

fn check_keys(ctx: &mut Ctx, n: &Node, keys: &[&str], path: &str, within: &str) {
    for (k, kp, _) in n.map().unwrap_or_default() {
        if !cni::is_known(keys, k) {
            ctx.push(
                Severity::Error,
                format!("{path}.{k}"),
                Some(*kp),
                Rule::UnknownKey {
                    key: k.clone(),
                    within: within.to_string(),
                    suggestion: cni::suggest(keys, k),
                },
            );
        }
    }
}

/// The tuning sysctls a pod with several interfaces in one subnet needs, and which are
/// missing (or set otherwise) in this chain.
fn tuning_missing(cfg: &Config) -> Vec<&'static str> {
    let want: [(&'static str, &[&str]); 4] = [
        ("arp_ignore", &["1", "2"]),
        ("arp_announce", &["2"]),
        ("arp_filter", &["1"]),
        ("rp_filter", &["2"]),
    ];
    let sysctls: Vec<(String, String)> = cfg
        .plugins
        .iter()
        .filter(|p| p.ty == "tuning")
        .filter_map(|p| p.node.get("sysctl"))
        .flat_map(|s| s.map().unwrap_or_default().iter())
        .map(|(k, _, v)| (k.clone(), v.text().unwrap_or_default()))
        .collect();
    want.iter()
        .filter(|(key, vals)| {
            !sysctls.iter().any(|(k, v)| {
                k.starts_with("net.ipv4.conf.")
                    && k.ends_with(&format!(".{key}"))
                    && vals.contains(&v.trim())
            })
        })
        .map(|(k, _)| *k)
        .collect()
}

fn mtu_of(p: &Plugin) -> Option<u32> {
    p.node
        .get("mtu")
        .and_then(Node::int)
        .and_then(|m| u32::try_from(m).ok())
}

fn lint_nad<'a>(
    nad: &'a Nad,
    inp: &'a Inputs,
    sbr: &SbrInstalled,
    out: &mut Vec<Lint>,
) -> Option<Seen<'a>> {
    let parsed = cni::parse(nad.config.as_ref());
    let mut ctx = Ctx { nad, out };
    let cfg = match parsed {
        Ok(c) => c,
        Err(e) => {
            let (rule, p, in_cfg) = match e {
                ConfigError::Missing => (Rule::ConfigMissing, None, false),
                ConfigError::NotString { pos } => (Rule::ConfigNotString, Some(pos), false),
                ConfigError::NotObject => (
                    Rule::ConfigNotObject,
                    nad.config.as_ref().map(|c| c.pos),
                    false,
                ),
                ConfigError::Json { line, col, msg } => (
                    Rule::ConfigJson { line, col, msg },
                    Some(Pos { line, col }),
                    true,
                ),
            };
            ctx.push_at(Severity::Error, "spec.config", p, in_cfg, rule);
            return None;
        }
    };
    let root = &cfg.root;
    // cniVersion
    match root.get("cniVersion") {
        None => ctx.push(
            Severity::Error,
            "spec.config.cniVersion",
            Some(root.pos),
            Rule::CniVersionMissing,
        ),
        Some(v) => {
            let t = v.text().unwrap_or_default();
            if !cni::CNI_VERSIONS.contains(&t.as_str()) {
                ctx.push(
                    Severity::Error,
                    "spec.config.cniVersion",
                    Some(v.pos),
                    Rule::CniVersionUnknown { found: t },
                );
            }
        }
    }
    // unknown keys
    if cfg.conflist {
        check_keys(
            &mut ctx,
            root,
            cni::CONFLIST_KEYS,
            "spec.config",
            "the plugin list",
        );
    }
    for p in &cfg.plugins {
        if let Some(keys) = cni::known_keys(&p.ty) {
            let mut k: Vec<&str> = keys.to_vec();
            if !cfg.conflist {
                k.extend_from_slice(cni::CONFLIST_KEYS);
            }
            check_keys(
                &mut ctx,
                &p.node,
                &k,
                &p.path,
                &format!("the {} plugin", p.ty),
            );
        }
        if let Some(ipam) = p.node.get("ipam") {
            if ipam.get("type").and_then(Node::str) == Some("whereabouts") {
                let path = format!("{}.ipam", p.path);
                check_keys(&mut ctx, ipam, cni::WHEREABOUTS_KEYS, &path, "whereabouts");
                for (i, r) in ipam
                    .get("ipRanges")
                    .and_then(Node::seq)
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    check_keys(
                        &mut ctx,
                        r,
                        cni::IP_RANGE_KEYS,
                        &format!("{path}.ipRanges[{i}]"),
                        "an ipRanges entry",
                    );
                }
            }
        }
    }
    // the resource and its policy
    let resource = nad.resource.clone();
    let policy: Option<&Policy> = resource.as_deref().and_then(|r| {
        inp.policies
            .iter()
            .find(|p| p.resource == short_resource(r))
    });
    if let (Some(r), None) = (&resource, policy) {
        if !inp.policies.is_empty() {
            ctx.push_at(
                Severity::Warning,
                "metadata.annotations.k8s.v1.cni.cncf.io/resourceName",
                nad.resource_pos,
                false,
                Rule::NoPolicy {
                    resource: r.clone(),
                },
            );
        }
    }
    let main = cfg.plugins.first();
    let rdma = resource.is_some()
        && (policy.and_then(|p| p.is_rdma) == Some(true)
            || resource
                .as_deref()
                .is_some_and(|r| r.to_lowercase().contains("rdma"))
            || cfg
                .plugins
                .iter()
                .any(|p| p.ty == "rdma" || p.ty == "ib-sriov"));
    let sbr_at = cfg.plugins.iter().position(|p| p.ty == "sbr");
    let plugins_path = if cfg.conflist {
        "spec.config.plugins"
    } else {
        "spec.config"
    };
    let plugins_pos = root.get("plugins").map(|n| n.pos).or(Some(root.pos));
    if rdma {
        let fixed = || serde_json::to_string_pretty(&cni::with_sbr(&cfg)).unwrap_or_default();
        match sbr_at {
            None => ctx.push(
                Severity::Error,
                plugins_path,
                plugins_pos,
                Rule::MissingSbr { fixed: fixed() },
            ),
            Some(0) if cfg.plugins.len() > 1 => ctx.push(
                Severity::Error,
                format!("{plugins_path}[0]"),
                Some(cfg.plugins[0].node.pos),
                Rule::SbrBeforeMain {
                    main: cfg.plugins[1].ty.clone(),
                    fixed: fixed(),
                },
            ),
            _ => {}
        }
    }
    // sbr options and the installed version
    if let Some(i) = sbr_at {
        let p = &cfg.plugins[i];
        if let Some(dir) = &sbr.missing_in {
            ctx.push(
                Severity::Error,
                p.path.clone(),
                Some(p.node.pos),
                Rule::SbrNotInstalled { dir: dir.clone() },
            );
        }
        for &(opt, needs) in SBR_OPTIONS {
            let Some(kp) = p.node.key_pos(opt) else {
                continue;
            };
            let path = format!("{}.{opt}", p.path);
            match sbr.version {
                Some(v) if !needs.met_by(v) => ctx.push(
                    Severity::Warning,
                    path,
                    Some(kp),
                    Rule::SbrOptionIgnored {
                        option: opt.to_string(),
                        installed: v,
                        needs,
                    },
                ),
                Some(_) => {}
                None => ctx.push(
                    Severity::Info,
                    path,
                    Some(kp),
                    Rule::SbrOptionUnverified {
                        option: opt.to_string(),
                        needs,
                    },
                ),
            }
        }
    }
    // IPAM
    let ipam: Option<Ipam> = main
        .and_then(cni::ipam_of)
        .filter(|i| i.ty == "whereabouts");
    let mut ranges = Vec::new();
    let mut subnet = None;
    let mut tor_routed: Vec<(Cidr, String)> = Vec::new();
    if let Some(ipam) = &ipam {
        for (path, p, what) in &ipam.bad {
            ctx.push(
                Severity::Error,
                path.clone(),
                Some(*p),
                Rule::BadValue { what: what.clone() },
            );
        }
        // node facts: the selected PFs on every node
        let selected: Vec<Selected> = match policy {
            Some(pol) => inp
                .nodes
                .iter()
                .flat_map(|n| {
                    pol.pf_names.iter().filter_map(move |pf| {
                        let f = n.pf(&pf.name)?;
                        Some((n, f, pol.vfs_per_pf(pf).unwrap_or(0)))
                    })
                })
                .flat_map(|(n, f, vfs)| {
                    f.addrs
                        .iter()
                        .map(move |(a, l)| (n, f.name.as_str(), *a, *l, f.mtu, vfs))
                })
                .collect(),
            None => Vec::new(),
        };
        if let Some(pol) = policy {
            if inp.have_nodes && selected.is_empty() && !ipam.ranges.is_empty() {
                ctx.push_at(
                    Severity::Warning,
                    "metadata.annotations.k8s.v1.cni.cncf.io/resourceName",
                    nad.resource_pos,
                    false,
                    Rule::PfNotOnAnyNode {
                        pfs: pol.pf_names.iter().map(|p| p.name.clone()).collect(),
                        resource: pol.resource.clone(),
                    },
                );
            }
        }
        for r in &ipam.ranges {
            let (lo, hi) = r.cidr.usable();
            let mut set = Set::interval(lo, hi);
            let mut bounds_ok = true;
            for (key, b) in [("range_start", &r.start), ("range_end", &r.end)] {
                if let Some((a, path, p)) = b {
                    if !r.cidr.contains(*a) {
                        bounds_ok = false;
                        ctx.push(
                            Severity::Error,
                            path.clone(),
                            Some(*p),
                            Rule::BoundOutside {
                                key,
                                addr: *a,
                                range: r.cidr,
                            },
                        );
                    }
                }
            }
            if let (Some((s, _, _)), Some((e, path, p))) = (&r.start, &r.end) {
                if s > e {
                    bounds_ok = false;
                    ctx.push(
                        Severity::Error,
                        path.clone(),
                        Some(*p),
                        Rule::StartAfterEnd { start: *s, end: *e },
                    );
                }
            }
            if bounds_ok {
                if let Some((s, _, _)) = r.start {
                    if s > 0 {
                        set.remove(0, s - 1);
                    }
                }
                if let Some((e, _, _)) = r.end {
                    if e < u32::MAX {
                        set.remove(e + 1, u32::MAX);
                    }
                }
            }
            for (x, path, p) in &r.excludes {
                if !r.cidr.contains_cidr(x) {
                    ctx.push(
                        Severity::Error,
                        path.clone(),
                        Some(*p),
                        Rule::ExcludeOutside {
                            exclude: *x,
                            range: r.cidr,
                            partly: r.cidr.overlaps(x),
                        },
                    );
                }
                set.remove(x.first(), x.last());
            }
            // the PF's subnet
            let mut tor: Vec<&Selected> = Vec::new();
            if !selected.is_empty() {
                let mut subnets: Vec<(Cidr, Vec<String>)> = Vec::new();
                for s in &selected {
                    let c = Cidr::new(s.2, s.3);
                    match subnets.iter_mut().find(|x| x.0 == c) {
                        Some(x) => x.1.push(s.0.name.clone()),
                        None => subnets.push((c, vec![s.0.name.clone()])),
                    }
                }
                match subnets.iter().find(|(c, _)| c.contains_cidr(&r.cidr)) {
                    None => ctx.push(
                        Severity::Error,
                        r.path.clone(),
                        Some(r.pos),
                        Rule::RangeOffSubnet {
                            range: r.cidr,
                            pfs: policy
                                .map(|p| p.pf_names.iter().map(|x| x.name.clone()).collect())
                                .unwrap_or_default(),
                            subnets: subnets.clone(),
                        },
                    ),
                    Some((c, _)) => {
                        subnet = Some(*c);
                        tor = selected.iter().filter(|s| c.contains(s.2)).collect();
                    }
                }
            }
            // addresses that belong to someone else
            let mut hosts: Vec<Host> = Vec::new();
            for s in &tor {
                if set.contains(s.2) {
                    hosts.push(Host {
                        addr: s.2,
                        whose: format!("{} {}", s.0.name, s.1),
                        gateway: false,
                    });
                }
            }
            if let Some((g, _, _)) = &ipam.gateway {
                if set.contains(*g) {
                    hosts.push(Host {
                        addr: *g,
                        whose: "ipam.gateway".into(),
                        gateway: true,
                    });
                }
            }
            for s in &tor {
                if let Some(pf) = s.0.pf(s.1) {
                    for g in &pf.gateways {
                        if set.contains(*g) && !hosts.iter().any(|h| h.addr == *g) {
                            hosts.push(Host {
                                addr: *g,
                                whose: format!("{} {} (its gateway)", s.0.name, s.1),
                                gateway: true,
                            });
                        }
                    }
                    for d in &pf.routed {
                        if !tor_routed.iter().any(|x| x.0 == *d)
                            && !subnet.is_some_and(|c| c.contains_cidr(d))
                        {
                            tor_routed.push((*d, format!("{} routes it via {}", s.0.name, s.1)));
                        }
                    }
                }
            }
            if !hosts.is_empty() {
                ctx.push(
                    Severity::Error,
                    r.path.clone(),
                    Some(r.pos),
                    Rule::HostAllocatable {
                        range: r.cidr,
                        hosts,
                    },
                );
            }
            // room for every VF on the ToR
            if let Some(pol) = policy {
                let mut node_names: Vec<&str> = tor.iter().map(|s| s.0.name.as_str()).collect();
                node_names.sort_unstable();
                node_names.dedup();
                let needed: u64 = tor.iter().map(|s| u64::from(s.5)).sum();
                let vfs = pol
                    .pf_names
                    .first()
                    .and_then(|p| pol.vfs_per_pf(p))
                    .unwrap_or(0);
                if needed > set.count() && !tor.is_empty() {
                    ctx.push(
                        Severity::Warning,
                        r.path.clone(),
                        Some(r.pos),
                        Rule::Capacity {
                            range: r.cidr,
                            allocatable: set.count(),
                            nodes: node_names.len(),
                            pfs: tor.len(),
                            vfs_per_pf: vfs,
                            needed,
                        },
                    );
                }
            }
            ranges.push((r.clone(), set));
        }
    }
    // MTU: tuning, then the sriov plugin, then the policy set the VF's MTU
    let (vf_mtu, source) = match cfg
        .plugins
        .iter()
        .rev()
        .find_map(|p| mtu_of(p).map(|m| (m, p)))
    {
        Some((m, p)) => (Some(m), format!("{}.mtu", p.path)),
        None => match policy.and_then(|p| p.mtu) {
            Some(m) => (
                Some(m),
                format!(
                    "{} spec.mtu",
                    policy.map(|p| p.obj.to_string()).unwrap_or_default()
                ),
            ),
            None => (None, String::new()),
        },
    };
    // (without the policy the MTU is unknown, not 1500)
    if policy.is_some() || vf_mtu.is_some() {
        let shown = vf_mtu.unwrap_or(1500);
        let roce = crate::netcheck::sysfs::roce_mtu_for(shown);
        if roce.is_none_or(|r| r < 4096) {
            let src = if vf_mtu.is_some() {
                source.clone()
            } else {
                "not set anywhere (VFs come up with 1500)".into()
            };
            ctx.push(
                Severity::Info,
                if vf_mtu.is_some() {
                    source.clone()
                } else {
                    "spec.config".into()
                },
                None,
                Rule::RoceMtu {
                    vf_mtu: shown,
                    roce_mtu: roce,
                    source: src,
                },
            );
        }
        if let Some(v) = vf_mtu {
            // the PF's MTU: from the nodes, else the policy's (which sets the PF)
            let mut pf_mtus: Vec<(u32, String)> = Vec::new();
            if let Some(pol) = policy {
                for n in &inp.nodes {
                    for pf in &pol.pf_names {
                        if let Some(m) = n.pf(&pf.name).and_then(|f| f.mtu) {
                            let in_subnet = subnet.is_none_or(|c| {
                                n.pf(&pf.name)
                                    .is_some_and(|f| f.addrs.iter().any(|(a, _)| c.contains(*a)))
                            });
                            if in_subnet {
                                pf_mtus.push((m, format!("{} {}", n.name, pf.name)));
                            }
                        }
                    }
                }
                if pf_mtus.is_empty() && vf_mtu != pol.mtu {
                    if let Some(m) = pol.mtu {
                        pf_mtus.push((m, format!("{} spec.mtu", pol.obj)));
                    }
                }
            }
            if let Some((m, pf)) = pf_mtus
                .iter()
                .filter(|(m, _)| *m < v)
                .min_by_key(|(m, _)| *m)
            {
                ctx.push(
                    Severity::Error,
                    source.clone(),
                    None,
                    Rule::VfMtuAbovePf {
                        vf_mtu: v,
                        source: source.clone(),
                        pf_mtu: *m,
                        pf: pf.clone(),
                    },
                );
            }
        }
    }
    let has_sbr = sbr_at.is_some_and(|i| i > 0 || cfg.plugins.len() == 1);
    let gateway = ipam.as_ref().is_some_and(|i| i.gateway.is_some());
    let s = Seen {
        nad,
        resource: resource.as_deref().map(|r| short_resource(r).to_string()),
        rdma,
        subnet: subnet.or_else(|| ranges.first().map(|(r, _)| r.cidr)),
        ranges,
        network_name: ipam.as_ref().and_then(|i| i.network_name.clone()),
        has_sbr,
        gateway,
        tuning_missing: tuning_missing(&cfg),
        tor_routed,
    };
    Some(s)
}

fn ranges_text(s: &Seen) -> String {
    s.ranges
        .iter()
        .map(|(r, _)| r.text.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rules between NADs: overlapping ranges, sbr without a gateway on routed rails, ARP flux.
fn cross(seen: &[Seen], out: &mut Vec<Lint>) {
    let push = |out: &mut Vec<Lint>, s: &Seen, sev, path: String, p: Option<Pos>, rule| {
        let mut c = Ctx { nad: s.nad, out };
        c.push(sev, path, p, rule);
    };
    for (i, j) in overlapping_pairs(seen) {
        let (a, b) = (&seen[i], &seen[j]);
        {
            let overl = a
                .ranges
                .iter()
                .any(|(_, x)| b.ranges.iter().any(|(_, y)| !x.intersect(y).is_empty()));
            if !overl {
                continue;
            }
            let kind = match (&a.resource, &b.resource) {
                (Some(x), Some(y)) if x != y => Overlap::AcrossRails {
                    mine: x.clone(),
                    theirs: y.clone(),
                },
                _ => {
                    let same_range = a.ranges.len() == b.ranges.len()
                        && a.ranges
                            .iter()
                            .zip(&b.ranges)
                            .all(|(x, y)| x.0.cidr == y.0.cidr && x.1 == y.1);
                    if same_range && a.network_name == b.network_name {
                        Overlap::SharedPool
                    } else {
                        Overlap::SeparatePools {
                            mine: a.network_name.clone(),
                            theirs: b.network_name.clone(),
                        }
                    }
                }
            };
            let sev = if kind == Overlap::SharedPool {
                Severity::Info
            } else {
                Severity::Error
            };
            let (r, _) = &a.ranges[0];
            push(
                out,
                a,
                sev,
                r.path.clone(),
                Some(r.pos),
                Rule::Overlap {
                    other: b.nad.obj.clone(),
                    mine: ranges_text(a),
                    theirs: ranges_text(b),
                    kind,
                },
            );
        }
    }
    // the RDMA subnets, each with the first NAD in it (sorted, so lookups are cheap)
    let mut subnets: Vec<(Cidr, usize)> = Vec::new();
    for (i, b) in seen.iter().enumerate().filter(|(_, b)| b.rdma) {
        if let Some(bs) = b.subnet {
            subnets.push((bs, i));
        }
    }
    subnets.sort();
    // sbr without a gateway: its table only holds the connected route
    for (i, a) in seen.iter().enumerate() {
        if !(a.has_sbr && !a.gateway && a.rdma) {
            continue;
        }
        let Some(sub) = a.subnet else { continue };
        let mut peers: Vec<(Cidr, String)> = Vec::new();
        for (bs, j) in &subnets {
            if *j != i && !sub.overlaps(bs) && peers.last().is_none_or(|p| p.0 != *bs) {
                peers.push((*bs, format!("{}", seen[*j].nad.obj)));
            }
        }
        for r in &a.tor_routed {
            if !peers.iter().any(|p| p.0 == r.0) {
                peers.push(r.clone());
            }
        }
        if !peers.is_empty() {
            let path = a
                .ranges
                .first()
                .map(|(r, _)| r.path.replace(".range", "").replace(".ipRanges[0]", ""))
                .unwrap_or_else(|| "spec.config".into());
            push(
                out,
                a,
                Severity::Warning,
                format!("{path}.gateway"),
                a.ranges.first().map(|(r, _)| r.pos),
                Rule::SbrNoGateway { subnet: sub, peers },
            );
        }
    }
    // several RDMA interfaces in one subnet
    let mut by_subnet: std::collections::BTreeMap<Cidr, Vec<usize>> = Default::default();
    for (i, b) in seen.iter().enumerate().filter(|(_, b)| b.rdma) {
        if let Some(bs) = b.subnet {
            by_subnet.entry(bs).or_default().push(i);
        }
    }
    for (i, a) in seen.iter().enumerate() {
        if !a.rdma || a.tuning_missing.is_empty() {
            continue;
        }
        let Some(sub) = a.subnet else { continue };
        let others: Vec<ObjRef> = by_subnet
            .get(&sub)
            .into_iter()
            .flatten()
            .filter(|j| **j != i)
            .map(|j| seen[*j].nad.obj.clone())
            .collect();
        if !others.is_empty() {
            push(
                out,
                a,
                Severity::Warning,
                "spec.config.plugins".into(),
                None,
                Rule::ArpFlux {
                    subnet: sub,
                    others,
                    missing: a.tuning_missing.clone(),
                },
            );
        }
    }
}

/// Pairs (later, earlier) of NADs whose allocatable addresses overlap, in input order; a
/// sweep over the address spans, so unrelated NADs are never compared.
fn overlapping_pairs(seen: &[Seen]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(u32, u32, usize)> = seen
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.ranges
                .iter()
                .filter_map(move |(_, set)| Some((set.0.first()?.0, set.0.last()?.1, i)))
        })
        .collect();
    spans.sort_unstable();
    let mut active: Vec<(u32, usize)> = Vec::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (lo, hi, i) in spans {
        active.retain(|(end, _)| *end >= lo);
        for (_, j) in &active {
            if *j != i {
                let (a, b) = (i.max(*j), i.min(*j));
                let real = seen[a].ranges.iter().any(|(_, x)| {
                    seen[b]
                        .ranges
                        .iter()
                        .any(|(_, y)| !x.intersect(y).is_empty())
                });
                if real {
                    pairs.push((a, b));
                }
            }
        }
        active.push((hi, i));
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The corrected configuration for a finding that carries one.
pub fn fixed_config(r: &Rule) -> Option<&str> {
    match r {
        Rule::MissingSbr { fixed } | Rule::SbrBeforeMain { fixed, .. } => Some(fixed),
        _ => None,
    }
}
