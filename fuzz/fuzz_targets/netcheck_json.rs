//! Fuzz target: netcheck's readers of a saved state (`ip -j addr`, `ip -j route`,
//! `ip -j rule`, `sysctl.json`; the first byte picks the file) on arbitrary text, read as
//! `netcheck --from` reads them (one element at a time, within `config::limits`), next to
//! a small base state, then the routing checks on what was read and their words. They
//! must never panic: bad input is an error or is skipped; memory and time stay within the
//! limits (run.sh's `-rss_limit_mb` counts a blow-up as a crash).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::netcheck::checks;
use rocetap::netcheck::found::Found;
use rocetap::netcheck::load_json::{add_text, StateFile};
use rocetap::netcheck::model::NetState;
use rocetap::netcheck::report::words;

const BASE_ADDR: &str = r#"[{"ifindex":1,"ifname":"lo","addr_info":[{"local":"127.0.0.1","prefixlen":8,"scope":"host"}]},
{"ifindex":2,"ifname":"eth0","flags":["UP"],"addr_info":[{"local":"192.0.2.10","prefixlen":24,"scope":"global"}]},
{"ifindex":3,"ifname":"net1","flags":["UP"],"addr_info":[{"local":"198.51.100.10","prefixlen":24,"scope":"global"}]},
{"ifindex":4,"ifname":"cali0","flags":["UP"]}]"#;
const BASE_ROUTE: &str = r#"[{"dst":"default","gateway":"192.0.2.1","dev":"eth0"},
{"dst":"192.0.2.0/24","dev":"eth0","scope":"link","prefsrc":"192.0.2.10"},
{"dst":"198.51.100.0/24","dev":"net1","scope":"link","prefsrc":"198.51.100.10"},
{"dst":"203.0.113.7","dev":"cali0","scope":"link"}]"#;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let file = match which % 4 {
        0 => StateFile::Addr,
        1 => StateFile::Route,
        2 => StateFile::Rule,
        _ => StateFile::Sysctl,
    };
    let mut st = NetState::default();
    add_text(&mut st, StateFile::Addr, BASE_ADDR).expect("base addr");
    add_text(&mut st, StateFile::Route, BASE_ROUTE).expect("base route");
    if add_text(&mut st, file, text).is_err() {
        return;
    }
    let mut out = Vec::new();
    checks::reply_path(&st, &mut out);
    checks::node_source(&st, &[], &mut out);
    checks::arp_sysctls(&st, &mut out);
    // and their words, as the report gives them
    let found: Vec<Found> = out.into_iter().map(Found::Routing).collect();
    let _ = words::findings(&found);
    let _ = words::interfaces(&checks::iface_sysctls(&st));
});
