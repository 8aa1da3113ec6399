//! `otters build`: a short dispatcher over [`otters_pipeline::build::build`].
//!
//! Human output (diagnostics, progress, "tagged"/"pushed" lines) goes to stderr; stdout carries the
//! digest (or, with `--format json`, `{"digest","tags","size","pushed"}`).
use super::common::{build_error, build_failure, open_store_leased, print_diagnostics};
use super::progress::Bars;
use super::{fail, CliResult, Format};
use crate::view::build as view;
use miette::miette;
use otters_cli::build::Args;
use otters_cli::flags::ProgressMode;
use otters_pipeline::build::results::{self, Output};
use otters_pipeline::build::{self as lib, AgentfileSource, BuildOptions, BuildOutput};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `--label` / `--annotation` values (an annotation may carry buildx's `manifest:` prefix, the
/// only level an otters image has).
fn pairs(flag: &str, items: &[String]) -> miette::Result<BTreeMap<String, String>> {
    let prefix = (flag == "--annotation").then_some("manifest:");
    results::parse_pairs(items, prefix).map_err(|kv| {
        miette!("{flag} `{kv}` is not KEY=VALUE; write it as {flag} org.example.key=value")
    })
}

fn output(a: &Args) -> miette::Result<Option<Output>> {
    let parse = |s: &str| Output::parse(s).map_err(|e| miette!("--output {e}"));
    a.output.as_deref().map(parse).transpose()
}

fn read_stdin() -> miette::Result<Vec<u8>> {
    otters_pipeline::project::read_agentfile_stream(std::io::stdin().lock()).map_err(fail)
}

pub fn run(mut a: Args) -> CliResult {
    a.quiet |= a.progress == ProgressMode::Quiet;
    // Before anything is read or written (not even the store directory).
    lib::check_tags(&a.tags).map_err(build_error)?;
    let output = output(&a)?;
    let build_args = super::flags::build_arg_values(&a.build_args, a.quiet)?;
    let labels = pairs("--label", &a.labels)?;
    let annotations = pairs("--annotation", &a.annotations)?;
    let ci_annotations = if a.annotations_from_ci {
        otters_pipeline::build::ci::annotations(|k| std::env::var(k).ok()).map_err(fail)?
    } else {
        BTreeMap::new()
    };
    let (context, agentfile) = agentfile(&a)?;
    let env_epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
    let epoch = results::source_date_epoch(
        a.source_date_epoch.as_deref(),
        env_epoch.as_deref(),
        &context,
    )
    .map_err(fail)?;
    let home = super::otters_home();
    // A layout destination is not the store: the image is built in the store, then written
    // there through directory handles (it may hold links planted by whoever shipped the tree).
    let store = open_store_leased()?;
    let opts = BuildOptions {
        tags: a.tags.clone(),
        build_args: build_args.values,
        env_build_args: build_args.from_env,
        record_env_build_args: a.attest.provenance_env_args,
        labels,
        annotations,
        ci_annotations,
        archive: match &output {
            Some(Output::Archive(dest)) => Some(dest.clone()),
            _ => None,
        },
        offline: a.pins.offline,
        locked: a.pins.locked,
        allow_unpinned: a.pins.allow_unpinned,
        platform: a.platform.clone(),
        insecure: a.insecure,
        push: a.push,
        hash_cache: (!a.no_cache).then(|| home.join("cache/blobs.json")),
        source_date_epoch: epoch,
        supply_inputs: a.attest.wanted(),
        policy: a.policy.load().map_err(fail)?,
        ..BuildOptions::new(context, agentfile)
    };
    let mut sign = super::attest::signer(&a.attest)?;
    let result_files: Vec<&Path> = [&a.iidfile, &a.metadata_file]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    results::remove_result_files(&result_files).map_err(fail)?;
    let mut bars = Bars::for_build(a.progress, a.quiet);
    let out = lib::build(&opts, &store, &mut |e| bars.event(&e))
        .map_err(|e| build_error(build_failure(e)))?;
    if bars.plain() {
        eprint!("{}", view::layers(&results::layers(&store, &out)));
    }
    let attached = super::attest::attach(&store, &out, &a.attest, sign.as_deref_mut(), a.insecure)?;
    if let Some(o) = &output {
        results::write_output(&store, &out, o, !attached.is_empty()).map_err(fail)?;
    }
    if !a.quiet && a.format == Format::Text {
        eprint!("{}", view::attached(&attached));
    }
    results::write_result_files(&out, a.iidfile.as_deref(), a.metadata_file.as_deref())
        .map_err(fail)?;
    report(&a, output.as_ref(), &out);
    Ok(ExitCode::SUCCESS)
}

/// The context and where the Agentfile comes from: standard input for `-` (as the context or
/// `-f -`), else the one rule of [`lib::locate`].
fn agentfile(a: &Args) -> miette::Result<(PathBuf, AgentfileSource)> {
    let stdin_file = a.file.as_deref().is_some_and(|f| f.as_os_str() == "-");
    Ok(if a.context == "-" || stdin_file {
        let context = if a.context == "-" { "." } else { &a.context };
        (
            PathBuf::from(context),
            AgentfileSource::Stdin(read_stdin()?),
        )
    } else {
        let (context, path) = lib::locate(Path::new(&a.context), a.file.as_deref());
        (context, AgentfileSource::Path(path))
    })
}

fn report(a: &Args, output: Option<&Output>, out: &BuildOutput) {
    if !a.quiet {
        print_diagnostics(&out.file, &out.diagnostics);
        eprint!("{}", view::unused_build_args(&out.unused_build_args));
    }
    if !a.quiet && a.format == Format::Text {
        eprint!("{}", view::status(out, output.map(Output::dest)));
    }
    // In GitHub Actions; a summary that cannot be written is a warning, not a failure.
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        if let Err(e) = results::append_job_summary(Path::new(&path), out) {
            let path = Path::new(&path).display().to_string();
            eprintln!(
                "warning: cannot append to the job summary {}: {e}",
                otters_core::escape::escape(&path)
            );
        }
    }
    if a.format == Format::Json {
        super::common::print_compact(&results::summary_json(out));
    } else {
        outln!("{}", out.descriptor.digest);
    }
}
