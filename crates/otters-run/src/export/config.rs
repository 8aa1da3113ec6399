//! The image config of a runnable export: what a container engine reads to start it, and what
//! `podman image inspect`, `docker history` and registries show about it.
//!
//! Takes: the agent (its model and its manifest's annotations), the platform, the environment
//! and arguments of the docker executor, and the layers as written. Returns: canonical JSON.
//! Carries the agent's metadata over: `created` is the agent's own time (its
//! `org.opencontainers.image.created`, which `build` sets from `SOURCE_DATE_EPOCH`), one
//! `history` entry per layer says where the layer came from (the pinned RUNTIME and BIN images,
//! the agent), and the agent's annotations (its LABELs, title and time) become the image's
//! labels. Must never: read the clock (an agent without a time gives an image without one, so
//! the same agent still gives the same digest), or let an agent's label replace the ones that tie
//! the image to its agent (`io.openotters.agent*`).

use crate::env::EnvEntry;
use crate::plan::{RunPlan, TreeEntry, CONTAINER_PORT, CONTAINER_RUNTIME, CONTAINER_WORKDIR};
use crate::source::AgentImage;
use otters_core::json::{to_compact, Value};
use otters_oci::spec::annotations;
use otters_oci::spec::descriptor::{string_map, ANN_CREATED};
use otters_oci::{Digest, Platform};
use std::collections::BTreeMap;

/// One layer of the image, as its history tells it.
pub struct Layer<'a> {
    pub diff_id: &'a Digest,
    pub created_by: String,
}

/// What made the layer titled `title` (`runtime`, `bin/NAME` or `agent`): the image reference and
/// pinned digest it was taken from, for the image's `history`.
pub fn created_by(image: &AgentImage, plan: &RunPlan, title: &str) -> String {
    let pinned = |path: &str| {
        plan.tree.iter().find_map(|e| match e {
            TreeEntry::Binary {
                path: p,
                reference,
                digest,
                ..
            } if p == path => Some(match digest {
                Some(d) => format!("{reference}@{d}"),
                None => reference.clone(),
            }),
            _ => None,
        })
    };
    match title.strip_prefix("bin/") {
        Some(name) => format!(
            "otters export: BIN {name} {}",
            pinned(&format!("usr/bin/{name}")).unwrap_or_default()
        ),
        None if title == "runtime" => format!(
            "otters export: RUNTIME {}",
            pinned("usr/local/bin/runtime").unwrap_or_default()
        ),
        None => format!(
            "otters export: the agent {}@{}",
            plan.image.reference, image.digest
        ),
    }
}

/// True for an RFC 3339 date-time (`2024-01-02T03:04:05Z`, fractions and offsets allowed): what
/// the OCI image spec requires of `created`. An agent's time is a LABEL it may set to anything;
/// anything else is left out of `created` (an engine would refuse the whole config).
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return false;
    }
    let mut rest = &b[19..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|d| d.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// The [`annotations::EGRESS`] label's value: `none`, or the destinations joined by `,`.
pub fn egress_label(agent: &otters_agentfile::ir::Agent) -> Option<String> {
    use otters_agentfile::ir::egress::Policy;
    match agent.egress_policy() {
        Policy::Undeclared => None,
        Policy::Nothing => Some("none".to_owned()),
        Policy::Allow(list) => Some(
            list.iter()
                .map(|e| e.dest.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    }
}

/// The image config (`application/vnd.oci.image.config.v1+json`), canonical JSON.
pub fn image_config(
    image: &AgentImage,
    annotations: &BTreeMap<String, String>,
    platform: &Platform,
    env: &[EnvEntry],
    cmd: &[String],
    layers: &[Layer<'_>],
) -> Vec<u8> {
    let strings = |v: &[String]| Value::Array(v.iter().map(|s| Value::from(s.as_str())).collect());
    let env: Vec<String> = env
        .iter()
        .filter(|e| !e.secret)
        .map(|e| format!("{}={}", e.key, e.value))
        .collect();
    let name = image.model.agent.name_str().unwrap_or_default();
    // The agent's annotations first (its LABELs, title, time); the ones that tie the image to its
    // agent last, so no LABEL replaces them.
    let mut labels: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(k, _)| !k.starts_with(annotations::AGENT) && *k != annotations::EGRESS)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(egress) = egress_label(&image.model.agent) {
        labels.insert(annotations::EGRESS.to_owned(), egress);
    }
    labels.insert(annotations::AGENT.to_owned(), "true".to_owned());
    labels.insert(
        annotations::AGENT_DIGEST.to_owned(),
        image.digest.to_string(),
    );
    if !name.is_empty() {
        labels.insert("org.opencontainers.image.title".into(), name.to_owned());
    }
    let created = annotations
        .get(ANN_CREATED)
        .filter(|c| is_rfc3339(c))
        .map(String::as_str);
    let mut v = Value::object();
    if let Some(c) = created {
        v.push("created", c);
    }
    let mut v = v
        .with("architecture", platform.architecture.as_str())
        .with("os", platform.os.as_str());
    if let Some(var) = &platform.variant {
        v.push("variant", var.as_str());
    }
    let config = Value::object()
        .with("User", super::USER)
        .with(
            "ExposedPorts",
            Value::object().with(format!("{CONTAINER_PORT}/tcp"), Value::object()),
        )
        .with("Env", strings(&env))
        .with("Entrypoint", strings(&[CONTAINER_RUNTIME.to_owned()]))
        .with("Cmd", strings(cmd))
        .with("WorkingDir", CONTAINER_WORKDIR)
        .with("Labels", string_map(&labels));
    let history = layers
        .iter()
        .map(|l| {
            let mut h = Value::object();
            if let Some(c) = created {
                h.push("created", c);
            }
            h.with("created_by", l.created_by.as_str())
        })
        .collect();
    let v = v
        .with("config", config)
        .with(
            "rootfs",
            Value::object().with("type", "layers").with(
                "diff_ids",
                Value::Array(
                    layers
                        .iter()
                        .map(|l| Value::from(l.diff_id.as_str()))
                        .collect(),
                ),
            ),
        )
        .with("history", Value::Array(history));
    to_compact(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_egress_label_lists_the_declaration_or_none() {
        use otters_agentfile::ir::{Agent, Egress};
        let e = |t: &str| Egress {
            target: t.into(),
            description: None,
            span: None,
        };
        let mut a = Agent::default();
        assert_eq!(super::egress_label(&a), None);
        a.egress = vec![e("NONE")];
        assert_eq!(super::egress_label(&a).as_deref(), Some("none"));
        a.egress = vec![e("api.example.com"), e("[2001:db8::1]:853")];
        assert_eq!(
            super::egress_label(&a).as_deref(),
            Some("api.example.com:443,[2001:db8::1]:853")
        );
    }
    use super::*;

    #[test]
    fn created_must_be_an_rfc3339_time() {
        for good in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123456789Z",
            "2024-01-02T03:04:05+02:00",
            "2024-01-02t03:04:05z",
        ] {
            assert!(is_rfc3339(good), "{good}");
        }
        for bad in [
            "",
            "yesterday",
            "2024-01-02",
            "2024-01-02T03:04:05",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:05+0200",
            "2024-01-02T03:04:05Z ",
            "２０２４-01-02T03:04:05Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
