//! Flag groups several commands flatten (`#[command(flatten)]`), so each flag is declared once:
//! how references are pinned (`build`, `run`) and `--build-arg` (`build`, `lock`). A command whose
//! help says more about a flag sets its own text with `mut_arg` (`run`'s pinning flags apply
//! only when it builds).
//!
//! Takes: nothing but clap's parse. Returns: flag values. Must never: hold a command's logic.
use miette::miette;
use otters_pipeline::build::results::{build_args, BuildArgError};
use std::collections::BTreeMap;

/// How the images an Agentfile names are pinned while it is built.
#[derive(Debug, Default, clap::Args)]
pub struct PinFlags {
    /// Take every pin from Agentfile.lock; never contact a registry
    #[arg(long)]
    pub offline: bool,
    /// Build references that have no pin without a digest (with a warning)
    #[arg(long)]
    pub allow_unpinned: bool,
    /// Fail when resolution would change Agentfile.lock
    #[arg(long)]
    pub locked: bool,
}

/// `--build-arg`, as `build` and `lock` take it.
#[derive(Debug, Default, clap::Args)]
pub struct BuildArgFlags {
    /// Set a build argument (repeatable); a bare KEY takes its value from the environment
    #[arg(long = "build-arg", value_name = "K=V")]
    pub build_args: Vec<String>,
}

impl BuildArgFlags {
    /// The values, a bare `KEY` taken from the environment (a note on stderr unless `quiet`
    /// when it is not set).
    pub(super) fn values(&self, quiet: bool) -> miette::Result<BTreeMap<String, String>> {
        let (args, unset) = build_args(&self.build_args, |k| std::env::var(k)).map_err(|e| match e {
            BuildArgError::NotUnicode(kv) => miette!("--build-arg {kv}: the environment variable {kv} is not UTF-8; pass --build-arg {kv}=value"),
            BuildArgError::NoName(kv) => miette!("--build-arg `{kv}` has no name; write it as --build-arg NAME=value or --build-arg NAME"),
        })?;
        for k in unset.iter().filter(|_| !quiet) {
            eprintln!("note: --build-arg {k}: {k} is not set in the environment; the ARG keeps its default");
        }
        Ok(args)
    }
}
