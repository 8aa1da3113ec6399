//! How the CLI reports errors: a library error kept as the report's source ([`fail`],
//! [`fail_in`]), rendered by `crate::view::report` (escaped, each cause once, wrapped
//! only at spaces outside backticks) with the flag that helps from [`hints`].
//!
//! Takes: library errors and reports. Returns: reports and their rendered text. Must never: let
//! a registry's or an image's text reach the terminal unescaped.
use crate::view::report;

mod hints;

/// How an error report reads on the terminal (see `crate::view::report`), with the
/// CLI's flag hints.
pub(crate) fn render(r: &miette::Report) -> String {
    report::render(r.as_ref(), &hints::hint)
}

/// The report handler's wrapping; `COLUMNS`, when set, is the width. Installed by `main` before
/// anything can make a report.
pub(super) fn error_hook() {
    let width = std::env::var("COLUMNS").ok();
    report::install_hook(width.and_then(|c| c.trim().parse().ok()).filter(|&w| w > 0));
}

/// A library error as a report that keeps it as its source, so the cause chain survives to the
/// renderer (`crate::view::report`), where `miette!("{e}")` would flatten it into a
/// string.
#[derive(Debug)]
pub(crate) struct Failure {
    message: String,
    help: Option<String>,
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

impl miette::Diagnostic for Failure {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
}

impl Failure {
    /// `e`'s text, `e` as the source.
    pub(crate) fn of(e: impl std::error::Error + Send + Sync + 'static) -> Failure {
        Failure {
            message: e.to_string(),
            help: None,
            source: Box::new(e),
        }
    }

    /// `context: e`, `e` as the source.
    /// `e` may also be an already boxed error (a signer's `Box<dyn Error>`), which is not itself
    /// an `Error` type.
    pub(crate) fn during(
        context: impl std::fmt::Display,
        e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Failure {
        let source = e.into();
        Failure {
            message: format!("{context}: {source}"),
            help: None,
            source,
        }
    }

    /// With `help`: what to do about it, where the library spoke of values (a flag, a command).
    pub(crate) fn help(mut self, help: impl Into<String>) -> Failure {
        self.help = Some(help.into());
        self
    }
}

/// The `help:` text for a library error a command prints as a plain `error:` line, not as a
/// report (`lint`): the flag that helps, from [`hints`] by the error's typed variant.
pub(crate) fn hint_of(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    hints::hint(e)
}

/// `otters fmt`'s `help:` for a file it could not write, when it has one (a read-only file:
/// `--diff`).
pub(crate) fn fmt_write_hint(e: &otters_core::rewrite::RewriteError) -> Option<String> {
    hints::fmt_write(e)
}

/// A report of a library error, keeping it as the source (see [`Failure`]).
pub(crate) fn fail(e: impl std::error::Error + Send + Sync + 'static) -> miette::Report {
    miette::Report::new(Failure::of(e))
}

/// `context: e` as a report, keeping `e` as the source (see [`Failure`]).
pub(crate) fn fail_in(
    context: impl std::fmt::Display,
    e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
) -> miette::Report {
    miette::Report::new(Failure::during(context, e))
}

/// A report of a library error with `help` (what to do, in the CLI's terms), keeping it as the
/// source.
pub(crate) fn fail_help(
    e: impl std::error::Error + Send + Sync + 'static,
    help: impl Into<String>,
) -> miette::Report {
    miette::Report::new(Failure::of(e).help(help))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `help:` line of a report as it is rendered.
    fn help(r: miette::Report) -> Option<String> {
        let shown = render(&r);
        let at = shown.find("help: ")?;
        Some(
            shown[at + 6..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    #[test]
    fn typed_library_errors_get_the_flag_that_helps() {
        use otters_oci::registry::RegistryError;
        use otters_run::exec::ExecCause;
        let platform = || RegistryError::Platform {
            reference: "r:1".into(),
            wanted: "windows/arm64".into(),
            available: "linux/amd64".into(),
        };
        assert_eq!(
            help(fail_in("cannot pull r:1", platform())).as_deref(),
            Some("pass --platform with one of them")
        );
        // Boxed, below another error.
        let boxed = otters_pipeline::transfer::PullError::Registry {
            reference: "r:1".into(),
            source: Box::new(platform()),
        };
        assert_eq!(
            help(fail(boxed)).as_deref(),
            Some("pass --platform with one of them")
        );
        let exec = |cause| otters_run::exec::ExecError::Exec {
            program: "docker".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
            cause,
        };
        assert!(help(fail(exec(ExecCause::NoContainerCli)))
            .is_some_and(|h| h.starts_with("install the docker CLI or pass --docker PATH")));
        assert!(help(fail(exec(ExecCause::NotForThisHost)))
            .is_some_and(|h| h.contains("try --platform or --executor docker")));
        assert_eq!(help(fail(exec(ExecCause::Other))), None);
        // A help the report has already wins.
        let own = miette::Report::new(Failure::of(platform()).help("mine"));
        assert_eq!(help(own).as_deref(), Some("mine"));
    }

    #[test]
    fn value_errors_get_their_flag_through_transparent_wrappers_and_not_from_a_config_file() {
        use otters_pipeline::trust::verify::WhoError;
        use otters_run::{marker::ClaimError, mounts::MountError, plan::PlanError};
        // `PrepareError::Claim` and `PlanError::Mount` forward `source()`: looked through.
        let claim =
            otters_run::prepare::PrepareError::Claim(ClaimError::Symlink("/tmp/link".into()));
        assert_eq!(
            help(fail(claim)).as_deref(),
            Some("pass --root with the directory itself")
        );
        let mount = PlanError::Mount(MountError::DeclaredMissing {
            targets: "/data".into(),
        });
        assert_eq!(
            help(fail_in("cannot plan", mount)).as_deref(),
            Some("supply them with -v HOST:TARGET, or pass --allow-missing-mounts")
        );
        // The flag fixes a flag's identity, not one from a config file's [verify].
        assert_eq!(
            help(fail(WhoError::NoIssuer)).as_deref(),
            Some("pass --certificate-oidc-issuer URL")
        );
        let in_config = WhoError::InConfig {
            path: "/home/u/.otters/config.toml".into(),
            source: Box::new(WhoError::NoIssuer),
        };
        assert_eq!(help(fail(in_config)), None);
    }
}
