//! What moved: a push's or pull's [`TransferReport`], a copy's [`CopyReport`], and the referrer
//! tree `discover` found.
use super::{esc, human_size, line};
use otters_oci::reference::Reference;
use otters_oci::referrers::{Node, Tree};
use otters_oci::registry::transfer::TransferReport;
use otters_oci::Descriptor;
use otters_pipeline::copy::CopyReport;
use serde_json::json;

/// The status lines of a push or pull (`verb`: `pushed`, `pulled`): what was transferred, and
/// from which hosts when a mirror took part.
pub fn summary(report: &TransferReport, verb: &str) -> String {
    let moved = report.uploaded.len() + report.downloaded.len();
    // Said only when a mirror took part: otherwise the reference names the host.
    let registry = Reference::parse(&report.reference).map(|r| r.registry);
    let from = if report.from.iter().any(|h| Ok(h) != registry.as_ref()) {
        format!(" from {}", report.from.join(", "))
    } else {
        String::new()
    };
    let mut out = String::new();
    line!(
        out,
        "{verb} {}{from}: {moved} blob(s) transferred ({}), {} already present, {} mounted",
        report.reference,
        human_size(report.bytes),
        report.skipped.len(),
        report.mounted.len()
    );
    if !report.referrers.is_empty() {
        line!(out, "{verb} {} referrer(s)", report.referrers.len());
    }
    out
}

/// A copy's data: per image its destination and digest (with `dry_run`: its role, source and
/// destination, an index's platforms, what happens to the destination tag, and each referrer that
/// would go along).
pub fn copied(report: &CopyReport) -> String {
    let mut out = String::new();
    for i in &report.images {
        let platforms = if i.platforms.is_empty() {
            String::new()
        } else {
            format!(" [{}]", i.platforms.join(", "))
        };
        let role = serde_json::to_value(&i.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let (source, destination) = (esc(&i.source), esc(&i.destination));
        if !report.dry_run {
            line!(out, "{destination} {}", i.digest);
            continue;
        }
        line!(out, "{role:<8} {source} -> {destination}{platforms}");
        if let Some(was) = &i.replaces {
            line!(
                out,
                "         would replace the tag, which names {}",
                esc(was)
            );
        }
        if let Some(k) = &i.kept_tag {
            line!(
                out,
                "         by digest: {} names {} there and is kept (--force moves it)",
                esc(&k.tag),
                esc(&k.holds)
            );
        }
        for r in &i.referrers {
            let what = r
                .kind
                .clone()
                .or_else(|| r.artifact_type.as_deref().map(esc))
                .unwrap_or_else(|| "no artifact type".to_owned());
            line!(
                out,
                "         referrer {} ({what}) of {}",
                r.digest,
                r.subject
            );
        }
    }
    out
}

/// A copy's status lines: how many images and referrers went where and the blobs moved (with
/// `counts`: the text form; the JSON report has them), and each destination tag replaced or kept.
pub fn copy_summary(report: &CopyReport, counts: bool) -> String {
    let verb = if report.dry_run {
        "would copy"
    } else {
        "copied"
    };
    let moved = if report.dry_run {
        String::new()
    } else {
        format!(
            ": {} blob(s) downloaded, {} uploaded, {} mounted, {} already present ({} bytes moved)",
            report.downloaded, report.uploaded, report.mounted, report.skipped, report.bytes
        )
    };
    let mut out = String::new();
    if counts {
        line!(
            out,
            "{verb} {} image(s) and {} referrer(s) to {}{moved}",
            report.images.len(),
            report.referrers,
            esc(&report.destination),
        );
    }
    if report.dry_run {
        // The dry run's data lines say it per image.
        return out;
    }
    for i in &report.images {
        if let Some(was) = &i.replaces {
            line!(
                out,
                "replaced tag {} (it named {})",
                esc(&i.destination),
                esc(was)
            );
        }
        if let Some(k) = &i.kept_tag {
            line!(
                out,
                "kept tag {} (it names {}): {} went by digest alone; pass --force to move the tag",
                esc(&k.tag),
                esc(&k.holds),
                esc(&i.reference)
            );
        }
    }
    out
}

/// `discover --format json`: the image and its referrer tree, each node with its kind
/// (signature, SBOM, …) when known; `truncated` and `requests` when the budget cut the walk.
pub fn referrers_json(reference: &str, root: &Descriptor, tree: &Tree) -> serde_json::Value {
    let mut v = json!({
        "reference": reference,
        "digest": root.digest,
        "mediaType": root.media_type,
        "referrers": json_nodes(&tree.referrers),
    });
    if tree.cut {
        v["truncated"] = json!(true);
        v["requests"] = json!(tree.requests);
    }
    v
}

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
            if let Some((_, k)) = label(d) {
                v["kind"] = json!(k);
            }
            v
        })
        .collect()
}

