//! A netdev's DCB state from recorded tool output: the DSCP → priority map and trust mode
//! (`dcb app show dev IF`, `dcb apptrust show dev IF`, `mlnx_qos -i IF`) and the
//! PFC-enabled priorities (`dcb pfc show dev IF`, `mlnx_qos -i IF`). `netcheck --qos-from
//! DIR` reads `DIR/IF.dcb-app`, `IF.dcb-apptrust`, `IF.dcb-pfc` and `IF.mlnx_qos`, each
//! where present; what no file says stays unknown.
//!
//! The formats are the tools' documented output: iproute2's dcb-app(8) / dcb-pfc(8)
//! (`dscp-prio 0:0 CS3:3 26:3`, DSCPs by number or by their rt_dsfield name;
//! `prio-pfc 0:off 3:on`; `order pcp dscp`) and NVIDIA's mlnx_qos (`Priority trust state:
//! dscp`, `prio:3 dscp:31,30,...,24,`, `PFC configuration:` / `enabled 0 0 0 1 0 0 0 0`).
//! A line that claims one of those fields and does not parse is an error naming the file
//! and the line: a recorded file that says something else must not read as "unknown".

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A netdev's DCB state as the recorded outputs give it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Dcb {
    /// How the NIC classifies received packets: `dscp` or `pcp`; `None` when unknown.
    pub trust: Option<String>,
    /// DSCP → priority, for the DSCPs the outputs name.
    pub dscp_prio: BTreeMap<u8, u8>,
    /// PFC enabled, per priority 0-7; `None` when unknown.
    pub pfc: Option<[bool; 8]>,
    /// The files read.
    pub sources: Vec<String>,
}

/// A DSCP by number (0-63) or by its rt_dsfield name (`CS0`-`CS7`, `AF11`-`AF43`, `EF`,
/// `VA`, `LE`).
pub fn dscp(s: &str) -> Option<u8> {
    if let Ok(n) = s.parse::<u8>() {
        return (n < 64).then_some(n);
    }
    let u = s.to_ascii_uppercase();
    let b = u.as_bytes();
    match u.as_str() {
        "EF" => Some(46),
        "VA" => Some(44),
        "LE" => Some(1),
        _ if b.len() == 3 && u.starts_with("CS") && (b'0'..=b'7').contains(&b[2]) => {
            Some((b[2] - b'0') * 8)
        }
        _ if b.len() == 4
            && u.starts_with("AF")
            && (b'1'..=b'4').contains(&b[2])
            && (b'1'..=b'3').contains(&b[3]) =>
        {
            Some((b[2] - b'0') * 8 + (b[3] - b'0') * 2)
        }
        _ => None,
    }
}

fn prio(s: &str) -> Option<u8> {
    s.parse::<u8>().ok().filter(|p| *p < 8)
}

/// `dcb app show dev IF`: its `dscp-prio` entries (other lines are other selectors).
pub fn parse_dcb_app(text: &str, dcb: &mut Dcb) -> Result<(), DcbError> {
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("dscp-prio") {
            continue;
        }
        for e in w {
            let (d, p) = e
                .split_once(':')
                .and_then(|(d, p)| Some((dscp(d)?, prio(p)?)))
                .ok_or_else(|| DcbError::DscpPrioEntry(e.to_string()))?;
            dcb.dscp_prio.insert(d, p);
        }
    }
    Ok(())
}

/// `dcb apptrust show dev IF`: `order pcp dscp` — DSCP trust when `dscp` is listed.
pub fn parse_dcb_apptrust(text: &str, dcb: &mut Dcb) -> Result<(), DcbError> {
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("order") {
            continue;
        }
        let order: Vec<&str> = w.collect();
        dcb.trust = Some(
            if order.contains(&"dscp") {
                "dscp"
            } else {
                "pcp"
            }
            .to_string(),
        );
        return Ok(());
    }
    Err(DcbError::NoOrder)
}

/// `dcb pfc show dev IF`: `prio-pfc 0:off 1:off 2:off 3:on ...` (older iproute2 wrote
/// `pg-pfc`).
pub fn parse_dcb_pfc(text: &str, dcb: &mut Dcb) -> Result<(), DcbError> {
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if !matches!(w.next(), Some("prio-pfc" | "pg-pfc")) {
            continue;
        }
        let mut pfc = [false; 8];
        let mut seen = [false; 8];
        for e in w {
            let (p, on) = e
                .split_once(':')
                .and_then(|(p, v)| {
                    let on = match v {
                        "on" => true,
                        "off" => false,
                        _ => return None,
                    };
                    Some((prio(p)?, on))
                })
                .ok_or_else(|| DcbError::PrioPfcEntry(e.to_string()))?;
            pfc[usize::from(p)] = on;
            seen[usize::from(p)] = true;
        }
        if seen != [true; 8] {
            return Err(DcbError::PrioPfcIncomplete);
        }
        dcb.pfc = Some(pfc);
        return Ok(());
    }
    Err(DcbError::NoPrioPfc)
}

