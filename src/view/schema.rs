//! `otters schema`: the list of published schemas, and the message for a name that is none.
use otters_schema::SCHEMAS;
use std::fmt::Write as _;

/// One line per schema: its name, then what it describes (its title).
pub fn list() -> String {
    let width = SCHEMAS.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for e in SCHEMAS {
        let _ = writeln!(out, "{:width$}  {}", e.name, e.title);
    }
    out
}

/// `name` names no schema: say so, and list the names.
pub fn unknown(name: &str) -> String {
    let names: Vec<&str> = SCHEMAS.iter().map(|e| e.name).collect();
    format!(
        "error: no schema is named `{}`\nhelp: the schemas are {}; `otters schema --list` says what each describes\n",
        otters_core::escape::escape(name),
        names.join(", ")
    )
}
