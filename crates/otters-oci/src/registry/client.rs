//! The synchronous registry client itself: how it is set up (runtime, transport, credentials,
//! mirrors), the login check, and the access check every request's answer goes through. Reads
//! are in `read.rs`, writes in `write.rs`.

use crate::reference::Reference;
use crate::registry::auth::{self, Credential};
use crate::registry::config::RegistryConfig;
use crate::registry::error::{http_error, RegistryError};
use crate::registry::http::{timeout_from_env, Call, CredentialSource, Retry, Transport};
use crate::registry::mirror::Mirrors;
use reqwest::StatusCode;
use std::path::PathBuf;
use std::time::Duration;

/// How a client is set up.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// Allow plain HTTP and unverified TLS for every registry (loopback registries always may).
    pub insecure: bool,
    pub retry: Retry,
    /// Where `config.json` is read from; default `$DOCKER_CONFIG` or `~/.docker`.
    pub docker_config: Option<PathBuf>,
    /// Use these credentials for every registry instead of `config.json` (`otters login`).
    pub credentials: Option<Credential>,
    /// Connect, idle and per-request timeout; default `OTTERS_REGISTRY_TIMEOUT` or 30 s.
    pub timeout: Option<Duration>,
    /// Per-registry settings; default: read from `$OTTERS_HOME/config.toml`.
    pub registry_config: Option<RegistryConfig>,
}

/// The synchronous registry client.
pub struct RegistryClient {
    rt: tokio::runtime::Runtime,
    pub(super) t: Transport,
    pub(super) m: Mirrors,
}

impl RegistryClient {
    pub fn new(opts: ClientOptions) -> Result<Self, RegistryError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RegistryError::Client(e.into()))?;
        let dir = opts
            .docker_config
            .clone()
            .unwrap_or_else(auth::docker_config_dir);
        let fixed = opts.credentials.clone();
        let mirrors_on = fixed.is_none();
        let creds: CredentialSource = Box::new(move |registry: &str| match &fixed {
            Some(c) => Ok(Some(c.clone())),
            None => Ok(auth::credentials_in(&dir, registry)?),
        });
        let timeout = match opts.timeout {
            Some(t) => t,
            None => timeout_from_env()?,
        };
        let config = match opts.registry_config {
            Some(c) => c,
            None => RegistryConfig::load(&RegistryConfig::default_path())?,
        };
        let m = Mirrors::new(config.clone(), mirrors_on);
        let t = Transport::new(opts.insecure, config, opts.retry, timeout, creds)?;
        Ok(RegistryClient { rt, t, m })
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The retry policy (a blob download that loses its connection resumes within it).
    pub(crate) fn retry(&self) -> Retry {
        self.t.retry()
    }

    /// The per-request timeout, also the longest a transfer may go without progress.
    pub(crate) fn timeout(&self) -> Duration {
        self.t.timeout()
    }

    /// Checks that the stored (or given) credentials are accepted by `registry`.
    pub fn check_login(&self, registry: &Reference) -> Result<(), RegistryError> {
        let reg = &registry.registry;
        self.block_on(async {
            let resp = self
                .t
                .send(reg, registry.api_host(), &[], Call::Small, |c, base| {
                    Ok(c.get(format!("{base}/v2/")))
                })
                .await?;
            match resp.status() {
                s if s.is_success() => Ok(()),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RegistryError::Denied {
                    registry: reg.clone(),
                    user: self.t.user(reg),
                    what: "credentials".into(),
                }),
                s => Err(http_error(reg, "GET /v2/", s, resp).await),
            }
        })
    }

    /// Turns 401/403 into errors that name the registry, repository and user.
    ///
    /// A 401 to a request that carried credentials means the registry refused them (a stale or
    /// wrong password), whatever the action — except under bearer auth, where the token service
    /// already accepted them (it answers 401 itself to a wrong password) and a 401 means the token
    /// lacks the scope: no access to that repository, like a 403.
    pub(super) fn check_access(
        &self,
        r: &Reference,
        status: StatusCode,
        action: &'static str,
    ) -> Result<(), RegistryError> {
        let user = self.t.user(&r.registry);
        let bearer = self.t.auth_scheme(&r.registry).as_deref() == Some("bearer");
        match status {
            StatusCode::UNAUTHORIZED if user.is_some() && (action == "pull" || !bearer) => {
                Err(RegistryError::Denied {
                    registry: r.registry.clone(),
                    user,
                    what: "credentials".into(),
                })
            }
            StatusCode::UNAUTHORIZED if user.is_none() => Err(RegistryError::Denied {
                registry: r.registry.clone(),
                user: None,
                what: "credentials".into(),
            }),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RegistryError::Forbidden {
                registry: r.registry.clone(),
                repository: r.repository.clone(),
                user,
                action,
            }),
            _ => Ok(()),
        }
    }
}

/// `repository:NAME:ACTIONS`.
pub fn scope(repository: &str, actions: &str) -> String {
    format!("repository:{repository}:{actions}")
}
