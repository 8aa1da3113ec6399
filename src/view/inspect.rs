//! `otters inspect`: an image's manifest, config and layers, and an agent's own content, as text
//! or JSON.
use super::{esc, human_size, line};
use otters_agentfile::ir::{Agent, Node};
use otters_core::escape::json_controls;
use otters_oci::store::query::ImageDetails;
use otters_schema::outputs::{Described, Inspect, Layer, WithSchema};

/// The JSON view: the manifest as read, its config, and one entry per layer
/// (`otters_schema::outputs::Inspect`, whose schema, `otters schema inspect`, `"$schema"` names).
pub fn json(reference: &str, shown: &ImageDetails) -> Result<String, serde_json::Error> {
    let manifest: serde_json::Value = serde_json::from_slice(&shown.bytes)?;
    let d = &shown.descriptor;
    let v = Inspect {
        reference,
        digest: d.digest.as_str(),
        media_type: d.media_type.as_str(),
        size: d.size,
        manifest: &manifest,
        config: shown.config.as_ref(),
        layers: shown
            .manifest
            .layers
            .iter()
            .map(|l| Layer {
                media_type: l.media_type.as_str(),
                digest: l.digest.as_str(),
                size: l.size,
                title: l.title(),
            })
            .collect(),
        subject: shown.manifest.subject.as_ref().map(|s| Described {
            media_type: s.media_type.as_str(),
            digest: s.digest.as_str(),
            size: s.size,
        }),
    };
    let v = WithSchema::new("inspect", v);
    Ok(format!(
        "{}\n",
        json_controls(serde_json::to_string_pretty(&v)?)
    ))
}

/// The text view; an agent's config adds the agent's own content (see [`agent`]).
pub fn text(reference: &str, shown: &ImageDetails) -> String {
    let (d, m) = (&shown.descriptor, &shown.manifest);
    let mut out = String::new();
    // Everything below but sizes comes from the image or its registry: escaped for the terminal.
    line!(out, "Reference:      {}", esc(reference));
    line!(out, "Digest:         {}", esc(d.digest.as_str()));
    line!(out, "Media type:     {}", esc(d.media_type.as_str()));
    if let Some(at) = &d.artifact_type {
        line!(out, "Artifact type:  {}", esc(at));
    }
    if let Some(s) = &m.subject {
        line!(
            out,
            "Subject:        {} ({}, {} bytes)",
            esc(s.digest.as_str()),
            esc(s.media_type.as_str()),
            s.size
        );
    }
    if !m.annotations.is_empty() {
        line!(out, "Annotations:");
        for (k, v) in &m.annotations {
            line!(out, "  {}: {}", esc(k), esc(v));
        }
    }
    if let Some(c) = &m.config {
        line!(
            out,
            "Config:         {} ({}, {})",
            esc(c.digest.as_str()),
            esc(c.media_type.as_str()),
            human_size(c.size)
        );
    }
    if !m.layers.is_empty() {
        line!(out, "Layers:");
        let rows: Vec<_> = m
            .layers
            .iter()
            .map(|l| {
                let title = esc(l.title().unwrap_or("-"));
                (
                    title,
                    esc(l.media_type.as_str()),
                    l.size,
                    esc(l.digest.as_str()),
                )
            })
            .collect();
        let tw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let mw = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        for (title, media_type, size, digest) in &rows {
            let size = human_size(*size);
            line!(out, "  {title:tw$}  {media_type:mw$}  {size:>9}  {digest}");
        }
    }
    for child in &m.manifests {
        let platform = child
            .platform
            .as_ref()
            .map(|p| format!("{}/{}", p.os, p.architecture));
        let (digest, platform) = (child.digest.as_str(), platform.unwrap_or_default());
        line!(out, "  manifest {} {}", esc(digest), esc(&platform));
    }
    if let Some(a) = shown.config.as_ref().and_then(agent_of) {
        out.push_str(&agent(&a));
    }
    out
}

/// The agent a config blob describes, when it is an agent config (otters' or openotters'); a
/// container image's config, an artifact's or a blob otters cannot read gives none.
pub fn agent_of(config: &serde_json::Value) -> Option<Agent> {
    let bytes = serde_json::to_vec(config).ok()?;
    otters_agentfile::ir::from_config_blob(&bytes)
        .ok()
        .map(|f| f.agent)
}

