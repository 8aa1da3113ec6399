//! `otters policy show [DIR]` and `otters policy check TARGET`: the organisation policy in effect
//! and what a target breaks of it. Exit 0 when nothing is broken, 1 on a violation, 2 when the
//! policy or the target cannot be read.
use super::{fail, CliResult};
use crate::view::policy as view;
use otters_agentfile::check;
use otters_cli::policy::{CheckArgs, Format, PolicyCommand, ShowArgs};
use otters_pipeline::project;
use otters_run::fetch::RegistryFetcher;
use otters_run::hold::{self, Reach};
use otters_run::prepare::{self, Pull};
use std::path::Path;
use std::process::ExitCode;

pub fn run(c: PolicyCommand) -> CliResult {
    match c {
        PolicyCommand::Show(a) => show(a),
        PolicyCommand::Check(a) => check(a),
    }
}

fn show(a: ShowArgs) -> CliResult {
    let policy = a
        .policy
        .load()
        .map_err(fail)?
        .for_project(&a.dir)
        .map_err(fail)?;
    match a.format {
        otters_cli::Format::Json => out!("{}", view::show_json(&policy)),
        otters_cli::Format::Text => out!("{}", view::show_text(&policy)),
    }
    Ok(ExitCode::SUCCESS)
}

fn check(a: CheckArgs) -> CliResult {
    let user = a.policy.load().map_err(fail)?;
    let as_path = Path::new(&a.target);
    let (file, violations) = if as_path.exists() {
        let (context, path) = project::locate(as_path, None);
        let bytes = project::read_agentfile(&context, &path).map_err(fail)?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let policy = user.for_project(dir).map_err(fail)?;
        let (file, analysis) = check::analyze_bytes(
            &path.display().to_string(),
            &bytes,
            &check::Options::default(),
        );
        let v = otters_policy::check_agent(&policy, &analysis.model.agent);
        (Some(file), v)
    } else {
        let store = super::common::open_store_leased()?;
        let registry = RegistryFetcher::new(super::common::client_options(a.insecure));
        let fetched =
            prepare::fetch_image(&store, &registry, &a.target, Pull::Missing).map_err(fail)?;
        let reach = Reach {
            insecure: a.insecure,
            may_contact: true,
        };
        let v = hold::violations(&user, &store, &a.target, &fetched.digest, reach).map_err(fail)?;
        (None, v)
    };
    let shown = file.as_ref().map_or(a.target.as_str(), |f| f.name.as_str());
    let text = match a.format {
        Format::Text => view::check_text(shown, file.as_ref(), &violations),
        Format::Json => view::check_json(shown, file.as_ref(), &violations),
        Format::Sarif => view::check_sarif(shown, file.as_ref(), &violations),
    };
    out!("{text}");
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
