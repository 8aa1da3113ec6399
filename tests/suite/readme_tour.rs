//! The README's tour, pasted as a newcomer would: its `sh` block runs line by line in a temp dir
//! holding a copy of `examples/`, with the `otters` this build made first on PATH, against the
//! local registry `examples/local-registry.sh` starts (no network).
//!
//! The only change to the text: `127.0.0.1:5000` becomes a free loopback port, so the test runs
//! beside others. Every line must exit 0; then the files a user would look at are checked. The
//! `otters` lines of the README's opening block run the same way (offline, no registry).

use crate::support::repo;
use std::path::{Path, PathBuf};
use std::process::Command;

const TEST: &str = "the_readme_tour_runs_as_written";

/// The lines of the first `sh` code block after `## A tour` in README.md.
fn tour_lines(readme: &str) -> Vec<String> {
    let after = readme
        .split_once("\n## A tour\n")
        .expect("README.md has a `## A tour` section")
        .1;
    sh_block(after)
}

/// The lines of the first `sh` code block in `text`, without blank lines and comment lines.
fn sh_block(text: &str) -> Vec<String> {
    let block = text
        .split_once("```sh\n")
        .expect("the tour has a ```sh block")
        .1
        .split_once("\n```")
        .expect("the tour's block is closed")
        .0;
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The tour's shell: cwd = the temp dir, this build's `otters` first on PATH, a fresh otters home,
/// TMPDIR inside the temp dir (where the registry script keeps its state).
fn shell(dir: &Path, line: &str) -> Command {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_otters"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("bash");
    c.args(["-euo", "pipefail", "-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .env("OTTERS_HOME", dir.join("home"))
        .env("TMPDIR", dir.join("tmp"))
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH");
    c
}

/// Stops the tour's registry however the test ends.
struct StopRegistry<'a> {
    dir: &'a Path,
    addr: String,
}

impl Drop for StopRegistry<'_> {
    fn drop(&mut self) {
        let line = format!("bash examples/local-registry.sh stop {}", self.addr);
        let _ = shell(self.dir, &line).output();
    }
}

#[test]
fn tour_lines_are_read_from_the_block() {
    let readme =
        "# x\n```sh\nnot this\n```\n## A tour\n\ntext\n```sh\na   # one\n\n# note\n  b\n```\nc\n";
    assert_eq!(tour_lines(readme), ["a   # one", "b"]);
}

#[test]
fn the_readme_opening_commands_run_as_written() {
    // The opening block: `cargo run --release -- ARGS` runs `otters ARGS` (this test runs the
    // binary cargo built for it), and `bash .ci/test` is the suite this test belongs to; the
    // main job must work offline as written.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines: Vec<String> = sh_block(&readme)
        .into_iter()
        .filter_map(|l| {
            l.strip_prefix("cargo run --release -- ")
                .map(|args| format!("otters {args}"))
        })
        .collect();
    assert!(
        !lines.is_empty(),
        "the README opens without an otters command"
    );
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples"), &tmp.path().join("examples"));
    std::fs::create_dir_all(tmp.path().join("tmp")).unwrap();
    for line in &lines {
        let out = shell(tmp.path(), line).output().unwrap();
        assert!(
            out.status.success(),
            "README line failed ({}): {line}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = shell(tmp.path(), "otters images -q").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1,
        "the opening build should store one image"
    );
}

#[test]
fn the_readme_tour_runs_as_written() {
    for (tool, install) in [
        ("docker-registry", "apt-get install docker-registry"),
        ("skopeo", "apt-get install skopeo"),
    ] {
        if !crate::support::tools::require(TEST, tool, &["--version"], install) {
            return;
        }
    }
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = tour_lines(&readme);
    assert!(
        lines.iter().any(|l| l.contains("local-registry.sh"))
            && lines.iter().any(|l| l.starts_with("otters run -v")),
        "the tour lost its registry or its run: {lines:#?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_dir(&repo().join("examples"), &dir.join("examples"));
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let _stop = StopRegistry {
        dir,
        addr: addr.clone(),
    };

    let mut dry_run = None;
    for line in &lines {
        let line = line.replace("127.0.0.1:5000", &addr);
        let out = shell(dir, &line).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tour line failed ({}): {line}\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        if line.starts_with("otters run --dry-run") {
            dry_run = Some(crate::support::cli::json(&stdout));
        }
    }

    // What a newcomer would look at: the plan, the archive, and the report the run wrote.
    let plan = dry_run.expect("the tour has a dry run");
    assert_eq!(plan["name"], "meteo", "{plan}");
    let tar = std::fs::metadata(dir.join("meteo.tar")).expect("otters save wrote meteo.tar");
    assert!(tar.len() > 0);
    let report = std::fs::read_to_string(dir.join("reports/tour.md"))
        .expect("the run wrote reports/tour.md through the -v mount");
    assert!(
        report.contains("You are meteo, a terse weather assistant.")
            && report.contains("max tokens: 512"),
        "{report}"
    );
    // The last line stopped the registry and removed its storage.
    assert!(
        !dir.join("tmp")
            .join(format!("otters-tour-registry-{}", &addr[10..]))
            .exists(),
        "the registry's state is left behind"
    );
}

/// The docs give one size for the release binary, the one the README measured: every sentence of
/// README.md and docs/*.md that names the binary's size in MB names the README's figure (the
/// performance notes' table of an earlier comparison says it is "at the time").
#[test]
fn the_docs_agree_on_the_binary_size() {
    let root = crate::support::repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let figure = readme
        .split("The stripped binary is ")
        .nth(1)
        .and_then(|rest| rest.split(" MB").next())
        .expect("README.md says \"The stripped binary is N MB\"");
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(e.unwrap().path());
    }
    let mut wrong = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
    {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let sized =
                line.contains(" MB") && (line.contains("binary") || line.contains("stripped"));
            if sized && !line.contains("(at the time)") && !line.contains(&format!("{figure} MB")) {
                wrong.push(format!("{}: {line}", f.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the README measured {figure} MB; these say otherwise: {wrong:#?}"
    );
}
