//! A project on disk, as every front end finds it: which Agentfile a path names (one rule for
//! lint, build and lock), every Agentfile below a directory, the `otters.toml` that applies to a
//! directory, and a capability list file.
//!
//! Takes: paths the user gave. Returns: located files, their bytes (read confined, bounded) and
//! parsed configs, or a [`ProjectError`]. Must never: follow a symlinked Agentfile or config out
//! of the directory the user named (diagnostics quote these files), or print.

use otters_agentfile::check::{self, config};
use otters_core::files::{self, ReadError};
use otters_oci::spec::descriptor::ManifestDoc;
use otters_oci::store::query::read_manifest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// What finding or reading a project's files can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("cannot read {}: {source}", dir.display())]
    ReadDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("no file named Agentfile under {}", .0.display())]
    NoAgentfile(PathBuf),
    #[error("invalid config {}: not UTF-8", .0.display())]
    ConfigNotUtf8(PathBuf),
    #[error("invalid config {}: {source}", path.display())]
    Config {
        path: PathBuf,
        source: config::ConfigError,
    },
}

/// The build context and the Agentfile a command names: `PATH` a directory means `PATH/Agentfile`,
/// `PATH` a file means that file (its directory is the context); `-f FILE` is taken relative to
/// the context, or as written when only that exists.
pub fn locate(context: &Path, file: Option<&Path>) -> (PathBuf, PathBuf) {
    match file {
        Some(f) => {
            let in_context = context.join(f);
            if f.is_relative() && !in_context.exists() && f.exists() {
                (context.to_owned(), f.to_owned())
            } else {
                (context.to_owned(), in_context)
            }
        }
        None if context.is_file() => (
            context
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_owned(),
            context.to_owned(),
        ),
        None => (context.to_owned(), context.join("Agentfile")),
    }
}

/// The directory an Agentfile is confined to, and its path below it: the context when the file
/// lies inside it, else the file's own directory.
pub fn confinement(context: &Path, path: &Path) -> (PathBuf, PathBuf) {
    match files::split_inside(context, path) {
        Some(rel) => (context.to_owned(), rel),
        None => files::parent_and_name(path),
    }
}

/// Reads the Agentfile [`locate`] found: at most [`files::MAX_AGENTFILE`] bytes of a regular
/// file, a symlink followed only inside its [`confinement`].
pub fn read_agentfile(context: &Path, path: &Path) -> Result<Vec<u8>, ReadError> {
    let (root, rel) = confinement(context, path);
    files::read_confined(&root, &rel, path, "Agentfile", files::MAX_AGENTFILE)
}

/// Reads an Agentfile from standard input (or any stream), bounded as a file is.
pub fn read_agentfile_stream(stream: impl std::io::Read) -> Result<Vec<u8>, ReadError> {
    files::read_stream(
        stream,
        Path::new("standard input"),
        "Agentfile",
        files::MAX_AGENTFILE,
    )
}

/// One Agentfile a lint names: where to read it and the name to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Standard input; with a path (`lint --stdin-filename`), it stands for that file: its name
    /// is shown, and `otters.toml`, `Agentfile.lock` and ADD sources are looked up beside it.
    Stdin(Option<PathBuf>),
    /// `root/rel`: a symlinked Agentfile is followed only while it stays inside `root`, the
    /// directory the user named (for a file, its own directory), so a repository cannot make
    /// `otters lint` print `/proc/self/environ` or a key file in its snippets.
    File {
        path: PathBuf,
        root: PathBuf,
        rel: PathBuf,
        name: String,
    },
}

impl Input {
    fn file(path: PathBuf, root: PathBuf, rel: PathBuf) -> Input {
        Input::File {
            name: display(&path),
            path,
            root,
            rel,
        }
    }

    /// The directory to look for `otters.toml` from, and to resolve ADD sources in.
    pub fn dir(&self) -> PathBuf {
        match self {
            Input::Stdin(None) => PathBuf::from("."),
            Input::File { path, .. } | Input::Stdin(Some(path)) => path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        }
    }

