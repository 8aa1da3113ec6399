//! What `otters build` makes of its flags' values and leaves beside the image: the `--output`
//! destination (buildx's `type=…,dest=…`), `K=V` pairs, the image time, the result files
//! (`--iidfile`, `--metadata-file`), GitHub's job summary and the `--format json` line.
//!
//! Takes: flag values as text and a [`BuildOutput`]. Returns: typed values, files written, JSON
//! values. Must never: print (the CLI does), or leave a result file from an earlier build that
//! could pass for this one's.
use super::BuildOutput;
use otters_core::json::Value;
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::{Digest, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where `--output` puts the image besides the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// An OCI layout directory (`type=oci,tar=false` or `type=oci-layout`).
    Layout(PathBuf),
    /// An oci-archive tarball (`type=oci`, or otters' first name `type=oci-archive`).
    Archive(PathBuf),
}

/// The forms an output destination may take, said after every error about one.
pub const OUTPUT_FORMS: &str = "use type=oci,dest=FILE (a tarball), type=oci,tar=false,dest=DIR or type=oci-layout,dest=DIR (a directory)";

/// An output destination that is not one of [`OUTPUT_FORMS`]; the text reads after the flag's
/// name (`--output {this}`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}; {OUTPUT_FORMS}")]
pub struct BadOutput(String);

impl Output {
    /// A destination with buildx's meanings: `type=oci` is an oci-archive tarball,
    /// `type=oci,tar=false` and `type=oci-layout` a layout directory.
    pub fn parse(spec: &str) -> Result<Output, BadOutput> {
        let bad = |what: String| Err(BadOutput(what));
        let (mut kind, mut dest, mut tar) = (None, None, None);
        for part in spec.split(',') {
            match part.split_once('=') {
                Some(("type", t)) => kind = Some(t),
                Some(("dest", d)) => dest = Some(PathBuf::from(d)),
                Some(("tar", "true")) => tar = Some(true),
                Some(("tar", "false")) => tar = Some(false),
                Some(("tar", t)) => return bad(format!("`{spec}`: tar={t} is not true or false")),
                _ => return bad(format!("`{spec}`: unknown part `{part}`")),
            }
        }
        let Some(dest) = dest.filter(|d| !d.as_os_str().is_empty()) else {
            return bad(format!("`{spec}` has no dest="));
        };
        if dest.as_os_str() == "-" {
            return bad(format!(
                "`{spec}`: writing to standard output is not supported"
            ));
        }
        match (kind, tar) {
            (Some("oci"), Some(false)) | (Some("oci-layout"), None) => Ok(Output::Layout(dest)),
            (Some("oci"), None | Some(true)) | (Some("oci-archive"), None) => {
                Ok(Output::Archive(dest))
            }
            (Some(t), Some(_)) if t != "oci" => {
                bad(format!("`{spec}`: tar= applies to type=oci only"))
            }
            (other, _) => bad(format!(
                "type `{}` is not supported",
                other.unwrap_or_default()
            )),
        }
    }

    /// The file or directory written.
    pub fn dest(&self) -> &Path {
        match self {
            Output::Layout(d) | Output::Archive(d) => d,
        }
    }
}

/// The image could not be written to its `--output` destination.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write {}", .0.display())]
    Archive(PathBuf, #[source] otters_oci::archive::ArchiveError),
    #[error("the image was built ({0}) but not written")]
    Layout(Digest, #[source] otters_oci::archive::ArchiveError),
}

/// Writes the built image to `output` where the build itself did not: a layout directory
/// always; a tarball again when `referrers_added` (the build wrote it before they existed).
pub fn write_output(
    store: &Store,
    out: &BuildOutput,
    output: &Output,
    referrers_added: bool,
) -> Result<(), OutputError> {
    match output {
        Output::Archive(dest) if referrers_added => {
            otters_oci::archive::save(store, &out.descriptor, &out.tags, dest)
                .map_err(|e| OutputError::Archive(dest.clone(), e))
        }
        Output::Archive(_) => Ok(()),
        Output::Layout(dir) => {
            let images = [(out.descriptor.clone(), out.tags.clone())];
            otters_oci::archive::layout_dir::export_layout(store, &images, dir)
                .map_err(|e| OutputError::Layout(out.descriptor.digest.clone(), e))
        }
    }
}

/// `K=V` pairs (labels, annotations) with a non-empty key without whitespace; with `prefix`, a
/// value may start with it (buildx's `manifest:`), which is dropped. The error is the item that
/// is not `K=V`.
pub fn parse_pairs(
    items: &[String],
    prefix: Option<&str>,
) -> Result<BTreeMap<String, String>, String> {
    items
        .iter()
        .map(|kv| {
            let text = prefix.and_then(|p| kv.strip_prefix(p)).unwrap_or(kv);
            match text.split_once('=') {
                Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
                    Ok((k.to_owned(), v.to_owned()))
                }
                _ => Err(kv.clone()),
            }
        })
        .collect()
}

