//! Every format of the messages `super` reads, as NCCL 2.12 to 2.30 print them.

use super::*;

fn c(s: &str) -> Completion<'_> {
    match message(s) {
        Some(Message::Completion(c)) => c,
        m => panic!("{s}: {m:?}"),
    }
}

#[test]
fn every_completion_format() {
    // 2.12.12
    let a = c("NET/IB : Got completion from peer 198.18.0.2<43127> with error 12, opcode 0, len 0, vendor err 129");
    assert_eq!(
        (a.status, a.opcode, a.len, a.vendor_err),
        (12, Some(0), Some(0), Some(129))
    );
    assert_eq!(a.peer, Some("198.18.0.2".parse().unwrap()));
    assert_eq!(a.local_gid, None);
    // 2.18.3
    let b = c("NET/IB : Got completion from peer 198.18.0.2<43127> with error 12, opcode 0, len 0, vendor err 129 (Send) localGid ::ffff:198.18.0.1 remoteGid ::ffff:198.18.0.2");
    assert_eq!(b.req, Some("Send"));
    assert_eq!(b.remote_gid, Some("::ffff:198.18.0.2".parse().unwrap()));
    // 2.20 / 2.21: "remoteGids" glued to the GID
    let d = c("NET/IB : Got completion from peer 198.18.0.2<43127> with status=13 opcode=0 len=0 vendor err 136 (Recv) localGid ::ffff:198.18.0.1 remoteGids::ffff:198.18.0.2");
    assert_eq!((d.status, d.req), (13, Some("Recv")));
    assert_eq!(d.remote_gid, Some("::ffff:198.18.0.2".parse().unwrap()));
    // 2.23 / 2.25 / 2.27: hca
    let e = c("NET/IB: Got completion from peer 198.18.0.2<43127> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:198.18.0.1 remoteGids::ffff:198.18.0.2 hca mlx5_1");
    assert_eq!(e.hca, Some("mlx5_1"));
    // 2.28.9
    let f = c("NET/IB: Got completion from peer 198.18.0.2<43127> with status=IBV_WC_REM_ACCESS_ERR(10) opcode=IBV_WC_RDMA_WRITE(1) reqSize=524288 vendor_err=136 req_type=Send localGid ::ffff:198.18.0.1 remoteGids::ffff:198.18.0.2 hca mlx5_0");
    assert_eq!(
        (f.status, f.opcode, f.len, f.vendor_err, f.req),
        (10, Some(1), Some(524288), Some(136), Some("Send"))
    );
    // 2.29 / 2.30 (two spaces before localGid)
    let g = c("NET/IB: Got completion from peer 198.18.0.2<43127> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:198.18.0.1 remoteGids::ffff:198.18.0.2 hca mlx5_0");
    assert_eq!(
        (g.status, g.vendor_err, g.hca),
        (12, Some(129), Some("mlx5_0"))
    );
    assert_eq!(
        message("NET/IB : Got completion from peer x with error zz"),
        Some(Message::BadCompletion)
    );
}

#[test]
fn using_env_qp_channel() {
    let Some(Message::Using(u)) =
        message("NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1:0/RoCE [RO]; OOB eth0:198.18.0.1<0>")
    else {
        panic!()
    };
    assert_eq!(u.hcas.len(), 2);
    assert_eq!(
        (u.hcas[1].name, u.hcas[1].port, u.hcas[1].link),
        ("mlx5_1", 1, "RoCE")
    );
    assert!(u.relaxed_ordering);
    assert_eq!(
        (u.oob_if, u.oob_addr),
        (Some("eth0"), Some("198.18.0.1".parse().unwrap()))
    );
    assert_eq!(
        message("NCCL_IB_GID_INDEX set by environment to 3."),
        Some(Message::Env("NCCL_IB_GID_INDEX", "3"))
    );
    assert_eq!(
        message("NCCL_IB_HCA set to mlx5_0,mlx5_1"),
        Some(Message::Env("NCCL_IB_HCA", "mlx5_0,mlx5_1"))
    );
    let Some(Message::Qp(q)) =
        message("NET/IB: Dev 0 Port 1 qpn 4711 mtu 5 GID 3 (0/120012C6FFFF0000)")
    else {
        panic!()
    };
    assert_eq!((q.dev, q.qpn, q.gid_index), (Some(0), 4711, Some(3)));
    assert_eq!(q.gid, Some("::ffff:198.18.0.18".parse().unwrap()));
    let Some(Message::Qp(q)) = message("NET/IB: ncclIbConnect: NCCL Dev 1 IbDev 1 Port 1 qp_num 99 mtu 5 GID 0 (80FE/10000FFFE005450) ctsFifoRkey=0x1 ctsFifoLkey=0x2") else { panic!() };
    assert_eq!((q.dev, q.qpn, q.gid_index), (Some(1), 99, Some(0)));
    assert!(q.gid.unwrap().segments()[0] == 0xfe80);
    let Some(Message::Channel(ch)) =
        message("Channel 02/0 : 3[3] -> 4[0] [send] via NET/IB/1/GDRDMA")
    else {
        panic!()
    };
    assert_eq!(
        (ch.channel, ch.from, ch.to, ch.send, ch.net, ch.dev),
        (2, 3, 4, true, "IB", 1)
    );
    assert_eq!(
        message(
            "comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 1000 commId 0x1 - Init COMPLETE"
        ),
        Some(Message::Rank(3, 8))
    );
    assert_eq!(message("Channel 00 : 0[0] -> 1[1] via P2P/IPC"), None);
}
