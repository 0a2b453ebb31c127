//! `rocetap interfaces`: the devices libpcap can capture from (numbered like
//! `tcpdump -D`), then every RDMA device in sysfs with its netdevs, port state, link
//! layer and RoCE GIDs — and whether this libpcap can capture from it. Every name and
//! value read from libpcap or sysfs is escaped for the terminal (`report::safe::term`).

use crate::cli::InterfacesArgs;
use rocetap::capture::rdma;
use rocetap::error::{exit, Failure};
use rocetap::report::safe::term;
use std::fmt::Write as _;
use std::io::Write as _;

pub fn run(a: InterfacesArgs) -> Result<i32, Failure> {
    let devices = pcap::Device::list()
        .map_err(|e| Failure::new(format!("interfaces: listing capture devices: {e}")))?;
    let sysfs = rocetap::config::sysfs_dir(&a.sysfs_root);
    let rdma_devs = rdma::list(&sysfs);
    let mut s = String::new();
    for (i, d) in devices.iter().enumerate() {
        let _ = write!(s, "{}.{}", i + 1, term(&d.name));
        if let Some(desc) = &d.desc {
            let _ = write!(s, " ({})", term(desc));
        }
        let mut flags = Vec::new();
        if d.flags.is_loopback() {
            flags.push("Loopback");
        }
        if d.flags.is_up() {
            flags.push("Up");
        }
        if d.flags.is_running() {
            flags.push("Running");
        }
        match d.flags.connection_status {
            pcap::ConnectionStatus::Connected => flags.push("Connected"),
            pcap::ConnectionStatus::Disconnected => flags.push("Disconnected"),
            _ => {}
        }
        if !flags.is_empty() {
            let _ = write!(s, " [{}]", flags.join(", "));
        }
        if rdma_devs.iter().any(|r| r.netdevs.contains(&d.name)) {
            s.push_str(" [RoCE netdev]");
        }
        s.push('\n');
    }
    if !rdma_devs.is_empty() {
        let _ = writeln!(
            s,
            "\nRDMA devices ({}):",
            term(&sysfs.join("class/infiniband").display().to_string())
        );
    }
    for r in &rdma_devs {
        let capturable = devices
            .iter()
            .any(|d| d.name == r.name || d.name.starts_with(&format!("{}:", r.name)));
        let _ = writeln!(
            s,
            "{} netdev {} — {}",
            term(&r.name),
            if r.netdevs.is_empty() {
                "-".to_string()
            } else {
                term(&r.netdevs.join(", ")).into_owned()
            },
            if capturable {
                "capture with -i NAME"
            } else {
                "this libpcap cannot capture from it (built without RDMA support); use -i on a libpcap with RDMA support, the mellanox/tcpdump-rdma container, or ibdump -w - | rocetap analyze -r -"
            }
        );
        for p in &r.ports {
            let _ = writeln!(
                s,
                "  port {}: state {}, link layer {}",
                p.number,
                term(p.state.as_deref().unwrap_or("?")),
                term(p.link_layer.as_deref().unwrap_or("?"))
            );
            for g in &p.gids {
                let _ = writeln!(
                    s,
                    "    GID {:>3} {} {} {}",
                    g.index,
                    term(&g.gid),
                    term(g.kind.as_deref().unwrap_or("-")),
                    term(g.ndev.as_deref().unwrap_or("-"))
                );
            }
        }
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::OK),
        Err(e) if rocetap::error::is_broken_pipe(&e) => Ok(exit::OK),
        Err(e) => Err(Failure::new(format!("writing output: {e}"))),
    }
}