/// The agent's own content, as `docker inspect` shows an image's config: what it is (name,
/// model, runtime, parent), what it gets (bins, contexts, configs, environment, files, mounts,
/// capabilities) and how it starts. Every value comes from the image: escaped.
pub fn agent(a: &Agent) -> String {
    let node = |n: &Option<Node<String>>| n.as_ref().map(|n| esc(&n.value));
    let described = |d: &Option<String>| {
        d.as_deref()
            .map(|d| format!("  \"{}\"", esc(d)))
            .unwrap_or_default()
    };
    let mut out = String::from("Agent:\n");
    for (label, value) in [
        ("Name", node(&a.name)),
        ("Model", node(&a.model)),
        ("Runtime", node(&a.runtime)),
        ("From", node(&a.from).filter(|f| f != "scratch")),
    ] {
        if let Some(v) = value {
            line!(out, "  {:<14}{v}", format!("{label}:"));
        }
    }
    if let Some(exec) = &a.exec {
        let args: Vec<String> = exec
            .value
            .iter()
            .map(|x| format!("\"{}\"", esc(x)))
            .collect();
        line!(out, "  Exec:         [{}]", args.join(", "));
    }
    let bins = a.bins.iter().map(|b| {
        let (name, image) = (esc(&b.name), esc(&b.image));
        format!("{name}  {image}{}", described(&b.description))
    });
    section(&mut out, "Bins", bins);
    let contexts = a.contexts.iter().map(|c| {
        let from = match (&c.file, &c.content) {
            (Some(f), _) => format!("  file://{}", esc(f)),
            (None, Some(text)) => format!("  {}", human_size(text.len() as u64)),
            (None, None) => String::new(),
        };
        format!("{}{from}{}", esc(&c.name), described(&c.description))
    });
    section(&mut out, "Contexts", contexts);
    let configs = a.configs.iter().map(|c| {
        let value = c
            .value
            .as_ref()
            .map(|v| format!("={}", esc(&v.display())))
            .unwrap_or_default();
        let required = if c.required { "  (required)" } else { "" };
        let key = esc(&c.key);
        format!("{key}{value}{required}{}", described(&c.description))
    });
    section(&mut out, "Configs", configs);
    let envs = a.envs.iter().map(|e| {
        let (k, v) = (esc(&e.key), esc(&e.value));
        format!("{k}={v}{}", described(&e.description))
    });
    section(&mut out, "Env", envs);
    let files = a
        .adds
        .iter()
        .map(|f| format!("{}{}", esc(&f.name), described(&f.description)));
    section(&mut out, "Files", files);
    let mounts = a.mounts.iter().map(|m| {
        let mode = if m.read_only { "ro" } else { "rw" };
        format!("{}  {mode}{}", esc(&m.target), described(&m.description))
    });
    section(&mut out, "Mounts", mounts);
    section(
        &mut out,
        "Capabilities",
        a.capabilities.iter().map(|c| esc(&c.value)),
    );
    let labels = a
        .labels
        .iter()
        .map(|(k, v)| format!("{}={}", esc(k), esc(&v.value)));
    section(&mut out, "Labels", labels);
    out
}

/// `  Title:` and one indented line per item; nothing when there are none.
fn section(out: &mut String, title: &str, items: impl Iterator<Item = String>) {
    let mut items = items.peekable();
    if items.peek().is_some() {
        line!(out, "  {title}:");
        for i in items {
            line!(out, "    {i}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent_file(text: &str) -> Agent {
        let file = otters_agentfile::diagnostic::SourceFile::new("Agentfile", text);
        let ast = otters_agentfile::syntax::parse(&file);
        otters_agentfile::ir::from_ast(&ast, &file, &std::collections::BTreeMap::new())
            .0
            .agent
    }

    #[test]
    fn an_agent_shows_what_it_is_and_gets_escaped() {
        let a = agent_file(
            "FROM scratch\nRUNTIME ghcr.io/x/rt:1\nNAME demo\nMODEL m\nCONFIG K=v \"the \u{1b}[2Jkey\"\nCAPABILITY net\nEXEC [\"run\"]\n",
        );
        let text = agent(&a);
        assert!(text.starts_with("Agent:\n  Name:         demo\n"), "{text}");
        assert!(text.contains("  Runtime:      ghcr.io/x/rt:1\n"), "{text}");
        assert!(!text.contains("From:"), "scratch is not shown: {text}");
        assert!(text.contains("  Capabilities:\n    net\n"), "{text}");
        assert!(text.contains("  Exec:         [\"run\"]\n"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(
            !text.contains("Bins:"),
            "an empty section is left out: {text}"
        );
    }

    #[test]
    fn a_config_that_is_no_agent_shows_none() {
        assert!(agent_of(&json!({"architecture": "amd64", "os": "linux"})).is_none());
        assert!(agent_of(&json!(null)).is_none());
    }
}
