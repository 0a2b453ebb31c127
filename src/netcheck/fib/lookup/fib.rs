//! The FIB side of a lookup: policy rules in priority order, per-table longest-prefix
//! match with next-hop filtering (`fib_lookup`, `fib_table_lookup`), local addresses and
//! source address selection (`inet_select_addr`).

use super::{err, type_error, Errno, LookupError};
use crate::netcheck::model::*;
use std::net::IpAddr;

/// The flow a FIB lookup sees.
#[derive(Clone, Debug)]
pub(super) struct Flow<'a> {
    pub(super) dst: IpAddr,
    pub(super) src: IpAddr,
    /// Input device name (`lo` for locally generated traffic).
    pub(super) iif: &'a str,
    pub(super) oif: Option<&'a str>,
    pub(super) mark: u32,
}

/// A FIB hit.
#[derive(Clone, Debug)]
pub(super) struct Hit<'a> {
    pub(super) route: &'a Route,
    pub(super) nh: usize,
    /// Table reported back (`main` for local-table hits while the tables are merged).
    pub(super) table: u32,
    pub(super) rule: Option<u32>,
}

impl Hit<'_> {
    pub(super) fn nh(&self) -> &NextHop {
        &self.route.nexthops[self.nh]
    }
    pub(super) fn dev(&self) -> String {
        self.nh().dev.clone().unwrap_or_default()
    }
}

/// Table lookup (`fib_table_lookup`): Err(XDev) stands for -EAGAIN (no match / throw).
fn table_lookup<'a>(
    st: &'a NetState,
    tables: &[u32],
    report_as: u32,
    fl: &Flow<'_>,
    ignore_linkdown: bool,
) -> Result<Hit<'a>, Errno> {
    let _ = ignore_linkdown;
    let v4 = fl.dst.is_ipv4();
    let mut cands: Vec<(usize, &Route)> = st
        .routes
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            tables.contains(&r.table) && r.dst.addr.is_ipv4() == v4 && r.dst.contains(fl.dst)
        })
        .collect();
    // longest prefix first, then metric, then the kernel's alias order (dump order)
    cands.sort_by(|(ia, a), (ib, b)| {
        b.dst
            .len
            .cmp(&a.dst.len)
            .then(a.metric.cmp(&b.metric))
            .then(ia.cmp(ib))
    });
    for (_, r) in cands {
        if r.tos != 0 {
            continue;
        }
        if let Some(e) = type_error(r.kind) {
            return Err(e);
        }
        if !r.nexthops.is_empty() && r.nexthops.iter().all(|n| n.dead) {
            continue;
        }
        for (i, nh) in r.nexthops.iter().enumerate() {
            if nh.dead {
                continue;
            }
            if let Some(o) = fl.oif {
                if nh.dev.as_deref() != Some(o) {
                    continue;
                }
            }
            let table = if r.table == RT_TABLE_LOCAL && report_as == RT_TABLE_MAIN {
                RT_TABLE_MAIN
            } else {
                r.table
            };
            return Ok(Hit {
                route: r,
                nh: i,
                table,
                rule: None,
            });
        }
    }
    Err(Errno::XDev)
}

fn rule_matches(st: &NetState, r: &Rule, fl: &Flow<'_>) -> bool {
    let m = (|| {
        if let Some(i) = &r.iif {
            if st.link(i).is_none() || i != fl.iif {
                return false;
            }
        }
        if let Some(o) = &r.oif {
            if st.link(o).is_none() || Some(o.as_str()) != fl.oif {
                return false;
            }
        }
        if let Some((mark, mask)) = r.fwmark {
            if (mark ^ fl.mark) & mask != 0 {
                return false;
            }
        }
        if let Some(p) = r.src {
            if !p.contains(fl.src) {
                return false;
            }
        }
        if let Some(p) = r.dst {
            if !p.contains(fl.dst) {
                return false;
            }
        }
        r.tos == 0
    })();
    m != r.invert
}

