//! Verification of an image through its referrers: which bundle referrers to try, in which order,
//! within which budget, by which signer (a key, or a keyless identity under a trusted root), and
//! what the signed statement must say. `otters verify` and the run gate (`otters run --verify-key`
//! or `--certificate-identity`) both end here: one walk for key-based and keyless bundles.
//!
//! Takes: a [`Referrers`] source (the local store, or a registry, behind the caller's trait
//! object), the image's manifest digest and [`VerifyOptions`]; for [`verify_local_first`] a second
//! source the caller opens only when the first does not do. Returns: the first statement that
//! verifies, or what was found and why none held. Must never: accept a statement of another
//! predicate type than the one asked for (a signed "scan: FAILED" attestation is not a signature),
//! read more than the budget allows, or trust a referrer list, an `artifactType` or an annotation
//! for anything but the order in which bundles are tried.

use crate::bundle::{self, Verified, BUNDLE_V03, MAX_BUNDLE};
use crate::keyless_verify::{self, Identity, KeylessVerified, TrustedRoot};
use crate::keys::PublicKey;
use crate::statement::SIGN_PREDICATE;
use otters_spec::descriptor::{Descriptor, ManifestDoc};
use otters_spec::digest::Digest;
use std::fmt::Write as _;

/// Annotation cosign puts on a bundle layer and manifest: the statement's predicate type.
pub const ANN_BUNDLE_PREDICATE: &str = "dev.sigstore.bundle.predicateType";
/// Annotation cosign puts on a bundle layer and manifest: what the bundle holds.
pub const ANN_BUNDLE_CONTENT: &str = "dev.sigstore.bundle.content";

/// Default total bytes (referrer manifests and bundles) one verification may read: two bundles of
/// the largest size a bundle may be.
pub const MAX_TOTAL_BYTES: u64 = 2 * MAX_BUNDLE as u64;
/// Default number of referrers one verification may read before giving up.
pub const MAX_CANDIDATES: usize = 32;

/// The short names `--type` accepts, as cosign spells them, and the predicate types they mean.
pub const PREDICATE_ALIASES: &[(&str, &str)] = &[
    ("signature", SIGN_PREDICATE),
    ("slsaprovenance1", "https://slsa.dev/provenance/v1"),
    ("cyclonedx", "https://cyclonedx.org/bom"),
    ("spdxjson", "https://spdx.dev/Document"),
    ("vuln", "https://cosign.sigstore.dev/attestation/vuln/v1"),
];

/// The predicate type `--type NAME` asks for: an alias of [`PREDICATE_ALIASES`] or a URI.
///
/// # Errors
/// A name that is neither an alias nor a URI (`scheme:` followed by something), with the aliases.
pub fn predicate_type(name: &str) -> Result<String, String> {
    if let Some((_, uri)) = PREDICATE_ALIASES.iter().find(|(a, _)| *a == name) {
        return Ok((*uri).to_owned());
    }
    let uri_like = name.split_once(':').is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
            && !name.chars().any(char::is_control)
    });
    if uri_like {
        return Ok(name.to_owned());
    }
    let names: Vec<&str> = PREDICATE_ALIASES.iter().map(|(a, _)| *a).collect();
    Err(format!(
        "predicate type {} is neither a URI (e.g. https://slsa.dev/provenance/v1) nor one of {}",
        otters_core::escape::escape(name),
        names.join(", ")
    ))
}

/// Where the referrers of an image are read from. Errors are sentences for the report.
pub trait Referrers {
    /// Every referrer of `subject` the source lists (of any artifact type: an entry may lack its
    /// type, as after `skopeo copy` of a tag-schema index).
    fn list(&self, subject: &Digest) -> Result<Vec<Descriptor>, String>;
    /// A referrer's manifest bytes, checked against its digest.
    fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, String>;
    /// A blob, checked against its digest, at most `max` bytes.
    fn blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, String>;
    /// Whether a read costs no request (the local store): then only the byte budget bounds the
    /// search, not [`VerifyOptions::max_candidates`].
    fn is_local(&self) -> bool {
        false
    }
}

