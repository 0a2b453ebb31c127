//! Mirror sessions: a capture of switch mirrors (ERSPAN, GRE, VXLAN, Geneve) holds several
//! capture points in one stream — each exporter's session, port and direction. The
//! analyzer follows the inner RoCE as usual and counts, per tap, the frames, RoCE
//! packets, bytes and the flows (source, destination, QP) it carried. Bounded: at most
//! [`MAX_MIRRORS`] taps (later ones count in `other`) and [`MAX_FLOWS`] flows kept per tap.
//! Merging capture points into one story is `analyze --tap`'s (`crate::taps`), which takes
//! one capture per tap.

use dissectors::{Addr, Decoded, TapId};
use rustc_hash::FxHashSet;
use serde::Serialize;

/// Taps followed one by one.
pub const MAX_MIRRORS: usize = 64;
/// Flows kept per tap.
pub const MAX_FLOWS: usize = 4096;

#[derive(Clone, Debug)]
struct Tap {
    id: TapId,
    frames: u64,
    roce_packets: u64,
    bytes: u64,
    flows: FxHashSet<(Addr, Addr, u32)>,
}

/// The taps seen so far.
#[derive(Clone, Debug, Default)]
pub struct Mirrors {
    list: Vec<Tap>,
    /// Frames of taps beyond [`MAX_MIRRORS`].
    other: u64,
}

/// One tap in the report.
#[derive(Clone, Debug, Serialize)]
pub struct MirrorSummary {
    /// `erspan1`, `erspan2`, `erspan3`, `gre`, `vxlan` or `geneve`.
    pub kind: &'static str,
    /// The exporter: the outer source address.
    pub exporter: String,
    /// ERSPAN session id, GRE key or VNI (0 when the encapsulation has none).
    pub session: u32,
    /// ERSPAN II index (source port) or ERSPAN III hardware id; 0 otherwise.
    pub port: u32,
    /// ERSPAN III direction: `ingress` or `egress`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<&'static str>,
    /// Frames of the session.
    pub frames: u64,
    /// RoCE packets among them.
    pub roce_packets: u64,
    /// Bytes of the inner frames (without the outer headers).
    pub bytes: u64,
    /// Flows (source, destination, DestQP) carried, up to [`MAX_FLOWS`] per tap, sorted.
    pub flows: Vec<String>,
}

impl Mirrors {
    /// Counts one tunnelled frame (the caller checked `d.tunnel`).
    pub fn see(&mut self, d: &Decoded) {
        let Some(t) = &d.tunnel else { return };
        let id = t.tap();
        let i = match self.list.iter().position(|x| x.id == id) {
            Some(i) => i,
            None if self.list.len() < MAX_MIRRORS => {
                self.list.push(Tap {
                    id,
                    frames: 0,
                    roce_packets: 0,
                    bytes: 0,
                    flows: FxHashSet::default(),
                });
                self.list.len() - 1
            }
            None => {
                self.other += 1;
                return;
            }
        };
        let tap = &mut self.list[i];
        tap.frames += 1;
        tap.bytes += u64::from(d.wire_len());
        if let (Some(r), Some((s, dst))) = (&d.roce, d.endpoints()) {
            tap.roce_packets += 1;
            if tap.flows.len() < MAX_FLOWS {
                tap.flows.insert((s, dst, r.bth.dest_qp.0));
            }
        }
    }

    /// Frames of taps beyond [`MAX_MIRRORS`].
    pub fn other(&self) -> u64 {
        self.other
    }

    /// Every tap, ordered by kind, exporter, session, port, direction.
    pub fn summaries(&self) -> Vec<MirrorSummary> {
        let mut v: Vec<&Tap> = self.list.iter().collect();
        v.sort_by_key(|t| t.id);
        v.into_iter()
            .map(|t| {
                let mut flows: Vec<_> = t.flows.iter().copied().collect();
                flows.sort();
                MirrorSummary {
                    kind: t.id.kind.name(),
                    exporter: t.id.exporter.to_string(),
                    session: t.id.session,
                    port: t.id.port,
                    direction: t.id.egress.map(|e| if e { "egress" } else { "ingress" }),
                    frames: t.frames,
                    roce_packets: t.roce_packets,
                    bytes: t.bytes,
                    flows: flows
                        .iter()
                        .map(|(s, d, qp)| format!("{s} → {d} 0x{qp:06x}"))
                        .collect(),
                }
            })
            .collect()
    }
}
