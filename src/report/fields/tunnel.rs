//! The mirror / overlay columns: the outer headers of a tunnelled frame (GRE, ERSPAN,
//! VXLAN, Geneve) under Wireshark's names (`gre.*`, `erspan.*`, `vxlan.*`, `geneve.*`),
//! and `rocetap.tunnel*` for the kind and the outer addresses. They are in `decode`'s
//! JSON and `-v` output, only for tunnelled frames; the CSV keeps its columns (adding
//! columns would change every CSV), so it shows the inner frame only.

use super::{Ctx, Extract, Value};
use dissectors::{ErspanRepr, GeneveRepr, GreRepr, Tunnel, VxlanRepr};
use std::fmt::Write as _;

fn gre(c: &Ctx<'_>) -> Option<GreRepr> {
    c.d.tunnel.and_then(|t| t.gre)
}
fn erspan(c: &Ctx<'_>) -> Option<ErspanRepr> {
    c.d.tunnel.and_then(|t| t.erspan)
}
fn erspan2(c: &Ctx<'_>) -> Option<ErspanRepr> {
    erspan(c).filter(|e| !e.is_type_iii())
}
fn erspan3(c: &Ctx<'_>) -> Option<ErspanRepr> {
    erspan(c).filter(ErspanRepr::is_type_iii)
}
fn vxlan(c: &Ctx<'_>) -> Option<VxlanRepr> {
    c.d.tunnel.and_then(|t| t.vxlan)
}
fn geneve(c: &Ctx<'_>) -> Option<GeneveRepr> {
    c.d.tunnel.and_then(|t| t.geneve)
}
fn int(v: impl Into<u64>) -> Value {
    Value::Int(v.into())
}
fn hex(v: impl Into<u64>, w: usize) -> Value {
    Value::Hex(v.into(), w)
}

/// The tunnel columns, in order.
pub const FIELDS: &[(&str, Extract)] = &[
    ("rocetap.tunnel", |c| {
        c.d.tunnel.map(|t| Value::Str(t.kind.name()))
    }),
    ("rocetap.tunnel.ip.src", |c| {
        c.d.tunnel.map(|t| Value::Ip(t.outer_ip.src))
    }),
    ("rocetap.tunnel.ip.dst", |c| {
        c.d.tunnel.map(|t| Value::Ip(t.outer_ip.dst))
    }),
    ("rocetap.tunnel.udp.srcport", |c| {
        c.d.tunnel
            .and_then(|t| t.outer_udp)
            .map(|u| int(u.src_port))
    }),
    ("gre.flags_and_version", |c| {
        gre(c).map(|g| hex(g.flags_and_version, 4))
    }),
    ("gre.proto", |c| gre(c).map(|g| hex(g.protocol, 4))),
    ("gre.checksum", |c| {
        gre(c).and_then(|g| g.checksum).map(|v| hex(v, 4))
    }),
    ("gre.key", |c| gre(c).and_then(|g| g.key).map(|v| hex(v, 8))),
    ("gre.sequence_number", |c| {
        gre(c).and_then(|g| g.seq).map(int)
    }),
    ("erspan.version", |c| erspan(c).map(|e| int(e.version))),
    ("erspan.vlan", |c| erspan(c).map(|e| int(e.vlan))),
    ("erspan.cos", |c| erspan(c).map(|e| int(e.cos))),
    ("erspan.encap", |c| erspan2(c).map(|e| int(e.encap_bso))),
    ("erspan.bso", |c| erspan3(c).map(|e| int(e.encap_bso))),
    ("erspan.truncated", |c| erspan(c).map(|e| int(e.truncated))),
    ("erspan.spanid", |c| erspan(c).map(|e| int(e.session))),
    ("erspan.index", |c| erspan2(c).map(|e| int(e.index))),
    ("erspan.timestamp", |c| erspan3(c).map(|e| int(e.timestamp))),
    ("erspan.sgt", |c| erspan3(c).map(|e| int(e.sgt))),
    ("erspan.p", |c| erspan3(c).map(|e| int(e.p))),
    ("erspan.ft", |c| erspan3(c).map(|e| int(e.ft))),
    ("erspan.hw", |c| erspan3(c).map(|e| int(e.hw_id))),
    ("erspan.direction", |c| {
        erspan3(c).map(|e| Value::Bool(e.egress))
    }),
    ("erspan.gra", |c| erspan3(c).map(|e| int(e.granularity))),
    ("erspan.o", |c| erspan3(c).map(|e| int(e.o))),
    ("erspan.platid", |c| {
        erspan3(c).and_then(|e| e.platform).map(|(id, _)| int(id))
    }),
    ("rocetap.erspan.platform_info", |c| {
        erspan3(c).and_then(|e| e.platform).map(|(_, v)| hex(v, 15))
    }),
    ("vxlan.flags", |c| vxlan(c).map(|v| hex(v.flags, 4))),
    ("vxlan.vni", |c| vxlan(c).map(|v| int(v.vni))),
    ("geneve.version", |c| geneve(c).map(|g| int(g.version))),
    ("geneve.flags.oam", |c| {
        geneve(c).map(|g| Value::Bool(g.oam))
    }),
    ("geneve.flags.critical", |c| {
        geneve(c).map(|g| Value::Bool(g.critical))
    }),
    ("geneve.proto_type", |c| {
        geneve(c).map(|g| hex(g.protocol, 4))
    }),
    ("geneve.vni", |c| geneve(c).map(|g| int(g.vni))),
    ("rocetap.geneve.options_len", |c| {
        geneve(c).map(|g| int(u32::from(g.opt_len) * 4))
    }),
];

/// The text summary's prefix for a tunnelled frame:
/// `[erspan3 198.51.100.1 → 198.51.100.2 session 7 hw 33 egress] `.
pub fn describe(t: &Tunnel, out: &mut String) {
    let _ = write!(
        out,
        "[{} {} → {}",
        t.kind.name(),
        t.outer_ip.src,
        t.outer_ip.dst
    );
    let _ = match (t.erspan, t.vxlan, t.geneve) {
        (Some(e), _, _) if e.is_type_iii() => write!(
            out,
            " session {} hw {} {}",
            e.session,
            e.hw_id,
            if e.egress { "egress" } else { "ingress" }
        ),
        (Some(e), _, _) => write!(out, " session {} index {}", e.session, e.index),
        (_, Some(v), _) => write!(out, " vni {}", v.vni),
        (_, _, Some(g)) => write!(out, " vni {}", g.vni),
        _ => match t.gre.and_then(|g| g.key) {
            Some(k) => write!(out, " key 0x{k:08x}"),
            None => Ok(()),
        },
    };
    out.push_str("] ");
}
