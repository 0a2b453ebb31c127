//! A fixed-capacity ring of small `Copy` records. Pushing into a full ring hands back the
//! oldest record instead of growing, so per-flow state has one size for the life of the
//! flow and the per-packet path never allocates.

/// Where a ring's records are: the oldest one's slot and how many. The ring logic, on
/// records held in place ([`Ring`]) or allocated with the first push ([`SplitRing`]).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Cursor {
    head: u32,
    len: u32,
}

impl Cursor {
    /// Slot of the record `i` places after the head, in a ring of `n`.
    #[inline]
    fn at(&self, i: usize, n: usize) -> usize {
        (self.head as usize + i) % n
    }

    #[inline]
    fn push<T: Copy, const N: usize>(&mut self, buf: &mut [T; N], v: T) -> Option<T> {
        if self.len as usize == N {
            let head = self.head as usize;
            let old = buf[head];
            buf[head] = v;
            self.head = ((head + 1) % N) as u32;
            Some(old)
        } else {
            buf[self.at(self.len as usize, N)] = v;
            self.len += 1;
            None
        }
    }

    #[inline]
    fn ends<'a, T, const N: usize>(&self, buf: &'a [T; N]) -> (&'a T, &'a T) {
        (
            &buf[self.head as usize % N],
            &buf[self.at(self.len as usize, N)],
        )
    }

    #[inline]
    fn get<'a, T, const N: usize>(&self, buf: &'a [T; N], i: usize) -> &'a T {
        debug_assert!(i < self.len as usize);
        &buf[self.at(i, N)]
    }

    #[inline]
    fn pop_front_while<T: Copy, const N: usize>(
        &mut self,
        buf: &[T; N],
        mut pred: impl FnMut(&T) -> bool,
        mut out: impl FnMut(T),
    ) {
        while self.len > 0 && pred(&buf[self.head as usize]) {
            out(buf[self.head as usize]);
            self.head = ((self.head as usize + 1) % N) as u32;
            self.len -= 1;
        }
    }
}

/// The head and length come first (`repr(C)`): a ring placed after a struct's hot fields
/// shares their cache line, and a push touches at most one more.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Ring<T: Copy + Default, const N: usize> {
    c: Cursor,
    buf: [T; N],
}

impl<T: Copy + Default, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Ring {
            c: Cursor::default(),
            buf: [T::default(); N],
        }
    }
}

impl<T: Copy + Default, const N: usize> Ring<T, N> {
    /// Appends `v`; when full, the oldest record is dropped and returned.
    #[inline]
    pub fn push(&mut self, v: T) -> Option<T> {
        self.c.push(&mut self.buf, v)
    }

    /// The oldest record's slot and the slot the next push writes (for a cache hint:
    /// what a push, a look at the newest and a pop touch).
    #[inline]
    pub fn ends(&self) -> (&T, &T) {
        self.c.ends(&self.buf)
    }

    /// Records held.
    #[inline]
    pub fn len(&self) -> usize {
        self.c.len as usize
    }

    /// Whether no record is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.c.len == 0
    }

    /// The i-th record, oldest first.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len());
        &mut self.buf[self.c.at(i, N)]
    }

    /// The i-th record, oldest first (`i` must be below [`Ring::len`]).
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        self.c.get(&self.buf, i)
    }

    /// Drops the oldest records while `pred` holds for them, handing each to `out`.
    #[inline]
    pub fn pop_front_while(&mut self, pred: impl FnMut(&T) -> bool, out: impl FnMut(T)) {
        self.c.pop_front_while(&self.buf, pred, out);
    }

    /// The records held, oldest first (never a slot not yet written).
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Removes every record, handing each to `out`, oldest first.
    #[inline]
    pub fn drain(&mut self, mut out: impl FnMut(T)) {
        self.pop_front_while(|_| true, &mut out);
    }
}

/// A [`Ring`] allocated on its first push: most flows never keep a gap or a READ, and a
/// flow pays for the ring only once it has something to keep. Reads of an empty lazy ring
/// behave as an empty ring.
#[derive(Clone, Debug)]
pub struct LazyRing<T: Copy + Default, const N: usize>(Option<Box<Ring<T, N>>>);

impl<T: Copy + Default, const N: usize> Default for LazyRing<T, N> {
    fn default() -> Self {
        LazyRing(None)
    }
}

impl<T: Copy + Default, const N: usize> LazyRing<T, N> {
    /// Appends `v` (allocating the ring the first time); when full, the oldest record is
    /// dropped and returned.
    #[inline]
    pub fn push(&mut self, v: T) -> Option<T> {
        self.0.get_or_insert_with(Box::default).push(v)
    }

