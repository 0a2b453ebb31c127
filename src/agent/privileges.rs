//! The agent's least privilege: once its sources are open and its listener is bound, and
//! before any thread starts (capabilities and `no_new_privs` are per thread; a thread
//! inherits its creator's), the agent keeps only the capabilities it still uses and sets
//! `no_new_privs`.
//!
//! Kept (effective, permitted and bounding sets; inheritable and ambient are emptied):
//! - `CAP_NET_RAW`, always: a source that goes away and comes back is opened again, and
//!   opening a packet socket (libpcap, the RDMA sniffer) needs it (`packet_create` in
//!   `net/packet/af_packet.c`: `ns_capable(net->user_ns, CAP_NET_RAW)`).
//! - `CAP_IPC_LOCK`, only when a source is an RDMA device (libpcap's RDMA sniffer): the
//!   sniffer registers (pins) its receive ring when it is opened again, and the kernel
//!   refuses pinning beyond `RLIMIT_MEMLOCK` without it (`ib_umem_get` in
//!   `drivers/infiniband/core/umem.c`); containers' limit is small.
//! - `CAP_SYS_ADMIN` and `CAP_SYS_PTRACE`, only while netcheck runs: entering another
//!   network namespace is `setns(2)`, which needs `CAP_SYS_ADMIN` (`netns_install` in
//!   `net/core/net_namespace.c`); finding a pod's namespace and labels goes through
//!   `/proc/PID/ns/net` and `/proc/PID/root`, which the kernel lets a process read only
//!   when it may ptrace-read the target: another user's process, or one with capabilities
//!   the agent no longer has (every container runtime), needs `CAP_SYS_PTRACE`
//!   (`cap_ptrace_access_check` in `security/commoncap.c`). `tests/agent/agent_priv.rs` shows
//!   both: without them netcheck loses the namespaces.
//!
//! Not kept: `CAP_NET_ADMIN` — nothing the agent does after start-up needs it; the live QP
//! table (`--qp-table live`, `RDMA_NLDEV_CMD_RES_QP_GET`) is filtered by PID namespace, not
//! by capability (`res_get_common_dumpit` in `drivers/infiniband/core/nldev.c`;
//! `CAP_NET_ADMIN` only adds MR/PD keys and the raw dumps, which the agent does not ask
//! for). `CAP_DAC_OVERRIDE`: the dump directory is the agent's own (created 0700 by it);
//! sysfs, `/run/netns` and `/proc/PID/cgroup` are world-readable.
//!
//! The agent stays uid 0: files it creates (dumps) belong to root.

use caps::{CapSet, Capability, CapsHashSet};

/// What the agent does after start-up, which decides what it keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Netcheck runs (enters other network namespaces).
    pub netcheck: bool,
    /// A source is an RDMA device read through libpcap's RDMA sniffer.
    pub rdma_sniffer: bool,
}

impl Needs {
    /// What an agent with netcheck `netcheck` capturing `devices` needs (an RDMA device
    /// is one named in `sysfs`'s `class/infiniband`).
    pub fn of(netcheck: bool, devices: &[String], sysfs: &std::path::Path) -> Needs {
        let rdma = crate::capture::rdma::list(sysfs);
        Needs {
            netcheck,
            rdma_sniffer: devices.iter().any(|d| rdma.iter().any(|r| &r.name == d)),
        }
    }
}

/// The capabilities the agent keeps for `needs`, in a stable order.
pub fn kept(needs: Needs) -> Vec<Capability> {
    let mut v = vec![Capability::CAP_NET_RAW];
    if needs.rdma_sniffer {
        v.push(Capability::CAP_IPC_LOCK);
    }
    if needs.netcheck {
        v.push(Capability::CAP_SYS_ADMIN);
        v.push(Capability::CAP_SYS_PTRACE);
    }
    v.sort_by_key(caps::Capability::index);
    v
}

