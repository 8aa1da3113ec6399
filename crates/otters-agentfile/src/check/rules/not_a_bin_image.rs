//! AF403 missing-bin-annotation, as far as it is known without the network: a RUNTIME or BIN
//! image that the caller's [`crate::check::ImageKinds`] (for `otters lint`: `Agentfile.lock` and
//! the local store) says has no bin name annotation. Resolution reports the same code from the
//! registry's answer at build and lock time, through [`missing_bin_annotation`].

use super::Ctx;
use crate::check::{BinImage, ImageRole};
use crate::diagnostic::{Code, Diagnostic, Span};

/// AF403 on `span`: `reference`, used as `role`, is not a bin image (spec §f.1). `seen` says where
/// that was learnt when it was not the registry (appended to the message).
pub fn missing_bin_annotation(
    span: impl Into<Option<Span>>,
    reference: &str,
    role: ImageRole,
    seen: Option<&str>,
) -> Diagnostic {
    let what = role.keyword();
    let seen = seen.map(|s| format!(" ({s})")).unwrap_or_default();
    Diagnostic::new(
        Code::MissingBinAnnotation,
        span,
        format!("image `{reference}` is not a bin: it has no io.openotters.bin.name (or vnd.openotters.bin.name) annotation, which a {what} image needs to say which file is its binary{seen}"),
    )
    .with_label("not a bin image")
    .with_help("use an image built as an openotters bin (`otters bin build`), or add the annotation when building it")
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let Some(images) = cx.opts.images.as_deref() else {
        return;
    };
    let a = &cx.model.agent;
    let mut refs: Vec<(ImageRole, &str, Option<Span>)> = Vec::new();
    if let Some(r) = a.runtime.as_ref().filter(|r| !r.value.is_empty()) {
        refs.push((ImageRole::Runtime, &r.value, r.span));
    }
    for b in &a.bins {
        refs.push((ImageRole::Bin, &b.image, b.image_span));
    }
    for (role, reference, span) in refs {
        if let BinImage::NotBin(seen) = images.bin_image(role, reference) {
            out.push(missing_bin_annotation(span, reference, role, Some(&seen)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{ImageKinds, Options};
    use std::sync::Arc;

    /// A table: `plain` images are not bins, `bin` images are, anything else is unknown.
    #[derive(Debug)]
    struct Table;

    impl ImageKinds for Table {
        fn bin_image(&self, _: ImageRole, reference: &str) -> BinImage {
            if reference.contains("plain") {
                BinImage::NotBin("seen in a table".to_owned())
            } else if reference.contains("bin") {
                BinImage::Bin
            } else {
                BinImage::Unknown
            }
        }
    }

    #[test]
    fn table() {
        let opts = Options {
            images: Some(Arc::new(Table)),
            ..Options::default()
        };
        for (body, want) in [
            ("RUNTIME r.io/plain:1", &[2][..]),
            ("RUNTIME r.io/bin:1", &[]),
            ("RUNTIME r.io/other:1", &[]),
            ("BIN jq r.io/plain:1", &[2]),
            ("BIN jq r.io/bin:1\nBIN sh r.io/plain:2", &[3]),
            ("ARG R=r.io/plain:1\nRUNTIME ${R}", &[3]),
        ] {
            let text = format!("FROM scratch\n{body}\n");
            let got = super::super::lines_of(Code::MissingBinAnnotation, &text, &opts);
            assert_eq!(got, want, "{text}");
        }
        // Without an answerer (the build, standard input), nothing is reported here.
        super::super::assert_table(Code::MissingBinAnnotation, &[("RUNTIME r.io/plain:1", &[])]);
    }

    #[test]
    fn the_message_says_where_it_was_seen() {
        let d = missing_bin_annotation(
            Span::point(0),
            "r.io/plain:1",
            ImageRole::Runtime,
            Some("Agentfile.lock"),
        );
        assert!(
            d.message.contains("a RUNTIME image needs") && d.message.ends_with("(Agentfile.lock)"),
            "{}",
            d.message
        );
    }
}
