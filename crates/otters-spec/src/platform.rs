//! The one platform type (`linux/amd64`, `linux/arm/v7`): what `--platform` names, what an index
//! entry declares, what this machine is, and picking an index entry for a target.
//!
//! Takes: `--platform` text, an index entry's `platform` object, or the host. Returns:
//! [`Platform`] (variant kept) and index choices. Must never: accept a platform text that is not
//! `os/arch[/variant]`, or pick an entry whose os or architecture differ from the target (fail
//! closed).

use otters_core::json::Value;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An OCI platform: os, architecture, optional variant (and, as an index entry may state it, the
/// os version). Serialised with serde as `{"os", "architecture"[, "variant"]}`; descriptors are
/// written through [`Platform::to_json`] in Go's field order.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, schemars::JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct Platform {
    /// The operating system, as Go names it (`linux`).
    pub os: String,
    /// The CPU architecture, as Go names it (`amd64`, `arm64`).
    pub architecture: String,
    /// The CPU variant (`v8`), when one is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The OS version an index entry may state (never written by otters).
    #[serde(rename = "os.version", default, skip_serializing)]
    pub os_version: Option<String>,
}

/// Text that is not `os/arch[/variant]`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid platform `{0}`: write os/architecture[/variant], e.g. linux/amd64 or linux/arm64/v8"
)]
pub struct BadPlatform(pub String);

impl Platform {
    pub fn new(os: &str, architecture: &str, variant: Option<&str>) -> Self {
        Self {
            os: os.to_owned(),
            architecture: architecture.to_owned(),
            variant: variant.map(str::to_owned),
            os_version: None,
        }
    }

    /// This machine, in OCI (Go) names: see [`oci_arch`].
    pub fn host() -> Self {
        let (arch, variant) = oci_arch(std::env::consts::ARCH, cfg!(target_endian = "big"));
        Self::new(std::env::consts::OS, arch, variant)
    }

    /// Parses `os/arch[/variant]`: two or three non-empty parts of letters, digits, `_`, `.`
    /// or `-`.
    pub fn parse(s: &str) -> Result<Self, BadPlatform> {
        let ok = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        };
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] if ok(os) && ok(arch) => Ok(Self::new(os, arch, None)),
            [os, arch, v] if ok(os) && ok(arch) && ok(v) => Ok(Self::new(os, arch, Some(v))),
            _ => Err(BadPlatform(s.to_owned())),
        }
    }

    /// The same platform as an index entry is matched: no os version, an empty variant as none.
    pub(crate) fn for_matching(&self) -> Self {
        Self {
            os: self.os.clone(),
            architecture: self.architecture.clone(),
            variant: self.variant.clone().filter(|v| !v.is_empty()),
            os_version: None,
        }
    }

    /// The entry for this platform (from [`Self::candidates`], in `descriptor`, beside the
    /// descriptors it reads): os and architecture must match exactly; when the target
    /// names a variant it must match too, otherwise an entry without a variant is preferred.
    pub fn pick<T: Clone>(&self, candidates: &[(Platform, T)]) -> Option<(Platform, T)> {
        let same = |p: &Platform| p.os == self.os && p.architecture == self.architecture;
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

    /// Canonical JSON, in Go's `ocispec.Platform` field order.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object()
            .with("architecture", self.architecture.as_str())
            .with("os", self.os.as_str());
        if let Some(ov) = &self.os_version {
            v.push("os.version", ov.as_str());
        }
        if let Some(var) = &self.variant {
            v.push("variant", var.as_str());
        }
        v
    }
}

/// A Rust architecture name (`std::env::consts::ARCH`) in Go/OCI spelling, with the variant Go
/// names for it by default: `x86_64` → `amd64`, `aarch64` → `arm64`, `arm` → `arm` `v7`, and for
/// the architectures that come in both byte orders the one `big_endian` says (`powerpc64` →
/// `ppc64` or `ppc64le`, `mips64` → `mips64` or `mips64le`). `arm64` carries no `v8`: containerd
/// normalises `arm64/v8` to `arm64`, and [`Platform::pick`] would otherwise refuse the usual
/// entries without a variant.
pub fn oci_arch(rust_arch: &str, big_endian: bool) -> (&str, Option<&'static str>) {
    let le = |big: &'static str, little: &'static str| if big_endian { big } else { little };
    match rust_arch {
        "x86_64" => ("amd64", None),
        "x86" => ("386", None),
        "aarch64" => ("arm64", None),
        "arm" => ("arm", Some("v7")),
        "powerpc64" => (le("ppc64", "ppc64le"), None),
        "powerpc" => ("ppc", None),
        "mips" => (le("mips", "mipsle"), None),
        "mips64" => (le("mips64", "mips64le"), None),
        "loongarch64" => ("loong64", None),
        "wasm32" => ("wasm", None),
        other => (other, None),
    }
}

