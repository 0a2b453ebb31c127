//! The text report's `Mirror sessions` section: one line per mirror session (ERSPAN, GRE,
//! VXLAN, Geneve) with its frames, RoCE packets and the flows it carried. Printed only for
//! a capture of switch mirrors; the sessions are followed together, not merged into one
//! story (that is `analyze --tap`, one capture per tap).

use crate::analysis::report::Report;
use std::io::{self, Write};

/// Flows listed per tap; the rest are counted.
const SHOWN: usize = 8;

pub(super) fn section(out: &mut impl Write, r: &Report) -> io::Result<()> {
    if r.mirrors.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "Mirror sessions (the analysis above follows them together):"
    )?;
    for t in &r.mirrors {
        let id = match t.kind {
            "vxlan" | "geneve" => format!("vni {}", t.session),
            "gre" if t.session != 0 => format!("key 0x{:08x}", t.session),
            "gre" | "erspan1" => String::new(),
            "erspan2" => format!("session {} index {}", t.session, t.port),
            _ => format!(
                "session {} hw {} {}",
                t.session,
                t.port,
                t.direction.unwrap_or("")
            ),
        };
        writeln!(
            out,
            "  {} from {} {}: {} frames, {} RoCE, {} flows",
            t.kind,
            t.exporter,
            id,
            t.frames,
            t.roce_packets,
            t.flows.len()
        )?;
        for f in t.flows.iter().take(SHOWN) {
            writeln!(out, "      {f}")?;
        }
        if t.flows.len() > SHOWN {
            writeln!(out, "      ... and {} more", t.flows.len() - SHOWN)?;
        }
    }
    if r.mirrors_other_frames > 0 {
        writeln!(
            out,
            "  {} frames of further sessions not listed",
            r.mirrors_other_frames
        )?;
    }
    Ok(())
}
