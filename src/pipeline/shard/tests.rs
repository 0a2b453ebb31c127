use super::*;
use crate::capture::input::for_each_frame_of;
use dissectors::RoceVersion;
use std::net::Ipv4Addr;
use std::ops::ControlFlow;

const PORT: u16 = udp::ROCE_V2_PORT;

/// An Ethernet frame with `tags` VLAN tags, IPv4 from `src` to `dst`, UDP to `dport`
/// with `payload` bytes after the UDP header (a BTH and ICRC when 16 or more).
fn v4_frame(tags: usize, src: [u8; 4], dst: [u8; 4], dport: u16, payload: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    for _ in 0..tags {
        f.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload) as u16;
    f.extend_from_slice(&[0x45, 0x02]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&49152u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    // BTH: RC SEND Only (opcode 4), then zeros (payload and ICRC).
    let mut rest = vec![0u8; payload];
    if let Some(op) = rest.first_mut() {
        *op = 4;
    }
    f.extend_from_slice(&rest);
    f
}

const A: [u8; 4] = [192, 0, 2, 1];
const B: [u8; 4] = [192, 0, 2, 2];

fn v4_hash(a: [u8; 4], b: [u8; 4]) -> u64 {
    pair_hash(IpAddr::V4(Ipv4Addr::from(a)), IpAddr::V4(Ipv4Addr::from(b)))
}

#[test]
fn roce_v2_goes_by_host_pair_the_same_both_ways() {
    let ab = route(LinkType::Ethernet, &v4_frame(0, A, B, PORT, 16), PORT);
    let ba = route(LinkType::Ethernet, &v4_frame(0, B, A, PORT, 16), PORT);
    assert_eq!(ab, Route::Pair(v4_hash(A, B)));
    assert_eq!(ab, ba);
    // One and two VLAN tags: the same pair, the same route; a third tag is not read.
    for tags in 1..=2 {
        assert_eq!(
            route(LinkType::Ethernet, &v4_frame(tags, A, B, PORT, 16), PORT),
            ab
        );
    }
    assert_eq!(
        route(LinkType::Ethernet, &v4_frame(3, A, B, PORT, 16), PORT),
        Route::First
    );
    // Another pair, another hash; another RoCE port configured, another route.
    assert_ne!(v4_hash(A, B), v4_hash(A, [192, 0, 2, 3]));
    assert_eq!(
        route(LinkType::Ethernet, &v4_frame(0, A, B, 4792, 16), PORT),
        Route::First
    );
    assert_eq!(
        route(LinkType::Ethernet, &v4_frame(0, A, B, 4792, 16), 4792),
        ab
    );
    // The IP packet alone (raw IP), as it would be on a cooked or raw capture.
    assert_eq!(
        route(LinkType::RawIp, &v4_frame(0, A, B, PORT, 16)[14..], PORT),
        ab
    );
}

#[test]
fn frames_the_decoder_would_not_give_a_bth_stay_in_shard_zero() {
    let full = v4_frame(0, A, B, PORT, 16);
    // Cut inside the BTH, inside UDP, inside IP, inside Ethernet.
    for cut in [14 + 20 + 8 + 11, 14 + 20 + 4, 14 + 10, 6, 0] {
        assert_eq!(
            route(LinkType::Ethernet, &full[..cut], PORT),
            Route::First,
            "{cut}"
        );
    }
    // A UDP length too short for a BTH, an IP fragment, another IP protocol.
    let short = v4_frame(0, A, B, PORT, 8);
    assert_eq!(route(LinkType::Ethernet, &short, PORT), Route::First);
    let mut frag = full.clone();
    frag[14 + 6] = 0x20;
    assert_eq!(route(LinkType::Ethernet, &frag, PORT), Route::First);
    let mut tcp = full.clone();
    tcp[14 + 9] = 6;
    assert_eq!(route(LinkType::Ethernet, &tcp, PORT), Route::First);
    // ARP and RoCE v1 EtherTypes.
    for et in [[0x08, 0x06], [0x89, 0x15]] {
        let mut f = full.clone();
        f[12..14].copy_from_slice(&et);
        assert_eq!(route(LinkType::Ethernet, &f, PORT), Route::First);
    }
    assert_eq!(route(LinkType::Infiniband, &full, PORT), Route::First);
}

#[test]
fn pause_frames_go_to_every_shard_when_they_parse() {
    let mut pfc = vec![0x01, 0x80, 0xc2, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0x08];
    pfc.extend_from_slice(&[0x01, 0x01, 0x00, 0x08]); // PFC, priority 3 enabled
    pfc.extend_from_slice(&[0u8; 16]);
    pfc[14 + 4 + 6..14 + 4 + 8].copy_from_slice(&0xffffu16.to_be_bytes());
    assert_eq!(route(LinkType::Ethernet, &pfc, PORT), Route::Every);
    assert_eq!(route(LinkType::Ethernet, &pfc[..15], PORT), Route::First);
}

#[test]
fn shards_cover_zero_to_n_and_every_is_none() {
    for n in 1..=8 {
        let mut seen = vec![0u32; n];
        for i in 0..4096u32 {
            let h = v4_hash([198, 18, (i >> 8) as u8, i as u8], [198, 19, 0, 1]);
            let s = Route::Pair(h).shard(n).expect("a pair has one shard");
            seen[s] += 1;
        }
        // Spread: every shard gets at least half its share.
        assert!(
            seen.iter().all(|&c| c as usize >= 4096 / n / 2),
            "{n}: {seen:?}"
        );
        assert_eq!(Route::First.shard(n), Some(0));
        assert_eq!(Route::Every.shard(n), None);
    }
}

/// What the decoder says the frame is, as a route: its RoCE v2 header outside a tunnel
/// goes by its IP pair, a PAUSE to every shard, the rest to shard 0.
fn decoded_route(d: &dissectors::Decoded) -> Route {
    match (&d.roce, &d.ip, &d.pause) {
        (Some(r), Some(ip), _) if r.version == RoceVersion::V2 && d.tunnel.is_none() => {
            Route::Pair(pair_hash(ip.src, ip.dst))
        }
        (_, _, Some(_)) => Route::Every,
        _ => Route::First,
    }
}

/// The peek agrees with the decoder on every frame of every sample, tap sample and shared
/// capture (when present): the sharded analysis then sees each frame exactly where the
/// one-thread analysis's state for it lives.
#[test]
fn the_peek_agrees_with_the_decoder_on_every_capture() {
    let files = crate::testfiles::every_capture();
    assert!(files.len() >= 25, "captures found: {}", files.len());
    let cfg = dissectors::Config::default();
    let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, &cfg);
    let (mut pairs, mut every, mut frames) = (0u64, 0u64, 0u64);
    for f in &files {
        let mut n = 0u64;
        let res = for_each_frame_of(std::slice::from_ref(f), true, |fr| {
            n += 1;
            dissectors::decode_into(fr.link, fr.data, fr.orig_len, &cfg, &mut d);
            let want = decoded_route(&d);
            let got = route(fr.link, fr.data, cfg.roce_port);
            assert_eq!(got, want, "{} frame {n} ({:?})", f.display(), d.stop);
            pairs += u64::from(matches!(got, Route::Pair(_)));
            every += u64::from(got == Route::Every);
            ControlFlow::Continue(())
        });
        // A damaged file ends early: what was read still had to agree.
        let _ = res;
        frames += n;
    }
    assert!(
        pairs > 1000 && every > 0,
        "{frames} frames, {pairs} RoCE v2, {every} PAUSE"
    );
}

