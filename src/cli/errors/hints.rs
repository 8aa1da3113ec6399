//! What to do about a typed library error, in the CLI's terms: the library's messages speak of
//! values (the platform wanted, those available, why a program did not start), and the CLI's
//! error rendering (`crate::view::report`, through `super::render`) adds the flag or
//! command that helps as a `help:` line.
//!
//! Takes: an error chain. Returns: a help text, or none. Must never: change a message.
use otters_oci::registry::RegistryError;

/// What to do about a typed library error anywhere in `e`'s chain, in the CLI's terms: the
/// library speaks of values (the platform wanted, those available), the CLI names its flags.
pub(super) fn hint(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use otters_pipeline::trust::verify::{VerifyError, WhoError};
    use otters_run::exec::{ExecCause, ExecError};
    use otters_run::export::ExportError;
    use otters_run::marker::ClaimError;
    use otters_run::source::SourceError;
    use otters_run::{materialise::MaterialiseError, prepare::PrepareError};
    // Transparent wrappers are not links of the chain: look through them.
    let source = of::<SourceError>(e)
        .or(match of::<PrepareError>(e) {
            Some(PrepareError::Source(s)) => Some(s),
            _ => None,
        })
        .or(match of::<ExportError>(e) {
            Some(
                ExportError::Source(s) | ExportError::Materialise(MaterialiseError::Source(s)),
            ) => Some(s),
            _ => None,
        })
        .or(match of::<MaterialiseError>(e) {
            Some(MaterialiseError::Source(s)) => Some(s),
            _ => None,
        });
    let claim = of::<ClaimError>(e).or(match of::<PrepareError>(e) {
        Some(PrepareError::Claim(c)) => Some(c),
        _ => None,
    });
    let materialise = of::<MaterialiseError>(e).or(match of::<ExportError>(e) {
        Some(ExportError::Materialise(m)) => Some(m),
        _ => None,
    });
    let here = if let Some(MaterialiseError::Pinned { registry: r, .. }) = materialise {
        Some(format!("the agent pins it by digest, so any copy serves: if it was copied to another registry (`otters copy -r`), read it there with `[registry.\"{r}\"] mirrors = [\"NEW-HOST\"]` in $OTTERS_HOME/config.toml"))
    } else if let Some(RegistryError::Platform { .. }) = of(e) {
        Some("pass --platform with one of them".to_owned())
    } else if let Some(ExportError::NoPlatform { .. }) = of(e) {
        Some("pass --platform with one of those".to_owned())
    } else if let Some(SourceError::PinnedPlatform { wanted, .. }) = source {
        Some(format!(
            "rebuild the agent with `otters build --platform {wanted}`"
        ))
    } else if let Some(SourceError::NotLocal { .. }) = source {
        Some(
            "or let otters pull it: drop --offline (or, for `otters run`, --pull never)".to_owned(),
        )
    } else if let Some(ExecError::Exec { cause, .. }) = of(e) {
        match cause {
            ExecCause::NoContainerCli => Some(
                "install the docker CLI or pass --docker PATH (e.g. --docker podman)".to_owned(),
            ),
            ExecCause::NotForThisHost => Some(
                "the runtime may not be built for this host: try --platform or --executor docker"
                    .to_owned(),
            ),
            ExecCause::Other => None,
        }
    } else if let Some(v) = of::<VerifyError>(e) {
        match v {
            // Transparent: the chain does not hold the `WhoError` itself.
            VerifyError::Who(w) => return hint(w),
            VerifyError::NoSigner => Some(
                "pass --key PUB, or --certificate-identity ID --certificate-oidc-issuer URL --trusted-root FILE"
                    .to_owned(),
            ),
            VerifyError::NotInStore { .. } => {
                Some("or check its registry with --remote".to_owned())
            }
            VerifyError::PredicateType(_) => {
                Some("pass --type with a predicate type URI or one of those names".to_owned())
            }
            VerifyError::Signer(_) | VerifyError::Unverified(_) => None,
        }
    } else if let Some(WhoError::InConfig { .. }) = of(e) {
        // The identity comes from a config file's [verify]: the fix is there, not a flag.
        return None;
    } else {
        kube_hint(e).or_else(|| value_hint(e, claim))
    };
    here.or_else(|| e.source().and_then(hint))
}

/// `e` as a `T`, held directly or boxed (a boxed source is its own link of the chain).
fn of<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    e.downcast_ref::<T>()
        .or_else(|| e.downcast_ref::<Box<T>>().map(|b| &**b))
}

