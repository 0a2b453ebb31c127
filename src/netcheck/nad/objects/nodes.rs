//! The nodes' PF facts: a nodes file (YAML or JSON, `--nodes`) or each node's `ip -j`
//! dumps (`--from DIR`, read by `netcheck::load_json`).

use super::*;

/// The nodes file:
///
/// ```yaml
/// nodes:
///   node1:
///     ens1f0: {address: 198.51.100.1/24, mtu: 9000, gateway: 198.51.100.254, routes: [198.18.0.0/15]}
/// ```
pub fn load_nodes_file(p: &Path, inp: &mut Inputs) -> Result<(), LoadError> {
    let (name, text) = read_text(p)?;
    load_nodes_text(&name, &text, inp)
}

/// [`load_nodes_file`] of text read already, from the file `name`.
pub fn load_nodes_text(name: &str, text: &str, inp: &mut Inputs) -> Result<(), LoadError> {
    let docs = parse_docs(name, text)?;
    let bad = |pos: Pos, what: &str| LoadError(format!("{name}:{}:{}: {what}", pos.line, pos.col));
    let Some(doc) = docs.first() else {
        return Err(LoadError(format!("{name}: empty nodes file")));
    };
    let nodes = doc.get("nodes").and_then(Node::map).ok_or_else(|| {
        bad(
            doc.pos,
            "a nodes file needs `nodes:` mapping node names to their PFs",
        )
    })?;
    for (node, _, pfs) in nodes {
        let mut nf = NodeFacts {
            name: node.clone(),
            pfs: Vec::new(),
        };
        let pfs = pfs
            .map()
            .ok_or_else(|| bad(pfs.pos, "a node maps PF names to {address, mtu}"))?;
        for (pf, _, v) in pfs {
            let mut f = Pf {
                name: pf.clone(),
                ..Default::default()
            };
            for (k, kp, x) in v
                .map()
                .ok_or_else(|| bad(v.pos, "a PF is {address: A/LEN, mtu: N}"))?
            {
                match k.as_str() {
                    "address" | "addresses" => {
                        let list: Vec<&Node> = match x.seq() {
                            Some(s) => s.iter().collect(),
                            None => vec![x],
                        };
                        for a in list {
                            let t = a.text().unwrap_or_default();
                            let c = t
                                .split_once('/')
                                .and_then(|(ad, l)| {
                                    Some((
                                        parse_ip(ad)?,
                                        l.parse::<u8>().ok().filter(|l| *l <= 32)?,
                                    ))
                                })
                                .ok_or_else(|| {
                                    bad(a.pos, &format!("{t:?} is not an IPv4 address/prefix"))
                                })?;
                            f.addrs.push(c);
                        }
                    }
                    "mtu" => {
                        f.mtu = Some(
                            x.int()
                                .and_then(|m| u32::try_from(m).ok())
                                .ok_or_else(|| bad(x.pos, "mtu is a number"))?,
                        );
                    }
                    "gateway" => {
                        let t = x.text().unwrap_or_default();
                        f.gateways.push(
                            parse_ip(&t).ok_or_else(|| {
                                bad(x.pos, &format!("{t:?} is not an IPv4 address"))
                            })?,
                        );
                    }
                    "routes" => {
                        for r in x
                            .seq()
                            .ok_or_else(|| bad(x.pos, "routes is a list of CIDRs"))?
                        {
                            let t = r.text().unwrap_or_default();
                            f.routed.push(Cidr::parse(&t).ok_or_else(|| {
                                bad(r.pos, &format!("{t:?} is not an IPv4 CIDR"))
                            })?);
                        }
                    }
                    other => {
                        return Err(bad(
                            *kp,
                            &format!("unknown PF key {other:?} (address, mtu, gateway, routes)"),
                        ))
                    }
                }
            }
            nf.pfs.push(f);
        }
        inp.nodes.push(nf);
    }
    inp.have_nodes = true;
    Ok(())
}

/// Node facts from `ip -j` dumps: DIR itself when it holds addr.json, else each of its
/// subdirectories that does (one node each, named after the directory).
pub fn load_node_dirs(dirs: &[PathBuf], inp: &mut Inputs) -> Result<(), LoadError> {
    for d in dirs {
        let mut list = Vec::new();
        if d.join("addr.json").is_file() {
            list.push(d.clone());
        } else if d.is_dir() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(d)
                .map_err(|e| LoadError(format!("reading {}: {e}", d.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("addr.json").is_file())
                .collect();
            subs.sort();
            list = subs;
        }
        if list.is_empty() {
            return Err(LoadError(format!(
                "{}: no addr.json in it or in its subdirectories",
                d.display()
            )));
        }
        for dir in list {
            let st = crate::netcheck::load_json::load_dir(&dir)
                .map_err(|e| LoadError(format!("reading node state: {e}")))?;
            let name = dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            inp.nodes.push(facts_of(name, &st));
        }
    }
    inp.have_nodes = true;
    Ok(())
}

fn facts_of(name: String, st: &crate::netcheck::model::NetState) -> NodeFacts {
    use std::net::IpAddr;
    let mut nf = NodeFacts {
        name,
        pfs: Vec::new(),
    };
    for l in st.links.iter().filter(|l| l.name != "lo") {
        let mut pf = Pf {
            name: l.name.clone(),
            mtu: l.mtu,
            ..Default::default()
        };
        for a in st.addrs_of(&l.name) {
            if let IpAddr::V4(v4) = a.addr {
                if a.scope == crate::netcheck::model::scope::UNIVERSE {
                    pf.addrs.push((u32::from(v4), a.prefix_len));
                }
            }
        }
        for r in st
            .routes
            .iter()
            .filter(|r| r.table == crate::netcheck::model::RT_TABLE_MAIN)
        {
            for nh in &r.nexthops {
                if let (Some(IpAddr::V4(g)), Some(dev)) = (nh.gateway, &nh.dev) {
                    if dev == &l.name {
                        pf.gateways.push(u32::from(g));
                        if let IpAddr::V4(d) = r.dst.addr {
                            pf.routed.push(Cidr::new(u32::from(d), r.dst.len));
                        }
                    }
                }
            }
        }
        nf.pfs.push(pf);
    }
    nf
}
