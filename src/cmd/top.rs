//! `rocetap top`: the command line checked and turned into a [`tui::Config`].

use crate::cli::TopArgs;
use rocetap::error::Failure;
use rocetap::tui::{self, Speed};

pub fn run(a: TopArgs) -> Result<i32, Failure> {
    Ok(tui::run(config(a)?)?)
}

fn config(a: TopArgs) -> Result<tui::Config, Failure> {
    let mut files = a.sources.all();
    // Cheap checks first: merging the taps reads every capture.
    let speed = Speed::parse(&a.speed).map_err(|e| Failure::new(format!("top: {e}")))?;
    let qp_table = super::analyze::qp_tables("top", &a.qp_table)?.unwrap_or_default();
    let taps = taps(&a, &files)?;
    if let Some(t) = &taps {
        files = vec![t.0.clone()];
    }
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
        qp_table,
        taps: taps.map(|t| (t.1, t.2)),
        filter: a.filter,
    })
}

/// `--tap [NAME=]FILE[@SESSION] ...` as `analyze` takes it: the taps merged now (a tap
/// that cannot be read fails before the screen is taken); the replay is the first tap's
/// file (of its mirror session alone, with a selector).
fn taps(
    a: &TopArgs,
    files: &[std::path::PathBuf],
) -> Result<
    Option<(
        std::path::PathBuf,
        rocetap::taps::Report,
        Option<rocetap::taps::Select>,
    )>,
    Failure,
> {
    if a.taps.is_empty() {
        return Ok(None);
    }
    if !files.is_empty() {
        return Err(Failure::new(
            "top: give the captures as --tap NAME=FILE only, not also as files",
        ));
    }
    let dissect = dissectors::Config {
        roce_port: a.roce_port,
        check_icrc: true,
    };
    let cfg = rocetap::taps::spec::config("top", &a.taps, a.clocks_synced, a.tap_window, dissect)
        .map_err(Failure::new)?;
    let report = rocetap::taps::run(&cfg).map_err(|e| Failure::new(format!("top: {e}")))?;
    let first = &cfg.taps[0];
    Ok(Some((first.path.clone(), report, first.select)))
}
