//! Fuzz target: the sFlow v5 reader. Whatever the bytes, decoding a datagram and
//! counting it must never panic; every sample and record the walk yields lies inside the
//! datagram, and the collector's counts stay consistent (damaged datagrams at most the
//! datagrams received).
#![no_main]

use dissectors::sflow::{Datagram, FlowRecord, Sample};
use libfuzzer_sys::fuzz_target;
use rocetap::sflow::{Collector, Config};

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = Datagram::parse(data) {
        for s in d.samples() {
            match s {
                Ok(Sample::Flow(f)) => {
                    for r in f.records() {
                        if let Ok(FlowRecord::Header(h)) = r {
                            assert!(h.header.len() <= data.len());
                        }
                    }
                }
                Ok(Sample::Counters(c)) => for _ in c.records() {},
                Ok(Sample::Discard(x)) => for _ in x.records() {},
                Ok(Sample::Unknown { len, .. }) => assert!(len as usize <= data.len()),
                Err(e) => assert!(e.offset as usize <= data.len()),
            }
        }
    }
    let mut c = Collector::new(Config {
        max_agents: 2,
        max_ports: 2,
        top_qps: 2,
        ..Config::default()
    });
    c.ingest(data);
    c.ingest(data);
    let d = c.damage;
    assert!(d.bad_header + d.truncated + d.malformed <= c.datagrams);
    let _ = rocetap::report::sflow::document(&c);
});
