//! Progress on stderr, shared by every command that moves blobs: the `--progress` modes, and
//! the renderers of the library's one event type ([`Event`]): [`Bars`] for push, pull and copy
//! (bars on a terminal, one plain line per finished blob for CI logs, a status line per copied
//! image), [`BuildBars`] for `build` (inputs written, blobs pushed); and the `TransferFlags` of
//! push, pull and copy.
use super::Format;
use otters_oci::progress::{Event, Outcome, Step};
use std::collections::HashMap;
use std::io::IsTerminal as _;

/// `--progress`: how progress shows on stderr (see the flag's help).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    Auto,
    Plain,
    Tty,
    Quiet,
}

/// Progress bars per blob on a TTY, plain lines (`--progress plain`), or nothing; for a copy, a
/// status line per image and a fresh display for each, so its line is never drawn into the
/// previous image's bars.
pub(crate) struct Bars {
    multi: Option<indicatif::MultiProgress>,
    by_digest: HashMap<otters_oci::Digest, indicatif::ProgressBar>,
    /// `--progress plain`: each started blob's size and start time.
    plain: Option<HashMap<otters_oci::Digest, (u64, std::time::Instant)>>,
    /// `--progress tty`: bars drawn even when stderr is not a terminal.
    forced: bool,
    /// A status line per image of a copy (not with `-q`).
    status: bool,
}

impl Bars {
    fn new(enabled: bool) -> Self {
        Bars {
            multi: enabled.then(indicatif::MultiProgress::new),
            by_digest: HashMap::new(),
            plain: None,
            forced: false,
            status: false,
        }
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
        let Step::Copy {
            n,
            total,
            source,
            destination,
        } = step
        else {
            return;
        };
        self.finish();
        if self.status {
            eprintln!(
                "[{n}/{total}] {} -> {}",
                super::common::esc(source),
                super::common::esc(destination)
            );
        }
        if self.multi.is_some() {
            self.multi = Some(Self::new_multi(self.forced));
        }
        if self.plain.is_some() {
            self.plain = Some(HashMap::new());
        }
    }

    /// One line per finished blob: `pushed|pulled DIGEST SIZE in Ts`, `exists DIGEST`,
    /// `mounted DIGEST` (digests are checked text; nothing here reaches the terminal unescaped).
    fn plain_event(&mut self, e: &Event<'_>) {
        let Some(started) = &mut self.plain else {
            return;
        };
        match e {
            Event::BlobStarted { digest, size, .. } => {
                started.insert((*digest).clone(), (*size, std::time::Instant::now()));
            }
            Event::BlobDone { digest, outcome } => {
                let (size, t) = started
                    .remove(*digest)
                    .unwrap_or((0, std::time::Instant::now()));
                let sized = |verb: &str| {
                    format!(
                        "{verb} {digest} {} in {:.1}s",
                        otters_pipeline::view::human_size(size),
                        t.elapsed().as_secs_f64()
                    )
                };
                let line = match outcome {
                    Outcome::Uploaded => sized("pushed"),
                    Outcome::Downloaded => sized("pulled"),
                    Outcome::Skipped => format!("exists {digest}"),
                    Outcome::Mounted => format!("mounted {digest}"),
                };
                eprintln!("{line}");
            }
            _ => {}
        }
    }

