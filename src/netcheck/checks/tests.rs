//! The checks' cost on large states: linear in the devices, and a counted, visible stop
//! where each step is a route lookup.

use super::*;
use crate::netcheck::load_json::{parse_addrs, parse_routes};
use serde_json::json;
use std::time::{Duration, Instant};

/// A state from `ip -j addr` links (name, address/len) and `ip -j route` routes.
fn state(links: &[(String, Option<String>)], routes: serde_json::Value) -> NetState {
    let links: Vec<_> = links
        .iter()
        .enumerate()
        .map(|(n, (name, a))| {
            let info: Vec<_> = a
                .iter()
                .map(|a| {
                    let (ip, len) = a.split_once('/').unwrap();
                    json!({"family": "inet", "local": ip, "prefixlen": len.parse::<u8>().unwrap(),
                        "scope": "global"})
                })
                .collect();
            json!({"ifindex": n + 2, "ifname": name, "flags": ["UP"], "addr_info": info})
        })
        .collect();
    let mut st = NetState::default();
    parse_addrs(&json!(links), &mut st).unwrap();
    parse_routes(&routes, &mut st).unwrap();
    st
}

fn ids(out: &[Routing]) -> Vec<&'static str> {
    out.iter().map(Routing::id).collect()
}

/// The finding in words, as the report shows it.
fn worded(r: &Routing) -> Finding {
    crate::netcheck::report::words::finding(&crate::netcheck::found::Found::Routing(r.clone()))
}

#[test]
fn twenty_thousand_devices_are_checked_in_linear_time() {
    // a node's veths: each a /32, no shared subnet, one default route
    let mut links = vec![("eth0".to_string(), Some("192.0.2.10/24".to_string()))];
    for n in 0..20_000u32 {
        let a = format!("198.18.{}.{}/32", n >> 8, n & 255);
        links.push((format!("veth{n}"), Some(a)));
    }
    let routes = json!([{"dst": "default", "gateway": "192.0.2.1", "dev": "eth0"},
        {"dst": "192.0.2.0/24", "dev": "eth0", "scope": "link", "prefsrc": "192.0.2.10"}]);
    let mut st = state(&links, routes);
    st.have_sysctl = true;
    let t = Instant::now();
    let mut out = Vec::new();
    reply_path(&st, &mut out);
    node_source(&st, &[], &mut out);
    arp_sysctls(&st, &mut out);
    assert!(out.is_empty(), "{:?}", ids(&out));
    // quadratic before: 2,000 devices took 420 s
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn reply_paths_stop_at_their_limit_and_say_how_many_were_left() {
    // 12 interfaces, each on a subnet of its own: 12 x 11 pairs
    let mut links = vec![("eth0".to_string(), Some("192.0.2.10/24".to_string()))];
    let mut routes = vec![json!({"dst": "default", "gateway": "192.0.2.1", "dev": "eth0"})];
    for n in 0..12 {
        links.push((format!("net{n}"), Some(format!("198.19.{n}.10/24"))));
        routes.push(
            json!({"dst": format!("198.19.{n}.0/24"), "dev": format!("net{n}"),
            "scope": "link", "prefsrc": format!("198.19.{n}.10")}),
        );
    }
    let st = state(&links, json!(routes));
    let mut out = Vec::new();
    reply_path(&st, &mut out);
    let max = crate::config::limits::REPLY_PATH_CHECKS;
    let last = out.last().unwrap();
    assert_eq!(last.id(), "reply-path-truncated");
    // eth0's address against 12 subnets, each net's against 11 others (and not eth0's:
    // it carries the default route)
    let pairs = 12 + 12 * 11;
    assert!(
        matches!(last, Routing::ReplyPathTruncated { checked, skipped }
            if *checked == max && *skipped == pairs - max),
        "{last:?}"
    );
    let last = worded(last);
    let title = format!(
        "first {max} (address, other interface's subnet) pairs only; {} more",
        pairs - max
    );
    assert!(last.title.contains(&title), "{}", last.title);
    assert!(out.len() <= max + 1);
}

#[test]
fn node_sources_stop_at_their_limit_and_say_how_many_were_left() {
    let links = vec![
        ("eth0".to_string(), Some("192.0.2.10/24".to_string())),
        ("rdma0".to_string(), Some("198.51.100.10/24".to_string())),
        ("cali0".to_string(), None),
    ];
    let mut routes = vec![
        json!({"dst": "default", "gateway": "192.0.2.1", "dev": "eth0", "prefsrc": "192.0.2.10"}),
        json!({"dst": "192.0.2.0/24", "dev": "eth0", "scope": "link", "prefsrc": "192.0.2.10"}),
        json!({"dst": "198.51.100.0/24", "dev": "rdma0", "scope": "link", "prefsrc": "198.51.100.10"}),
    ];
    let max = crate::config::limits::NODE_SOURCE_LOOKUPS;
    for n in 0..max + 44 {
        routes.push(
            json!({"dst": format!("198.18.{}.{}", n >> 8, n & 255), "dev": "cali0",
            "scope": "link"}),
        );
    }
    let st = state(&links, json!(routes));
    let mut out = Vec::new();
    node_source(&st, &[], &mut out);
    let last = out.last().unwrap();
    assert_eq!(last.id(), "node-source-truncated", "{:?}", ids(&out));
    assert!(
        matches!(last, Routing::NodeSourceTruncated { skipped: 44, .. }),
        "{last:?}"
    );
    let last = worded(last);
    assert!(
        last.title
            .contains(&format!("first {max} routes only; 44 more")),
        "{}",
        last.title
    );
}