/// `mlnx_qos -i IF`: the trust state, the dscp2prio table and the PFC `enabled` row.
pub fn parse_mlnx_qos(text: &str, dcb: &mut Dcb) -> Result<(), DcbError> {
    let mut in_pfc = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t
            .strip_prefix("Priority trust state:")
            .or_else(|| t.strip_prefix("Priority trust mode:"))
        {
            let v = v.trim();
            if v != "dscp" && v != "pcp" {
                return Err(DcbError::TrustState(v.to_string()));
            }
            dcb.trust = Some(v.to_string());
        } else if let Some(rest) = t.strip_prefix("prio:") {
            // prio:3 dscp:31,30,29,28,27,26,25,24,
            let bad = || DcbError::Dscp2PrioLine(t.to_string());
            let (p, ds) = rest.split_once(char::is_whitespace).ok_or_else(bad)?;
            let p = prio(p).ok_or_else(bad)?;
            let ds = ds.trim().strip_prefix("dscp:").ok_or_else(bad)?;
            for d in ds.split(',').map(str::trim).filter(|d| !d.is_empty()) {
                dcb.dscp_prio.insert(dscp(d).ok_or_else(bad)?, p);
            }
        } else if t.starts_with("PFC configuration") {
            in_pfc = true;
        } else if in_pfc && t.starts_with("enabled") {
            let v: Vec<&str> = t.split_whitespace().skip(1).collect();
            let mut pfc = [false; 8];
            if v.len() != 8 {
                return Err(DcbError::PfcRowLength(v.len()));
            }
            for (i, x) in v.iter().enumerate() {
                pfc[i] = match *x {
                    "1" => true,
                    "0" => false,
                    _ => return Err(DcbError::PfcValue(x.to_string())),
                };
            }
            dcb.pfc = Some(pfc);
            in_pfc = false;
        }
    }
    Ok(())
}

/// The recorded outputs for `netdev` under `dir`, each file where present; `None` when
/// none is. Err names the file that does not parse.
pub fn load(dir: &Path, netdev: &str) -> Result<Option<Dcb>, DcbError> {
    type Parse = fn(&str, &mut Dcb) -> Result<(), DcbError>;
    let files: [(&str, Parse); 4] = [
        ("mlnx_qos", parse_mlnx_qos),
        ("dcb-app", parse_dcb_app),
        ("dcb-apptrust", parse_dcb_apptrust),
        ("dcb-pfc", parse_dcb_pfc),
    ];
    let mut dcb = Dcb::default();
    for (ext, parse) in files {
        let p = dir.join(format!("{netdev}.{ext}"));
        let text = match crate::sysfile::read(&p, crate::config::limits::TOOL_OUTPUT_BYTES) {
            Ok(t) => t,
            Err(e) if matches!(e.kind, crate::sysfile::Kind::Missing) => continue,
            Err(e) => return Err(DcbError::Read(e)),
        };
        parse(&text, &mut dcb).map_err(|e| DcbError::In {
            path: p.clone(),
            error: Box::new(e),
        })?;
        dcb.sources.push(p.display().to_string());
    }
    Ok((!dcb.sources.is_empty()).then_some(dcb))
}

/// Why a recorded DCB output was refused.
#[derive(Debug)]
pub enum DcbError {
    /// A `dscp-prio` entry that is not DSCP:PRIO.
    DscpPrioEntry(String),
    /// `dcb apptrust` without an `order` line.
    NoOrder,
    /// A `prio-pfc` entry that is not PRIO:on|off.
    PrioPfcEntry(String),
    /// A `prio-pfc` line that does not name all 8 priorities.
    PrioPfcIncomplete,
    /// `dcb pfc` without a `prio-pfc` line.
    NoPrioPfc,
    /// An `mlnx_qos` trust state other than dscp or pcp.
    TrustState(String),
    /// An `mlnx_qos` dscp2prio line that does not parse.
    Dscp2PrioLine(String),
    /// An `mlnx_qos` PFC `enabled` row without 8 values.
    PfcRowLength(usize),
    /// An `mlnx_qos` PFC `enabled` value other than 0 or 1.
    PfcValue(String),
    /// A file that exists but cannot be read.
    Read(crate::sysfile::FileError),
    /// One of the above, in the file `path`.
    In {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        error: Box<DcbError>,
    },
}

