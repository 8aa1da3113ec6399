//! A confined docker-executor run: an internal network (`network create --internal`), otters'
//! allow-list proxy listening on that network's gateway address only, the container on that
//! network with `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` pointing at the proxy, and everything
//! removed when the container ends, when otters is interrupted (SIGINT, SIGTERM, SIGHUP) and when
//! a step fails.
//!
//! Takes: a plan whose tree is materialised and whose egress is [`EgressPlan::Proxy`]. Returns:
//! the container's exit status. Must never: leave the network or the proxy behind, listen on
//! any address but the internal network's gateway, or pass the proxy to the container when the
//! network could not be made internal.

use super::proxy::{self, Config, Report};
use super::EgressPlan;
use crate::exec;
use crate::plan::{Launcher, RunPlan};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("the plan has no proxy egress to enforce")]
    NotConfined,
    #[error("cannot run {cli}: {source}")]
    Cli { cli: String, source: std::io::Error },
    #[error("`{cli} network {what}` failed: {stderr}")]
    Network {
        cli: String,
        what: &'static str,
        stderr: String,
    },
    #[error("the internal network {network} has no IPv4 gateway address for the egress proxy to listen on")]
    NoGateway { network: String },
    #[error("cannot listen on {addr} for the egress proxy: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Exec(#[from] exec::ExecError),
}

/// What the run ended with: the container's exit code, or the signal that ended the CLI.
pub type Status = std::process::ExitStatus;

/// Runs the plan confined to its egress; `report` hears each refusal of the proxy.
pub fn run(plan: &RunPlan, report: Report) -> Result<Status, LaunchError> {
    let (Launcher::Docker { cli, .. }, Some(egress @ EgressPlan::Proxy { .. })) =
        (&plan.executor, &plan.egress)
    else {
        return Err(LaunchError::NotConfined);
    };
    // Registered before anything is made, so an interrupt at any step still cleans up; a handler
    // (not "ignore") is reset to the default in the child by exec.
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, interrupted.clone());
    }
    let network = network_name(&plan.id);
    let container = argv_value(&plan.argv, "--name=").unwrap_or_default();
    let cleanup = Cleanup {
        cli: cli.clone(),
        network: network.clone(),
        container,
    };
    cleanup.remove(); // a network left by a run that was killed outright
                      // podman gives an internal network a gateway address only with its DNS server, so that
                      // stays on (it answers names, and forwards unknown ones to the host's resolvers).
    cli_ok(
        cli,
        &["network", "create", "--internal", &network],
        "create",
    )?;
    let gateway = gateway(cli, &network)?;
    let listener = listen(SocketAddr::new(gateway, 0))?;
    let proxy = proxy::start(listener, Config::new(egress.allow()), report).map_err(|source| {
        LaunchError::Listen {
            addr: SocketAddr::new(gateway, 0),
            source,
        }
    })?;
    let url = format!("http://{}", proxy.addr());
    let mut confined = plan.clone();
    let at = confined.argv.len().min(3);
    let mut extra = vec![format!("--network={network}")];
    for key in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        extra.push(format!("--env={key}={url}"));
    }
    for key in ["NO_PROXY", "no_proxy"] {
        extra.push(format!("--env={key}=localhost,127.0.0.1,::1"));
    }
    confined.argv.splice(at..at, extra);
    let mut child = exec::command(&confined)?
        .spawn()
        .map_err(|source| LaunchError::Cli {
            cli: cli.display().to_string(),
            source,
        })?;
    let mut forwarded = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(source) => {
                let _ = child.kill();
                return Err(LaunchError::Cli {
                    cli: cli.display().to_string(),
                    source,
                });
            }
        }
        if interrupted.load(Ordering::SeqCst) && !forwarded {
            // The terminal's Ctrl-C reached the CLI too; a SIGTERM sent to otters alone did not.
            if let Some(pid) = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(proxy);
    drop(cleanup);
    Ok(status)
}

/// The network of a run: `otters-egress-` and the first 12 letters and digits of its id.
pub fn network_name(id: &str) -> String {
    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    format!("otters-egress-{short}")
}

