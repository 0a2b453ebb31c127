//! The BTH opcode: transport (bits 7-5), operation (bits 4-0), and the one table that
//! decides which extended headers follow the BTH (IBTA Vol. 1, 9.2 table 38 / ch. 9.3;
//! RoCE v2 CNP from Annex A17.9).
//!
//! Every decision about the header chain is made here, from `Opcode::chain`; no other
//! module looks at opcode bits.

/// Transport service selected by opcode bits 7-5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    Cnp,
    Xrc,
    Manufacturer,
    Reserved,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Xrc => "XRC",
            Transport::Manufacturer => "MFR",
            Transport::Reserved => "RSVD",
        }
    }
}

/// The operation (bits 4-0) for the transports that use the RC operation numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    SendFirst,
    SendMiddle,
    SendLast,
    SendLastImm,
    SendOnly,
    SendOnlyImm,
    WriteFirst,
    WriteMiddle,
    WriteLast,
    WriteLastImm,
    WriteOnly,
    WriteOnlyImm,
    ReadRequest,
    ReadResponseFirst,
    ReadResponseMiddle,
    ReadResponseLast,
    ReadResponseOnly,
    Acknowledge,
    AtomicAcknowledge,
    CompareSwap,
    FetchAdd,
    Resync,
    SendLastInv,
    SendOnlyInv,
    Flush,
    AtomicWrite,
    Cnp,
}

impl Operation {
    /// Every operation, in declaration order: `Operation::ALL[o as usize] == o`.
    pub const ALL: [Operation; 27] = {
        use Operation::*;
        [
            SendFirst,
            SendMiddle,
            SendLast,
            SendLastImm,
            SendOnly,
            SendOnlyImm,
            WriteFirst,
            WriteMiddle,
            WriteLast,
            WriteLastImm,
            WriteOnly,
            WriteOnlyImm,
            ReadRequest,
            ReadResponseFirst,
            ReadResponseMiddle,
            ReadResponseLast,
            ReadResponseOnly,
            Acknowledge,
            AtomicAcknowledge,
            CompareSwap,
            FetchAdd,
            Resync,
            SendLastInv,
            SendOnlyInv,
            Flush,
            AtomicWrite,
            Cnp,
        ]
    };

    pub fn name(self) -> &'static str {
        use Operation::*;
        match self {
            SendFirst => "SEND First",
            SendMiddle => "SEND Middle",
            SendLast => "SEND Last",
            SendLastImm => "SEND Last with Immediate",
            SendOnly => "SEND Only",
            SendOnlyImm => "SEND Only with Immediate",
            WriteFirst => "RDMA WRITE First",
            WriteMiddle => "RDMA WRITE Middle",
            WriteLast => "RDMA WRITE Last",
            WriteLastImm => "RDMA WRITE Last with Immediate",
            WriteOnly => "RDMA WRITE Only",
            WriteOnlyImm => "RDMA WRITE Only with Immediate",
            ReadRequest => "RDMA READ Request",
            ReadResponseFirst => "RDMA READ Response First",
            ReadResponseMiddle => "RDMA READ Response Middle",
            ReadResponseLast => "RDMA READ Response Last",
            ReadResponseOnly => "RDMA READ Response Only",
            Acknowledge => "Acknowledge",
            AtomicAcknowledge => "Atomic Acknowledge",
            CompareSwap => "CmpSwap",
            FetchAdd => "FetchAdd",
            Resync => "RESYNC",
            SendLastInv => "SEND Last with Invalidate",
            SendOnlyInv => "SEND Only with Invalidate",
            Flush => "FLUSH",
            AtomicWrite => "ATOMIC WRITE",
            Cnp => "Congestion Notification",
        }
    }

    /// True for packets a requester sends (as opposed to responses and ACKs).
    pub const fn is_request(self) -> bool {
        !self.is_response()
    }

    /// True for ACKs, atomic ACKs and READ responses (the responder's stream).
    pub const fn is_response(self) -> bool {
        matches!(
            self,
            Operation::Acknowledge
                | Operation::AtomicAcknowledge
                | Operation::ReadResponseFirst
                | Operation::ReadResponseMiddle
                | Operation::ReadResponseLast
                | Operation::ReadResponseOnly
        )
    }

    /// True for the last (or only) packet of a message.
    pub fn ends_message(self) -> bool {
        use Operation::*;
        matches!(
            self,
            SendLast
                | SendLastImm
                | SendOnly
                | SendOnlyImm
                | SendLastInv
                | SendOnlyInv
                | WriteLast
                | WriteLastImm
                | WriteOnly
                | WriteOnlyImm
                | ReadRequest
                | ReadResponseLast
                | ReadResponseOnly
                | CompareSwap
                | FetchAdd
                | Flush
                | AtomicWrite
        )
    }
}

