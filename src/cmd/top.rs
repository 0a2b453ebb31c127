//! `rocetap top`: the command line checked and turned into a [`tui::Config`].

use crate::cli::TopArgs;
use rocetap::error::Failure;
use rocetap::tui::{self, Speed};

pub fn run(a: TopArgs) -> Result<i32, Failure> {
    Ok(tui::run(config(a)?)?)
}

fn config(a: TopArgs) -> Result<tui::Config, Failure> {
    let files = a.sources.all();
    let speed = Speed::parse(&a.speed).map_err(|e| Failure::new(format!("top: {e}")))?;
    if files.is_empty() && a.interfaces.is_empty() {
        return Err(Failure::new("top: no source")
            .hint("rocetap top -r trace.pcap, or sudo rocetap top -i eth2"));
    }
    if !files.is_empty() && !a.interfaces.is_empty() {
        return Err(Failure::new(
            "top: give files (-r) or devices (-i), not both",
        ));
    }
    if files.iter().any(|p| p.as_os_str() == "-") {
        return Err(
            Failure::new("top: -r - is not supported: the terminal is the keyboard")
                .hint("write the stream to a file first, or use rocetap analyze -r -"),
        );
    }
    Ok(tui::Config {
        files,
        devices: a.interfaces,
        speed,
        roce_port: a.roce_port,
        promisc: !a.no_promisc,
        sysfs_root: rocetap::config::sysfs_dir(&a.sysfs_root),
        qp_table: super::analyze::qp_tables("top", &a.qp_table)?.unwrap_or_default(),
    })
}
