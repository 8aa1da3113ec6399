//! The policy's values: one [`Layer`] per `[policy]` table read (each rule with the file and line
//! it was written at), and the [`Policy`] they make together.
//!
//! Takes: parsed layers. Returns: the layers in order and what they allow together. Must never:
//! let a later layer widen an earlier one — every layer's rule is kept and every one is held, so
//! together they allow only what each allows (intersection).

use globset::GlobMatcher;
use std::fmt;
use std::path::PathBuf;

/// Where a layer was read from, in the order layers are combined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `$OTTERS_HOME/config.toml`: what an organisation bakes into its machines.
    Home(PathBuf),
    /// A file named by the `OTTERS_POLICY` variable.
    Env(PathBuf),
    /// A file named on the command line.
    File(PathBuf),
    /// The project's `otters.toml`.
    Project(PathBuf),
}

impl Source {
    pub fn path(&self) -> &PathBuf {
        match self {
            Source::Home(p) | Source::Env(p) | Source::File(p) | Source::Project(p) => p,
        }
    }

    /// What kind of layer, as `otters policy show` says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Home(_) => "user config",
            Source::Env(_) => "OTTERS_POLICY",
            Source::File(_) => "policy file",
            Source::Project(_) => "project",
        }
    }
}

/// The file and line a rule was written at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// One rule's value and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule<T> {
    pub value: T,
    pub origin: Origin,
}

/// A glob over image repositories (`registry.example.com/approved/*`): `*` stays inside one path
/// component, `**` crosses them.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub text: String,
    pub matcher: GlobMatcher,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// The most a MOUNT may ask. Ordered: `None < ReadOnly < ReadWrite`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MountLevel {
    None,
    ReadOnly,
    ReadWrite,
}

impl MountLevel {
    pub fn parse(s: &str) -> Option<MountLevel> {
        match s {
            "none" => Some(MountLevel::None),
            "ro" => Some(MountLevel::ReadOnly),
            "rw" => Some(MountLevel::ReadWrite),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MountLevel::None => "none",
            MountLevel::ReadOnly => "ro",
            MountLevel::ReadWrite => "rw",
        }
    }
}

/// Who must have signed every image otters acts on (`[policy.signature]`). Paths are absolute
/// or relative to the directory of the file that named them, already joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signature {
    Key(PathBuf),
    Keyless {
        identity: String,
        regexp: bool,
        issuer: String,
        trusted_root: PathBuf,
    },
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signature::Key(k) => write!(f, "key {}", k.display()),
            Signature::Keyless {
                identity,
                regexp,
                issuer,
                ..
            } => {
                let how = if *regexp {
                    "identity matching"
                } else {
                    "identity"
                };
                write!(f, "{how} {identity} (issuer {issuer})")
            }
        }
    }
}

/// One `[policy]` table: the rules it sets (`None`: it says nothing about that rule).
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    pub source: Source,
    pub registries: Option<Rule<Vec<Pattern>>>,
    pub providers: Option<Rule<Vec<String>>>,
    pub capabilities: Option<Rule<Vec<String>>>,
    pub bins: Option<Rule<Vec<String>>>,
    pub mounts: Option<Rule<MountLevel>>,
    /// `HOST:PORT` entries as written (each parses: [`crate::egress::parse_entry`]).
    pub egress: Option<Rule<Vec<String>>>,
    pub require_pinned: Option<Rule<bool>>,
    pub signature: Option<Rule<Signature>>,
}

impl Layer {
    /// A layer from `source` that sets no rule.
    pub fn empty(source: Source) -> Layer {
        Layer {
            source,
            registries: None,
            providers: None,
            capabilities: None,
            bins: None,
            mounts: None,
            egress: None,
            require_pinned: None,
            signature: None,
        }
    }

    /// Whether it sets no rule at all.
    pub fn is_empty(&self) -> bool {
        *self == Layer::empty(self.source.clone())
    }
}

/// Every layer, in order (user config, `OTTERS_POLICY`, policy files, project). An empty policy
/// allows everything otters allows without one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    pub layers: Vec<Layer>,
}

impl Policy {
    pub fn is_empty(&self) -> bool {
        self.layers.iter().all(Layer::is_empty)
    }

    /// Every layer's `pick` rule, in layer order.
    pub fn rules<'a, T: 'a>(
        &'a self,
        pick: impl Fn(&'a Layer) -> Option<&'a Rule<T>> + 'a,
    ) -> impl Iterator<Item = &'a Rule<T>> + 'a {
        self.layers.iter().filter_map(pick)
    }

    /// The names every layer that sets a list rule allows (`None`: no layer sets it).
    pub fn allowed_names(
        &self,
        pick: impl Fn(&Layer) -> Option<&Rule<Vec<String>>>,
    ) -> Option<Vec<String>> {
        let mut out: Option<Vec<String>> = None;
        for layer in &self.layers {
            let Some(rule) = pick(layer) else { continue };
            out = Some(match out {
                None => rule.value.clone(),
                Some(prev) => prev
                    .into_iter()
                    .filter(|n| rule.value.contains(n))
                    .collect(),
            });
        }
        out
    }

    /// The most any MOUNT may ask: the least of every layer's.
    pub fn mount_level(&self) -> Option<&Rule<MountLevel>> {
        self.rules(|l| l.mounts.as_ref()).min_by_key(|r| r.value)
    }

    /// The first layer that requires pinned images, if any does (a later `false` widens nothing).
    pub fn require_pinned(&self) -> Option<&Rule<bool>> {
        self.rules(|l| l.require_pinned.as_ref()).find(|r| r.value)
    }

    /// Every signer the layers require: an image must verify for each.
    pub fn signatures(&self) -> Vec<&Rule<Signature>> {
        self.rules(|l| l.signature.as_ref()).collect()
    }
}