    /// The name diagnostics show.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin(None) => "<stdin>".to_owned(),
            Input::Stdin(Some(path)) => display(path),
            Input::File { name, .. } => name.clone(),
        }
    }

    /// The file's bytes (standard input read from `stdin`).
    pub fn read(&self, stdin: impl std::io::Read) -> Result<Vec<u8>, ReadError> {
        match self {
            Input::Stdin(_) => read_agentfile_stream(stdin),
            Input::File {
                root, rel, name, ..
            } => files::read_confined(
                root,
                rel,
                Path::new(name),
                "Agentfile",
                files::MAX_AGENTFILE,
            ),
        }
    }

    /// What `otters lint` knows of the file from its `Agentfile.lock`, read once: the references
    /// it pins, and what is known offline of the RUNTIME and BIN images (the lock, then the local
    /// store at `store`; see [`OfflineImages`]). Nothing for unnamed standard input.
    pub fn lock_facts(
        &self,
        store: &Path,
    ) -> (
        BTreeSet<String>,
        Option<std::sync::Arc<dyn check::ImageKinds>>,
    ) {
        match self {
            Input::File { path, .. } | Input::Stdin(Some(path)) => {
                let locks =
                    crate::resolve::Lockfile::read_all(&crate::resolve::lock_path_for(path))
                        .unwrap_or_default();
                let locked = locks
                    .iter()
                    .flat_map(|l| l.images.iter().map(|e| e.reference.clone()))
                    .collect();
                (
                    locked,
                    Some(std::sync::Arc::new(OfflineImages::new(locks, store))),
                )
            }
            Input::Stdin(None) => (BTreeSet::new(), None),
        }
    }

    /// What an ADD source is, seen from the file's directory (none for unnamed standard input).
    pub fn sources(&self) -> Option<std::sync::Arc<dyn check::SourceKinds>> {
        match self {
            Input::File { .. } | Input::Stdin(Some(_)) => {
                Some(std::sync::Arc::new(ContextDir(self.dir())))
            }
            Input::Stdin(None) => None,
        }
    }
}

/// Shows `./x` as `x`, as people type it.
fn display(p: &Path) -> String {
    let s = p.to_string_lossy().into_owned();
    s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
}

/// The Agentfiles `paths` name: `-` is standard input (standing for `stdin_name` when given), a
/// directory its `Agentfile` (with `recursive`, every file named `Agentfile` below it, sorted), a
/// file itself.
pub fn agentfiles(
    paths: &[PathBuf],
    recursive: bool,
    stdin_name: Option<&Path>,
) -> Result<Vec<Input>, ProjectError> {
    let mut inputs = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            inputs.push(Input::Stdin(stdin_name.map(Path::to_path_buf)));
        } else if p.is_dir() && recursive {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            if found.is_empty() {
                return Err(ProjectError::NoAgentfile(p.clone()));
            }
            found.sort();
            inputs.extend(found.into_iter().map(|path| {
                let rel = path.strip_prefix(p).unwrap_or(&path).to_owned();
                Input::file(path, p.clone(), rel)
            }));
        } else if p.is_dir() {
            inputs.push(Input::file(
                p.join("Agentfile"),
                p.clone(),
                PathBuf::from("Agentfile"),
            ));
        } else {
            let (root, rel) = files::parent_and_name(p);
            inputs.push(Input::file(p.clone(), root, rel));
        }
    }
    Ok(inputs)
}

/// Every file named `Agentfile` below `dir`, skipping hidden directories and `target`.
fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), ProjectError> {
    let fail = |source| ProjectError::ReadDir {
        dir: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let name = entry.file_name();
        let hidden = name.to_string_lossy().starts_with('.');
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !hidden && name != "target" {
                walk(&entry.path(), found)?;
            }
        } else if name == "Agentfile" {
            found.push(entry.path());
        }
    }
    Ok(())
}

/// The Agentfile's directory, standing for the build context of `otters build DIR`: AF230 asks it
/// whether an ADD source is a directory. Sources that are absolute or climb out with `..` are
/// not looked up (the build refuses them with AF302), and a symlink named as the source is not
/// followed (the build refuses that too).
#[derive(Debug)]
pub struct ContextDir(pub PathBuf);

impl check::SourceKinds for ContextDir {
    fn is_dir(&self, src: &str) -> bool {
        let rel = Path::new(src);
        let inside = rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        inside && std::fs::symlink_metadata(self.0.join(rel)).is_ok_and(|m| m.file_type().is_dir())
    }
}

/// A store and its tagged names (`Store::list`).
type Listed = (otters_oci::Store, Vec<(String, otters_oci::Descriptor)>);

