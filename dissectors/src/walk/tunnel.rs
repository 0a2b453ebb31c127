//! The walk through a mirror / overlay encapsulation: GRE (and ERSPAN in it) after an
//! outer IP header, VXLAN and Geneve after an outer UDP header. The outer headers go into
//! a [`Tunnel`]; the inner frame is then walked like any other, so `Decoded`'s ordinary
//! fields are the inner packet's. One level only: a tunnel inside a tunnel is
//! unsupported.

use super::*;
use crate::tunnel::{geneve, gre, vxlan, Tunnel, TunnelKind};

/// What follows a tunnel header.
#[derive(Clone, Copy)]
enum Inner {
    Ethernet,
    Ip(u16),
}

impl<'a> Walker<'a, '_> {
    /// The bytes `[off, end)` that were captured (a header may not run past the end the
    /// outer length fields declare).
    fn within(&self, off: usize, end: usize) -> &'a [u8] {
        let end = end.min(self.frame.len());
        self.frame.get(off..end).unwrap_or(&[])
    }

    /// GRE at `off` in an IP packet that ends at `end`; `outer` is that IP header.
    pub(super) fn gre(&self, d: &mut Decoded, outer: IpRepr, off: usize, end: usize) -> Stop {
        if d.tunnel.is_some() {
            return unsupported(Layer::Gre, off, "a tunnel inside a tunnel");
        }
        let g = match GreRepr::parse(self.within(off, end)) {
            Ok(g) => g,
            Err(e) => return self.fail(e, Layer::Gre, off),
        };
        let inner = off + g.header_len();
        let mut t = Tunnel::new(TunnelKind::Gre, outer, inner);
        t.gre = Some(g);
        let what = match g.protocol {
            gre::PROTO_ERSPAN_II if g.seq.is_none() => {
                t.kind = TunnelKind::ErspanI;
                Inner::Ethernet
            }
            gre::PROTO_ERSPAN_II | gre::PROTO_ERSPAN_III => {
                let e = match ErspanRepr::parse(self.within(inner, end)) {
                    Ok(e) => e,
                    Err(e) => return self.fail(e, Layer::Erspan, inner),
                };
                let want = if g.protocol == gre::PROTO_ERSPAN_II {
                    1
                } else {
                    2
                };
                if e.version != want {
                    return malformed(
                        Layer::Erspan,
                        inner,
                        "ERSPAN version does not match the GRE protocol type",
                    );
                }
                t.kind = if want == 1 {
                    TunnelKind::ErspanII
                } else {
                    TunnelKind::ErspanIII
                };
                t.erspan = Some(e);
                t.inner_offset = (inner + e.header_len()) as u32;
                Inner::Ethernet
            }
            gre::PROTO_TEB => Inner::Ethernet,
            p @ (ethernet::ETHERTYPE_IPV4 | ethernet::ETHERTYPE_IPV6) => Inner::Ip(p),
            _ => return unsupported(Layer::Gre, inner, "GRE protocol type"),
        };
        self.enter(d, t, what)
    }

    /// VXLAN or Geneve after the UDP header at `l4`, in a datagram ending at `end`.
    /// `None` when the port is neither.
    pub(super) fn udp_tunnel(
        &self,
        d: &mut Decoded,
        outer: IpRepr,
        u: UdpRepr,
        l4: usize,
        end: usize,
    ) -> Option<Stop> {
        if u.dst_port != vxlan::PORT && u.dst_port != geneve::PORT {
            return None;
        }
        let off = l4 + udp::LEN;
        let ulen = usize::from(u.length);
        if ulen < udp::LEN {
            return Some(malformed(
                Layer::Udp,
                l4,
                "UDP length shorter than its header",
            ));
        }
        let end = end.min(l4 + ulen);
        if d.tunnel.is_some() {
            return Some(unsupported(Layer::Udp, off, "a tunnel inside a tunnel"));
        }
        let b = self.within(off, end);
        let (t, what) = if u.dst_port == vxlan::PORT {
            let v = match VxlanRepr::parse(b) {
                Ok(v) => v,
                Err(e) => return Some(self.fail(e, Layer::Vxlan, off)),
            };
            let mut t = Tunnel::new(TunnelKind::Vxlan, outer, off + vxlan::LEN);
            t.vxlan = Some(v);
            (t, Inner::Ethernet)
        } else {
            let g = match GeneveRepr::parse(b) {
                Ok(g) => g,
                Err(e) => return Some(self.fail(e, Layer::Geneve, off)),
            };
            let mut t = Tunnel::new(TunnelKind::Geneve, outer, off + g.header_len());
            t.geneve = Some(g);
            let what = match g.protocol {
                gre::PROTO_TEB => Inner::Ethernet,
                p @ (ethernet::ETHERTYPE_IPV4 | ethernet::ETHERTYPE_IPV6) => Inner::Ip(p),
                _ => {
                    return Some(unsupported(
                        Layer::Geneve,
                        off + g.header_len(),
                        "Geneve protocol type",
                    ))
                }
            };
            (t, what)
        };
        Some(self.enter(d, t, what))
    }

    /// Moves the outer headers into `t` and walks the inner frame.
    fn enter(&self, d: &mut Decoded, mut t: Tunnel, what: Inner) -> Stop {
        t.outer_eth = d.eth.take();
        t.outer_udp = d.udp.take();
        d.ip = None;
        d.vlans = [None; 2];
        d.ethertype = None;
        let off = t.inner_offset as usize;
        d.tunnel = Some(t);
        match what {
            Inner::Ethernet => self.ethernet(d, off),
            Inner::Ip(p) => {
                d.ethertype = Some(p);
                self.ip(d, off)
            }
        }
    }
}
