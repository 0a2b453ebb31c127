//! The input path: `ip route get DST from SRC iif DEV` (`ip_route_input_slow`): martian
//! checks, local / broadcast / forward, and `fib_validate_source` with `rp_filter`,
//! `accept_local` and `forwarding`.

use super::fib::{fib_lookup, Flow, Hit};
use super::*;

/// Result of the reverse-path / source validation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Validation {
    Ok(String),
    Fail(Errno, String),
}

/// `fib_validate_source(src, dst, oif, dev)`.
pub(super) fn validate_source(
    st: &NetState,
    src: IpAddr,
    dst: IpAddr,
    oif: Option<&str>,
    dev: &str,
    mark: u32,
) -> Validation {
    let rpf = st.effective(dev, "rp_filter").unwrap_or(0);
    let accept_local = st.effective(dev, "accept_local").unwrap_or(0) != 0;
    let tx_redirects = st.effective(dev, "send_redirects").unwrap_or(1) != 0;
    if rpf == 0 && (Some(dev) != oif || !tx_redirects) {
        if accept_local {
            return Validation::Ok("accept_local".into());
        }
        let custom_local = st.routes.iter().any(|r| {
            r.table == RT_TABLE_LOCAL && r.kind == RouteType::Local && r.protocol != "kernel"
        });
        if !(custom_local || st.has_custom_rules(true)) {
            if st.addrs.iter().any(|a| a.addr == src) {
                return Validation::Fail(
                    Errno::Inval,
                    format!("source {src} is one of this namespace's own addresses"),
                );
            }
            return Validation::Ok("rp_filter off".into());
        }
    }
    let iif = oif.unwrap_or("lo");
    let src_mark = if st.effective(dev, "src_valid_mark").unwrap_or(0) != 0 {
        mark
    } else {
        0
    };
    let fl = Flow {
        dst: src,
        src: dst,
        iif,
        oif: None,
        mark: src_mark,
    };
    let rp_name = match rpf {
        0 => "off",
        1 => "strict",
        _ => "loose",
    };
    let last_resort = |why: String| {
        if rpf != 0 {
            Validation::Fail(Errno::XDev, format!("rp_filter {rp_name}: {why}"))
        } else {
            Validation::Ok(why)
        }
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) => return last_resort(format!("no route back to {src} ({})", e.why)),
    };
    if hit.route.kind != RouteType::Unicast && !(hit.route.kind == RouteType::Local && accept_local)
    {
        return Validation::Fail(
            Errno::Inval,
            format!(
                "the route back to {src} is {} ({})",
                hit.route.kind,
                hit.route.spec()
            ),
        );
    }
    let dev_match = hit
        .route
        .nexthops
        .iter()
        .any(|n| n.dev.as_deref() == Some(dev))
        || (hit.route.kind == RouteType::Local && dev == "lo");
    let back = format!("the route back to {src} is {}", hit.route.spec());
    if dev_match {
        return Validation::Ok(back);
    }
    if st.addrs_of(dev).next().is_none() {
        return last_resort(format!("{dev} has no address; {back}"));
    }
    if rpf == 1 {
        return Validation::Fail(
            Errno::XDev,
            format!("rp_filter strict on {dev}: {back}, not {dev}"),
        );
    }
    Validation::Ok(format!("rp_filter {rp_name}: {back}"))
}

pub(super) fn input_v4(st: &NetState, q: &Query, dst: IpAddr, iif: &str) -> Outcome {
    let saddr = q.src.unwrap_or(unspecified(true));
    let martian_src = |why: String| err(Errno::Inval, format!("martian source: {why}"));
    let martian_dst = |why: String| err(Errno::Inval, format!("martian destination: {why}"));
    if saddr.is_multicast() || is_lbcast(saddr) {
        return Err(martian_src(format!("{saddr}")));
    }
    let localnet = st.effective(iif, "route_localnet").unwrap_or(0) != 0;
    let brd_input = |hit: Option<&Hit<'_>>| -> Outcome {
        if !is_zeronet(saddr) {
            if let Validation::Fail(_, why) = validate_source(st, saddr, dst, None, iif, q.mark) {
                return Err(martian_src(why));
            }
        }
        Ok(answer(RouteType::Broadcast, hit, "lo".into(), true))
    };
    if is_lbcast(dst) || (saddr == unspecified(true) && dst == unspecified(true)) {
        return brd_input(None);
    }
    if is_zeronet(saddr) {
        return Err(martian_src(format!("{saddr} (zero network)")));
    }
    if is_zeronet(dst) {
        return Err(martian_dst(format!("{dst} (zero network)")));
    }
    if is_loopback(dst) {
        if !localnet {
            return Err(martian_dst(format!(
                "{dst} is loopback, route_localnet off"
            )));
        }
    } else if is_loopback(saddr) && !localnet {
        return Err(martian_src(format!(
            "{saddr} is loopback, route_localnet off"
        )));
    }
    let forwarding = st.conf(iif, "forwarding").unwrap_or(0) != 0 || !st.have_sysctl;
    let fl = Flow {
        dst,
        src: saddr,
        iif,
        oif: None,
        mark: q.mark,
    };
    let hit = match fib_lookup(st, &fl) {
        Ok(h) => h,
        Err(e) if e.errno == Errno::Unsupported => return Err(e),
        Err(e) => {
            if !forwarding {
                return Err(err(
                    Errno::HostUnreach,
                    format!("{} and forwarding is off on {iif}", e.why),
                ));
            }
            return Err(e);
        }
    };
    match hit.route.kind {
        RouteType::Broadcast => return brd_input(Some(&hit)),
        RouteType::Local => {
            return match validate_source(st, saddr, dst, None, iif, q.mark) {
                Validation::Fail(_, why) => Err(martian_src(why)),
                Validation::Ok(_) => Ok(answer(RouteType::Local, Some(&hit), "lo".into(), true)),
            }
        }
        _ => {}
    }
    if !forwarding {
        return Err(err(
            Errno::HostUnreach,
            format!("{dst} is not local and forwarding is off on {iif}"),
        ));
    }
    if hit.route.kind != RouteType::Unicast {
        return Err(martian_dst(format!("route type {}", hit.route.kind)));
    }
    let dev = hit.dev();
    if let Validation::Fail(_, why) = validate_source(st, saddr, dst, Some(&dev), iif, q.mark) {
        return Err(martian_src(why));
    }
    let mut a = answer(RouteType::Unicast, Some(&hit), dev, true);
    a.gateway = hit.nh().gateway;
    if hit.route.nexthops.len() > 1 {
        a.note = Some("multipath route: shown: the first next hop".into());
    }
    Ok(a)
}
