//! The pipeline's sink in a capture session: every frame handed on is written to the
//! output file (with its annotation when asked for) and counted against `-c`.

use crate::analysis::Analyzer;
use crate::capture::annotate::Annotator;
use crate::capture::output::{Output, OutputError};
use crate::capture::Frame;
use crate::pipeline::Sink;
use dissectors::Decoded;
use std::ops::ControlFlow;

/// The pipeline's sink in a capture: the output file (with annotations) and the count.
pub(super) struct Writing {
    pub(super) out: Option<Output>,
    pub(super) annotator: Option<Annotator>,
    /// Frames handed on (and written, when writing): `count` counts these.
    pub(super) handed: u64,
    pub(super) limit: u64,
    pub(super) error: Option<OutputError>,
}

impl Sink for Writing {
    fn before(&mut self, _: &Frame<'_>, _: &Analyzer) -> ControlFlow<()> {
        if self.handed >= self.limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn after(&mut self, f: &Frame<'_>, d: Option<&Decoded>, an: &Analyzer) -> ControlFlow<()> {
        if let Some(out) = self.out.as_mut() {
            let comment = match (self.annotator.as_mut(), d) {
                (Some(a), Some(d)) => a.comment(d, an),
                _ => None,
            };
            if let Err(e) = out.write(f.ts_ns, f.source, f.data, f.orig_len, comment) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        self.handed += 1;
        if self.handed >= self.limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}
