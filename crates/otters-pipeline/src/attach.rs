//! `otters attach`: files stored as the layers of a new OCI 1.1 referrer of an image, in the
//! local store and, for an image in a registry, pushed there too.
//!
//! Takes: a [`Target`] and an [`Attachment`] (checked when made). Returns: the referrer's
//! descriptor, or an [`AttachError`] that speaks of the values (the front end adds its flag
//! names). Must never: store a referrer whose artifact or layer media type is not a plain media
//! type, or print.
use crate::target::{Target, TargetError};
use otters_core::escape::escape;
use otters_oci::spec::descriptor::ANN_TITLE;
use otters_oci::{Descriptor, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("{}: write a media type, e.g. application/vnd.example.report+json", escape(.0))]
    ArtifactType(String),
    #[error("{}: write a media type, e.g. application/vnd.example.report+json", escape(.0))]
    LayerMediaType(String),
    #[error("{}: write KEY=VALUE", escape(.0))]
    Annotation(String),
    #[error(transparent)]
    Open(#[from] otters_core::files::ReadError),
    #[error("cannot store {}: {source}", escape(&.path.display().to_string()))]
    Store { path: PathBuf, source: StoreError },
    #[error("cannot store the referrer: {0}")]
    Referrer(#[source] StoreError),
    #[error(transparent)]
    Publish(#[from] TargetError),
}

/// What to attach: checked media types, the files (one layer each, named by title) and the
/// referrer manifest's annotations.
pub struct Attachment {
    artifact_type: String,
    layer_media_type: String,
    files: Vec<PathBuf>,
    annotations: BTreeMap<String, String>,
}

impl Attachment {
    /// Checks both media types and splits each `KEY=VALUE` annotation.
    pub fn new(
        artifact_type: &str,
        layer_media_type: &str,
        files: &[PathBuf],
        annotations: &[String],
    ) -> Result<Attachment, AttachError> {
        let plain = otters_oci::referrers::plain_media_type;
        if !plain(artifact_type) {
            return Err(AttachError::ArtifactType(artifact_type.to_owned()));
        }
        if !plain(layer_media_type) {
            return Err(AttachError::LayerMediaType(layer_media_type.to_owned()));
        }
        let annotations = annotations
            .iter()
            .map(|kv| {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| AttachError::Annotation(kv.clone()))?;
                Ok((k.to_owned(), v.to_owned()))
            })
            .collect::<Result<_, AttachError>>()?;
        Ok(Attachment {
            artifact_type: artifact_type.to_owned(),
            layer_media_type: layer_media_type.to_owned(),
            files: files.to_vec(),
            annotations,
        })
    }
}

/// The file's name, as its layer's title.
fn title(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Stores the files and the referrer manifest in the target's store, then publishes it (a
/// remote target's registry gets it too).
pub fn attach(target: &Target, a: &Attachment) -> Result<Descriptor, AttachError> {
    let store = target.store();
    let mut layers = Vec::new();
    for path in &a.files {
        let file = otters_core::files::open_named(path, "file to attach")?;
        let (digest, size) = store
            .put_blob_from_reader(file, &mut |_| {})
            .map_err(|source| AttachError::Store {
                path: path.clone(),
                source,
            })?;
        layers.push(
            Descriptor::new(a.layer_media_type.as_str(), digest, size)
                .with_annotation(ANN_TITLE, title(path)),
        );
    }
    let d = store
        .attach(
            target.descriptor(),
            &a.artifact_type,
            &layers,
            &a.annotations,
        )
        .map_err(AttachError::Referrer)?;
    target.publish(&d)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(at: &str, lmt: &str, annotations: &[&str]) -> Result<Attachment, AttachError> {
        let annotations: Vec<String> = annotations.iter().map(|s| (*s).to_owned()).collect();
        Attachment::new(at, lmt, &[], &annotations)
    }

    #[test]
    fn media_types_and_annotations_are_checked() {
        let ok = "application/vnd.example.report+json";
        let a = new(ok, "application/octet-stream", &["k=v=w", "e="]).unwrap();
        assert_eq!(a.annotations["k"], "v=w");
        assert_eq!(a.annotations["e"], "");
        assert!(matches!(
            new("not a type", ok, &[]),
            Err(AttachError::ArtifactType(_))
        ));
        assert!(matches!(
            new(ok, "x", &[]),
            Err(AttachError::LayerMediaType(_))
        ));
        let e = new(ok, ok, &["novalue"]).err().unwrap();
        assert_eq!(e.to_string(), "novalue: write KEY=VALUE");
        assert_eq!(title(Path::new("/tmp/report.json")), "report.json");
    }
}
