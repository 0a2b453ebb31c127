//! Decode cost per frame: RDMA WRITE Middle (1024-byte payload), ACK, READ Request —
//! each with and without the ICRC check, and a WRITE Middle cut to a 128-byte snaplen
//! (what a headers-only capture gives the analyzer).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dissectors::ib::icrc;
use dissectors::*;
use std::hint::black_box;
use std::net::Ipv4Addr;

fn frame(opcode: u8, ext: &[u8], payload: usize) -> Vec<u8> {
    let bth = BthRepr {
        opcode: Opcode(opcode),
        pkey: PKey(0xffff),
        dest_qp: Qpn(0xa022),
        psn: Psn(123),
        ..Default::default()
    };
    let mut t = vec![0u8; 12];
    bth.emit(&mut t);
    t.extend_from_slice(ext);
    t.resize(t.len() + payload, 0xab);
    let udp_len = 8 + t.len() + 4;
    let ip = IpRepr {
        src: Ipv4Addr::new(198, 18, 1, 12).into(),
        dst: Ipv4Addr::new(198, 18, 1, 11).into(),
        dscp: 26,
        ecn: Ecn::Ect0,
        ttl: 64,
        flow_label: 0,
        ident: 0,
        protocol: 17,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    };
    let mut f = vec![0u8; 14 + 20 + udp_len];
    EthernetRepr {
        dst: [2; 6],
        src: [4; 6],
        ethertype: 0x0800,
    }
    .emit(&mut f);
    ip.emit(udp_len, &mut f[14..]);
    UdpRepr {
        src_port: 0xc000,
        dst_port: 4791,
        length: udp_len as u16,
        checksum: 0,
    }
    .emit(&mut f[34..]);
    f[42..42 + t.len()].copy_from_slice(&t);
    let crc = icrc::roce_v2(&f[14..34], &f[34..42 + t.len()]);
    let n = f.len();
    f[n - 4..].copy_from_slice(&crc.to_le_bytes());
    f
}

fn bench(c: &mut Criterion) {
    let mut reth = [0u8; 16];
    RethRepr {
        va: 0x7f00_0000_0000,
        rkey: 0x1234,
        dma_len: 65536,
    }
    .emit(&mut reth);
    let mut aeth = [0u8; 4];
    AethRepr {
        syndrome: 0x1f,
        msn: Msn(5),
    }
    .emit(&mut aeth);
    let cases = [
        ("write_middle_1024", frame(0x07, &[], 1024)),
        ("ack", frame(0x11, &aeth, 0)),
        ("read_request", frame(0x0C, &reth, 0)),
    ];
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    for (name, f) in &cases {
        let d = decode(LinkType::Ethernet, f, f.len() as u32, &Config::default());
        assert_eq!(d.roce.unwrap().icrc, IcrcStatus::Ok, "{name}");
        for icrc in [true, false] {
            let cfg = Config {
                roce_port: 4791,
                check_icrc: icrc,
            };
            let label = format!("{name}/{}", if icrc { "icrc" } else { "no_icrc" });
            g.bench_function(label, |b| {
                b.iter(|| decode(LinkType::Ethernet, black_box(f), f.len() as u32, &cfg));
            });
        }
    }
    let f = &cases[0].1;
    let cut = &f[..128];
    g.bench_function("write_middle_snaplen128", |b| {
        b.iter(|| {
            decode(
                LinkType::Ethernet,
                black_box(cut),
                f.len() as u32,
                &Config::default(),
            )
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
