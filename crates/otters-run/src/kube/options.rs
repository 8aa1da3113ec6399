//! What the user asks `otters kube` for: the [`Options`] and the texts of `--mount` and
//! `--config-from`, parsed.

/// The workload kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Job,
    /// The default: the runtime is a server (`serve`), kept running and restarted.
    #[default]
    Deployment,
    /// agent-sandbox's `Sandbox` (`agents.x-k8s.io/v1beta1`): one stateful pod.
    Sandbox,
    /// agent-sandbox's `SandboxTemplate` (`extensions.agents.x-k8s.io/v1beta1`), which
    /// `SandboxClaim`s and warm pools make sandboxes of.
    SandboxTemplate,
}

impl Kind {
    /// The object's `kind` as Kubernetes names it.
    pub fn api_kind(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Job => "Job",
            Kind::Deployment => "Deployment",
            Kind::Sandbox => "Sandbox",
            Kind::SandboxTemplate => "SandboxTemplate",
        }
    }
}

/// Who picks the user the pod runs as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uid {
    /// The export's user (65532), fixed in the pod's security context.
    #[default]
    Fixed,
    /// The platform (`OpenShift`'s `restricted-v2` assigns an arbitrary UID in group 0): no
    /// `runAsUser`, `runAsGroup` or `fsGroup`, `runAsNonRoot` kept.
    Auto,
}

/// What a MOUNT is backed by in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountSource {
    Pvc(String),
    EmptyDir,
    HostPath(String),
}

/// Where extra CONFIG values come from (`--config-from`): every key of the object becomes an
/// environment variable (`RUNTIME_<KEY>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigFrom {
    Secret(String),
    ConfigMap(String),
}

/// Requests and limits of the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resources {
    pub cpu_request: String,
    pub memory_request: String,
    pub cpu_limit: String,
    pub memory_limit: String,
}

impl Default for Resources {
    fn default() -> Self {
        Self {
            cpu_request: "100m".into(),
            memory_request: "128Mi".into(),
            cpu_limit: "1".into(),
            memory_limit: "512Mi".into(),
        }
    }
}

/// What the user asked for.
// Rationale: the switches of the generated objects, one per flag.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub kind: Kind,
    /// `--name`; default derived from the agent's NAME.
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// The runnable image, by digest (`REPO@sha256:…`).
    pub image: String,
    /// `--secret`: the Secret holding the provider credential; default `<name>-credentials`.
    pub secret: Option<String>,
    pub configs: Vec<(String, String)>,
    pub config_from: Vec<ConfigFrom>,
    /// `--mount TARGET=SOURCE`.
    pub mounts: Vec<(String, MountSource)>,
    pub allow_missing_mounts: bool,
    /// A `PersistentVolumeClaim` for `/var/lib` instead of an `emptyDir`.
    pub var_lib_pvc: Option<String>,
    pub resources: Resources,
    pub image_pull_secrets: Vec<String>,
    pub network_policy: bool,
    /// The declared egress as a `cilium.io/v2` `CiliumNetworkPolicy` (`toFQDNs`).
    pub cilium: bool,
    pub service: bool,
    pub replicas: Option<i64>,
    /// No readiness and liveness probes on a serving agent's port.
    pub no_probes: bool,
    pub uid: Uid,
    /// `--tree image`: the RUNTIME image (as [`Options::image`]) with the tree and BINs mounted
    /// as image volumes; `None` runs the runnable export.
    pub tree: Option<super::tree::TreeVolumes>,
    /// `--tree image` asked for: `agent::agent_objects` finds the tree export and sets `tree`.
    pub tree_image: bool,
}

/// Why a `--mount` or `--config-from` text is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArgError {
    #[error("mount {0:?}: write TARGET=pvc:NAME, TARGET=emptydir or TARGET=hostpath:/PATH, both paths absolute and without `..` (e.g. /data=pvc:agent-data)")]
    Mount(String),
    #[error("config source {0:?}: write secret:NAME or configmap:NAME")]
    ConfigFrom(String),
}

/// Parses `--mount TARGET=pvc:NAME|emptydir|hostpath:/PATH`.
pub fn parse_mount(text: &str) -> Result<(String, MountSource), ArgError> {
    let bad = || ArgError::Mount(text.to_owned());
    let (target, source) = text.split_once('=').ok_or_else(bad)?;
    if !target.starts_with('/') || target.split('/').any(|p| p == "..") {
        return Err(bad());
    }
    let source = match source.split_once(':') {
        Some(("pvc", n)) if !n.is_empty() => MountSource::Pvc(n.to_owned()),
        // Kubernetes refuses a hostPath with a `..` component.
        Some(("hostpath", p)) if p.starts_with('/') && !p.split('/').any(|c| c == "..") => {
            MountSource::HostPath(p.to_owned())
        }
        None if source == "emptydir" => MountSource::EmptyDir,
        _ => return Err(bad()),
    };
    Ok((target.to_owned(), source))
}

/// Parses `--config-from secret:NAME|configmap:NAME`.
pub fn parse_config_from(text: &str) -> Result<ConfigFrom, ArgError> {
    match text.split_once(':') {
        Some(("secret", n)) if !n.is_empty() => Ok(ConfigFrom::Secret(n.to_owned())),
        Some(("configmap", n)) if !n.is_empty() => Ok(ConfigFrom::ConfigMap(n.to_owned())),
        _ => Err(ArgError::ConfigFrom(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_and_config_from_texts() {
        assert_eq!(
            parse_mount("/data=pvc:d"),
            Ok(("/data".into(), MountSource::Pvc("d".into())))
        );
        assert_eq!(
            parse_mount("/x=hostpath:/srv/x"),
            Ok(("/x".into(), MountSource::HostPath("/srv/x".into())))
        );
        assert_eq!(
            parse_mount("/t=emptydir"),
            Ok(("/t".into(), MountSource::EmptyDir))
        );
        for bad in [
            "data=pvc:d",
            "/d=pvc:",
            "/d=hostpath:rel",
            "/d",
            "/a/../b=emptydir",
            "/d=hostpath:/srv/../etc",
            "/d=hostpath:/srv/..",
        ] {
            assert!(parse_mount(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_config_from("secret:s"),
            Ok(ConfigFrom::Secret("s".into()))
        );
        assert!(parse_config_from("vault:s").is_err());
    }
}
