//! Lanes: one interface read by several libpcap handles at once, each frame going to one
//! of them (`capture --lanes N`). The handles are joined in one Linux `PACKET_FANOUT`
//! group after libpcap opened them: libpcap has no call for it, but on Linux a handle's
//! file descriptor is its `AF_PACKET` socket, so `setsockopt(PACKET_FANOUT)` on it works
//! and libpcap's own ring, filter and counters stay as they are (no reader of our own).
//! An RDMA device read through libpcap's RDMA sniffer has no such socket: `capture`
//! refuses it before opening anything, and a link that is not Ethernet (`any`) is refused
//! when opened.
//!
//! Which lane a frame goes to is decided by a classic BPF program of ours
//! (`PACKET_FANOUT_CBPF`), not the kernel's `PACKET_FANOUT_HASH`: that hash is symmetric
//! only for a reversed 4-tuple, and RoCE v2 sends both directions of a connection to UDP
//! port 4791, each from its own source port, so the kernel's hash puts a QP's requests in
//! one lane and its ACKs and NAKs in another (measured: `docs/perf.md`, "Sharding by
//! host pair"). [`program`] hashes the IP pair instead, the same both ways:
//!
//! - RoCE v2 (IPv4 without fragmentation, or IPv6 straight to UDP, to the RoCE port,
//!   behind at most two VLAN tags left in the frame): [`lane_of`] its source and
//!   destination addresses — every packet of every QP between two hosts, both directions,
//!   CNPs and CM MADs, in one lane;
//! - everything else (ARP, PFC / PAUSE, plain IP, IPv6 with extension headers, tunnels
//!   and switch mirrors, RoCE v1): lane 0.
//!
//! Joining happens after each handle was activated, so until the last lane joined every
//! lane received every frame: the lanes' start time (`live::Joined::start_ns`) is taken
//! after the joins, and the lanes keep only frames stamped from then on (stamped later, a
//! frame went through the group, so exactly one lane has it).
#![allow(unsafe_code)]

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The most lanes one interface may be read with.
pub const MAX_LANES: u16 = 64;

/// A lane's place in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    /// 0-based; lane 0 also gets every frame that is not RoCE v2.
    pub index: u16,
    /// Lanes of the interface.
    pub count: u16,
}

/// The hash of a host pair the lanes are chosen by, the same for `(b, a)`: each address
/// folded to 32 bits (IPv6: its four words XORed) and put through murmur3's 32-bit
/// finaliser, the two added. (XORing the two addresses instead would give every pair of
/// the same XOR one lane: 198.18.1.n with 198.18.2.n for every n.) The frame goes to lane
/// `lane_hash % lanes` ([`lane_of`]).
pub fn lane_hash(a: IpAddr, b: IpAddr) -> u32 {
    fmix32(fold(a)).wrapping_add(fmix32(fold(b)))
}

/// The lane of `lanes` that frames between `a` and `b` go to (see [`lane_hash`]).
pub fn lane_of(a: IpAddr, b: IpAddr, lanes: u16) -> u16 {
    (lane_hash(a, b) % u32::from(lanes.max(1))) as u16
}

fn fold(a: IpAddr) -> u32 {
    match a {
        IpAddr::V4(v) => u32::from(v),
        IpAddr::V6(v) => v
            .octets()
            .chunks_exact(4)
            .fold(0, |x, w| x ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]])),
    }
}

fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// The operation.
    pub code: u16,
    /// Instructions skipped when a conditional jump's test holds.
    pub jt: u8,
    /// Instructions skipped when it does not.
    pub jf: u8,
    /// The constant: an offset, a value, a scratch slot.
    pub k: u32,
}

// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;
const IMM: u16 = 0x00;
const IND: u16 = 0x40;
const MEM: u16 = 0x60;
const ADD: u16 = 0x00;
const MUL: u16 = 0x20;
const AND: u16 = 0x50;
const LSH: u16 = 0x60;
const RSH: u16 = 0x70;
const XOR: u16 = 0xa0;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
const K: u16 = 0x00;
const X: u16 = 0x08;
const RET_A: u16 = 0x10;
const TAX: u16 = 0x00;
/// Loads at this offset and above (as `i32`, below `SKF_NET_OFF`) read from the frame's
/// link-layer header: the Ethernet header on receive and on send alike (a plain offset
/// would start at the network header on receive and the Ethernet header on send).
const LL: u32 = (-0x20_0000i32) as u32;

/// Jump targets while the program is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum To {
    Next,
    V4,
    V6,
    Tag1,
    Tag2,
    Mix,
    Lane0,
}

