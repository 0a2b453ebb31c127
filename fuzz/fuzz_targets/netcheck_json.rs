//! Fuzz target: netcheck's readers of `ip -j addr` / `ip -j route` / `ip -j rule` output
//! on arbitrary JSON. They must never panic: bad input is an error or is skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::netcheck::load_json::{parse_addrs, parse_routes, parse_rules};
use rocetap::netcheck::model::NetState;

fuzz_target!(|data: &[u8]| {
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let mut st = NetState::default();
    let _ = match which % 3 {
        0 => parse_addrs(&v, &mut st),
        1 => parse_routes(&v, &mut st),
        _ => parse_rules(&v, &mut st),
    };
});
