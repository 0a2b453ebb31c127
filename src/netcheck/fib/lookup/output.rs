//! The output path: `ip route get DST [from SRC] [oif DEV]` for locally generated
//! traffic (`ip_route_output_key_hash_rcu`, IPv4), and IPv6 with a simplified RFC 6724
//! source choice.

use super::fib::{fib_lookup, is_local, select_addr, Flow};
use super::*;

pub(super) fn output_v4(st: &NetState, q: &Query, dst: IpAddr) -> Outcome {
    let mut saddr = q.src;
    if let Some(s) = saddr {
        if s.is_multicast() || is_lbcast(s) || is_zeronet(s) {
            return Err(err(Errno::Inval, format!("{s} cannot be a source address")));
        }
        if q.oif.is_none() && is_lbcast(dst) {
            let Some(a) = st.addrs.iter().find(|a| a.addr == s) else {
                return Err(err(
                    Errno::NetUnreach,
                    format!("{s} is not a local address"),
                ));
            };
            let mut a2 = answer(RouteType::Broadcast, None, a.dev.clone(), false);
            a2.table = Some(RT_TABLE_MAIN);
            return Ok(a2);
        }
        if !is_local(st, s) {
            return Err(err(
                Errno::NetUnreach,
                format!("{s} is not a local address (locally generated traffic must use one)"),
            ));
        }
    }
    if let Some(oif) = &q.oif {
        let l = st.link(oif).expect("checked");
        if !l.up {
            return Err(err(Errno::NetUnreach, format!("{oif} is down")));
        }
        if is_lbcast(dst) {
            if saddr.is_none() {
                saddr = select_addr(st, oif, None, scope::LINK);
            }
            let mut a = answer(RouteType::Broadcast, None, oif.clone(), false);
            a.prefsrc = if q.src.is_none() { saddr } else { None };
            return Ok(a);
        }
    }
    if dst == unspecified(true) {
        if let (None, Some(oif)) = (saddr, &q.oif) {
            saddr = select_addr(st, oif, None, scope::HOST);
        }
        let s = saddr.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let mut a = answer(RouteType::Local, None, "lo".into(), false);
        a.prefsrc = if q.src.is_none() { Some(s) } else { None };
        return Ok(a);
    }
    let fl = Flow {
        dst,
        src: saddr.unwrap_or(unspecified(true)),
        iif: "lo",
        oif: q.oif.as_deref(),
        mark: q.mark,
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) if e.errno == Errno::Unsupported => return Err(e),
        Err(e) => {
            if let Some(oif) = &q.oif {
                // "routing tables are wrong, assume the destination is on link"
                if saddr.is_none() {
                    saddr = select_addr(st, oif, None, scope::LINK);
                }
                let mut a = answer(RouteType::Unicast, None, oif.clone(), false);
                a.table = Some(RT_TABLE_MAIN);
                a.prefsrc = if q.src.is_none() { saddr } else { None };
                a.note = Some(format!("no route ({}); sent on-link via oif", e.why));
                return finish_output(a, saddr, dst);
            }
            return Err(e);
        }
    };
    if hit.route.kind == RouteType::Local {
        let s = saddr.or(hit.route.prefsrc).unwrap_or(dst);
        let mut a = answer(RouteType::Local, Some(&hit), "lo".into(), false);
        a.prefsrc = if q.src.is_none() { Some(s) } else { None };
        return Ok(a);
    }
    // fib_select_path
    let mut note = None;
    if q.oif.is_none() && hit.route.nexthops.iter().filter(|n| !n.dead).count() > 1 {
        note = Some(
            "multipath route: the kernel hashes each flow to one next hop; shown: the first".into(),
        );
    }
    let nh = hit.nh().clone();
    let dev = hit.dev();
    if saddr.is_none() {
        saddr = hit
            .route
            .prefsrc
            .or_else(|| select_addr(st, &dev, nh.gateway, hit.route.scope));
    }
    let kind = if is_lbcast(dst) {
        RouteType::Broadcast
    } else {
        hit.route.kind
    };
    let mut a = answer(kind, Some(&hit), dev, false);
    if kind != RouteType::Broadcast {
        a.gateway = nh.gateway;
    }
    a.prefsrc = if q.src.is_none() { saddr } else { None };
    a.note = note;
    finish_output(a, saddr, dst)
}

/// `__mkroute_output` checks.
fn finish_output(a: Answer, saddr: Option<IpAddr>, dst: IpAddr) -> Outcome {
    if let Some(s) = saddr {
        if is_loopback(s) && a.dev != "lo" {
            return Err(err(
                Errno::Inval,
                format!("loopback source {s} cannot leave through {}", a.dev),
            ));
        }
    }
    if is_zeronet(dst) && !is_lbcast(dst) {
        return Err(err(Errno::Inval, format!("{dst} is a zeronet destination")));
    }
    Ok(a)
}

fn v6_scope(a: std::net::Ipv6Addr) -> u8 {
    let s = a.segments();
    if a.is_loopback() {
        scope::HOST
    } else if s[0] & 0xffc0 == 0xfe80 {
        scope::LINK
    } else {
        scope::UNIVERSE
    }
}

fn common_prefix(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a) ^ u128::from(b)).leading_zeros(),
        _ => 0,
    }
}

/// IPv6 output: the same rules and tables; the source is `prefsrc` or a simplified
/// RFC 6724 choice (same address, scope at least the destination's, outgoing interface,
/// longest common prefix).
pub(super) fn output_v6(st: &NetState, q: &Query, dst: IpAddr) -> Outcome {
    if let Some(s) = q.src {
        if !is_local(st, s) {
            return Err(err(Errno::Inval, format!("{s} is not a local address")));
        }
    }
    let fl = Flow {
        dst,
        src: q.src.unwrap_or(unspecified(false)),
        iif: "lo",
        oif: q.oif.as_deref(),
        mark: q.mark,
    };
    let hit = fib_lookup(st, &fl)?;
    let dev = if hit.route.kind == RouteType::Local {
        "lo".to_string()
    } else {
        hit.dev()
    };
    let mut a = answer(hit.route.kind, Some(&hit), dev.clone(), false);
    a.gateway = hit.nh().gateway;
    // IPv6 reports the source it would pick even when the query names one
    {
        a.prefsrc = hit.route.prefsrc.or_else(|| {
            let IpAddr::V6(d6) = dst else { return None };
            let dscope = v6_scope(d6);
            let out = hit.dev();
            st.addrs
                .iter()
                .filter_map(|x| match x.addr {
                    IpAddr::V6(v) if v6_scope(v) <= dscope || v6_scope(v) == scope::UNIVERSE => {
                        Some((x, v))
                    }
                    _ => None,
                })
                .filter(|(x, v)| v6_scope(*v) != scope::LINK || x.dev == out)
                .max_by_key(|(x, v)| {
                    (
                        x.addr == dst,
                        x.dev == out,
                        common_prefix(IpAddr::V6(*v), dst),
                    )
                })
                .map(|(x, _)| x.addr)
        });
    }
    Ok(a)
}