/// The time stamped into the image is not one.
#[derive(Debug, thiserror::Error)]
pub enum EpochError {
    #[error("the image time `{}` is not a whole number of seconds since 1970 or `git`", otters_core::escape::escape(.0))]
    Flag(String),
    #[error(transparent)]
    Env(#[from] crate::lower::epoch::BadEpoch),
    #[error(transparent)]
    Git(#[from] super::git_epoch::GitEpochError),
}

/// A `--build-arg` value no build can take: a bare `KEY` whose environment value is not UTF-8,
/// or one with no name (`=v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildArgError {
    NotUnicode(String),
    NoName(String),
}

/// `--build-arg` values, and where each came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildArgs {
    /// Name → value (the last `--build-arg` of a name wins).
    pub values: BTreeMap<String, String>,
    /// The names whose value was read from the environment (a bare `KEY` was their last
    /// `--build-arg`): a provenance records their names, not their values, unless asked.
    pub from_env: BTreeSet<String>,
    /// The bare keys `env` has no value for (the ARG keeps its default).
    pub unset: Vec<String>,
}

/// Build arguments: `K=V`, or a bare `K` taking the value `env` has for it (as docker does).
pub fn build_args(
    items: &[String],
    env: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<BuildArgs, BuildArgError> {
    let mut out = BuildArgs::default();
    for kv in items {
        let (k, v, bare) = match kv.split_once('=') {
            Some((k, v)) => (k, Some(v.to_owned()), false),
            None => match env(kv) {
                Ok(v) => (kv.as_str(), Some(v), true),
                Err(std::env::VarError::NotPresent) => (kv.as_str(), None, true),
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(BuildArgError::NotUnicode(kv.clone()))
                }
            },
        };
        if k.is_empty() {
            return Err(BuildArgError::NoName(kv.clone()));
        }
        match v {
            Some(v) => {
                out.values.insert(k.to_owned(), v);
                if bare {
                    out.from_env.insert(k.to_owned());
                } else {
                    out.from_env.remove(k);
                }
            }
            None => out.unset.push(k.to_owned()),
        }
    }
    Ok(out)
}

/// `SOURCE_DATE_EPOCH`'s time (`value`), or now when it is not set (a man page's date).
pub fn epoch_or_now(value: Option<&str>) -> Result<u64, crate::lower::epoch::BadEpoch> {
    let now = || {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.map_or(0, |d| d.as_secs())
    };
    Ok(crate::lower::epoch::parse(value)?.unwrap_or_else(now))
}

/// The image time: `flag` (seconds, or `git` for the last commit of `context`'s work tree),
/// else `env` (`SOURCE_DATE_EPOCH`), else none.
pub fn source_date_epoch(
    flag: Option<&str>,
    env: Option<&str>,
    context: &Path,
) -> Result<Option<u64>, EpochError> {
    use crate::lower::epoch;
    match flag {
        Some("git") => Ok(Some(super::git_epoch::last_commit_time(context)?)),
        Some(n) => match epoch::parse(Some(n)) {
            Ok(Some(seconds)) => Ok(Some(seconds)),
            _ => Err(EpochError::Flag(n.to_owned())),
        },
        None => Ok(epoch::parse(env)?),
    }
}