impl fmt::Display for DcbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DcbError::DscpPrioEntry(e) => write!(f, "bad dscp-prio entry {e:?} (want DSCP:PRIO)"),
            DcbError::NoOrder => f.write_str("no `order ...` line"),
            DcbError::PrioPfcEntry(e) => write!(f, "bad prio-pfc entry {e:?} (want PRIO:on|off)"),
            DcbError::PrioPfcIncomplete => f.write_str("prio-pfc does not name all 8 priorities"),
            DcbError::NoPrioPfc => f.write_str("no `prio-pfc ...` line"),
            DcbError::TrustState(v) => write!(f, "unknown trust state {v:?}"),
            DcbError::Dscp2PrioLine(t) => write!(f, "bad dscp2prio line {t:?}"),
            DcbError::PfcRowLength(n) => write!(f, "PFC `enabled` row has {n} values, not 8"),
            DcbError::PfcValue(x) => write!(f, "PFC `enabled` value {x:?} is not 0 or 1"),
            DcbError::Read(e) => write!(f, "{e}"),
            DcbError::In { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for DcbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DcbError::Read(e) => Some(e),
            DcbError::In { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_names() {
        for (s, d) in [
            ("0", 0),
            ("26", 26),
            ("CS3", 24),
            ("cs6", 48),
            ("AF31", 26),
            ("AF41", 34),
            ("AF43", 38),
            ("EF", 46),
        ] {
            assert_eq!(dscp(s), Some(d), "{s}");
        }
        for s in ["64", "CS8", "AF51", "AF14", "", "x", "-1"] {
            assert_eq!(dscp(s), None, "{s}");
        }
    }

    #[test]
    fn dcb_tools_outputs() {
        let mut d = Dcb::default();
        parse_dcb_app("default-prio 0\ndscp-prio 0:0 CS3:3 AF31:3 48:6\n", &mut d).unwrap();
        assert_eq!(
            d.dscp_prio,
            BTreeMap::from([(0, 0), (24, 3), (26, 3), (48, 6)])
        );
        parse_dcb_apptrust("order pcp dscp\n", &mut d).unwrap();
        assert_eq!(d.trust.as_deref(), Some("dscp"));
        parse_dcb_pfc(
            "pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n",
            &mut d,
        )
        .unwrap();
        assert_eq!(d.pfc.unwrap().map(u8::from), [0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn mlnx_qos_output() {
        let text = "DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n\
            \tprio:0 dscp:07,06,05,04,03,02,01,00,\n\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\
            \tprio:6 dscp:55,54,53,52,51,50,49,48,\nCable len: 7\nPFC configuration:\n\
            \tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n\
            \tbuffer      0   0   0   1   0   0   0   0\n";
        let mut d = Dcb::default();
        parse_mlnx_qos(text, &mut d).unwrap();
        assert_eq!(d.trust.as_deref(), Some("dscp"));
        assert_eq!(
            (d.dscp_prio[&26], d.dscp_prio[&0], d.dscp_prio[&48]),
            (3, 0, 6)
        );
        assert_eq!(d.dscp_prio.len(), 24);
        assert_eq!(d.pfc.unwrap().map(u8::from), [0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn hostile_outputs_are_errors_not_unknowns() {
        let mut d = Dcb::default();
        for bad in [
            "dscp-prio 26",
            "dscp-prio 99:3",
            "dscp-prio 26:9",
            "dscp-prio CS9:1",
        ] {
            assert!(parse_dcb_app(bad, &mut d).is_err(), "{bad}");
        }
        for bad in [
            "prio-pfc 0:maybe",
            "prio-pfc 0:on 1:off",
            "prio-pfc 9:on",
            "pfc-cap 8",
            "",
        ] {
            assert!(parse_dcb_pfc(bad, &mut d).is_err(), "{bad:?}");
        }
        for bad in [
            "Priority trust state: vlan",
            "prio:9 dscp:01,",
            "prio:1 dscp:77,",
            "prio:1 foo",
            "PFC configuration:\n enabled 0 0 1",
            "PFC configuration:\n enabled 0 0 0 2 0 0 0 0",
        ] {
            assert!(parse_mlnx_qos(bad, &mut d).is_err(), "{bad:?}");
        }
        assert!(parse_dcb_apptrust("nothing here", &mut d).is_err());
        // Binary junk is not text; a missing directory is "nothing recorded".
        let dir = std::env::temp_dir().join(format!("rocetap-dcb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("net1.dcb-pfc"), [0xff, 0xfe, 0]).unwrap();
        assert!(load(&dir, "net1")
            .unwrap_err()
            .to_string()
            .contains("not text"));
        assert_eq!(load(&dir, "net2").unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
