//! The rules between NADs: overlapping ranges, sbr without a gateway on routed rails,
//! ARP flux between attachments in one subnet.

use super::*;

fn ranges_text(s: &Seen) -> String {
    s.ranges
        .iter()
        .map(|(r, _)| r.text.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rules between NADs: overlapping ranges, sbr without a gateway on routed rails, ARP flux.
pub(super) fn cross(seen: &[Seen], out: &mut Vec<Lint>) {
    overlaps(seen, out);
    sbr_without_gateway(seen, out);
    arp_flux(seen, out);
}

/// A finding about NAD `s`.
fn push(out: &mut Vec<Lint>, s: &Seen, sev: Severity, path: String, p: Option<Pos>, rule: Rule) {
    let mut c = Ctx { nad: s.nad, out };
    c.push(sev, path, p, rule);
}

/// NADs whose ranges hand out the same addresses: one pool shared on purpose (info), or
/// two pools (error), or two rails.
fn overlaps(seen: &[Seen], out: &mut Vec<Lint>) {
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
}

/// An RDMA NAD with sbr and no gateway: its table only holds the connected route, so
/// the other RDMA subnets (and what the ToR routes) are unreachable from it.
fn sbr_without_gateway(seen: &[Seen], out: &mut Vec<Lint>) {
    // the RDMA subnets, each with the first NAD in it (sorted, so lookups are cheap)
    let mut subnets: Vec<(Cidr, usize)> = Vec::new();
    for (i, b) in seen.iter().enumerate().filter(|(_, b)| b.rdma) {
        if let Some(bs) = b.subnet {
            subnets.push((bs, i));
        }
    }
    subnets.sort();
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
}

/// Several RDMA interfaces in one subnet without the tuning sysctls: ARP flux.
fn arp_flux(seen: &[Seen], out: &mut Vec<Lint>) {
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
