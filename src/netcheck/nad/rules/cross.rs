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

/// NADs whose ranges hand out the same addresses: one finding per group of them, about
/// its first NAD and naming all — one pool shared on purpose (info), or separate pools or
/// rails (error).
fn overlaps(seen: &[Seen], out: &mut Vec<Lint>) {
    for group in overlap_groups(seen) {
        let first = &seen[group[0]];
        let same_pool = |s: &Seen| {
            s.network_name == first.network_name
                && s.ranges.len() == first.ranges.len()
                && s.ranges
                    .iter()
                    .zip(&first.ranges)
                    .all(|(x, y)| x.0.cidr == y.0.cidr && x.1 == y.1)
        };
        let rail = group.iter().find_map(|&i| seen[i].resource.as_ref());
        let kind = if group
            .iter()
            .any(|&i| seen[i].resource.as_ref().is_some_and(|r| Some(r) != rail))
        {
            Overlap::AcrossRails
        } else if group.iter().all(|&i| same_pool(&seen[i])) {
            Overlap::SharedPool
        } else {
            Overlap::SeparatePools
        };
        let sev = if kind == Overlap::SharedPool {
            Severity::Info
        } else {
            Severity::Error
        };
        let nads = group
            .iter()
            .map(|&i| OverlapMember {
                obj: seen[i].nad.obj.clone(),
                ranges: ranges_text(&seen[i]),
                resource: seen[i].resource.clone(),
                network_name: seen[i].network_name.clone(),
            })
            .collect();
        let (r, _) = &first.ranges[0];
        push(
            out,
            first,
            sev,
            r.path.clone(),
            Some(r.pos),
            Rule::Overlap { nads, kind },
        );
    }
}

/// An RDMA NAD with sbr and no gateway: its table only holds the connected route, so
/// traffic from the VF address to the other RDMA subnets (and what the ToR routes) misses
/// it and falls through to the main table (out through eth0). A note, not a problem: the
/// configuration works as the kernel runs it; it says where such traffic goes.
fn sbr_without_gateway(seen: &[Seen], out: &mut Vec<Lint>) {
    // the RDMA subnets, each once, with the first NAD in it (sorted, so lookups are cheap)
    let mut subnets: Vec<(Cidr, usize)> = Vec::new();
    for (i, b) in seen.iter().enumerate().filter(|(_, b)| b.rdma) {
        if let Some(bs) = b.subnet {
            subnets.push((bs, i));
        }
    }
    subnets.sort();
    subnets.dedup_by_key(|x| x.0);
    for a in seen {
        if !(a.has_sbr && !a.gateway && a.rdma) {
            continue;
        }
        let Some(sub) = a.subnet else { continue };
        // every peer counted, the first SBR_PEERS_NAMED named (naming all would grow
        // with the square of the NADs)
        let mut peers: Vec<(Cidr, PeerOf)> = Vec::new();
        let mut total = 0;
        let rails = subnets.iter().filter(|(bs, _)| !sub.overlaps(bs));
        for (bs, j) in rails {
            total += 1;
            if peers.len() < SBR_PEERS_NAMED {
                peers.push((*bs, PeerOf::Nad(seen[*j].nad.obj.clone())));
            }
        }
        for r in &a.tor_routed {
            if subnets.binary_search_by_key(&r.0, |x| x.0).is_err() {
                total += 1;
                if peers.len() < SBR_PEERS_NAMED {
                    peers.push(r.clone());
                }
            }
        }
        if total > 0 {
            let path = a.ranges.first().map_or_else(
                || "spec.config".into(),
                |(r, _)| r.path.replace(".range", "").replace(".ipRanges[0]", ""),
            );
            push(
                out,
                a,
                Severity::Info,
                format!("{path}.gateway"),
                a.ranges.first().map(|(r, _)| r.pos),
                Rule::SbrNoGateway {
                    subnet: sub,
                    peers,
                    peers_total: total,
                },
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
        let in_subnet = by_subnet.get(&sub).map_or(&[][..], Vec::as_slice);
        let others: Vec<ObjRef> = in_subnet
            .iter()
            .filter(|j| **j != i)
            .take(ARP_FLUX_NAMED)
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
                    others_total: in_subnet.len() - 1,
                    missing: a.tuning_missing.clone(),
                },
            );
        }
    }
}

/// The groups of NADs whose allocatable addresses overlap, directly or through one another,
/// each in input order, the groups in the order of their first NAD. One sweep over every
/// interval of every range, sorted by start: an interval that starts before the run's end
/// so far overlaps the interval that reached that end, so each run of such intervals is
/// connected, and a NAD in several runs joins their groups (union-find). O(n log n) in the
/// intervals, whatever the number of pairs.
fn overlap_groups(seen: &[Seen]) -> Vec<Vec<usize>> {
    let mut spans: Vec<(u32, u32, usize)> = seen
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.ranges
                .iter()
                .flat_map(move |(_, set)| set.0.iter().map(move |&(lo, hi)| (lo, hi, i)))
        })
        .collect();
    spans.sort_unstable();
    let mut parent: Vec<usize> = (0..seen.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut k = 0;
    while k < spans.len() {
        let (_, mut end, first) = spans[k];
        k += 1;
        while k < spans.len() && spans[k].0 <= end {
            end = end.max(spans[k].1);
            let (a, b) = (root(&mut parent, first), root(&mut parent, spans[k].2));
            parent[a.max(b)] = a.min(b);
            k += 1;
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..seen.len() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}
