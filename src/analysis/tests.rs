//! Analyzer scenarios built from dissectors Reprs.
