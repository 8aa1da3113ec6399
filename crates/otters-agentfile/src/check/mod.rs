//! The `check` stage: every validation rule and lint over one Agentfile, with stable codes.
//!
//! Takes: a [`SourceFile`] (or raw bytes) and [`Options`]. Returns: an [`Analysis`] — the typed
//! model and every diagnostic of every stage (syntax, ir, rules), suppressions applied, severity
//! overrides applied, sorted by position then code. Must never: do I/O, print, or stop at the
//! first problem.

pub mod config;
pub mod fixes;
pub(crate) mod rules;
mod suppress;

pub use fixes::REASON_PLACEHOLDER;
pub use rules::not_a_bin_image::missing_bin_annotation;
pub use rules::portability::Target;
pub use rules::BUILTIN_CATALOGUE;

use crate::diagnostic::{Code, Diagnostic, Severity, SourceFile};
use crate::ir;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the checker may ask about the build context, which it never reads itself: the caller
/// answers (`otters lint` from the Agentfile's directory; tests from a table).
pub trait SourceKinds: std::fmt::Debug + Send + Sync {
    /// True when the ADD source `src` (as written, after ARG expansion) is a directory.
    fn is_dir(&self, src: &str) -> bool;
}

/// What the checker may ask about a RUNTIME or BIN image, which it never fetches itself: the
/// caller answers from what it holds without the network (`otters lint` from `Agentfile.lock`
/// and the local store), or says it does not know.
pub trait ImageKinds: std::fmt::Debug + Send + Sync {
    /// Whether the image `reference` (as written, after ARG expansion) used as `role` is a bin
    /// image (spec §f).
    fn bin_image(&self, role: ImageRole, reference: &str) -> BinImage;
}

/// A check of the whole model that the caller brings, run with the rules (the organisation policy
/// of `otters-policy`, which this crate cannot depend on). Its findings go through suppressions
/// and severity overrides as the rules' do, so codes that must hold (errors) are never lowered.
pub trait ModelCheck: std::fmt::Debug + Send + Sync {
    /// The findings for `model` (spans into the file it was read from).
    fn check(&self, model: &ir::Agentfile) -> Vec<Diagnostic>;
}

/// The roles of an image that must be a bin image (spec §f: the RUNTIME is installed as a BIN is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageRole {
    Runtime,
    Bin,
}

impl ImageRole {
    /// The instruction, as the messages name it.
    pub fn keyword(self) -> &'static str {
        match self {
            ImageRole::Runtime => "RUNTIME",
            ImageRole::Bin => "BIN",
        }
    }
}

/// What an [`ImageKinds`] knows of one image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinImage {
    /// Nothing offline says (the image is neither locked nor in the local store).
    Unknown,
    /// It has the bin name annotation.
    Bin,
    /// It has no bin name annotation; the text says where that was seen (`Agentfile.lock`, the
    /// local store).
    NotBin(String),
}

/// What a project may do to a code's severity (`otters.toml` `[lint.severity]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeverityOverride {
    Off,
    Info,
    Warning,
    Error,
}

impl SeverityOverride {
    pub fn parse(s: &str) -> Option<SeverityOverride> {
        match s {
            "off" => Some(SeverityOverride::Off),
            "info" => Some(SeverityOverride::Info),
            "warning" => Some(SeverityOverride::Warning),
            "error" => Some(SeverityOverride::Error),
            _ => None,
        }
    }
}

/// Inputs that change what is reported.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--build-arg K=V`: fills `ARG K` and overrides its default.
    pub build_args: BTreeMap<String, String>,
    /// The capabilities AF211 checks against; `None` uses the built-in openotters catalogue.
    pub capability_catalogue: Option<Vec<String>>,
    /// Per-code overrides. Codes whose default severity is `error` cannot be lowered (see
    /// [`config`]); the config loader refuses such entries.
    pub severity_overrides: BTreeMap<Code, SeverityOverride>,
    /// Image references `Agentfile.lock` pins to a digest (as written in the Agentfile). AF201
    /// does not report them: the build uses the locked digest, not the moving tag.
    pub locked: std::collections::BTreeSet<String>,
    /// The openotters versions the portability lints (AF230–AF236) check against; `None` means
    /// [`Target::ALL`] (`[portability] targets` in `otters.toml`), an empty list turns them off.
    pub portability: Option<Vec<Target>>,
    /// Answers whether an ADD source is a directory (AF230); `None` when there is no build
    /// context to ask (standard input, or a caller that does not care).
    pub sources: Option<Arc<dyn SourceKinds>>,
    /// Answers whether a RUNTIME or BIN image is a bin image (AF403); `None` when the caller has
    /// nothing to ask (the build checks this at resolution, against the registry).
    pub images: Option<Arc<dyn ImageKinds>>,
    /// Extra checks of the model (the organisation policy); `None`: none.
    pub model_checks: Option<Arc<dyn ModelCheck>>,
}

