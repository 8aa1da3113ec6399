//! The status lines of `run`, `export`, `load`, `login`, `lock`, `pull` and `version`: what was done, said on stderr
//! (`version` on stdout), every name from an image or a user escaped.
//!
//! Takes: the values those commands hold. Returns: text, each line ending in a newline. Must
//! never: print.
use super::{esc, line};
use otters_oci::registry::auth::Stored;
use otters_oci::registry::mirror::MirrorFailure;
use otters_oci::{Descriptor, Digest};
use std::path::Path;

/// `run --dry-run`: what fetching the image to plan the run did to the store (planning needs
/// its config and agent.yaml, so a dry run pulls like a run, and "do nothing" suggests
/// otherwise): pulled, or only tagged when the store already held it, and a tag that moved;
/// nothing when the store had it.
pub fn pulled_to_plan(reference: &str, fetched: &otters_run::prepare::Fetched) -> String {
    let reference = esc(reference);
    let digest = &fetched.digest;
    let rm = |tag: &str| format!("`otters rm {tag}` removes the tag");
    let said = match (fetched.pulled, fetched.tag.as_deref().map(esc), &fetched.previous) {
        (_, Some(tag), Some(before)) => {
            let how = if fetched.pulled { "was pulled into the local store" } else { "names an image the local store already held" };
            format!("{reference} {how} to plan the run: the local tag {tag} moved from {before} to {digest}")
        }
        (true, Some(tag), None) => format!("{reference} was pulled into the local store to plan the run ({})", rm(&tag)),
        (true, None, _) => format!("{reference} was pulled into the local store to plan the run, untagged (a digest reference names no tag)"),
        (false, Some(tag), None) => format!("the local store already held {reference} ({digest}) under another name; it is now tagged {tag} too ({})", rm(&tag)),
        (false, None, _) => return String::new(),
    };
    format!("note: {said}\n")
}

/// `sign`: what was signed (`reference` resolved to `digest`) and where the signature went: the
/// store and the registry, or the store only and why (with what to do to share it).
pub fn signed(
    reference: &str,
    digest: &Digest,
    shared: &otters_pipeline::target::Shared,
) -> String {
    use otters_pipeline::target::{Shared, StoreOnly};
    let image = super::pinned(reference, digest);
    let push = format!(
        "`otters push {}` pushes the image with its signatures",
        esc(reference)
    );
    match shared {
        Shared::Registry(there) => format!(
            "signed {image}: the signature is in the local store and in {}\n",
            esc(there)
        ),
        Shared::StoreOnly(why) => {
            let why = match why {
                StoreOnly::NoRegistry => " (the reference names no registry)".to_owned(),
                StoreOnly::Asked => format!(" (--local); {push}"),
                StoreOnly::NotInRegistry(registry, repository) => format!(
                    " ({} holds no such image in {} yet); {push}",
                    esc(registry),
                    esc(repository)
                ),
                StoreOnly::Failed(registry, e) => format!(
                    "\nwarning: it was not pushed to {}: {}; {push}, or sign with --remote",
                    esc(registry),
                    esc(e)
                ),
            };
            format!("signed {image}: the signature is in the local store only{why}\n")
        }
    }
}

/// `verify`: which copy of the image was checked (its digest) with which signatures, and, when
/// the store answered for a registry tag, that the tag may name another image there now.
pub fn verified_copy(
    reference: &str,
    digest: &Digest,
    checked: &otters_pipeline::trust::verify::Checked,
) -> String {
    use otters_pipeline::trust::verify::Checked;
    let image = super::pinned(reference, digest);
    // A digest reference names the same image everywhere; a tag may have moved.
    let moved = if reference.contains('@') {
        String::new()
    } else {
        format!(
            "{} may name another image there now: pass --remote to verify that one",
            esc(reference)
        )
    };
    let line = match checked {
        Checked::Store { registry: None } => format!("checked the local store's copy, {image}"),
        Checked::Store { registry: Some(r) } if moved.is_empty() => format!(
            "checked the local store's copy, {image}, with the store's signatures; pass --remote to read those {} holds",
            esc(r)
        ),
        Checked::Store { registry: Some(r) } => format!(
            "checked the local store's copy, {image}; {} was not asked, and {moved}",
            esc(r)
        ),
        Checked::StoreInRegistry { registry } => format!(
            "checked the local store's copy, {image}, with the signatures {} holds for that digest{}",
            esc(registry),
            if moved.is_empty() { String::new() } else { format!("; {moved}") }
        ),
        Checked::Registry { registry } => {
            format!("checked the copy in {}, {image}", esc(registry))
        }
    };
    format!("note: {line}\n")
}

/// `run --dry-run` with declared mounts missing: a run would stop.
pub fn run_would_stop(missing: &[String]) -> String {
    format!(
        "warning: a run would stop here: declared mount(s) missing: {}; supply them with -v HOST:TARGET or pass --allow-missing-mounts\n",
        missing.join(", ")
    )
}

