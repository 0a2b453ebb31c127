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
use crate::netcheck::nad::objects::{Inputs, Nad, Policy};
use crate::netcheck::nad::static_ipam;
use crate::yaml::{Node, Pos};

mod mtu;
use mtu::{mtu, tuning_missing};

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