/// A result file could not be removed or written.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    #[error("cannot remove the old {}", .0.display())]
    Remove(PathBuf, #[source] std::io::Error),
    #[error("the image was built ({digest}) but {} cannot be written", path.display())]
    Write {
        digest: Digest,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// As docker does: removes stale result files before a build, so that one from an earlier build
/// cannot pass for this one's result.
pub fn remove_result_files(files: &[&Path]) -> Result<(), ResultFileError> {
    for f in files {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ResultFileError::Remove(f.to_path_buf(), e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each pushed tag as `REFERENCE@DIGEST`.
pub fn pushed(out: &BuildOutput) -> Vec<String> {
    out.pushed
        .iter()
        .map(|r| format!("{}@{}", r.reference, r.digest))
        .collect()
}

fn strings(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::from).collect())
}

/// `--metadata-file`: buildx's `containerimage.digest`, `containerimage.descriptor` and
/// `image.name` (the tags joined by `,`), plus `otters.tags` and `otters.pushed` as arrays.
pub fn metadata(out: &BuildOutput) -> Value {
    let d = &out.descriptor;
    Value::object()
        .with("containerimage.digest", d.digest.as_str())
        .with(
            "containerimage.descriptor",
            Value::object()
                .with("mediaType", d.media_type.as_str())
                .with("digest", d.digest.as_str())
                .with("size", d.size),
        )
        .with("image.name", out.tags.join(","))
        .with("otters.tags", strings(out.tags.clone()))
        .with("otters.pushed", strings(pushed(out)))
}

/// `--format json`: `{"digest","tags","size"}`, and `"pushed"` when something was.
pub fn summary_json(out: &BuildOutput) -> Value {
    let mut v = Value::object()
        .with("digest", out.descriptor.digest.as_str())
        .with("tags", strings(out.tags.clone()))
        .with("size", out.descriptor.size);
    if !out.pushed.is_empty() {
        v.push("pushed", strings(pushed(out)));
    }
    v
}

/// Writes `--iidfile` (the digest, no newline, as docker writes it) and `--metadata-file`
/// ([`metadata`], indented).
pub fn write_result_files(
    out: &BuildOutput,
    iidfile: Option<&Path>,
    metadata_file: Option<&Path>,
) -> Result<(), ResultFileError> {
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes).map_err(|source| ResultFileError::Write {
            digest: out.descriptor.digest.clone(),
            path: path.to_path_buf(),
            source,
        })
    };
    if let Some(path) = iidfile {
        write(path, out.descriptor.digest.as_str().as_bytes())?;
    }
    if let Some(path) = metadata_file {
        let mut bytes = otters_core::json::to_indented(&metadata(out)).unwrap_or_default();
        bytes.push(b'\n');
        write(path, &bytes)?;
    }
    Ok(())
}

/// Appends the build's digest, tags and pushes ([`super::ci::summary`]) to GitHub's job summary
/// file (`$GITHUB_STEP_SUMMARY`).
pub fn append_job_summary(path: &Path, out: &BuildOutput) -> std::io::Result<()> {
    use std::io::Write as _;
    let text = super::ci::summary(&out.descriptor.digest, &out.tags, &pushed(out));
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
}

/// One layer of the built manifest, for `--progress plain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// `org.opencontainers.image.title`, or `-`.
    pub title: String,
    pub digest: Digest,
    pub size: u64,
}

