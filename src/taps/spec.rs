//! `--tap [NAME=]FILE[@SELECTOR]`: the taps of a merged analysis as the user names them,
//! parsed and checked once for every command that merges taps (`analyze`, `top`).
//!
//! A selector makes one mirror session of a collector's capture a tap of its own:
//! `FILE@erspan:7` (ERSPAN session 7, any type), `FILE@gre:KEY`, `FILE@vxlan:VNI`,
//! `FILE@geneve:VNI`, each optionally narrowed by `,in` / `,out` (ERSPAN III direction),
//! `,port=N` (ERSPAN II index, III hardware id) and `,from=ADDR` (the exporter). Its name
//! defaults to the identity (`erspan-7`, `erspan-7-out`, `vni-100`). `FILE@mirrors` is
//! every mirror session of the file that carries RoCE, one tap each, in path order by
//! first sighting (see [`from_mirrors`]).

use super::{Config, Tap, TapsError, MAX_TAPS};
use crate::capture::file::{ReadError, Reader};
use crate::capture::input;
use dissectors::{TapId, TunnelKind};
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Which mirror session of a capture is a tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Select {
    /// The encapsulation family.
    pub family: Family,
    /// ERSPAN session, GRE key or VNI.
    pub id: u32,
    /// ERSPAN III direction: `Some(true)` egress (`out`), `Some(false)` ingress (`in`).
    pub egress: Option<bool>,
    /// ERSPAN II index / III hardware id.
    pub port: Option<u32>,
    /// The exporter (outer source address).
    pub exporter: Option<IpAddr>,
}

/// The encapsulations a selector names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// ERSPAN type I, II or III.
    Erspan,
    /// GRE (gretap or IP), by key.
    Gre,
    /// VXLAN, by VNI.
    Vxlan,
    /// Geneve, by VNI.
    Geneve,
}

impl Family {
    fn of(k: TunnelKind) -> Family {
        match k {
            TunnelKind::ErspanI | TunnelKind::ErspanII | TunnelKind::ErspanIII => Family::Erspan,
            TunnelKind::Gre => Family::Gre,
            TunnelKind::Vxlan => Family::Vxlan,
            TunnelKind::Geneve => Family::Geneve,
        }
    }
    fn word(self) -> &'static str {
        match self {
            Family::Erspan => "erspan",
            Family::Gre => "gre",
            Family::Vxlan => "vxlan",
            Family::Geneve => "geneve",
        }
    }
}

impl Select {
    /// Whether a frame of mirror stream `t` belongs to this tap.
    pub fn matches(&self, t: &TapId) -> bool {
        Family::of(t.kind) == self.family
            && t.session == self.id
            && self.egress.is_none_or(|e| t.egress == Some(e))
            && self.port.is_none_or(|p| t.port == p)
            && self.exporter.is_none_or(|a| t.exporter == a)
    }

    /// The selector of exactly the mirror stream `t`.
    pub fn of(t: &TapId) -> Select {
        Select {
            family: Family::of(t.kind),
            id: t.session,
            egress: t.egress,
            port: (t.port != 0).then_some(t.port),
            exporter: Some(t.exporter),
        }
    }

    /// The default tap name: `erspan-7`, `erspan-7-p3-out`, `gre-5`, `vni-100`.
    pub fn name(&self) -> String {
        let mut s = match self.family {
            Family::Vxlan | Family::Geneve => format!("vni-{}", self.id),
            f => format!("{}-{}", f.word(), self.id),
        };
        if let Some(p) = self.port {
            s.push_str(&format!("-p{p}"));
        }
        match self.egress {
            Some(true) => s.push_str("-out"),
            Some(false) => s.push_str("-in"),
            None => {}
        }
        s
    }