impl Options {
    /// The portability targets in effect.
    pub fn portability_targets(&self) -> &[Target] {
        self.portability.as_deref().unwrap_or(&Target::ALL)
    }
}

/// The result of checking one file.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub model: ir::Agentfile,
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    pub fn has_errors(&self) -> bool {
        crate::diagnostic::has_errors(&self.diagnostics)
    }
}

/// Parses, lowers and checks one Agentfile.
pub fn analyze(file: &SourceFile, opts: &Options) -> Analysis {
    let mut ast = crate::syntax::parse(file);
    let (model, lowered) = ir::from_ast(&ast, file, &opts.build_args);
    let cx = rules::Ctx {
        file,
        ast: &ast,
        model: &model,
        opts,
    };
    let mut found = rules::run(&cx);
    if let Some(extra) = &opts.model_checks {
        found.extend(extra.check(&model));
    }
    // Moved, not cloned: a file of bad lines has a finding per line.
    let mut diagnostics = std::mem::take(&mut ast.diagnostics);
    diagnostics.extend(lowered);
    diagnostics.extend(found);
    let mut diagnostics = suppress::apply(file, &ast, diagnostics);
    apply_overrides(&mut diagnostics, &opts.severity_overrides);
    diagnostics.sort_by_key(|d| (d.start(), d.code));
    Analysis { model, diagnostics }
}

/// Like [`analyze`], for bytes that may not be UTF-8: invalid input gives one AF001 diagnostic
/// at the first bad byte (and the returned file holds the valid prefix, so it can be rendered).
pub fn analyze_bytes(name: &str, bytes: &[u8], opts: &Options) -> (SourceFile, Analysis) {
    match crate::syntax::decode(bytes) {
        Ok(text) => {
            let file = SourceFile::new(name, text);
            let analysis = analyze(&file, opts);
            (file, analysis)
        }
        Err(d) => {
            let valid = d.start().min(bytes.len());
            let prefix = String::from_utf8_lossy(&bytes[..valid]).into_owned();
            let analysis = Analysis {
                model: ir::Agentfile::default(),
                diagnostics: vec![d],
            };
            (SourceFile::new(name, prefix), analysis)
        }
    }
}

/// Drops findings turned `off` and changes the severity of the rest. Findings whose code is an
/// error by default are never lowered: the build would reject the file anyway.
fn apply_overrides(diags: &mut Vec<Diagnostic>, overrides: &BTreeMap<Code, SeverityOverride>) {
    if overrides.is_empty() {
        return;
    }
    diags.retain_mut(|d| {
        let Some(o) = overrides.get(&d.code) else {
            return true;
        };
        if d.code.default_severity() == Severity::Error {
            return true;
        }
        match o {
            SeverityOverride::Off => return false,
            SeverityOverride::Info => d.severity = Severity::Info,
            SeverityOverride::Warning => d.severity = Severity::Warning,
            SeverityOverride::Error => d.severity = Severity::Error,
        }
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_utf8_reports_offset() {
        let (file, a) = analyze_bytes("x", b"FROM scratch\nNAME caf\xe9\n", &Options::default());
        assert_eq!(a.diagnostics.len(), 1);
        assert_eq!(a.diagnostics[0].code, Code::InvalidUtf8);
        assert_eq!(a.diagnostics[0].start(), 21);
        assert!(a.diagnostics[0].message.contains("offset 21"));
        assert_eq!(file.text, "FROM scratch\nNAME caf");
    }

    #[test]
    fn overrides_change_lints_but_not_errors() {
        let text = "FROM scratch\nRUNTIME r:latest\nNAME a\nMODEL m\nCONFIG Bad=1\n";
        let file = SourceFile::new("Agentfile", text);
        let mut opts = Options::default();
        opts.severity_overrides
            .insert(Code::UnpinnedImageReference, SeverityOverride::Off);
        opts.severity_overrides
            .insert(Code::ConfigKeyNotDns1123, SeverityOverride::Off);
        let codes: Vec<_> = analyze(&file, &opts)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect();
        assert_eq!(codes, [Code::ConfigKeyNotDns1123]);
        opts.severity_overrides
            .insert(Code::UnpinnedImageReference, SeverityOverride::Error);
        let a = analyze(&file, &opts);
        assert!(a
            .diagnostics
            .iter()
            .any(|d| d.code == Code::UnpinnedImageReference && d.severity == Severity::Error));
    }

    #[test]
    fn diagnostics_are_sorted_by_position_then_code() {
        let file = SourceFile::new("A", "NAME x\nFROM scratch\nENV path=1\n");
        let a = analyze(&file, &Options::default());
        let keys: Vec<_> = a.diagnostics.iter().map(|d| (d.start(), d.code)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert!(keys.len() >= 3, "{keys:?}");
    }
}
