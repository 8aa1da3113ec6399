//! The otters command line's grammar: every command, flag and `--help` text, as clap derives, and
//! nothing else. The `otters` binary (`src/cli/`) parses [`Cli`] and dispatches each [`Command`]
//! to the library; completions, man pages and `docs/reference/cli.md` are generated from here.
//! (uv keeps its clap definitions apart from its commands the same way, in `uv-cli`.)
//!
//! Takes: nothing but clap's parse. Returns: flag values, and the library's values they map to
//! with no I/O (`WhereFlags::for_read`, `IdentityFlags::identity`, `FailOn::severity`, `From` for
//! the enums of `--format`, `--executor`, `--kind`). Must never: read a file, the environment or
//! the network, or print; a flag's meaning is the library's.

// Rationale: clap turns the flags' doc comments into `--help` text, where `<NAME>` and
// `[:ro|:rw]` are usage notation, not HTML or intra-doc links; escaping them for rustdoc would
// put backslashes into the help.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

pub mod archive;
pub mod bin;
pub mod blob;
pub mod build;
pub mod copy;
pub mod diff;
pub mod explain;
pub mod export;
pub mod flags;
pub mod fmt;
pub mod images;
pub mod inspect;
pub mod key;
pub mod kube;
pub mod lint;
pub mod lock;
pub mod login;
pub mod lsp;
pub mod meta;
pub mod policy;
pub mod prune;
pub mod pull;
pub mod push;
pub mod referrers;
pub mod run;
pub mod schema;
pub mod sign;
pub mod tag;

use clap::{Parser, Subcommand};

/// Compile Agentfiles into reproducible OCI artifacts, move them through registries, and run them.
#[derive(Debug, Parser)]
#[command(name = "otters", version, long_about = None, propagate_version = true)]
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
    /// Show the organisation policy in effect, or check an Agentfile or image against it
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Print the JSON Schema (draft-07) of a file otters reads or writes, or of a JSON output
    ///
    /// `otters schema --list` names them; docs/schemas.md says what each describes and
    /// docs/editors.md how to give them to an editor.
    Schema(schema::Args),
    /// Build an Agentfile into an OCI artifact in the local store
    Build(build::Args),
    /// List the images in the local store
    Images(images::ImagesArgs),
    /// Show an image's manifest, config and layers
    Inspect(inspect::InspectArgs),
    /// Show what changed between two agents: classified (escalation, behaviour, pin,
    /// configuration, data, provenance), as text, JSON or a Markdown PR comment
    ///
    /// Exits 0 whether or not they differ (2 on error); 1 with `--exit-code` when they differ, or
    /// with `--fail-on CLASS` when a change of that class is present. See docs/diff.md.
    Diff(diff::DiffArgs),
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
    ///
    /// A verify key or keyless identity (`--verify-key`, `[verify]` in config.toml) holds the
    /// agent to the same gate as `otters run`: an agent it does not sign is not exported.
    Export(export::Args),
    /// Print the Kubernetes objects that run an agent's runnable export (YAML)
    ///
    /// A verify key or keyless identity (`--verify-key`, `[verify]` in config.toml) holds the
    /// agent to the same gate as `otters run`: no objects for an agent it does not sign.
    Kube(kube::Args),
    /// Make RUNTIME and BIN images (`otters bin pack NAME FILE… -t REF`)
    #[command(subcommand)]
    Bin(bin::BinCommand),
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
    /// Sign an image: attach a Sigstore bundle over its manifest digest (with a key, or keyless)
    ///
    /// The signature is stored in the local store and, when the reference names a registry that
    /// holds the same image (one pulled or pushed), pushed there too; `--local` keeps it in the
    /// store (`otters push` carries it later), `--remote` signs the image the registry holds. The
    /// command says where the signature went.
    Sign(sign::SignArgs),
    /// Check that an image, as its reference resolves now, is signed by a key or a keyless identity
    ///
    /// Without `--remote`, an image the local store holds is checked there: the command names the
    /// copy and digest it checked, and a registry tag may name another image by now (`--remote`
    /// checks that one). Signatures the store lacks are read from the image's registry.
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

/// `--format` of the commands whose output is text for people or JSON for programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}
