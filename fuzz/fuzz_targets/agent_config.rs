//! Fuzz target: the agent's YAML config file. Whatever the bytes, it must never panic:
//! text is either settings (every key a known one, every value a scalar) or one error
//! naming the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::agent::file::{parse, parse_bytes, parse_duration, KEYS};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match parse(s, "fuzz.yaml") {
        Ok(settings) => {
            for (k, v) in settings {
                let Some(&(_, list)) = KEYS.iter().find(|(n, _)| *n == k) else {
                    panic!("unknown key {k:?} accepted");
                };
                assert!(list || v.len() == 1, "{k}: {v:?}");
                for x in &v {
                    let _ = parse_duration(x);
                    let _ = parse_bytes(x);
                }
            }
        }
        Err(e) => {
            let what = e.to_string();
            assert!(what.starts_with("agent: config fuzz.yaml: "), "{what}");
        }
    }
});
