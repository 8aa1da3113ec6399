//! The `otters` binary: the command line over the pipeline's crates. Each command in [`cli`] parses
//! its flags, calls the library and prints; nothing else prints.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
