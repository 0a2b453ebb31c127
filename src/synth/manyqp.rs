//! `many-qp`: one host of a large collective job (NCCL across many nodes) and its
//! queue pairs — `--qps N` RC connections spread over `--peers M` peers, each a stream
//! of RDMA WRITEs with coalesced ACKs, optionally with a little loss upstream of the tap
//! (`--loss PERMILLE`: a PSN gap, one NAK, go-back-N). It exists to measure the analyzer
//! and its reports at thousands of QPs (`benches/scale.sh`).
//!
//! Guarantees: the QPs take turns round-robin, one message exchange each (the message,
//! then the ACK that completes it when one is owed), so every QP appears early and all
//! of them are interleaved; memory grows with the number of QPs, never with
//! `--packets`; QPs alternate which side is the requester (the host writes to half of
//! its peers' QPs, the other half write to it); every connection sends at least its
//! first message before any loss, and the end of the trace ACKs everything, so every
//! connection is seen in both directions (`observable.connections`, `observable.flows`).
//! Addresses are benchmark ranges: the host is 198.18.0.1, peers 198.18.1.1-254, then
//! 198.19.0.1 and on.

use super::out::Out;
use super::rc::{Conn, Fault, Op};
use super::rng::Rng;
use super::traffic::{conn, pkts, v4};
use std::io;
use std::net::IpAddr;

/// Defaults of the sample-sized trace (`rocetap synth many-qp -o FILE`).
pub const QPS: u32 = 64;
/// Peers when `--peers` is not given.
pub const PEERS: u32 = 4;
/// WRITE size when `--msg-size` is not given: one small packet (NCCL's LL protocol
/// sizes), which keeps the sample small; bigger messages take PMTU-sized packets.
pub const MSG_SIZE: u32 = 64;
/// Most QPs `--qps` accepts (their QPNs stay apart in the 24-bit space).
pub const MAX_QPS: u32 = 1_000_000;
/// Most peers: 198.18.1.1-254, then 254 per /24 of 198.19.0.0/16.
pub const MAX_PEERS: u32 = 254 + 256 * 254;
const PMTU: u32 = 4096;
const HOST_QPN: u32 = 0x00_0100;
const PEER_QPN: u32 = 0x40_0000;

/// The address of peer `i` (0-based).
pub fn peer_addr(i: u32) -> IpAddr {
    if i < 254 {
        v4(198, 18, 1, i as u8 + 1)
    } else {
        let j = i - 254;
        v4(198, 19, (j / 254) as u8, (j % 254) as u8 + 1)
    }
}

/// Generates the `many-qp` trace into `out` until about `target` frames are written, using
/// the scenario options in `out.knobs`.
pub fn many_qp(out: &mut Out, rng: &mut Rng, target: u64) -> io::Result<()> {
    let k = out.knobs;
    let qps = k.qps.unwrap_or(QPS);
    let peers = k.peers.unwrap_or(PEERS).min(qps);
    let size = k.msg_size.unwrap_or(MSG_SIZE);
    let loss = u64::from(k.loss_permille.unwrap_or(0));
    let host = v4(198, 18, 0, 1);
    let mut conns: Vec<Conn> = (0..qps)
        .map(|j| {
            let peer = peer_addr(j % peers);
            let (hq, pq) = (HOST_QPN + j, PEER_QPN + j);
            if j % 2 == 0 {
                conn(rng, host, peer, hq, pq, PMTU)
            } else {
                conn(rng, peer, host, pq, hq, PMTU)
            }
        })
        .collect();
    out.fact("host", host.to_string());
    out.fact("qps", qps);
    out.fact("peers", peers);
    out.fact("first_peer", peer_addr(0).to_string());
    out.fact("last_peer", peer_addr(peers - 1).to_string());
    out.fact("host_qpn_first", format!("0x{HOST_QPN:06x}"));
    out.fact("peer_qpn_first", format!("0x{PEER_QPN:06x}"));
    out.fact("pmtu", PMTU);
    out.fact("msg_size", size);
    out.fact("loss_permille", loss);
    out.notes.push(
        "QP j (0-based) connects the host's QPN host_qpn_first+j with QPN \
         peer_qpn_first+j on peer j mod peers; the host is the requester for even j. \
         Each QP in turn sends one RDMA WRITE of msg_size bytes; the responder ACKs \
         every 1-3 messages (coalesced). With loss_permille > 0, that share of the \
         multi-packet messages (after a QP's first) loses one packet before the tap: a \
         PSN gap, one NAK (0x60) naming it, go-back-N from it."
            .into(),
    );
    let write = Op::Write {
        len: size,
        imm: None,
    };
    let mut sent = vec![0u32; conns.len()];
    // ACKs still owed (written by `finish`), so the trace ends near the target.
    let mut owed = 0u64;
    'outer: loop {
        for (i, c) in conns.iter_mut().enumerate() {
            if out.frames() + owed >= target {
                break 'outer;
            }
            let n = pkts(c, &write);
            let fault = if loss > 0 && n >= 2 && sent[i] >= 1 && rng.chance(loss, 1000) {
                Fault::LossUpstream(rng.below(n as u64 - 1) as usize)
            } else {
                Fault::None
            };
            let before = c.owes_ack();
            c.exchange(out, rng, write, fault)?;
            match (before, c.owes_ack()) {
                (false, true) => owed += 1,
                (true, false) => owed -= 1,
                _ => {}
            }
            out.now += rng.range(20, 200);
            sent[i] += 1;
        }
    }
    let active = sent.iter().filter(|&&s| s > 0).count() as u64;
    out.obs.connections = Some(active);
    out.obs.flows = Some(2 * active);
    for c in &mut conns {
        c.finish(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_get_benchmark_addresses() {
        assert_eq!(peer_addr(0), v4(198, 18, 1, 1));
        assert_eq!(peer_addr(253), v4(198, 18, 1, 254));
        assert_eq!(peer_addr(254), v4(198, 19, 0, 1));
        assert_eq!(peer_addr(MAX_PEERS - 1), v4(198, 19, 255, 254));
    }
}