/// The built manifest's layers; none when it cannot be read as a manifest (an index).
pub fn layers(store: &Store, out: &BuildOutput) -> Vec<Layer> {
    let Some(doc) = store
        .read_blob(&out.descriptor.digest)
        .ok()
        .and_then(|b| ManifestDoc::parse(&b).ok())
    else {
        return Vec::new();
    };
    doc.layers
        .iter()
        .map(|l| Layer {
            title: l.title().unwrap_or("-").to_owned(),
            digest: l.digest.clone(),
            size: l.size,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_have_buildx_meanings() {
        let p = |s: &str| Output::parse(s);
        assert_eq!(
            p("type=oci,dest=a.tar"),
            Ok(Output::Archive("a.tar".into()))
        );
        assert_eq!(
            p("type=oci-archive,dest=a"),
            Ok(Output::Archive("a".into()))
        );
        assert_eq!(
            p("type=oci,tar=false,dest=d"),
            Ok(Output::Layout("d".into()))
        );
        assert_eq!(p("type=oci-layout,dest=d"), Ok(Output::Layout("d".into())));
        let err = |s: &str| p(s).unwrap_err().to_string();
        assert!(err("type=oci").starts_with("`type=oci` has no dest=; use type=oci"));
        assert!(err("type=oci,dest=-").contains("standard output is not supported"));
        assert!(err("type=oci,tar=maybe,dest=x").contains("tar=maybe is not true or false"));
        assert!(err("type=oci-layout,tar=true,dest=x").contains("tar= applies to type=oci only"));
        assert!(err("type=docker,dest=x").starts_with("type `docker` is not supported"));
        assert!(err("type=oci,dest=x,push=true").contains("unknown part `push=true`"));
    }

    #[test]
    fn pairs_need_a_key() {
        let items = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let got = parse_pairs(&items(&["manifest:a=1", "b="]), Some("manifest:")).unwrap();
        assert_eq!(got.get("a").map(String::as_str), Some("1"));
        assert_eq!(got.get("b").map(String::as_str), Some(""));
        assert_eq!(parse_pairs(&items(&["=v"]), None), Err("=v".to_owned()));
        assert_eq!(
            parse_pairs(&items(&["a b=v"]), None),
            Err("a b=v".to_owned())
        );
        assert!(parse_pairs(&items(&["manifest:a=1"]), None)
            .unwrap()
            .contains_key("manifest:a"));
    }

    #[test]
    fn the_flag_wins_over_the_environment() {
        let dir = Path::new(".");
        assert_eq!(
            source_date_epoch(Some("5"), Some("7"), dir).unwrap(),
            Some(5)
        );
        assert_eq!(source_date_epoch(None, Some("7"), dir).unwrap(), Some(7));
        assert_eq!(source_date_epoch(None, None, dir).unwrap(), None);
        let e = source_date_epoch(Some("yesterday"), None, dir).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("the image time `yesterday` is not"));
        assert!(matches!(
            source_date_epoch(None, Some("x"), dir),
            Err(EpochError::Env(_))
        ));
    }

    #[test]
    fn stale_result_files_are_removed_and_missing_ones_are_fine() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("iid");
        std::fs::write(&old, "sha256:old").unwrap();
        let missing = dir.path().join("none");
        remove_result_files(&[&old, &missing]).unwrap();
        assert!(!old.exists());
        // A directory cannot be removed as a file: the error names it.
        let e = remove_result_files(&[dir.path()]).unwrap_err();
        assert!(e.to_string().starts_with("cannot remove the old "), "{e}");
    }

    #[test]
    fn build_args_take_bare_keys_from_the_environment() {
        use std::env::VarError;
        let items = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let env = |k: &str| match k {
            "SET" => Ok("from-env".to_owned()),
            "BAD" => Err(VarError::NotUnicode(std::ffi::OsString::from("x"))),
            _ => Err(VarError::NotPresent),
        };
        let args = build_args(&items(&["A=1", "B=", "SET", "GONE"]), env).unwrap();
        let got: Vec<(&str, &str)> = args
            .values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, [("A", "1"), ("B", ""), ("SET", "from-env")]);
        assert_eq!(args.unset, ["GONE"]);
        assert_eq!(args.from_env.iter().collect::<Vec<_>>(), ["SET"]);
        // The last `--build-arg` of a name says where its value came from.
        let again = build_args(
            &items(&["SET", "SET=typed", "A", "A=1", "A"]),
            |k| match k {
                "SET" | "A" => Ok("from-env".to_owned()),
                _ => Err(VarError::NotPresent),
            },
        )
        .unwrap();
        assert_eq!(again.values["SET"], "typed");
        assert_eq!(again.from_env.iter().collect::<Vec<_>>(), ["A"]);
        let err = |v: &[&str]| build_args(&items(v), env).unwrap_err();
        assert_eq!(err(&["BAD"]), BuildArgError::NotUnicode("BAD".into()));
        assert_eq!(err(&["=v"]), BuildArgError::NoName("=v".into()));
    }
}
