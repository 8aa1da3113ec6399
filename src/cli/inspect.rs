//! `otters inspect`: an image's manifest, config and layers, and an agent's own content, from
//! the local store or its registry (`--remote`, or a registry reference the store does not hold;
//! manifest and config blob only: no layer is downloaded, nothing is written to the store).
use super::common::{client, esc, human_size, open_store, parse_reference, WhereFlags};
use super::{fail, fail_in, CliResult, Format};
use miette::{miette, IntoDiagnostic};
use otters_agentfile::ir::Agent;
use otters_core::escape::json_controls;
use otters_oci::store::query::{self, ImageDetails};
use otters_oci::Platform;
use otters_pipeline::target::{names_registry, remote_details};
use serde_json::json;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Image reference: a tag, a digest or a digest prefix, or a registry reference (read from
    /// its registry, with a note, when the local store does not hold it)
    pub reference: String,
    /// Show this platform's manifest of an index read from a registry (e.g. linux/arm64)
    #[arg(long, conflicts_with = "local")]
    pub platform: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub place: WhereFlags,
}

/// The image from the local store, or from its registry: with `--remote`, or for a registry
/// reference the store does not hold (unless `--local`), with a note.
fn inspected(a: &InspectArgs) -> miette::Result<ImageDetails> {
    let platform = a
        .platform
        .as_deref()
        .map(|p| Platform::parse(p).map_err(|e| fail_in("--platform", e)))
        .transpose()?;
    if !a.place.remote {
        let store = open_store()?;
        if let Some(d) = query::details(&store, &a.reference).map_err(fail)? {
            if platform.is_some() {
                return Err(miette!(
                    "--platform picks a manifest of an index read from a registry; `{}` is in the local store: pass --remote to read it from its registry",
                    esc(&a.reference)
                ));
            }
            return Ok(d);
        }
    }
    let r = match names_registry(&a.reference) {
        Some(r) if !a.place.remote && !a.place.local => {
            eprintln!(
                "note: {} is not in the local store; reading it from {} (pass --local to use only the store)",
                esc(&a.reference),
                esc(&r.registry)
            );
            r
        }
        _ if a.place.remote => parse_reference(&a.reference)?,
        _ => {
            return Err(miette!(
                help = "list local images with `otters images`, fetch it with `otters pull`, or read it from its registry with `otters inspect --remote`",
                "image `{}` is not in the local store",
                esc(&a.reference)
            ))
        }
    };
    let client = client(a.place.insecure)?;
    remote_details(&client, &r, platform.as_ref()).map_err(fail)
}

