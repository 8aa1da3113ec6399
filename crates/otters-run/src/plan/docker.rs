//! The docker executor: how the tree is shown to the container, and the `docker run` argv.

use super::RunPlan;
use otters_oci::spec::annotations;
use std::path::Path;

/// Where the docker executor shows the runtime inside the container (its entrypoint).
pub const CONTAINER_RUNTIME: &str = "/opt/runtime/runtime";

/// The runtime's working directory inside the container.
pub const CONTAINER_WORKDIR: &str = "/workspace";

/// The port the runtime listens on inside the container.
pub const CONTAINER_PORT: u16 = 9999;

/// How the docker executor shows the tree to the container: (path in the tree, path in the
/// container, read-only). Tree paths not listed here are not visible in the container.
pub const CONTAINER_BINDS: &[(&str, &str, bool)] = &[
    ("etc/Agentfile", "/etc/Agentfile", true),
    ("etc/agent.yaml", "/etc/agent.yaml", true),
    ("etc/context", "/etc/context", true),
    ("etc/data", "/etc/data", true),
    ("usr/local/bin", "/opt/runtime", true),
    ("usr/bin", "/opt/bins", true),
    ("home", "/home", false),
    ("tmp", "/tmp", false),
    ("var/lib", "/var/lib", false),
    ("workspace", "/workspace", false),
];

/// The runtime's arguments inside a container, after its entrypoint: EXEC, then the root, the
/// model and the address it listens on.
pub fn container_args(exec: &[String], model: &str) -> Vec<String> {
    let mut a = exec.to_vec();
    a.extend([
        "--root".into(),
        "/".into(),
        "--model".into(),
        model.to_owned(),
        "--addr".into(),
        format!("0.0.0.0:{CONTAINER_PORT}"),
    ]);
    a
}

/// One `--mount` value; fields holding `,` or `"` are CSV-quoted as the docker CLI expects.
fn mount_arg(kind: &str, source: &Path, target: &str, read_only: bool) -> String {
    let q = |s: String| {
        if s.contains(',') || s.contains('"') {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s
        }
    };
    let mut v = format!(
        "type={kind},{},{}",
        q(format!("source={}", source.display())),
        q(format!("target={target}"))
    );
    if read_only {
        v.push_str(",readonly");
    }
    v
}

/// The `docker run` argv of spec §g.5 (binaries extracted on the host and bind-mounted read-only)
/// for `plan` (its root, name, id, environment and mounts) with the docker executor's `cli`,
/// `base_image` and `user`; `runtime_args` follow the image (see [`container_args`]).
pub(super) fn docker_argv(
    plan: &RunPlan,
    cli: &Path,
    base_image: &str,
    user: &str,
    runtime_args: Vec<String>,
) -> Vec<String> {
    let RunPlan {
        root,
        name,
        id,
        env,
        mounts,
        ..
    } = plan;
    let mut a: Vec<String> = vec![cli.display().to_string(), "run".into(), "--rm".into()];
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    a.extend([
        format!("--name=otters-{name}-{short}"),
        format!("--label={}=true", annotations::AGENT),
        format!("--label={}={id}", annotations::AGENT_ID),
        format!("--user={user}"),
        "--cap-drop=ALL".into(),
        "--security-opt=no-new-privileges".into(),
        "--pids-limit=512".into(),
        "--stop-timeout=10".into(),
    ]);
    // `EGRESS none`: no network, so nothing to publish either. A proxied run's network is added
    // when it is made (`egress::launch`).
    if plan.egress == Some(super::egress::EgressPlan::NoNetwork) {
        a.push("--network=none".into());
    } else {
        a.push(format!("--publish=127.0.0.1::{CONTAINER_PORT}"));
    }
    a.extend([
        format!("--workdir={CONTAINER_WORKDIR}"),
        format!("--entrypoint={CONTAINER_RUNTIME}"),
    ]);
    for (src, dst, ro) in CONTAINER_BINDS {
        a.push("--mount".into());
        a.push(mount_arg("bind", &root.join(src), dst, *ro));
    }
    for m in mounts {
        a.push("--mount".into());
        a.push(mount_arg("bind", &m.host, &m.target, m.read_only));
    }
    for e in env {
        // Secrets travel through the CLI's own environment, never in argv.
        a.push("--env".into());
        a.push(if e.secret {
            e.key.clone()
        } else {
            format!("{}={}", e.key, e.value)
        });
    }
    a.push(base_image.to_owned());
    a.extend(runtime_args);
    a
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::EnvEntry;
    use crate::mounts::UserMount;
    use crate::plan::{ImageInfo, Launcher};
    use std::path::PathBuf;

    #[test]
    fn docker_argv_takes_the_names_tree_environment_and_mounts_from_the_plan() {
        let plan = RunPlan {
            name: "meteo".into(),
            id: "0a-1b2c3d4e5f6a7b8c".into(),
            image: ImageInfo {
                reference: "meteo:latest".into(),
                digest: otters_oci::Digest::of(b"m"),
            },
            platform: otters_oci::Platform::parse("linux/amd64").unwrap(),
            executor: Launcher::System,
            root: PathBuf::from("/agents/meteo"),
            tree: Vec::new(),
            argv: Vec::new(),
            cwd: PathBuf::from("/agents/meteo/workspace"),
            env: vec![
                EnvEntry {
                    key: "A".into(),
                    value: "1".into(),
                    secret: false,
                },
                EnvEntry {
                    key: "KEY".into(),
                    value: "s3cret".into(),
                    secret: true,
                },
            ],
            mounts: vec![UserMount {
                host: PathBuf::from("/data"),
                target: "/mnt/data".into(),
                description: None,
                read_only: true,
            }],
            missing_mounts: Vec::new(),
            warnings: Vec::new(),
            egress: None,
        };
        let argv = docker_argv(
            &plan,
            Path::new("/usr/bin/podman"),
            "base:1",
            "65532:65532",
            container_args(&["serve".to_owned()], "m"),
        );
        assert_eq!(argv[..3], ["/usr/bin/podman", "run", "--rm"]);
        assert!(argv.contains(&"--name=otters-meteo-0a1b2c3d4e5f".to_owned()));
        assert!(argv.contains(&"--label=io.openotters.agent.id=0a-1b2c3d4e5f6a7b8c".to_owned()));
        assert!(argv.contains(&"--user=65532:65532".to_owned()));
        assert!(
            argv.contains(&"type=bind,source=/agents/meteo/workspace,target=/workspace".to_owned())
        );
        assert!(argv.contains(&"type=bind,source=/data,target=/mnt/data,readonly".to_owned()));
        assert!(argv.contains(&"A=1".to_owned()));
        // A secret is passed by name only: its value travels in the CLI's environment.
        assert!(argv.contains(&"KEY".to_owned()));
        assert!(!argv.iter().any(|a| a.contains("s3cret")));
        let image = argv.iter().position(|a| a == "base:1").unwrap();
        assert_eq!(
            argv[image + 1..],
            container_args(&["serve".to_owned()], "m")
        );
    }

    #[test]
    fn mount_args_quote_commas_and_quotes() {
        assert_eq!(
            mount_arg("bind", Path::new("/a"), "/b", true),
            "type=bind,source=/a,target=/b,readonly"
        );
        assert_eq!(
            mount_arg("bind", Path::new("/a,b\"c"), "/t", false),
            "type=bind,\"source=/a,b\"\"c\",target=/t"
        );
    }
}
