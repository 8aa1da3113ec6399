//! Kubernetes names: DNS-1123 checks, the workload's name made from the agent's NAME, and the
//! check of every other name the user gave (and of the image reference).

use super::{ConfigFrom, KubeError, MountSource, Options};
use crate::source::AgentImage;

/// Whether `s` is a DNS-1123 label: 1–63 of `a-z0-9-`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain: at most 253, dot-separated labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// The object name made from an agent NAME: lower-cased, every run of other characters one `-`,
/// trimmed, at most `max` long; `None` when nothing is left.
pub fn dns_name(from: &str, max: usize) -> Option<String> {
    let mut s = String::new();
    for c in from.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            s.push(c);
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let mut s = s.trim_matches('-').to_owned();
    s.truncate(max);
    let s = s.trim_end_matches('-').to_owned();
    (!s.is_empty()).then_some(s)
}

/// The longest suffix otters adds to the workload's name (`-credentials`).
const LONGEST_SUFFIX: usize = "-credentials".len();

/// The workload's name: `--name`, else the agent's NAME made DNS-1123.
pub(super) fn object_name(image: &AgentImage, opts: &Options) -> Result<String, KubeError> {
    let agent = &image.model.agent;
    let agent_name = agent
        .name_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("agent");
    let max = 63 - LONGEST_SUFFIX;
    Ok(match &opts.name {
        Some(n) if is_dns1123_label(n) && n.len() <= max => n.clone(),
        Some(n) => {
            return Err(KubeError::BadName {
                from: n.clone(),
                max,
            })
        }
        None => dns_name(agent_name, max).ok_or_else(|| KubeError::BadName {
            from: agent_name.to_owned(),
            max,
        })?,
    })
}

/// Which object a name the user gave would name: the value, not the flag that gave it (the
/// binary's hint layer names the flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectName {
    /// The Secret holding the provider credential.
    Secret,
    /// A Secret the kubelet pulls the image with.
    ImagePullSecret,
    /// The `PersistentVolumeClaim` for `/var/lib`.
    VarLibPvc,
    /// A Secret or `ConfigMap` the CONFIG values come from.
    ConfigFrom,
    /// A `PersistentVolumeClaim` a MOUNT is backed by.
    MountPvc,
}

impl std::fmt::Display for ObjectName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Secret => "credential Secret",
            Self::ImagePullSecret => "image pull Secret",
            Self::VarLibPvc => "/var/lib PersistentVolumeClaim",
            Self::ConfigFrom => "CONFIG Secret or ConfigMap",
            Self::MountPvc => "MOUNT PersistentVolumeClaim",
        })
    }
}

/// Every other name the user gave is DNS-1123, and the image is a reference by digest.
pub(super) fn check_names(opts: &Options) -> Result<(), KubeError> {
    if let Some(ns) = &opts.namespace {
        if !is_dns1123_label(ns) {
            return Err(KubeError::BadNamespace(ns.clone()));
        }
    }
    for (what, v) in std::iter::once((ObjectName::Secret, opts.secret.as_ref()))
        .chain(
            opts.image_pull_secrets
                .iter()
                .map(|s| (ObjectName::ImagePullSecret, Some(s))),
        )
        .chain(
            opts.var_lib_pvc
                .iter()
                .map(|s| (ObjectName::VarLibPvc, Some(s))),
        )
        .chain(opts.config_from.iter().map(|c| match c {
            ConfigFrom::Secret(s) | ConfigFrom::ConfigMap(s) => (ObjectName::ConfigFrom, Some(s)),
        }))
        .chain(opts.mounts.iter().filter_map(|(_, m)| match m {
            MountSource::Pvc(p) => Some((ObjectName::MountPvc, Some(p))),
            _ => None,
        }))
    {
        if let Some(v) = v.filter(|v| !is_dns1123_subdomain(v)) {
            return Err(KubeError::BadObjectName {
                what,
                value: v.clone(),
            });
        }
    }
    // Parsed, not searched for `@sha256:`: `x@sha256:abc` or a name with a control character
    // would be written into the pod spec and fail only at the kubelet.
    match otters_oci::reference::Reference::parse(&opts.image) {
        Err(source) => Err(KubeError::BadImage {
            image: opts.image.clone(),
            source,
        }),
        Ok(r) if r.digest.is_none() => Err(KubeError::NotByDigest(opts.image.clone())),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_agent_names() {
        assert_eq!(
            dns_name("Weather_Bot.v2", 51).as_deref(),
            Some("weather-bot-v2")
        );
        assert_eq!(dns_name("--x--", 51).as_deref(), Some("x"));
        assert_eq!(dns_name("___", 51), None);
        assert_eq!(dns_name(&"a".repeat(80), 51).unwrap().len(), 51);
        assert!(is_dns1123_label("a-1") && !is_dns1123_label("A") && !is_dns1123_label("-a"));
        assert!(is_dns1123_subdomain("a.b-c") && !is_dns1123_subdomain("a..b"));
    }

    #[test]
    fn the_image_is_a_reference_by_a_whole_digest() {
        let zeros = "0".repeat(64);
        let image = |image: &str| {
            check_names(&Options {
                image: image.to_owned(),
                ..Options::default()
            })
        };
        assert!(image(&format!("reg.example:5000/a/b@sha256:{zeros}")).is_ok());
        assert!(image(&format!("a:1@sha256:{zeros}")).is_ok());
        assert!(matches!(image("a:1"), Err(KubeError::NotByDigest(_))));
        for bad in [
            "x@sha256:abc".to_owned(),
            format!("a/UPPER@sha256:{zeros}"),
            format!("a\u{1b}[31m@sha256:{zeros}"),
            format!("a@sha256:{zeros} b"),
            format!("a@sha512:{zeros}"),
        ] {
            assert!(
                matches!(image(&bad), Err(KubeError::BadImage { .. })),
                "{bad:?}"
            );
        }
    }
}
