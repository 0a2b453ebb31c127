//! The whereabouts rules of one NAD: values that do not parse, a policy whose PFs are
//! on no node, and for each range its bounds and excludes, the PFs' subnet it must fall
//! in, addresses it would hand out that belong to a PF or a gateway, and room for every
//! VF the policy creates on the ToR.

use super::{Ctx, Host, PeerOf, Rule, Whose};
use crate::netcheck::checks::Severity;
use crate::netcheck::nad::cni::{Ipam, Range};
use crate::netcheck::nad::ipv4::{Cidr, Set};
use crate::netcheck::nad::objects::{Inputs, NodeFacts, Policy};

/// An address on a PF the NAD's policy selects, on one node.
#[derive(Clone, Copy, Debug)]
struct Selected<'a> {
    node: &'a NodeFacts,
    pf: &'a str,
    addr: u32,
    prefix_len: u8,
    /// VFs the policy creates on this PF.
    vfs: u32,
}

/// What the IPAM rules learn for the cross-NAD rules.
#[derive(Default)]
pub(super) struct IpamFacts {
    pub(super) ranges: Vec<(Range, Set)>,
    /// The PFs' subnet the ranges fall in.
    pub(super) subnet: Option<Cidr>,
    /// Prefixes the ToR's nodes route through the PFs, with who routes them.
    pub(super) tor_routed: Vec<(Cidr, PeerOf)>,
}

/// The addresses on the policy's PFs, on every node.
fn selected_pfs<'a>(inp: &'a Inputs, policy: Option<&'a Policy>) -> Vec<Selected<'a>> {
    let Some(pol) = policy else {
        return Vec::new();
    };
    inp.nodes
        .iter()
        .flat_map(|n| {
            pol.pf_names.iter().filter_map(move |pf| {
                let f = n.pf(&pf.name)?;
                Some((n, f, pol.vfs_per_pf(pf).unwrap_or(0)))
            })
        })
        .flat_map(|(n, f, vfs)| {
            f.addrs.iter().map(move |(a, l)| Selected {
                node: n,
                pf: f.name.as_str(),
                addr: *a,
                prefix_len: *l,
                vfs,
            })
        })
        .collect()
}

/// The whereabouts rules: bad values, PFs on no node, then each range.
pub(super) fn ipam_rules(
    ctx: &mut Ctx,
    inp: &Inputs,
    policy: Option<&Policy>,
    ipam: &Ipam,
) -> IpamFacts {
    for (path, p, what) in &ipam.bad {
        ctx.push(
            Severity::Error,
            path.clone(),
            Some(*p),
            Rule::BadValue { what: what.clone() },
        );
    }
    let selected = selected_pfs(inp, policy);
    if let Some(pol) = policy {
        if inp.have_nodes && selected.is_empty() && !ipam.ranges.is_empty() {
            ctx.push_at(
                Severity::Warning,
                "metadata.annotations.k8s.v1.cni.cncf.io/resourceName",
                ctx.nad.resource_pos,
                false,
                Rule::PfNotOnAnyNode {
                    pfs: pol.pf_names.iter().map(|p| p.name.clone()).collect(),
                    resource: pol.resource.clone(),
                },
            );
        }
    }
    let mut facts = IpamFacts::default();
    for r in &ipam.ranges {
        let set = allocatable(ctx, r);
        range_rules(ctx, policy, ipam, &selected, r, &set, &mut facts);
        facts.ranges.push((r.clone(), set));
    }
    facts
}

/// The addresses a range hands out: its usable addresses between its bounds (when they
/// are valid), minus its excludes; bounds and excludes outside the range are findings.
fn allocatable(ctx: &mut Ctx, r: &Range) -> Set {
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
    let mut cuts = Vec::with_capacity(r.excludes.len());
    for (x, path, p) in &r.excludes {
        cuts.push((x.first(), x.last()));
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
    }
    set.remove_all(cuts);
    set
}

/// One range against the PFs: in their subnet, handing out nobody's address, with room
/// for every VF on the ToR. Records the subnet and the ToR's routed prefixes in `facts`.
fn range_rules<'a>(
    ctx: &mut Ctx,
    policy: Option<&Policy>,
    ipam: &Ipam,
    selected: &'a [Selected<'a>],
    r: &Range,
    set: &Set,
    facts: &mut IpamFacts,
) {
    // the PF's subnet
    let mut tor: Vec<&Selected> = Vec::new();
    if !selected.is_empty() {
        let mut subnets: Vec<(Cidr, Vec<String>)> = Vec::new();
        for s in selected {
            let c = Cidr::new(s.addr, s.prefix_len);
            match subnets.iter_mut().find(|x| x.0 == c) {
                Some(x) => x.1.push(s.node.name.clone()),
                None => subnets.push((c, vec![s.node.name.clone()])),
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
                facts.subnet = Some(*c);
                tor = selected.iter().filter(|s| c.contains(s.addr)).collect();
            }
        }
    }
    taken_addresses(ctx, ipam, &tor, r, set, facts);
    // room for every VF on the ToR
    if let Some(pol) = policy {
        let mut node_names: Vec<&str> = tor.iter().map(|s| s.node.name.as_str()).collect();
        node_names.sort_unstable();
        node_names.dedup();
        let needed: u64 = tor.iter().map(|s| u64::from(s.vfs)).sum();
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
}

/// Addresses the range would hand out that belong to someone else: the ToR's PF
/// addresses, the IPAM gateway, the PFs' gateways. Also notes the prefixes the nodes
/// route through their PFs.
fn taken_addresses(
    ctx: &mut Ctx,
    ipam: &Ipam,
    tor: &[&Selected],
    r: &Range,
    set: &Set,
    facts: &mut IpamFacts,
) {
    let mut hosts: Vec<Host> = Vec::new();
    for s in tor {
        if set.contains(s.addr) {
            hosts.push(Host {
                addr: s.addr,
                whose: Whose::Pf {
                    node: s.node.name.clone(),
                    pf: s.pf.to_string(),
                },
                gateway: false,
            });
        }
    }
    if let Some((g, _, _)) = &ipam.gateway {
        if set.contains(*g) {
            hosts.push(Host {
                addr: *g,
                whose: Whose::IpamGateway,
                gateway: true,
            });
        }
    }
    for s in tor {
        let Some(pf) = s.node.pf(s.pf) else {
            continue;
        };
        for g in &pf.gateways {
            if set.contains(*g) && !hosts.iter().any(|h| h.addr == *g) {
                hosts.push(Host {
                    addr: *g,
                    whose: Whose::PfGateway {
                        node: s.node.name.clone(),
                        pf: s.pf.to_string(),
                    },
                    gateway: true,
                });
            }
        }
        for d in &pf.routed {
            if !facts.tor_routed.iter().any(|x| x.0 == *d)
                && !facts.subnet.is_some_and(|c| c.contains_cidr(d))
            {
                facts.tor_routed.push((
                    *d,
                    PeerOf::Routed {
                        node: s.node.name.clone(),
                        pf: s.pf.to_string(),
                    },
                ));
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
}
