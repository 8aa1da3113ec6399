//! What the shared flag groups of `otters_cli::flags` become where that needs the process:
//! `--build-arg` (`build`, `lint`, `lock`), its bare `KEY`s read from the environment.
//!
//! Takes: parsed flags. Returns: their values. Must never: hold a command's logic.
use miette::miette;
use otters_cli::flags::BuildArgFlags;
use otters_pipeline::build::results::{build_args, BuildArgError, BuildArgs};

/// `--build-arg`'s values, a bare `KEY` taken from the environment (a note on stderr unless
/// `quiet` when it is not set), and which came from there.
pub(super) fn build_arg_values(flags: &BuildArgFlags, quiet: bool) -> miette::Result<BuildArgs> {
    let args = build_args(&flags.build_args, |k| std::env::var(k)).map_err(|e| match e {
            BuildArgError::NotUnicode(kv) => miette!("--build-arg {kv}: the environment variable {kv} is not UTF-8; pass --build-arg {kv}=value"),
            BuildArgError::NoName(kv) => miette!("--build-arg `{kv}` has no name; write it as --build-arg NAME=value or --build-arg NAME"),
        })?;
    for k in args.unset.iter().filter(|_| !quiet) {
        let k = otters_core::escape::escape(k);
        eprintln!(
            "note: --build-arg {k}: {k} is not set in the environment; the ARG keeps its default"
        );
    }
    Ok(args)
}
