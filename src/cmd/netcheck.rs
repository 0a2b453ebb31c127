//! `rocetap netcheck`: the command line turned into a [`netcheck::Config`].

use crate::cli::{FailOnSeverity, NetcheckArgs, NetcheckFormat};
use rocetap::error::Failure;
use rocetap::netcheck::{self, checks::Severity};

pub fn run(a: NetcheckArgs, color: bool) -> Result<i32, Failure> {
    Ok(netcheck::run(config(a), color)?)
}

fn config(a: NetcheckArgs) -> netcheck::Config {
    netcheck::Config {
        netns: a.netns,
        pid: a.pid,
        from: a.from,
        sysfs_root: a.sysfs_root.as_deref().map(rocetap::config::sysfs_dir),
        qos_from: a.qos_from,
        peer_sysfs: a
            .peer_sysfs_root
            .iter()
            .map(|d| rocetap::config::sysfs_dir(d))
            .collect(),
        route_get: a.route_get,
        capture: a.capture,
        format: match a.format {
            NetcheckFormat::Text => netcheck::NetcheckFormat::Text,
            NetcheckFormat::Json => netcheck::NetcheckFormat::Json,
        },
        verbose: a.verbose,
        nad: a.nad,
        sriov_policy: a.sriov_policy,
        nodes: a.nodes,
        cni_bin_dir: a.cni_bin_dir,
        sbr_version: a.sbr_version,
        gate: match a.fail_on_severity {
            Some(FailOnSeverity::Error) => Severity::Error,
            Some(FailOnSeverity::Warning) | None => Severity::Warning,
            Some(FailOnSeverity::Info) => Severity::Info,
        },
    }
}
