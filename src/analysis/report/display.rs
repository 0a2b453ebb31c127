//! Addresses and QPNs serialized as their `Display` text, written into a small buffer
//! rather than through `core::fmt` and `Serializer::collect_str`. serde_json's
//! `collect_str` runs every fragment of the formatting through an escaping adapter: with
//! 16,384 flows it was about 1,200 instructions a value, three values a flow. An IPv4
//! address and a QPN are written here by hand; every other address (IPv6, a LID) still
//! goes through `Display`, so the text is `Display`'s in every case (the tests hold the
//! hand-written forms to it).

use dissectors::{Addr, Qpn};
use serde::Serializer;
use std::net::IpAddr;

/// Room for the longest text written by hand: `255.255.255.255` and `0xffffffff`.
const ROOM: usize = 16;

/// ASCII text of at most [`ROOM`] bytes.
struct Text {
    b: [u8; ROOM],
    n: usize,
}

impl Text {
    fn new() -> Self {
        Text { b: [0; ROOM], n: 0 }
    }

    fn push(&mut self, c: u8) {
        if let Some(slot) = self.b.get_mut(self.n) {
            *slot = c;
            self.n += 1;
        }
    }

    /// `v` in decimal, without leading zeros.
    fn decimal(&mut self, v: u8) {
        if v >= 100 {
            self.push(b'0' + v / 100);
        }
        if v >= 10 {
            self.push(b'0' + v / 10 % 10);
        }
        self.push(b'0' + v % 10);
    }

    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.b.get(..self.n)?).ok()
    }
}

/// `a.b.c.d`, as `Ipv4Addr`'s `Display` writes it.
fn ipv4(o: [u8; 4]) -> Text {
    let mut t = Text::new();
    for (i, v) in o.into_iter().enumerate() {
        if i > 0 {
            t.push(b'.');
        }
        t.decimal(v);
    }
    t
}

/// `0x` and at least six lower-case hex digits, as `Qpn`'s `Display` writes it.
fn qpn_text(q: Qpn) -> Text {
    let mut t = Text::new();
    t.push(b'0');
    t.push(b'x');
    let digits = (8 - q.0.leading_zeros() as usize / 4).max(6);
    for k in (0..digits).rev() {
        let d = (q.0 >> (4 * k)) & 0xf;
        t.push(b"0123456789abcdef"[d as usize]);
    }
    t
}

/// Serializes an address as its `Display` text.
pub(super) fn addr<S: Serializer>(a: &Addr, s: S) -> Result<S::Ok, S::Error> {
    if let Addr::Ip(IpAddr::V4(v4)) = a {
        if let Some(text) = ipv4(v4.octets()).as_str() {
            return s.serialize_str(text);
        }
    }
    s.collect_str(a)
}

/// Serializes a QPN as its `Display` text.
pub(super) fn qpn<S: Serializer>(q: &Qpn, s: S) -> Result<S::Ok, S::Error> {
    match qpn_text(*q).as_str() {
        Some(text) => s.serialize_str(text),
        None => s.collect_str(q),
    }
}

/// Serializes a pair of QPNs as a list of their text.
pub(super) fn qpns<S: Serializer>(v: &[Qpn; 2], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().copied().map(AsQpn))
}

/// A QPN that serializes as its text ([`qpn`]).
struct AsQpn(Qpn);

impl serde::Serialize for AsQpn {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        qpn(&self.0, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn ipv4_text_is_display_s() {
        let mut cases = vec![[0; 4], [255; 4], [198, 18, 0, 1], [10, 0, 99, 100]];
        for v in [0u8, 1, 9, 10, 11, 99, 100, 101, 199, 200, 249, 250, 255] {
            cases.push([v, v.wrapping_add(1), 255 - v, v / 2]);
        }
        for o in cases {
            assert_eq!(
                ipv4(o).as_str(),
                Some(Ipv4Addr::from(o).to_string().as_str())
            );
        }
    }

    #[test]
    fn qpn_text_is_display_s() {
        for v in [
            0,
            1,
            0xf,
            0x10,
            0xabcdef,
            0xffffff,
            0x100_0000,
            0x1234_5678,
            u32::MAX,
        ] {
            let q = Qpn(v);
            assert_eq!(qpn_text(q).as_str(), Some(q.to_string().as_str()), "{v:#x}");
        }
    }

    #[test]
    fn every_address_serializes_as_its_display_text() {
        let addrs = [
            Addr::Ip(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 5))),
            Addr::Ip(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))),
            Addr::Ip(IpAddr::V6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped())),
            Addr::Lid(7),
        ];
        for a in addrs {
            let mut out = Vec::new();
            addr(&a, &mut serde_json::Serializer::new(&mut out)).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), format!("\"{a}\""));
        }
        let mut out = Vec::new();
        qpns(
            &[Qpn(0x12), Qpn(0xabcdef)],
            &mut serde_json::Serializer::new(&mut out),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"["0x000012","0xabcdef"]"#
        );
    }
}
