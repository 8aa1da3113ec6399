//! The CI files the project ships (`ci/`): the setup action, the example workflows and the GitLab
//! components validate against GitHub's and GitLab's schemas (check-jsonschema's vendored
//! schemas) and pass zizmor's offline audits with no finding of medium severity or more; the
//! action's shell installs from a local HTTP server with fake runner files, refuses a checksum
//! mismatch and reuses its cache; `ci/release.sh` makes the same archive twice.

use crate::support::ci_tools::venv_bin;
use crate::support::repo;
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no .yml in {dir}");
    v
}

fn output(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn action_workflows_and_gitlab_components_validate_against_their_schemas() {
    let test = "action_workflows_and_gitlab_components_validate_against_their_schemas";
    let Some(check) = venv_bin(test, "check-jsonschema") else {
        return;
    };
    let schema = |name: &str, paths: &[PathBuf]| {
        let (ok, said) = output(
            Command::new(&check)
                .args(["--builtin-schema", name])
                .args(paths),
        );
        assert!(ok, "{name}: {said}");
    };
    schema(
        "vendor.github-actions",
        &[repo().join("ci/github/setup-otters/action.yml")],
    );
    schema("vendor.github-workflows", &files("ci/github/examples"));
    // A component is a `spec:` header document, `---`, then the jobs: each part is validated.
    let tmp = tempfile::tempdir().unwrap();
    for f in files("ci/gitlab/templates") {
        let component = std::fs::read_to_string(&f).unwrap();
        let (header, jobs) = component
            .split_once("\n---\n")
            .expect("a spec header, ---, the jobs");
        assert!(header.starts_with("spec:\n  inputs:\n"), "{}", f.display());
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let (h, j) = (
            tmp.path().join(format!("h-{name}")),
            tmp.path().join(format!("j-{name}")),
        );
        std::fs::write(&h, header).unwrap();
        std::fs::write(&j, jobs).unwrap();
        schema("vendor.gitlab-ci", &[h, j]);
    }
    // The schema check can fail: a workflow without `on:` is refused.
    let bad = tmp.path().join("bad.yml");
    std::fs::write(
        &bad,
        "jobs:\n  a:\n    runs-on: x\n    steps: [{run: echo}]\n",
    )
    .unwrap();
    let (ok, _) = output(
        Command::new(&check)
            .args(["--builtin-schema", "vendor.github-workflows"])
            .arg(&bad),
    );
    assert!(!ok, "a workflow without `on` must be refused");
}

/// `zizmor --offline --format json PATHS`: the (audit, severity) of every finding.
fn zizmor(zizmor: &Path, paths: &[PathBuf]) -> Vec<(String, String)> {
    let o = Command::new(zizmor)
        .args(["--offline", "--format", "json"])
        .args(paths)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("zizmor: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["ident"].as_str().unwrap_or_default().to_owned(),
                f["determinations"]["severity"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn zizmor_finds_nothing_of_medium_severity_or_more() {
    let test = "zizmor_finds_nothing_of_medium_severity_or_more";
    let Some(z) = venv_bin(test, "zizmor") else {
        return;
    };
    let mut paths = files("ci/github/examples");
    paths.push(repo().join("ci/github/setup-otters/action.yml"));
    let serious: Vec<_> = zizmor(&z, &paths)
        .into_iter()
        .filter(|(_, s)| s == "Medium" || s == "High")
        .collect();
    assert!(serious.is_empty(), "{serious:?}");
    // The audit can fail: an input expanded inside `run:` is a template injection.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("action.yml");
    std::fs::write(
        &bad,
        "name: x\ndescription: x\ninputs:\n  v:\n    description: x\nruns:\n  using: composite\n  steps:\n    - shell: bash\n      run: echo ${{ inputs.v }}\n",
    )
    .unwrap();
    let found = zizmor(&z, &[bad]);
    assert!(
        found.iter().any(|(a, _)| a == "template-injection"),
        "{found:?}"
    );
}

/// Serves `body` for every GET on 127.0.0.1; counts the requests. The thread ends with the test.
fn serve(body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 4096];
            let mut req = Vec::new();
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
    });
    (format!("http://127.0.0.1:{}", addr.port()), count)
}

/// A release archive of a stand-in `otters` (a shell script that answers `version`), made by
/// ci/release.sh with `epoch`; returns (archive bytes, sha256 hex, archive path).
fn release(dir: &Path, epoch: &str) -> (Vec<u8>, String, PathBuf) {
    let bin = dir.join("fake-otters");
    std::fs::write(&bin, "#!/bin/sh\necho \"otters 9.9.9 (stand-in)\"\n").unwrap();
    let out = dir.join(format!("dist-{epoch}"));
    let (ok, said) = output(
        Command::new("bash")
            .arg(repo().join("ci/release.sh"))
            .arg(&out)
            .env("OTTERS_BIN", &bin)
            .env("OTTERS_TARGET", "x86_64-unknown-linux-gnu")
            .env("SOURCE_DATE_EPOCH", epoch),
    );
    assert!(ok, "{said}");
    let name = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let sum = std::fs::read_to_string(format!("{}.sha256", name.display())).unwrap();
    (
        std::fs::read(&name).unwrap(),
        sum.split_whitespace().next().unwrap().to_owned(),
        name,
    )
}

#[test]
fn release_archive_is_reproducible_with_otters_at_its_top_level() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, sum_a, path) = release(tmp.path(), "1700000000");
    let other = tempfile::tempdir().unwrap();
    let (b, sum_b, _) = release(other.path(), "1700000000");
    assert_eq!(
        sum_a, sum_b,
        "same binary and epoch, another directory: same archive"
    );
    assert_eq!(a, b);
    let (_, sum_c, _) = release(other.path(), "1700000001");
    assert_ne!(sum_a, sum_c, "the epoch is the archive's only time");
    let (ok, list) = output(Command::new("tar").arg("-tzvf").arg(&path));
    assert!(ok, "{list}");
    let entries: Vec<&str> = list.lines().collect();
    assert_eq!(entries.len(), 1, "{list}");
    assert!(
        entries[0].starts_with("-rwxr-xr-x 0/0") && entries[0].ends_with(" otters"),
        "{list}"
    );
}

