//! What to build and how ([`BuildOptions`]), and the tags to give the image.

use super::ErrorKind;
use otters_oci::store::refname::{new_tag_name, tag_name};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where the Agentfile comes from.
#[derive(Clone, Debug)]
pub enum AgentfileSource {
    /// A file on disk; `Agentfile.lock` lives beside it.
    Path(PathBuf),
    /// Bytes read from standard input; no lock file is read or written.
    Stdin(Vec<u8>),
}

/// What to build and how.
// Rationale: the flags mirror `otters build`'s switches one to one.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The build context: ADD sources are relative to it, and nothing outside it is read.
    pub context: PathBuf,
    pub agentfile: AgentfileSource,
    /// Tags to give the image; empty means `<NAME>:latest` (`agent:latest` without NAME).
    pub tags: Vec<String>,
    pub build_args: BTreeMap<String, String>,
    /// The `build_args` whose value was read from the environment (a bare `--build-arg KEY`): the
    /// provenance records their names, never their values, unless `record_env_build_args`.
    pub env_build_args: BTreeSet<String>,
    /// `--provenance-env-args`: record the values of `env_build_args` too.
    pub record_env_build_args: bool,
    /// `--label`: added to the Agentfile's LABELs (overriding one of the same key), so they reach
    /// the config blob and the manifest annotations exactly as a LABEL does.
    pub labels: BTreeMap<String, String>,
    /// `--annotation`: manifest annotations only, set last (they override LABELs and the title).
    pub annotations: BTreeMap<String, String>,
    /// `--annotations-from-ci` ([`super::ci::annotations`]): on every manifest (before `annotations`,
    /// which override them) and on a multi-platform index.
    pub ci_annotations: BTreeMap<String, String>,
    /// Also write the image to this oci-archive file.
    pub archive: Option<PathBuf>,
    /// Take every pin from `Agentfile.lock`; never contact a registry.
    pub offline: bool,
    /// Fail (AF406) when resolution would change `Agentfile.lock`.
    pub locked: bool,
    /// With `offline`: build references the lock does not pin without a digest (warning).
    pub allow_unpinned: bool,
    /// `os/arch[/variant]` to resolve RUNTIME and BIN images for; default this machine.
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine.
    pub insecure: bool,
    /// Push every tag to its registry after building.
    pub push: bool,
    /// The file-hash cache to use (`$OTTERS_HOME/cache/blobs.json`); `None` re-reads everything.
    pub hash_cache: Option<PathBuf>,
    pub source_date_epoch: Option<u64>,
    /// Where registry credentials are read from; default `$DOCKER_CONFIG` or `~/.docker`.
    pub docker_config: Option<PathBuf>,
    /// Describe the build's inputs for an SBOM and provenance ([`super::BuildOutput::supply`]).
    pub supply_inputs: bool,
    /// The user's organisation policy (config.toml, `OTTERS_POLICY`, named files); the build
    /// narrows it with the `[policy]` of the Agentfile's `otters.toml` and refuses an Agentfile
    /// that breaks it, naming every violation (`AF5xx`).
    pub policy: otters_policy::Policy,
}

impl BuildOptions {
    /// Options for building `agentfile` in `context` with every switch off.
    pub fn new(context: PathBuf, agentfile: AgentfileSource) -> Self {
        BuildOptions {
            context,
            agentfile,
            tags: Vec::new(),
            build_args: BTreeMap::new(),
            env_build_args: BTreeSet::new(),
            record_env_build_args: false,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            ci_annotations: BTreeMap::new(),
            archive: None,
            offline: false,
            locked: false,
            allow_unpinned: false,
            platform: None,
            insecure: false,
            push: false,
            hash_cache: None,
            source_date_epoch: None,
            docker_config: None,
            supply_inputs: false,
            policy: otters_policy::Policy::default(),
        }
    }
}

/// The tags to give: `wanted` as stored (each must follow the reference grammar, see
/// [`check_tags`]), or `<NAME>:latest`.
pub(super) fn tags_for(wanted: &[String], name: Option<&str>) -> Result<Vec<String>, ErrorKind> {
    if wanted.is_empty() {
        let default = format!(
            "{}:latest",
            name.filter(|n| !n.is_empty()).unwrap_or("agent")
        );
        return tag_name(&default)
            .map(|t| vec![t])
            .map_err(|source| ErrorKind::Tag {
                tag: default,
                source,
            });
    }
    check_tags(wanted)
}

/// The stored names of the tags a user asked for (`-t`), or the first one that is not a valid
/// reference (with the rule it breaks and a suggestion). [`super::build`] calls it before it reads or
/// writes anything, so a bad tag costs nothing; a CLI may call it before opening the store.
pub fn check_tags(wanted: &[String]) -> Result<Vec<String>, ErrorKind> {
    wanted
        .iter()
        .map(|t| {
            new_tag_name(t).map_err(|source| ErrorKind::Tag {
                tag: t.clone(),
                source,
            })
        })
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_given_tags() {
        assert_eq!(tags_for(&[], Some("meteo")).unwrap(), ["meteo:latest"]);
        assert_eq!(tags_for(&[], None).unwrap(), ["agent:latest"]);
        assert_eq!(
            tags_for(&["a".into(), "r.io/x:1".into()], Some("n")).unwrap(),
            ["a:latest", "r.io/x:1"]
        );
        assert!(matches!(
            tags_for(&["a b".into()], None),
            Err(ErrorKind::Tag { .. })
        ));
    }
}
