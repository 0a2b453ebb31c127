//! Reading the taps: each capture's RoCE packets as [`Sight`]s, the clocks' offsets
//! estimated from the first packets the taps share, and one merged pass in time order
//! through the [`Matcher`].

use super::matcher::{Matcher, Sight, MAX_TAPS};
use super::{Config, DirKey, Report};
use crate::capture::file::{ReadError, Reader};
use crate::capture::input;
use dissectors::ib::aeth::{AethKind, NakCode};
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

/// Packets of each tap compared to estimate its clock offset.
const OFFSET_PACKETS: usize = 4096;

/// How far past the first packet both saw tap 0 is searched for the rest of them.
const SEARCH_AFTER_FIRST: usize = 4 * OFFSET_PACKETS;

/// Why the taps could not be merged.
#[derive(Debug)]
pub struct TapsError(pub String);

impl fmt::Display for TapsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TapsError {}

/// One tap's packets, in its own order.
struct TapReader {
    reader: Option<Reader<'static>>,
    tap: usize,
    name: String,
    frames: u64,
    cut_short: bool,
    dcfg: dissectors::Config,
    select: Option<super::Select>,
}

impl TapReader {
    fn open(cfg: &Config, tap: usize) -> Result<Self, TapsError> {
        let t = &cfg.taps[tap];
        let opened = input::open(&t.path).map_err(|e| TapsError(format!("tap {}: {e}", t.name)))?;
        let reader = match Reader::new(opened.reader) {
            Ok(r) => Some(r),
            // An empty file is a tap that saw nothing: reported, not an error.
            Err(ReadError::Empty) => None,
            Err(e) => return Err(TapsError(format!("tap {}: {e}", t.name))),
        };
        Ok(TapReader {
            reader,
            tap,
            name: t.name.clone(),
            frames: 0,
            cut_short: false,
            dcfg: cfg.dissect,
            select: t.select,
        })
    }

    /// The next RoCE packet (its `at` still the tap's own clock).
    fn next(&mut self) -> Result<Option<Sight>, TapsError> {
        loop {
            let Some(r) = self.reader.as_mut() else {
                return Ok(None);
            };
            let (tap, dcfg, select) = (self.tap, self.dcfg, self.select);
            match r.next_with(|fr| sight(fr, tap, &dcfg, select.as_ref())) {
                Ok(Some((mine, s))) => {
                    self.frames += u64::from(mine);
                    if s.is_some() {
                        return Ok(s);
                    }
                }
                Ok(None) => {
                    self.reader = None;
                    return Ok(None);
                }
                Err(ReadError::Truncated { .. }) => {
                    self.cut_short = true;
                    self.reader = None;
                    return Ok(None);
                }
                Err(e) => return Err(TapsError(format!("tap {}: {e}", self.name))),
            }
        }
    }
}

/// Whether a frame is the tap's (of its mirror session, with a selector), and its RoCE
/// v2 packet as a sighting (None for anything else).
fn sight(
    fr: &crate::capture::Frame<'_>,
    tap: usize,
    dcfg: &dissectors::Config,
    select: Option<&super::Select>,
) -> (bool, Option<Sight>) {
    let d = dissectors::decode(fr.link, fr.data, fr.orig_len, dcfg);
    if let Some(sel) = select {
        if !d.tunnel.is_some_and(|t| sel.matches(&t.tap())) {
            return (false, None);
        }
    }
    (true, roce_sight(&d, fr.ts_ns, tap))
}

fn roce_sight(d: &dissectors::Decoded, ts_ns: u64, tap: usize) -> Option<Sight> {
    let ip = d.ip?;
    let roce = d.roce?;
    let nak = roce
        .aeth
        .is_some_and(|a| matches!(a.kind(), AethKind::Nak(NakCode::PsnSequenceError)));
    Some(Sight {
        tap,
        ts_ns,
        at: ts_ns.min(i64::MAX as u64) as i64,
        dir: DirKey {
            src: ip.src,
            dst: ip.dst,
            qpn: roce.bth.dest_qp.0,
        },
        psn: roce.bth.psn.0,
        opcode: roce.bth.opcode.0,
        ident: ip.ident,
        nak,
        len: match (roce.bth.opcode.0, roce.reth) {
            (0x0c, Some(r)) => r.dma_len,
            _ => roce.payload_len,
        },
    })
}

