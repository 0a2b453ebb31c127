//! Fuzz target: the NAD lint (`netcheck --nad`) on arbitrary text: NADs and policies as
//! YAML or JSON, and (after a line `#nodes`) a nodes file. Whatever the text, it must
//! never panic and stay bounded (run.sh's RSS limit): it is either one error naming the
//! input, or a report whose text carries no terminal control character and whose JSON
//! serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::netcheck::nad::check_text;
use rocetap::report::style::Paint;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (objects, nodes) = match s.split_once("\n#nodes\n") {
        Some((o, n)) => (o, Some(n)),
        None => (s, None),
    };
    match check_text(objects, nodes) {
        Ok(report) => {
            let text = report.text(Paint::new(false));
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "a control character in the text report"
            );
            serde_json::to_string(&report).expect("the JSON report");
        }
        Err(e) => assert!(
            e.what.starts_with("objects.yaml") || e.what.starts_with("nodes.yaml"),
            "{}",
            e.what
        ),
    }
});
