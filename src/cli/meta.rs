//! `otters completion SHELL`, `otters version` and the hidden `otters manpages DIR`: facts about
//! the command line itself, all generated from the clap definition in [`super::Cli`].
//!
//! Takes: a shell name, an output format, a directory. Returns: a completion script or version on
//! stdout; one roff man page per command written into DIR (`otters.1`, `otters-build.1`, …, the
//! naming `docker` and `podman` pages use). Must never: write anywhere but DIR, or print a page
//! for a hidden command.
use super::{fail, fail_in, Cli, CliResult, Format};
use clap::CommandFactory;
use otters_cli::meta::{CompletionArgs, ManpagesArgs, VersionArgs};
use otters_oci::Platform;
use std::process::ExitCode;

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run_completion(a: CompletionArgs) -> CliResult {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "otters", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// Cargo features this binary was built with (the crate has none today; the key keeps the JSON
/// shape stable for scripts when some are added).
const FEATURES: &[&str] = &[];

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run_version(a: VersionArgs) -> CliResult {
    let version = env!("CARGO_PKG_VERSION");
    let platform = Platform::host().to_string();
    if a.format == Format::Json {
        let line = crate::view::status::version_json(version, &platform, FEATURES);
        outln!("{line}");
    } else {
        out!("{}", crate::view::status::version(version, &platform));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_manpages(a: ManpagesArgs) -> CliResult {
    std::fs::create_dir_all(&a.dir)
        .map_err(|e| fail_in(format!("cannot create {}", a.dir.display()), e))?;
    // The pages' date: SOURCE_DATE_EPOCH's when set (reproducible packages), else today.
    let env = std::env::var("SOURCE_DATE_EPOCH").ok();
    let epoch = otters_pipeline::build::results::epoch_or_now(env.as_deref()).map_err(fail)?;
    let date = otters_pipeline::lower::epoch::rfc3339(epoch)[..10].to_owned();
    let mut cli = Cli::command();
    cli.build();
    // After `build`, a subcommand's display name is `otters-build`: the page's title and file
    // name, as in docker-build(1); its synopsis reads `otters build`.
    let pages = std::iter::once(cli.clone()).chain(
        cli.get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .cloned(),
    );
    for cmd in pages {
        let man = clap_mangen::Man::new(cmd)
            .date(date.as_str())
            .source(format!("otters {}", env!("CARGO_PKG_VERSION")))
            .manual("otters manual");
        let mut page = Vec::new();
        man.render(&mut page)
            .map_err(|e| fail_in(format!("cannot render {}", man.get_filename()), e))?;
        let path = a.dir.join(man.get_filename());
        std::fs::write(&path, page)
            .map_err(|e| fail_in(format!("cannot write {}", path.display()), e))?;
        outln!("{}", crate::view::path(&path));
    }
    Ok(ExitCode::SUCCESS)
}
