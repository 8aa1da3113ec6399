//! The destination tags of a copy into a registry: a pinned image keeps the repository path and
//! tag its agent names (so `mirrors` in `config.toml` finds it there), but the agent chose them,
//! so a copy never moves a tag that already names other content unless the user says `--force`.
//!
//! Takes: the planned images (the named one first), the client, and `--force`. Returns: the plan
//! with each pinned image whose tag names other content at the destination sent by digest alone
//! (the tag left as it is, [`CopiedImage::kept_tag`]), or, with `force`, the tag moved and what
//! it named recorded ([`CopiedImage::replaces`]); the same for a tag two images of one copy would
//! both take. The image the user named as `DST` always gets its tag (the user chose it); what that
//! tag named before is recorded too, so a dry run says "would replace". Must never: ask a mirror
//! what a destination tag names (a stale mirror would hide the tag being moved), or send anything.

use super::{CopiedImage, CopyError, Target};
use otters_oci::registry::{RegistryClient, RegistryError};

/// A destination tag left as it was.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct KeptTag {
    /// The tag at the destination (`registry/repository:tag`).
    pub tag: String,
    /// What it names there (a digest), or why another image of this copy took it.
    pub holds: String,
}

/// What a destination tag names now.
enum At {
    Absent,
    /// A digest, or a description of content otters cannot read.
    Holds(String),
}

/// Applies the rule above to `images`, asking the destination registry itself for each tag.
pub(super) fn guard(
    client: &RegistryClient,
    images: &mut [(CopiedImage, Target)],
    force: bool,
) -> Result<(), CopyError> {
    // The tags this copy writes, with the digest each gets.
    let mut taken: Vec<(String, String)> = Vec::new();
    for (i, (image, target)) in images.iter_mut().enumerate() {
        let Target::Registry(to) = target else {
            continue;
        };
        if to.tag.is_none() {
            continue;
        }
        let name = to.name_tag();
        let digest = image.digest.to_string();
        let claimed = taken
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d.clone());
        let now = match claimed {
            Some(d) if d == digest => continue,
            // Another image of this copy takes the tag: never moved twice in one copy.
            Some(d) => {
                image.kept_tag = Some(KeptTag {
                    tag: name,
                    holds: format!("{d}, which this copy puts there"),
                });
                to.tag = None;
                image.destination = to.with_digest(&image.digest).familiar();
                continue;
            }
            None => at(client, to)?,
        };
        let holds = match now {
            At::Absent => None,
            At::Holds(d) if d == digest => None,
            At::Holds(d) => Some(d),
        };
        match holds {
            Some(d) if i > 0 && !force => {
                image.kept_tag = Some(KeptTag {
                    tag: name,
                    holds: d,
                });
                to.tag = None;
                image.destination = to.with_digest(&image.digest).familiar();
            }
            other => {
                image.replaces = other;
                taken.push((name, digest));
            }
        }
    }
    Ok(())
}

/// What `to`'s tag names at the destination registry itself.
fn at(client: &RegistryClient, to: &otters_oci::reference::Reference) -> Result<At, CopyError> {
    match client.subject_descriptor(to) {
        Ok(d) => Ok(At::Holds(d.digest.to_string())),
        Err(RegistryError::NotFound { .. }) => Ok(At::Absent),
        // The tag names something otters cannot read: other content, whatever it is.
        Err(RegistryError::BadDocument { .. }) => {
            Ok(At::Holds("a document otters cannot read".to_owned()))
        }
        Err(e) => Err(e.into()),
    }
}