/// The names of `caps` for the log line (`net_raw,sys_admin`), `none` when empty.
pub fn names(caps: &[Capability]) -> String {
    if caps.is_empty() {
        return "none".into();
    }
    caps.iter()
        .map(|c| {
            c.to_string()
                .trim_start_matches("CAP_")
                .to_ascii_lowercase()
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What [`restrict`] left.
#[derive(Debug, PartialEq, Eq)]
pub struct Restricted {
    /// The capabilities still effective (those of [`kept`] the process had).
    pub kept: Vec<Capability>,
    /// Threads that were running already (a library's): they keep what they had, since
    /// capabilities are per thread. 0 in the agent; the log line says so otherwise.
    pub other_threads: usize,
}

/// The step of [`restrict`] that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading the permitted set.
    Read,
    /// Dropping a capability from the bounding set.
    DropBounding(Capability),
    /// Clearing the ambient set.
    ClearAmbient,
    /// Clearing the inheritable set.
    ClearInheritable,
    /// Setting the effective set.
    SetEffective,
    /// Setting the permitted set.
    SetPermitted,
}

/// Why [`restrict`] failed, with the system's reason.
#[derive(Debug)]
pub enum RestrictError {
    /// A capability set could not be read or changed.
    Caps(Step, caps::errors::CapsError),
    /// `prctl(PR_SET_NO_NEW_PRIVS)` failed.
    NoNewPrivs(rustix::io::Errno),
}

impl std::fmt::Display for RestrictError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (step, e) = match self {
            RestrictError::NoNewPrivs(e) => return write!(f, "setting no_new_privs: {e}"),
            RestrictError::Caps(step, e) => (step, e),
        };
        match step {
            Step::Read => write!(f, "reading capabilities: {e}"),
            Step::DropBounding(c) => write!(f, "dropping {c} from the bounding set: {e}"),
            Step::ClearAmbient => write!(f, "clearing ambient: {e}"),
            Step::ClearInheritable => write!(f, "clearing inheritable: {e}"),
            Step::SetEffective => write!(f, "setting effective: {e}"),
            Step::SetPermitted => write!(f, "setting permitted: {e}"),
        }
    }
}

impl std::error::Error for RestrictError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RestrictError::Caps(_, e) => Some(e),
            RestrictError::NoNewPrivs(e) => Some(e),
        }
    }
}

/// Keeps only the capabilities of `needs` in this thread (see the module documentation)
/// and sets `no_new_privs`. Must run before any other thread starts. A process that
/// lacks some of them (not root) keeps those it has; it is not an error here — opening a
/// source or entering a namespace then fails with its own message.
pub fn restrict(needs: Needs) -> Result<Restricted, RestrictError> {
    let want: CapsHashSet = kept(needs).into_iter().collect();
    let had =
        caps::read(None, CapSet::Permitted).map_err(|e| RestrictError::Caps(Step::Read, e))?;
    // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. A
    // process without it (not root: file or ambient capabilities) cannot, and need not:
    // with no_new_privs nothing it executes can gain what its bounding set still holds.
    let setpcap = caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false);
    for c in caps::all().into_iter().filter(|_| setpcap) {
        if !want.contains(&c) && caps::has_cap(None, CapSet::Bounding, c).unwrap_or(false) {
            caps::drop(None, CapSet::Bounding, c)
                .map_err(|e| RestrictError::Caps(Step::DropBounding(c), e))?;
        }
    }
    let keep: CapsHashSet = want.intersection(&had).copied().collect();
    // Ambient is cleared (it must stay within permitted ∩ inheritable anyway).
    let caps = |step| move |e| RestrictError::Caps(step, e);
    caps::clear(None, CapSet::Ambient).map_err(caps(Step::ClearAmbient))?;
    caps::clear(None, CapSet::Inheritable).map_err(caps(Step::ClearInheritable))?;
    caps::set(None, CapSet::Effective, &keep).map_err(caps(Step::SetEffective))?;
    caps::set(None, CapSet::Permitted, &keep).map_err(caps(Step::SetPermitted))?;
    rustix::thread::set_no_new_privs(true).map_err(RestrictError::NoNewPrivs)?;
    let mut kept: Vec<Capability> = keep.into_iter().collect();
    kept.sort_by_key(caps::Capability::index);
    let other_threads =
        std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count().saturating_sub(1));
    Ok(Restricted {
        kept,
        other_threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netcheck_adds_what_entering_namespaces_needs() {
        let n = |netcheck, rdma_sniffer| {
            names(&kept(Needs {
                netcheck,
                rdma_sniffer,
            }))
        };
        assert_eq!(n(false, false), "net_raw");
        assert_eq!(n(true, false), "net_raw,sys_ptrace,sys_admin");
        assert_eq!(n(false, true), "net_raw,ipc_lock");
        assert_eq!(n(true, true), "net_raw,ipc_lock,sys_ptrace,sys_admin");
        assert_eq!(names(&[]), "none");
    }
}
