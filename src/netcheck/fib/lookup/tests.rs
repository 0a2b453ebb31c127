//! The lookups against hand-made states: `ip route get` words parsed, the kernel's choices
//! of rule, table, route and source.

use super::*;

#[test]
fn query_parses_ip_route_get_words() {
    let q = Query::parse("198.19.8.1 from 198.18.1.5 iif eth0 mark 0x10").unwrap();
    assert_eq!(q.dst, Some("198.19.8.1".parse().unwrap()));
    assert_eq!(q.src, Some("198.18.1.5".parse().unwrap()));
    assert_eq!(q.iif.as_deref(), Some("eth0"));
    assert_eq!(q.mark, 16);
    assert_eq!(
        q.to_string(),
        "ip route get 198.19.8.1 from 198.18.1.5 iif eth0 mark 0x10"
    );
    assert!(Query::parse("from 1.2.3.4").is_err());
    assert!(Query::parse("1.2.3.4 from").is_err());
    assert!(Query::parse("1.2.3.4 bogus 5").is_err());
    assert!(Query::parse("nothost").is_err());
    // the words users see after `netcheck: --route-get "...": `
    for (q, want) in [
        ("nothost", "\"nothost\" is not an IP address"),
        ("1.2.3.4 from", "from needs a value"),
        ("1.2.3.4 mark x", "bad mark \"x\""),
        ("1.2.3.4 bogus 5", "unexpected word \"bogus\""),
        ("", "no destination"),
    ] {
        assert_eq!(Query::parse(q).unwrap_err().to_string(), want, "{q:?}");
    }
}

fn state() -> NetState {
    let mut st = NetState::default();
    for (i, n) in ["lo", "a", "b", "c"].iter().enumerate() {
        st.links.push(Link {
            index: i as u32 + 1,
            name: n.to_string(),
            up: true,
            mtu: Some(1500),
        });
    }
    let addr = |dev: &str, a: &str, len, sc| Address {
        dev: dev.into(),
        addr: a.parse().unwrap(),
        prefix_len: len,
        scope: sc,
        secondary: false,
    };
    st.addrs.push(addr("lo", "127.0.0.1", 8, scope::HOST));
    st.addrs.push(addr("b", "10.2.0.1", 24, scope::UNIVERSE));
    st.addrs.push(addr("a", "10.1.0.1", 24, scope::UNIVERSE));
    let route = |dst: &str, dev: &str, sc| Route {
        table: RT_TABLE_MAIN,
        kind: RouteType::Unicast,
        dst: {
            let (a, l) = dst.split_once('/').unwrap();
            Prefix::new(a.parse().unwrap(), l.parse().unwrap())
        },
        tos: 0,
        metric: 0,
        scope: sc,
        protocol: "boot".into(),
        prefsrc: None,
        nexthops: vec![NextHop {
            dev: Some(dev.into()),
            gateway: None,
            weight: 1,
            dead: false,
        }],
    };
    st.routes.push(route("10.9.0.0/16", "c", scope::LINK));
    st.routes.push(route("10.1.0.0/24", "a", scope::LINK));
    st
}

#[test]
fn addressless_device_takes_the_first_address_in_device_order() {
    let st = state();
    // "c" has no address: device order is lo, a, b -> lo is host scope, a's comes first
    let a = lookup(&st, &Query::to("10.9.1.1".parse().unwrap())).unwrap();
    assert_eq!(a.dev, "c");
    assert_eq!(a.prefsrc, Some("10.1.0.1".parse().unwrap()));
    // on its own device, the address in the gateway's subnet wins
    let a = lookup(&st, &Query::to("10.1.0.7".parse().unwrap())).unwrap();
    assert_eq!(a.prefsrc, Some("10.1.0.1".parse().unwrap()));
    // no route at all
    let e = lookup(&st, &Query::to("192.0.2.1".parse().unwrap())).unwrap_err();
    assert_eq!(e.errno, Errno::NetUnreach);
}

#[test]
fn a_forward_goto_chain_of_20000_rules_resolves_fast() {
    let mut st = state();
    let rule = |priority, action| Rule {
        priority,
        action,
        ..default_rules(true).remove(0)
    };
    st.rules.push(rule(0, RuleAction::Table(RT_TABLE_LOCAL)));
    for i in 0..20_000 {
        st.rules.push(rule(1000 + i, RuleAction::Goto(1001 + i)));
    }
    // the last goto lands on the lookup rule; a goto to a missing priority falls through
    st.rules.push(rule(21_000, RuleAction::Goto(21_500)));
    st.rules
        .push(rule(21_001, RuleAction::Table(RT_TABLE_MAIN)));
    st.rules
        .push(rule(32_767, RuleAction::Table(RT_TABLE_DEFAULT)));
    let t = std::time::Instant::now();
    let a = lookup(&st, &Query::to("10.9.1.1".parse().unwrap())).unwrap();
    assert_eq!(a.dev, "c");
    assert_eq!(a.rule, Some(21_001));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
}
