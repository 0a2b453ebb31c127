//! The rules of one NAD, in the order a reader meets them: its configuration parses,
//! its `cniVersion` and keys are known, its resource has a policy, sbr is in the chain
//! (after the main plugin, with options the installed sbr knows), its whereabouts ranges
//! fit the PFs' subnet without handing out someone else's address and with room for
//! every VF (`super::ipam`), and its MTU fits the PF and RoCE. What the cross-NAD rules need is returned
//! as a [`Seen`].

use super::ipam::{ipam_rules, IpamFacts};
use super::{short_resource, Ctx, Lint, Rule, SbrInstalled, Seen, SBR_OPTIONS};
use crate::netcheck::checks::Severity;
use crate::netcheck::nad::cni::{self, Config, ConfigError, Ipam, Plugin};
use crate::netcheck::nad::ipv4::Cidr;
use crate::netcheck::nad::objects::{Inputs, Nad, Policy};
use crate::netcheck::nad::static_ipam;
use crate::yaml::{Node, Pos};

pub(super) fn lint_nad<'a>(
    nad: &'a Nad,
    inp: &'a Inputs,
    sbr: &SbrInstalled,
    out: &mut Vec<Lint>,
) -> Option<Seen<'a>> {
    let mut ctx = Ctx { nad, out };
    let cfg = parse(&mut ctx, nad)?;
    version_and_keys(&mut ctx, &cfg);
    let resource = nad.resource.clone();
    let policy = policy_of(&mut ctx, nad, inp);
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
    if rdma {
        sbr_placement(&mut ctx, &cfg, sbr_at);
    }
    if let Some(i) = sbr_at {
        sbr_options(&mut ctx, &cfg.plugins[i], sbr);
    }
    let ipam: Option<Ipam> = cfg
        .plugins
        .first()
        .and_then(cni::ipam_of)
        .filter(|i| i.ty == "whereabouts");
    let facts = match &ipam {
        Some(ipam) => ipam_rules(&mut ctx, inp, policy, ipam),
        None => IpamFacts::default(),
    };
    mtu(&mut ctx, inp, &cfg, policy, facts.subnet);
    let has_sbr = sbr_at.is_some_and(|i| i > 0 || cfg.plugins.len() == 1);
    let gateway = ipam.as_ref().is_some_and(|i| i.gateway.is_some());
    Some(Seen {
        nad,
        resource: resource.as_deref().map(|r| short_resource(r).to_string()),
        rdma,
        subnet: facts
            .subnet
            .or_else(|| facts.ranges.first().map(|(r, _)| r.cidr)),
        ranges: facts.ranges,
        network_name: ipam.as_ref().and_then(|i| i.network_name.clone()),
        has_sbr,
        gateway,
        tuning_missing: tuning_missing(&cfg),
        tor_routed: facts.tor_routed,
    })
}

/// The CNI configuration, or the finding that says why there is none.
fn parse(ctx: &mut Ctx, nad: &Nad) -> Option<Config> {
    match cni::parse(nad.config.as_ref()) {
        Ok(c) => Some(c),
        Err(e) => {
            let (rule, p, in_cfg) = match e {
                ConfigError::Missing => (Rule::ConfigMissing, None, false),
                ConfigError::NotString { pos } => (Rule::ConfigNotString, Some(pos), false),
                ConfigError::NotObject => (
                    Rule::ConfigNotObject,
                    nad.config.as_ref().map(|c| c.pos),
                    false,
                ),
                ConfigError::TooLarge(what) => (
                    Rule::ConfigTooLarge { what },
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
            None
        }
    }
}

/// `cniVersion` present and known; every key known to its plugin (and whereabouts).
fn version_and_keys(ctx: &mut Ctx, cfg: &Config) {
    let root = &cfg.root;
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
    if cfg.conflist {
        check_keys(
            ctx,
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
            check_keys(ctx, &p.node, &k, &p.path, &format!("the {} plugin", p.ty));
        }
        if let Some(ipam) = p.node.get("ipam") {
            if ipam.get("type").and_then(Node::str) == Some("static") {
                let path = format!("{}.ipam", p.path);
                for b in static_ipam::check(ipam, &path) {
                    ctx.push(
                        Severity::Error,
                        b.path,
                        Some(b.pos),
                        Rule::StaticAddress {
                            value: b.value,
                            problem: b.problem,
                        },
                    );
                }
            }
            if ipam.get("type").and_then(Node::str) == Some("whereabouts") {
                let path = format!("{}.ipam", p.path);
                check_keys(ctx, ipam, cni::WHEREABOUTS_KEYS, &path, "whereabouts");
                for (i, r) in ipam
                    .get("ipRanges")
                    .and_then(Node::seq)
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    check_keys(
                        ctx,
                        r,
                        cni::IP_RANGE_KEYS,
                        &format!("{path}.ipRanges[{i}]"),
                        "an ipRanges entry",
                    );
                }
            }
        }
    }
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

/// The policy that defines the NAD's resource (a warning when policies were given and
/// none defines it).
fn policy_of<'a>(ctx: &mut Ctx, nad: &Nad, inp: &'a Inputs) -> Option<&'a Policy> {
    let resource = nad.resource.as_deref()?;
    let policy = inp
        .policies
        .iter()
        .find(|p| p.resource == short_resource(resource));
    if policy.is_none() && !inp.policies.is_empty() {
        ctx.push_at(
            Severity::Warning,
            "metadata.annotations.k8s.v1.cni.cncf.io/resourceName",
            nad.resource_pos,
            false,
            Rule::NoPolicy {
                resource: resource.to_string(),
            },
        );
    }
    policy
}

/// An RDMA attachment needs sbr, after the main plugin.
fn sbr_placement(ctx: &mut Ctx, cfg: &Config, sbr_at: Option<usize>) {
    let plugins_path = if cfg.conflist {
        "spec.config.plugins"
    } else {
        "spec.config"
    };
    let plugins_pos = cfg
        .root
        .get("plugins")
        .map(|n| n.pos)
        .or(Some(cfg.root.pos));
    let fixed = || serde_json::to_string_pretty(&cni::with_sbr(cfg)).unwrap_or_default();
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

/// sbr is installed, and knows the options the NAD gives it.
fn sbr_options(ctx: &mut Ctx, p: &Plugin, sbr: &SbrInstalled) {
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

/// The VF's MTU (tuning, then the sriov plugin, then the policy set it) against RoCE's
/// 4096 and the PF's MTU. Without the policy the MTU is unknown, not 1500.
fn mtu(ctx: &mut Ctx, inp: &Inputs, cfg: &Config, policy: Option<&Policy>, subnet: Option<Cidr>) {
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
    if policy.is_none() && vf_mtu.is_none() {
        return;
    }
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
    let Some(v) = vf_mtu else { return };
    let pf_mtus = pf_mtus(inp, policy, vf_mtu, subnet);
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

/// The PF's MTU: from the nodes (PFs with an address in the subnet), else the policy's
/// (which sets the PF's).
fn pf_mtus(
    inp: &Inputs,
    policy: Option<&Policy>,
    vf_mtu: Option<u32>,
    subnet: Option<Cidr>,
) -> Vec<(u32, String)> {
    let mut pf_mtus: Vec<(u32, String)> = Vec::new();
    let Some(pol) = policy else {
        return pf_mtus;
    };
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
    pf_mtus
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