/// `discover`'s text: the image, then its referrers as a tree (artifact type, digest, kind).
pub fn referrers_text(reference: &str, root: &Descriptor, tree: &Tree) -> String {
    let mut out = String::new();
    line!(out, "{}", super::pinned(reference, &root.digest));
    tree_lines(&mut out, &tree.referrers, "");
    out
}

/// What a referrer is called in `discover`'s tree, and its kind: a supply-chain document by its
/// artifact type; a runnable export (whose artifact type is only its config's media type, or none
/// for an index) by what its annotations say.
fn label(d: &Descriptor) -> Option<(Option<String>, String)> {
    use otters_oci::spec::annotations::{EXPORT, EXPORT_PLATFORM};
    if let Some(k) = otters_supply::referrer::kind(d.artifact_type.as_deref(), &d.annotations) {
        return Some((d.artifact_type.clone(), k));
    }
    let what = d.annotations.get(EXPORT)?;
    let kind = match d.annotations.get(EXPORT_PLATFORM) {
        Some(p) => format!("{what} export for {p}"),
        None if d.media_type.is_index() => format!("{what} export, an index of platforms"),
        None => format!("{what} export"),
    };
    Some((Some(format!("{EXPORT}={what}")), kind))
}

fn tree_lines(out: &mut String, nodes: &[Node], prefix: &str) {
    for (i, n) in nodes.iter().enumerate() {
        let last = i + 1 == nodes.len();
        let d = &n.descriptor;
        let (at, kind) = match label(d) {
            Some((at, kind)) => (at, format!(" ({})", esc(&kind))),
            None => (d.artifact_type.clone(), String::new()),
        };
        let at = at.as_deref().unwrap_or("(no artifact type)");
        let branch = if last { "└──" } else { "├──" };
        line!(
            out,
            "{prefix}{branch} {} {}{kind}",
            esc(at),
            esc(d.digest.as_str())
        );
        let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
        tree_lines(out, &n.referrers, &deeper);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_oci::Digest;

    fn node(at: Option<&str>, n: u8, below: Vec<Node>) -> Node {
        let mut d = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            Digest::of(&[n]),
            1,
        );
        d.artifact_type = at.map(str::to_owned);
        Node {
            descriptor: d,
            referrers: below,
        }
    }

    fn copied(
        role: otters_pipeline::copy::closure::Role,
        destination: &str,
        n: u8,
    ) -> otters_pipeline::copy::CopiedImage {
        otters_pipeline::copy::CopiedImage {
            role,
            reference: format!("reg1/x{n}:1"),
            source: format!("reg1/x{n}:1@{}", Digest::of(&[n])),
            destination: destination.to_owned(),
            digest: Digest::of(&[n]),
            media_type: otters_oci::MediaType::OciManifest,
            platforms: Vec::new(),
            pinned_by: None,
            replaces: None,
            kept_tag: None,
            referrers: Vec::new(),
        }
    }

    #[test]
    fn a_copy_says_which_destination_tags_it_replaced_and_which_it_kept() {
        use otters_pipeline::copy::closure::Role;
        let old = Digest::of(b"old");
        let mut root = copied(Role::Image, "reg2/x1:1", 1);
        root.replaces = Some(old.to_string());
        root.referrers = vec![otters_pipeline::copy::ListedReferrer {
            digest: Digest::of(b"sig"),
            subject: Digest::of(&[1]),
            kind: Some("signature".into()),
            artifact_type: None,
        }];
        let mut pin = copied(Role::Runtime, &format!("reg2/x2@{}", Digest::of(&[2])), 2);
        pin.kept_tag = Some(otters_pipeline::copy::KeptTag {
            tag: "reg2/x2:1".into(),
            holds: old.to_string(),
        });
        let mut report = CopyReport {
            source: "reg1/x1:1".into(),
            destination: "reg2/x1:1".into(),
            dry_run: true,
            images: vec![root, pin],
            uploaded: 0,
            skipped: 0,
            mounted: 0,
            downloaded: 0,
            bytes: 0,
            referrers: 1,
        };
        let (d1, d2, sig) = (Digest::of(&[1]), Digest::of(&[2]), Digest::of(b"sig"));
        assert_eq!(
            super::copied(&report),
            format!(
                "image    reg1/x1:1@{d1} -> reg2/x1:1\n\
                 \x20        would replace the tag, which names {old}\n\
                 \x20        referrer {sig} (signature) of {d1}\n\
                 runtime  reg1/x2:1@{d2} -> reg2/x2@{d2}\n\
                 \x20        by digest: reg2/x2:1 names {old} there and is kept (--force moves it)\n"
            )
        );
        assert_eq!(
            copy_summary(&report, true),
            "would copy 2 image(s) and 1 referrer(s) to reg2/x1:1\n"
        );
        report.dry_run = false;
        assert_eq!(
            copy_summary(&report, false),
            format!(
                "replaced tag reg2/x1:1 (it named {old})\n\
                 kept tag reg2/x2:1 (it names {old}): reg1/x2:1 went by digest alone; pass --force \
                 to move the tag\n"
            )
        );
        assert_eq!(
            super::copied(&report),
            format!("reg2/x1:1 {d1}\nreg2/x2@{d2} {d2}\n")
        );
    }

    #[test]
    fn a_runnable_export_is_named_by_its_annotations() {
        use otters_oci::spec::annotations::{EXPORT, EXPORT_PLATFORM};
        use otters_run::export::RUNNABLE;
        let root = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            Digest::of(b"r"),
            1,
        );
        let mut image = node(Some("application/vnd.oci.image.config.v1+json"), 1, vec![]);
        image.descriptor.annotations = [
            (EXPORT.to_owned(), RUNNABLE.to_owned()),
            (EXPORT_PLATFORM.to_owned(), "linux/arm64".to_owned()),
        ]
        .into();
        let mut index = node(None, 2, vec![]);
        index.descriptor.media_type = otters_oci::MediaType::OciIndex;
        index.descriptor.annotations = [(EXPORT.to_owned(), RUNNABLE.to_owned())].into();
        let tree = Tree {
            referrers: vec![image, index],
            requests: 0,
            cut: false,
        };
        let text = referrers_text(&format!("r.example/a@{}", root.digest), &root, &tree);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("r.example/a@{}", root.digest));
        assert_eq!(
            lines[1],
            format!(
                "├── io.openotters.export=runnable {} (runnable export for linux/arm64)",
                Digest::of(&[1])
            )
        );
        assert_eq!(
            lines[2],
            format!(
                "└── io.openotters.export=runnable {} (runnable export, an index of platforms)",
                Digest::of(&[2])
            )
        );
        let v = referrers_json("r.example/a:1", &root, &tree);
        assert_eq!(v["referrers"][0]["kind"], "runnable export for linux/arm64");
    }

    #[test]
    fn a_tree_draws_branches_and_kinds() {
        let root = Descriptor::new(
            "application/vnd.oci.image.manifest.v1+json",
            Digest::of(b"r"),
            1,
        );
        let tree = Tree {
            referrers: vec![
                node(
                    Some("application/vnd.dev.sigstore.bundle.v0.3+json"),
                    1,
                    vec![node(None, 2, vec![])],
                ),
                node(Some("text/\u{1b}[2J"), 3, vec![]),
            ],
            requests: 3,
            cut: false,
        };
        let text = referrers_text("demo:1", &root, &tree);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("demo:1@{}", root.digest));
        assert!(
            lines[1].starts_with("├── application/vnd.dev.sigstore.bundle.v0.3+json sha256:"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("│   └── (no artifact type) sha256:"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("└── text/\\u{1b}[2J sha256:"),
            "{text}"
        );
        let v = referrers_json("demo:1", &root, &tree);
        assert_eq!(
            v["referrers"][0]["referrers"][0]["digest"],
            Digest::of(&[2]).to_string()
        );
        assert!(v.get("truncated").is_none());
        let cut = Tree { cut: true, ..tree };
        assert_eq!(referrers_json("demo:1", &root, &cut)["requests"], 3);
    }

    #[test]
    fn a_summary_names_mirrors_only_when_one_served() {
        let mut report = TransferReport::new(
            "127.0.0.1:5000/a:1".into(),
            Digest::of(b"m"),
            otters_oci::MediaType::parse(otters_oci::spec::media_type::MANIFEST_V1),
        );
        report.bytes = 2048;
        report.from = vec!["127.0.0.1:5000".into()];
        assert_eq!(
            summary(&report, "pulled"),
            "pulled 127.0.0.1:5000/a:1: 0 blob(s) transferred (2.0 KiB), 0 already present, 0 mounted\n"
        );
        report.from.insert(0, "mirror:5000".into());
        assert!(summary(&report, "pulled")
            .starts_with("pulled 127.0.0.1:5000/a:1 from mirror:5000, 127.0.0.1:5000: "));
    }
}
