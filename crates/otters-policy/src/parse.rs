//! One `[policy]` table, from a TOML file's text to a [`Layer`].
//!
//! Takes: the text, where it came from, and the directory relative paths are taken from. Returns:
//! the layer (`None` when the file has no `[policy]` table), or an error naming the file and line.
//! Must never: accept a key it does not know, a malformed glob, a list that allows nothing an
//! agent needs (`registries = []`, `providers = []`), or a signer whose key or trusted root cannot
//! be read. Reads only those two files, bounded.

use crate::error::PolicyError;
use crate::model::{Layer, MountLevel, Origin, Pattern, Rule, Signature, Source};
use otters_core::files::{read_named, MAX_SMALL_FILE};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

type Names = Option<Spanned<Vec<Spanned<String>>>>;

#[derive(Deserialize)]
struct FileShape {
    policy: Option<Spanned<Shape>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Shape {
    registries: Names,
    providers: Names,
    capabilities: Names,
    bins: Names,
    mounts: Option<Spanned<String>>,
    egress: Names,
    require_pinned: Option<Spanned<bool>>,
    signature: Option<Spanned<SignatureShape>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct SignatureShape {
    key: Option<Spanned<String>>,
    identity: Option<Spanned<String>>,
    identity_regexp: Option<Spanned<String>>,
    issuer: Option<Spanned<String>>,
    trusted_root: Option<Spanned<String>>,
}

/// The 1-based line of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    // One piece more than there are line breaks before `at`.
    text.as_bytes()[..at.min(text.len())]
        .split(|&b| b == b'\n')
        .count()
}

struct Cx<'a> {
    text: &'a str,
    path: &'a Path,
    base: &'a Path,
}

impl Cx<'_> {
    fn origin(&self, at: usize) -> Origin {
        Origin {
            path: self.path.to_path_buf(),
            line: line_of(self.text, at),
        }
    }

    fn err(&self, at: usize, message: impl Into<String>) -> PolicyError {
        PolicyError::At {
            origin: self.origin(at),
            message: message.into(),
        }
    }

    fn rule<T>(&self, s: &Spanned<impl Sized>, value: T) -> Rule<T> {
        Rule {
            value,
            origin: self.origin(s.span().start),
        }
    }

    fn names(
        &self,
        key: &str,
        n: Names,
        nonempty: Option<&str>,
    ) -> Result<Option<Rule<Vec<String>>>, PolicyError> {
        let Some(list) = n else { return Ok(None) };
        if let Some(why) = nonempty.filter(|_| list.get_ref().is_empty()) {
            return Err(self.err(list.span().start, format!("`{key} = []` allows {why}; list what is allowed, or remove the key to leave it open")));
        }
        let mut out = Vec::new();
        for item in list.get_ref() {
            let v = item.get_ref().trim();
            if v.is_empty() {
                return Err(self.err(
                    item.span().start,
                    format!("`{key}`: an empty name allows nothing; remove it"),
                ));
            }
            if !out.iter().any(|o: &String| o == v) {
                out.push(v.to_owned());
            }
        }
        Ok(Some(self.rule(&list, out)))
    }

    /// A path written in the file: relative to the file's directory.
    fn file(&self, s: &Spanned<String>, what: &'static str) -> Result<PathBuf, PolicyError> {
        let p = self.base.join(s.get_ref());
        match read_named(&p, what, MAX_SMALL_FILE) {
            Ok(bytes) if what == "signing key" && !String::from_utf8_lossy(&bytes).contains("-----BEGIN ") => {
                Err(self.err(s.span().start, format!("{} is not a PEM public key; give the `.pub` file `otters key generate` wrote", p.display())))
            }
            Ok(_) => Ok(p),
            Err(e) => Err(self.err(s.span().start, format!("{e}"))),
        }
    }

    fn signature(&self, s: Spanned<SignatureShape>) -> Result<Rule<Signature>, PolicyError> {
        let at = s.span().start;
        let sig = s.get_ref();
        let value = match (&sig.key, &sig.identity, &sig.identity_regexp) {
            (Some(k), None, None) => {
                if let Some(extra) = sig.issuer.as_ref().or(sig.trusted_root.as_ref()) {
                    return Err(self.err(extra.span().start, "[policy.signature]: `issuer` and `trusted-root` belong to a keyless identity, not to `key`; remove them or the key"));
                }
                Signature::Key(self.file(k, "signing key")?)
            }
            (None, Some(id), None) | (None, None, Some(id)) => {
                let issuer = sig.issuer.as_ref().ok_or_else(|| self.err(at, "[policy.signature]: a keyless identity needs `issuer`, the OIDC issuer its certificate must name (GitHub Actions: https://token.actions.githubusercontent.com)"))?;
                let root = sig.trusted_root.as_ref().ok_or_else(|| self.err(at, "[policy.signature]: a keyless identity needs `trusted-root`, Sigstore's trusted_root.json (see docs/supply-chain.md)"))?;
                if id.get_ref().is_empty() || issuer.get_ref().is_empty() {
                    return Err(self.err(id.span().start, "[policy.signature]: an empty identity or issuer matches nothing; write the signer's identity"));
                }
                Signature::Keyless {
                    identity: id.get_ref().clone(),
                    regexp: sig.identity_regexp.is_some(),
                    issuer: issuer.get_ref().clone(),
                    trusted_root: self.file(root, "trusted root")?,
                }
            }
            (None, None, None) => return Err(self.err(at, "[policy.signature] names no signer; give `key`, or `identity` (or `identity-regexp`) with `issuer` and `trusted-root`")),
            _ => return Err(self.err(at, "[policy.signature] names more than one signer; give one of `key`, `identity` or `identity-regexp` (another layer may require another signer)")),
        };
        Ok(Rule {
            value,
            origin: self.origin(at),
        })
    }
}

