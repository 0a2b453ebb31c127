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

/// Why privileges could not be given up (each with the system's reason).
#[derive(Debug)]
pub enum DropError {
    /// `setgroups(2)` (clearing the supplementary groups) failed.
    Groups(nix::Error),
    /// `setgid(2)` to the sudo user's group failed.
    Group(u32, nix::Error),
    /// `setuid(2)` to the sudo user failed.
    User(u32, nix::Error),
    /// Clearing a capability set failed.
    Capabilities(caps::errors::CapsError),
}

impl std::fmt::Display for DropError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropError::Groups(e) => write!(f, "clearing supplementary groups: {e}"),
            DropError::Group(gid, e) => write!(f, "switching to group {gid}: {e}"),
            DropError::User(uid, e) => write!(f, "switching to user {uid}: {e}"),
            DropError::Capabilities(e) => write!(f, "clearing capabilities: {e}"),
        }
    }
}

impl std::error::Error for DropError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DropError::Groups(e) | DropError::Group(_, e) | DropError::User(_, e) => Some(e),
            DropError::Capabilities(e) => Some(e),
        }
    }
}

/// Gives up root (to the sudo user) or every capability. See the module documentation.
pub fn drop_privileges() -> Result<Dropped, DropError> {
    use nix::unistd::{geteuid, setgid, setgroups, setuid, Gid, Uid};
    let env_id = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    if geteuid().is_root() {
        if let Some(uid) = env_id("SUDO_UID").filter(|u| *u != 0) {
            let gid = env_id("SUDO_GID").unwrap_or(uid);
            setgroups(&[]).map_err(DropError::Groups)?;
            setgid(Gid::from_raw(gid)).map_err(|e| DropError::Group(gid, e))?;
            setuid(Uid::from_raw(uid)).map_err(|e| DropError::User(uid, e))?;
            return Ok(Dropped::SwitchedTo { uid, gid });
        }
    }
    let _ = caps::clear(None, CapSet::Ambient);
    for set in [CapSet::Effective, CapSet::Inheritable, CapSet::Permitted] {
        caps::clear(None, set).map_err(DropError::Capabilities)?;
    }
    Ok(Dropped::Capabilities)
}