/// Who must have signed a bundle.
#[derive(Clone, Debug)]
pub enum Signer<'a> {
    /// The holder of this key (a key-based bundle).
    Key(&'a PublicKey),
    /// A keyless signer: a certificate chaining to `trusted_root` (Sigstore's `trusted_root.json`,
    /// read once for every bundle tried) for exactly this identity and OIDC issuer.
    Keyless {
        identity: Identity<'a>,
        issuer: &'a str,
        trusted_root: &'a TrustedRoot,
    },
}

/// How an image is verified.
#[derive(Clone, Debug)]
pub struct VerifyOptions<'a> {
    /// Who must have signed the bundle.
    pub signer: Signer<'a>,
    /// The predicate type the signed statement must have; [`SIGN_PREDICATE`] for a signature.
    pub predicate_type: String,
    /// At most this many bytes of referrer manifests and bundles are read.
    pub max_bytes: u64,
    /// At most this many referrers are read.
    pub max_candidates: usize,
}

impl<'a> VerifyOptions<'a> {
    /// A plain signature by `key` (cosign's `verify`), with the default budget.
    pub fn signature(key: &'a PublicKey) -> Self {
        VerifyOptions::by(Signer::Key(key))
    }

    /// A plain signature by `signer`, with the default budget.
    pub fn by(signer: Signer<'a>) -> Self {
        VerifyOptions {
            signer,
            predicate_type: SIGN_PREDICATE.to_owned(),
            max_bytes: MAX_TOTAL_BYTES,
            max_candidates: MAX_CANDIDATES,
        }
    }
}

/// A bundle that verified, and what it says of its signer.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// A key-based bundle.
    Key(Verified),
    /// A keyless bundle: the certificate's identity and issuer.
    Keyless(KeylessVerified),
}

impl Verdict {
    /// The signed statement's predicate type.
    pub fn predicate_type(&self) -> &str {
        match self {
            Verdict::Key(v) => &v.predicate_type,
            Verdict::Keyless(v) => &v.predicate_type,
        }
    }
}

/// When [`verify_local_first`] turns to its second source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Only when the first has no bundle at all (`otters verify`: a plain pull brings none).
    WhenUnsigned,
    /// Whenever the first does not verify (the run gate: the registry may hold a newer signature).
    OnAnyFailure,
}

/// A source opened on demand: `Ok(None)` when there is no second place to look.
pub type OpenSource<'s> = dyn FnOnce() -> Result<Option<Box<dyn Referrers + 's>>, String> + 's;

/// Verifies `digest` in `first`; when that fails as `when` allows, in the source `second` opens
/// (the image's registry), whose answer is then the answer.
///
/// # Errors
/// As [`verify_image`]; a second source that cannot be opened is [`ImageVerifyError::List`].
pub fn verify_local_first(
    first: &dyn Referrers,
    second: Box<OpenSource<'_>>,
    digest: &Digest,
    opts: &VerifyOptions<'_>,
    when: Fallback,
) -> Result<Verdict, ImageVerifyError> {
    let err = match verify_image(first, digest, opts) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let retry = match when {
        Fallback::WhenUnsigned => err == ImageVerifyError::NotSigned,
        Fallback::OnAnyFailure => true,
    };
    if !retry {
        return Err(err);
    }
    match second().map_err(ImageVerifyError::List)? {
        Some(source) => verify_image(source.as_ref(), digest, opts),
        None => Err(err),
    }
}

/// Why an image did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageVerifyError {
    /// The referrers could not be listed.
    #[error("cannot list its referrers: {0}")]
    List(String),
    /// No referrer is (or may be) a Sigstore bundle.
    #[error("it has no Sigstore bundle referrer")]
    NotSigned,
    /// Bundles were tried; none verified.
    #[error("{}", none_verifies(*.found, .tried, .cut.as_deref()))]
    NoneVerifies {
        /// Referrers that are, or may be, bundles.
        found: usize,
        /// Each referrer read and why it did not hold.
        tried: Vec<(Digest, String)>,
        /// Set when the budget stopped the search: which limit.
        cut: Option<String>,
    },
}

