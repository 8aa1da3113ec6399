//! The `otters` binary: the command line over the pipeline's crates. Each command in [`cli`] parses
//! its flags, calls the library and prints; nothing else prints.

// Rationale: clap turns the flags' doc comments into `--help` text, where `<NAME>` and
// `[:ro|:rw]` are usage notation, not HTML or intra-doc links; escaping them for rustdoc would
// put backslashes into the help.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
