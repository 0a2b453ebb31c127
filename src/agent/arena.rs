//! One malloc arena for the whole agent (glibc): with an arena per thread (glibc's
//! default, up to 8 per core) each source's thread would keep the room of the most its
//! analyzer ever held, so memory freed by eight sources is held eight times over.
//! Measured with 8 sources at tcpreplay --topspeed (release build), when capture threads
//! allocated batches an analysis thread freed: VmHWM 188 MB with an arena per thread, 171
//! MB with one (`MALLOC_ARENA_MAX=1`, which this sets for the process the same way); the
//! CPU cost per packet did not change measurably. The sources' threads allocate nothing
//! per packet, so they do not contend for the one arena.
#![allow(unsafe_code)]

/// glibc's `M_ARENA_MAX` parameter of `mallopt(3)`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_ARENA_MAX: std::ffi::c_int = -8;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
}

/// Limits malloc to one arena; call before the threads start. True when it took.
pub fn one_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt(M_ARENA_MAX) only sets a limit glibc reads when a thread next
        // needs an arena; it takes no pointer and is thread-safe (glibc takes its lock).
        unsafe { mallopt(M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_limit() {
        assert!(super::one_arena());
    }
}
