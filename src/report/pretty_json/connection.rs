//! The connections of the `analyze` document written straight into the buffer, as the
//! flows are (`super::flow`): with 8,192 QPs they are 100,000 lines, and through serde
//! each one's addresses went through `fmt` and its two QPNs through two `String`s,
//! 3 ms of a run. The bytes are exactly what `Connection`'s `Serialize` writes through
//! [`super::to_writer_pretty`]; the tests hold the two equal.

use super::flow::{int, qpn, Obj};
use crate::analysis::report::Connection;

/// Writes connection `c` as a JSON object that sits at nesting `depth` (at most
/// [`super::flow::MAX_DEPTH`]), byte for byte as its `Serialize` through the pretty
/// writer would.
pub(in crate::report) fn write_connection(buf: &mut Vec<u8>, depth: usize, c: &Connection) {
    assert!(
        depth <= super::flow::MAX_DEPTH,
        "connection at depth {depth}"
    );
    // Taken apart whole: a field added to `Connection` does not compile here until it is
    // written.
    let Connection { flows, a, b, qps } = c;
    let mut o = Obj::open(buf, depth);
    o.key("flows");
    o.array(flows, |buf, &id| int(buf, id.into()));
    o.addr("a", a);
    o.addr("b", b);
    o.key("qps");
    o.array(qps, |buf, &q| qpn(buf, q));
    o.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::pretty_json::testing::{sample_reports, serde_at};
    use dissectors::{Addr, Qpn};

    /// Every connection of every sample.
    fn sample_connections() -> Vec<Connection> {
        let all: Vec<Connection> = sample_reports()
            .into_iter()
            .flat_map(|r| r.connections)
            .collect();
        assert!(all.len() > 20, "{} connections", all.len());
        all
    }

    fn ours_at(c: &Connection, depth: usize) -> String {
        crate::report::pretty_json::testing::ours_at(write_connection, c, depth)
    }

    #[test]
    fn every_sample_connection_is_written_as_serde_writes_it_at_every_depth() {
        let all = sample_connections();
        for c in &all {
            for depth in [0, 2] {
                assert_eq!(ours_at(c, depth), serde_at(c, depth), "{c:?}");
            }
        }
        for depth in 0..=super::super::flow::MAX_DEPTH {
            assert_eq!(ours_at(&all[0], depth), serde_at(&all[0], depth), "{depth}");
        }
    }

    /// What no sample has: IPv6, GID and LID addresses, QPNs of every width, flow ids
    /// up to the largest.
    #[test]
    fn unusual_values_are_written_as_serde_writes_them() {
        let addrs = [
            Addr::Ip("2001:db8::1".parse().unwrap()),
            Addr::Ip("192.0.2.255".parse().unwrap()),
            Addr::Lid(0xffff),
            Addr::Lid(0),
        ];
        let qps = [0, 0x7, 0xabcdef, 0x100_0000, 0xffff_ffff];
        for (i, &q) in qps.iter().enumerate() {
            let c = Connection {
                flows: [i as u32, u32::MAX - i as u32],
                a: addrs[i % addrs.len()],
                b: addrs[(i + 1) % addrs.len()],
                qps: [Qpn(q), Qpn(qps[qps.len() - 1 - i])],
            };
            assert_eq!(ours_at(&c, 2), serde_at(&c, 2), "{c:?}");
        }
    }
}