pub fn run_inspect(a: InspectArgs) -> CliResult {
    let shown = inspected(&a)?;
    match a.format {
        Format::Json => print_inspect_json(&a.reference, shown)?,
        Format::Text => print_inspect_text(&a.reference, shown),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_inspect_json(reference: &str, shown: ImageDetails) -> miette::Result<()> {
    let manifest: serde_json::Value = serde_json::from_slice(&shown.bytes).into_diagnostic()?;
    let layers: Vec<_> = shown
        .manifest
        .layers
        .iter()
        .map(|l| json!({"mediaType": l.media_type, "digest": l.digest, "size": l.size, "title": l.title()}))
        .collect();
    let mut v = json!({
        "reference": reference,
        "digest": shown.descriptor.digest,
        "mediaType": shown.descriptor.media_type,
        "size": shown.descriptor.size,
        "manifest": manifest,
        "config": shown.config,
        "layers": layers,
    });
    if let Some(s) = &shown.manifest.subject {
        v["subject"] = json!({"mediaType": s.media_type, "digest": s.digest, "size": s.size});
    }
    outln!(
        "{}",
        json_controls(serde_json::to_string_pretty(&v).into_diagnostic()?)
    );
    Ok(())
}

fn print_inspect_text(reference: &str, shown: ImageDetails) {
    let ImageDetails {
        descriptor:
            otters_oci::Descriptor {
                digest,
                media_type,
                artifact_type,
                ..
            },
        manifest: m,
        config,
        ..
    } = shown;
    // Everything below but sizes comes from the image or its registry: escaped for the terminal.
    outln!("Reference:      {}", esc(reference));
    outln!("Digest:         {}", esc(digest.as_str()));
    outln!("Media type:     {}", esc(media_type.as_str()));
    if let Some(at) = &artifact_type {
        outln!("Artifact type:  {}", esc(at));
    }
    if let Some(s) = &m.subject {
        outln!(
            "Subject:        {} ({}, {} bytes)",
            esc(s.digest.as_str()),
            esc(s.media_type.as_str()),
            s.size
        );
    }
    if !m.annotations.is_empty() {
        outln!("Annotations:");
        for (k, v) in &m.annotations {
            outln!("  {}: {}", esc(k), esc(v));
        }
    }
    if let Some(c) = &m.config {
        outln!(
            "Config:         {} ({}, {})",
            esc(c.digest.as_str()),
            esc(c.media_type.as_str()),
            human_size(c.size)
        );
    }
    if !m.layers.is_empty() {
        outln!("Layers:");
        let rows: Vec<(String, String, u64, String)> = m
            .layers
            .iter()
            .map(|l| {
                (
                    esc(l.title().unwrap_or("-")),
                    esc(l.media_type.as_str()),
                    l.size,
                    esc(l.digest.as_str()),
                )
            })
            .collect();
        let tw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let mw = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        for (title, media_type, size, digest) in &rows {
            outln!(
                "  {title:tw$}  {media_type:mw$}  {:>9}  {digest}",
                human_size(*size)
            );
        }
    }
    for child in &m.manifests {
        let platform = child
            .platform
            .as_ref()
            .map(|p| format!("{}/{}", p.os, p.architecture));
        outln!(
            "  manifest {} {}",
            esc(child.digest.as_str()),
            esc(&platform.unwrap_or_default())
        );
    }
    if let Some(agent) = config.as_ref().and_then(agent_of) {
        print_agent(&agent);
    }
}

/// The agent a config blob describes, when it is an agent config (otters' or openotters'); a
/// container image's config, an artifact's or a blob otters cannot read shows nothing more.
fn agent_of(config: &serde_json::Value) -> Option<Agent> {
    let bytes = serde_json::to_vec(config).ok()?;
    otters_agentfile::ir::from_config_blob(&bytes)
        .ok()
        .map(|f| f.agent)
}

/// The agent's own content, as `docker inspect` shows an image's config: what it is (name,
/// model, runtime, parent), what it gets (bins, contexts, configs, environment, files, mounts,
/// capabilities) and how it starts. Every value comes from the image: escaped.
fn print_agent(a: &Agent) {
    let node = |n: &Option<otters_agentfile::ir::Node<String>>| n.as_ref().map(|n| esc(&n.value));
    let described = |d: &Option<String>| {
        d.as_deref()
            .map(|d| format!("  \"{}\"", esc(d)))
            .unwrap_or_default()
    };
    outln!("Agent:");
    for (label, value) in [
        ("Name", node(&a.name)),
        ("Model", node(&a.model)),
        ("Runtime", node(&a.runtime)),
        ("From", node(&a.from).filter(|f| f != "scratch")),
    ] {
        if let Some(v) = value {
            outln!("  {:<14}{v}", format!("{label}:"));
        }
    }
    if let Some(exec) = &a.exec {
        let args: Vec<String> = exec
            .value
            .iter()
            .map(|x| format!("\"{}\"", esc(x)))
            .collect();
        outln!("  Exec:         [{}]", args.join(", "));
    }
    section(
        "Bins",
        a.bins.iter().map(|b| {
            format!(
                "{}  {}{}",
                esc(&b.name),
                esc(&b.image),
                described(&b.description)
            )
        }),
    );
    section(
        "Contexts",
        a.contexts.iter().map(|c| {
            let from = match (&c.file, &c.content) {
                (Some(f), _) => format!("  file://{}", esc(f)),
                (None, Some(text)) => format!("  {}", human_size(text.len() as u64)),
                (None, None) => String::new(),
            };
            format!("{}{from}{}", esc(&c.name), described(&c.description))
        }),
    );
    section(
        "Configs",
        a.configs.iter().map(|c| {
            let value = c
                .value
                .as_ref()
                .map(|v| format!("={}", esc(&v.display())))
                .unwrap_or_default();
            let required = if c.required { "  (required)" } else { "" };
            format!(
                "{}{value}{required}{}",
                esc(&c.key),
                described(&c.description)
            )
        }),
    );
    section(
        "Env",
        a.envs.iter().map(|e| {
            format!(
                "{}={}{}",
                esc(&e.key),
                esc(&e.value),
                described(&e.description)
            )
        }),
    );
    section(
        "Files",
        a.adds
            .iter()
            .map(|f| format!("{}{}", esc(&f.name), described(&f.description))),
    );
    section(
        "Mounts",
        a.mounts.iter().map(|m| {
            let mode = if m.read_only { "ro" } else { "rw" };
            format!("{}  {mode}{}", esc(&m.target), described(&m.description))
        }),
    );
    section("Capabilities", a.capabilities.iter().map(|c| esc(&c.value)));
    section(
        "Labels",
        a.labels
            .iter()
            .map(|(k, v)| format!("{}={}", esc(k), esc(&v.value))),
    );
}

/// `  Title:` and one indented line per item; nothing when there are none.
fn section(title: &str, items: impl Iterator<Item = String>) {
    let mut items = items.peekable();
    if items.peek().is_some() {
        outln!("  {title}:");
        for i in items {
            outln!("    {i}");
        }
    }
}
