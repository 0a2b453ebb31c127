//! Cache hints for the split read (`super::split`): a batch slot goes back and forth
//! between two cores, and each of its lines is, when the other side comes to it, in the
//! other core's cache. A hint a few frames ahead starts moving the lines early, so the
//! stores of the decoder and the loads of the analysis do not each wait for a transfer.
//! Hints change only how long a load or store waits, never what it reads or writes.
#![allow(unsafe_code)]

/// Whether [`own`] can prefetch for writing on this CPU: PREFETCHW (CPUID leaf
/// 0x8000_0001, ECX bit 8; Intel since Broadwell, AMD for long before). Without it, [`own`]
/// does nothing.
pub(super) fn can_own() -> bool {
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

/// Starts taking every line of `v` for writing (PREFETCHW), when `can` ([`can_own`]):
/// a store to a line another core holds must first wait for that copy to be given up.
#[inline]
pub(super) fn own<T>(v: &T, can: bool) {
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

/// Starts loading every line of `v` (PREFETCHT0).
#[inline]
pub(super) fn load<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = std::ptr::from_ref(v).cast::<u8>();
        let mut off = 0;
        while off < std::mem::size_of::<T>() {
            // SAFETY: PREFETCHT0 (SSE, in every x86-64 CPU) reads nothing
            // architecturally: any address is allowed and none faults.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.wrapping_add(off).cast(),
                );
            }
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
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
            load(x);
        }
        own(&(), true);
        load(&0u8);
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, x)| x.iter().all(|&b| b == i as u8)));
    }
}