    pub(crate) fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::StepStarted(step) => return self.step_started(step),
            Event::StepDone(_) => return self.finish(),
            _ => {}
        }
        self.plain_event(e);
        let Some(multi) = &self.multi else { return };
        match e {
            Event::BlobStarted {
                digest,
                size,
                title,
            } => {
                let bar = multi.add(indicatif::ProgressBar::new(*size));
                let style = indicatif::ProgressStyle::with_template(
                    "{prefix:>14} {msg:<24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_style(style);
                bar.set_prefix(digest.hex().chars().take(12).collect::<String>());
                // A layer's title comes from the image: escaped before it reaches the terminal.
                let title = otters_core::escape::escape(title.unwrap_or(""));
                bar.set_message(title.chars().take(24).collect::<String>());
                self.by_digest.insert((*digest).clone(), bar);
            }
            Event::BlobAdvanced { digest, n } => {
                if let Some(b) = self.by_digest.get(*digest) {
                    b.inc(*n);
                }
            }
            Event::BlobDone { digest, outcome } => {
                if let Some(b) = self.by_digest.remove(*digest) {
                    let word = match outcome {
                        Outcome::Uploaded => "uploaded",
                        Outcome::Skipped => "already present",
                        Outcome::Mounted => "mounted",
                        Outcome::Downloaded => "downloaded",
                    };
                    b.finish_with_message(word);
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

impl Bars {
    /// The display `--progress MODE` asks for; `quiet` (`-q`) wins over every mode.
    pub(crate) fn for_mode(mode: ProgressMode, quiet: bool) -> Self {
        let quiet = quiet || mode == ProgressMode::Quiet;
        let tty = match mode {
            ProgressMode::Tty => !quiet,
            ProgressMode::Auto => !quiet && std::io::stderr().is_terminal(),
            ProgressMode::Plain | ProgressMode::Quiet => false,
        };
        let forced = mode == ProgressMode::Tty;
        Bars {
            multi: tty.then(|| Self::new_multi(forced)),
            by_digest: HashMap::new(),
            plain: (mode == ProgressMode::Plain && !quiet).then(HashMap::new),
            forced,
            status: !quiet,
        }
    }
}

/// The flags `push`, `pull` and `copy` share.
#[derive(Debug, clap::Args)]
pub struct TransferFlags {
    /// Allow plain HTTP and unverified TLS for a registry that is not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// No progress bars or status lines
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress output on stderr: `auto` (status lines, and bars on a terminal), `plain` (also one
    /// line per blob: pushed/pulled with size and time, exists, mounted; never a control sequence:
    /// for CI logs), `tty` (bars even when stderr is not a terminal), `quiet` (same as `-q`:
    /// nothing but errors)
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

impl TransferFlags {
    /// `-q`, or `--progress quiet`.
    pub(crate) fn quiet(&self) -> bool {
        self.quiet || self.progress == ProgressMode::Quiet
    }

    /// The progress display the flags ask for.
    pub(crate) fn bars(&self) -> Bars {
        Bars::for_mode(self.progress, self.quiet())
    }
}

/// `otters build`'s progress: a bar per large input on a TTY, the per-blob [`Bars`] of a
/// `--push`, and with `--progress plain` one line per input written and per blob pushed.
pub(crate) struct BuildBars(Option<indicatif::ProgressBar>, bool, Bars, Option<Plain>);

/// `--progress plain`: what is under way, to print one line when it ends.
#[derive(Default)]
struct Plain {
    input: Option<(String, u64, std::time::Instant)>,
    blobs: std::collections::HashMap<otters_oci::Digest, (u64, std::time::Instant)>,
}

impl BuildBars {
    /// Renders one event of a build: its large inputs, and with `--push` its blobs.
    pub(crate) fn event(&mut self, e: &Event<'_>) {
        match *e {
            Event::InputStarted { title, size } => self.input_started(title, size),
            Event::InputAdvanced { n, .. } => {
                if let Some(b) = &self.0 {
                    b.inc(n);
                }
            }
            Event::InputDone { .. } => self.input_done(),
            _ => self.transfer(e),
        }
    }

    fn input_started(&mut self, title: &str, total: u64) {
        if let Some(p) = &mut self.3 {
            p.input = Some((title.to_owned(), total, std::time::Instant::now()));
        }
        if self.1 {
            let bar = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:20!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            ) {
                bar.set_style(style);
            }
            bar.set_message(title.to_owned());
            self.0 = Some(bar);
        }
    }

    fn input_done(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
        if let Some((title, size, t)) = self.3.as_mut().and_then(|p| p.input.take()) {
            eprintln!(
                "wrote {title} ({}) in {:.1}s",
                otters_pipeline::view::human_size(size),
                t.elapsed().as_secs_f64()
            );
        }
    }

    /// A push's events: the shared bars (closed when the push ends), and with `--progress
    /// plain` a line per blob pushed.
    fn transfer(&mut self, event: &Event<'_>) {
        self.2.event(event);
        let Some(p) = &mut self.3 else { return };
        match event {
            Event::BlobStarted { digest, size, .. } => {
                p.blobs
                    .insert((*digest).clone(), (*size, std::time::Instant::now()));
            }
            Event::BlobDone { digest, outcome } => {
                if let Some((size, t)) = p.blobs.remove(*digest) {
                    eprintln!(
                        "push {digest}: {outcome:?} ({}) in {:.1}s",
                        otters_pipeline::view::human_size(size),
                        t.elapsed().as_secs_f64()
                    );
                }
            }
            _ => {}
        }
    }
}

impl BuildBars {
    /// The display `--progress MODE` asks for; `quiet` (`-q`) wins over every mode.
    pub(crate) fn for_mode(mode: ProgressMode, quiet: bool) -> Self {
        let tty = match mode {
            ProgressMode::Tty => !quiet,
            ProgressMode::Auto => !quiet && std::io::stderr().is_terminal(),
            ProgressMode::Plain | ProgressMode::Quiet => false,
        };
        let plain = (mode == ProgressMode::Plain && !quiet).then(Plain::default);
        BuildBars(None, tty, Bars::new(tty), plain)
    }

    /// `--progress plain`: lines rather than bars.
    pub(crate) fn plain(&self) -> bool {
        self.3.is_some()
    }
}
