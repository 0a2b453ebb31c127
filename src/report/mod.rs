//! Output: per-frame fields and summaries for `decode`, and (from the analyzer on) the
//! analysis reports. Nothing here reads packets or touches the terminal.

pub mod analyze;
pub mod fields;
pub mod rules;
pub mod summary;
