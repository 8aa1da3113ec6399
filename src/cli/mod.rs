//! The command line: one short dispatcher per subcommand, over the grammar of [`otters_cli`].
//!
//! This is the only module that prints. Each subcommand lives in its own file, a `run` function
//! from its parsed `Args` (defined in the same-named module of `otters_cli`) over library calls.

/// `println!` for data on standard output. When stdout is a closed pipe (`otters images | head`)
/// the process ends quietly with status 0, as Unix tools do, instead of panicking.
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` with the behaviour of [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

mod archive;
mod attest;
mod blob;
mod build;
mod common;
mod copy;
mod diff;
mod errors;
mod explain;
mod export;
mod flags;
mod fmt;
mod images;
mod inspect;
mod key;
mod kube;
mod lint;
mod lock;
mod login;
mod lsp;
mod meta;
mod policy;
mod progress;
mod prune;
mod pull;
mod push;
mod referrers;
mod run;
mod schema;
mod sign;
mod tag;

use clap::Parser as _;
pub(crate) use errors::{fail, fail_in, render};
pub use otters_cli::Format;
use otters_cli::{Cli, Command, ImageCommand};
use std::process::ExitCode;

/// Entry point of the binary.
pub fn main() -> ExitCode {
    // Before any report exists: miette fixes a report's handler when the report is made.
    errors::error_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Lint(a) => lint::run(a),
        Command::Lsp(a) => lsp::run(a),
        Command::Fmt(a) => fmt::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Policy(c) => policy::run(c),
        Command::Schema(a) => schema::run(a),
        Command::Build(a) => build::run(a),
        Command::Images(a) => images::run_images(a),
        Command::Inspect(a) => inspect::run_inspect(a),
        Command::Diff(a) => diff::run(a),
        Command::Rm(a) => tag::run_rm(a),
        Command::Tag(a) => tag::run_tag(a),
        Command::Prune(a) | Command::Image(ImageCommand::Prune(a)) => prune::run_prune(a),
        Command::Save(a) => archive::run_save(a),
        Command::Load(a) => archive::run_load(a),
        Command::Push(a) => push::run_push(a),
        Command::Pull(a) => pull::run_pull(a),
        Command::Lock(a) => lock::run_lock(a),
        Command::Copy(a) => copy::run(a),
        Command::Login(a) => login::run_login(a),
        Command::Logout(a) => login::run_logout(a),
        Command::Run(a) => run::run(a),
        Command::Export(a) => export::run(a),
        Command::Kube(a) => kube::run(a),
        Command::Bin(c) => push::run_bin(c),
        Command::Key(c) => key::run(c),
        Command::SignBlob(a) => blob::run_sign(a),
        Command::VerifyBlob(a) => blob::run_verify(a),
        Command::Attach(a) => referrers::run_attach(a),
        Command::Discover(a) => referrers::run_discover(a),
        Command::Sign(a) => sign::run_sign(a),
        Command::Verify(a) => sign::run_verify(a),
        Command::Completion(a) => meta::run_completion(a),
        Command::Version(a) => meta::run_version(a),
        Command::Manpages(a) => meta::run_manpages(a),
    };
    match result {
        Ok(code) => code,
        Err(report) => {
            eprintln!("{}", render(&report));
            ExitCode::FAILURE
        }
    }
}

/// The result every dispatcher returns: an exit code, or a report rendered by miette.
pub type CliResult = miette::Result<ExitCode>;

pub use otters_core::home::otters_home;

/// Writes to standard output; a closed pipe ends the process with status 0, any other write error
/// with status 1 and a message.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("otters: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Colour for reports on stderr: only on a terminal, and never when `NO_COLOR` is set to
/// anything but the empty string (no-color.org).
pub(crate) fn stderr_colour() -> otters_agentfile::diagnostic::render::ColorChoice {
    use otters_agentfile::diagnostic::render::ColorChoice;
    use std::io::IsTerminal as _;
    if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
    {
        ColorChoice::Always
    } else {
        ColorChoice::Never
    }
}