fn argv_value(argv: &[String], prefix: &str) -> Option<String> {
    argv.iter()
        .find_map(|a| a.strip_prefix(prefix))
        .map(str::to_owned)
}

/// Removes the container and the network (each may already be gone).
struct Cleanup {
    cli: PathBuf,
    network: String,
    container: String,
}

impl Cleanup {
    fn remove(&self) {
        if !self.container.is_empty() {
            quiet(&self.cli, &["rm", "-f", &self.container]);
        }
        quiet(&self.cli, &["network", "rm", &self.network]);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.remove();
    }
}

fn quiet(cli: &Path, args: &[&str]) {
    let _ = Command::new(cli)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `cli args`, returning its stdout, or the error with its stderr.
fn cli_ok(cli: &Path, args: &[&str], what: &'static str) -> Result<Vec<u8>, LaunchError> {
    let out = Command::new(cli)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LaunchError::Cli {
            cli: cli.display().to_string(),
            source,
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(LaunchError::Network {
            cli: cli.display().to_string(),
            what,
            stderr: otters_oci::validate::escape_text(stderr.trim(), 400),
        });
    }
    Ok(out.stdout)
}

/// The network's IPv4 gateway, from `network inspect` (podman's `subnets[].gateway` or docker's
/// `IPAM.Config[].Gateway`).
fn gateway(cli: &Path, network: &str) -> Result<IpAddr, LaunchError> {
    let out = cli_ok(cli, &["network", "inspect", network], "inspect")?;
    gateway_of(&out).ok_or_else(|| LaunchError::NoGateway {
        network: network.to_owned(),
    })
}

fn gateway_of(json: &[u8]) -> Option<IpAddr> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let net = v.as_array().and_then(|a| a.first()).unwrap_or(&v);
    let podman = net["subnets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| &s["gateway"]);
    let docker = net["IPAM"]["Config"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| &s["Gateway"]);
    podman
        .chain(docker)
        .filter_map(|g| g.as_str()?.parse::<IpAddr>().ok())
        .find(IpAddr::is_ipv4)
}

/// A listener on `addr` even before the bridge holding that address exists (podman makes it when
/// the first container joins): `IP_FREEBIND`.
fn listen(addr: SocketAddr) -> Result<TcpListener, LaunchError> {
    use rustix::net::{sockopt, AddressFamily, SocketFlags, SocketType};
    let err = |source: std::io::Error| LaunchError::Listen { addr, source };
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
        .map_err(|e| err(e.into()))?;
    sockopt::set_ip_freebind(&fd, true).map_err(|e| err(e.into()))?;
    rustix::net::bind(&fd, &addr).map_err(|e| err(e.into()))?;
    rustix::net::listen(&fd, 128).map_err(|e| err(e.into()))?;
    Ok(TcpListener::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_is_read_from_podman_and_docker() {
        let podman = br#"[{"name":"n","subnets":[{"subnet":"10.89.1.0/24","gateway":"10.89.1.1"}],"internal":true}]"#;
        let docker = br#"[{"Name":"n","IPAM":{"Config":[{"Subnet":"fd00::/64","Gateway":"fd00::1"},{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]},"Internal":true}]"#;
        assert_eq!(gateway_of(podman), Some("10.89.1.1".parse().unwrap()));
        assert_eq!(gateway_of(docker), Some("172.18.0.1".parse().unwrap()));
        assert_eq!(gateway_of(b"[]"), None);
        assert_eq!(gateway_of(b"not json"), None);
    }

    #[test]
    fn the_network_is_named_after_the_run() {
        assert_eq!(
            network_name("0a-1b2c3d4e5f6a7b8c"),
            "otters-egress-0a1b2c3d4e5f"
        );
    }

    #[test]
    fn freebind_listens_on_an_address_this_host_does_not_have_yet() {
        // TEST-NET-3: never a local address here.
        match listen("203.0.113.77:0".parse().unwrap()) {
            Ok(l) => assert_eq!(
                l.local_addr().unwrap().ip(),
                "203.0.113.77".parse::<IpAddr>().unwrap()
            ),
            Err(e) => eprintln!("SKIP: IP_FREEBIND unavailable here: {e}"),
        }
    }
}
