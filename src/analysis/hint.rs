//! Cache hints: asks the CPU to start loading a line the analysis will need soon.
#![allow(unsafe_code)]

/// Starts loading the cache line that holds `p` (a hint: no effect on the program's
/// behaviour, only on how long the later load takes).
#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing architecturally: any address is allowed, none
    // faults, and no memory is read or written as far as the program can tell.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
