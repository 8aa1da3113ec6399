//! The text and JSON views of the commands (`images`, `inspect`, `prune`, `push`/`pull`, `copy`,
//! `discover`; `lint`, `explain`, `policy`, `build`, `--progress plain`, and the status lines of
//! `run`, `export`, `load`, `login`, `lock` and `version`; error reports): values in, strings
//! out, as `otters_agentfile::diagnostic::render` is for findings.
//!
//! Takes: the values the library returns (store listings, reports, trees). Returns: the text a
//! front end prints, every value from an image, a registry or a file name escaped for the
//! terminal. Must never: print, or read anything.
pub mod build;
pub mod diff;
pub mod explain;
pub mod images;
pub mod inspect;
pub mod lint;
pub mod policy;
pub mod progress;
pub mod prune;
pub mod report;
pub mod schema;
pub mod status;
pub mod transfer;

/// A path for the terminal: its text, a control character or an invalid byte escaped (a
/// directory name in a cloned repository is anybody's).
pub fn path(p: &std::path::Path) -> String {
    otters_core::escape::escape(&p.display().to_string()).into_owned()
}

/// The image `reference` resolved to `digest`, as one reference other tools parse
/// (`otters_oci::reference::pinned`: the digest once), escaped for the terminal.
pub fn pinned(reference: &str, digest: &otters_oci::Digest) -> String {
    esc(&otters_oci::reference::pinned(reference, digest))
}

/// `writeln!` into a `String` (which cannot fail).
macro_rules! line {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}
pub(crate) use line;

/// A size for people, in binary units (`512 B`, `1.5 KiB`, `300.0 MiB`, `1.25 GiB`): the one
/// spelling of every size otters prints.
#[allow(clippy::cast_precision_loss)] // a rounded display value
pub fn human_size(n: u64) -> String {
    let f = n as f64;
    match n {
        0..=1023 => format!("{n} B"),
        1024..=1_048_575 => format!("{:.1} KiB", f / 1024.0),
        1_048_576..=1_073_741_823 => format!("{:.1} MiB", f / 1_048_576.0),
        _ => format!("{:.2} GiB", f / 1_073_741_824.0),
    }
}

/// Text from an image, a registry or a file name, made safe for a terminal.
pub(crate) fn esc(s: &str) -> String {
    otters_core::escape::escape(s).into_owned()
}

/// `1 blob`, `2 blobs`.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::{human_size, pinned};

    #[test]
    fn a_pinned_reference_names_its_digest_once() {
        let d = otters_oci::Digest::of(b"x");
        assert_eq!(pinned("r.example/a:1", &d), format!("r.example/a:1@{d}"));
        assert_eq!(
            pinned(&format!("r.example/a@{d}"), &d),
            format!("r.example/a@{d}")
        );
        assert_eq!(
            pinned(&format!("r.example/a:1@{d}"), &d),
            format!("r.example/a:1@{d}")
        );
        assert_eq!(pinned(d.as_str(), &d), d.to_string());
        assert_eq!(pinned(&d.hex()[..12], &d), d.to_string());
        assert_eq!(pinned("demo\u{1b}", &d), format!("demo\\u{{1b}}@{d}"));
    }

    #[test]
    fn sizes_are_in_binary_units() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(300_000), "293.0 KiB");
        assert_eq!(human_size(5 << 20), "5.0 MiB");
        assert_eq!(human_size(3 << 30), "3.00 GiB");
    }
}
