//! What to do about a typed library error, in the CLI's terms: the library's messages speak of
//! values (the platform wanted, those available, why a program did not start), and the CLI's
//! error rendering (`super::Clean`) adds the flag or command that helps as a `help:` line.
//!
//! Takes: an error chain. Returns: a help text, or none. Must never: change a message.
use otters_oci::registry::RegistryError;

/// What to do about a typed library error anywhere in `e`'s chain, in the CLI's terms: the
/// library speaks of values (the platform wanted, those available), the CLI names its flags.
pub(super) fn hint(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use otters_pipeline::export::ExportError;
    use otters_pipeline::run::exec::{ExecCause, ExecError};
    use otters_pipeline::run::source::SourceError;
    use otters_pipeline::run::{materialise::MaterialiseError, prepare::PrepareError};
    /// `e` as a `T`, held directly or boxed (a boxed source is its own link of the chain).
    fn of<'a, T: std::error::Error + 'static>(
        e: &'a (dyn std::error::Error + 'static),
    ) -> Option<&'a T> {
        e.downcast_ref::<T>()
            .or_else(|| e.downcast_ref::<Box<T>>().map(|b| &**b))
    }
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
    let here = if let Some(RegistryError::Platform { .. }) = of(e) {
        Some("pass --platform with one of them".to_owned())
    } else if let Some(ExportError::NoPlatform { .. }) = of(e) {
        Some("pass --platform with one of those".to_owned())
    } else if let Some(SourceError::PinnedPlatform { wanted, .. }) = source {
        Some(format!(
            "rebuild the agent with `otters build --platform {wanted}`"
        ))
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
    } else {
        None
    };
    here.or_else(|| e.source().and_then(hint))
}
