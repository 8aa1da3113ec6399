//! Where otters keeps its state: the one rule for `$OTTERS_HOME` (store, agents, cache,
//! `config.toml`), shared by the CLI and the library so no module below the CLI depends on it.

use std::path::PathBuf;

/// `$OTTERS_HOME`, else `~/.otters` (`./.otters` when `HOME` is unset).
pub fn otters_home() -> PathBuf {
    if let Some(h) = std::env::var_os("OTTERS_HOME").filter(|h| !h.is_empty()) {
        return h.into();
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), Into::into);
    home.join(".otters")
}
