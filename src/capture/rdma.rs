//! The one sysfs reader for RDMA devices (`<sysfs>/class/infiniband/<dev>`): ports, their
//! state, link layer and active MTU, the netdevs behind them, the GID table with RoCE v1 /
//! v2 types (what `show_gids` reads) and the `hw_counters`. `rocetap interfaces` lists
//! them, `capture` explains why an RDMA device cannot be captured from, `top` shows the
//! counters, `netcheck` checks RoCE readiness. The sysfs directory (`/sys`, or
//! `--sysfs-root`) is a parameter so tests can build a fake tree.
//!
//! Every file is read through [`crate::sysfile`] (bounded, regular files only). A file
//! that is missing or holds no value (sysfs returns EINVAL for unused GID entries) is
//! simply absent from the result; one that cannot be read (a FIFO, a device, longer than
//! `config::limits::SYSFS_FILE_BYTES`, a counter that is no number) is named in
//! [`RdmaDevice::unreadable`] or is the error of [`read_counters`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One entry of a port's GID table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gid {
    /// Index in the table.
    pub index: u32,
    /// The GID as sysfs writes it (eight groups of four hex digits).
    pub gid: String,
    /// "RoCE v2", "IB/RoCE v1".
    pub kind: Option<String>,
    /// The netdev the GID is bound to.
    pub ndev: Option<String>,
}

/// One port of an RDMA device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Port {
    /// Port number (from 1).
    pub number: u32,
    /// "ACTIVE", "DOWN" (the text after "4: ").
    pub state: Option<String>,
    /// The state file as sysfs words it ("4: ACTIVE").
    pub state_line: Option<String>,
    /// "Ethernet" (RoCE) or "InfiniBand".
    pub link_layer: Option<String>,
    /// The IB MTU in use (`active_mtu`, "1024 (3)" read as 1024).
    pub active_mtu: Option<u32>,
    /// The GID table, zero entries left out.
    pub gids: Vec<Gid>,
    /// All-zero (unused) entries of the GID table: an application given one of their
    /// indices has no source GID.
    pub zero_gids: u32,
}

/// An RDMA device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdmaDevice {
    /// Its name (`mlx5_0`).
    pub name: String,
    /// Its ports, by number.
    pub ports: Vec<Port>,
    /// Netdevs of the device (`device/net/*`) and of its GIDs, sorted, no duplicates.
    pub netdevs: Vec<String>,
    /// The files of the device that exist but could not be read, each as a one-line error
    /// naming the file (see [`crate::sysfile::FileError`]).
    pub unreadable: Vec<String>,
}

fn class_dir(root: &Path) -> PathBuf {
    root.join("class/infiniband")
}

/// The trimmed value of `p`; a file that cannot be read is noted in `bad` and absent.
fn read_trim(p: &Path, bad: &mut Vec<String>) -> Option<String> {
    crate::sysfile::value(p).unwrap_or_else(|e| {
        bad.push(e.to_string());
        None
    })
}

fn sorted_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort_by(|a, b| match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    });
    v
}

/// Splits `mlx5_0:2` into the device and port; `None` when `name` is no RDMA device.
pub fn parse_name(root: &Path, name: &str) -> Option<(String, Option<u32>)> {
    let (dev, port) = match name.rsplit_once(':') {
        Some((d, p)) if p.parse::<u32>().is_ok() => (d, p.parse().ok()),
        _ => (name, None),
    };
    if dev.is_empty() || dev.contains('/') || !class_dir(root).join(dev).is_dir() {
        return None;
    }
    Some((dev.to_string(), port))
}

/// Every RDMA device under `root`, by name.
pub fn list(root: &Path) -> Vec<RdmaDevice> {
    sorted_entries(&class_dir(root))
        .into_iter()
        .filter_map(|n| device(root, &n))
        .collect()
}

