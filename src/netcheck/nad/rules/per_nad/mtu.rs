//! The MTU rules of one NAD: the VF's MTU (from tuning, the sriov plugin or the policy)
//! against RoCE's 4096 and the PFs' MTUs, and whether the chain has the tuning plugin that
//! sets it.

use super::super::{Ctx, MtuOf, Rule};
use crate::netcheck::checks::Severity;
use crate::netcheck::nad::cni::{Config, Plugin};
use crate::netcheck::nad::ipv4::Cidr;
use crate::netcheck::nad::objects::{Inputs, Policy};
use crate::yaml::Node;

/// The VF's MTU (tuning, then the sriov plugin, then the policy set it) against RoCE's
/// 4096 and the PF's MTU. Without the policy the MTU is unknown, not 1500.
pub(super) fn mtu(
    ctx: &mut Ctx,
    inp: &Inputs,
    cfg: &Config,
    policy: Option<&Policy>,
    subnet: Option<Cidr>,
) {
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
) -> Vec<(u32, MtuOf)> {
    let mut pf_mtus: Vec<(u32, MtuOf)> = Vec::new();
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
                    pf_mtus.push((
                        m,
                        MtuOf::Pf {
                            node: n.name.clone(),
                            pf: pf.name.clone(),
                        },
                    ));
                }
            }
        }
    }
    if pf_mtus.is_empty() && vf_mtu != pol.mtu {
        if let Some(m) = pol.mtu {
            pf_mtus.push((m, MtuOf::Policy(pol.obj.clone())));
        }
    }
    pf_mtus
}

/// The tuning sysctls a pod with several interfaces in one subnet needs, and which are
/// missing (or set otherwise) in this chain.
pub(super) fn tuning_missing(cfg: &Config) -> Vec<&'static str> {
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
