//! `otters lock`: resolve the images an Agentfile names and write Agentfile.lock.
use super::common::{platform, print_diagnostics};
use super::{fail, CliResult};
use otters_oci::Platform;
use otters_pipeline::lock;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(mut_arg("build_args", |a| a.help("Set a build argument (repeatable); a bare KEY takes its value from the environment, as `otters build --build-arg` does")))]
pub struct LockArgs {
    /// Build context directory or Agentfile
    #[arg(default_value = ".")]
    pub path: std::path::PathBuf,
    /// The Agentfile, relative to the context (default: <PATH>/Agentfile)
    #[arg(short = 'f', long = "file")]
    pub file: Option<std::path::PathBuf>,
    /// Platform to resolve images for (default: this machine)
    #[arg(long)]
    pub platform: Option<String>,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    #[command(flatten)]
    pub build_args: super::flags::BuildArgFlags,
}

pub fn run_lock(a: LockArgs) -> CliResult {
    let (context, agentfile) = otters_pipeline::project::locate(&a.path, a.file.as_deref());
    let build_args = a.build_args.values(false)?;
    let platform = platform(a.platform.as_deref())?.unwrap_or_else(Platform::host);
    let request = lock::LockRequest {
        context,
        agentfile,
        build_args,
        platform,
        insecure: a.insecure,
        docker_config: None,
        store: super::otters_home().join("store"),
    };
    let locked = lock::lock(&request).map_err(|e| {
        if let Some((file, diags)) = e.diagnostics() {
            print_diagnostics(file, diags);
        }
        fail(e)
    })?;
    print_diagnostics(&locked.file, &locked.warnings);
    let images = locked.lock.images.len();
    let line = otters_pipeline::view::status::locked(locked.changed, &locked.lock_path, images);
    eprint!("{line}");
    Ok(ExitCode::SUCCESS)
}
