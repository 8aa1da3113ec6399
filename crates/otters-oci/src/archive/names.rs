//! The names an image entry of a layout's or archive's `index.json` carries: containerd's
//! annotation and the OCI ref name, read as one local name. Shared by the readers of layouts
//! (`local`) and of the referrers they hold (`referrers`); also at `archive::local`.

use crate::spec::descriptor::Descriptor;
use crate::store::refname::new_tag_name;

/// The annotation containerd (`ctr export`, nerdctl) writes with an image's full name.
pub const ANN_CONTAINERD_NAME: &str = "io.containerd.image.name";

/// The local name an `index.json` entry of a layout or archive gives its image: containerd's
/// full name (`io.containerd.image.name`) when present, else the ref name when it is a whole
/// reference (`meteo:1`, as `otters save` writes); a bare tag (`1.0`, as skopeo's
/// `oci-archive:FILE:1.0` writes) names no repository, so it gives none.
pub fn entry_name(d: &Descriptor) -> Option<String> {
    let whole = |n: &&str| (n.contains(':') || n.contains('/')) && new_tag_name(n).is_ok();
    d.annotations
        .get(ANN_CONTAINERD_NAME)
        .map(String::as_str)
        .filter(whole)
        .or_else(|| d.ref_name().filter(whole))
        .map(str::to_owned)
}