/// `exported REF for PLATFORM: DIGEST (N layers)`, one line per exported image.
pub fn exported<'a>(
    reference: &str,
    images: impl IntoIterator<Item = (String, &'a Digest, usize)>,
) -> String {
    let mut s = String::new();
    for (platform, digest, layers) in images {
        line!(
            s,
            "exported {} for {platform}: {digest} ({layers} layers)",
            esc(reference)
        );
    }
    s
}

/// `load`: what it did, as (stderr, stdout): each tag it moved, the referrers it left out, a
/// word on each image named only by a bare tag; on stdout each image's name and digest (the
/// digest alone for an untagged one).
pub fn loaded(loaded: &otters_pipeline::archive::Loaded, from: &str) -> (String, String) {
    use std::fmt::Write as _;
    let (mut said, mut out) = (String::new(), String::new());
    for m in &loaded.moved {
        let _ = writeln!(said, "moved tag {} from {} to {}", m.name, m.from, m.to);
    }
    if loaded.orphans > 0 {
        said.push_str(&orphan_referrers(loaded.orphans, from));
    }
    for (name, d) in &loaded.images {
        if !name.is_empty() {
            let _ = writeln!(out, "{name} {}", d.digest);
            continue;
        }
        // A `repo@sha256:…` name is stored untagged by design; a bare tag is worth a word.
        if let Some(bare) = d.ref_name().filter(|n| !n.contains('@')) {
            said.push_str(&loaded_untagged(d, bare, from));
        }
        let _ = writeln!(out, "{}", d.digest);
    }
    (said, out)
}

/// `load`: an image the archive names only by a bare tag, stored untagged.
pub fn loaded_untagged(d: &Descriptor, bare: &str, from: &str) -> String {
    format!(
        "{} is named only `{}` in {from} (a tag without a repository): stored untagged; name it with `otters tag {} NAME:TAG`\n",
        d.digest,
        otters_oci::validate::escape_text(bare, 80),
        d.digest.short()
    )
}

/// `load`: referrers the archive carries for images it does not hold, left out.
pub fn orphan_referrers(count: usize, from: &str) -> String {
    format!(
        "left out {count} referrer(s) in {from} whose subject is not in it: a signature, SBOM or export is loaded only with the image it refers to (save them together, or pull the image with `otters pull --referrers`)\n"
    )
}

/// `otters version`: the version, and the platform it runs on as an agent platform.
pub fn version(version: &str, platform: &str) -> String {
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    format!("otters {version}\n os/arch:  {os}/{arch} (agent platform {platform})\n")
}

/// `version --format json`: the version, this machine's OS and architecture, the agent platform
/// and the Cargo features the binary was built with, on one line.
pub fn version_json(version: &str, platform: &str, features: &[&str]) -> String {
    use otters_core::json::Value;
    let v = Value::object()
        .with("version", version)
        .with("os", std::env::consts::OS)
        .with("arch", std::env::consts::ARCH)
        .with("platform", platform)
        .with(
            "features",
            Value::Array(features.iter().map(|f| Value::from(*f)).collect()),
        );
    String::from_utf8_lossy(&otters_core::json::to_compact(&v).unwrap_or_default()).into_owned()
}

/// `login`: where the credentials for `registry` went.
pub fn logged_in(registry: &str, stored: &Stored) -> String {
    match stored {
        Stored::File(path) => format!(
            "login succeeded: credentials for {registry} stored in {}\n",
            super::path(path)
        ),
        Stored::Helper { helper, config } => format!(
            "login succeeded: credentials for {registry} stored by docker-credential-{helper} (the credential store {} names)\n",
            super::path(config)
        ),
    }
}

/// `logout`: whether credentials for `registry` were removed from the `config.json` in `dir`.
pub fn logged_out(registry: &str, removed: bool, dir: &Path) -> String {
    if removed {
        format!("removed credentials for {registry}\n")
    } else {
        let config = dir.join("config.json");
        format!(
            "no stored credentials for {registry} in {}\n",
            super::path(&config)
        )
    }
}

/// `lock`: the lockfile written (or left as it was) and how many images it pins.
pub fn locked(changed: bool, path: &Path, images: usize) -> String {
    let verb = if changed { "wrote" } else { "unchanged:" };
    format!("{verb} {} ({images} image(s) pinned)\n", super::path(path))
}

/// `pull`: a warning per mirror that was skipped, and why.
pub fn mirrors_skipped(failures: &[MirrorFailure]) -> String {
    let mut s = String::new();
    for f in failures {
        let reason = esc(&f.reason);
        line!(
            s,
            "warning: mirror {} of {} was skipped: {reason}",
            f.mirror,
            f.registry
        );
    }
    s
}

/// `pull oci:DIR`: the tag the image got, or how to name it.
pub fn pulled_local(tag: Option<&str>, digest: &Digest) -> String {
    match tag {
        Some(n) => format!("tagged {n}\n"),
        None => format!(
            "stored untagged; name it with `otters tag {} NAME:TAG` (or pull with -t)\n",
            digest.short()
        ),
    }
}

