//! `otters push`, `pull`, `lock`.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
use super::common::{client, human_size, open_store_leased, parse_reference, print_diagnostics};
use super::progress::{Bars, ProgressMode};
use super::{fail, fail_in, CliResult, Format};
use miette::{miette, IntoDiagnostic};
use otters_oci::archive::local::{self, LocalError, LocalSource};
use otters_oci::reference::Reference;
use otters_oci::registry::referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer::{self, TransferReport};
use otters_oci::registry::RegistryError;
use otters_oci::store::refname::new_tag_name;
use otters_oci::Platform;
use otters_pipeline::lock;
use std::process::ExitCode;

/// The flags `push` and `pull` share.
#[derive(Debug, clap::Args)]
pub struct TransferFlags {
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// No progress bars or status lines
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress output on stderr: `auto` (bars on a terminal, nothing elsewhere), `plain` (one
    /// line per blob: pushed/pulled with size and time, exists, mounted; for CI logs), `tty` (bars
    /// even when stderr is not a terminal), `quiet` (same as `-q`: nothing but errors)
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

impl TransferFlags {
    /// `-q`, or `--progress quiet`.
    fn quiet(&self) -> bool {
        self.quiet || self.progress == ProgressMode::Quiet
    }

    /// The progress display the flags ask for.
    fn bars(&self) -> Bars {
        Bars::for_mode(self.progress, self.quiet())
    }
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The local image to push, named by its registry reference (e.g. 127.0.0.1:5000/team/agent:1)
    pub reference: String,
    /// Push to this reference instead of REFERENCE
    pub destination: Option<String>,
    /// Push the image only, not its referrers (signatures, SBOMs, attestations), which go by default
    #[arg(long)]
    pub no_referrers: bool,
    #[command(flatten)]
    pub flags: TransferFlags,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The image to download (e.g. ghcr.io/org/agent:1, or name@sha256:…), or an OCI layout or
    /// archive another tool wrote: `oci:DIR[:tag]`, `oci-archive:FILE[:tag]`
    pub reference: String,
    /// Local tag to give the image (default: REFERENCE as written)
    #[arg(short = 't', long = "tag")]
    pub tag: Option<String>,
    /// Pull only this platform's manifest of an index (e.g. linux/arm64)
    #[arg(long)]
    pub platform: Option<String>,
    /// Also pull the image's referrers (signatures, SBOMs, attestations)
    #[arg(long)]
    pub referrers: bool,
    #[command(flatten)]
    pub flags: TransferFlags,
}

#[derive(Debug, clap::Args)]
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
    /// Set a build argument (repeatable)
    #[arg(long = "build-arg", value_name = "K=V")]
    pub build_args: Vec<String>,
}

pub fn run_push(a: PushArgs) -> CliResult {
    let store = open_store_leased()?;
    let local = store
        .resolve(&a.reference)
        .into_diagnostic()?
        .ok_or_else(|| miette!("no image {} in the local store: build it with `otters build -t {}` or pull it first", a.reference, a.reference))?;
    let dest_text = a.destination.as_deref().unwrap_or(&a.reference);
    let mut dest = parse_reference(dest_text)?;
    if dest.tag.is_none() && dest.digest.is_none() {
        dest.tag = Some("latest".into());
    }
    if let Some(d) = &dest.digest {
        if *d != local.digest.as_str() {
            return Err(miette!(
                "{dest_text} names digest {d}, but the local image is {}; push by tag instead",
                local.digest
            ));
        }
    }
    let client = client(a.flags.insecure)?;
    let mut sources = Sources::load(store.root());
    let mut ui = a.flags.bars();
    let result = transfer::push_image(&client, &store, &local, &dest, &mut sources, &mut |e| {
        ui.event(&e);
    })
    .and_then(|mut report| {
        if !a.no_referrers {
            let pinned = dest.with_digest(&local.digest);
            referrers::push_referrers(
                &client,
                &store,
                &local.digest,
                &pinned,
                &mut sources,
                &mut |e| ui.event(&e),
                &mut report,
            )?;
        }
        Ok(report)
    });
    ui.finish();
    let _ = sources.save();
    let report = result.map_err(|e| push_error(e, &dest))?;
    print_report(&report, a.flags.format, a.flags.quiet(), "pushed")?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_pull(a: PullArgs) -> CliResult {
    if let Some(done) = pull_local(
        &a.reference,
        a.tag.as_deref(),
        a.flags.quiet(),
        a.flags.format == Format::Json,
    ) {
        return done;
    }
    let store = open_store_leased()?;
    let mut r = parse_reference(&a.reference)?;
    let client = client(a.flags.insecure)?;
    if let Some(p) = &a.platform {
        let platform = Platform::parse(p).map_err(|e| fail_in("--platform", e))?;
        let resolved = client
            .resolve(&r, &platform)
            .map_err(|e| fail_in(format!("cannot pull {}", r.familiar()), e))?;
        r = r.with_digest(&resolved.manifest.digest);
    }
    let mut sources = Sources::load(store.root());
    let mut ui = a.flags.bars();
    let result = transfer::pull_image(&client, &store, &r, &mut sources, &mut |e| ui.event(&e))
        .and_then(|(desc, mut report)| {
            if a.referrers {
                let pinned = r.with_digest(&desc.digest);
                referrers::pull_referrers(
                    &client,
                    &store,
                    &pinned,
                    &desc.digest,
                    &mut sources,
                    &mut |e| ui.event(&e),
                    &mut report,
                )?;
            }
            Ok((desc, report))
        });
    ui.finish();
    if !a.flags.quiet() && a.flags.format == Format::Text {
        for f in client.mirror_failures() {
            eprintln!(
                "warning: mirror {} of {} was skipped: {}",
                f.mirror,
                f.registry,
                otters_core::escape::escape(&f.reason)
            );
        }
    }
    let _ = sources.save();
    let (desc, report) = result.map_err(|e| fail_in(format!("cannot pull {}", r.familiar()), e))?;
    let local_tag = match (&a.tag, Reference::parse(&a.reference)) {
        (Some(t), _) => Some(t.clone()),
        (None, Ok(orig)) if orig.digest.is_none() => Some(a.reference.clone()),
        _ => None,
    };
    if let Some(t) = local_tag {
        let name = store
            .tag(&t, &desc)
            .map_err(|e| fail_in(format!("cannot tag the pulled image as {t}"), e))?;
        if !a.flags.quiet() && a.flags.format == Format::Text {
            eprintln!("tagged {name}");
        }
    } else {
        store
            .add_untagged(&desc)
            .map_err(|e| fail_in("cannot record the pulled image in the store", e))?;
    }
    print_report(&report, a.flags.format, a.flags.quiet(), "pulled")?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_lock(a: LockArgs) -> CliResult {
    let (context, agentfile) = otters_pipeline::project::locate(&a.path, a.file.as_deref());
    let mut build_args = std::collections::BTreeMap::new();
    for kv in &a.build_args {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| miette!("--build-arg {kv}: write K=V"))?;
        build_args.insert(k.to_owned(), v.to_owned());
    }
    let platform = match &a.platform {
        Some(p) => Platform::parse(p).map_err(|e| fail_in("--platform", e))?,
        None => Platform::host(),
    };
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
    eprintln!(
        "{} {} ({} image(s) pinned)",
        if locked.changed {
            "wrote"
        } else {
            "unchanged:"
        },
        locked.lock_path.display(),
        locked.lock.images.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn push_error(e: RegistryError, dest: &Reference) -> miette::Report {
    match e {
        RegistryError::Interrupted { .. } | RegistryError::Unreachable { .. } => {
            fail_in(format!("push to {} did not finish", dest.familiar()), e)
        }
        _ => fail_in(format!("cannot push to {}", dest.familiar()), e),
    }
}

fn print_report(
    report: &TransferReport,
    format: Format,
    quiet: bool,
    verb: &str,
) -> miette::Result<()> {
    if format == Format::Json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| fail_in("cannot write the report", e))?;
        outln!("{text}");
        return Ok(());
    }
    if !quiet {
        let moved = report.uploaded.len() + report.downloaded.len();
        // Said only when a mirror took part: otherwise the reference names the host.
        let registry = Reference::parse(&report.reference).map(|r| r.registry);
        let from = if report.from.iter().any(|h| Ok(h) != registry.as_ref()) {
            format!(" from {}", report.from.join(", "))
        } else {
            String::new()
        };
        eprintln!(
            "{verb} {}{from}: {moved} blob(s) transferred ({}), {} already present, {} mounted",
            report.reference,
            human_size(report.bytes),
            report.skipped.len(),
            report.mounted.len()
        );
        if !report.referrers.is_empty() {
            eprintln!("{verb} {} referrer(s)", report.referrers.len());
        }
    }
    outln!("{}", report.digest);
    Ok(())
}

/// `otters pull oci:DIR[:tag]` / `oci-archive:FILE[:tag]`: an OCI layout or archive written by
/// another tool (skopeo, buildah, oras) copied into the store with the checks a registry pull
/// applies. `None` when `reference` names neither transport.
pub fn pull_local(
    reference: &str,
    tag: Option<&str>,
    quiet: bool,
    json: bool,
) -> Option<CliResult> {
    let src = LocalSource::parse(reference)?;
    Some(pull_local_from(&src, tag, quiet, json))
}

fn pull_local_from(src: &LocalSource, tag: Option<&str>, quiet: bool, json: bool) -> CliResult {
    if let Some(t) = tag {
        new_tag_name(t).map_err(fail)?;
    }
    let store = open_store_leased()?;
    let imported = local::import(&store, src).map_err(|e| match e {
        LocalError::Archive(e) => fail_in("cannot pull", e),
        LocalError::NoSuchImage { ref holds, .. } => {
            miette!(help = format!("it holds: {holds}"), "{e}")
        }
        LocalError::Several { ref holds, .. } => {
            miette!(
                help = format!("name one after a `:` (it holds: {holds})"),
                "{e}"
            )
        }
    })?;
    let root = &imported.root;
    let name = if let Some(t) = imported.local_name(tag) {
        Some(store.tag(&t, root).into_diagnostic()?)
    } else {
        store.add_untagged(root).into_diagnostic()?;
        None
    };
    if json {
        let v = serde_json::json!({"source": src.path.display().to_string(), "digest": root.digest, "tag": name});
        outln!("{}", serde_json::to_string_pretty(&v).into_diagnostic()?);
        return Ok(ExitCode::SUCCESS);
    }
    if !quiet {
        match &name {
            Some(n) => eprintln!("tagged {n}"),
            None => eprintln!(
                "stored untagged; name it with `otters tag {} NAME:TAG` (or pull with -t)",
                root.digest.short()
            ),
        }
    }
    outln!("{}", root.digest);
    Ok(ExitCode::SUCCESS)
}