    /// Records held (0 before the first push).
    #[inline]
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |r| r.len())
    }

    /// Whether no record is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The i-th record, oldest first (`i` must be below [`LazyRing::len`]).
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        self.0.as_mut().expect("index below len()").get_mut(i)
    }

    /// The i-th record, oldest first (`i` must be below [`LazyRing::len`]).
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        self.0.as_ref().expect("index below len()").get(i)
    }

    /// Drops the oldest records while `pred` holds for them, handing each to `out`.
    #[inline]
    pub fn pop_front_while(&mut self, pred: impl FnMut(&T) -> bool, out: impl FnMut(T)) {
        if let Some(r) = self.0.as_mut() {
            r.pop_front_while(pred, out);
        }
    }

    /// Removes every record, handing each to `out`, oldest first.
    #[inline]
    pub fn drain(&mut self, out: impl FnMut(T)) {
        if let Some(r) = self.0.as_mut() {
            r.drain(out);
        }
    }
}

/// A [`Ring`] whose head and length stay where it is placed and whose records are
/// allocated on the first push: a flow's request-stream rings sit with its hot fields
/// (a cache hint can name the slot a packet will use straight from them, with no load in
/// between), while a flow that never sends a request (an RC connection's ACK direction,
/// half of all flows) pays 16 bytes per ring instead of its records. Reads of a ring not
/// allocated yet behave as an empty ring.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct SplitRing<T: Copy + Default, const N: usize> {
    c: Cursor,
    buf: Option<Box<[T; N]>>,
}

impl<T: Copy + Default, const N: usize> Default for SplitRing<T, N> {
    fn default() -> Self {
        SplitRing {
            c: Cursor::default(),
            buf: None,
        }
    }
}

impl<T: Copy + Default, const N: usize> SplitRing<T, N> {
    /// Appends `v` (allocating the records the first time); when full, the oldest record
    /// is dropped and returned.
    #[inline]
    pub fn push(&mut self, v: T) -> Option<T> {
        let buf = match self.buf.as_deref_mut() {
            Some(b) => b,
            None => Self::allocate(&mut self.buf),
        };
        self.c.push(buf, v)
    }

    /// The records, allocated (once, with the first push: kept out of line so that the
    /// push itself stays small enough to inline).
    #[cold]
    #[inline(never)]
    fn allocate(buf: &mut Option<Box<[T; N]>>) -> &mut [T; N] {
        buf.insert(Box::new([T::default(); N]))
    }

    /// The oldest record's slot and the slot the next push writes, once allocated (for a
    /// cache hint).
    #[inline]
    pub fn ends(&self) -> Option<(&T, &T)> {
        Some(self.c.ends(self.buf.as_deref()?))
    }

    /// The records, once allocated (for a cache hint).
    #[inline]
    pub fn records(&self) -> Option<&[T; N]> {
        self.buf.as_deref()
    }

    /// Records held.
    #[inline]
    pub fn len(&self) -> usize {
        self.c.len as usize
    }

    /// Whether no record is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.c.len == 0
    }

    /// The records, oldest first (`.rev()`: newest first), by value.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = T> + '_ {
        (0..self.len()).map(move |i| *self.get(i))
    }

    /// The i-th record, oldest first (`i` must be below [`SplitRing::len`]).
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        self.c
            .get(self.buf.as_deref().expect("index below len()"), i)
    }

    /// Drops the oldest records while `pred` holds for them, handing each to `out`.
    #[inline]
    pub fn pop_front_while(&mut self, pred: impl FnMut(&T) -> bool, out: impl FnMut(T)) {
        if let Some(buf) = self.buf.as_deref() {
            self.c.pop_front_while(buf, pred, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_when_full() {
        let mut r: Ring<u32, 3> = Ring::default();
        assert_eq!(r.push(1), None);
        assert_eq!(r.push(2), None);
        assert_eq!(r.push(3), None);
        assert_eq!(r.push(4), Some(1));
        assert_eq!((*r.get(0), *r.get(2)), (2, 4));
        let mut out = vec![];
        r.pop_front_while(|&v| v < 4, |v| out.push(v));
        assert_eq!(out, vec![2, 3]);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_split_ring_is_a_ring_once_pushed_and_empty_before() {
        let mut s: SplitRing<u32, 3> = SplitRing::default();
        let mut r: Ring<u32, 3> = Ring::default();
        assert!(s.is_empty() && s.ends().is_none());
        s.pop_front_while(|_| true, |_| panic!("nothing to pop"));
        for v in 1..=7 {
            assert_eq!(s.push(v), r.push(v));
            if v % 3 == 0 {
                let (mut a, mut b) = (vec![], vec![]);
                s.pop_front_while(|&x| x < v, |x| a.push(x));
                r.pop_front_while(|&x| x < v, |x| b.push(x));
                assert_eq!(a, b);
            }
            assert_eq!(s.len(), r.len());
            for i in 0..s.len() {
                assert_eq!(s.get(i), r.get(i));
            }
            let ((a, b), (c, d)) = (s.ends().unwrap(), r.ends());
            assert_eq!((a, b), (c, d));
        }
    }
}
