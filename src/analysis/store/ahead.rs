//! Memory made ahead on a helper thread. A fresh allocation's pages fault when they are
//! first written; for the big pieces the analysis grows by (a chunk of flow slots, 192
//! pages) that write is the making of the piece, so it is done on a helper thread ahead
//! of need, and the analyzing thread takes pieces whose pages are already there. At
//! 100,000 flows a run took about 46,000 page faults (about 2.1 us each here, a fifth of
//! its time), all on the analyzing thread, while the other core was idle.
//!
//! A [`Helper`] is one thread, started with its first job, running jobs in the order
//! asked and stopping when the last [`Ahead`] using it is dropped; kinds of piece made
//! ahead for one analysis should share one (two helpers busy at once had the scheduler
//! run one of them on the analyzing thread's core). Each [`Ahead`] has at most one piece
//! asked for and not taken. If the thread cannot be started, or has gone, pieces are made
//! where they are needed, as without a helper.

use std::sync::{mpsc, Arc, OnceLock};

/// What a helper makes: a piece of memory, ready to use.
pub(in crate::analysis) trait Made: Send + 'static {
    fn made() -> Self;
}

pub(in crate::analysis) type Job = Box<dyn FnOnce() + Send>;

/// The helper thread of an analyzer; clones share it.
#[derive(Clone, Debug, Default)]
pub(in crate::analysis) struct Helper(Arc<OnceLock<Option<mpsc::Sender<Job>>>>);

impl Helper {
    /// Runs `job` on the helper thread (started the first time); false if there is none
    /// (`job` is dropped).
    pub fn run(&self, job: Job) -> bool {
        let jobs = self.0.get_or_init(|| {
            let (jobs, todo) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("rocetap-ahead".into())
                .spawn(move || {
                    for job in todo {
                        job();
                    }
                })
                .ok()
                .map(|_| jobs)
        });
        jobs.as_ref().is_some_and(|j| j.send(job).is_ok())
    }
}

/// Pieces of one kind made ahead: see the module documentation.
#[derive(Debug)]
pub(in crate::analysis) struct Ahead<T: Made> {
    helper: Helper,
    /// Where the piece asked for comes back.
    asked: Option<mpsc::Receiver<T>>,
    /// The helper could not be started or has gone: not asked again.
    failed: bool,
}

impl<T: Made> Ahead<T> {
    pub fn new(helper: Helper) -> Self {
        Ahead {
            helper,
            asked: None,
            failed: false,
        }
    }

    /// Asks for the next piece (once until it is taken).
    pub fn ask(&mut self) {
        if self.asked.is_some() || self.failed {
            return;
        }
        let (give, made) = mpsc::sync_channel::<T>(1);
        if self.helper.run(Box::new(move || {
            let _ = give.send(T::made());
        })) {
            self.asked = Some(made);
        } else {
            self.failed = true;
        }
    }

    /// The helper it asks.
    pub fn helper(&self) -> &Helper {
        &self.helper
    }

    /// Whether a piece was asked for and not taken yet.
    #[cfg(test)]
    pub fn asked(&self) -> bool {
        self.asked.is_some()
    }

    /// The piece asked for, waiting for it if it is still being made; `None` if none was
    /// asked for or the helper has gone.
    pub fn take(&mut self) -> Option<T> {
        let piece = self.asked.take()?.recv().ok();
        self.failed |= piece.is_none();
        piece
    }
}

impl<T: Made> Default for Ahead<T> {
    fn default() -> Self {
        Ahead::new(Helper::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Piece(Box<[u64; 512]>, std::thread::ThreadId);

    impl Made for Piece {
        fn made() -> Self {
            Piece(Box::new([7; 512]), std::thread::current().id())
        }
    }

    #[derive(Debug)]
    struct Other(std::thread::ThreadId);

    impl Made for Other {
        fn made() -> Self {
            Other(std::thread::current().id())
        }
    }

    #[test]
    fn a_piece_asked_for_is_made_on_the_helper_once() {
        let here = std::thread::current().id();
        let mut a = Ahead::<Piece>::default();
        assert!(a.take().is_none(), "nothing asked for");
        a.ask();
        a.ask(); // once until taken
        assert!(a.asked());
        let p = a.take().expect("asked for");
        assert_ne!(p.1, here, "made on the helper");
        assert!(p.0.iter().all(|&x| x == 7));
        assert!(!a.asked() && a.take().is_none());
        a.ask();
        drop(a); // the piece in flight goes with it, and the helper stops
    }

    #[test]
    fn kinds_of_piece_share_one_helper_thread() {
        let helper = Helper::default();
        let mut a = Ahead::<Piece>::new(helper.clone());
        let mut b = Ahead::<Other>::new(helper);
        a.ask();
        b.ask();
        let (p, o) = (a.take().unwrap(), b.take().unwrap());
        assert_eq!(p.1, o.0);
        assert_ne!(o.0, std::thread::current().id());
    }
}