/// One refusal of a confined run's egress proxy: which agent, which destination, and why.
pub fn egress_refused(agent: &str, e: &otters_run::egress::proxy::Event) -> String {
    use otters_run::egress::proxy::Event;
    let agent = otters_core::escape::escape(agent);
    match e {
        Event::NotDeclared { host, port } => {
            let host = otters_core::escape::escape(host);
            format!("otters: egress: agent {agent}: refused {host}:{port}: not declared by EGRESS")
        }
        Event::PrivateAddress { host, addr } => {
            let host = otters_core::escape::escape(host);
            format!("otters: egress: agent {agent}: refused {host}: it resolves to {addr}, an internal address (declare the address itself to allow it)")
        }
        Event::BadRequest(why) => {
            format!("otters: egress: agent {agent}: refused a request: {why}")
        }
    }
}

/// The exit code of a supervised container run: its own, or 128 + the signal that ended it.
pub fn exit_code(status: std::process::ExitStatus) -> std::process::ExitCode {
    use std::os::unix::process::ExitStatusExt as _;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_read_as_sentences() {
        use otters_pipeline::target::{Shared, StoreOnly};
        use otters_pipeline::trust::verify::Checked;
        use otters_run::prepare::Fetched;
        let (old, new) = (Digest::of(b"old"), Digest::of(b"new"));
        let fetched = |pulled, tag: Option<&str>, previous: Option<&Digest>| Fetched {
            digest: new.clone(),
            pulled,
            tag: tag.map(str::to_owned),
            previous: previous.cloned(),
        };
        let plan = |f: Fetched| pulled_to_plan("a:1", &f);
        assert!(
            plan(fetched(true, Some("a:1"), None)).ends_with("(`otters rm a:1` removes the tag)\n")
        );
        assert!(plan(fetched(true, None, None)).contains("untagged"));
        // Nothing pulled: the store held it under another name, or as it is.
        let held = plan(fetched(false, Some("a:1"), None));
        assert!(
            held.starts_with("note: the local store already held a:1") && !held.contains("pulled"),
            "{held}"
        );
        assert_eq!(plan(fetched(false, None, None)), "");
        let moved = plan(fetched(true, Some("a:1"), Some(&old)));
        assert!(
            moved.contains(&format!("moved from {old} to {new}")),
            "{moved}"
        );
        assert!(run_would_stop(&["/a".into(), "/b".into()]).contains("missing: /a, /b; supply"));
        let d = Digest::of(b"x");
        insta::assert_snapshot!(exported("a\u{1b}:1", [("linux/amd64".to_owned(), &d, 3)]).replace(d.as_str(), "D"), @"exported a\\u{1b}:1 for linux/amd64: D (3 layers)");
        let desc = Descriptor::new(otters_oci::spec::media_type::MANIFEST_V1, d.clone(), 1);
        let text = loaded_untagged(&desc, "latest", "a.tar");
        assert!(
            text.starts_with(&format!("{d} is named only `latest` in a.tar")),
            "{text}"
        );
        // A path is anybody's directory name: shown escaped.
        let hostile = std::path::Path::new("ctx\u{1b}]0;x\u{7}/Agentfile.lock");
        for text in [
            locked(true, hostile, 1),
            logged_out("r.example", false, hostile),
            logged_in("r.example", &Stored::File(hostile.to_path_buf())),
        ] {
            assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
            assert!(text.contains("ctx\\u{1b}"), "{text:?}");
        }
        // Where a signature went, and which copy `verify` checked: each says the registry.
        let reg = || "r.example".to_owned();
        let signed_to = |s: Shared| signed("r.example/a:1", &d, &s);
        assert!(signed_to(Shared::Registry(format!("r.example/a@{d}")))
            .ends_with(&format!("in the local store and in r.example/a@{d}\n")));
        let failed = signed_to(Shared::StoreOnly(StoreOnly::Failed(
            reg(),
            "refused".into(),
        )));
        assert!(failed.contains("local store only\nwarning: it was not pushed to r.example: refused; `otters push r.example/a:1`"), "{failed}");
        let tag = verified_copy(
            "r.example/a:1",
            &d,
            &Checked::Store {
                registry: Some(reg()),
            },
        );
        assert!(tag.contains("r.example was not asked, and r.example/a:1 may name another image there now: pass --remote"), "{tag}");
        let pinned = format!("r.example/a@{d}");
        let by_digest = verified_copy(&pinned, &d, &Checked::StoreInRegistry { registry: reg() });
        assert_eq!(by_digest, format!("note: checked the local store's copy, {pinned}, with the signatures r.example holds for that digest\n"));
        let v = version("1.2.3", "linux/amd64");
        assert!(
            v.starts_with("otters 1.2.3\n os/arch:  ")
                && v.ends_with("(agent platform linux/amd64)\n"),
            "{v}"
        );
    }
}
