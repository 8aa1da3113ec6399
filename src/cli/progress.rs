//! Progress on stderr, shared by every command that moves blobs: the one renderer of the
//! library's event type ([`Event`]), [`Bars`] (bars on a terminal; with `--progress plain` the
//! lines of `crate::view::progress`), as the `--progress` modes ask.
use crate::view::progress::{self as view, Plain};
use otters_cli::flags::{ProgressMode, TransferFlags};
use otters_oci::progress::{Event, Step};
use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::time::Instant;

/// Progress bars per blob on a TTY, plain lines (`--progress plain`), or nothing; for a copy, a
/// status line per image and a fresh display for each, so its line is never drawn into the
/// previous image's bars; for a build, a bar per large input too.
pub(crate) struct Bars {
    multi: Option<indicatif::MultiProgress>,
    by_digest: HashMap<otters_oci::Digest, indicatif::ProgressBar>,
    plain: Option<Plain>,
    /// `--progress tty`: bars drawn even when stderr is not a terminal.
    forced: bool,
    /// A status line per image of a copy (not with `-q`).
    status: bool,
    /// `otters build` on a terminal: a bar per large input, the one under way.
    inputs: bool,
    input: Option<indicatif::ProgressBar>,
}

impl Bars {
    /// The display `--progress MODE` asks for push, pull and copy; `quiet` (`-q`) wins over
    /// every mode.
    pub(crate) fn for_mode(mode: ProgressMode, quiet: bool) -> Self {
        Self::new(mode, quiet, false)
    }

    /// `otters build`'s display: a bar per large input on a TTY, the per-blob bars of a
    /// `--push`, and with `--progress plain` one line per input written and per blob pushed.
    pub(crate) fn for_build(mode: ProgressMode, quiet: bool) -> Self {
        Self::new(mode, quiet, true)
    }

    fn new(mode: ProgressMode, quiet: bool, build: bool) -> Self {
        let quiet = quiet || mode == ProgressMode::Quiet;
        let tty = match mode {
            ProgressMode::Tty => !quiet,
            ProgressMode::Auto => !quiet && std::io::stderr().is_terminal(),
            ProgressMode::Plain | ProgressMode::Quiet => false,
        };
        let forced = mode == ProgressMode::Tty && !build;
        let plain = mode == ProgressMode::Plain && !quiet;
        Bars {
            multi: tty.then(|| Self::new_multi(forced)),
            by_digest: HashMap::new(),
            plain: plain.then(|| {
                if build {
                    Plain::build()
                } else {
                    Plain::transfer()
                }
            }),
            forced,
            status: !quiet && !build,
            inputs: build && tty,
            input: None,
        }
    }

    /// `--progress plain`: lines rather than bars.
    pub(crate) fn plain(&self) -> bool {
        self.plain.is_some()
    }

    /// Bars on `stderr`, drawn even when it is not a terminal when `forced`.
    fn new_multi(forced: bool) -> indicatif::MultiProgress {
        let multi = indicatif::MultiProgress::new();
        if forced {
            // indicatif hides bars on a stderr that is not a terminal; `tty` asks for them anyway.
            multi.set_draw_target(indicatif::ProgressDrawTarget::term_like(Box::new(
                console::Term::stderr(),
            )));
        }
        multi
    }

    /// A step starts: a copied image gets its status line and a fresh display.
    fn step_started(&mut self, step: &Step<'_>) {
        let Some(line) = view::step_line(step) else {
            return;
        };
        self.finish();
        if self.status {
            eprintln!("{line}");
        }
        if self.multi.is_some() {
            self.multi = Some(Self::new_multi(self.forced));
        }
        if let Some(p) = &mut self.plain {
            p.clear();
        }
    }

    fn input_started(&mut self, title: &str, total: u64) {
        if self.inputs {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:20!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            ) {
                bar.set_style(style);
            }
            bar.set_message(title.to_owned());
            self.input = Some(bar);
        }
    }

    pub(crate) fn event(&mut self, e: &Event<'_>) {
        if let Some(line) = self.plain.as_mut().and_then(|p| p.event(e, Instant::now())) {
            eprintln!("{line}");
        }
        match *e {
            Event::StepStarted(step) => return self.step_started(&step),
            Event::StepDone(_) => return self.finish(),
            Event::InputStarted { title, size } => return self.input_started(title, size),
            Event::InputAdvanced { n, .. } => {
                if let Some(b) = &self.input {
                    b.inc(n);
                }
            }
            Event::InputDone { .. } => {
                if let Some(b) = self.input.take() {
                    b.finish_and_clear();
                }
            }
            _ => {}
        }
        let Some(multi) = &self.multi else { return };
        match *e {
            Event::BlobStarted {
                digest,
                size,
                title,
            } => {
                let bar = multi.add(indicatif::ProgressBar::new(size));
                let style = indicatif::ProgressStyle::with_template(
                    "{prefix:>14} {msg:<24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_style(style);
                // A layer's title comes from the image: escaped before it reaches the terminal.
                let (prefix, message) = view::bar_labels(digest, title);
                bar.set_prefix(prefix);
                bar.set_message(message);
                self.by_digest.insert(digest.clone(), bar);
            }
            Event::BlobAdvanced { digest, n } => {
                if let Some(b) = self.by_digest.get(digest) {
                    b.inc(n);
                }
            }
            Event::BlobDone { digest, outcome } => {
                if let Some(b) = self.by_digest.remove(digest) {
                    b.finish_with_message(view::bar_word(outcome));
                }
            }
            _ => {}
        }
    }

    pub(crate) fn finish(&mut self) {
        for (_, b) in self.by_digest.drain() {
            b.abandon();
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}

/// The progress display push, pull and copy's flags ask for.
pub(crate) fn bars(flags: &TransferFlags) -> Bars {
    Bars::for_mode(flags.progress, flags.quiet())
}