/// Each tap's clock offset to the first tap's: zero with synchronised clocks, else
/// bounded from the first packets both saw, as NTP does: a packet of the near host passes
/// tap 0 first, so its timestamp difference (tap − tap 0) is the offset plus a one-way
/// delay, an upper bound; a packet of the far host passes tap 0 last, its difference is
/// the offset minus a delay, a lower bound. The offset is the middle of the tightest
/// bounds (the smallest forward difference, the largest backward one), or the one bound
/// where only one direction is shared. (A median difference put about half of the
/// packets at a later tap before their sighting at an earlier one, and a packet lost
/// between the taps was then judged after the packet that followed it.) Every packet of
/// tap i's first [`OFFSET_PACKETS`] that tap 0 saw tightens the bounds. The first 256
/// alone left them 15.8 ms apart in `samples/taps/switch-write-s-long` (0.9 ms with all
/// 3,713): their middle put B's sightings 1.2 ms before A's, a packet lost between the
/// taps after the one that followed it, and 33 packets "lost before A" that A had sent
/// past its tap.
fn offsets(cfg: &Config) -> Result<Vec<i64>, TapsError> {
    let mut out = vec![0i64; cfg.taps.len()];
    if cfg.clocks_synced || one_clock(cfg) {
        return Ok(out);
    }
    for (i, o) in out.iter_mut().enumerate().skip(1) {
        // Tap i's first packets, looked for in tap 0 from its start (which may have
        // started long before tap i): memory for OFFSET_PACKETS, whatever the files.
        let other = firsts(cfg, i)?;
        let mut r0 = TapReader::open(cfg, 0)?;
        let mut found = std::collections::HashSet::new();
        let mut near: HashMap<(IpAddr, IpAddr), IpAddr> = HashMap::new();
        let (mut upper, mut lower): (Option<i64>, Option<i64>) = (None, None);
        // Tap 0's packets read since the first both saw: tap i's first packets lie among
        // the next few of tap 0's, unless tap 0 missed them or never sees them.
        let mut after_first = 0usize;
        while found.len() < other.len() && after_first < SEARCH_AFTER_FIRST {
            let Some(s) = r0.next()? else { break };
            if !found.is_empty() {
                after_first += 1;
            }
            let (a, b) = (s.dir.src.min(s.dir.dst), s.dir.src.max(s.dir.dst));
            let near_src = *near.entry((a, b)).or_insert(s.dir.src);
            let k = (s.dir, s.psn, s.opcode, s.ident);
            if let Some(t) = other.get(&k) {
                if found.insert(k) {
                    let d = t.saturating_sub(s.at);
                    if near_src == s.dir.src {
                        upper = Some(upper.map_or(d, |u| u.min(d)));
                    } else {
                        lower = Some(lower.map_or(d, |l| l.max(d)));
                    }
                }
            }
        }
        *o = match (upper, lower) {
            (Some(u), Some(l)) => l / 2 + u / 2 + (l % 2 + u % 2) / 2,
            (Some(u), None) => u,
            (None, Some(l)) => l,
            (None, None) => 0,
        };
    }
    Ok(out)
}

/// Every tap a mirror session of one file: the collector's one clock.
fn one_clock(cfg: &Config) -> bool {
    cfg.taps
        .iter()
        .all(|t| t.select.is_some() && t.path == cfg.taps[0].path)
}

type Ident = (DirKey, u32, u8, u16);

fn firsts(cfg: &Config, tap: usize) -> Result<HashMap<Ident, i64>, TapsError> {
    let mut r = TapReader::open(cfg, tap)?;
    let mut m = HashMap::new();
    while m.len() < OFFSET_PACKETS {
        let Some(s) = r.next()? else { break };
        m.entry((s.dir, s.psn, s.opcode, s.ident)).or_insert(s.at);
    }
    Ok(m)
}

/// Reads every tap and returns the merged analysis.
pub fn run(cfg: &Config) -> Result<Report, TapsError> {
    let n = cfg.taps.len();
    if !(2..=MAX_TAPS).contains(&n) {
        return Err(TapsError(format!(
            "--tap needs 2 to {MAX_TAPS} taps, {n} given"
        )));
    }
    let offsets = offsets(cfg)?;
    let names: Vec<String> = cfg.taps.iter().map(|t| t.name.clone()).collect();
    let mut m = Matcher::new(&names, cfg.window_ns, cfg.clocks_synced);
    let mut readers = (0..n)
        .map(|i| TapReader::open(cfg, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut heads: Vec<Option<Sight>> = Vec::with_capacity(n);
    for (i, r) in readers.iter_mut().enumerate() {
        heads.push(r.next()?.map(|s| shift(s, offsets[i])));
        if heads[i].is_none() {
            m.tap_ended(i);
        }
    }
    while let Some(i) = (0..n)
        .filter(|&i| heads[i].is_some())
        .min_by_key(|&i| heads[i].map(|s| s.at))
    {
        let s = heads[i].take().expect("chosen above");
        m.feed(s);
        heads[i] = readers[i].next()?.map(|s| shift(s, offsets[i]));
        if heads[i].is_none() {
            m.tap_ended(i);
        }
    }
    for (i, r) in readers.iter().enumerate() {
        let t = m.tap_mut(i);
        t.frames = r.frames;
        t.cut_short = r.cut_short;
        t.capture_dropped = super::isb::dropped(&cfg.taps[i].path);
        t.mirror = cfg.taps[i].select;
    }
    Ok(m.finish(&offsets))
}

fn shift(mut s: Sight, offset: i64) -> Sight {
    s.at = s.at.saturating_sub(offset);
    s
}
