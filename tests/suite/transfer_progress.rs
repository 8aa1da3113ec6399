//! `otters push|pull --progress auto|plain|tty|quiet` through the binary: `plain` is one line per
//! blob on stderr without control sequences, `tty` draws bars even into a pipe, `quiet` leaves
//! stderr empty on success.

use crate::registry::build_agent;
use crate::support::cli::Env;
use crate::support::registry::Registry;

/// The stderr lines that report a blob (`VERB sha256:…`).
fn blob_lines<'a>(err: &'a str, verb: &str) -> Vec<&'a str> {
    err.lines()
        .filter(|l| l.starts_with(&format!("{verb} sha256:")))
        .collect()
}

#[test]
fn plain_progress_is_one_line_per_blob_without_escapes() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/progress:1", reg.addr);
    let local = build_agent(&env, &tag, 300_000);

    let (ok, out, err) = env.run(&["push", &tag, "--progress", "plain"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), local);
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
    let pushed = blob_lines(&err, "pushed");
    assert!(pushed.len() >= 3, "{err}");
    // The 300,000-byte layer, with its size (binary units, as every size the CLI prints) and time.
    assert!(
        pushed
            .iter()
            .any(|l| l.contains(" 293.0 KiB in ") && l.ends_with('s')),
        "{err}"
    );
    assert!(err.contains(&format!("pushed {tag}:")), "{err}");

    let (ok, _, err) = env.run(&["push", &tag, "--progress", "plain"]);
    assert!(ok, "{err}");
    assert!(blob_lines(&err, "pushed").is_empty(), "{err}");
    assert_eq!(blob_lines(&err, "exists").len(), pushed.len(), "{err}");

    let other = format!("{}/team/other:1", reg.addr);
    let (ok, _, err) = env.run(&["push", &tag, &other, "--progress", "plain"]);
    assert!(ok, "{err}");
    assert_eq!(blob_lines(&err, "mounted").len(), pushed.len(), "{err}");

    let fresh = Env::new();
    let (ok, out, err) = fresh.run(&["pull", &tag, "--progress", "plain"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), local);
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
    assert_eq!(blob_lines(&err, "pulled").len(), pushed.len(), "{err}");
    let (ok, _, err) = fresh.run(&["pull", &tag, "--progress", "plain"]);
    assert!(ok, "{err}");
    assert_eq!(blob_lines(&err, "exists").len(), pushed.len(), "{err}");
}

#[test]
fn quiet_progress_prints_nothing_but_the_digest() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/quiet:1", reg.addr);
    let local = build_agent(&env, &tag, 1000);
    for mode in ["quiet", "auto"] {
        let (ok, out, err) = env.run(&["push", &tag, "--progress", mode]);
        assert!(ok, "{err}");
        assert_eq!(out.trim(), local);
        // auto, off a terminal: status lines only, no bars.
        assert_eq!(err.is_empty(), mode == "quiet", "{mode}: {err:?}");
        assert!(!err.contains('\x1b'), "{err:?}");
    }
    let fresh = Env::new();
    let (ok, out, err) = fresh.run(&["pull", &tag, "--progress", "quiet"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), local);
    assert_eq!(err, "");
    let err = fresh.fails(&[
        "pull",
        &format!("{}/team/missing:1", reg.addr),
        "--progress",
        "quiet",
    ]);
    assert!(err.contains("not found"), "{err}");
    let err = fresh.fails(&["pull", &tag, "--progress", "fancy"]);
    assert!(err.contains("plain") && err.contains("quiet"), "{err}");
}

#[test]
fn tty_progress_draws_bars_even_when_stderr_is_not_a_terminal() {
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/team/tty:1", reg.addr);
    let local = build_agent(&env, &tag, 200_000);
    let (ok, out, err) = env.run(&["push", &tag, "--progress", "tty"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), local);
    // stderr is a pipe here: `tty` draws the bars anyway (indicatif alone would hide them).
    assert!(err.contains("\x1b[") && err.contains("B/"), "{err:?}");
    let fresh = Env::new();
    let (ok, _, err) = fresh.run(&["pull", &tag, "--progress", "tty"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("\x1b[") && err.contains("downloaded"),
        "{err:?}"
    );
}
