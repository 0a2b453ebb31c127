//! The lane program's tests: an interpreter of classic BPF runs it on hand-built frames
//! and on every frame of every sample, tap sample and shared capture, against plain rules
//! and the decoder's addresses.

use super::*;
use crate::capture::input::for_each_frame_of;
use dissectors::{LinkType, RoceVersion};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::ControlFlow;

const PORT: u16 = dissectors::udp::ROCE_V2_PORT;

/// Runs `prog` as the kernel runs a fanout program on a frame whose link-layer header
/// starts at `frame[0]`: only the instructions [`program`] writes; a load outside the
/// frame ends the program with 0.
fn run(prog: &[Insn], frame: &[u8]) -> u32 {
    let (mut a, mut x, mut mem) = (0u32, 0u32, [0u32; 16]);
    let mut pc = 0usize;
    let load = |k: u32, x: u32, size: usize| -> Option<u32> {
        let off = i64::from((k as i32).checked_sub(LL as i32)?) + i64::from(x);
        let off = usize::try_from(off).ok()?;
        let b = frame.get(off..off + size)?;
        Some(b.iter().fold(0u32, |v, &c| (v << 8) | u32::from(c)))
    };
    loop {
        let i = prog[pc];
        pc += 1;
        let size = match i.code & 0x18 {
            W => 4,
            H => 2,
            _ => 1,
        };
        match i.code {
            c if c == LD | IND | (c & 0x18) => match load(i.k, x, size) {
                Some(v) => a = v,
                None => return 0,
            },
            c if c == LDX | W | IMM => x = i.k,
            c if c == LDX | W | MEM => x = mem[i.k as usize],
            c if c == LD | W | MEM => a = mem[i.k as usize],
            ST => mem[i.k as usize] = a,
            c if c == MISC | TAX => x = a,
            c if c & 0x07 == ALU => {
                let v = if c & X != 0 { x } else { i.k };
                a = match c & 0xf0 {
                    ADD => a.wrapping_add(v),
                    MUL => a.wrapping_mul(v),
                    AND => a & v,
                    LSH => a << v,
                    RSH => a >> v,
                    XOR => a ^ v,
                    other => panic!("ALU op {other:#x}"),
                };
            }
            c if c == JMP | JA => pc += i.k as usize,
            c if c & 0x07 == JMP => {
                let yes = match c & 0xf0 {
                    JEQ => a == i.k,
                    JGE => a >= i.k,
                    JSET => a & i.k != 0,
                    other => panic!("jump {other:#x}"),
                };
                pc += usize::from(if yes { i.jt } else { i.jf });
            }
            c if c == RET | RET_A => return a,
            c if c == RET | K => return i.k,
            other => panic!("opcode {other:#x}"),
        }
    }
}

/// The lane rules, written plainly over the frame's bytes.
fn reference(f: &[u8], port: u16) -> u32 {
    let be16 = |at: usize| f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let mut l2 = 14;
    let mut et = be16(12);
    for _ in 0..2 {
        if matches!(et, Some(0x8100 | 0x88a8 | 0x9100)) {
            et = be16(l2 + 2);
            l2 += 4;
        }
    }
    let ip = f.get(l2..).unwrap_or(&[]);
    match et {
        Some(0x0800) if ip.len() >= 20 && ip[0] >> 4 == 4 && ip[0] & 0xf >= 5 => {
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
            let l4 = usize::from(ip[0] & 0xf) * 4;
            let dport = ip
                .get(l4 + 2..l4 + 4)
                .map(|b| u16::from_be_bytes([b[0], b[1]]));
            if ip[9] != 17 || frag != 0 || dport != Some(port) {
                return 0;
            }
            let a = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let b = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            lane_hash(a.into(), b.into())
        }
        Some(0x86dd) if ip.len() >= 44 && ip[0] >> 4 == 6 => {
            if ip[6] != 17 || u16::from_be_bytes([ip[42], ip[43]]) != port {
                return 0;
            }
            let a: [u8; 16] = ip[8..24].try_into().unwrap();
            let b: [u8; 16] = ip[24..40].try_into().unwrap();
            lane_hash(Ipv6Addr::from(a).into(), Ipv6Addr::from(b).into())
        }
        _ => 0,
    }
}

