//! Fuzz target: the `--fail-on` rule parser. It must never panic, and a rule it accepts
//! must print as text that parses back to the same rule.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::report::rules::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(rule) = parse(s) {
        let shown = rule.to_string();
        let again = parse(&shown).unwrap_or_else(|e| panic!("{shown:?} does not parse: {e}"));
        assert_eq!(again.to_string(), shown, "printing a rule is not stable");
    }
});
