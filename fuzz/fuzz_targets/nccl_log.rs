//! Fuzz target: the NCCL log reader (`rocetap nccl`), then the configuration checks, the
//! triage and both reports on what it read. Nothing may panic; the counts stay
//! consistent and the kept errors bounded, whatever the bytes (huge lines, binary
//! garbage, truncated lines).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::config::limits::NCCL_ERRORS;
use rocetap::nccl::{config, profiler, read, triage, Log};
use rocetap::report::nccl::Doc;

fuzz_target!(|data: &[u8]| {
    let mut log = Log::default();
    read(data, "fuzz", &mut log).expect("reading a slice cannot fail");
    profiler::attach(&mut log);
    let c = &log.counts;
    assert!(c.lines >= c.nccl && c.nccl >= c.used, "{c:?}");
    assert!(log.errors.len() <= NCCL_ERRORS);
    let issues = config::check(&log, config::Assume::default());
    let triaged = triage::triage(&log, &issues, &[], &[]);
    assert_eq!(triaged.len(), log.errors.len());
    let doc = Doc {
        log: &log,
        issues: &issues,
        hosts: &[],
        triaged: &triaged,
        captures: &[],
    };
    let _ = doc.text(true);
    let _ = doc.json();
    let _ = doc.value("status_12");
});