fn none_verifies(found: usize, tried: &[(Digest, String)], cut: Option<&str>) -> String {
    let reasons: Vec<String> = tried.iter().map(|(d, why)| format!("{d}: {why}")).collect();
    let mut s = format!(
        "{found} bundle(s) found, none verifies ({})",
        reasons.join("; ")
    );
    if let Some(c) = cut {
        let _ = write!(s, "; stopped after {} of them: {c}", tried.len());
    }
    s
}

/// The order in which a referrer is tried (lower first), or `None` when it is not a bundle.
/// Only the order depends on the listing's `artifactType` and annotation: whatever is tried is
/// verified in full.
fn rank(d: &Descriptor, wanted: &str) -> Option<u8> {
    match d.artifact_type.as_deref() {
        Some(BUNDLE_V03) => Some(match d.annotations.get(ANN_BUNDLE_PREDICATE) {
            Some(p) if p == wanted => 0,
            None => 1,
            Some(_) => 3,
        }),
        // Unclassified (a copy that dropped the index entry's type): its manifest will say.
        None => Some(2),
        Some(_) => None,
    }
}

/// Most bytes a bundle referrer's manifest may be (one bundle layer, an empty config, a subject
/// and a few annotations are under 2 KiB): a larger one is not read as a candidate.
pub const MAX_BUNDLE_MANIFEST: u64 = 64 * 1024;

/// Verifies the image `digest`: tries its bundle referrers, best first, and returns the first
/// statement that is signed by `opts.signer`, is about `digest` and has `opts.predicate_type`.
///
/// Junk cannot hide a valid signature from this bounded search. Referrers are read in two
/// passes: first the manifests (signatures before other kinds, smallest first, none larger than
/// [`MAX_BUNDLE_MANIFEST`]), then the bundles they carry (the same ranks, smallest bundle first);
/// entries of other artifact types are never read, and only bundles count against the
/// candidate limit. A source whose reads cost no request ([`Referrers::is_local`], the store)
/// is bounded by bytes alone: a junk entry read before the valid signature is no larger than
/// it, so the byte budget outlasts the most entries a subject may have (1024).
///
/// # Errors
/// [`ImageVerifyError`]: no bundle at all, or each one tried and why it failed (and whether the
/// budget cut the search short).
pub fn verify_image(
    source: &dyn Referrers,
    digest: &Digest,
    opts: &VerifyOptions<'_>,
) -> Result<Verdict, ImageVerifyError> {
    let listed = source.list(digest).map_err(ImageVerifyError::List)?;
    let mut candidates: Vec<(u8, Descriptor)> = listed
        .into_iter()
        .filter_map(|d| rank(&d, &opts.predicate_type).map(|r| (r, d)))
        .collect();
    // Stable: the source's order within a rank and size.
    candidates.sort_by_key(|(r, d)| (*r, d.size));
    if candidates.is_empty() {
        return Err(ImageVerifyError::NotSigned);
    }
    let limit = if source.is_local() {
        usize::MAX
    } else {
        opts.max_candidates
    };
    let mut search = Search {
        tried: Vec::new(),
        spent: 0,
        budget: opts.max_bytes,
        cut: None,
    };
    // First pass: the manifests, each naming this image and one bundle layer.
    let mut bundles: Vec<(u8, Descriptor, Descriptor)> = Vec::new();
    for (rank, r) in &candidates {
        if bundles.len() + search.tried.len() >= limit {
            search.cut_by_count(limit);
            break;
        }
        match search.bundle_layer(source, r, digest) {
            Ok(Some(layer)) => bundles.push((*rank, r.clone(), layer)),
            Ok(None) => {}
            Err(Stop) => break,
        }
    }
    // Second pass: the bundles, smallest first within a rank.
    bundles.sort_by_key(|(rank, _, layer)| (*rank, layer.size));
    for (_, r, layer) in &bundles {
        match search.check_bundle(source, r, layer, digest, opts) {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(Stop) => break,
        }
    }
    if search.tried.is_empty() && search.cut.is_none() {
        return Err(ImageVerifyError::NotSigned);
    }
    Err(ImageVerifyError::NoneVerifies {
        found: candidates.len(),
        tried: search.tried,
        cut: search.cut,
    })
}