/// An IPv6 RoCE v2 frame (Ethernet, one VLAN tag) from `src` to `dst` with a BTH and ICRC.
fn v6_frame(src: u8, dst: u8) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x81, 0x00, 0x60, 0x05,
    ];
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 24, 17, 64]);
    for last in [src, dst] {
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        f.extend_from_slice(&[0; 11]);
        f.push(last);
    }
    f.extend_from_slice(&[0xc0, 0, 0x12, 0xb7, 0, 24, 0, 0]);
    f.push(4);
    f.extend_from_slice(&[0; 15]);
    f
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// Link types the peek reads, and two it does not.
    fn link() -> impl Strategy<Value = LinkType> {
        prop_oneof![
            Just(LinkType::Ethernet),
            Just(LinkType::LinuxSll),
            Just(LinkType::LinuxSll2),
            Just(LinkType::RawIp),
            Just(LinkType::Ipv4),
            Just(LinkType::Ipv6),
            Just(LinkType::Erf),
            Just(LinkType::IpOverIb),
            Just(LinkType::Infiniband),
            Just(LinkType::Other(147)),
        ]
    }

    fn agrees(link: LinkType, f: &[u8]) {
        let cfg = dissectors::Config::default();
        let d = dissectors::decode(link, f, f.len() as u32, &cfg);
        assert_eq!(route(link, f, PORT), decoded_route(&d), "{link:?} {f:02x?}");
    }

    proptest! {
        /// Valid RoCE v2 frames (IPv4 with 0-3 tags, IPv6) with a few bytes changed and
        /// cut anywhere: the peek says what the decoder says.
        #[test]
        fn damaged_roce_frames_route_as_the_decoder_reads_them(
            tags in 0usize..4,
            v6 in any::<bool>(),
            edits in proptest::collection::vec((0usize..80, any::<u8>()), 0..4),
            cut in 0usize..100,
        ) {
            let mut f = if v6 { v6_frame(1, 2) } else { v4_frame(tags, A, B, PORT, 16) };
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            f.truncate(cut.max(1));
            agrees(LinkType::Ethernet, &f);
            agrees(LinkType::RawIp, f.get(14 + 4 * tags..).unwrap_or(&[]));
        }

        /// Any bytes under any link type: no panic, and the decoder's answer.
        #[test]
        fn any_bytes_route_as_the_decoder_reads_them(
            link in link(),
            f in proptest::collection::vec(any::<u8>(), 0..120),
        ) {
            agrees(link, &f);
        }
    }
}

