//! `rocetap qp-table`: the kernel's QP table, live (RDMA netlink) or a saved one, written
//! as the JSON of `rdma res show qp -j` (`qptable::json`).

use crate::cli::QpTableArgs;
use rocetap::error::{exit, is_broken_pipe, Failure};
use std::io::Write as _;

pub fn run(a: QpTableArgs) -> Result<i32, Failure> {
    let table =
        super::analyze::qp_tables("qp-table", std::slice::from_ref(&a.source))?.unwrap_or_default();
    let mut out = std::io::stdout().lock();
    match rocetap::qptable::json::write(&mut out, &table).and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::OK),
        Err(e) if is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Failure::new(format!("writing output: {e}"))),
    }
}
