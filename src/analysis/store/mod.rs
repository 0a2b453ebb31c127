//! Where the live flows are kept, and the performance machinery around them: nothing
//! here knows RoCE. Its API is one type, [`FlowStore`] (`flows.rs`): find a flow by key,
//! insert one, get one by slot, list an address pair's, take one out, drain them all,
//! and the recent-PSN table. The analyzer holds one; its flow table (`super::table`)
//! finds or makes a packet's flow through it, the protocol code gets flows from it by
//! slot, and the look-ahead hints (`super::warm`) read it without changing it.
//!
//! - [`flows`]: the store itself, over the pieces below.
//! - [`recent`]: which request flow sent a PSN most recently (a response's first probe
//!   for the request stream it answers).
//! - [`slab`]: the flows in place, in chunks of 1,024 slots: `push` (insert), `get`,
//!   `two` (a flow and its peer, mutably), `iter`/`each` (iterate), `drain_chunks` (retire
//!   every flow at the end). A slot holds `Option<Flow>`; which slots are free is the
//!   table's free list.
//! - [`index`]: which slot holds the flow of a key: an open-addressing table of 32-bit
//!   hashes and slot numbers (`find`, `insert`, `remove`), holding no keys (a hit is
//!   confirmed against the key in the flow).
//! - [`hint`]: cache hints (`prefetch`, and a flow's lines by its layout: hot part, whole,
//!   its allocations). They change timing only, never a value.
//! - [`ahead`]: chunks of slots made ahead on a helper thread.
//! - [`populate`]: the pages of the report's summary list mapped ahead on that thread.
//!
//! **Threads.** The analysis itself runs on its caller's thread, and its results do not
//! depend on any other. One helper thread per analyzer ([`ahead::Helper`], shared by
//! `ahead` and `populate`, named `rocetap-ahead`) is started by its first job — a chunk
//! of slots asked for ahead once the first chunk is half used, or at the end of a run the
//! pages of a summary list of 1 MiB or more — so a small capture never starts it; it
//! ends when the analyzer (which holds every handle to it) is dropped. It only makes
//! memory: it allocates and writes a chunk of empty slots and hands it over through a
//! channel, or maps pages of a buffer's reserved room. If it cannot be started, chunks
//! are made on the analyzing thread and nothing is populated. (The pipeline's split
//! decoder, `crate::pipeline::split`, is the caller's second thread, not the analyzer's.)
//!
//! **`unsafe`** (the crate denies it elsewhere; see `Cargo.toml`):
//! - the cache hints `hint.rs` uses are `crate::prefetch`'s (`_mm_prefetch`, which reads
//!   nothing architecturally and cannot fault, whatever the address).
//! - `populate.rs`: `madvise(MADV_POPULATE_WRITE)` on whole pages of a `Vec`'s reserved
//!   room, from the helper thread while the analyzing thread fills the front of the same
//!   buffer. The kernel maps the pages as a write would, without reading or changing a
//!   byte, so it races with no access; the analyzing thread does not wait for it, and a
//!   range populated after the vector moved or went is harmless (a range no longer mapped
//!   is an error ignored, a reused one only gets its pages mapped).
//!
//! **Layout.** `Option<Flow>` must keep the flow at offset 0 with its `None` in the
//! flow's first cache line (the packed key, `super::packed`, carries a one-value
//! `enum Live` whose niche is the widest in `Flow`), so that telling a taken slot from a free one reads the
//! line every packet reads anyway. rustc does not promise which niche it takes: the tests
//! of `slab` check the offset, the size and where `None` is marked, and fail if a
//! compiler picks another.

pub(super) mod ahead;
pub(super) mod flows;
pub(super) mod hint;
pub(super) mod index;
pub(super) mod populate;
pub(super) mod recent;
pub(super) mod slab;

pub(super) use flows::{FlowStore, NO_SLOT};
pub(super) use recent::send_tag;
