//! QoS marking as the packets carry it: per flow the DSCP, VLAN PCP and RoCE version of
//! its packets and how often each changed ([`Marks`], a few bytes per flow), per capture
//! the data and CNP packets of every DSCP ([`QosTally`], fixed size). The findings these
//! show at the end are the report builder's (`report/qos.rs`).
//!
//! CNPs are kept apart: a flow B -> A carries both B's ACKs and the CNPs B sends against
//! A's CE-marked data, and CNPs ride their own DSCP (48 by default on ConnectX), so they
//! neither set a flow's DSCP nor count as a change of it. "Data" is every packet but
//! CNPs and plain ACKs/NAKs (requests, READ responses, atomic ACKs).

use dissectors::{Decoded, Ecn, Operation, RoceVersion};

/// "None" in a [`Marks`] byte (DSCPs are 6 bits, PCPs 3).
pub(super) const NONE: u8 = 0xff;

pub(super) fn opt(b: u8) -> Option<u8> {
    (b != NONE).then_some(b)
}

/// A flow's QoS marks as they change (its first DSCP and PCP are `Flow::dscp`/`pcp`).
/// Six bytes (absent values are [`NONE`] rather than `Option`s), so they fit in the
/// padding after `Flow::version`; the counts are [`MarkCounts`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    /// A packet other than a CNP was seen (the fields below are its successors').
    pub(super) started: bool,
    /// DSCP, PCP and RoCE version of the latest packet other than a CNP.
    pub(super) dscp: u8,
    pub(super) pcp: u8,
    pub(super) version: RoceVersion,
    /// DSCP and PCP of the first CNP the flow carried.
    pub(super) cnp_dscp: u8,
    pub(super) cnp_pcp: u8,
}

/// A flow's QoS counts (16 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MarkCounts {
    /// Packets whose DSCP / PCP (tagged or not) / RoCE version differed from the previous
    /// packet's (CNPs aside).
    pub dscp_changes: u32,
    pub pcp_changes: u32,
    pub encap_changes: u32,
    /// CNPs that answered this flow's data on another DSCP than the flow's.
    pub cnp_other_dscp: u32,
}

impl Marks {
    pub fn new(version: RoceVersion) -> Self {
        Marks {
            started: false,
            dscp: NONE,
            pcp: NONE,
            version,
            cnp_dscp: NONE,
            cnp_pcp: NONE,
        }
    }

    /// DSCP of the first CNP the flow carried.
    pub fn cnp_dscp(&self) -> Option<u8> {
        opt(self.cnp_dscp)
    }

    /// PCP of the first CNP the flow carried (`None`: untagged or no CNP).
    pub fn cnp_pcp(&self) -> Option<u8> {
        opt(self.cnp_pcp)
    }
}

/// DSCP values (6 bits).
pub(crate) const DSCPS: usize = 64;

/// Packets of the whole capture by DSCP: data, data that is Not-ECT, CNPs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QosTally {
    pub data: [u64; DSCPS],
    pub data_not_ect: [u64; DSCPS],
    pub cnp: [u64; DSCPS],
}

impl Default for QosTally {
    fn default() -> Self {
        QosTally {
            data: [0; DSCPS],
            data_not_ect: [0; DSCPS],
            cnp: [0; DSCPS],
        }
    }
}

impl QosTally {
    /// Counts one RoCE packet with an IP header or a GRH.
    pub(super) fn note(&mut self, d: &Decoded, op: Operation) {
        let (Some(dscp), Some(ecn)) = (d.dscp(), d.ecn()) else {
            return;
        };
        let i = usize::from(dscp) & (DSCPS - 1);
        match op {
            Operation::Cnp => self.cnp[i] += 1,
            Operation::Acknowledge => {}
            _ => {
                self.data[i] += 1;
                self.data_not_ect[i] += u64::from(ecn == Ecn::NotEct);
            }
        }
    }

    /// The marked DSCP (not 0) carrying the most data packets (the lowest on a tie), if
    /// any.
    pub(crate) fn main_dscp(&self) -> Option<u8> {
        (1..DSCPS)
            .filter(|&i| self.data[i] > 0)
            .max_by_key(|&i| (self.data[i], std::cmp::Reverse(i)))
            .map(|i| i as u8)
    }
}
