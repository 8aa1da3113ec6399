//! Executing a [`RunPlan`]: the process becomes the runtime (system executor) or the docker CLI
//! (docker executor), so signals and the exit code are theirs.
//!
//! Takes: a plan whose tree is materialised. Returns: only on failure, with the error. Must never:
//! pass the host environment to the runtime (system: the environment is cleared first), or put a
//! secret in argv (docker: secrets travel through the CLI's environment as `--env KEY`).

use super::plan::{Launcher, RunPlan};
use std::os::unix::process::CommandExt;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("the plan has an empty argv")]
    Empty,
    #[error("cannot execute {program}: {source}")]
    Exec {
        program: String,
        source: std::io::Error,
        /// What the failure most likely means (the front end says what to do about it).
        cause: ExecCause,
    },
}

/// Why a program that could not be executed most likely failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecCause {
    /// The container CLI (`docker`, or what the plan names) is not installed.
    NoContainerCli,
    /// The runtime is missing or not executable here: perhaps built for another platform.
    NotForThisHost,
    Other,
}

/// The command the plan describes, ready to exec (exposed for tests).
pub fn command(plan: &RunPlan) -> Result<Command, ExecError> {
    let (program, args) = plan.argv.split_first().ok_or(ExecError::Empty)?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    match plan.executor {
        Launcher::System => {
            cmd.env_clear();
            cmd.envs(plan.env.iter().map(|e| (&e.key, &e.value)));
            cmd.current_dir(&plan.cwd);
        }
        Launcher::Docker { .. } => {
            // The CLI keeps the host environment it needs (DOCKER_HOST, DOCKER_CONFIG …); the
            // container gets only the `--env` entries of argv, whose secret values come from here.
            cmd.envs(
                plan.env
                    .iter()
                    .filter(|e| e.secret)
                    .map(|e| (&e.key, &e.value)),
            );
        }
    }
    Ok(cmd)
}

/// Replace this process with the plan's program. Returns only when that fails.
pub fn exec(plan: &RunPlan) -> ExecError {
    let mut cmd = match command(plan) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let source = cmd.exec();
    let cause = match (&plan.executor, source.kind()) {
        (Launcher::Docker { .. }, std::io::ErrorKind::NotFound) => ExecCause::NoContainerCli,
        (Launcher::System, std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound) => {
            ExecCause::NotForThisHost
        }
        _ => ExecCause::Other,
    };
    ExecError::Exec {
        program: plan.argv.first().cloned().unwrap_or_default(),
        source,
        cause,
    }
}
