//! How an error report reads on the terminal: every text escaped (a registry's error body, an
//! image's content and a file name reach messages, and must not reach the terminal as escape
//! sequences), each cause shown once, and lines wrapped only at spaces outside backticks, so a
//! reference or a suggested command is never cut.
//!
//! Takes: a report (any `miette::Diagnostic`) and a function that finds the front end's `help:`
//! for a typed error in its chain. Returns: the rendered text. Must never: let text reach the
//! output unescaped, or change a message.
use otters_core::escape::escape;

/// What the front end adds to an error that has no `help:` of its own: looked up by the typed
/// error (a library error speaks of values; the front end names its flags).
pub type Hint<'a> = &'a dyn Fn(&(dyn std::error::Error + 'static)) -> Option<String>;

/// `report` as the terminal shows it: escaped, each cause once, with `hint`'s help where the
/// report has none. Wrapped as [`install_hook`] says, once it is installed.
pub fn render(report: &dyn miette::Diagnostic, hint: Hint<'_>) -> String {
    format!("{:?}", miette::Report::new(Clean::of(report, hint)))
}

/// Installs miette's report handler with otters' wrapping (`render::keep_words`): at spaces
/// outside backticks, never inside a word, at `width` columns (else the terminal's, else 80). To
/// be called before anything can make a report: miette gives a report the hook set when it is
/// made, and the default one if none is.
pub fn install_hook(width: Option<usize>) {
    let _ = miette::set_hook(Box::new(move |_| {
        use otters_agentfile::diagnostic::render;
        let opts = miette::MietteHandlerOpts::new()
            .word_separator(render::word_separator())
            .word_splitter(render::word_splitter())
            .break_words(false);
        Box::new(match width {
            Some(w) => opts.width(w).build(),
            None => opts.build(),
        })
    }));
}

/// A report with every text escaped (see [`otters_core::escape`]) and each cause once.
#[derive(Debug)]
struct Clean {
    message: String,
    help: Option<String>,
    code: Option<String>,
    severity: Option<miette::Severity>,
    cause: Option<Box<Clean>>,
}

impl Clean {
    fn of(d: &dyn miette::Diagnostic, hint: Hint<'_>) -> Clean {
        let text = |s: &dyn std::fmt::Display| escape(&s.to_string()).into_owned();
        let message = d.to_string();
        let mut said = message.to_lowercase();
        Clean {
            message: text(&message),
            help: d
                .help()
                .map(|h| text(&h))
                .or_else(|| d.source().and_then(hint).map(|h| escape(&h).into_owned())),
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

    impl miette::Diagnostic for E {}

    fn causes(c: &Clean) -> Vec<String> {
        let mut out = vec![c.message.clone()];
        let mut next = c.cause.as_deref();
        while let Some(c) = next {
            out.push(c.message.clone());
            next = c.cause.as_deref();
        }
        out
    }

    fn no_hint(_: &(dyn std::error::Error + 'static)) -> Option<String> {
        None
    }

    #[test]
    fn every_cause_is_shown_once_and_escaped() {
        // The middle error quotes the I/O error (as `files::reason` does: lower case, no
        // "(os error N)"); the innermost says something new.
        let inner = E("the disk said \u{1b}[31mno", None);
        let io = E("Permission denied (os error 13)", Some(Box::new(inner)));
        let read = E("cannot read x: permission denied", Some(Box::new(io)));
        let top = E(
            "cannot lock: cannot read x: permission denied",
            Some(Box::new(read)),
        );
        let c = Clean::of(&top, &no_hint);
        assert_eq!(
            causes(&c),
            [
                "cannot lock: cannot read x: permission denied",
                "the disk said \\u{1b}[31mno",
            ]
        );
        assert_eq!(causes(&Clean::of(&E("alone", None), &no_hint)), ["alone"]);
        let shown = render(&top, &no_hint);
        assert!(
            shown.contains("\\u{1b}[31mno") && !shown.contains('\u{1b}'),
            "{shown}"
        );
    }

    #[test]
    fn the_hint_is_asked_of_the_cause_and_escaped_and_an_own_help_wins() {
        let top = E("top", Some(Box::new(E("inner", None))));
        let hint = |e: &(dyn std::error::Error + 'static)| {
            (e.to_string() == "inner").then(|| "pass --x \u{1b}[2J".to_owned())
        };
        assert_eq!(
            Clean::of(&top, &hint).help.as_deref(),
            Some("pass --x \\u{1b}[2J")
        );
        let own = miette::MietteDiagnostic::new("own").with_help("mine");
        assert_eq!(Clean::of(&own, &hint).help.as_deref(), Some("mine"));
    }
}