/// Writes a program with symbolic jumps.
struct Asm {
    code: Vec<(Insn, To, To)>,
    at: Vec<(To, usize)>,
}

impl Asm {
    fn op(&mut self, code: u16, k: u32) {
        self.jump(code, k, To::Next, To::Next);
    }
    fn jump(&mut self, code: u16, k: u32, t: To, f: To) {
        let i = Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        };
        self.code.push((i, t, f));
    }
    fn label(&mut self, l: To) {
        self.at.push((l, self.code.len()));
    }
    /// Loads `size` bytes at `off` past X (the start of the IP header).
    fn ind(&mut self, size: u16, off: u32) {
        self.op(LD | size | IND, LL.wrapping_add(off));
    }
    fn finish(self) -> Vec<Insn> {
        let target = |l: To, here: usize| -> u8 {
            if l == To::Next {
                return 0;
            }
            let (_, at) = self.at.iter().find(|(x, _)| *x == l).expect("a label");
            u8::try_from(at - here - 1).expect("a forward jump within 255")
        };
        self.code
            .iter()
            .enumerate()
            .map(|(n, (i, t, f))| {
                if i.code == JMP | JA {
                    let (_, at) = self.at.iter().find(|(x, _)| x == t).expect("a label");
                    return Insn {
                        k: (at - n - 1) as u32,
                        ..*i
                    };
                }
                Insn {
                    jt: target(*t, n),
                    jf: target(*f, n),
                    ..*i
                }
            })
            .collect()
    }
}

const ETH_IPV4: u32 = 0x0800;
const ETH_IPV6: u32 = 0x86dd;
/// 802.1Q, 802.1ad and the older QinQ type: the tags the decoder reads.
const TAGS: [u32; 3] = [0x8100, 0x88a8, 0x9100];
const UDP: u32 = 17;

/// The lane program: see the module documentation. Returns the hash (the kernel takes it
/// modulo the group's lanes) or 0. A load past the frame's end ends it with 0: lane 0.
pub fn program(roce_port: u16) -> Vec<Insn> {
    let mut a = Asm {
        code: Vec::new(),
        at: Vec::new(),
    };
    let port = u32::from(roce_port);
    // X: where the IP header starts. The EtherType, then up to two tags.
    for (n, (here, next)) in [
        (To::Next, To::Tag1),
        (To::Tag1, To::Tag2),
        (To::Tag2, To::Lane0),
    ]
    .into_iter()
    .enumerate()
    {
        if here != To::Next {
            a.label(here);
        }
        let ip = 14 + 4 * n as u32;
        a.op(LDX | W | IMM, ip);
        a.op(LD | H | IND, LL.wrapping_sub(2));
        a.jump(JMP | JEQ | K, ETH_IPV4, To::V4, To::Next);
        if next == To::Lane0 {
            a.jump(JMP | JEQ | K, ETH_IPV6, To::V6, To::Lane0);
        } else {
            a.jump(JMP | JEQ | K, ETH_IPV6, To::V6, To::Next);
            a.jump(JMP | JEQ | K, TAGS[0], next, To::Next);
            a.jump(JMP | JEQ | K, TAGS[1], next, To::Next);
            a.jump(JMP | JEQ | K, TAGS[2], next, To::Lane0);
        }
    }
    // IPv4: version 4, a header of 20 bytes or more, UDP, not a fragment.
    a.label(To::V4);
    a.ind(B, 0);
    a.op(ALU | AND | K, 0xf0);
    a.jump(JMP | JEQ | K, 0x40, To::Next, To::Lane0);
    a.ind(B, 0);
    a.op(ALU | AND | K, 0x0f);
    a.jump(JMP | JGE | K, 5, To::Next, To::Lane0);
    a.ind(B, 9);
    a.jump(JMP | JEQ | K, UDP, To::Next, To::Lane0);
    a.ind(H, 6);
    a.jump(JMP | JSET | K, 0x3fff, To::Lane0, To::Next);
    // The addresses: M0 and M1.
    a.ind(W, 12);
    a.op(ST, 0);
    a.ind(W, 16);
    a.op(ST, 1);
    // X: where UDP starts; its destination port.
    a.ind(B, 0);
    a.op(ALU | AND | K, 0x0f);
    a.op(ALU | LSH | K, 2);
    a.op(ALU | ADD | X, 0);
    a.op(MISC | TAX, 0);
    a.ind(H, 2);
    a.jump(JMP | JEQ | K, port, To::Next, To::Lane0);
    a.jump(JMP | JA, 0, To::Mix, To::Mix);
    // IPv6: version 6, the next header UDP, its destination port; each address's four
    // words (M2-M5, M6-M9) XORed into M0 and M1.
    a.label(To::V6);
    a.ind(B, 0);
    a.op(ALU | AND | K, 0xf0);
    a.jump(JMP | JEQ | K, 0x60, To::Next, To::Lane0);
    a.ind(B, 6);
    a.jump(JMP | JEQ | K, UDP, To::Next, To::Lane0);
    a.ind(H, 40 + 2);
    a.jump(JMP | JEQ | K, port, To::Next, To::Lane0);
    for w in 0..8 {
        a.ind(W, 8 + 4 * w);
        a.op(ST, 2 + w);
    }
    for (first, to) in [(2, 0), (6, 1)] {
        a.op(LD | W | MEM, first);
        for w in first + 1..first + 4 {
            a.op(LDX | W | MEM, w);
            a.op(ALU | XOR | X, 0);
        }
        a.op(ST, to);
    }
    // fmix32(M0) + fmix32(M1), as `lane_hash`.
    a.label(To::Mix);
    for m in 0..2 {
        a.op(LD | W | MEM, m);
        for (mul, shift) in [(Some(0x85eb_ca6b), 16), (Some(0xc2b2_ae35), 13), (None, 16)] {
            a.op(MISC | TAX, 0);
            a.op(ALU | RSH | K, shift);
            a.op(ALU | XOR | X, 0);
            if let Some(k) = mul {
                a.op(ALU | MUL | K, k);
            }
        }
        a.op(ST, 2 + m);
    }
    a.op(LDX | W | MEM, 2);
    a.op(LD | W | MEM, 3);
    a.op(ALU | ADD | X, 0);
    a.op(RET | RET_A, 0);
    a.label(To::Lane0);
    a.op(RET | K, 0);
    a.finish()
}