/// Runs the action's step as the runner would: its inputs and runner files in the environment.
fn setup(runner: &Path, url: &str, sha: &str) -> (bool, String) {
    output(
        Command::new("bash")
            .arg(repo().join("ci/github/setup-otters/setup.sh"))
            .env("OTTERS_VERSION", "9.9.9")
            .env("OTTERS_URL", url)
            .env("OTTERS_SHA256", sha)
            .env("GITHUB_PATH", runner.join("path"))
            .env("GITHUB_OUTPUT", runner.join("output"))
            .env("RUNNER_TEMP", runner.join("temp"))
            .env("RUNNER_TOOL_CACHE", runner.join("cache")),
    )
}

#[test]
fn setup_action_verifies_the_checksum_installs_caches_and_sets_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (archive, sha, _) = release(tmp.path(), "1");
    let (base, requests) = serve(archive.clone());
    let url = format!("{base}/download/v{{version}}/otters-{{version}}.tar.gz");
    let runner = tmp.path().join("runner");
    std::fs::create_dir_all(runner.join("temp")).unwrap();
    let read = |f: &str| std::fs::read_to_string(runner.join(f)).unwrap_or_default();

    // A wrong checksum: refused, nothing installed, nothing on the PATH.
    let wrong = "0".repeat(64);
    let (ok, said) = setup(&runner, &url, &wrong);
    assert!(
        !ok && said.contains("checksum mismatch") && said.contains(&sha),
        "{said}"
    );
    assert_eq!(read("path"), "");
    assert!(!runner.join("cache/otters/9.9.9").join(&wrong).exists());

    // The right one: the archive kept in the tool cache, the binary unpacked into this job's
    // temp directory, which is on GITHUB_PATH and the `path` output.
    let (ok, said) = setup(&runner, &url, &sha.to_uppercase());
    assert!(ok, "{said}");
    let cached = runner
        .join("cache/otters/9.9.9")
        .join(&sha)
        .join("otters.tar.gz");
    assert_eq!(std::fs::read(&cached).unwrap(), archive);
    let dir = runner.join("temp").join(format!("otters-9.9.9-{sha}"));
    assert_eq!(read("path"), format!("{}\n", dir.display()));
    assert_eq!(read("output"), format!("path={}\n", dir.display()));
    let (ok, said) = output(Command::new(dir.join("otters")).arg("version"));
    assert!(ok && said.contains("9.9.9"), "{said}");
    let fetched = requests.load(Ordering::SeqCst);
    assert_eq!(fetched, 2);

    // Again: from the cache, no download, its checksum checked.
    let (ok, said) = setup(&runner, &url, &sha);
    assert!(
        ok && said.contains("tool cache") && said.contains("SHA-256 checked"),
        "{said}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), fetched);

    // Issue 31: the tool cache is shared (on a self-hosted runner, by every workflow). A cached
    // archive changed after it was installed is refused on the next use, and nothing of it runs
    // or reaches the PATH; the action used to run whatever sat at otters/VERSION/SHA256/otters.
    let marker = runner.join("pwned");
    let planted = tmp.path().join("planted");
    crate::support::write(
        &planted.join("otters"),
        format!(
            "#!/bin/sh\ntouch '{}'\necho otters 9.9.9\n",
            marker.display()
        ),
    );
    let (ok, said) = output(
        Command::new("tar")
            .arg("-czf")
            .arg(&cached)
            .arg("-C")
            .arg(&planted)
            .arg("otters"),
    );
    assert!(ok, "{said}");
    std::fs::write(runner.join("path"), "").unwrap();
    let (ok, said) = setup(&runner, &url, &sha);
    assert!(!marker.exists(), "the tampered cache ran");
    assert!(!ok, "{said}");
    let got = crate::support::sha256(&std::fs::read(&cached).unwrap())
        .trim_start_matches("sha256:")
        .to_owned();
    let said = said
        .replace(&got, "[PLANTED]")
        .replace(&sha, "[SHA]")
        .replace(&runner.display().to_string(), "[RUNNER]");
    crate::support::snap::assert("ci", "setup_action_tampered_cache", &said);
    assert_eq!(read("path"), "");
    assert_eq!(requests.load(Ordering::SeqCst), fetched);
    // A cache of the old layout (a bare binary, no archive) is not trusted either: downloaded again.
    std::fs::remove_file(&cached).unwrap();
    crate::support::write(
        &cached.with_file_name("otters"),
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    );
    let (ok, said) = setup(&runner, &url, &sha);
    assert!(ok && !marker.exists(), "{said}");
    assert_eq!(requests.load(Ordering::SeqCst), fetched + 1);
    assert_eq!(std::fs::read(&cached).unwrap(), archive);

    // Plain HTTP to another host, and a malformed checksum, are refused before any download.
    let (ok, said) = setup(&runner, "http://example.com/o.tar.gz", &sha);
    assert!(!ok && said.contains("plain HTTP"), "{said}");
    let (ok, said) = setup(&runner, &url, "abc");
    assert!(!ok && said.contains("64 hex digits"), "{said}");
    assert_eq!(requests.load(Ordering::SeqCst), fetched + 1);
}

