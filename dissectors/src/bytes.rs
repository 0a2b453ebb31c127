//! Bounds-checked big-endian field access shared by every header module.
//!
//! Every reader returns `None` instead of panicking when the slice is too short, so a
//! header view can never index out of range whatever the input.

#[inline]
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

#[inline]
pub(crate) fn be16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

#[inline]
pub(crate) fn be24(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 3)?;
    Some(u32::from_be_bytes([0, s[0], s[1], s[2]]))
}

#[inline]
pub(crate) fn be32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline]
pub(crate) fn be64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_be_bytes(a))
}

#[inline]
pub(crate) fn array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    let s = b.get(off..off + N)?;
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    Some(a)
}

/// Writes `v`'s low 24 bits big-endian at `off`. Callers guarantee the length.
#[inline]
pub(crate) fn put24(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}

/// Writes `v` big-endian at `off`. Callers guarantee the length.
#[inline]
pub(crate) fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes `v` big-endian at `off`. Callers guarantee the length.
#[inline]
pub(crate) fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Writes `v` big-endian at `off`. Callers guarantee the length.
#[inline]
pub(crate) fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}
