//! Fuzz target: the reader of `rdma res show qp -j` output (`analyze --qp-table FILE`) on
//! arbitrary bytes. It must never panic: bad input is a `TableError` naming the entry.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = rocetap::qptable::parse("fuzz.json", "fuzz", text) {
        for e in &t {
            assert!(e.lqpn.0 <= 0x00ff_ffff, "a QPN beyond 24 bits was accepted");
        }
    }
});