/// An Ethernet frame with `tags` VLAN tags (of `tpid`), IPv4 from `src` to `dst`, UDP to
/// `dport`, a BTH and an ICRC.
fn v4_frame(tags: usize, tpid: u16, src: [u8; 4], dst: [u8; 4], dport: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    for _ in 0..tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&[0x60, 0x05]);
    }
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0x02, 0, 48, 0, 1, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&49152u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 28, 0, 0, 4]);
    f.extend_from_slice(&[0; 19]);
    f
}

/// An IPv6 RoCE v2 frame (one VLAN tag) between 2001:db8::`src` and 2001:db8::`dst`.
fn v6_frame(src: u8, dst: u8, next: u8) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x81, 0x00, 0x60, 0x05,
    ];
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 24, next, 64]);
    for last in [src, dst] {
        f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        f.extend_from_slice(&[0; 11]);
        f.push(last);
    }
    f.extend_from_slice(&[0xc0, 0, 0x12, 0xb7, 0, 24, 0, 0, 4]);
    f.extend_from_slice(&[0; 15]);
    f
}

const A: [u8; 4] = [192, 0, 2, 1];
const B: [u8; 4] = [192, 0, 2, 2];

fn v4(a: [u8; 4]) -> IpAddr {
    Ipv4Addr::from(a).into()
}

#[test]
fn both_directions_of_a_host_pair_get_one_lane() {
    let p = program(PORT);
    let ab = run(&p, &v4_frame(0, 0x8100, A, B, PORT));
    assert_eq!(ab, lane_hash(v4(A), v4(B)));
    assert_eq!(run(&p, &v4_frame(0, 0x8100, B, A, PORT)), ab);
    assert_eq!(lane_hash(v4(B), v4(A)), ab);
    // Behind one or two tags of each kind the decoder reads: the same; a third: lane 0.
    for tpid in [0x8100, 0x88a8, 0x9100] {
        for tags in 1..=2 {
            assert_eq!(
                run(&p, &v4_frame(tags, tpid, B, A, PORT)),
                ab,
                "{tpid:#x} x{tags}"
            );
        }
        assert_eq!(run(&p, &v4_frame(3, tpid, A, B, PORT)), 0);
    }
    // Another RoCE port: lane 0, unless the program is made for it.
    assert_eq!(run(&p, &v4_frame(0, 0x8100, A, B, 4792)), 0);
    assert_eq!(run(&program(4792), &v4_frame(0, 0x8100, A, B, 4792)), ab);
    // IPv6 both ways; with an extension header first: lane 0.
    let v6 = run(&p, &v6_frame(1, 2, 17));
    assert_eq!(run(&p, &v6_frame(2, 1, 17)), v6);
    let x = |n: u8| -> IpAddr { format!("2001:db8::{n:x}").parse().unwrap() };
    assert_eq!(v6, lane_hash(x(1), x(2)));
    assert_eq!(run(&p, &v6_frame(1, 2, 0)), 0);
    // Lanes spread: 64 host pairs over 4 lanes use every lane, both ways alike.
    let mut used = [0u32; 4];
    for n in 0..64u8 {
        let (s, d) = ([198, 18, 1, n], [198, 18, 2, n]);
        let l = lane_of(v4(s), v4(d), 4);
        assert_eq!(run(&p, &v4_frame(0, 0x8100, s, d, PORT)) % 4, u32::from(l));
        assert_eq!(run(&p, &v4_frame(1, 0x8100, d, s, PORT)) % 4, u32::from(l));
        used[usize::from(l)] += 1;
    }
    assert!(used.iter().all(|&u| u >= 6), "{used:?}");
}

