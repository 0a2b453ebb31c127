//! A fixed-capacity ring of small `Copy` records. Pushing into a full ring hands back the
//! oldest record instead of growing, so per-flow state has one size for the life of the
//! flow and the per-packet path never allocates.

#[derive(Clone, Debug)]
pub struct Ring<T: Copy + Default, const N: usize> {
    buf: [T; N],
    head: usize,
    len: usize,
}

impl<T: Copy + Default, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Ring {
            buf: [T::default(); N],
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> Ring<T, N> {
    /// Appends `v`; when full, the oldest record is dropped and returned.
    pub fn push(&mut self, v: T) -> Option<T> {
        if self.len == N {
            let old = self.buf[self.head];
            self.buf[self.head] = v;
            self.head = (self.head + 1) % N;
            Some(old)
        } else {
            self.buf[(self.head + self.len) % N] = v;
            self.len += 1;
            None
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The i-th record, oldest first.
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len);
        &mut self.buf[(self.head + i) % N]
    }

    pub fn get(&self, i: usize) -> &T {
        debug_assert!(i < self.len);
        &self.buf[(self.head + i) % N]
    }

    /// Drops the oldest records while `pred` holds for them, handing each to `out`.
    pub fn pop_front_while(&mut self, mut pred: impl FnMut(&T) -> bool, mut out: impl FnMut(T)) {
        while self.len > 0 && pred(&self.buf[self.head]) {
            out(self.buf[self.head]);
            self.head = (self.head + 1) % N;
            self.len -= 1;
        }
    }

    /// Removes every record, handing each to `out`, oldest first.
    pub fn drain(&mut self, mut out: impl FnMut(T)) {
        self.pop_front_while(|_| true, &mut out);
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
}
