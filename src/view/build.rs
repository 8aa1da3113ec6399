//! `otters build`'s status lines on stderr: what was tagged, written, pinned, pushed and
//! attached, build arguments nobody used, and with `--progress plain` one line per layer.
//!
//! Takes: the [`BuildOutput`] and what the front end did with it. Returns: lines. Must never:
//! print.
use super::{human_size, line};
use otters_oci::Digest;
use otters_pipeline::build::results::Layer;
use otters_pipeline::build::BuildOutput;
use std::path::Path;

/// `tagged T`, `wrote DEST` (an `--output`), `wrote LOCK (N image(s) pinned)` when the lock
/// changed, `pushed REF@DIGEST`.
pub fn status(out: &BuildOutput, output: Option<&Path>) -> String {
    let mut s = String::new();
    for t in &out.tags {
        line!(s, "tagged {t}");
    }
    if let Some(dest) = output {
        line!(s, "wrote {}", super::path(dest));
    }
    if let Some(l) = out.lock.as_ref().filter(|l| l.changed) {
        line!(
            s,
            "wrote {} ({} image(s) pinned)",
            super::path(&l.path),
            l.images
        );
    }
    for r in &out.pushed {
        line!(s, "pushed {}@{}", r.reference, r.digest);
    }
    s
}

/// A warning per `--build-arg` the Agentfile declares no ARG for (`build`'s
/// `BuildOutput::unused_build_args`, or lint's `lint::unused_build_args`).
pub fn unused_build_args(names: &[String]) -> String {
    let mut s = String::new();
    for k in names {
        // The name is the user's own text, but it may come from a variable in a CI script: a
        // control character in it is shown escaped, never sent to the terminal.
        let k = otters_core::escape::escape(k);
        line!(
            s,
            "warning: --build-arg {k} is not used: the Agentfile declares no ARG {k}"
        );
    }
    s
}

/// `attached sbom DIGEST`: each referrer attached to the image.
pub fn attached(referrers: &[(&str, Digest)]) -> String {
    let mut s = String::new();
    for (what, d) in referrers {
        line!(s, "attached {what} {d}");
    }
    s
}

/// `layer TITLE DIGEST (SIZE)`: the built image's layers (`--progress plain`).
pub fn layers(layers: &[Layer]) -> String {
    let mut s = String::new();
    for l in layers {
        line!(s, "layer {} {} ({})", l.title, l.digest, human_size(l.size));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::diagnostic::SourceFile;
    use otters_oci::registry::transfer::TransferReport;
    use otters_oci::{Descriptor, MediaType};
    use otters_pipeline::build::LockWrite;

    #[test]
    fn status_lines_say_what_the_build_did() {
        let manifest = otters_oci::spec::media_type::MANIFEST_V1;
        let digest = Digest::of(b"m");
        let report = TransferReport::new(
            "127.0.0.1:5000/a:1".into(),
            digest.clone(),
            MediaType::parse(manifest),
        );
        let mut out = BuildOutput {
            descriptor: Descriptor::new(manifest, digest.clone(), 10),
            tags: vec!["a:1".into(), "a:latest".into()],
            file: SourceFile::new("Agentfile", ""),
            diagnostics: Vec::new(),
            lock: Some(LockWrite {
                path: "Agentfile.lock".into(),
                changed: true,
                images: 2,
            }),
            pushed: vec![report],
            unused_build_args: vec!["V".into()],
            supply: None,
        };
        let text = status(&out, Some(Path::new("out.tar")));
        let text = text.replace(&digest.to_string(), "DIGEST");
        insta::assert_snapshot!(text, @r"
        tagged a:1
        tagged a:latest
        wrote out.tar
        wrote Agentfile.lock (2 image(s) pinned)
        pushed 127.0.0.1:5000/a:1@DIGEST
        ");
        out.lock = out.lock.map(|l| LockWrite {
            changed: false,
            ..l
        });
        assert!(!status(&out, None).contains("wrote"));
        assert_eq!(
            unused_build_args(&out.unused_build_args),
            "warning: --build-arg V is not used: the Agentfile declares no ARG V\n"
        );
        let hostile = unused_build_args(&["\u{1b}]0;x\u{7}V".into()]);
        assert!(
            !hostile.contains(['\u{1b}', '\u{7}']),
            "a control character reached the terminal: {hostile:?}"
        );
        let layer = Layer {
            title: "agent".into(),
            digest: digest.clone(),
            size: 2048,
        };
        assert_eq!(
            layers(&[layer]),
            format!("layer agent {digest} (2.0 KiB)\n")
        );
        assert_eq!(
            attached(&[("sbom", digest.clone())]),
            format!("attached sbom {digest}\n")
        );
    }
}
