//! InfiniBand transport headers (IBTA Vol. 1 chapter 9) and the routing headers that
//! precede them on native InfiniBand (LRH) and RoCE v1 (GRH). One module per header; each
//! has a zero-copy view, an owned `Repr` with `parse` and `emit`, and its byte diagram.

pub mod aeth;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod cnp;
pub mod deth;
pub mod feth;
pub mod grh;
pub mod icrc;
pub mod ieth;
pub mod immdt;
pub mod lrh;
pub mod opcode;
pub mod rdeth;
pub mod reth;
pub mod xrceth;