/// The extended headers after the BTH, in wire order. A packet carries a subset of them
/// in exactly this order: RDETH, DETH, XRCETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH,
/// ImmDt, IETH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub rdeth: bool,
    pub deth: bool,
    pub xrceth: bool,
    pub feth: bool,
    pub reth: bool,
    pub atomic_eth: bool,
    pub aeth: bool,
    pub atomic_ack_eth: bool,
    pub immdt: bool,
    pub ieth: bool,
    /// CNP: 16 reserved bytes instead of a payload.
    pub cnp: bool,
    /// The packet may carry payload bytes.
    pub payload: bool,
}

impl Chain {
    /// No extended header and no payload.
    pub const NONE: Chain = Chain {
        rdeth: false,
        deth: false,
        xrceth: false,
        feth: false,
        reth: false,
        atomic_eth: false,
        aeth: false,
        atomic_ack_eth: false,
        immdt: false,
        ieth: false,
        cnp: false,
        payload: false,
    };

    /// Total length of the extended headers in bytes.
    pub fn ext_len(&self) -> usize {
        use super::*;
        let mut n = 0;
        n += if self.rdeth { rdeth::LEN } else { 0 };
        n += if self.deth { deth::LEN } else { 0 };
        n += if self.xrceth { xrceth::LEN } else { 0 };
        n += if self.feth { feth::LEN } else { 0 };
        n += if self.reth { reth::LEN } else { 0 };
        n += if self.atomic_eth { atomic_eth::LEN } else { 0 };
        n += if self.aeth { aeth::LEN } else { 0 };
        n += if self.atomic_ack_eth {
            atomic_ack_eth::LEN
        } else {
            0
        };
        n += if self.immdt { immdt::LEN } else { 0 };
        n += if self.ieth { ieth::LEN } else { 0 };
        n += if self.cnp { cnp::LEN } else { 0 };
        n
    }
}

/// A BTH opcode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

/// What the RC numbering (bits 4-0) means, and its header chain, before the transport's
/// own prefix headers are added. `None` = reserved in RC.
const fn rc_op(op: u8) -> Option<(Operation, Chain)> {
    use Operation::*;
    const P: Chain = Chain {
        rdeth: false,
        deth: false,
        xrceth: false,
        feth: false,
        reth: false,
        atomic_eth: false,
        aeth: false,
        atomic_ack_eth: false,
        immdt: false,
        ieth: false,
        cnp: false,
        payload: true,
    };
    const NONE: Chain = Chain {
        payload: false,
        ..P
    };
    Some(match op {
        0x00 => (SendFirst, P),
        0x01 => (SendMiddle, P),
        0x02 => (SendLast, P),
        0x03 => (SendLastImm, Chain { immdt: true, ..P }),
        0x04 => (SendOnly, P),
        0x05 => (SendOnlyImm, Chain { immdt: true, ..P }),
        0x06 => (WriteFirst, Chain { reth: true, ..P }),
        0x07 => (WriteMiddle, P),
        0x08 => (WriteLast, P),
        0x09 => (WriteLastImm, Chain { immdt: true, ..P }),
        0x0A => (WriteOnly, Chain { reth: true, ..P }),
        0x0B => (
            WriteOnlyImm,
            Chain {
                reth: true,
                immdt: true,
                ..P
            },
        ),
        0x0C => (ReadRequest, Chain { reth: true, ..NONE }),
        0x0D => (ReadResponseFirst, Chain { aeth: true, ..P }),
        0x0E => (ReadResponseMiddle, P),
        0x0F => (ReadResponseLast, Chain { aeth: true, ..P }),
        0x10 => (ReadResponseOnly, Chain { aeth: true, ..P }),
        0x11 => (Acknowledge, Chain { aeth: true, ..NONE }),
        0x12 => (
            AtomicAcknowledge,
            Chain {
                aeth: true,
                atomic_ack_eth: true,
                ..NONE
            },
        ),
        0x13 => (
            CompareSwap,
            Chain {
                atomic_eth: true,
                ..NONE
            },
        ),
        0x14 => (
            FetchAdd,
            Chain {
                atomic_eth: true,
                ..NONE
            },
        ),
        0x15 => (Resync, NONE),
        0x16 => (SendLastInv, Chain { ieth: true, ..P }),
        0x17 => (SendOnlyInv, Chain { ieth: true, ..P }),
        0x1C => (
            Flush,
            Chain {
                feth: true,
                reth: true,
                ..NONE
            },
        ),
        0x1D => (AtomicWrite, Chain { reth: true, ..P }),
        _ => return None,
    })
}

