//! `otters pull`: an image from a registry, or from an OCI layout or archive another tool wrote,
//! into the local store.
//!
//! stdout carries data (the manifest digest, or a JSON report with `--format json`); status lines
//! and progress go to stderr: bars on a TTY, one line per blob with `--progress plain`.
use super::common::{client, open_store_leased, parse_reference, print_report};
use super::progress::TransferFlags;
use super::{fail, fail_in, CliResult, Format};
use miette::{miette, IntoDiagnostic};
use otters_oci::archive::local::{self, LocalError, LocalSource};
use otters_oci::reference::Reference;
use otters_oci::registry::referrers;
use otters_oci::registry::sources::Sources;
use otters_oci::registry::transfer;
use otters_oci::store::refname::new_tag_name;
use otters_oci::Platform;
use std::process::ExitCode;

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
