//! Capture privileges: explaining a missing CAP_NET_RAW, and giving up what is no longer
//! needed once every capture handle is open.
//!
//! Dropping (called before any capture thread starts — capabilities are per thread):
//! - run through `sudo` as root (`SUDO_UID` set): supplementary groups are cleared and
//!   the process switches to `SUDO_GID` / `SUDO_UID`, so output files belong to the user
//!   who ran sudo and must be writable by them;
//! - otherwise every capability is cleared (effective, permitted, inheritable, ambient).
//!   Root stays uid 0 but without CAP_DAC_OVERRIDE, so the output directory must be
//!   writable by root's own permissions (it nearly always is).
//!
//! Open handles keep working: the kernel checked the privilege when they were created.

use caps::{CapSet, Capability};

/// How to get the privilege, for the hint line.
pub const FIX_HINT: &str = "run it with sudo, or grant the capability once: \
sudo setcap cap_net_raw,cap_net_admin+eip $(which rocetap)";

/// True when this thread lacks CAP_NET_RAW (or it cannot be told).
pub fn lacks_net_raw() -> bool {
    !caps::has_cap(None, CapSet::Effective, Capability::CAP_NET_RAW).unwrap_or(false)
}

/// What [`drop_privileges`] did, for `-v` style messages.
#[derive(Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Became the sudo user.
    SwitchedTo {
        /// Its user id.
        uid: u32,
        /// Its group id.
        gid: u32,
    },
    /// Cleared every capability (not root, or root without sudo).
    Capabilities,
}

/// Gives up root (to the sudo user) or every capability. See the module documentation.
pub fn drop_privileges() -> Result<Dropped, String> {
    use nix::unistd::{geteuid, setgid, setgroups, setuid, Gid, Uid};
    let env_id = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    if geteuid().is_root() {
        if let Some(uid) = env_id("SUDO_UID").filter(|u| *u != 0) {
            let gid = env_id("SUDO_GID").unwrap_or(uid);
            setgroups(&[]).map_err(|e| format!("clearing supplementary groups: {e}"))?;
            setgid(Gid::from_raw(gid)).map_err(|e| format!("switching to group {gid}: {e}"))?;
            setuid(Uid::from_raw(uid)).map_err(|e| format!("switching to user {uid}: {e}"))?;
            return Ok(Dropped::SwitchedTo { uid, gid });
        }
    }
    let _ = caps::clear(None, CapSet::Ambient);
    for set in [CapSet::Effective, CapSet::Inheritable, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| format!("clearing capabilities: {e}"))?;
    }
    Ok(Dropped::Capabilities)
}