#[test]
fn fragments_options_cut_frames_and_other_protocols_go_to_lane_zero() {
    let p = program(PORT);
    let f = v4_frame(0, 0x8100, A, B, PORT);
    let mut frag = f.clone();
    frag[20] = 0x20; // more fragments
    assert_eq!(run(&p, &frag), 0);
    let mut tcp = f.clone();
    tcp[23] = 6;
    assert_eq!(run(&p, &tcp), 0);
    let mut short_ihl = f.clone();
    short_ihl[14] = 0x44;
    assert_eq!(run(&p, &short_ihl), 0);
    // An IPv4 header with options: the UDP port is read after them.
    let mut opts = f[..34].to_vec();
    opts[14] = 0x46;
    opts.extend_from_slice(&[1, 1, 1, 0]);
    opts.extend_from_slice(&f[34..]);
    assert_eq!(run(&p, &opts), lane_hash(v4(A), v4(B)));
    // Cut anywhere before the UDP port: lane 0 (the kernel sees whole frames; a cut
    // one here is only how a load past the end behaves).
    for cut in 0..38 {
        assert_eq!(run(&p, &f[..cut]), 0, "cut at {cut}");
    }
    let arp = [&f[..12], &[0x08, 0x06], &[0u8; 28][..]].concat();
    let pause = [&f[..12], &[0x88, 0x08, 0x01, 0x01], &[0u8; 40][..]].concat();
    assert_eq!(run(&p, &arp), 0);
    assert_eq!(run(&p, &pause), 0);
    assert!(
        p.len() < 255,
        "every jump reaches: {} instructions",
        p.len()
    );
}

/// On every Ethernet frame of every sample, tap sample and shared capture (when present),
/// the program gives what the plain rules give, and every RoCE v2 frame the decoder reads
/// outside a tunnel (IPv4, or IPv6 straight to UDP) goes by its decoded addresses: both
/// directions of each QP in one lane, whatever the lane count.
#[test]
fn the_program_routes_every_captured_frame_as_the_rules_and_the_decoder_say() {
    let files = crate::testfiles::every_capture();
    assert!(files.len() >= 25, "captures found: {}", files.len());
    let p = program(PORT);
    let cfg = dissectors::Config::default();
    let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, &cfg);
    let (mut frames, mut roce, mut zero) = (0u64, 0u64, 0u64);
    for f in &files {
        let mut n = 0u64;
        let _ = for_each_frame_of(std::slice::from_ref(f), true, |fr| {
            n += 1;
            if fr.link != LinkType::Ethernet {
                return ControlFlow::Continue(());
            }
            frames += 1;
            let got = run(&p, fr.data);
            assert_eq!(got, reference(fr.data, PORT), "{} frame {n}", f.display());
            dissectors::decode_into(fr.link, fr.data, fr.orig_len, &cfg, &mut d);
            // IPv6 straight to UDP: its header just before the UDP header before the BTH.
            let straight = match (&d.ip, &d.roce) {
                (Some(ip), Some(r)) if ip.src.is_ipv6() => {
                    let at = (r.bth_offset as usize).saturating_sub(8 + 40);
                    fr.data.get(at).is_some_and(|v| v >> 4 == 6) && fr.data.get(at + 6) == Some(&17)
                }
                _ => true,
            };
            match (&d.roce, &d.ip) {
                (Some(r), Some(ip))
                    if r.version == RoceVersion::V2 && d.tunnel.is_none() && straight =>
                {
                    roce += 1;
                    assert_eq!(got, lane_hash(ip.src, ip.dst), "{} frame {n}", f.display());
                }
                _ if d.pause.is_some() || d.arp.is_some() => {
                    zero += 1;
                    assert_eq!(got, 0, "{} frame {n}", f.display());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        });
    }
    assert!(
        roce > 1000 && zero > 0,
        "{frames} frames, {roce} RoCE v2, {zero} ARP / PAUSE"
    );
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// RoCE v2 frames (IPv4 behind 0-3 tags of any kind, IPv6) with a few bytes
        /// changed and cut anywhere: the program gives what the plain rules give.
        #[test]
        fn damaged_frames_route_as_the_rules_say(
            tags in 0usize..4,
            tpid in prop_oneof![Just(0x8100u16), Just(0x88a8), Just(0x9100), Just(0x0800)],
            v6 in any::<bool>(),
            edits in proptest::collection::vec((0usize..90, any::<u8>()), 0..4),
            cut in 0usize..100,
        ) {
            let mut f = if v6 {
                v6_frame(1, 2, 17)
            } else {
                v4_frame(tags, tpid, A, B, PORT)
            };
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            f.truncate(cut);
            let p = program(PORT);
            prop_assert_eq!(run(&p, &f), reference(&f, PORT), "{:02x?}", f);
        }
    }
}
