//! The command line: clap definitions and one short dispatcher per subcommand.
//!
//! This is the only module that prints. Each subcommand lives in its own file with its `Args`
//! struct and a `run` function over library calls.

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
mod progress;
mod prune;
mod pull;
mod push;
mod referrers;
mod run;
mod sign;
mod tag;
mod trust;

use clap::{Parser, Subcommand};
pub(crate) use errors::{fail, fail_in, render};
use std::process::ExitCode;

/// Compile Agentfiles into reproducible OCI artifacts, move them through registries, and run them.
#[derive(Debug, Parser)]
#[command(name = "otters", version, about, long_about = None, propagate_version = true)]
#[command(
    after_help = "Environment:\n  OTTERS_HOME        where the local store and agents live (default ~/.otters)\n  DOCKER_CONFIG      registry credentials (default ~/.docker)\n  SOURCE_DATE_EPOCH  pins org.opencontainers.image.created and tar mtimes\n  NO_COLOR           disables colour"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check Agentfiles for errors and lints, as an editor or CI would
    Lint(lint::Args),
    /// Serve the Agentfile language server over standard input and output (for editors)
    Lsp(lsp::Args),
    /// Rewrite Agentfiles in the canonical layout (`--check` in CI)
    Fmt(fmt::Args),
    /// Print the documentation of a diagnostic code (e.g. `otters explain AF101`)
    Explain(explain::Args),
    /// Build an Agentfile into an OCI artifact in the local store
    Build(build::Args),
    /// List the images in the local store
    Images(images::ImagesArgs),
    /// Show an image's manifest, config and layers
    Inspect(inspect::InspectArgs),
    /// Remove image tags from the local store
    Rm(tag::RmArgs),
    /// Add a tag to an image in the local store
    Tag(tag::TagArgs),
    /// Remove the blobs no image in the local store uses (after `rm`)
    Prune(prune::PruneArgs),
    /// Manage images in the local store (`otters image prune`, as in Docker)
    #[command(subcommand)]
    Image(ImageCommand),
    /// Write images to an oci-archive tarball (a file, or standard output)
    Save(archive::SaveArgs),
    /// Load images from an oci-archive tarball (a file, or standard input)
    Load(archive::LoadArgs),
    /// Upload an image from the local store to a registry
    ///
    /// Always to the registry itself, never to a mirror configured for it.
    Push(push::PushArgs),
    /// Turn an agent into an ordinary OCI image any container runtime runs (`--as runnable`)
    Export(export::Args),
    /// Print the Kubernetes objects that run an agent's runnable export (YAML)
    Kube(kube::Args),
    /// Download an image from a registry into the local store
    ///
    /// Mirrors configured for the registry in `$OTTERS_HOME/config.toml` (`[registry."docker.io"]
    /// mirrors = ["mirror.internal:5000"]`) are asked first, in order; a failing mirror is skipped
    /// (with a warning) and the registry asked. Each mirror gets its own stored credentials, never
    /// the registry's; digests are checked whoever serves. The status line and `--format json`
    /// (`from`) say which hosts served the pull. See docs/registries.md, "Mirrors".
    Pull(pull::PullArgs),
    /// Resolve the images an Agentfile names and write Agentfile.lock
    Lock(lock::LockArgs),
    /// Copy an image, with `-r` everything it pins, between registries, OCI layouts and archives
    ///
    /// Keeps every digest, every platform of an index, and the referrers (signatures, SBOMs,
    /// attestations). Between registries each blob streams from the source to the destination,
    /// checked on the way; to or from a layout or an archive, blobs are staged in the local store.
    /// A copy that stops is finished by running it again (what arrived is skipped). See
    /// docs/registries.md, "Promote an agent between registries".
    Copy(copy::CopyArgs),
    /// Store credentials for a registry
    Login(login::LoginArgs),
    /// Remove stored credentials for a registry
    Logout(login::LogoutArgs),
    /// Materialise an agent and run it, on the host or in a container
    Run(run::Args),
    /// Make signing keys (`otters key generate --out PREFIX`)
    #[command(subcommand)]
    Key(key::KeyCommand),
    /// Sign a file or a digest with a key: a Sigstore bundle, no registry involved
    SignBlob(blob::SignBlobArgs),
    /// Verify a Sigstore bundle against a public key and a file or digest
    VerifyBlob(blob::VerifyBlobArgs),
    /// Attach files to an image as an OCI 1.1 referrer of the given artifact type
    Attach(referrers::AttachArgs),
    /// List an image's referrers (signatures, SBOMs, attestations) as a tree
    Discover(referrers::DiscoverArgs),
    /// Sign an image: attach a key-based Sigstore bundle over its manifest digest
    Sign(sign::SignArgs),
    /// Check that an image, as its reference resolves now, is signed by a key
    Verify(sign::VerifyArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish)
    Completion(meta::CompletionArgs),
    /// Show the version of otters and the platform it runs on
    Version(meta::VersionArgs),
    /// Write one man page per command into a directory (for packagers)
    #[command(hide = true)]
    Manpages(meta::ManpagesArgs),
}

/// `otters image …`: Docker's spelling of the store commands.
#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Remove the blobs no image in the local store uses (same as `otters prune`)
    Prune(prune::PruneArgs),
}

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
        Command::Build(a) => build::run(a),
        Command::Images(a) => images::run_images(a),
        Command::Inspect(a) => inspect::run_inspect(a),
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

/// `--format` of the commands whose output is text for people or JSON for programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
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
