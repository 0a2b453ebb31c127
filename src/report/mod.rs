//! Output: per-frame fields and summaries for `decode`, and (from the analyzer on) the
//! analysis reports. Nothing here reads packets or touches the terminal (whether text
//! gets color is a `bool` the command layer decides; see `style`).
#![warn(missing_docs)]

pub mod analyze;
mod csv;
pub mod events;
pub mod fields;
pub mod findings;
mod mirrors;
pub mod nccl;
mod par;
pub mod pretty_json;
pub mod qptable;
pub mod rules;
pub mod safe;
pub mod sflow;
pub mod style;
pub mod summary;
pub mod taps;
mod text;

/// The one severity scale of findings (`analyze`, netcheck, the NAD lint).
pub use crate::analysis::report::Severity;
