//! The `otters` binary: the command line over the pipeline's crates. [`otters_cli`] is its
//! grammar; each command in [`cli`] takes its parsed flags, calls the library and prints; nothing
//! else prints.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