fn registries(cx: &Cx<'_>, n: Names) -> Result<Option<Rule<Vec<Pattern>>>, PolicyError> {
    let Some(list) = n else { return Ok(None) };
    if list.get_ref().is_empty() {
        return Err(cx.err(list.span().start, "`registries = []` allows no image, and every agent needs a RUNTIME; list the repositories allowed (globs such as \"registry.example.com/approved/*\"), or remove the key to leave it open"));
    }
    let mut out = Vec::new();
    for item in list.get_ref() {
        let text = item.get_ref().trim();
        let glob = globset::GlobBuilder::new(text)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                cx.err(
                    item.span().start,
                    format!("`registries`: {:?} is not a glob: {}", text, e.kind()),
                )
            })?;
        if text.is_empty() || text.contains("://") {
            return Err(cx.err(item.span().start, format!("`registries`: {text:?} is not a repository glob; write it as an image name without tag or scheme, e.g. \"registry.example.com/approved/*\"")));
        }
        out.push(Pattern {
            text: text.to_owned(),
            matcher: glob.compile_matcher(),
        });
    }
    Ok(Some(cx.rule(&list, out)))
}

/// `egress` entries are `HOST:PORT` as EGRESS reads them (`*.suffix:PORT`, `[v6]:PORT`).
fn egress(cx: &Cx<'_>, n: Names) -> Result<Option<Rule<Vec<String>>>, PolicyError> {
    let Some(list) = n else { return Ok(None) };
    for item in list.get_ref() {
        let v = item.get_ref();
        if let Err(why) = crate::egress::parse_entry(v.trim()) {
            return Err(cx.err(item.span().start, format!("`egress`: {v:?} is not HOST:PORT ({why}); the host may start with `*.`, an IPv6 address is written `[addr]:port`, e.g. \"api.example.com:443\"")));
        }
    }
    cx.names("egress", Some(list), None)
}

/// The `[policy]` table of `text` (the file at `path`; relative paths from `base`), or `None`.
pub(crate) fn layer(text: &str, source: Source, base: &Path) -> Result<Option<Layer>, PolicyError> {
    let path = source.path().clone();
    let cx = Cx {
        text,
        path: &path,
        base,
    };
    let toml_err = |e: toml::de::Error| {
        let at = e.span().map_or(0, |s| s.start);
        cx.err(at, e.message().trim().to_owned())
    };
    let doc: FileShape = toml::from_str(text).map_err(toml_err)?;
    let Some(table) = doc.policy else {
        return Ok(None);
    };
    let shape = table.into_inner();
    let mounts = match shape.mounts {
        None => None,
        Some(m) => {
            let level = MountLevel::parse(m.get_ref()).ok_or_else(|| {
                cx.err(m.span().start, format!("`mounts = {:?}`: use \"none\", \"ro\" or \"rw\" (the most a MOUNT may ask)", m.get_ref()))
            })?;
            Some(cx.rule(&m, level))
        }
    };
    let layer = Layer {
        registries: registries(&cx, shape.registries)?,
        providers: cx.names(
            "providers",
            shape.providers,
            Some("no MODEL provider, and an agent needs a MODEL"),
        )?,
        capabilities: cx.names("capabilities", shape.capabilities, None)?,
        bins: cx.names("bins", shape.bins, None)?,
        mounts,
        egress: egress(&cx, shape.egress)?,
        require_pinned: shape.require_pinned.map(|b| cx.rule(&b, *b.get_ref())),
        signature: shape.signature.map(|s| cx.signature(s)).transpose()?,
        source,
    };
    Ok(Some(layer))
}