    /// Parses the text after `@` (`erspan:7,out,port=3,from=198.51.100.1`).
    pub fn parse(s: &str) -> Result<Select, String> {
        let bad = || {
            format!(
                "selector @{s}: give erspan:ID, gre:KEY, vxlan:VNI or geneve:VNI, optionally ,in ,out ,port=N ,from=ADDR"
            )
        };
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        let family = match kind {
            "erspan" => Family::Erspan,
            "gre" => Family::Gre,
            "vxlan" => Family::Vxlan,
            "geneve" => Family::Geneve,
            _ => return Err(bad()),
        };
        let mut parts = rest.split(',');
        let id = parts
            .next()
            .and_then(|x| x.parse::<u32>().ok())
            .ok_or_else(bad)?;
        let mut sel = Select {
            family,
            id,
            egress: None,
            port: None,
            exporter: None,
        };
        for p in parts {
            match p {
                "in" => sel.egress = Some(false),
                "out" => sel.egress = Some(true),
                _ => {
                    if let Some(n) = p.strip_prefix("port=") {
                        sel.port = Some(n.parse().map_err(|_| bad())?);
                    } else if let Some(a) = p.strip_prefix("from=") {
                        sel.exporter = Some(a.parse().map_err(|_| bad())?);
                    } else {
                        return Err(bad());
                    }
                }
            }
        }
        Ok(sel)
    }
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.family.word(), self.id)?;
        match self.egress {
            Some(true) => f.write_str(",out")?,
            Some(false) => f.write_str(",in")?,
            None => {}
        }
        if let Some(p) = self.port {
            write!(f, ",port={p}")?;
        }
        if let Some(a) = self.exporter {
            write!(f, ",from={a}")?;
        }
        Ok(())
    }
}

/// What one `--tap` argument asks for.
enum Arg {
    One(Tap),
    /// `FILE@mirrors`: every mirror session of the file.
    Mirrors(PathBuf),
}

fn parse_one(t: &str) -> Result<Arg, String> {
    let (name, rest) = match t.split_once('=') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => (Some(n.to_string()), p),
        _ => (None, t),
    };
    // `FILE@KIND:...` or `FILE@mirrors`; an `@` in a file name is kept when what follows
    // is no selector word.
    let (path, select) = match rest.rsplit_once('@') {
        Some((p, "mirrors")) if !p.is_empty() => {
            if name.is_some() {
                return Err(format!(
                    "--tap {t}: @mirrors names its taps after the sessions: give no NAME="
                ));
            }
            return Ok(Arg::Mirrors(PathBuf::from(p)));
        }
        Some((p, sel))
            if !p.is_empty()
                && sel.split_once(':').is_some_and(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphabetic())
                }) =>
        {
            (PathBuf::from(p), Some(Select::parse(sel)?))
        }
        _ => (PathBuf::from(rest), None),
    };
    let name = name.unwrap_or_else(|| match &select {
        Some(s) => s.name(),
        None => path
            .file_stem()
            .map_or_else(|| t.to_string(), |s| s.to_string_lossy().into_owned()),
    });
    Ok(Arg::One(Tap { name, path, select }))
}

/// The merged analysis `--tap ARGS [--clocks-synced] [--tap-window SECONDS]` asks for,
/// checked (the window first: a typo must not cost reading a file).
pub fn config(
    cmd: &str,
    args: &[String],
    clocks_synced: bool,
    window_s: f64,
    dissect: dissectors::Config,
) -> Result<Config, String> {
    if !(window_s > 0.0 && window_s <= 3600.0) {
        return Err(format!(
            "{cmd}: --tap-window must be a positive number of seconds, at most 3600"
        ));
    }
    Ok(Config {
        taps: parse(cmd, args, &dissect)?,
        clocks_synced,
        window_ns: (window_s * 1e9) as u64,
        dissect,
    })
}

/// Every `--tap` argument parsed, `@mirrors` expanded (which reads that file), and the
/// whole checked: 2 to [`MAX_TAPS`] taps, files not stdin, names unique. Errors are one
/// line, prefixed with `cmd`.
pub fn parse(cmd: &str, args: &[String], dcfg: &dissectors::Config) -> Result<Vec<Tap>, String> {
    let mut taps: Vec<Tap> = Vec::new();
    for t in args {
        let arg = parse_one(t).map_err(|e| format!("{cmd}: {e}"))?;
        let path = match &arg {
            Arg::One(tap) => &tap.path,
            Arg::Mirrors(p) => p,
        };
        if path.as_os_str() == "-" {
            return Err(format!("{cmd}: a --tap must be a file, not stdin"));
        }
        match arg {
            Arg::One(tap) => taps.push(tap),
            Arg::Mirrors(p) => {
                taps.extend(from_mirrors(&p, dcfg).map_err(|e| format!("{cmd}: {e}"))?);
            }
        }
    }
    if !(2..=MAX_TAPS).contains(&taps.len()) {
        return Err(format!(
            "{cmd}: --tap needs 2 to {MAX_TAPS} taps, {} given",
            taps.len()
        ));
    }
    for (i, t) in taps.iter().enumerate() {
        if taps[..i].iter().any(|x| x.name == t.name) {
            return Err(format!(
                "{cmd}: two taps are named {}: give each a name, --tap NAME=FILE",
                crate::escape::term(&t.name)
            ));
        }
    }
    Ok(taps)
}

