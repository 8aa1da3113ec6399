//! [`World`]: one user's machine (an [`Env`]: `OTTERS_HOME`, a docker config, room for contexts
//! and layouts) and a real `docker-registry`, the fixture most end-to-end suites start from.
//!
//! A suite's own steps on it (pushing its runtime, running its agents) stay in that suite, in a
//! file-local trait implemented for `World` (`impl Pipeline for World`), so two suites never
//! clash over a method name. The other fixtures have their own names: `runnable::StaticWorld`
//! (static binaries for containers), `run`'s `ProbeWorld`, `copy`'s `CopyWorld`,
//! `security_extract`'s `CanaryWorld`.

use super::cli::Env;
use super::registry::Registry;
use std::path::{Path, PathBuf};

/// A temp machine and a registry; both go away when it is dropped.
pub struct World {
    pub env: Env,
    pub reg: Registry,
}

impl World {
    pub fn new() -> World {
        World {
            env: Env::new(),
            reg: Registry::start(),
        }
    }

    /// The machine's temp dir (contexts, layouts, run trees go below it).
    pub fn dir(&self) -> &Path {
        self.env.dir.path()
    }

    /// `otters` on this machine (its `OTTERS_HOME` and docker config).
    pub fn otters(&self) -> assert_cmd::Command {
        self.env.otters()
    }

    /// Writes `agentfile` (and `files`, relative paths) into the context directory `name`.
    pub fn context(&self, name: &str, agentfile: &str, files: &[(&str, &str)]) -> PathBuf {
        let ctx = self.dir().join(name);
        super::write(&ctx.join("Agentfile"), agentfile);
        for (path, body) in files {
            super::write(&ctx.join(path), body);
        }
        ctx
    }
}
