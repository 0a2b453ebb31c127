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
/// The masked invariant prefix of a RoCE v2 packet: 8 x 0xFF, an IPv4 header with
/// options (at most 60) or IPv6 (40), UDP (8) and BTH (12).
const V2_PREFIX_MAX: usize = 8 + 60 + 8 + BTH_LEN;

/// A fresh hasher. crc32fast picks its implementation (SIMD or table) on every
/// `Hasher::new`; cloning one made once skips that per packet.
fn hasher() -> Hasher {
    static PROTO: std::sync::OnceLock<Hasher> = std::sync::OnceLock::new();
    PROTO.get_or_init(Hasher::new).clone()
}

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
    mask_ipv6(&mut v6);
    h.update(&v6[..n]);
}

fn mask_ipv6(v6: &mut [u8]) {
    v6[0] |= 0x0f;
    v6[1] = 0xff;
    v6[2] = 0xff;
    v6[3] = 0xff;
    v6[7] = 0xff;
}

/// ICRC of a RoCE v2 packet. `ip_hdr` is the whole IP header (IPv4 with options, or the
/// 40-byte IPv6 header); `udp_to_pad` runs from the UDP header to the end of the pad
/// (the ICRC itself excluded). The masked headers are assembled in one stack buffer so
/// the CRC runs over two slices only.
pub fn roce_v2(ip_hdr: &[u8], udp_to_pad: &[u8]) -> u32 {
    let mut buf = [0u8; V2_PREFIX_MAX];
    buf[..8].copy_from_slice(&LRH_MASK);
    let ip_len = ip_hdr.len().min(60);
    let ip = &mut buf[8..8 + ip_len];
    ip.copy_from_slice(&ip_hdr[..ip_len]);
    if ip_hdr.first().map(|b| b >> 4) == Some(6) {
        if ip_len >= 8 {
            mask_ipv6(ip);
        }
    } else if ip_len >= 12 {
        ip[1] = 0xff; // TOS
        ip[8] = 0xff; // TTL
        ip[10] = 0xff; // header checksum
        ip[11] = 0xff;
    }
    let l4 = 8 + ip_len;
    let head = udp_to_pad.len().min(8 + BTH_LEN);
    buf[l4..l4 + head].copy_from_slice(&udp_to_pad[..head]);
    if head >= 8 {
        buf[l4 + 6] = 0xff; // UDP checksum
        buf[l4 + 7] = 0xff;
    }
    if head > 8 + 4 {
        buf[l4 + 8 + 4] = 0xff; // BTH FECN, BECN, resv6
    }
    let mut h = hasher();
    h.update(&buf[..l4 + head]);
    h.update(&udp_to_pad[head..]);
    h.finalize()
}

/// ICRC of a RoCE v1 packet: `grh` is the 40-byte GRH, `bth_to_pad` the transport.
pub fn roce_v1(grh: &[u8], bth_to_pad: &[u8]) -> u32 {
    let mut h = hasher();
    h.update(&LRH_MASK);
    feed_masked_ipv6(&mut h, grh);
    feed_masked_bth(&mut h, bth_to_pad);
    h.finalize()
}

/// ICRC of a native InfiniBand packet: the LRH (VL masked), the optional GRH and the
/// transport.
pub fn infiniband(lrh: &[u8], grh: Option<&[u8]>, bth_to_pad: &[u8]) -> u32 {
    let mut h = hasher();
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

/// The ICRC of a packet whose bytes `old` (covered by the ICRC, not a masked field) were
/// replaced by `new`, from the ICRC it had: `stored` stays right (or wrong) exactly as it
/// was. `after` is how many covered bytes follow the changed ones, up to the ICRC. The
/// CRC is affine, so only the difference is hashed: no other byte of the packet is read.
/// `None` when the lengths differ or `after` is over 64 bytes.
pub fn patched(stored: u32, old: &[u8], new: &[u8], after: usize) -> Option<u32> {
    const ZEROS: [u8; 64] = [0; 64];
    if old.len() != new.len() || old.len() > ZEROS.len() || after > ZEROS.len() {
        return None;
    }
    let mut d = [0u8; 64];
    for (i, (a, b)) in old.iter().zip(new).enumerate() {
        d[i] = a ^ b;
    }
    let mut h = hasher();
    h.update(&d[..old.len()]);
    h.update(&ZEROS[..after]);
    let mut z = hasher();
    z.update(&ZEROS[..old.len()]);
    z.update(&ZEROS[..after]);
    Some(stored ^ h.finalize() ^ z.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-buffer RoCE v2 ICRC equals the CRC of the spec's masked byte string,
    /// built here the slow, obvious way, for IPv4 (with options) and IPv6.
    #[test]
    fn roce_v2_equals_the_masked_crc() {
        let v4: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(37)).collect();
        let mut v4 = v4;
        v4[0] = 0x46; // IHL 6: one option word
        let mut v6 = [0x6au8; 40];
        v6[0] = 0x6b;
        let udp_to_pad: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(91)).collect();
        for ip in [&v4[..], &v6[..]] {
            let mut m = vec![0xffu8; 8];
            let mut i = ip.to_vec();
            if ip[0] >> 4 == 6 {
                i[0] |= 0x0f;
                i[1..4].fill(0xff);
                i[7] = 0xff;
            } else {
                i[1] = 0xff;
                i[8] = 0xff;
                i[10] = 0xff;
                i[11] = 0xff;
            }
            m.extend_from_slice(&i);
            // Every length, shorter than UDP + BTH (a cut or tiny packet) too.
            for n in 0..=udp_to_pad.len() {
                let mut u = udp_to_pad[..n].to_vec();
                if n >= 8 {
                    u[6..8].fill(0xff); // UDP checksum, once the UDP header is whole
                }
                if n > 12 {
                    u[12] = 0xff; // BTH byte 4
                }
                let mut want = m.clone();
                want.extend_from_slice(&u);
                assert_eq!(roce_v2(ip, &udp_to_pad[..n]), crc32fast::hash(&want), "{n}");
            }
        }
    }

    /// Patching the ICRC for changed bytes gives the ICRC of the changed packet, and a
    /// wrong ICRC stays wrong by the same bits.
    #[test]
    fn patched_equals_the_recomputed_icrc() {
        let ip: Vec<u8> = (0..20u8).map(|i| i.wrapping_mul(13)).collect();
        let mut ip = ip;
        ip[0] = 0x45;
        let u: Vec<u8> = (0..48u8).map(|i| i.wrapping_mul(71)).collect();
        let before = roce_v2(&ip, &u);
        let mut v = u.clone();
        v[20..36].copy_from_slice(&[0x5a; 16]);
        let after = roce_v2(&ip, &v);
        assert_eq!(patched(before, &u[20..36], &v[20..36], 12), Some(after));
        assert_eq!(
            patched(before ^ 1, &u[20..36], &v[20..36], 12),
            Some(after ^ 1)
        );
        assert_eq!(patched(before, &u[20..36], &v[20..35], 12), None);
    }
}
