//! A build for several platforms (`--platform linux/amd64,linux/arm64`): RUNTIME and BIN resolved
//! once per platform, one agent manifest per platform, and an OCI image index over them that the
//! tags name, the lock records and a push sends.
//!
//! Takes: the analysed model and the platforms (two or more, in the order given). Returns: the
//! phases' [`Stored`] result with the index as its descriptor. Must never: write a manifest,
//! index, tag or lock when resolution fails for any platform, or change what a build for one
//! platform writes (that path never comes here).

use super::{
    lower_plan, push_if_asked, read_ignore, save_archive, tag_all, tags_for, with_labels,
    write_image, write_lock, AgentfileText, ErrorKind, Failed, Progress, Stored,
};
use crate::build::inputs::FsInputs;
use crate::build::write::WriteError;
use crate::build::BuildOptions;
use crate::lower::Pins;
use crate::resolve::{self, Lockfile};
use otters_agentfile::diagnostic::Diagnostic;
use otters_agentfile::ir::Agentfile;
use otters_core::json::to_compact;
use otters_oci::spec::descriptor::{Descriptor, INDEX_V1};
use otters_oci::store::layout::index_json;
use otters_oci::{Platform, Store};

/// The platforms `--platform` names: one, or several separated by commas (each given once, in
/// the order given); this machine's when there is no flag.
pub(super) fn platforms(flag: Option<&str>) -> Result<Vec<Platform>, ErrorKind> {
    let Some(flag) = flag else {
        return Ok(vec![Platform::host()]);
    };
    if !flag.contains(',') {
        return Ok(vec![Platform::parse(flag)?]);
    }
    let mut out: Vec<Platform> = Vec::new();
    for part in flag.split(',') {
        let p = Platform::parse(part.trim())?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The phases of a multi-platform build (see the module docs). Warnings of resolution are added
/// to `shown`, each once.
pub(super) fn resolve_and_store_each(
    opts: &BuildOptions,
    store: &Store,
    progress: Progress<'_>,
    agentfile: &AgentfileText,
    analyzed: &Agentfile,
    platforms: &[Platform],
    shown: &mut Vec<Diagnostic>,
) -> Result<Stored, Failed> {
    if opts.supply_inputs {
        return Err(ErrorKind::SupplyMultiPlatform.into());
    }
    let resolutions = super::with_resolve_options(opts, store, agentfile, analyzed, |ropts| {
        resolve::resolve_each(analyzed, ropts, platforms)
    })?;
    let inputs = FsInputs::new(&opts.context).map_err(|source| ErrorKind::Context {
        path: opts.context.clone(),
        source,
    })?;
    let ignore = read_ignore(&inputs)?;
    let mut manifests = Vec::new();
    let mut tags = Vec::new();
    for (i, platform) in platforms.iter().enumerate() {
        let resolution = resolutions.as_ref().and_then(|rs| rs.get(i));
        let (model, pins, inherited_adds) = match resolution {
            Some(r) => {
                super::add_warnings(shown, &r.warnings);
                (&r.model, r.pins.clone(), r.inherited_adds.clone())
            }
            None => (analyzed, Pins::default(), Vec::new()),
        };
        let model = with_labels(model, &opts.labels);
        if tags.is_empty() {
            tags = tags_for(&opts.tags, model.agent.name_str())?;
        }
        let mut plan = lower_plan(opts, agentfile, &model, &pins, inherited_adds, &inputs)?;
        plan.annotations.extend(opts.ci_annotations.clone());
        plan.annotations.extend(opts.annotations.clone());
        let mut descriptor = write_image(opts, store, &plan, &ignore, progress, &agentfile.name)?;
        descriptor.platform = Some(platform.clone());
        manifests.push(descriptor);
    }
    let descriptor = write_index(store, &manifests, &opts.ci_annotations).map_err(|source| {
        ErrorKind::Write {
            store: store.root().to_owned(),
            source,
        }
    })?;
    tag_all(store, &descriptor, &tags)?;
    save_archive(opts, store, &descriptor, &tags)?;
    let locks: Option<Vec<Lockfile>> = resolutions
        .as_ref()
        .map(|rs| rs.iter().map(|r| r.lock.clone()).collect());
    let lock = write_lock(opts, locks.as_deref(), agentfile, &descriptor)?;
    let pushed = push_if_asked(opts, store, &descriptor, &tags, progress)?;
    Ok(Stored {
        descriptor,
        tags,
        lock,
        pushed,
        supply: None,
    })
}

/// The image index over `manifests` (each with its `platform`, in the order given), stored:
/// canonical JSON like the manifests, in the shape of the store's own `index.json`, with
/// `annotations` when there are any (registries show an index's, not its manifests').
pub(crate) fn write_index(
    store: &Store,
    manifests: &[Descriptor],
    annotations: &std::collections::BTreeMap<String, String>,
) -> Result<Descriptor, WriteError> {
    let mut doc = index_json(manifests);
    if !annotations.is_empty() {
        let mut notes = otters_core::json::Value::object();
        for (k, v) in annotations {
            notes.push(k.clone(), v.clone());
        }
        doc.push("annotations", notes);
    }
    let bytes = to_compact(&doc)?;
    Ok(store.put_manifest(&bytes, INDEX_V1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_of_the_flag() {
        let amd = Platform::new("linux", "amd64", None);
        let arm = Platform::new("linux", "arm64", None);
        assert_eq!(platforms(None).unwrap(), [Platform::host()]);
        assert_eq!(
            platforms(Some("linux/amd64")).unwrap(),
            std::slice::from_ref(&amd)
        );
        assert_eq!(
            platforms(Some("linux/arm64, linux/amd64,linux/arm64")).unwrap(),
            [arm, amd]
        );
        assert!(matches!(
            platforms(Some("linux/amd64,")),
            Err(ErrorKind::Platform(_))
        ));
    }

    #[test]
    fn the_index_names_each_manifest_with_its_platform() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut a = store
            .put_manifest(b"{\"a\":1}", otters_oci::spec::descriptor::MANIFEST_V1)
            .unwrap();
        a.platform = Some(Platform::new("linux", "amd64", None));
        let mut b = store
            .put_manifest(b"{\"b\":1}", otters_oci::spec::descriptor::MANIFEST_V1)
            .unwrap();
        b.platform = Some(Platform::new("linux", "arm64", None));
        let none = std::collections::BTreeMap::new();
        let d = write_index(&store, &[a.clone(), b.clone()], &none).unwrap();
        assert!(d.media_type.is_index());
        let text = String::from_utf8(store.read_blob(&d.digest).unwrap()).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"schemaVersion\":2,\"mediaType\":\"{INDEX_V1}\",\"manifests\":[{{\"mediaType\":\"{m}\",\"digest\":\"{}\",\"size\":{},\"platform\":{{\"architecture\":\"amd64\",\"os\":\"linux\"}}}},{{\"mediaType\":\"{m}\",\"digest\":\"{}\",\"size\":{},\"platform\":{{\"architecture\":\"arm64\",\"os\":\"linux\"}}}}]}}",
                a.digest, a.size, b.digest, b.size,
                m = otters_oci::spec::descriptor::MANIFEST_V1
            )
        );
        // The same manifests give the same index.
        assert_eq!(write_index(&store, &[a, b], &none).unwrap(), d);
    }
}