/// `fib_lookup`: policy rules (or the merged local+main fast path), then tables.
pub(super) fn fib_lookup<'a>(st: &'a NetState, fl: &Flow<'_>) -> Result<Hit<'a>, LookupError> {
    let v4 = fl.dst.is_ipv4();
    if v4 && !st.has_custom_rules(true) {
        // no custom rules: the kernel looks in main (merged with local), then default
        for (tables, rule) in [
            (&[RT_TABLE_LOCAL, RT_TABLE_MAIN][..], 32766),
            (&[RT_TABLE_DEFAULT][..], 32767),
        ] {
            match table_lookup(st, tables, RT_TABLE_MAIN, fl, false) {
                Ok(mut h) => {
                    h.rule = Some(if h.route.table == RT_TABLE_LOCAL {
                        0
                    } else {
                        rule
                    });
                    return Ok(h);
                }
                Err(Errno::XDev) => {}
                Err(e) => return Err(err(e, "the matching route is of a rejecting type")),
            }
        }
        return Err(err(Errno::NetUnreach, "no route matches"));
    }
    let rules = st.rules_for(v4);
    // `i` only moves forward: to the next rule, or by a goto to a later one (the kernel
    // refuses a goto whose target is not above the rule's own priority), so a chain cannot
    // loop and the walk takes at most one step per rule.
    let mut i = 0;
    while i < rules.len() {
        let r = &rules[i];
        if !rule_matches(st, r, fl) {
            i += 1;
            continue;
        }
        if let Some(u) = &r.unsupported {
            return Err(err(
                Errno::Unsupported,
                format!("rule {} uses {u}, which is not modelled", r.priority),
            ));
        }
        match r.action {
            // the first rule of priority `t`, found by binary search on the sorted rules;
            // none (an unresolved goto) falls through to the next rule, as in the kernel
            RuleAction::Goto(t) => match rules.partition_point(|x| x.priority < t) {
                j if j > i && rules.get(j).is_some_and(|x| x.priority == t) => i = j,
                _ => i += 1,
            },
            RuleAction::Nop => i += 1,
            RuleAction::Unreachable => {
                return Err(err(
                    Errno::NetUnreach,
                    format!("rule {} is unreachable", r.priority),
                ))
            }
            RuleAction::Prohibit => {
                return Err(err(
                    Errno::Acces,
                    format!("rule {} is prohibit", r.priority),
                ))
            }
            RuleAction::Blackhole => {
                return Err(err(
                    Errno::Inval,
                    format!("rule {} is blackhole", r.priority),
                ))
            }
            RuleAction::Table(t) => match table_lookup(st, &[t], t, fl, false) {
                Ok(mut h) => {
                    if let Some(sp) = r.suppress_prefixlen {
                        if u32::from(h.route.dst.len) <= sp {
                            i += 1;
                            continue;
                        }
                    }
                    h.rule = Some(r.priority);
                    return Ok(h);
                }
                Err(Errno::XDev) => i += 1,
                Err(e) => {
                    return Err(err(
                        e,
                        format!(
                            "table {} (rule {}) answers with a rejecting route",
                            table_name(t),
                            r.priority
                        ),
                    ))
                }
            },
        }
    }
    Err(err(Errno::NetUnreach, "no rule leads to a matching route"))
}

/// True when `a` is one of this namespace's addresses, or a local-table `local` route
/// covers it (`__ip_dev_find`).
pub(super) fn is_local(st: &NetState, a: IpAddr) -> bool {
    st.addrs.iter().any(|x| x.addr == a)
        || st
            .routes
            .iter()
            .any(|r| r.table == RT_TABLE_LOCAL && r.kind == RouteType::Local && r.dst.contains(a))
}

/// `inet_select_addr(dev, dst, scope)`: the device's first primary address whose scope
/// fits (preferring one in `dst`'s subnet), else the first non-link-scope primary address
/// of any device, in device order. This is where an address-less device (`cali*`) gets a
/// source from whichever device was registered first.
pub(super) fn select_addr(
    st: &NetState,
    dev: &str,
    dst: Option<IpAddr>,
    route_scope: u8,
) -> Option<IpAddr> {
    let localnet_scope = if st.effective(dev, "route_localnet") == Some(1) {
        scope::LINK
    } else {
        scope::HOST
    };
    let mut first = None;
    for a in st.addrs_of(dev).filter(|a| a.addr.is_ipv4()) {
        if a.secondary || a.scope.min(localnet_scope) > route_scope {
            continue;
        }
        match dst {
            Some(d) if a.subnet().contains(d) => return Some(a.addr),
            None => return Some(a.addr),
            _ => {
                if first.is_none() {
                    first = Some(a.addr);
                }
            }
        }
    }
    if first.is_some() {
        return first;
    }
    for l in &st.links {
        for a in st.addrs_of(&l.name).filter(|a| a.addr.is_ipv4()) {
            if !a.secondary && a.scope != scope::LINK && a.scope <= route_scope {
                return Some(a.addr);
            }
        }
    }
    None
}