/// The flags that fix an `otters kube` error.
fn kube_hint(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use otters_run::kube::{agent::AgentKubeError, KubeError};
    let text = if let Some(otters_run::kube::kustomize::BaseError::NotOurs { .. }) = of(e) {
        "write the base into an empty directory or one otters wrote, or pass --force to write beside the other files"
    } else if let Some(AgentKubeError::ImageWithTree(_)) = of(e) {
        "drop --image to mount the tree beside the RUNTIME image, or drop --tree image to run that image"
    } else if let Some(AgentKubeError::ExportLookup { .. }) = of(e) {
        "pass --image REPO@sha256:… to name the image, or --offline to look only in the store"
    } else if let Some(AgentKubeError::NoExport { what: "tree", .. }) = of(e) {
        "or drop --tree image to run the runnable export"
    } else if let Some(AgentKubeError::NoExport { .. } | AgentKubeError::NoRegistry(_)) = of(e) {
        "or pass --image REPO@sha256:…"
    } else if let Some(AgentKubeError::NoExportForPlatform {
        reference,
        platform,
        what,
    }) = of(e)
    {
        let r = otters_core::escape::escape(reference);
        return Some(format!("if it was built for {platform}, run `otters export {r} --as {what} --platform {platform} --push`; else rebuild it for {platform} with `otters build --platform {platform}` and push it; or pass --image REPO@sha256:…"));
    } else if let Some(KubeError::BadQuantity { what, .. }) = of(e) {
        let example = if what.starts_with("cpu") {
            "500m"
        } else {
            "256Mi"
        };
        return Some(format!(
            "pass --{} QUANTITY, e.g. {example}",
            what.replace(' ', "-")
        ));
    } else if let Some(KubeError::RequestOverLimit { resource, .. }) = of(e) {
        return Some(format!(
            "raise --{resource}-limit or lower --{resource}-request"
        ));
    } else if let Some(KubeError::Missing { configs, mounts }) = of(e) {
        let each = configs.iter().map(|k| format!("--config {k}=VALUE"));
        let each = each.collect::<Vec<_>>().join(" ");
        let mut parts = Vec::new();
        if !configs.is_empty() {
            parts.push(format!(
                "pass {each}, or --config-from secret:NAME|configmap:NAME with their RUNTIME_* keys"
            ));
        }
        if !mounts.is_empty() {
            parts.push("map each mount with --mount TARGET=pvc:NAME|emptydir|hostpath:/PATH, or pass --allow-missing-mounts".to_owned());
        }
        return Some(parts.join("; "));
    } else if let Some(KubeError::BadName { .. }) = of(e) {
        "pass --name NAME"
    } else if let Some(KubeError::BadObjectName { what, .. }) = of(e) {
        use otters_run::kube::ObjectName as O;
        let flag = match what {
            O::Secret => "--secret NAME",
            O::ImagePullSecret => "--image-pull-secret NAME",
            O::VarLibPvc => "--var-lib-pvc NAME",
            O::ConfigFrom => "--config-from secret:NAME|configmap:NAME",
            O::MountPvc => "--mount TARGET=pvc:NAME",
        };
        return Some(format!("pass a DNS-1123 name: {flag}"));
    } else {
        return None;
    };
    Some(text.to_owned())
}

