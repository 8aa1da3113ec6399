//! `otters copy [-r] SRC DST`: flags, progress and the report; the closure walk and the transfer
//! are `otters_pipeline::copy`.
//!
//! stdout carries data (each copied image's destination and digest, or the JSON report with
//! `--format json`); status lines and progress go to stderr.
use super::{fail_in, CliResult, Format};
use otters_oci::registry::transfer::{Event, Outcome};
use otters_pipeline::copy::{copy, CopyEvent, CopyReport, CopyRequest};
use std::io::IsTerminal as _;
use std::process::ExitCode;

/// Flags are independent switches, as clap reads them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// What to copy: a registry reference (by tag or digest), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub source: String,
    /// Where to: a registry reference (without a tag: the source's tag), `oci:DIR[:name]` or
    /// `oci-archive:FILE[:name]`
    pub destination: String,
    /// Also copy everything the agent pins: RUNTIME, each BIN and the FROM parent (recursively),
    /// each as the whole index it was pinned from, with their referrers
    #[arg(short, long)]
    pub recursive: bool,
    /// List what would be copied; move nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Allow plain HTTP and unverified TLS for registries that are not on this machine
    #[arg(long)]
    pub insecure: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// No progress or status lines
    #[arg(short, long)]
    pub quiet: bool,
    /// Progress on stderr: `auto` (one line per image, and a bar per blob on a terminal),
    /// `plain` (also one line per blob, never a control sequence: for CI logs), `quiet` (as `-q`)
    #[arg(long, value_enum, default_value_t = Shown::Auto)]
    pub progress: Shown,
}

/// How much progress `copy` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shown {
    Auto,
    Plain,
    Quiet,
}

pub fn run(a: CopyArgs) -> CliResult {
    let home = super::otters_home().join("store");
    // Leased, as build and pull are: a concurrent `prune` keeps the blobs a copy stages.
    let store = otters_oci::Store::open(&home)
        .and_then(|s| s.leased())
        .map_err(|e| fail_in(format!("cannot open the local store {}", home.display()), e))?;
    let req = CopyRequest {
        source: a.source.clone(),
        destination: a.destination.clone(),
        recursive: a.recursive,
        dry_run: a.dry_run,
        insecure: a.insecure,
    };
    let shown = if a.quiet { Shown::Quiet } else { a.progress };
    let mut ui = Lines::new(shown);
    let result = copy(&req, &store, &mut |e| ui.event(&e));
    ui.done();
    let report = result.map_err(|e| {
        fail_in(
            format!(
                "cannot copy {} to {}",
                escape(&a.source),
                escape(&a.destination)
            ),
            e,
        )
    })?;
    print(&report, a.format, shown == Shown::Quiet)?;
    Ok(ExitCode::SUCCESS)
}

fn escape(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
}

fn print(report: &CopyReport, format: Format, quiet: bool) -> miette::Result<()> {
    if format == Format::Json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| fail_in("cannot write the report", e))?;
        outln!("{text}");
        return Ok(());
    }
    for i in &report.images {
        let platforms = if i.platforms.is_empty() {
            String::new()
        } else {
            format!(" [{}]", i.platforms.join(", "))
        };
        let role = serde_json::to_value(&i.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        if report.dry_run {
            outln!(
                "{role:<8} {} -> {}{platforms}",
                escape(&i.source),
                escape(&i.destination)
            );
        } else {
            outln!("{} {}", escape(&i.destination), i.digest);
        }
    }
    if !quiet {
        let verb = if report.dry_run {
            "would copy"
        } else {
            "copied"
        };
        eprintln!(
            "{verb} {} image(s) and {} referrer(s) to {}{}",
            report.images.len(),
            report.referrers,
            escape(&report.destination),
            if report.dry_run {
                String::new()
            } else {
                format!(
                    ": {} blob(s) downloaded, {} uploaded, {} mounted, {} already present ({} bytes moved)",
                    report.downloaded, report.uploaded, report.mounted, report.skipped, report.bytes
                )
            }
        );
    }
    Ok(())
}

/// Status lines per image; per blob a line (`plain`) or a bar (a terminal).
struct Lines {
    shown: Shown,
    bar: Option<indicatif::ProgressBar>,
    tty: bool,
}

impl Lines {
    fn new(shown: Shown) -> Lines {
        Lines {
            shown,
            bar: None,
            tty: shown == Shown::Auto && std::io::stderr().is_terminal(),
        }
    }

    fn event(&mut self, e: &CopyEvent<'_>) {
        if self.shown == Shown::Quiet {
            return;
        }
        match e {
            CopyEvent::Image { n, total, image } => {
                self.done();
                eprintln!(
                    "[{n}/{total}] {} -> {}",
                    escape(&image.source),
                    escape(&image.destination)
                );
            }
            CopyEvent::Blob(Event::Start {
                size,
                title,
                digest,
            }) if self.tty => {
                let bar = indicatif::ProgressBar::new(*size);
                let style = indicatif::ProgressStyle::with_template(
                    "  {prefix:>12} {msg:<20} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_style(style);
                bar.set_prefix(digest.hex().chars().take(12).collect::<String>());
                bar.set_message(
                    escape(title.unwrap_or(""))
                        .chars()
                        .take(20)
                        .collect::<String>(),
                );
                self.bar = Some(bar);
            }
            CopyEvent::Blob(Event::Bytes { n, .. }) => {
                if let Some(b) = &self.bar {
                    b.inc(*n);
                }
            }
            CopyEvent::Blob(Event::Done { digest, outcome }) => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
                if self.shown == Shown::Plain {
                    let word = match outcome {
                        Outcome::Uploaded => "pushed",
                        Outcome::Downloaded => "pulled",
                        Outcome::Skipped => "exists",
                        Outcome::Mounted => "mounted",
                    };
                    eprintln!("  {word} {digest}");
                }
            }
            CopyEvent::Blob(Event::Start { .. }) => {}
        }
    }

    fn done(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