/// A bundle referrer read for a report, **not verified**: who it names and what its statement
/// claims to be (`otters diff`; `otters verify` is what checks them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The referrer's manifest digest.
    pub referrer: Digest,
    /// The predicate type the statement claims, when it could be read.
    pub predicate_type: Option<String>,
    /// The signer the bundle names, or why it could not be read.
    pub signer: Result<keyless_verify::Named, String>,
}

/// Who the bundle referrers of `digest` name as their signers, unverified: the same walk as
/// [`verify_image`] (bundle manifests no larger than [`MAX_BUNDLE_MANIFEST`] that name `digest`
/// as subject), at most `max_candidates` of them and `max_bytes` of manifests and bundles read.
/// A referrer that cannot be read (or is cut by the budget) is a claim whose signer says why.
///
/// # Errors
/// The referrers cannot be listed.
pub fn claims(
    source: &dyn Referrers,
    digest: &Digest,
    max_bytes: u64,
    max_candidates: usize,
) -> Result<Vec<Claim>, String> {
    let mut candidates: Vec<(u8, Descriptor)> = source
        .list(digest)?
        .into_iter()
        .filter_map(|d| rank(&d, SIGN_PREDICATE).map(|r| (r, d)))
        .collect();
    candidates.sort_by(|(p, a), (q, b)| (p, &a.digest).cmp(&(q, &b.digest)));
    let mut search = Search {
        tried: Vec::new(),
        spent: 0,
        budget: max_bytes,
        cut: None,
    };
    let mut out = Vec::new();
    for (_, r) in candidates.iter().take(max_candidates) {
        let claim = |signer| Claim {
            referrer: r.digest.clone(),
            predicate_type: None,
            signer,
        };
        let before = search.tried.len();
        let layer = match search.bundle_layer(source, r, digest) {
            Ok(Some(layer)) => layer,
            Ok(None) => {
                if let Some((_, why)) = search.tried.get(before) {
                    out.push(claim(Err(why.clone())));
                }
                continue;
            }
            Err(Stop) => {
                out.push(claim(Err(search.cut.clone().unwrap_or_default())));
                break;
            }
        };
        if search.over_budget(layer.size) {
            out.push(claim(Err(search.cut.clone().unwrap_or_default())));
            break;
        }
        let read = source.blob(&layer, max_bytes);
        search.spent = search.spent.saturating_add(layer.size);
        match read.and_then(|b| keyless_verify::named(&b)) {
            Ok((who, predicate_type)) => out.push(Claim {
                predicate_type,
                ..claim(Ok(who))
            }),
            Err(why) => out.push(claim(Err(why))),
        }
    }
    Ok(out)
}

/// The budget ran out (the reason is in [`Search::cut`]).
struct Stop;

/// What one verification has read and found so far.
struct Search {
    /// Each bundle candidate that did not hold, and why.
    tried: Vec<(Digest, String)>,
    /// Bytes read (manifests and bundles), and the most that may be.
    spent: u64,
    budget: u64,
    /// Set when the budget stopped the search: which limit.
    cut: Option<String>,
}

impl Search {
    fn cut_by_count(&mut self, limit: usize) {
        self.cut = Some(format!("at most {limit} referrers are read"));
    }

    fn over_budget(&mut self, size: u64) -> bool {
        if self.spent.saturating_add(size) > self.budget {
            self.cut = Some(format!(
                "at most {} bytes of referrers are read",
                self.budget
            ));
            return true;
        }
        false
    }

