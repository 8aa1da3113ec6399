//! Progress: one event type for everything that moves bytes — a push, a pull, a copy, the large
//! inputs of a build — and one sink for it, a closure ([`Progress`]).
//!
//! Takes: nothing; it is the vocabulary the library reports in. The library never prints: a push,
//! a pull, `copy` and `build` call the sink they are given, and only the front end renders the
//! events (the CLI's bars, plain lines or nothing). Must never: carry text from outside that the
//! renderer does not escape (a layer title comes from an image), or a secret.

use crate::spec::descriptor::Descriptor;
use crate::spec::digest::Digest;
use serde::Serialize;

/// What happened to one blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Uploaded,
    /// Already in the registry (push) or in the store (pull).
    Skipped,
    Mounted,
    Downloaded,
}

/// A step of an operation made of several: each reported when it starts and when it ends (either
/// way), so a display can close what belongs to one step before the next begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// `build --push`: the built image is pushed to one of its tags.
    Push { reference: &'a str },
    /// `copy`: image `n` of `total` moves from `source` to `destination` (as the user wrote
    /// them, or as the closure walk named them).
    Copy {
        n: usize,
        total: usize,
        source: &'a str,
        destination: &'a str,
    },
}

/// One progress event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A blob starts moving (pushed, pulled, or streamed from one registry to another); `title`
    /// is its layer title, from the image.
    BlobStarted {
        digest: &'a Digest,
        size: u64,
        title: Option<&'a str>,
    },
    /// `n` more bytes of a started blob moved (a retried upload reports its bytes again).
    BlobAdvanced { digest: &'a Digest, n: u64 },
    /// A blob is done: moved, found already there, or mounted.
    BlobDone {
        digest: &'a Digest,
        outcome: Outcome,
    },
    /// A large build input (a file or directory an ADD names) starts being stored; it has no
    /// digest until it has been read.
    InputStarted { title: &'a str, size: u64 },
    /// `n` more bytes of the input were read.
    InputAdvanced { title: &'a str, n: u64 },
    /// The input is stored (or failed).
    InputDone { title: &'a str },
    /// A step starts.
    StepStarted(Step<'a>),
    /// A step ended, successfully or not.
    StepDone(Step<'a>),
}

impl<'a> Event<'a> {
    /// [`Event::BlobStarted`] for the blob `blob` describes: its digest, size and layer title.
    pub fn blob_started(blob: &'a Descriptor) -> Event<'a> {
        Event::BlobStarted {
            digest: &blob.digest,
            size: blob.size,
            title: blob.title(),
        }
    }
}

/// The sink every operation reports to. A caller that wants nothing passes `&mut |_| {}`.
pub type Progress<'p> = &'p mut dyn FnMut(Event<'_>);