/// One RDMA device.
pub fn device(root: &Path, name: &str) -> Option<RdmaDevice> {
    let dir = class_dir(root).join(name);
    if !dir.is_dir() {
        return None;
    }
    let mut netdevs = sorted_entries(&dir.join("device/net"));
    let mut ports = Vec::new();
    let mut bad = Vec::new();
    for p in sorted_entries(&dir.join("ports")) {
        let Ok(number) = p.parse::<u32>() else {
            continue;
        };
        let pd = dir.join("ports").join(&p);
        let state_line = read_trim(&pd.join("state"), &mut bad);
        let state = state_line
            .as_ref()
            .map(|s| s.split_once(": ").map_or(s.clone(), |(_, t)| t.to_string()));
        let mut gids = Vec::new();
        let mut zero_gids = 0;
        for g in sorted_entries(&pd.join("gids")) {
            let Ok(index) = g.parse::<u32>() else {
                continue;
            };
            let Some(gid) = read_trim(&pd.join("gids").join(&g), &mut bad) else {
                continue;
            };
            if gid.chars().all(|c| c == '0' || c == ':') {
                zero_gids += 1;
                continue;
            }
            let ndev = read_trim(&pd.join("gid_attrs/ndevs").join(&g), &mut bad);
            if let Some(n) = &ndev {
                netdevs.push(n.clone());
            }
            gids.push(Gid {
                index,
                gid,
                kind: read_trim(&pd.join("gid_attrs/types").join(&g), &mut bad),
                ndev,
            });
        }
        ports.push(Port {
            number,
            state,
            state_line,
            link_layer: read_trim(&pd.join("link_layer"), &mut bad),
            active_mtu: read_trim(&pd.join("active_mtu"), &mut bad)
                .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok())),
            gids,
            zero_gids,
        });
    }
    netdevs.sort();
    netdevs.dedup();
    Some(RdmaDevice {
        name: name.to_string(),
        ports,
        netdevs,
        unreadable: bad,
    })
}

/// The directory of a port's `hw_counters`.
pub fn counters_dir(root: &Path, dev: &str, port: u32) -> PathBuf {
    class_dir(root)
        .join(dev)
        .join("ports")
        .join(port.to_string())
        .join("hw_counters")
}

/// Every counter in `dir` (see [`counters_dir`]), by name; one with no value is left
/// out. Err names the first counter file that cannot be read or is no number: a counter
/// that cannot be read must not pass for a clean one.
pub fn read_counters(dir: &Path) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for name in sorted_entries(dir) {
        let p = dir.join(&name);
        let Some(v) = crate::sysfile::value(&p).map_err(|e| e.to_string())? else {
            continue;
        };
        let n = v
            .parse()
            .map_err(|_| format!("{}: not a counter value", p.display()))?;
        out.insert(name, n);
    }
    Ok(out)
}

/// The note every capture from an RDMA device carries.
pub const SNIFFER_NOTE: &str = "captured from an RDMA device through the libpcap RDMA sniffer, \
which never reports drops: a PSN gap without a NAK may be capture loss, not network loss";

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a fake sysfs tree with one mlx5 device (two GIDs on port 1) under `root`.
    pub fn fake_tree(root: &Path) {
        let d = root.join("class/infiniband/mlx5_0");
        let p = d.join("ports/1");
        for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
            fs::create_dir_all(p.join(sub)).unwrap();
        }
        fs::create_dir_all(d.join("device/net/ens1f0np0")).unwrap();
        fs::write(p.join("state"), "4: ACTIVE\n").unwrap();
        fs::write(p.join("link_layer"), "Ethernet\n").unwrap();
        let gids = [
            ("0", "fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f", "IB/RoCE v1"),
            ("1", "0000:0000:0000:0000:0000:ffff:c612:0001", "RoCE v2"),
            ("2", "0000:0000:0000:0000:0000:0000:0000:0000", ""),
        ];
        for (i, g, t) in gids {
            fs::write(p.join("gids").join(i), format!("{g}\n")).unwrap();
            fs::write(p.join("gid_attrs/types").join(i), format!("{t}\n")).unwrap();
            if !t.is_empty() {
                fs::write(p.join("gid_attrs/ndevs").join(i), "ens1f0np0\n").unwrap();
            }
        }
    }

    #[test]
    fn reads_a_fake_tree() {
        let root = std::env::temp_dir().join(format!("rocetap-sysfs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fake_tree(&root);
        assert_eq!(parse_name(&root, "mlx5_0"), Some(("mlx5_0".into(), None)));
        assert_eq!(
            parse_name(&root, "mlx5_0:1"),
            Some(("mlx5_0".into(), Some(1)))
        );
        assert_eq!(parse_name(&root, "eth0"), None);
        assert_eq!(parse_name(&root, "../infiniband"), None);
        let devs = list(&root);
        assert_eq!(devs.len(), 1);
        let d = &devs[0];
        assert_eq!(d.netdevs, vec!["ens1f0np0".to_string()]);
        assert_eq!(d.ports.len(), 1);
        assert_eq!(d.ports[0].state.as_deref(), Some("ACTIVE"));
        assert_eq!(d.ports[0].link_layer.as_deref(), Some("Ethernet"));
        assert_eq!(d.ports[0].gids.len(), 2, "the zero GID is skipped");
        assert_eq!(d.ports[0].gids[1].kind.as_deref(), Some("RoCE v2"));
        let _ = fs::remove_dir_all(&root);
    }
}