    /// A referrer's manifest: its bundle layer when it names `digest` as subject and carries one;
    /// `None` when it is not a bundle (or did not hold, recorded in `tried`).
    fn bundle_layer(
        &mut self,
        source: &dyn Referrers,
        r: &Descriptor,
        digest: &Digest,
    ) -> Result<Option<Descriptor>, Stop> {
        if r.size > MAX_BUNDLE_MANIFEST {
            self.tried.push((
                r.digest.clone(),
                format!(
                    "its manifest is {} bytes, more than the {MAX_BUNDLE_MANIFEST} a bundle referrer's may be",
                    r.size
                ),
            ));
            return Ok(None);
        }
        if self.over_budget(r.size) {
            return Err(Stop);
        }
        let failed = |s: &mut Self, why: String| {
            s.tried.push((r.digest.clone(), why));
            Ok(None)
        };
        let bytes = match source.manifest(r) {
            Ok(b) => b,
            Err(e) => return failed(self, e),
        };
        self.spent = self.spent.saturating_add(bytes.len() as u64);
        let doc: ManifestDoc = match serde_json::from_slice(&bytes) {
            Ok(d) => d,
            Err(e) => return failed(self, format!("not a manifest: {e}")),
        };
        let kind = doc.artifact_type.clone().or_else(|| {
            doc.config
                .as_ref()
                .map(|c| c.media_type.as_str().to_owned())
        });
        if r.artifact_type.is_none() && kind.as_deref() != Some(BUNDLE_V03) {
            return Ok(None);
        }
        if doc.subject.as_ref().map(|s| &s.digest) != Some(digest) {
            return failed(
                self,
                "its manifest does not name this image as subject".into(),
            );
        }
        let Some(layer) = doc
            .layers
            .iter()
            .find(|l| l.media_type.as_str() == BUNDLE_V03)
        else {
            return failed(self, "it has no bundle layer".into());
        };
        if layer.size > MAX_BUNDLE as u64 {
            return failed(
                self,
                format!(
                    "its bundle is {} bytes, more than the {MAX_BUNDLE} a bundle may be",
                    layer.size
                ),
            );
        }
        Ok(Some(layer.clone()))
    }

    /// One bundle: it verifies by the signer, is about `digest` and has the predicate type asked
    /// for (`Some`), or did not hold (`None`, recorded in `tried`).
    fn check_bundle(
        &mut self,
        source: &dyn Referrers,
        r: &Descriptor,
        layer: &Descriptor,
        digest: &Digest,
        opts: &VerifyOptions<'_>,
    ) -> Result<Option<Verdict>, Stop> {
        if self.over_budget(layer.size) {
            return Err(Stop);
        }
        let blob = match source.blob(layer, MAX_BUNDLE as u64) {
            Ok(b) => b,
            Err(e) => {
                self.tried.push((r.digest.clone(), e));
                return Ok(None);
            }
        };
        self.spent = self.spent.saturating_add(blob.len() as u64);
        let why = match verify_bundle(&blob, &opts.signer, digest) {
            Ok(v) if v.predicate_type() == opts.predicate_type => return Ok(Some(v)),
            Ok(v) => wrong_type(v.predicate_type(), &opts.predicate_type),
            Err(e) => e,
        };
        self.tried.push((r.digest.clone(), why));
        Ok(None)
    }
}

/// One bundle's signature, by `signer`, over a statement about `digest`.
fn verify_bundle(blob: &[u8], signer: &Signer<'_>, digest: &Digest) -> Result<Verdict, String> {
    match signer {
        Signer::Key(key) => bundle::verify(blob, key, digest.hex())
            .map(Verdict::Key)
            .map_err(|e| e.to_string()),
        Signer::Keyless {
            identity,
            issuer,
            trusted_root,
        } => {
            let expected = keyless_verify::Expected {
                identity,
                issuer,
                sha256: digest.hex(),
            };
            keyless_verify::verify(blob, trusted_root, &expected)
                .map(Verdict::Keyless)
                .map_err(|e| e.to_string())
        }
    }
}

fn wrong_type(found: &str, wanted: &str) -> String {
    let found = otters_core::escape::escape(found);
    if wanted == SIGN_PREDICATE {
        format!(
            "it is a signed attestation of type {found}, not a signature ({SIGN_PREDICATE}); \
             to check that attestation, verify predicate type {found}"
        )
    } else {
        format!("its statement has predicate type {found}, not {wanted}")
    }
}

#[cfg(test)]
mod tests;