/// The full chain for every opcode value, computed at compile time so the per-packet
/// lookup is one indexed load.
static TABLE: [Option<(Operation, Chain)>; 256] = {
    let mut t = [None; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode_raw(i as u8);
        i += 1;
    }
    t
};

const fn decode_raw(v: u8) -> Option<(Operation, Chain)> {
    let op = v & 0x1f;
    let rc = rc_op(op);
    match v >> 5 {
        // RC: everything but RESYNC (RD only).
        0 => match rc {
            Some((Operation::Resync, _)) => None,
            x => x,
        },
        // UC: SEND and RDMA WRITE only.
        1 => {
            if op <= 0x0B {
                rc
            } else {
                None
            }
        }
        // RD: RDETH before every operation; requests also carry a DETH (IBTA 9.3.3:
        // ACK, atomic ACK and READ responses carry RDETH + AETH only).
        2 => match rc {
            Some((Operation::Flush | Operation::AtomicWrite, _)) | None => None,
            Some((o, c)) => {
                let mut c = c;
                c.rdeth = true;
                c.deth = o.is_request();
                Some((o, c))
            }
        },
        // UD: SEND Only (with immediate) with a DETH.
        3 => match rc {
            Some((o, c)) if op == 0x04 || op == 0x05 => {
                let mut c = c;
                c.deth = true;
                Some((o, c))
            }
            _ => None,
        },
        // CNP: 0x81 only.
        4 => {
            if op == 0x01 {
                let mut c = Chain::NONE;
                c.cnp = true;
                Some((Operation::Cnp, c))
            } else {
                None
            }
        }
        // XRC: XRCETH after the BTH on requests; responses look like RC.
        5 => match rc {
            Some((Operation::Resync, _)) | None => None,
            Some((o, c)) => {
                let mut c = c;
                c.xrceth = o.is_request();
                Some((o, c))
            }
        },
        _ => None,
    }
}

impl Opcode {
    pub const CNP: Opcode = Opcode(0x81);

    pub fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            7 => Transport::Manufacturer,
            _ => Transport::Reserved,
        }
    }

    /// The operation and the full header chain, or `None` for a reserved / unknown opcode.
    #[inline]
    pub fn decode(self) -> Option<(Operation, Chain)> {
        TABLE[usize::from(self.0)]
    }

    /// The operation, or `None` for a reserved / unknown opcode.
    pub fn operation(self) -> Option<Operation> {
        self.decode().map(|(o, _)| o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_has_a_consistent_answer() {
        for v in 0..=255u8 {
            let op = Opcode(v);
            if let Some((o, c)) = op.decode() {
                assert!(c.ext_len() <= 64, "{v:#x}");
                assert!(!o.name().is_empty());
            }
        }
    }

    #[test]
    fn all_lists_every_operation_at_its_index() {
        for (i, o) in Operation::ALL.iter().enumerate() {
            assert_eq!(*o as usize, i);
        }
    }

    #[test]
    fn known_chains() {
        let (o, c) = Opcode(0x0B).decode().unwrap();
        assert_eq!(o, Operation::WriteOnlyImm);
        assert!(c.reth && c.immdt && c.payload);
        assert_eq!(c.ext_len(), 20);
        let (_, c) = Opcode(0x64).decode().unwrap();
        assert!(c.deth && !c.rdeth);
        let (_, c) = Opcode(0x4a).decode().unwrap();
        assert!(c.rdeth && c.deth && c.reth);
        let (_, c) = Opcode(0x51).decode().unwrap();
        assert!(c.rdeth && !c.deth && c.aeth);
        let (_, c) = Opcode(0xA6).decode().unwrap();
        assert!(c.xrceth && c.reth);
        let (o, c) = Opcode(0x81).decode().unwrap();
        assert_eq!(o, Operation::Cnp);
        assert_eq!(c.ext_len(), 16);
        assert!(Opcode(0x24).decode().is_some());
        assert!(Opcode(0x2C).decode().is_none(), "UC has no READ");
        assert!(Opcode(0x15).decode().is_none(), "RESYNC is RD only");
        assert!(Opcode(0x80).decode().is_none());
        assert_eq!(Opcode(0x1C).decode().unwrap().1.ext_len(), 20);
    }
}
