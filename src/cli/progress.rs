//! Progress on stderr, shared by every command that moves blobs: the `--progress` modes, and
//! the per-blob display (bars on a terminal, one plain line per finished blob for CI logs), the
//! `TransferFlags` of push and pull, and `build`'s display (inputs written, blobs pushed).
use super::Format;
use otters_oci::registry::transfer::{Event, Outcome};
use otters_pipeline::build::write::Progress;
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

/// Progress bars per blob on a TTY, plain lines (`--progress plain`), or nothing.
pub(crate) struct Bars {
    multi: Option<indicatif::MultiProgress>,
    by_digest: HashMap<otters_oci::Digest, indicatif::ProgressBar>,
    /// `--progress plain`: each started blob's size and start time.
    plain: Option<HashMap<otters_oci::Digest, (u64, std::time::Instant)>>,
}

impl Bars {
    pub(crate) fn new(enabled: bool) -> Self {
        Bars {
            multi: enabled.then(indicatif::MultiProgress::new),
            by_digest: HashMap::new(),
            plain: None,
        }
    }

    /// One line per finished blob: `pushed|pulled DIGEST SIZE in Ts`, `exists DIGEST`,
    /// `mounted DIGEST` (digests are checked text; nothing here reaches the terminal unescaped).
    fn plain_event(&mut self, e: &Event<'_>) {
        let Some(started) = &mut self.plain else {
            return;
        };
        match e {
            Event::Start { digest, size, .. } => {
                started.insert((*digest).clone(), (*size, std::time::Instant::now()));
            }
            Event::Done { digest, outcome } => {
                let (size, t) = started
                    .remove(*digest)
                    .unwrap_or((0, std::time::Instant::now()));
                let sized = |verb: &str| {
                    format!(
                        "{verb} {digest} {} in {:.1}s",
                        super::common::human_size(size),
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
            Event::Bytes { .. } => {}
        }
    }

    pub(crate) fn event(&mut self, e: &Event<'_>) {
        self.plain_event(e);
        let Some(multi) = &self.multi else { return };
        match e {
            Event::Start {
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
            Event::Bytes { digest, n } => {
                if let Some(b) = self.by_digest.get(*digest) {
                    b.inc(*n);
                }
            }
            Event::Done { digest, outcome } => {
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
        let mut bars = Bars::new(tty);
        if let (ProgressMode::Tty, Some(multi)) = (mode, &bars.multi) {
            // indicatif hides bars on a stderr that is not a terminal; `tty` asks for them anyway.
            multi.set_draw_target(indicatif::ProgressDrawTarget::term_like(Box::new(
                console::Term::stderr(),
            )));
        }
        if mode == ProgressMode::Plain && !quiet {
            bars.plain = Some(HashMap::new());
        }
        bars
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

impl Progress for BuildBars {
    fn begin(&mut self, title: &str, total: u64) {
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
    fn advance(&mut self, bytes: u64) {
        if let Some(b) = &self.0 {
            b.inc(bytes);
        }
    }
    fn end(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
        if let Some((title, size, t)) = self.3.as_mut().and_then(|p| p.input.take()) {
            eprintln!(
                "wrote {title} ({}) in {:.1}s",
                super::common::human_size(size),
                t.elapsed().as_secs_f64()
            );
        }
    }
}

impl otters_pipeline::build::Progress for BuildBars {
    fn transfer(&mut self, event: &Event<'_>) {
        self.2.event(event);
        let Some(p) = &mut self.3 else { return };
        match event {
            Event::Start { digest, size, .. } => {
                p.blobs
                    .insert((*digest).clone(), (*size, std::time::Instant::now()));
            }
            Event::Done { digest, outcome } => {
                if let Some((size, t)) = p.blobs.remove(*digest) {
                    eprintln!(
                        "push {digest}: {outcome:?} ({}) in {:.1}s",
                        super::common::human_size(size),
                        t.elapsed().as_secs_f64()
                    );
                }
            }
            Event::Bytes { .. } => {}
        }
    }
    fn push_finished(&mut self, _reference: &str) {
        self.2.finish();
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
