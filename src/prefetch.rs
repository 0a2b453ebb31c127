//! Cache hints: ask the CPU to start moving a line toward this core before the program
//! touches it. The analysis warms the flows coming frames will use (`analysis::warm`);
//! the split read (`pipeline::split`) moves each batch slot between the two cores a few
//! frames early, for writing on the reader's side and for reading on the analysis's.
//! A hint changes only how long a later load or store waits, never what it reads or
//! writes.
#![allow(unsafe_code)]

/// Starts loading the cache line that holds `p` (PREFETCHT0).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 (SSE, in every x86-64 CPU) reads nothing architecturally: any
    // address is allowed, none faults, and no memory is read or written as far as the
    // program can tell.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading bytes `from..to` of `p`: every line they cross.
#[inline]
pub(crate) fn lines<T: ?Sized>(p: &T, from: usize, to: usize) {
    let base = std::ptr::from_ref::<T>(p).cast::<u8>();
    let mut off = from;
    while off < to {
        prefetch(base.wrapping_add(off));
        off += 64;
    }
    prefetch(base.wrapping_add(to - 1));
}

/// Whether [`own`] can prefetch for writing on this CPU: PREFETCHW (CPUID leaf
/// 0x8000_0001, ECX bit 8; Intel since Broadwell, AMD for long before). Ask once, not
/// per frame.
pub(crate) fn can_own() -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: CPUID is in every x86-64 CPU and only reads identification registers;
    // leaf 0x8000_0001 is asked only when leaf 0x8000_0000 says it exists. (`__cpuid`
    // is a safe function in newer rust, an unsafe one in 1.88, the MSRV.)
    #[allow(unused_unsafe)]
    unsafe {
        let top = std::arch::x86_64::__cpuid(0x8000_0000).eax;
        top >= 0x8000_0001 && std::arch::x86_64::__cpuid(0x8000_0001).ecx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Starts taking every line of `v` for writing (PREFETCHW) when `can` ([`can_own`]): a
/// store to a line another core holds must first wait for that copy to be given up.
#[inline]
pub(crate) fn own<T>(v: &T, can: bool) {
    #[cfg(target_arch = "x86_64")]
    if can {
        let p = std::ptr::from_ref(v).cast::<u8>();
        let mut off = 0;
        while off < std::mem::size_of::<T>() {
            // SAFETY: `can` is `can_own()`: the CPU has PREFETCHW (CPUID says so). A
            // prefetch reads and writes nothing the program can see and never faults,
            // whatever the address; it uses no stack and leaves the flags alone.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{}]",
                    in(reg) p.wrapping_add(off),
                    options(nostack, readonly, preserves_flags)
                );
            }
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, can);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hints run on this CPU, on values of any size, and change nothing.
    #[test]
    fn hints_change_nothing() {
        let v: Vec<[u8; 200]> = (0..4u8).map(|i| [i; 200]).collect();
        for x in &v {
            own(x, can_own());
            own(x, false);
            lines(x, 0, 200);
            lines(x, 150, 151);
        }
        own(&(), true);
        prefetch(std::ptr::null::<u8>());
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, x)| x.iter().all(|&b| b == i as u8)));
    }
}