/// The flag that gives a value a library error speaks of (`claim`: the agent-tree error `e`
/// holds, seen through `PrepareError`'s transparent wrapper).
fn value_hint(
    e: &(dyn std::error::Error + 'static),
    claim: Option<&otters_run::marker::ClaimError>,
) -> Option<String> {
    use otters_oci::store::layout::StoreError;
    use otters_pipeline::build::{
        git_epoch::GitEpochError, results::EpochError, write::WriteError,
    };
    use otters_pipeline::copy::{closure::WalkError, CopyError};
    use otters_pipeline::lint::LintError;
    use otters_pipeline::trust::verify::WhoError;
    use otters_run::overrides::OverrideError;
    use otters_run::plan::PlanError;
    use otters_run::{
        marker::ClaimError, materialise::MaterialiseError, mounts::MountError,
        prepare::PrepareError,
    };
    use otters_supply::keys::KeyError;
    // `PlanError::Mount` and `PlanError::Override` are transparent: look through them.
    let mount = of::<MountError>(e).or(match of::<PlanError>(e) {
        Some(PlanError::Mount(m)) => Some(m),
        _ => None,
    });
    let config = of::<OverrideError>(e).or(match of::<PlanError>(e) {
        Some(PlanError::Override(o)) => Some(o),
        _ => None,
    });
    let git =
        matches!(of::<EpochError>(e), Some(EpochError::Git(_))) || of::<GitEpochError>(e).is_some();
    let text = if let Some(RegistryError::Unreachable { registry, .. }) = of(e) {
        if otters_oci::registry::is_on_this_machine(registry) {
            return None;
        }
        "or pass --insecure for a plain-HTTP registry that is not on this machine"
    } else if let Some(RegistryError::Tls { .. }) = of(e) {
        "or pass --insecure for a registry with a self-signed certificate or plain HTTP"
    } else if let Some(RegistryError::Refused {
        refusal: otters_oci::registry::UrlRefusal::PlainHttp(_),
        ..
    }) = of(e)
    {
        "or pass --insecure to allow plain HTTP to it"
    } else if let Some(StoreError::SeveralTags { .. }) = of(e) {
        "remove the tags one by one, or pass --force to remove the image with all its tags"
    } else if of::<otters_pipeline::trust::signing::NoToken>(e).is_some() {
        "or pass the token with --identity-token TOKEN"
    } else if git {
        "or pass the time as a number: --source-date-epoch SECONDS"
    } else if let Some(EpochError::Flag(_)) = of(e) {
        "--source-date-epoch takes SECONDS or `git`"
    } else if of::<otters_pipeline::build::ci::NoCi>(e).is_some() {
        "or pass --annotation KEY=VALUE instead of --annotations-from-ci"
    } else if let Some(WriteError::MissingBlob { .. }) = of(e) {
        "build again without --offline to fetch the parent image"
    } else if let Some(OverrideError::RequiredMissing(missing)) = config {
        let each: Vec<_> = missing
            .iter()
            .map(|m| format!("--config {}=VALUE", m.key))
            .collect();
        return Some(format!("pass {}", each.join(" ")));
    } else if let Some(MountError::DeclaredMissing { .. }) = mount {
        "supply them with -v HOST:TARGET, or pass --allow-missing-mounts"
    } else if of::<otters_run::egress::Unenforceable>(e).is_some() {
        "run it with --executor docker, or pass --egress unenforced to run it with this host's network"
    } else if let Some(PrepareError::BadName(_)) = of(e) {
        "pass --name NAME"
    } else if let Some(MaterialiseError::NoParent(_)) = of(e) {
        "pass --root with a directory below /"
    } else if let Some(ClaimError::NotATree(_)) = claim {
        "pass --root with a new or empty directory"
    } else if let Some(ClaimError::Symlink(_)) = claim {
        "pass --root with the directory itself"
    } else if let Some(ClaimError::Claimed { name, .. }) = claim {
        return Some(format!(
            "run this image under its own name (--name NAME or --root DIR), or, to hand the tree over on purpose, name it explicitly: --name {name}"
        ));
    } else if let Some(WhoError::NoIssuer) = of(e) {
        "pass --certificate-oidc-issuer URL"
    } else if let Some(WhoError::NoRoot) = of(e) {
        "pass --trusted-root FILE"
    } else if let Some(WhoError::Pattern(_)) = of(e) {
        "pass --certificate-identity-regexp one expression, or the exact identity with --certificate-identity"
    } else if let Some(LintError::StdinFilenameWithoutStdin) = of(e) {
        "--stdin-filename names standard input: pass `-` to read it"
    } else if let Some(LintError::FixStdin) = of(e) {
        "--fix rewrites files: name the file itself to fix it"
    } else if let Some(CopyError::Walk(WalkError::Foreign { registries: r, .. })) = of(e) {
        let each: Vec<_> = r.iter().map(|h| format!("--from-registry {h}")).collect();
        return Some(format!("to copy them too, pass {}", each.join(" ")));
    } else if let Some(KeyError::Exists { .. }) = of(e) {
        "or choose another --out prefix"
    } else {
        return None;
    };
    Some(text.to_owned())
}

/// What `otters fmt` adds to a file it could not write: a read-only file's change can be seen
/// without writing it. (`lint --fix` has no such flag, so this is not a [`hint`].)
pub(super) fn fmt_write(e: &otters_core::rewrite::RewriteError) -> Option<String> {
    use otters_core::rewrite::RewriteError;
    match e {
        RewriteError::ReadOnly { .. } => Some("or see the change with --diff".to_owned()),
        _ => None,
    }
}