#[test]
fn ipv6_roce_goes_by_host_pair_the_same_both_ways() {
    let ab = route(LinkType::Ethernet, &v6_frame(1, 2), PORT);
    assert!(matches!(ab, Route::Pair(_)), "{ab:?}");
    assert_eq!(route(LinkType::Ethernet, &v6_frame(2, 1), PORT), ab);
    assert_ne!(route(LinkType::Ethernet, &v6_frame(1, 3), PORT), ab);
}

#[test]
fn ipv4_with_an_authentication_header_goes_the_decoders_general_way() {
    // IPv4 (protocol 51), a 12-byte AH naming UDP next, then UDP to the RoCE port and a
    // BTH: the decoder reads past the AH, and so does the peek.
    let plain = v4_frame(0, A, B, PORT, 16);
    let mut f = plain[..14 + 20].to_vec();
    f[14 + 9] = 51;
    let total = (20 + 12 + 8 + 16) as u16;
    f[14 + 2..14 + 4].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[17, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
    f.extend_from_slice(&plain[14 + 20..]);
    let cfg = dissectors::Config::default();
    let d = dissectors::decode(LinkType::Ethernet, &f, f.len() as u32, &cfg);
    assert_eq!(
        decoded_route(&d),
        Route::Pair(v4_hash(A, B)),
        "{:?}",
        d.stop
    );
    assert_eq!(
        route(LinkType::Ethernet, &f, PORT),
        Route::Pair(v4_hash(A, B))
    );
}
