//! `otters diff`.
use crate::flags::WhereFlags;

/// `--format` of `otters diff`: text for people, JSON for programs, Markdown for a PR comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    Markdown,
}

/// `--fail-on`: the class of change that makes `otters diff` exit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// The agent may do more than before (a BIN, CAPABILITY or MOUNT added, ro → rw, another
    /// provider or repository)
    Escalation,
    /// An escalation, or what the model is told or runs changed (a CONTEXT, USAGE, EXEC, MODEL)
    Behaviour,
    /// Any change
    Any,
}

// Rationale: one switch per flag is what clap parses them into.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The agent before: a tag, a digest, a registry reference, or an Agentfile directory
    pub a: String,
    /// The agent after: a tag, a digest, a registry reference, or an Agentfile directory
    pub b: String,
    /// Output format
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Exit 1 when the agents differ (as `git diff --exit-code`)
    #[arg(long)]
    pub exit_code: bool,
    /// Exit 1 when a change of this class is present
    #[arg(long, value_enum, value_name = "CLASS")]
    pub fail_on: Option<FailOn>,
    /// Compare this platform's manifest of an index (default: this host's), e.g. linux/arm64
    #[arg(long)]
    pub platform: Option<String>,
    /// Show CONFIG and ENV values (hidden by default: a diff is often posted publicly)
    #[arg(long)]
    pub show_values: bool,
    /// Build an Agentfile directory with pins from Agentfile.lock only; never contact a registry
    /// for it
    #[arg(long)]
    pub offline: bool,
    /// Build an Agentfile directory against the registries, but fail if that would change its
    /// Agentfile.lock (as `otters build --locked`): what a CI job diffing a pull request wants
    #[arg(long, conflicts_with = "offline")]
    pub locked: bool,
    /// Build an Agentfile directory whose references have no pin without a digest
    #[arg(long)]
    pub allow_unpinned: bool,
    #[command(flatten)]
    pub place: WhereFlags,
}
