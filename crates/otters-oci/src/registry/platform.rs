//! Target platforms (`linux/amd64`, `linux/arm64/v8`) and picking an index entry for one.
//!
//! Takes: a `--platform` string or the host. Returns: [`TargetPlatform`] and index choices.
//! Must never: pick an entry whose os or architecture differ from the target (fail closed).

use crate::spec::descriptor::{Descriptor, Platform};
use std::fmt;

/// An OCI platform: os, architecture and optional variant.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TargetPlatform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid platform `{0}`: write os/architecture[/variant], e.g. linux/amd64 or linux/arm64/v8"
)]
pub struct BadPlatform(pub String);

impl TargetPlatform {
    /// This machine, in OCI names (`x86_64` → `amd64`, `aarch64` → `arm64`).
    pub fn host() -> Self {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        TargetPlatform {
            os: std::env::consts::OS.to_owned(),
            architecture: arch.to_owned(),
            variant: None,
        }
    }

    /// Parses `os/arch[/variant]`.
    pub fn parse(s: &str) -> Result<Self, BadPlatform> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        };
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => Ok(TargetPlatform {
                os: (*os).to_owned(),
                architecture: (*arch).to_owned(),
                variant: None,
            }),
            [os, arch, v] if ok(os) && ok(arch) && ok(v) => Ok(TargetPlatform {
                os: (*os).to_owned(),
                architecture: (*arch).to_owned(),
                variant: Some((*v).to_owned()),
            }),
            _ => Err(BadPlatform(s.to_owned())),
        }
    }

    pub fn from_descriptor(p: &Platform) -> Self {
        TargetPlatform {
            os: p.os.clone(),
            architecture: p.architecture.clone(),
            variant: p.variant.clone().filter(|v| !v.is_empty()),
        }
    }

    /// The entries of an index that name a platform, with their digests: what [`Self::pick`]
    /// chooses from.
    pub fn candidates(manifests: &[Descriptor]) -> Vec<(TargetPlatform, String)> {
        manifests
            .iter()
            .filter_map(|m| {
                m.platform
                    .as_ref()
                    .map(|p| (TargetPlatform::from_descriptor(p), m.digest.clone()))
            })
            .collect()
    }

    /// The entry for this platform: os and architecture must match exactly; when the target
    /// names a variant it must match too, otherwise an entry without a variant is preferred.
    pub fn pick<T: Clone>(
        &self,
        candidates: &[(TargetPlatform, T)],
    ) -> Option<(TargetPlatform, T)> {
        let same = |p: &TargetPlatform| p.os == self.os && p.architecture == self.architecture;
        if let Some(v) = &self.variant {
            return candidates
                .iter()
                .find(|(p, _)| same(p) && p.variant.as_deref() == Some(v.as_str()))
                .cloned();
        }
        let all: Vec<_> = candidates.iter().filter(|(p, _)| same(p)).collect();
        all.iter()
            .find(|(p, _)| p.variant.is_none())
            .or_else(|| all.first())
            .map(|x| (*x).clone())
    }
}

impl fmt::Display for TargetPlatform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> TargetPlatform {
        TargetPlatform::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parses_and_picks() {
        assert_eq!(p("linux/arm64/v8").to_string(), "linux/arm64/v8");
        assert!(TargetPlatform::parse("linux").is_err());
        assert!(TargetPlatform::parse("linux//x").is_err());
        let c = vec![
            (p("linux/arm/v6"), 1),
            (p("linux/arm/v7"), 2),
            (p("linux/amd64"), 3),
            (p("linux/arm"), 4),
        ];
        assert_eq!(p("linux/amd64").pick(&c).map(|x| x.1), Some(3));
        assert_eq!(p("linux/arm/v7").pick(&c).map(|x| x.1), Some(2));
        assert_eq!(p("linux/arm").pick(&c).map(|x| x.1), Some(4));
        assert_eq!(p("linux/s390x").pick(&c).map(|x| x.1), None);
        assert_eq!(p("windows/amd64").pick(&c).map(|x| x.1), None);
    }
}