// Linux's `PACKET_FANOUT` interface (linux/if_packet.h).
const PACKET_FANOUT: libc::c_int = 18;
const PACKET_FANOUT_DATA: libc::c_int = 22;
const PACKET_FANOUT_CBPF: u32 = 6;
/// The kernel picks a group id no other group in the network namespace has.
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;

/// A group the first lane made: the others join it by its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// The kernel's id of the group.
    pub id: u16,
}

/// Makes a new group of `fd`'s socket (an `AF_PACKET` socket bound to the device) with
/// the lane program.
pub fn create(fd: BorrowedFd<'_>, roce_port: u16) -> io::Result<Group> {
    setsockopt_u32(
        fd,
        PACKET_FANOUT,
        (PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_UNIQUEID) << 16,
    )?;
    let got = getsockopt_u32(fd, PACKET_FANOUT)?;
    let g = Group {
        id: (got & 0xffff) as u16,
    };
    set_program(fd, roce_port)?;
    Ok(g)
}

/// Adds `fd`'s socket to `group` (made by [`create`] on the same device); a group whose
/// members all closed is made again with the same id.
pub fn join(fd: BorrowedFd<'_>, group: Group, roce_port: u16) -> io::Result<()> {
    setsockopt_u32(
        fd,
        PACKET_FANOUT,
        u32::from(group.id) | (PACKET_FANOUT_CBPF << 16),
    )?;
    // The group's program, for a group made again (the same program replaces itself).
    set_program(fd, roce_port)
}

fn set_program(fd: BorrowedFd<'_>, roce_port: u16) -> io::Result<()> {
    let mut insns: Vec<libc::sock_filter> = program(roce_port)
        .into_iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    let prog = libc::sock_fprog {
        len: insns.len() as libc::c_ushort,
        filter: insns.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `insns`, `prog.len` instructions that live until the call
    // returns; the kernel copies the program and keeps no pointer into it. `fd` is a
    // borrowed, open descriptor, and the option's size is the struct's.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_FANOUT_DATA,
            (&raw const prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    check(rc)
}

fn setsockopt_u32(fd: BorrowedFd<'_>, opt: libc::c_int, v: u32) -> io::Result<()> {
    // SAFETY: the kernel reads `size_of::<u32>()` bytes from `&v`, which lives through the
    // call; `fd` is a borrowed, open descriptor.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (&raw const v).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    check(rc)
}

fn getsockopt_u32(fd: BorrowedFd<'_>, opt: libc::c_int) -> io::Result<u32> {
    let mut v = 0u32;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` (4) bytes to `&mut v` and the length to
    // `&mut len`, both live through the call; `fd` is a borrowed, open descriptor.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (&raw mut v).cast(),
            &raw mut len,
        )
    };
    check(rc).map(|()| v)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests;
