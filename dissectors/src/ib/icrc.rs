//! Invariant CRC (IBTA 7.8.1, Annex A16/A17): CRC-32 (IEEE, as zlib) over the parts of
//! the packet that no switch or router may change, with the variant fields set to ones.
//!
//! RoCE v2 covers 8 bytes of 0xFF (standing in for the LRH), the IP header (IPv4 TOS,
//! TTL and checksum masked; IPv6 traffic class, flow label and hop limit masked), the
//! UDP header (checksum masked), the BTH (byte 4 — FECN, BECN, reserved — masked), the
//! extended headers, payload and pad. RoCE v1 covers the same 8 bytes of 0xFF, the GRH
//! (masked like IPv6) and the transport. Native InfiniBand covers the real LRH (VL
//! masked). The CRC is stored least-significant byte first. Everything is computed
//! incrementally from stack copies of the masked headers: no allocation.

use crc32fast::Hasher;

/// Result of checking a packet's ICRC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IcrcStatus {
    /// Computed and equal to the one in the packet.
    Ok,
    /// Computed and different.
    Bad,
    /// The capture's snaplen cut the packet, so it cannot be checked.
    Truncated,
    /// Not a packet with an ICRC (or not checked).
    #[default]
    Absent,
}

impl IcrcStatus {
    pub fn name(self) -> &'static str {
        match self {
            IcrcStatus::Ok => "ok",
            IcrcStatus::Bad => "bad",
            IcrcStatus::Truncated => "truncated",
            IcrcStatus::Absent => "absent",
        }
    }
}

const LRH_MASK: [u8; 8] = [0xff; 8];
const BTH_LEN: usize = super::bth::LEN;

fn feed_masked_bth(h: &mut Hasher, transport: &[u8]) {
    let mut bth = [0u8; BTH_LEN];
    let n = transport.len().min(BTH_LEN);
    bth[..n].copy_from_slice(&transport[..n]);
    bth[4] = 0xff;
    h.update(&bth[..n]);
    if transport.len() > BTH_LEN {
        h.update(&transport[BTH_LEN..]);
    }
}

fn feed_masked_ipv6(h: &mut Hasher, hdr: &[u8]) {
    let mut v6 = [0u8; 40];
    let n = hdr.len().min(40);
    v6[..n].copy_from_slice(&hdr[..n]);
    v6[0] |= 0x0f;
    v6[1] = 0xff;
    v6[2] = 0xff;
    v6[3] = 0xff;
    v6[7] = 0xff;
    h.update(&v6[..n]);
}

/// ICRC of a RoCE v2 packet. `ip_hdr` is the whole IP header (IPv4 with options, or the
/// 40-byte IPv6 header); `udp_to_pad` runs from the UDP header to the end of the pad
/// (the ICRC itself excluded).
pub fn roce_v2(ip_hdr: &[u8], udp_to_pad: &[u8]) -> u32 {
    let mut h = Hasher::new();
    h.update(&LRH_MASK);
    if ip_hdr.first().map(|b| b >> 4) == Some(6) {
        feed_masked_ipv6(&mut h, ip_hdr);
    } else {
        let mut v4 = [0u8; 60];
        let n = ip_hdr.len().min(60);
        v4[..n].copy_from_slice(&ip_hdr[..n]);
        v4[1] = 0xff; // TOS
        v4[8] = 0xff; // TTL
        v4[10] = 0xff; // header checksum
        v4[11] = 0xff;
        h.update(&v4[..n]);
    }
    let mut udp = [0u8; 8];
    let n = udp_to_pad.len().min(8);
    udp[..n].copy_from_slice(&udp_to_pad[..n]);
    udp[6] = 0xff;
    udp[7] = 0xff;
    h.update(&udp[..n]);
    if udp_to_pad.len() > 8 {
        feed_masked_bth(&mut h, &udp_to_pad[8..]);
    }
    h.finalize()
}

/// ICRC of a RoCE v1 packet: `grh` is the 40-byte GRH, `bth_to_pad` the transport.
pub fn roce_v1(grh: &[u8], bth_to_pad: &[u8]) -> u32 {
    let mut h = Hasher::new();
    h.update(&LRH_MASK);
    feed_masked_ipv6(&mut h, grh);
    feed_masked_bth(&mut h, bth_to_pad);
    h.finalize()
}

/// ICRC of a native InfiniBand packet: the LRH (VL masked), the optional GRH and the
/// transport.
pub fn infiniband(lrh: &[u8], grh: Option<&[u8]>, bth_to_pad: &[u8]) -> u32 {
    let mut h = Hasher::new();
    let mut l = [0u8; 8];
    let n = lrh.len().min(8);
    l[..n].copy_from_slice(&lrh[..n]);
    l[0] |= 0xf0;
    h.update(&l[..n]);
    if let Some(g) = grh {
        feed_masked_ipv6(&mut h, g);
    }
    feed_masked_bth(&mut h, bth_to_pad);
    h.finalize()
}

/// Reads the stored ICRC (least-significant byte first).
pub fn stored(b: &[u8]) -> Option<u32> {
    let s = b.get(..4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
