//! Fuzz target: the reader of `rdma res show qp -j` output (`analyze --qp-table FILE`) on
//! arbitrary bytes. It must never panic: bad input is a `TableError` naming the entry.
//! Half the inputs are read within small limits (2 KiB, 8 QPs) so that the refusals at
//! `config::limits::QP_TABLE_MAX_BYTES` / `QP_TABLE_MAX_QPS` are reached by small inputs
//! (the seeds `limit-qps` and `limit-bytes`); the rest within the real ones.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::qptable::{parse_within, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let small = Limits {
        bytes: 2048,
        qps: 8,
    };
    let limits = if text.len() % 2 == 0 {
        small
    } else {
        Limits::default()
    };
    match parse_within("fuzz.json", "fuzz", text, limits) {
        Ok(t) => {
            assert!(t.len() <= limits.qps, "more QPs than the limit were read");
            assert!(
                text.len() as u64 <= limits.bytes,
                "a text over the limit was read"
            );
            for e in &t {
                assert!(e.lqpn.0 <= 0x00ff_ffff, "a QPN beyond 24 bits was accepted");
            }
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n'), "a multi-line error: {line}");
        }
    }
});
