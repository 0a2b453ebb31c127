//! The offline loader on `ip -j` output: quirks tolerated, bad input refused with the file
//! and the reason.

use super::*;

#[test]
fn each_reads_one_item_at_a_time_within_its_limit() {
    let mut n = 0;
    let count = |_: Item| -> Result<(), JsonError> {
        n += 1;
        Ok(())
    };
    each("[1, {}, [], \"x\"]", "routes", 4, count).unwrap();
    assert_eq!(n, 4);
    let ok = |_: Item| Ok(());
    assert_eq!(
        each("[1, 2, 3, 4]", "routes", 3, ok)
            .unwrap_err()
            .to_string(),
        "more than 3 routes (netcheck's limit for one file)"
    );
    assert_eq!(
        each("\"routes\"", "routes", 3, ok).unwrap_err().to_string(),
        "expected a JSON array of routes"
    );
    assert!(each("[1,", "routes", 3, ok)
        .unwrap_err()
        .to_string()
        .starts_with("not JSON: "));
    assert!(each("[1] x", "routes", 3, ok)
        .unwrap_err()
        .to_string()
        .starts_with("not JSON: "));
    let fail = |_: Item| Err(JsonError::NoDst);
    assert_eq!(
        each("[{}]", "routes", 3, fail).unwrap_err().to_string(),
        "a route without dst"
    );
    // an object's entries for sysctl.json
    let mut keys = Vec::new();
    each("{\"a\": \"1\", \"b\": 2}", "sysctls", 3, |i| {
        if let Item::Entry(k, _) = i {
            keys.push(k);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn a_state_file_too_large_or_no_file_is_refused_unread() {
    let d = std::env::temp_dir().join(format!("rocetap-load-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("addr.json"), "[]").unwrap();
    // sparse: no disk used; refused after JSON_FILE_BYTES + 1 bytes, never parsed
    let route = std::fs::File::create(d.join("route.json")).unwrap();
    route.set_len(limits::JSON_FILE_BYTES as u64 + 1).unwrap();
    let e = load_dir(&d).unwrap_err().to_string();
    assert!(e.ends_with("route.json: longer than 16777216 bytes"), "{e}");
    std::fs::remove_file(d.join("route.json")).unwrap();
    nix::unistd::mkfifo(&d.join("route.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = load_dir(&d).unwrap_err().to_string();
    assert!(
        e.ends_with("route.json: not a regular file (a FIFO)"),
        "{e}"
    );
    std::fs::remove_file(d.join("route.json")).unwrap();
    std::fs::write(d.join("route.json"), "[]").unwrap();
    std::fs::write(d.join("sysctl.json"), "[1]").unwrap();
    let e = load_dir(&d).unwrap_err().to_string();
    assert!(
        e.ends_with("sysctl.json: expected a JSON object of sysctls"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rules_of_every_shape() {
    let v: Value = serde_json::from_str(
        r#"[{"priority":0,"src":"all","table":"local"},
            {"priority":100,"src":"all","fwmark":"0x1","fwmask":"0xff","table":"200"},
            {"priority":105,"src":"all","fwmark":"0x2","nop":null},
            {"priority":150,"not":null,"src":"10.0.0.0","srclen":8,"dst":"10.93.0.0","dstlen":16,"table":"201"},
            {"priority":160,"src":"all","table":"main","suppress_prefixlen":0},
            {"priority":170,"src":"all","dst":"10.73.0.0","dstlen":16,"action":"unreachable"},
            {"priority":180,"src":"all","dst":"10.76.0.0","dstlen":16,"goto":32000},
            {"priority":200,"src":"all","iif":"eth0","oif":"net1","table":"main"}]"#,
    )
    .unwrap();
    let mut st = NetState::default();
    parse_rules(&v, &mut st).unwrap();
    let r = &st.rules;
    assert_eq!(r[0].action, RuleAction::Table(RT_TABLE_LOCAL));
    assert_eq!(r[1].fwmark, Some((1, 0xff)));
    assert_eq!(r[2].action, RuleAction::Nop);
    assert!(r[3].invert);
    assert_eq!(r[3].src.unwrap().to_string(), "10.0.0.0/8");
    assert_eq!(r[4].suppress_prefixlen, Some(0));
    assert_eq!(r[5].action, RuleAction::Unreachable);
    assert_eq!(r[6].action, RuleAction::Goto(32000));
    assert_eq!(r[7].iif.as_deref(), Some("eth0"));
    assert_eq!(r[7].oif.as_deref(), Some("net1"));
    assert_eq!(
        r[3].spec(),
        "150: not from 10.0.0.0/8 to 10.93.0.0/16 lookup 201"
    );
}

#[test]
fn routes_family_and_table() {
    let v: Value = serde_json::from_str(
        r#"[{"dst":"default","gateway":"fd00::1","dev":"eth0","metric":1024,"flags":[],"pref":"medium"},
            {"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},
            {"type":"blackhole","dst":"198.18.1.0/26","protocol":"bird","flags":[]},
            {"dst":"10.0.0.0/8","nexthops":[{"gateway":"192.0.2.1","dev":"eth0","weight":1,"flags":[]},{"gateway":"192.0.2.2","dev":"eth0","weight":2,"flags":["dead"]}],"table":"100","flags":[]}]"#,
    )
    .unwrap();
    let mut st = NetState::default();
    parse_routes(&v, &mut st).unwrap();
    assert!(st.routes[0].dst.addr.is_ipv6());
    assert!(st.routes[1].dst.addr.is_ipv4());
    assert_eq!(st.routes[1].table, RT_TABLE_MAIN);
    assert_eq!(st.routes[2].kind, RouteType::Blackhole);
    assert!(st.routes[2].nexthops.is_empty());
    assert_eq!(st.routes[3].table, 100);
    assert_eq!(st.routes[3].nexthops.len(), 2);
    assert!(st.routes[3].nexthops[1].dead);
}
