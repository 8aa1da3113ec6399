//! What `otters run` makes of its flags' values before and around [`super::prepare`]: the
//! overrides (`-e`, `--config`, `--model`, `-v`), an Agentfile built first when the argument is
//! a path, and the warnings a plan gives.
//!
//! Takes: flag values. Returns: [`Overrides`], user mounts, the tag built, warning sentences.
//! Must never: print, or build anything when the argument is an image reference.
use super::env::{parse_override, EnvError};
use super::mounts::{self, MountError, RealHost, UserMount};
use super::overrides::{parse_config, OverrideError, Overrides};
use super::plan::{RunPlan, Warning};
use super::prepare::{self, Prepared};
use otters_agentfile::diagnostic::{Diagnostic, Severity, SourceFile};
use otters_oci::Store;
use otters_pipeline::build::{self, AgentfileSource, BuildError, BuildOptions};
use std::path::{Path, PathBuf};

/// An override that is not one.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error(transparent)]
    Config(#[from] OverrideError),
    #[error(transparent)]
    Mount(#[from] MountError),
}

/// `-e KEY=VALUE`, `--config KEY=VALUE`, `--model` and `-v HOST:TARGET…`, checked before
/// anything is read.
pub fn overrides(
    model: Option<String>,
    envs: &[String],
    configs: &[String],
    mounts: &[String],
) -> Result<(Overrides, Vec<UserMount>), RequestError> {
    let overrides = Overrides {
        model,
        envs: envs
            .iter()
            .map(|e| parse_override(e))
            .collect::<Result<_, _>>()?,
        configs: configs
            .iter()
            .map(|c| parse_config(c))
            .collect::<Result<_, _>>()?,
    };
    Ok((overrides, mounts::parse_all(mounts, &RealHost)?))
}

/// How an Agentfile named by path is built before it runs.
// Rationale: `otters run`'s switches, one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug, Default)]
pub struct BuildFirst {
    pub platform: Option<String>,
    pub insecure: bool,
    pub offline: bool,
    pub allow_unpinned: bool,
    pub locked: bool,
    /// The file-hash cache.
    pub hash_cache: Option<PathBuf>,
    /// `SOURCE_DATE_EPOCH`.
    pub source_date_epoch: Option<String>,
    /// The user's organisation policy; the build narrows it with the project's `otters.toml`.
    pub policy: otters_policy::Policy,
}

/// Why the Agentfile could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildFirstError {
    #[error("cannot name the image built from {}: {source}", path.display())]
    Tag {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Epoch(#[from] otters_pipeline::lower::epoch::BadEpoch),
    /// The build failed (its diagnostics are in it).
    #[error("the build failed: {}", .0.kind)]
    Build(Box<BuildError>),
}

/// An image built from an Agentfile, and its warnings.
#[derive(Debug)]
pub struct Built {
    /// The tag it was built into (derived from its path).
    pub tag: String,
    pub file: SourceFile,
    /// Warnings and worse (no info).
    pub warnings: Vec<Diagnostic>,
}

/// `otters run PATH`: builds the Agentfile (or context) at `path` into `store` under a tag
/// derived from the path.
pub fn build_first(store: &Store, path: &Path, how: &BuildFirst) -> Result<Built, BuildFirstError> {
    let tag = prepare::build_tag(path).map_err(|source| BuildFirstError::Tag {
        path: path.to_path_buf(),
        source,
    })?;
    let (context, agentfile) = build::locate(path, None);
    let opts = BuildOptions {
        tags: vec![tag.clone()],
        platform: how.platform.clone(),
        insecure: how.insecure,
        offline: how.offline,
        allow_unpinned: how.allow_unpinned,
        locked: how.locked,
        hash_cache: how.hash_cache.clone(),
        source_date_epoch: otters_pipeline::lower::epoch::parse(how.source_date_epoch.as_deref())?,
        policy: how.policy.clone(),
        ..BuildOptions::new(context, AgentfileSource::Path(agentfile))
    };
    let out =
        build::build(&opts, store, &mut |_| {}).map_err(|e| BuildFirstError::Build(Box::new(e)))?;
    let warnings = out
        .diagnostics
        .into_iter()
        .filter(|d| d.severity >= Severity::Warning)
        .collect();
    Ok(Built {
        tag,
        file: out.file,
        warnings,
    })
}

/// Whether a dry run shows a plan a real run would refuse: declared mounts are missing and
/// `--allow-missing-mounts` was not given.
pub fn refused(plan: &RunPlan, dry_run: bool, allow_missing_mounts: bool) -> bool {
    dry_run && !allow_missing_mounts && !plan.missing_mounts.is_empty()
}

/// The plan's warnings, and one when MODEL's provider key is missing (`model` is `--model`,
/// else the image's); when the plan is `refused`, not the one about unmounted mounts (the
/// refusal says it).
pub fn warnings(
    prepared: &Prepared,
    plan: &RunPlan,
    model: Option<&str>,
    providers: &[String],
    refused: bool,
) -> Vec<Warning> {
    let mut out: Vec<Warning> = plan
        .warnings
        .iter()
        .filter(|w| !(refused && matches!(w, Warning::Unmounted(_))))
        .cloned()
        .collect();
    let model = model.or(prepared
        .image
        .model
        .agent
        .model
        .as_ref()
        .map(|m| m.value.as_str()));
    out.extend(prepare::missing_provider_key(model, providers, &plan.env));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn overrides_are_checked_before_anything_is_read() {
        let (o, mounts) = overrides(
            Some("m".into()),
            &strings(&["A=1"]),
            &strings(&["k=v"]),
            &[],
        )
        .unwrap();
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(o.envs, [("A".to_owned(), "1".to_owned())]);
        assert_eq!(o.configs, [("k".to_owned(), "v".to_owned())]);
        assert!(mounts.is_empty());
        assert!(matches!(
            overrides(None, &strings(&["A"]), &[], &[]),
            Err(RequestError::Env(_))
        ));
        assert!(matches!(
            overrides(None, &[], &strings(&["=v"]), &[]),
            Err(RequestError::Config(_))
        ));
        assert!(matches!(
            overrides(None, &[], &[], &strings(&["no-colon"])),
            Err(RequestError::Mount(_))
        ));
    }
}