/// Whether a RUNTIME or BIN image is a bin image, as far as is known without the network: the
/// lock beside the Agentfile first (the pin a build uses; an entry records the image's bin name),
/// then an image the local store holds under the same name. Anything else is unknown: the build
/// asks the registry (AF403 at resolution). Never writes: a store that does not exist is not
/// created, and the store's `index.json` is read, not resolved through (which may add entries).
#[derive(Debug)]
pub struct OfflineImages {
    locks: Vec<crate::resolve::Lockfile>,
    store_root: PathBuf,
    /// The local store and its listing, read on first use (once, whatever is asked after).
    store: std::sync::OnceLock<Option<Listed>>,
    /// The store's answers so far: `otters lsp` checks a document on every edit with the options
    /// it opened with, and asks the store once per reference, not once per keystroke.
    seen: std::sync::Mutex<BTreeMap<String, check::BinImage>>,
}

impl OfflineImages {
    /// For an Agentfile whose lock holds `locks`, and the store at `store`. An unreadable lock or
    /// store is no answer: `otters build` reports it (AF409, or the store's own error). The store
    /// is opened only when a reference the locks do not pin is asked about.
    pub fn new(locks: Vec<crate::resolve::Lockfile>, store: &Path) -> OfflineImages {
        OfflineImages {
            locks,
            store_root: store.to_path_buf(),
            store: std::sync::OnceLock::new(),
            seen: std::sync::Mutex::default(),
        }
    }

    /// The local store and its tagged names, opened and listed on first use; none when it does
    /// not exist (never created here) or cannot be read.
    fn store(&self) -> Option<&Listed> {
        self.store
            .get_or_init(|| {
                if !self.store_root.join("index.json").is_file() {
                    return None;
                }
                let store = otters_oci::Store::open(&self.store_root).ok()?;
                let listed = store.list().ok()?;
                Some((store, listed))
            })
            .as_ref()
    }

    /// From the local store: the image tagged `reference` (a tagged index answers by its own
    /// annotations, else by those of its platform manifests that are in the store).
    fn store_answer(&self, reference: &str) -> check::BinImage {
        let Some((docs, known)) = self.stored_manifests(reference) else {
            return check::BinImage::Unknown;
        };
        let named = docs.iter().any(|d| {
            otters_oci::spec::annotations::BIN_NAME_KEYS
                .iter()
                .any(|k| d.annotations.get(*k).is_some_and(|v| !v.is_empty()))
        });
        match (named, known) {
            (true, _) => check::BinImage::Bin,
            (false, true) => check::BinImage::NotBin(
                "the local store's image of that name has no such annotation".to_owned(),
            ),
            (false, false) => check::BinImage::Unknown,
        }
    }

    /// The manifest (or index and the manifests of it that are here) the store holds under
    /// `reference`, and whether they are enough to tell (an index none of whose manifests is here
    /// says nothing about them).
    fn stored_manifests(&self, reference: &str) -> Option<(Vec<ManifestDoc>, bool)> {
        let (store, listed) = self.store()?;
        let name = otters_oci::store::refname::tag_name(reference).ok()?;
        let (_, top) = listed.iter().find(|(n, _)| *n == name)?;
        let (_, top) = read_manifest(store, top).ok()?;
        let children: Vec<_> = top
            .manifests
            .iter()
            .filter(|c| store.has_blob(&c.digest))
            .map(|c| read_manifest(store, c).map(|(_, doc)| doc))
            .collect::<Result<_, _>>()
            .ok()?;
        let known = top.manifests.is_empty() || !children.is_empty();
        let mut docs = children;
        docs.push(top);
        Some((docs, known))
    }
}

impl check::ImageKinds for OfflineImages {
    fn bin_image(&self, role: check::ImageRole, reference: &str) -> check::BinImage {
        let role = match role {
            check::ImageRole::Runtime => crate::resolve::Role::Runtime,
            check::ImageRole::Bin => crate::resolve::Role::Bin,
        };
        let mut pinned = self.locks.iter().filter_map(|l| l.get(role, reference));
        match pinned.next() {
            Some(e) if e.bin.is_none() => {
                check::BinImage::NotBin(crate::resolve::lockfile::no_bin_name(e))
            }
            Some(_) => check::BinImage::Bin,
            None => {
                let mut seen = self
                    .seen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                seen.entry(reference.to_owned())
                    .or_insert_with(|| self.store_answer(reference))
                    .clone()
            }
        }
    }
}