/// The `otters …` command lines of a workflow's `run:` blocks (continuations joined, blanks
/// collapsed, a `"$(otters …)"` substitution unwrapped): each as written and as its words, shell
/// quotes dropped.
fn otters_commands(workflow: &str) -> Vec<(String, Vec<String>)> {
    let joined = workflow.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|l| {
            let at = l.find("otters ")?;
            let before = &l[..at];
            // A command: at the start of a `run:` line, or inside `$(…)`; not a path or a word.
            let starts = before.trim().is_empty()
                || before.trim() == "-"
                || before.trim_end().ends_with("run:")
                || before.ends_with("$(");
            starts.then(|| {
                let words: Vec<&str> = l[at..].trim_end_matches(")\"").split_whitespace().collect();
                let unquoted = words.iter().map(|w| w.trim_matches('"').to_owned());
                (words.join(" "), unquoted.collect())
            })
        })
        .collect()
}

/// The platform team's path in `ci/github/examples/deploy.yml`: build → sign → push → export →
/// sign the export → kube → `kubectl apply`, in that order, every otters command one the real
/// binary parses (its flags exist: `--help` after them answers only when they do), and docs/ci.md
/// shows the same commands.
#[test]
fn the_deploy_example_walks_the_platform_path_with_flags_otters_has() {
    let example = std::fs::read_to_string(repo().join("ci/github/examples/deploy.yml")).unwrap();
    let commands = otters_commands(&example);
    let steps: Vec<&str> = commands.iter().map(|(_, c)| c[1].as_str()).collect();
    assert_eq!(
        steps,
        ["build", "sign", "push", "export", "sign", "kube"],
        "{commands:?}"
    );
    let sign_export = &commands[4].1;
    assert!(
        sign_export.contains(&"--remote".to_owned()) && sign_export.iter().any(|w| w.contains('@'))
    );
    assert!(example.find("kubectl apply").unwrap() > example.find("otters kube").unwrap());
    let env = crate::support::cli::Env::new();
    let docs = std::fs::read_to_string(repo().join("docs/ci.md")).unwrap();
    for (written, c) in &commands {
        let mut args: Vec<&str> = c[1..]
            .iter()
            .map(|w| {
                if w.contains('$') {
                    "registry.example/a:1"
                } else {
                    w
                }
            })
            .collect();
        args.push("--help");
        let (ok, _, err) = env.run(&args);
        assert!(ok, "`{}` does not parse: {err}", c.join(" "));
        assert!(
            docs.contains(written.as_str()),
            "docs/ci.md does not show `{written}`"
        );
    }
}

