//! The other direction of [`super::parse`]: a table written with the keys of `rdma res
//! show qp -j` (one JSON array on one line, as `rdma -j` prints it), so that what
//! `rocetap qp-table` records on a node without the `rdma` binary is read back by
//! `--qp-table FILE` like the table `rdma` would have printed.
//!
//! Keys the table does not have are left out, as `rdma` leaves them out (a UD QP has no
//! `rqpn` and no `rq-psn`, a kernel QP no `pid`). `ifindex`, `path-mig-state` and `pdn`
//! are not kept by [`QpEntry`] and so never written; [`super::parse`] does not read them.

use super::QpEntry;
use serde::Serialize;
use std::io;

/// One QP, in `rdma res show qp -j`'s key order.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u32>,
    ifname: &'a str,
    lqpn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    rqpn: Option<u32>,
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    qp_type: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    state: &'a str,
    #[serde(rename = "rq-psn", skip_serializing_if = "Option::is_none")]
    rq_psn: Option<u32>,
    #[serde(rename = "sq-psn", skip_serializing_if = "Option::is_none")]
    sq_psn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comm: Option<&'a str>,
}

/// Writes `table` as one line of JSON (and a newline).
pub fn write(mut w: impl io::Write, table: &[QpEntry]) -> io::Result<()> {
    let lines: Vec<Line<'_>> = table
        .iter()
        .map(|e| Line {
            port: e.port,
            ifname: &e.device,
            lqpn: e.lqpn.0,
            rqpn: e.rqpn.map(|q| q.0),
            qp_type: &e.qp_type,
            state: &e.state,
            rq_psn: e.rq_psn.map(|p| p.0),
            sq_psn: e.sq_psn.map(|p| p.0),
            pid: e.pid,
            comm: e.comm.as_deref(),
        })
        .collect();
    serde_json::to_writer(&mut w, &lines).map_err(io::Error::from)?;
    w.write_all(b"\n")
}