/// What a command line adds to a project's lint options (none for the language server).
#[derive(Clone, Debug, Default)]
pub struct LintFlags {
    /// `--build-arg K=V`.
    pub build_args: BTreeMap<String, String>,
    /// `--capabilities FILE`: the capabilities AF211 checks against.
    pub catalogue: Option<Vec<String>>,
    /// `--target`: the openotters versions to check portability against, over `otters.toml`'s.
    pub targets: Option<Vec<check::Target>>,
    /// The organisation policy, already narrowed by the input's `otters.toml` (`AF5xx`).
    pub policy: Option<std::sync::Arc<otters_policy::Policy>>,
}

/// The options `otters lint` checks `input` with, and the language server a document: `config`
/// (the project's `otters.toml`), the references the input's `Agentfile.lock` pins, its
/// directory as the build context, what the local store at `store` knows of its RUNTIME and BIN
/// images (AF403, read only), and what `flags` add. One builder, so the editor and the command
/// line never disagree about a file.
pub fn lint_options(
    input: &Input,
    config: &config::LintConfig,
    flags: &LintFlags,
    store: &Path,
) -> check::Options {
    let (locked, images) = input.lock_facts(store);
    check::Options {
        build_args: flags.build_args.clone(),
        capability_catalogue: flags.catalogue.clone(),
        severity_overrides: config.severity.clone(),
        locked,
        portability: flags.targets.clone().or_else(|| config.portability.clone()),
        sources: input.sources(),
        images,
        model_checks: flags
            .policy
            .clone()
            .filter(|p| !p.is_empty())
            .map(|p| p as std::sync::Arc<dyn check::ModelCheck>),
    }
}

/// Reads a config file: one named by the user (`--config`) as given, one found by the search
/// only inside its own directory (a repository's `otters.toml` linked elsewhere is refused, since
/// a parse error would quote the file it points to).
pub fn load_config(path: &Path, found: bool) -> Result<config::LintConfig, ProjectError> {
    let what = "config file";
    let bytes = if found {
        let (root, rel) = files::parent_and_name(path);
        files::read_confined(&root, &rel, path, what, files::MAX_SMALL_FILE)
    } else {
        files::read_named(path, what, files::MAX_SMALL_FILE)
    }?;
    let text = String::from_utf8(bytes).map_err(|_| ProjectError::ConfigNotUtf8(path.into()))?;
    config::parse(&text).map_err(|source| ProjectError::Config {
        path: path.to_owned(),
        source,
    })
}

/// Finds the `otters.toml` (or `.otters.toml`) nearest to a directory, remembering each
/// directory's answer.
#[derive(Debug, Default)]
pub struct ConfigFinder {
    found: BTreeMap<PathBuf, Option<config::LintConfig>>,
}

impl ConfigFinder {
    /// The config in `dir` or the nearest directory above it; `None` when there is none.
    pub fn find(&mut self, dir: &Path) -> Result<Option<config::LintConfig>, ProjectError> {
        let start = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        if let Some(hit) = self.found.get(&start) {
            return Ok(hit.clone());
        }
        let mut result = None;
        'up: for d in start.ancestors() {
            for name in config::FILE_NAMES {
                let candidate = d.join(name);
                if candidate.is_file() {
                    result = Some(load_config(&candidate, true)?);
                    break 'up;
                }
            }
        }
        self.found.insert(start, result.clone());
        Ok(result)
    }
}

