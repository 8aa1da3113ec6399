//! The `otters` binary: the command line over the pipeline's crates. [`otters_cli`] is its
//! grammar; each command in [`cli`] takes its parsed flags, calls the library and prints through
//! [`view`], which says what a result means to a user (status lines, tables, reports, progress);
//! nothing else prints.

mod cli;
mod view;

fn main() -> std::process::ExitCode {
    cli::main()
}
