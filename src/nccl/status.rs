//! `ibv_wc_status` and `ibv_wc_opcode` by number: the names libibverbs gives them (the
//! numbers NCCL's completion-error line prints), and which side of a connection each
//! status is reported on.

/// The `ibv_wc_status` names, index = status number (libibverbs' `enum ibv_wc_status`).
const STATUS: [&str; 23] = [
    "IBV_WC_SUCCESS",
    "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",
    "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",
    "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",
    "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR",
    "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
    "IBV_WC_TM_ERR",
];

/// Status numbers with a meaning of their own in the triage.
pub const LOC_LEN_ERR: u32 = 1;
/// Local QP operation error.
pub const LOC_QP_OP_ERR: u32 = 2;
/// Local protection error (a memory registration NCCL's buffer is not in).
pub const LOC_PROT_ERR: u32 = 4;
/// Work request flushed: the QP was already in the error state.
pub const WR_FLUSH_ERR: u32 = 5;
/// Local access error.
pub const LOC_ACCESS_ERR: u32 = 8;
/// Remote invalid request.
pub const REM_INV_REQ_ERR: u32 = 9;
/// Remote access error (R_Key, address, permissions).
pub const REM_ACCESS_ERR: u32 = 10;
/// Remote operational error.
pub const REM_OP_ERR: u32 = 11;
/// Transport retry counter exceeded: NCCL's "error 12".
pub const RETRY_EXC_ERR: u32 = 12;
/// RNR retry counter exceeded.
pub const RNR_RETRY_EXC_ERR: u32 = 13;

/// The `ibv_wc_status` name of `n` (`IBV_WC_RETRY_EXC_ERR` for 12); `None` past the list.
pub fn status_name(n: u32) -> Option<&'static str> {
    STATUS.get(n as usize).copied()
}

/// The status number of a name as NCCL ≥ 2.28 prints it (`IBV_WC_RETRY_EXC_ERR`).
pub fn status_of(name: &str) -> Option<u32> {
    STATUS.iter().position(|s| *s == name).map(|i| i as u32)
}

/// The `ibv_wc_opcode` name of `n` (0 `IBV_WC_SEND`, ... 128 `IBV_WC_RECV`, 129
/// `IBV_WC_RECV_RDMA_WITH_IMM`); `None` for another number. An error completion's opcode
/// is not reliable (the verbs say only `status`, `wr_id` and `qp_num` are), so it is
/// reported, never reasoned on.
pub fn opcode_name(n: u32) -> Option<&'static str> {
    Some(match n {
        0 => "IBV_WC_SEND",
        1 => "IBV_WC_RDMA_WRITE",
        2 => "IBV_WC_RDMA_READ",
        3 => "IBV_WC_COMP_SWAP",
        4 => "IBV_WC_FETCH_ADD",
        5 => "IBV_WC_BIND_MW",
        6 => "IBV_WC_LOCAL_INV",
        7 => "IBV_WC_TSO",
        128 => "IBV_WC_RECV",
        129 => "IBV_WC_RECV_RDMA_WITH_IMM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(status_name(12), Some("IBV_WC_RETRY_EXC_ERR"));
        assert_eq!(status_name(13), Some("IBV_WC_RNR_RETRY_EXC_ERR"));
        assert_eq!(status_name(10), Some("IBV_WC_REM_ACCESS_ERR"));
        assert_eq!(status_name(99), None);
        for n in 0..STATUS.len() as u32 {
            assert_eq!(status_of(status_name(n).unwrap()), Some(n));
        }
        assert_eq!(opcode_name(129), Some("IBV_WC_RECV_RDMA_WITH_IMM"));
        assert_eq!(opcode_name(77), None);
    }
}
