//! `otters attach` and `otters discover`: OCI 1.1 referrers of an image, in the local store or
//! (`--remote`) in its registry.
//!
//! stdout carries data (the new referrer's digest; the tree, or JSON with `--format json`).
//! Everything shown of a referrer comes from the image or a registry and is escaped.
use super::common::{esc, target, target_error, target_for_read, WhereFlags};
use super::{fail, fail_in, CliResult, Format};
use miette::miette;
use otters_oci::referrers::{walk, Node};
use otters_oci::Descriptor;
use otters_pipeline::target::Target;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The image to attach to: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// The artifact type of the new referrer (a media type, e.g. application/vnd.example.report+json)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: String,
    /// Files to attach, one layer each (media type application/octet-stream, named by title)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Media type of the attached files' layers
    #[arg(long, value_name = "TYPE", default_value = otters_oci::spec::descriptor::FILE_LAYER)]
    pub layer_media_type: String,
    /// Annotation of the referrer manifest (repeatable)
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    #[command(flatten)]
    pub place: WhereFlags,
}

#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// The image whose referrers to list: a local tag or digest (with --remote: a registry reference)
    pub reference: String,
    /// Only referrers of this artifact type (at the first level)
    #[arg(long, value_name = "TYPE")]
    pub artifact_type: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// With --remote: stop listing after this many registry requests (the output says it was cut)
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_requests: usize,
    #[command(flatten)]
    pub place: WhereFlags,
}

pub fn run_attach(a: AttachArgs) -> CliResult {
    for (flag, value) in [
        ("--artifact-type", &a.artifact_type),
        ("--layer-media-type", &a.layer_media_type),
    ] {
        if !otters_oci::referrers::plain_media_type(value) {
            return Err(miette!(
                "{flag} {}: write a media type, e.g. application/vnd.example.report+json",
                esc(value)
            ));
        }
    }
    let mut annotations = BTreeMap::new();
    for kv in &a.annotations {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| miette!("--annotation {kv}: write KEY=VALUE"))?;
        annotations.insert(k.to_owned(), v.to_owned());
    }
    let target = target(&a.reference, &a.place)?;
    let store = target.store();
    let mut layers = Vec::new();
    for path in &a.files {
        let file = otters_core::files::open_named(path, "file to attach").map_err(fail)?;
        let (digest, size) = store
            .put_blob_from_reader(file, &mut |_| {})
            .map_err(|e| fail_in(format!("cannot store {}", path.display()), e))?;
        let title = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        layers.push(
            Descriptor::new(a.layer_media_type.as_str(), digest, size)
                .with_annotation(otters_oci::spec::descriptor::ANN_TITLE, title),
        );
    }
    let d = store
        .attach(target.descriptor(), &a.artifact_type, &layers, &annotations)
        .map_err(|e| fail_in("cannot store the referrer", e))?;
    target.publish(&d).map_err(target_error)?;
    outln!("{}", d.digest);
    Ok(ExitCode::SUCCESS)
}

pub fn run_discover(a: DiscoverArgs) -> CliResult {
    let target = target_for_read(&a.reference, &a.place)?;
    let root = target.descriptor().clone();
    let budget = if matches!(target, Target::Remote(..)) {
        a.max_requests
    } else {
        usize::MAX
    };
    let tree = walk(
        &root.digest,
        a.artifact_type.as_deref(),
        budget,
        &mut |s, at| target.listing(s, at),
    )
    .map_err(target_error)?;
    let nodes = json_nodes(&tree.referrers);
    match a.format {
        Format::Json => {
            let mut v = json!({
                "reference": a.reference,
                "digest": root.digest,
                "mediaType": root.media_type,
                "referrers": nodes,
            });
            if tree.cut {
                v["truncated"] = json!(true);
                v["requests"] = json!(tree.requests);
            }
            outln!("{}", serde_json::to_string_pretty(&v).map_err(fail)?);
        }
        Format::Text => {
            outln!("{}@{}", esc(&a.reference), root.digest);
            print_tree(&nodes, "");
        }
    }
    if tree.cut {
        eprintln!(
            "warning: the output was cut after {} registry requests (--max-requests {}): deeper referrers are not listed; pass a larger --max-requests, or discover a referrer by its digest",
            tree.requests, a.max_requests
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The discovered tree as JSON nodes, each with its kind (signature, SBOM, …) when known.
fn json_nodes(nodes: &[Node]) -> Vec<serde_json::Value> {
    nodes
        .iter()
        .map(|n| {
            let d = &n.descriptor;
            let mut v = json!({
                "digest": d.digest,
                "mediaType": d.media_type,
                "size": d.size,
                "artifactType": d.artifact_type,
                "annotations": d.annotations,
                "referrers": json_nodes(&n.referrers),
            });
            if let Some(k) =
                otters_supply::referrer::kind(d.artifact_type.as_deref(), &d.annotations)
            {
                v["kind"] = json!(k);
            }
            v
        })
        .collect()
}

fn print_tree(nodes: &[serde_json::Value], prefix: &str) {
    for (i, n) in nodes.iter().enumerate() {
        let last = i + 1 == nodes.len();
        let at = n["artifactType"].as_str().unwrap_or("(no artifact type)");
        let digest = n["digest"].as_str().unwrap_or_default();
        let kind = n["kind"]
            .as_str()
            .map(|k| format!(" ({k})"))
            .unwrap_or_default();
        outln!(
            "{prefix}{} {} {}{kind}",
            if last { "└──" } else { "├──" },
            esc(at),
            esc(digest)
        );
        if let Some(below) = n["referrers"].as_array() {
            let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
            print_tree(below, &deeper);
        }
    }
}
