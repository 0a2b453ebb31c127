//! Property tests: random bytes never panic any link type, and frames built from random
//! header values with `emit` decode back to the same values with a good ICRC.

use dissectors::ib::icrc;
use dissectors::*;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const LINKS: [u32; 10] = [1, 101, 113, 197, 228, 229, 242, 247, 276, 9999];

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(link in 0usize..LINKS.len(), bytes in proptest::collection::vec(any::<u8>(), 0..600), extra in 0u32..3000, icrc in any::<bool>()) {
        let cfg = Config { roce_port: 4791, check_icrc: icrc };
        let d = decode(LinkType::from_linktype(LINKS[link]), &bytes, bytes.len() as u32 + extra, &cfg);
        prop_assert!(d.stop.offset as usize <= bytes.len());
    }

    /// One `Decoded` reused frame after frame, as the analysis does (`decode_into` writes
    /// a rare layer's or transport header's fields only when the frame before had it),
    /// holds what a fresh decode of each frame holds: random frames of any link type and
    /// RoCE v2 frames of any opcode with random headers, in any order.
    #[test]
    fn reused_decoded_equals_fresh(
        frames in proptest::collection::vec(
            (0usize..=LINKS.len(), proptest::collection::vec(any::<u8>(), 0..200), any::<u8>(), any::<bool>()),
            1..8,
        ),
        icrc in any::<bool>(),
    ) {
        let cfg = Config { roce_port: 4791, check_icrc: icrc };
        let mut d = decode(LinkType::Ethernet, &[], 0, &cfg);
        for (link, mut bytes, opcode, v6) in frames {
            let (lt, f) = if link == LINKS.len() {
                bytes.insert(0, opcode);
                (LinkType::Ethernet, frame_v2(v6, 0, &bytes, 0))
            } else {
                (LinkType::from_linktype(LINKS[link]), bytes)
            };
            decode_into(lt, &f, f.len() as u32, &cfg, &mut d);
            prop_assert_eq!(d, decode(lt, &f, f.len() as u32, &cfg));
        }
    }

    /// Random bytes behind a valid Ethernet/IPv4/UDP 4791 header reach the BTH decoder.
    #[test]
    fn random_transport_never_panics(t in proptest::collection::vec(any::<u8>(), 0..300)) {
        let f = frame_v2(false, 0, &t, 0);
        let d = decode(LinkType::Ethernet, &f, f.len() as u32, &Config::default());
        prop_assert!(d.udp.is_some());
        prop_assert!(d.stop.offset as usize <= f.len());
    }

    #[test]
    fn built_frames_decode_back(
        opcode in prop::sample::select(vec![0x00u8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D, 0x24, 0x2A, 0x64, 0x65, 0x81, 0xA6, 0xAA, 0xA4]),
        qp in 0u32..0x100_0000, psn in 0u32..0x100_0000, ack in any::<bool>(), se in any::<bool>(),
        va in any::<u64>(), rkey in any::<u32>(), len in any::<u32>(), syndrome in any::<u8>(), msn in 0u32..0x100_0000,
        v6 in any::<bool>(), ecn in 0u8..4, payload in proptest::collection::vec(any::<u8>(), 0..64), pad in 0u8..4,
    ) {
        let op = Opcode(opcode);
        let (_, chain) = op.decode().unwrap();
        let bth = BthRepr { opcode: op, se, mig_req: false, pad_cnt: if chain.payload { pad } else { 0 }, tver: 0,
            pkey: PKey(0xffff), fecn: false, becn: opcode == 0x81, dest_qp: Qpn(qp), ack_req: ack, psn: Psn(psn) };
        let mut t = vec![0u8; 12 + chain.ext_len()];
        bth.emit(&mut t);
        let mut o = 12;
        let reth = RethRepr { va, rkey, dma_len: len };
        let aeth = AethRepr { syndrome, msn: Msn(msn) };
        macro_rules! put { ($flag:expr, $len:expr, $e:expr) => { if $flag { $e(&mut t[o..o + $len]); o += $len; } } }
        put!(chain.rdeth, 4, |b: &mut [u8]| RdethRepr { ee_context: qp }.emit(b));
        put!(chain.deth, 8, |b: &mut [u8]| DethRepr { qkey: rkey, src_qp: Qpn(qp ^ 1) }.emit(b));
        put!(chain.xrceth, 4, |b: &mut [u8]| XrcethRepr { xrc_srq: Qpn(qp ^ 2) }.emit(b));
        put!(chain.feth, 4, |b: &mut [u8]| FethRepr { word: 0x11 }.emit(b));
        put!(chain.reth, 16, |b: &mut [u8]| reth.emit(b));
        put!(chain.atomic_eth, 28, |b: &mut [u8]| AtomicEthRepr { va, rkey, swap_add: 1, compare: 2 }.emit(b));
        put!(chain.aeth, 4, |b: &mut [u8]| aeth.emit(b));
        put!(chain.atomic_ack_eth, 8, |b: &mut [u8]| AtomicAckEthRepr { orig_rem_data: va }.emit(b));
        put!(chain.immdt, 4, |b: &mut [u8]| ImmDtRepr { data: rkey }.emit(b));
        put!(chain.ieth, 4, |b: &mut [u8]| IethRepr { rkey }.emit(b));
        put!(chain.cnp, 16, |b: &mut [u8]| CnpRepr { reserved_zero: true }.emit(b));
        prop_assert_eq!(o, t.len());
        if chain.payload {
            t.extend_from_slice(&payload);
            t.extend(std::iter::repeat_n(0u8, usize::from(bth.pad_cnt)));
        }
        let f = frame_v2(v6, ecn, &t, 0);
        let d = decode(LinkType::Ethernet, &f, f.len() as u32, &Config::default());
        prop_assert_eq!(d.stop.kind, StopKind::Complete, "{:?}", d.stop);
        let r = d.roce.unwrap();
        prop_assert_eq!(r.bth, bth);
        prop_assert_eq!(r.icrc, IcrcStatus::Ok);
        prop_assert_eq!(d.ecn().unwrap().bits(), ecn);
        if chain.reth { prop_assert_eq!(r.reth, Some(reth)); }
        if chain.aeth { prop_assert_eq!(r.aeth, Some(aeth)); }
        prop_assert_eq!(r.payload_len as usize, if chain.payload { payload.len() } else { 0 });
        // The same frame with the ICRC flipped is "bad"; cut by a snaplen it is "truncated".
        let mut bad = f.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0x55;
        prop_assert_eq!(decode(LinkType::Ethernet, &bad, bad.len() as u32, &Config::default()).roce.unwrap().icrc, IcrcStatus::Bad);
        let cut = &f[..f.len() - 1];
        let dc = decode(LinkType::Ethernet, cut, f.len() as u32, &Config::default());
        prop_assert_eq!(dc.roce.unwrap().icrc, IcrcStatus::Truncated);
        prop_assert_eq!(dc.stop.kind, StopKind::Truncated);
    }
}