/// The PR example `ci/github/examples/diff.yml` and the GitLab component
/// `ci/gitlab/templates/diff.yml`: each runs one `otters diff` the real binary parses (its flags
/// exist), gated on escalation and a label, and docs/ci.md shows the same command.
#[test]
fn the_diff_example_posts_markdown_and_gates_on_escalation_with_flags_otters_has() {
    for file in [
        "ci/github/examples/diff.yml",
        "ci/gitlab/templates/diff.yml",
    ] {
        a_diff_job_gates_on_escalation(file);
    }
    // The GitLab job posts one note and edits it, and reads the merge request's labels.
    let gitlab = std::fs::read_to_string(repo().join("ci/gitlab/templates/diff.yml")).unwrap();
    for needed in [
        "--request PUT",
        "--request POST",
        "CI_MERGE_REQUEST_LABELS",
        "merge_requests/$CI_MERGE_REQUEST_IID/notes",
    ] {
        assert!(gitlab.contains(needed), "{needed}");
    }
}

fn a_diff_job_gates_on_escalation(file: &str) {
    let example = std::fs::read_to_string(repo().join(file)).unwrap();
    let commands = otters_commands(&example);
    assert_eq!(commands.len(), 1, "{commands:?}");
    let (written, words) = &commands[0];
    let args: Vec<&str> = words[1..]
        .iter()
        .take_while(|w| !w.starts_with('>'))
        .map(|w| {
            if w.contains('$') {
                "registry.example/a:1"
            } else {
                w
            }
        })
        .collect();
    assert_eq!(args[0], "diff");
    for flag in ["--format", "markdown", "--fail-on", "escalation"] {
        assert!(args.contains(&flag), "{args:?}");
    }
    assert!(example.contains("allow-escalation"));
    let env = crate::support::cli::Env::new();
    let (ok, _, err) = env.run(&[&args[..], &["--help"]].concat());
    assert!(ok, "`{written}` does not parse: {err}");
    let docs = std::fs::read_to_string(repo().join("docs/ci.md")).unwrap();
    assert!(
        docs.contains(written.as_str()),
        "docs/ci.md does not show `{written}`"
    );
}