impl fmt::Display for Platform {
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
    use crate::{Descriptor, Digest};

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parses_and_picks() {
        assert_eq!(p("linux/arm64/v8").to_string(), "linux/arm64/v8");
        assert!(Platform::parse("linux").is_err());
        assert!(Platform::parse("linux//x").is_err());
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

    #[test]
    fn parse_keeps_the_variant_and_is_strict() {
        let v = p("linux/arm/v7");
        assert_eq!(
            (v.os.as_str(), v.architecture.as_str(), v.variant.as_deref()),
            ("linux", "arm", Some("v7"))
        );
        assert_eq!(p("linux/amd64").variant, None);
        for bad in [
            "",
            "linux",
            "linux/",
            "/amd64",
            "linux/amd64/",
            "linux/amd64/v1/x",
            "linux/amd 64",
            "linux/amd64\n",
            "linux\\amd64",
        ] {
            let e = Platform::parse(bad).expect_err(bad);
            assert_eq!(
                e.to_string(),
                format!("invalid platform `{bad}`: write os/architecture[/variant], e.g. linux/amd64 or linux/arm64/v8")
            );
        }
    }

    #[test]
    fn host_arch_follows_go_names_and_byte_order() {
        assert_eq!(oci_arch("x86_64", false), ("amd64", None));
        assert_eq!(oci_arch("aarch64", false), ("arm64", None));
        assert_eq!(oci_arch("arm", false), ("arm", Some("v7")));
        assert_eq!(oci_arch("x86", false), ("386", None));
        assert_eq!(oci_arch("powerpc64", false), ("ppc64le", None));
        assert_eq!(oci_arch("powerpc64", true), ("ppc64", None));
        assert_eq!(oci_arch("mips64", false), ("mips64le", None));
        assert_eq!(oci_arch("mips64", true), ("mips64", None));
        assert_eq!(oci_arch("mips", false), ("mipsle", None));
        assert_eq!(oci_arch("mips", true), ("mips", None));
        assert_eq!(oci_arch("s390x", true), ("s390x", None));
        assert_eq!(oci_arch("riscv64", false), ("riscv64", None));
        let host = Platform::host();
        assert_eq!(host.os, std::env::consts::OS);
        assert_eq!(
            (host.architecture.as_str(), host.variant.as_deref()),
            oci_arch(std::env::consts::ARCH, cfg!(target_endian = "big"))
        );
    }

    #[test]
    fn index_entries_keep_their_variant_and_os_version() {
        let d: Descriptor = serde_json::from_str(&format!(
            r#"{{"mediaType":"m","digest":"{}","size":1,"platform":{{"architecture":"arm","os":"windows","os.version":"10.0","variant":""}}}}"#,
            Digest::of(b"")
        ))
        .unwrap();
        let plat = d.platform.clone().unwrap();
        assert_eq!(plat.os_version.as_deref(), Some("10.0"));
        assert_eq!(plat.variant.as_deref(), Some(""));
        // Written back as read (canonical JSON), matched with the empty variant as none.
        assert_eq!(
            otters_core::json::to_compact(&plat.to_json()).unwrap(),
            br#"{"architecture":"arm","os":"windows","os.version":"10.0","variant":""}"#
        );
        let c = Platform::candidates(&[d]);
        assert_eq!(c[0].0, Platform::new("windows", "arm", None));
        // serde out (the run plan's JSON): os, architecture, variant when there is one.
        assert_eq!(
            serde_json::to_string(&p("linux/arm/v7")).unwrap(),
            r#"{"os":"linux","architecture":"arm","variant":"v7"}"#
        );
        assert_eq!(
            serde_json::to_string(&p("linux/amd64")).unwrap(),
            r#"{"os":"linux","architecture":"amd64"}"#
        );
    }
}
