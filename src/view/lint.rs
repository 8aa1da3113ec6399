//! `otters lint`'s output: each checked file's findings in the chosen format as it comes (human
//! on stderr; concise and github on stdout), the one-document formats (json, sarif, gitlab,
//! junit, checkstyle) at the end, and the summary line.
//!
//! Takes: each file and its findings, in turn. Returns: the text for standard output and standard
//! error. Must never: keep a streamed file's findings once its text is returned (memory holds one
//! file's findings, not every file's, unless the format is one document).
use otters_agentfile::diagnostic::codes::RULES;
use otters_agentfile::diagnostic::render::{self, ColorChoice, FileReport, Human};
use otters_agentfile::diagnostic::{Diagnostic, SourceFile};
use otters_pipeline::lint::Counts;

pub use otters_cli::lint::Format;

/// Text for standard output and for standard error.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Out {
    pub stdout: String,
    pub stderr: String,
}

/// The findings of one lint run, file by file.
pub struct Printer {
    format: Format,
    human: Human<'static>,
    counts: Counts,
    documents: Vec<FileReport>,
}

impl Printer {
    /// A printer for `format`; `colour` is the human format's.
    pub fn new(format: Format, colour: ColorChoice) -> Self {
        Printer {
            format,
            human: Human::new(RULES, colour),
            counts: Counts::default(),
            documents: Vec::new(),
        }
    }

    /// One file's findings: its text now, or (a one-document format) kept for [`Printer::finish`].
    pub fn file(&mut self, file: SourceFile, diags: Vec<Diagnostic>) -> Out {
        self.counts.add(&diags);
        let stdout = match self.format {
            Format::Human => {
                return Out {
                    stdout: String::new(),
                    stderr: self.human.file(&file, &diags),
                }
            }
            Format::Concise => render::concise(&[(file, diags)]),
            Format::Github => render::github(&[(file, diags)], RULES),
            _ => {
                self.documents.push((file, diags));
                String::new()
            }
        };
        Out {
            stdout,
            stderr: String::new(),
        }
    }

    /// The end: a one-document format's document, or the human format's closing text and (with
    /// `summary`) the summary line (`2 errors, 1 warning in 3 files`).
    pub fn finish(self, summary: bool) -> Out {
        let docs = &self.documents;
        let stdout = match self.format {
            Format::Human => {
                let mut stderr = self.human.finish();
                if summary {
                    super::line!(stderr, "{}", self.counts);
                }
                return Out {
                    stdout: String::new(),
                    stderr,
                };
            }
            Format::Json => render::json(docs),
            Format::Sarif => render::sarif(docs, RULES),
            Format::Gitlab => render::gitlab(docs),
            Format::Junit => render::junit(docs, RULES),
            Format::Checkstyle => render::checkstyle(docs),
            Format::Concise | Format::Github => String::new(),
        };
        Out {
            stdout,
            stderr: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_agentfile::diagnostic::{Code, Span};

    fn finding(_: &SourceFile) -> Diagnostic {
        Diagnostic::new(Code::UnusedArg, Span::new(0, 4), "unused")
    }

    #[test]
    fn streamed_formats_print_per_file_and_documents_at_the_end() {
        let file = SourceFile::new("Agentfile", "NAME x\n");
        let mut concise = Printer::new(Format::Concise, ColorChoice::Never);
        let out = concise.file(file.clone(), vec![finding(&file)]);
        assert!(out.stdout.starts_with("Agentfile:1:1: "), "{out:?}");
        assert_eq!(concise.finish(true), Out::default());

        let mut json = Printer::new(Format::Json, ColorChoice::Never);
        assert_eq!(
            json.file(file.clone(), vec![finding(&file)]),
            Out::default()
        );
        let out = json.finish(true);
        assert!(
            out.stdout.contains(&format!("\"{}\"", Code::UnusedArg)),
            "{out:?}"
        );

        let mut human = Printer::new(Format::Human, ColorChoice::Never);
        let out = human.file(file.clone(), vec![finding(&file)]);
        assert!(
            out.stdout.is_empty() && out.stderr.contains(&Code::UnusedArg.to_string()),
            "{out:?}"
        );
        let end = human.finish(true);
        assert!(end.stderr.ends_with(" in 1 file\n"), "{end:?}");
        let quiet = Printer::new(Format::Human, ColorChoice::Never).finish(false);
        assert!(!quiet.stderr.contains("file"), "{quiet:?}");
    }
}
