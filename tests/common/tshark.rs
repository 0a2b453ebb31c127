//! What tshark and rocetap both name of a mirror's outer layers, and reading tshark's
//! `-T fields` values next to rocetap's `decode -F json` ones.

/// The outer fields tshark and rocetap both name (and the inner PSN, to keep the frames
/// aligned).
pub const OUTER_FIELDS: &[&str] = &[
    "gre.flags_and_version",
    "gre.proto",
    "gre.checksum",
    "gre.key",
    "gre.sequence_number",
    "erspan.version",
    "erspan.vlan",
    "erspan.cos",
    "erspan.encap",
    "erspan.bso",
    "erspan.truncated",
    "erspan.spanid",
    "erspan.index",
    "erspan.timestamp",
    "erspan.sgt",
    "erspan.p",
    "erspan.ft",
    "erspan.hw",
    "erspan.direction",
    "erspan.gra",
    "erspan.o",
    "erspan.platid",
    "vxlan.flags",
    "vxlan.vni",
    "geneve.version",
    "geneve.flags.oam",
    "geneve.flags.critical",
    "geneve.proto_type",
    "geneve.vni",
    "infiniband.bth.psn",
];

/// A field as an integer: decimal, `0x` hex, a JSON number or boolean.
pub fn int_of(s: &str) -> Option<u64> {
    match s {
        "" => None,
        "true" | "True" => Some(1),
        "false" | "False" => Some(0),
        _ => match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        },
    }
}

pub fn json_field(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