/// A capability list: one name per line; blank lines and `#` comments skipped.
pub fn read_capabilities(path: &Path) -> Result<Vec<String>, ProjectError> {
    let bytes = files::read_named(path, "capability list", files::MAX_SMALL_FILE)?;
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::check::SourceKinds as _;
    use std::fs;

    #[test]
    fn locate_is_one_rule_for_directories_files_and_dash_f() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = dir.path().to_owned();
        fs::write(ctx.join("Agentfile"), "NAME a\n").unwrap();
        assert_eq!(locate(&ctx, None), (ctx.clone(), ctx.join("Agentfile")));
        assert_eq!(
            locate(&ctx.join("Agentfile"), None),
            (ctx.clone(), ctx.join("Agentfile"))
        );
        let outside = tempfile::NamedTempFile::new().unwrap();
        let o = outside.path().to_owned();
        assert_eq!(locate(&ctx, Some(&o)), (ctx.clone(), o.clone()));
        assert_eq!(
            confinement(&ctx, &ctx.join("Agentfile")).1,
            Path::new("Agentfile")
        );
        assert_eq!(confinement(&ctx, &o).0, o.parent().unwrap());
    }

    #[test]
    fn read_agentfile_refuses_a_symlink_out_of_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let secret = tempfile::NamedTempFile::new().unwrap();
        fs::write(secret.path(), "secret").unwrap();
        std::os::unix::fs::symlink(secret.path(), dir.path().join("Agentfile")).unwrap();
        let (ctx, path) = locate(dir.path(), None);
        let err = read_agentfile(&ctx, &path).unwrap_err();
        assert!(err.to_string().contains("leads outside"), "{err}");
        fs::remove_file(dir.path().join("Agentfile")).unwrap();
        fs::write(dir.path().join("Agentfile"), "NAME a\n").unwrap();
        assert_eq!(read_agentfile(&ctx, &path).unwrap(), b"NAME a\n");
    }

    #[test]
    fn agentfiles_walks_sorted_and_skips_hidden_and_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["b", "a/x", ".git", "target", "c"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "b/Agentfile",
            "a/x/Agentfile",
            ".git/Agentfile",
            "target/Agentfile",
        ] {
            fs::write(root.join(f), "NAME a\n").unwrap();
        }
        let found = agentfiles(&[root.to_owned()], true, None).unwrap();
        let rels: Vec<_> = found
            .iter()
            .map(|i| match i {
                Input::File { rel, .. } => rel.clone(),
                Input::Stdin(_) => PathBuf::new(),
            })
            .collect();
        assert_eq!(
            rels,
            [PathBuf::from("a/x/Agentfile"), PathBuf::from("b/Agentfile")]
        );
        let err = agentfiles(&[root.join("c")], true, None).unwrap_err();
        assert!(matches!(err, ProjectError::NoAgentfile(_)), "{err}");
        let plain = agentfiles(&[root.join("b"), PathBuf::from("-")], false, None).unwrap();
        assert_eq!(plain[0].dir(), root.join("b"));
        assert_eq!(plain[1], Input::Stdin(None));
        assert_eq!(plain[1].name(), "<stdin>");
        assert_eq!(plain[0].read(std::io::empty()).unwrap(), b"NAME a\n");
        assert_eq!(plain[1].read(&b"NAME s\n"[..]).unwrap(), b"NAME s\n");
    }

    #[test]
    fn config_is_found_above_and_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("x/y");
        fs::create_dir_all(&deep).unwrap();
        fs::write(
            dir.path().join("otters.toml"),
            "[lint]\nfail-on = \"warning\"\n",
        )
        .unwrap();
        let mut finder = ConfigFinder::default();
        let cfg = finder.find(&deep).unwrap().unwrap();
        assert_eq!(
            cfg.fail_on,
            Some(otters_agentfile::diagnostic::Severity::Warning)
        );
        // Remembered: removing the file does not change the answer for the same directory.
        fs::remove_file(dir.path().join("otters.toml")).unwrap();
        assert!(finder.find(&deep).unwrap().is_some());
        assert!(ConfigFinder::default().find(&deep).unwrap().is_none());
    }

    #[test]
    fn bad_configs_say_which_file_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("otters.toml");
        fs::write(&p, "[lint]\nfail-on = \"loud\"\n").unwrap();
        let err = load_config(&p, false).unwrap_err();
        assert!(matches!(err, ProjectError::Config { .. }));
        assert!(err.to_string().starts_with("invalid config "), "{err}");
        assert!(std::error::Error::source(&err).is_some());
        fs::write(&p, b"\xff\xfe").unwrap();
        assert!(matches!(
            load_config(&p, false).unwrap_err(),
            ProjectError::ConfigNotUtf8(_)
        ));
    }

    #[test]
    fn capabilities_skip_blanks_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("caps");
        fs::write(&p, "# list\n web.fetch \n\nfs.read\n").unwrap();
        assert_eq!(read_capabilities(&p).unwrap(), ["web.fetch", "fs.read"]);
        assert!(matches!(
            read_capabilities(&dir.path().join("none")).unwrap_err(),
            ProjectError::Read(_)
        ));
    }

    #[test]
    fn context_dir_answers_only_inside() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("docs")).unwrap();
        let c = ContextDir(dir.path().to_owned());
        assert!(c.is_dir("docs"));
        assert!(c.is_dir("./docs"));
        assert!(!c.is_dir("../docs"));
        assert!(!c.is_dir("missing"));
    }
}
