//! Renderers for diagnostics: human (miette), json, sarif, github. Filled in by the lint work.
