//! How the CLI reports errors: a library error kept as the report's source ([`fail`],
//! [`fail_in`]), every text escaped and each cause shown once ([`Clean`]), wrapped only at spaces
//! outside backticks ([`error_hook`]).
//!
//! Takes: library errors and reports. Returns: reports and their rendered text. Must never: let
//! a registry's or an image's text reach the terminal unescaped.
use otters_core::escape::escape;

mod hints;

/// How an error report reads on the terminal: escaped, each cause once (see [`Clean`]), wrapped
/// only at spaces outside backticks, so a reference or a suggested command is never cut
/// ([`error_hook`]).
pub(crate) fn render(report: &miette::Report) -> String {
    format!("{:?}", miette::Report::new(Clean::of(report.as_ref())))
}

/// miette's report handler with otters' wrapping (`render::keep_words`): at spaces outside
/// backticks, never inside a word; `COLUMNS`, when set, is the width (else the terminal's, else
/// 80). Installed by [`main`] before anything can make a report (miette gives a report the hook
/// set when it is made, and the default one if none is).
pub(super) fn error_hook() {
    let _ = miette::set_hook(Box::new(|_| {
        use otters_agentfile::diagnostic::render;
        let mut opts = miette::MietteHandlerOpts::new()
            .word_separator(render::word_separator())
            .word_splitter(render::word_splitter())
            .break_words(false);
        if let Some(w) = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&w| w > 0)
        {
            opts = opts.width(w);
        }
        Box::new(opts.build())
    }));
}

/// An error report with every text escaped (see [`otters_core::escape`]): registry error
/// bodies, image contents and file names reach these messages, and must not reach the terminal
/// as escape sequences. Every error the CLI ends with is printed through it.
#[derive(Debug)]
struct Clean {
    message: String,
    help: Option<String>,
    code: Option<String>,
    severity: Option<miette::Severity>,
    cause: Option<Box<Clean>>,
}

impl Clean {
    fn of(d: &dyn miette::Diagnostic) -> Clean {
        let text = |s: &dyn std::fmt::Display| escape(&s.to_string()).into_owned();
        let message = d.to_string();
        let mut said = message.to_lowercase();
        Clean {
            message: text(&message),
            help: d
                .help()
                .map(|h| text(&h))
                .or_else(|| d.source().and_then(hints::hint)),
            code: d.code().map(|c| text(&c)),
            severity: d.severity(),
            cause: d.source().and_then(|e| Clean::chain(e, &mut said)),
        }
    }

    /// The causes below an error, each shown once: a cause whose text the messages above already
    /// hold (an error that quotes its source, as most here do) is skipped, its own causes not.
    fn chain(e: &dyn std::error::Error, said: &mut String) -> Option<Box<Clean>> {
        let message = e.to_string();
        if already_said(said, &message) {
            return e.source().and_then(|e| Clean::chain(e, said));
        }
        said.push_str(&message.to_lowercase());
        Some(Box::new(Clean {
            message: escape(&message).into_owned(),
            help: None,
            code: None,
            severity: None,
            cause: e.source().and_then(|e| Clean::chain(e, said)),
        }))
    }
}

/// True when `message` (case aside, and without an I/O error's `(os error N)`) is part of `said`.
fn already_said(said: &str, message: &str) -> bool {
    let core = message.split(" (os error").next().unwrap_or(message);
    said.contains(&core.trim().to_lowercase())
}

impl std::fmt::Display for Clean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Clean {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

impl miette::Diagnostic for Clean {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.code
            .as_ref()
            .map(|c| Box::new(c) as Box<dyn std::fmt::Display>)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn severity(&self) -> Option<miette::Severity> {
        self.severity
    }
}

/// A library error as a report that keeps it as its source, so the cause chain survives to the
/// renderer (see [`Clean::chain`]), where `miette!("{e}")` would flatten it into a string.
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

    /// An error with a message and an optional cause, as library errors are.
    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);

    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    fn causes(c: &Clean) -> Vec<String> {
        let mut out = vec![c.message.clone()];
        let mut next = c.cause.as_deref();
        while let Some(c) = next {
            out.push(c.message.clone());
            next = c.cause.as_deref();
        }
        out
    }

    #[test]
    fn every_cause_is_shown_once() {
        // The middle error quotes the I/O error (as `files::reason` does: lower case, no
        // "(os error N)"); the innermost says something new.
        let inner = E("the disk said \u{1b}[31mno", None);
        let io = E("Permission denied (os error 13)", Some(Box::new(inner)));
        let read = E("cannot read x: permission denied", Some(Box::new(io)));
        let report = fail_in("cannot lock", read);
        let c = Clean::of(report.as_ref());
        assert_eq!(
            causes(&c),
            [
                "cannot lock: cannot read x: permission denied",
                // Escaped for the terminal.
                "the disk said \\u{1b}[31mno",
            ]
        );
        assert_eq!(
            causes(&Clean::of(fail(E("alone", None)).as_ref())),
            ["alone"]
        );
    }

    #[test]
    fn typed_library_errors_get_the_flag_that_helps() {
        use otters_oci::registry::RegistryError;
        use otters_pipeline::run::exec::ExecCause;
        let platform = || RegistryError::Platform {
            reference: "r:1".into(),
            wanted: "windows/arm64".into(),
            available: "linux/amd64".into(),
        };
        let help = |r: miette::Report| Clean::of(r.as_ref()).help;
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
        let exec = |cause| otters_pipeline::run::exec::ExecError::Exec {
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
        use otters_pipeline::run::{marker::ClaimError, mounts::MountError, plan::PlanError};
        use otters_pipeline::trust::WhoError;
        let help = |r: miette::Report| Clean::of(r.as_ref()).help;
        // `PrepareError::Claim` and `PlanError::Mount` forward `source()`: looked through.
        let claim = otters_pipeline::run::prepare::PrepareError::Claim(ClaimError::Symlink(
            "/tmp/link".into(),
        ));
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