/// Ethernet / IPv4 or IPv6 / UDP 4791 / `transport` / ICRC (computed).
fn frame_v2(v6: bool, ecn: u8, transport: &[u8], _pad: usize) -> Vec<u8> {
    let (src, dst): (IpAddr, IpAddr) = if v6 {
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).into(),
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).into(),
        )
    } else {
        (
            Ipv4Addr::new(198, 18, 0, 1).into(),
            Ipv4Addr::new(198, 18, 0, 2).into(),
        )
    };
    let ip = IpRepr {
        src,
        dst,
        dscp: 26,
        ecn: Ecn::from_bits(ecn),
        ttl: 64,
        flow_label: 0x12345,
        ident: 7,
        protocol: 17,
        header_len: 0,
        total_len: 0,
        fragmented: false,
    };
    let udp_len = 8 + transport.len() + 4;
    let mut f = vec![0u8; 14 + 40 + udp_len];
    EthernetRepr {
        dst: [2; 6],
        src: [4; 6],
        ethertype: if v6 { 0x86dd } else { 0x0800 },
    }
    .emit(&mut f);
    let h = ip.emit(udp_len, &mut f[14..]);
    f.truncate(14 + h + udp_len);
    let u = 14 + h;
    UdpRepr {
        src_port: 0xc000,
        dst_port: 4791,
        length: udp_len as u16,
        checksum: 0,
    }
    .emit(&mut f[u..]);
    f[u + 8..u + 8 + transport.len()].copy_from_slice(transport);
    let crc = icrc::roce_v2(&f[14..u], &f[u..u + 8 + transport.len()]);
    let n = f.len();
    f[n - 4..].copy_from_slice(&crc.to_le_bytes());
    f
}
