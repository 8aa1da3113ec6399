//! What a build consumed, as plain values: the agent it made, the Agentfile, every pinned image,
//! every file, the model it names. The SBOM and the provenance are both written from this one
//! struct, which the build fills in from its resolved plan.
//!
//! Takes: nothing (plain data). Returns: names and package URLs derived from it. Must never: hold a
//! time read from the wall clock (`created` is `SOURCE_DATE_EPOCH` or the image's own `created`).

use otters_spec::digest::Digest;
use std::fmt::Write as _;

/// Everything one build of one agent consumed and produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInputs {
    /// The agent image built.
    pub agent: Agent,
    /// The Agentfile itself.
    pub agentfile: FileInput,
    /// `RUNTIME`, pinned.
    pub runtime: Option<ImageInput>,
    /// Every `BIN`, pinned, in Agentfile order.
    pub bins: Vec<BinInput>,
    /// The `FROM` parent, pinned (`None` for `FROM scratch`).
    pub parent: Option<ImageInput>,
    /// Every file an `ADD` put into the image (a directory is listed file by file).
    pub adds: Vec<FileInput>,
    /// Every `CONTEXT`.
    pub contexts: Vec<ContextInput>,
    /// `MODEL provider/model`: a model the agent calls at run time, not something in the image.
    pub model: Option<String>,
    /// The `--build-arg` values the provenance records: only arguments an ARG declares, and of
    /// those read from the environment only the ones the user asked to record.
    pub build_args: Vec<(String, String)>,
    /// Declared `--build-arg`s whose value came from the environment and is not recorded: their
    /// names.
    pub env_build_args: Vec<String>,
    /// The platform built for (`linux/amd64`).
    pub platform: String,
    /// RFC 3339 (`YYYY-MM-DDTHH:MM:SSZ`) from `SOURCE_DATE_EPOCH` or the image's `created`; `None`
    /// writes no time at all.
    pub created: Option<String>,
    /// The version of otters that built it.
    pub otters_version: String,
    /// The agent's declared EGRESS: `None` when undeclared, empty for `EGRESS none`.
    pub egress: Option<Vec<EgressInput>>,
}

/// One declared EGRESS destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressInput {
    /// `api.example.com`, `*.example.com`, `10.0.0.1` or `[2001:db8::1]`-less `2001:db8::1`.
    pub host: String,
    pub port: u16,
    pub description: Option<String>,
}

/// The agent image a build made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    /// `NAME` (or the directory's name).
    pub name: String,
    /// Where it is published, `registry/path` without tag, when the build was tagged with one.
    pub repository: Option<String>,
    pub tag: Option<String>,
    /// The digest of its manifest: what signatures and attestations are about.
    pub manifest_digest: Digest,
}

/// An image pinned by digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageInput {
    /// `registry/path` without tag or digest (`ghcr.io/acme/tools/curl`).
    pub repository: String,
    /// The tag the Agentfile named, if it named one.
    pub tag: Option<String>,
    /// The manifest digest it was pinned to (for the build's platform).
    pub digest: Digest,
}

/// A `BIN name image`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinInput {
    pub name: String,
    pub image: ImageInput,
}

/// A file read from the build context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInput {
    /// Path relative to the build context, `/`-separated.
    pub path: String,
    /// SHA-256 of its bytes.
    pub digest: Digest,
}

/// A `CONTEXT NAME`, from a heredoc or a `file://` path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextInput {
    pub name: String,
    /// The `file://` path relative to the build context; `None` for a heredoc.
    pub source: Option<String>,
    /// SHA-256 of the layer's bytes (`NAME.md`).
    pub digest: Digest,
}

impl ImageInput {
    /// `repository[:tag]@sha256:…`.
    pub fn reference(&self) -> String {
        match &self.tag {
            Some(t) => format!("{}:{t}@{}", self.repository, self.digest),
            None => format!("{}@{}", self.repository, self.digest),
        }
    }

    /// The package URL: `pkg:oci/NAME@sha256:HEX?repository_url=REPOSITORY[&tag=TAG]`.
    pub fn purl(&self) -> String {
        oci_purl(
            self.repository
                .rsplit('/')
                .next()
                .unwrap_or(&self.repository),
            Some(&self.repository),
            self.tag.as_deref(),
            &self.digest,
        )
    }
}

impl Agent {
    /// The agent's package URL (with `repository_url` only when it has a repository).
    pub fn purl(&self) -> String {
        let name = match &self.repository {
            Some(r) => r.rsplit('/').next().unwrap_or(r),
            None => &self.name,
        };
        oci_purl(
            name,
            self.repository.as_deref(),
            self.tag.as_deref(),
            &self.manifest_digest,
        )
    }

    /// The in-toto subject name: the repository when there is one, else the agent's name.
    pub fn subject_name(&self) -> &str {
        self.repository.as_deref().unwrap_or(&self.name)
    }
}

/// A `pkg:oci` purl (purl-spec type `oci`): the name is the repository's last segment, lower-cased;
/// the version is the digest, its `:` left as is (the purl spec does not require encoding it).
fn oci_purl(name: &str, repository: Option<&str>, tag: Option<&str>, digest: &Digest) -> String {
    let mut out = format!("pkg:oci/{}@{digest}", encode(&name.to_lowercase()));
    let mut sep = '?';
    if let Some(r) = repository {
        let _ = write!(out, "{sep}repository_url={}", encode(r));
        sep = '&';
    }
    if let Some(t) = tag {
        let _ = write!(out, "{sep}tag={}", encode(t));
    }
    out
}

/// Percent-encodes everything but unreserved characters, `/` and `:` (which purls keep as is).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(c: char) -> Digest {
        Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap()
    }

    #[test]
    fn image_purls_follow_the_oci_purl_type() {
        let img = ImageInput {
            repository: "127.0.0.1:5000/tools/Curl".into(),
            tag: Some("v1+x".into()),
            digest: d('a'),
        };
        assert_eq!(
            img.purl(),
            format!(
                "pkg:oci/curl@sha256:{}?repository_url=127.0.0.1:5000/tools/Curl&tag=v1%2Bx",
                "a".repeat(64)
            )
        );
        assert_eq!(
            img.reference(),
            format!("127.0.0.1:5000/tools/Curl:v1+x@sha256:{}", "a".repeat(64))
        );
    }

    #[test]
    fn an_untagged_agent_has_a_purl_without_repository() {
        let a = Agent {
            name: "Ledger Bot".into(),
            repository: None,
            tag: None,
            manifest_digest: d('b'),
        };
        assert_eq!(
            a.purl(),
            format!("pkg:oci/ledger%20bot@sha256:{}", "b".repeat(64))
        );
        assert_eq!(a.subject_name(), "Ledger Bot");
    }
}
