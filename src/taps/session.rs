//! The ordinary analysis of a tap that is one mirror session of a capture: only the
//! frames of that session go through the pipeline (the others are other taps' copies of
//! the same packets, which would count as duplicates).

use super::Select;
use crate::capture::input::{for_each_frame_of, CutShort, InputError};
use crate::pipeline::{Pipeline, Sink};
use dissectors::LinkType;
use std::path::PathBuf;

/// Feeds `p` the frames of `paths` that belong to mirror session `sel`, as
/// [`Pipeline::read_files`] feeds every frame: inputs cut short are returned and told to
/// the analyzer; `sink` sees the frames fed (`NoSink` for none). Each frame is decoded once more to see its session, into one reused
/// [`dissectors::Decoded`] (nothing allocated per frame).
pub fn read_session<S: Sink + ?Sized>(
    p: &mut Pipeline,
    paths: &[PathBuf],
    sel: &Select,
    dcfg: &dissectors::Config,
    quiet: bool,
    sink: &mut S,
) -> Result<Vec<CutShort>, InputError> {
    let mut d = dissectors::decode(LinkType::Ethernet, &[], 0, dcfg);
    let cut = for_each_frame_of(paths, quiet, |f| {
        dissectors::decode_into(f.link, f.data, f.orig_len, dcfg, &mut d);
        if d.tunnel.is_some_and(|t| sel.matches(&t.tap())) {
            p.feed(f, sink)
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })?;
    for c in &cut {
        p.analyzer_mut().input_cut_short(&c.file, c.frames);
    }
    Ok(cut)
}
