//! Progress as text: the `--progress plain` line of each finished blob or input (for CI logs),
//! the status line of each image a copy starts, and the words and labels of a progress bar. The
//! bars themselves (indicatif) stay in the front end.
//!
//! Takes: the library's one progress [`Event`] type and the instant it arrived. Returns: lines,
//! never a control sequence; a layer's title and a copy's references (from an image or a user)
//! escaped. Must never: read the clock (the caller passes `now`), or print.
use super::{esc, human_size};
use otters_oci::progress::{Event, Outcome, Step};
use otters_oci::Digest;
use std::collections::HashMap;
use std::time::Instant;

/// `--progress plain`: what is under way, to print one line when it ends.
#[derive(Debug)]
pub struct Plain {
    /// `otters build`: inputs written and blobs pushed (`wrote …`, `push …`); else push, pull
    /// and copy (`pushed|pulled …`, `exists …`, `mounted …`).
    build: bool,
    blobs: HashMap<Digest, (u64, Instant)>,
    input: Option<(String, u64, Instant)>,
}

impl Plain {
    /// The lines of `push`, `pull` and `copy`.
    pub fn transfer() -> Self {
        Plain {
            build: false,
            blobs: HashMap::new(),
            input: None,
        }
    }

    /// The lines of `build`.
    pub fn build() -> Self {
        Plain {
            build: true,
            ..Plain::transfer()
        }
    }

    /// Forgets what was under way (a copy's next image).
    pub fn clear(&mut self) {
        self.blobs.clear();
    }

    /// The line `e`, arriving at `now`, ends with, if any: `pushed|pulled DIGEST SIZE in Ts`,
    /// `exists DIGEST`, `mounted DIGEST`; for a build `wrote TITLE (SIZE) in Ts` and
    /// `push DIGEST: Outcome (SIZE) in Ts`.
    pub fn event(&mut self, e: &Event<'_>, now: Instant) -> Option<String> {
        let secs = |t: Instant| now.saturating_duration_since(t).as_secs_f64();
        match *e {
            Event::BlobStarted { digest, size, .. } => {
                self.blobs.insert(digest.clone(), (size, now));
                None
            }
            Event::BlobDone { digest, outcome } if self.build => {
                let (size, t) = self.blobs.remove(digest)?;
                let size = human_size(size);
                Some(format!(
                    "push {digest}: {outcome:?} ({size}) in {:.1}s",
                    secs(t)
                ))
            }
            Event::BlobDone { digest, outcome } => {
                let (size, t) = self.blobs.remove(digest).unwrap_or((0, now));
                let sized =
                    |verb: &str| format!("{verb} {digest} {} in {:.1}s", human_size(size), secs(t));
                Some(match outcome {
                    Outcome::Uploaded => sized("pushed"),
                    Outcome::Downloaded => sized("pulled"),
                    Outcome::Skipped => format!("exists {digest}"),
                    Outcome::Mounted => format!("mounted {digest}"),
                })
            }
            Event::InputStarted { title, size } if self.build => {
                self.input = Some((title.to_owned(), size, now));
                None
            }
            Event::InputDone { .. } => {
                let (title, size, t) = self.input.take()?;
                let size = human_size(size);
                Some(format!("wrote {title} ({size}) in {:.1}s", secs(t)))
            }
            _ => None,
        }
    }
}

/// The status line of an image a copy starts (`[1/3] SRC -> DST`); `None` for other steps.
pub fn step_line(step: &Step<'_>) -> Option<String> {
    let Step::Copy {
        n,
        total,
        source,
        destination,
    } = step
    else {
        return None;
    };
    Some(format!(
        "[{n}/{total}] {} -> {}",
        esc(source),
        esc(destination)
    ))
}

/// A finished blob's bar message.
pub fn bar_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Uploaded => "uploaded",
        Outcome::Skipped => "already present",
        Outcome::Mounted => "mounted",
        Outcome::Downloaded => "downloaded",
    }
}

/// A blob bar's prefix (the digest's first 12 hex digits) and message (the layer's title,
/// escaped, at most 24 characters).
pub fn bar_labels(digest: &Digest, title: Option<&str>) -> (String, String) {
    let title = otters_core::escape::escape(title.unwrap_or(""));
    (
        digest.hex().chars().take(12).collect(),
        title.chars().take(24).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lines(mut plain: Plain, events: &[Event<'_>]) -> String {
        let t0 = Instant::now();
        let mut out = String::new();
        for (i, e) in events.iter().enumerate() {
            let now = t0 + Duration::from_millis(750 * i as u64);
            if let Some(l) = plain.event(e, now) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn transfer_lines_name_each_finished_blob() {
        let (a, b, c) = (Digest::of(b"a"), Digest::of(b"b"), Digest::of(b"c"));
        let started = |digest, size| Event::BlobStarted {
            digest,
            size,
            title: None,
        };
        let done = |digest, outcome| Event::BlobDone { digest, outcome };
        let text = lines(
            Plain::transfer(),
            &[
                started(&a, 2048),
                done(&a, Outcome::Uploaded),
                started(&b, 5),
                done(&b, Outcome::Skipped),
                done(&c, Outcome::Mounted),
                done(&c, Outcome::Downloaded),
                Event::InputDone { title: "x" },
            ],
        );
        insta::assert_snapshot!(text, @r"
        pushed sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb 2.0 KiB in 0.8s
        exists sha256:3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d
        mounted sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6
        pulled sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6 0 B in 0.0s
        ");
    }

    #[test]
    fn build_lines_name_inputs_and_pushed_blobs() {
        let a = Digest::of(b"a");
        let text = lines(
            Plain::build(),
            &[
                Event::InputStarted {
                    title: "model.bin",
                    size: 3 << 20,
                },
                Event::InputAdvanced {
                    title: "model.bin",
                    n: 1,
                },
                Event::InputDone { title: "model.bin" },
                Event::BlobDone {
                    digest: &a,
                    outcome: Outcome::Uploaded,
                },
                Event::BlobStarted {
                    digest: &a,
                    size: 10,
                    title: Some("t"),
                },
                Event::BlobDone {
                    digest: &a,
                    outcome: Outcome::Mounted,
                },
            ],
        );
        insta::assert_snapshot!(text, @r"
        wrote model.bin (3.0 MiB) in 1.5s
        push sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb: Mounted (10 B) in 0.8s
        ");
    }

    #[test]
    fn a_copy_step_line_escapes_its_references() {
        let step = Step::Copy {
            n: 1,
            total: 2,
            source: "a\u{1b}[2J",
            destination: "oci:dir",
        };
        assert_eq!(
            step_line(&step).as_deref(),
            Some("[1/2] a\\u{1b}[2J -> oci:dir")
        );
        assert_eq!(step_line(&Step::Push { reference: "r" }), None);
        let (prefix, title) = bar_labels(
            &Digest::of(b"a"),
            Some("a-very-long-layer-title-indeed.tar"),
        );
        assert_eq!(prefix, "ca978112ca1b");
        assert_eq!(title, "a-very-long-layer-title-");
        assert_eq!(bar_word(Outcome::Skipped), "already present");
    }
}
