//! `otters lock`: resolve the images an Agentfile names and write Agentfile.lock.
use super::common::{platform, print_diagnostics};
use super::{fail, CliResult};
use otters_cli::lock::LockArgs;
use otters_oci::Platform;
use otters_pipeline::lock;
use std::process::ExitCode;

pub fn run_lock(a: LockArgs) -> CliResult {
    let (context, agentfile) = otters_pipeline::project::locate(&a.path, a.file.as_deref());
    let build_args = super::flags::build_arg_values(&a.build_args, false)?.values;
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
    let line = crate::view::status::locked(locked.changed, &locked.lock_path, images);
    eprint!("{line}");
    Ok(ExitCode::SUCCESS)
}
