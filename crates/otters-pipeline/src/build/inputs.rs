//! The filesystem side of [`crate::lower::inputs::Inputs`]: resolves ADD and `file://` sources
//! inside a build context, refusing anything that leaves it.
//!
//! Takes: the build context directory and source paths as written. Returns: real paths with their
//! kind, or AF301 (missing) / AF302 (escapes: absolute, `..`, symlink leading out) / AF303 (not a
//! regular file or directory, or unreadable). Must never: follow a symlink to outside the context,
//! or read file contents (it only stats and opens). The returned path is canonical (no symlink in
//! any component) and is opened here, and again by the writer, through [`crate::build::nofollow`], so a
//! file swapped for a symlink after this check is never read through the link.

use crate::build::nofollow::{self, Kind};
use crate::lower::inputs::{InputError, InputKind, Inputs, Resolved};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// A build context on disk.
#[derive(Clone, Debug)]
pub struct FsInputs {
    root: PathBuf,
    shown: String,
}

impl FsInputs {
    /// `root` must exist; it is canonicalised so symlinked contexts work.
    pub fn new(root: &Path) -> io::Result<Self> {
        Ok(Self {
            root: fs::canonicalize(root)?,
            shown: root.display().to_string(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The real path a build with context `context` reads the ADD or `file://` source `src` from, or
/// the build's own refusal (an absolute path, `..`, a symlink out of the context, a missing file,
/// a FIFO or device). For a front end that opens a source without building (the language
/// server's go-to-definition), so it opens nothing the build would not.
pub fn source_path(context: &Path, src: &str) -> Result<PathBuf, String> {
    let inputs = FsInputs::new(context).map_err(|e| format!("{}: {e}", context.display()))?;
    inputs
        .resolve(src)
        .map(|r| r.path)
        .map_err(|e| e.to_string())
}

/// The largest `.agentignore` read (a pattern file, not data).
pub const MAX_AGENTIGNORE: u64 = 1 << 20;

impl FsInputs {
    /// The text of `.agentignore` at the context root, `None` when there is none. Read like any
    /// other input (a symlink must stay inside the context, nothing is followed while reading, a
    /// FIFO or device is refused), and at most [`MAX_AGENTIGNORE`] bytes of UTF-8.
    pub fn read_agentignore(&self) -> Result<Option<String>, AgentignoreError> {
        use std::io::Read as _;
        match fs::symlink_metadata(self.root.join(".agentignore")) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AgentignoreError::Read(e)),
            Ok(_) => {}
        }
        let r = self.resolve(".agentignore").map_err(|e| match e {
            InputError::NotFound { .. } => AgentignoreError::Dangling,
            InputError::Escapes { why, .. } | InputError::Unreadable { why, .. } => {
                AgentignoreError::Refused(why)
            }
        })?;
        if r.kind != InputKind::File {
            return Err(AgentignoreError::Directory);
        }
        let (file, _) = nofollow::open_file(&r.path).map_err(AgentignoreError::Read)?;
        let mut bytes = Vec::new();
        file.take(MAX_AGENTIGNORE + 1)
            .read_to_end(&mut bytes)
            .map_err(AgentignoreError::Read)?;
        if bytes.len() as u64 > MAX_AGENTIGNORE {
            return Err(AgentignoreError::TooLarge);
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(AgentignoreError::NotUtf8)
    }
}

/// Why `.agentignore` cannot be used; shown after its path.
#[derive(Debug, thiserror::Error)]
pub enum AgentignoreError {
    #[error("cannot read it: {0}")]
    Read(#[source] io::Error),
    #[error("it is a dangling symlink")]
    Dangling,
    /// It leads outside the context, or is not a regular file (the reason as resolution gives it).
    #[error("{0}")]
    Refused(String),
    #[error("it is a directory, not a file")]
    Directory,
    #[error("it is larger than {MAX_AGENTIGNORE} bytes; an ignore file holds patterns")]
    TooLarge,
    #[error("it is not UTF-8 (byte {})", .0.utf8_error().valid_up_to())]
    NotUtf8(#[source] std::string::FromUtf8Error),
    /// A pattern does not compile.
    #[error(transparent)]
    Pattern(#[from] crate::build::ignore::IgnoreError),
}

impl Inputs for FsInputs {
    fn resolve(&self, src: &str) -> Result<Resolved, InputError> {
        let escapes = |why: &str| InputError::Escapes {
            src: src.to_owned(),
            why: why.to_owned(),
        };
        let unreadable = |why: String| InputError::Unreadable {
            src: src.to_owned(),
            why,
        };
        let not_found = || InputError::NotFound {
            src: src.to_owned(),
            context: self.shown.clone(),
        };
        let rel_src = src.strip_prefix("file://").unwrap_or(src);
        if rel_src.is_empty() {
            return Err(not_found());
        }
        let rel = Path::new(rel_src);
        if rel.is_absolute() {
            return Err(escapes(
                "is an absolute path; sources must be relative to the build context",
            ));
        }
        if rel.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(escapes(
                "uses `..`; sources must stay inside the build context",
            ));
        }
        let joined = self.root.join(rel);
        if let Err(e) = fs::symlink_metadata(&joined) {
            return Err(if e.kind() == io::ErrorKind::NotFound {
                not_found()
            } else {
                unreadable(e.to_string())
            });
        }
        let target = match fs::canonicalize(&joined) {
            Ok(p) => p,
            // A symlink whose target does not exist.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let Ok(inside) = target.strip_prefix(&self.root) else {
            return Err(escapes("is a symlink that leads outside the build context"));
        };
        let special = || unreadable("it is not a regular file or directory".to_owned());
        let kind = match nofollow::kind(&target).map_err(|e| unreadable(e.to_string()))? {
            Kind::File => {
                nofollow::open_file(&target).map_err(|e| unreadable(e.to_string()))?;
                InputKind::File
            }
            Kind::Dir => {
                nofollow::open_dir(&target).map_err(|e| unreadable(e.to_string()))?;
                InputKind::Dir
            }
            // `canonicalize` resolved every link: one here now means the context is changing.
            Kind::Symlink => {
                return Err(unreadable(
                    "it was replaced by a symlink while it was being checked; build again when the context is stable".to_owned(),
                ))
            }
            Kind::Special => return Err(special()),
        };
        let rel = inside
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        Ok(Resolved {
            path: target,
            rel,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let outer = tempfile::tempdir().unwrap();
        let ctx = outer.path().join("ctx");
        fs::create_dir_all(ctx.join("data/sub")).unwrap();
        fs::write(ctx.join("data/a.txt"), "a").unwrap();
        fs::write(outer.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("../secret", ctx.join("leak")).unwrap();
        std::os::unix::fs::symlink("data/a.txt", ctx.join("alias")).unwrap();
        std::os::unix::fs::symlink("nowhere", ctx.join("dangling")).unwrap();
        let inputs = FsInputs::new(&ctx).unwrap();

        let r = inputs.resolve("./data/a.txt").unwrap();
        assert_eq!((r.kind, r.rel.as_str()), (InputKind::File, "data/a.txt"));
        assert_eq!(inputs.resolve("data").unwrap().kind, InputKind::Dir);
        assert_eq!(inputs.resolve("alias").unwrap().rel, "data/a.txt");
        assert!(matches!(
            inputs.resolve("leak"),
            Err(InputError::Escapes { .. })
        ));
        assert!(matches!(
            inputs.resolve("../secret"),
            Err(InputError::Escapes { .. })
        ));
        assert!(matches!(
            inputs.resolve("/etc/passwd"),
            Err(InputError::Escapes { .. })
        ));
        assert!(matches!(
            inputs.resolve("missing"),
            Err(InputError::NotFound { .. })
        ));
        assert!(matches!(
            inputs.resolve("dangling"),
            Err(InputError::NotFound { .. })
        ));
        assert!(matches!(
            FsInputs::new(Path::new("/dev")).unwrap().resolve("null"),
            Err(InputError::Unreadable { .. })
        ));
        rustix::fs::mkfifoat(rustix::fs::CWD, ctx.join("fifo"), 0o600.into()).unwrap();
        let e = inputs.resolve("fifo").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");

        assert!(matches!(inputs.read_agentignore(), Ok(None)));
        std::os::unix::fs::symlink("../secret", ctx.join(".agentignore")).unwrap();
        let e = inputs.read_agentignore().unwrap_err().to_string();
        assert!(e.contains("leads outside the build context"), "{e}");
        fs::remove_file(ctx.join(".agentignore")).unwrap();
        std::os::unix::fs::symlink("fifo", ctx.join(".agentignore")).unwrap();
        let e = inputs.read_agentignore().unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        fs::remove_file(ctx.join(".agentignore")).unwrap();
        fs::write(ctx.join(".agentignore"), vec![b'#'; 2 << 20]).unwrap();
        assert!(inputs
            .read_agentignore()
            .unwrap_err()
            .to_string()
            .contains("larger than"));
        fs::write(ctx.join(".agentignore"), "*.log\n").unwrap();
        assert_eq!(
            inputs.read_agentignore().unwrap(),
            Some("*.log\n".to_owned())
        );
    }
}