/// Every mirror session of `path` that carries RoCE, one tap each, named after its
/// identity, in path order by first sighting: a collector stamps every session with one
/// clock, so the session that saw the capture's first RoCE packet first is nearest its
/// sender, and the others follow in the order they saw that packet (sessions that never
/// saw it, after them by their first RoCE packet). More than [`MAX_TAPS`] sessions is an
/// error: pick them with `FILE@SELECTOR`.
pub fn from_mirrors(path: &Path, dcfg: &dissectors::Config) -> Result<Vec<Tap>, TapsError> {
    let shown = path.display().to_string();
    let e = |m: String| TapsError(format!("tap {}@mirrors: {m}", crate::escape::term(&shown)));
    let opened = input::open(path).map_err(|x| e(x.to_string()))?;
    let mut reader = match Reader::new(opened.reader) {
        Ok(r) => r,
        Err(ReadError::Empty) => return Err(e("no frames".into())),
        Err(x) => return Err(e(x.to_string())),
    };
    type Ident = (IpAddr, IpAddr, u32, u32, u8, u16);
    // Per session: (first RoCE packet, its sighting of the capture's first packet).
    let mut sessions: HashMap<TapId, (u64, Option<u64>)> = HashMap::new();
    let mut first: Option<Ident> = None;
    let mut too_many = false;
    loop {
        let step = reader.next_with(|fr| {
            let d = dissectors::decode(fr.link, fr.data, fr.orig_len, dcfg);
            let (t, ip, roce) = (d.tunnel?, d.ip?, d.roce?);
            let id: Ident = (
                ip.src,
                ip.dst,
                roce.bth.dest_qp.0,
                roce.bth.psn.0,
                roce.bth.opcode.0,
                ip.ident,
            );
            Some((t.tap(), id, fr.ts_ns))
        });
        match step {
            Ok(Some(Some((tap, id, ts)))) => {
                let f = *first.get_or_insert(id);
                if !sessions.contains_key(&tap) && sessions.len() == MAX_TAPS {
                    too_many = true;
                    continue;
                }
                let s = sessions.entry(tap).or_insert((ts, None));
                if id == f && s.1.is_none() {
                    s.1 = Some(ts);
                }
            }
            Ok(Some(None)) => {}
            Ok(None) | Err(ReadError::Truncated { .. }) => break,
            Err(x) => return Err(e(x.to_string())),
        }
    }
    if too_many {
        return Err(e(format!(
            "more than {MAX_TAPS} mirror sessions carry RoCE: pick them, --tap FILE@erspan:ID ..."
        )));
    }
    if sessions.len() < 2 {
        return Err(e(format!(
            "{} mirror sessions carry RoCE: at least 2 are needed",
            sessions.len()
        )));
    }
    let mut v: Vec<(TapId, (u64, Option<u64>))> = sessions.into_iter().collect();
    v.sort_by_key(|(id, (t0, saw))| (saw.is_none(), saw.unwrap_or(*t0), *t0, *id));
    let ids: Vec<TapId> = v.into_iter().map(|(id, _)| id).collect();
    Ok(name_sessions(&ids)
        .into_iter()
        .zip(&ids)
        .map(|(name, id)| Tap {
            name,
            path: path.to_path_buf(),
            select: Some(Select::of(id)),
        })
        .collect())
}

/// Names for sessions: their identity, with the exporter added where two would share
/// one.
fn name_sessions(ids: &[TapId]) -> Vec<String> {
    let base: Vec<String> = ids.iter().map(|id| Select::of(id).name()).collect();
    base.iter()
        .zip(ids)
        .map(|(b, id)| {
            if base.iter().filter(|x| *x == b).count() > 1 {
                format!("{b}-{}", id.exporter)
            } else {
                b.clone()
            }
        })
        .collect()
}
