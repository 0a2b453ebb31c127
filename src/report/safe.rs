//! The one escaping of outside text for terminals and the text report: [`crate::escape`],
//! re-exported where the report layer looks for it.

pub use crate::escape::{push_term, term};
