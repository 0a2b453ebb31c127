//! What netcheck's checks found, as values: each check returns a typed finding with the
//! facts that prove it (interfaces, addresses, tables, sysctl values, GID indices, the
//! lookups it made), its stable id and its severity; `report::words` is the one place that
//! words them (title, detail, evidence, fix, snippet), as `report::words::nad` words the NAD
//! lint's typed lints.

use super::checks::capture::Capture;
use super::checks::{Routing, Severity};
use super::host::qos::found::Qos;
use super::host::sysfs::Roce;

/// One thing a netcheck check found, by concern.
#[derive(Clone, Debug)]
pub enum Found<'r> {
    /// Reply paths, node-sourced traffic and ARP sysctls of one namespace
    /// ([`super::checks`]).
    Routing(Routing),
    /// RoCE readiness from sysfs ([`super::host::sysfs`]).
    Roce(Roce),
    /// The host's QoS, alone, across nodes or joined with a capture ([`super::host::qos`]).
    Qos(Qos<'r>),
    /// A capture's ARP / reply-path symptoms ([`super::checks::capture`]).
    Capture(Capture<'r>),
}

impl Found<'_> {
    /// The finding's stable identifier (`reply-path`, `roce-gid`, `qos-cnp`, ...).
    pub fn id(&self) -> &'static str {
        match self {
            Found::Routing(x) => x.id(),
            Found::Roce(x) => x.id(),
            Found::Qos(x) => x.id(),
            Found::Capture(x) => x.id(),
        }
    }

    /// How bad it is; findings at or above the `--fail-on` gate make the run exit 1.
    pub fn severity(&self) -> Severity {
        match self {
            Found::Routing(x) => x.severity(),
            Found::Roce(x) => x.severity(),
            Found::Qos(x) => x.severity(),
            Found::Capture(x) => x.severity(),
        }
    }
}
