//! The status lines of `run`, `export`, `load` and `version`: what was done, said on stderr
//! (`version` on stdout), every name from an image or a user escaped.
//!
//! Takes: the values those commands hold. Returns: text, each line ending in a newline. Must
//! never: print.
use super::{esc, line};
use otters_oci::{Descriptor, Digest};

/// `run --dry-run` pulled the image to plan the run: say so, and how to undo it.
pub fn pulled_to_plan(reference: &str, tag: Option<&str>) -> String {
    match tag {
        Some(tag) => format!("note: {reference} was pulled into the local store to plan the run (`otters rm {tag}` removes the tag)\n"),
        None => format!("note: {reference} was pulled into the local store to plan the run, untagged (a digest reference names no tag)\n"),
    }
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

/// `load`: an image the archive names only by a bare tag, stored untagged.
pub fn loaded_untagged(d: &Descriptor, bare: &str, from: &str) -> String {
    format!(
        "{} is named only `{}` in {from} (a tag without a repository): stored untagged; name it with `otters tag {} NAME:TAG`\n",
        d.digest,
        otters_oci::validate::escape_text(bare, 80),
        d.digest.short()
    )
}

/// `otters version`: the version, and the platform it runs on as an agent platform.
pub fn version(version: &str, platform: &str) -> String {
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    format!("otters {version}\n os/arch:  {os}/{arch} (agent platform {platform})\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_read_as_sentences() {
        assert!(pulled_to_plan("a:1", Some("a:1")).ends_with("(`otters rm a:1` removes the tag)\n"));
        assert!(pulled_to_plan("a@sha256:x", None).contains("untagged"));
        assert!(run_would_stop(&["/a".into(), "/b".into()]).contains("missing: /a, /b; supply"));
        let d = Digest::of(b"x");
        insta::assert_snapshot!(exported("a\u{1b}:1", [("linux/amd64".to_owned(), &d, 3)]).replace(d.as_str(), "D"), @"exported a\\u{1b}:1 for linux/amd64: D (3 layers)");
        let desc = Descriptor::new(otters_oci::spec::media_type::MANIFEST_V1, d.clone(), 1);
        let text = loaded_untagged(&desc, "latest", "a.tar");
        assert!(
            text.starts_with(&format!("{d} is named only `latest` in a.tar")),
            "{text}"
        );
        let v = version("1.2.3", "linux/amd64");
        assert!(
            v.starts_with("otters 1.2.3\n os/arch:  ")
                && v.ends_with("(agent platform linux/amd64)\n"),
            "{v}"
        );
    }
}
