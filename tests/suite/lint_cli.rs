//! `otters lint` and `otters explain` through the real binary: exit codes, every output format,
//! colour rules, suppressions, the project config file, stdin, and the conformance corpus.

use crate::support::cli::Env;
use crate::support::repo;
use crate::support::snap::Transcript;
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIXED: &str = "testdata/check/AF216_mixed_severities.agentfile";
const CLEAN: &str = "FROM scratch\nRUNTIME ghcr.io/openotters/runtime:v1.2.0\nMODEL anthropic/claude-haiku-4-5\nNAME clean\nCONTEXT SOUL <<EOF\nYou help.\nEOF\n";

/// `otters` run from the repository root, with colour variables cleared.
fn otters() -> Command {
    let mut c = Command::cargo_bin("otters").expect("otters binary");
    c.current_dir(repo())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    c
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(cmd: &mut Command) -> Out {
    let o = cmd.output().expect("run otters");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn lint(args: &[&str]) -> Out {
    run(otters().arg("lint").args(args))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `otters args` as a transcript does, from the repository root, with `stdin` as standard
/// input, and pins its whole output as `snapshots/lint/<name>.snap` (`env`'s temp dir `[TMP]`).
fn pin_stdin(env: &Env, name: &str, args: &[&str], stdin: Option<&str>) {
    let mut cmd = Transcript::otters(env);
    cmd.current_dir(repo());
    if let Some(text) = stdin {
        cmd.write_stdin(text.to_owned());
    }
    let mut t = Transcript::on(env);
    t.run_cmd(cmd, args);
    t.assert("lint", name);
}

/// As [`pin_stdin`], with nothing on standard input.
fn pin(env: &Env, name: &str, args: &[&str]) {
    pin_stdin(env, name, args, None);
}

fn json_codes(out: &Out) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect()
}

fn snapshot(name: &str, value: &str) {
    crate::support::snap::assert("lint", name, value);
}

#[test]
fn exit_codes() {
    let env = Env::new();
    let tmp = &env.dir;
    let clean = write(tmp.path(), "Agentfile", CLEAN);
    let clean = clean.to_str().unwrap();
    let warn = write(
        tmp.path(),
        "w/Agentfile",
        &CLEAN.replace("v1.2.0", "latest"),
    );
    let warn = warn.to_str().unwrap();

    pin(&env, "clean", &["lint", clean]);

    assert_eq!(lint(&[MIXED]).code, 1, "an error fails by default");
    assert_eq!(lint(&[warn]).code, 0, "warnings alone pass by default");
    assert_eq!(lint(&["--fail-on", "warning", warn]).code, 1);
    assert_eq!(lint(&["--fail-on", "info", clean]).code, 0);

    pin(&env, "missing_file", &["lint", "no/such/Agentfile"]);
    pin(&env, "unknown_format", &["lint", "--format", "xml", clean]);
    pin(
        &env,
        "unknown_fail_on",
        &["lint", "--fail-on", "never", clean],
    );
    // `--build-arg` is build's one parser: a name is needed, a bare NAME is read from the
    // environment.
    pin(
        &env,
        "build_arg_without_name",
        &["lint", "--build-arg", "=v", clean],
    );
    // A directory means its Agentfile.
    assert_eq!(lint(&[tmp.path().to_str().unwrap()]).code, 0);
    assert_eq!(
        lint(&[tmp.path().join("w").to_str().unwrap(), "-q"]).code,
        0
    );
}

#[test]
fn human_format_on_stderr_with_summary_and_no_colour_off_a_terminal() {
    for no_color in [false, true] {
        let mut cmd = otters();
        cmd.args(["lint", MIXED]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let o = run(&mut cmd);
        assert_eq!(o.code, 1);
        assert_eq!(o.stdout, "", "human output goes to stderr");
        assert!(
            !o.stderr.contains('\u{1b}'),
            "ANSI escape in {:?}",
            o.stderr
        );
        assert!(
            o.stderr
                .ends_with("2 errors, 1 warning, 1 info in 1 file\n"),
            "{}",
            o.stderr
        );
        snapshot("human", &o.stderr);
    }
    // -q drops the summary.
    pin(&Env::new(), "human_quiet", &["lint", "-q", MIXED]);
}

#[test]
fn concise_format() {
    let o = lint(&["--format", "concise", MIXED]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr, "");
    snapshot("concise", &o.stdout);
}

#[test]
fn json_format_has_exactly_the_documented_fields() {
    let o = lint(&["--format", "json", MIXED]);
    assert_eq!(o.code, 1);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 4);
    for item in items {
        let keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "code",
                "severity",
                "message",
                "file",
                "line",
                "column",
                "end_line",
                "end_column",
                "help"
            ]
        );
        assert!(item["line"].as_u64().unwrap() >= 1 && item["column"].as_u64().unwrap() >= 1);
        assert!(item["help"].is_string() || item["help"].is_null());
    }
    snapshot("json", &o.stdout);
}

#[test]
fn sarif_format_has_the_2_1_0_structure() {
    let o = lint(&["--format", "sarif", MIXED]);
    assert_eq!(o.code, 1);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run = &v["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "otters");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    // The repository Cargo.toml names, and per rule its page there (docs/lint.md says so).
    let home = env!("CARGO_PKG_REPOSITORY");
    assert!(home.starts_with("https://"), "{home}");
    assert_eq!(driver["informationUri"].as_str(), Some(home));
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(
        rules.len(),
        otters_agentfile::diagnostic::codes::RULES.len()
    );
    for r in rules {
        assert!(r["id"].as_str().unwrap().starts_with("AF"));
        for key in [
            "name",
            "shortDescription",
            "fullDescription",
            "help",
            "defaultConfiguration",
        ] {
            assert!(!r[key].is_null(), "rule {} lacks {key}", r["id"]);
        }
        let id = r["id"].as_str().unwrap();
        assert!(r["help"]["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!("docs/rules/{id}.md)")));
        assert_eq!(
            r["helpUri"].as_str(),
            Some(format!("{home}/blob/main/docs/rules/{id}.md").as_str())
        );
        assert!(repo().join(format!("docs/rules/{id}.md")).is_file(), "{id}");
        assert!(["error", "warning", "note"]
            .contains(&r["defaultConfiguration"]["level"].as_str().unwrap()));
    }
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for res in results {
        let idx = usize::try_from(res["ruleIndex"].as_u64().unwrap()).unwrap();
        assert_eq!(rules[idx]["id"], res["ruleId"]);
        assert!(["error", "warning", "note"].contains(&res["level"].as_str().unwrap()));
        assert!(res["message"]["text"].is_string());
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], MIXED);
        for key in ["startLine", "startColumn", "endLine", "endColumn"] {
            assert!(loc["region"][key].as_u64().unwrap() >= 1);
        }
    }
    snapshot("sarif", &o.stdout);
}

#[test]
fn github_format_prints_escaped_workflow_commands() {
    let o = lint(&["--format", "github", MIXED]);
    assert_eq!(o.code, 1);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l.starts_with("::error file=")
        || l.starts_with("::warning file=")
        || l.starts_with("::notice file=")));
    assert!(lines.iter().any(|l| l.starts_with(&format!("::error file={MIXED},line=5,col=8,endLine=5,endColumn=18,title=AF106 config-key-not-dns1123::"))));
    assert!(
        lines.iter().all(|l| l.contains("%0Ahelp: ")),
        "help on a second line"
    );
    snapshot("github", &o.stdout);
}

#[test]
fn suppressions_used_unused_and_without_reason() {
    let env = Env::new();
    let tmp = &env.dir;
    let used = write(
        tmp.path(),
        "used",
        &CLEAN
            .replace(
                "RUNTIME",
                "# otters:ignore AF201 tracks the dev runtime\nRUNTIME",
            )
            .replace("v1.2.0", "latest"),
    );
    let o = lint(&[
        "--format",
        "json",
        "--fail-on",
        "info",
        used.to_str().unwrap(),
    ]);
    assert_eq!(json_codes(&o), Vec::<String>::new());
    assert_eq!(o.code, 0);

    let unused = write(
        tmp.path(),
        "unused",
        &CLEAN.replace("RUNTIME", "# otters:ignore AF201 pinned later\nRUNTIME"),
    );
    let o = lint(&["--format", "json", unused.to_str().unwrap()]);
    assert_eq!(json_codes(&o), ["AF215"]);
    pin(
        &env,
        "suppression_unused",
        &["lint", unused.to_str().unwrap()],
    );

    let bare = write(
        tmp.path(),
        "bare",
        &CLEAN
            .replace("RUNTIME", "# otters:ignore AF201\nRUNTIME")
            .replace("v1.2.0", "latest"),
    );
    // The finding is suppressed but the missing reason is reported.
    pin(
        &env,
        "suppression_without_reason",
        &["lint", bare.to_str().unwrap()],
    );
}

#[test]
fn project_config_overrides_severity_and_fail_on() {
    let env = Env::new();
    let tmp = &env.dir;
    let text = CLEAN.replace("v1.2.0", "latest");
    let file = write(tmp.path(), "agents/a/Agentfile", &text);
    let file = file.to_str().unwrap();
    assert_eq!(json_codes(&lint(&["--format", "json", file])), ["AF201"]);

    // Found by walking up from the Agentfile's directory.
    write(tmp.path(), "otters.toml", "[lint]\nfail-on = \"warning\"\n");
    let o = lint(&["--format", "json", file]);
    assert_eq!((json_codes(&o), o.code), (vec!["AF201".to_owned()], 1));
    write(
        tmp.path(),
        "agents/.otters.toml",
        "[lint.severity]\nAF201 = \"off\"\n",
    );
    let o = lint(&["--format", "json", file]);
    assert_eq!(
        (json_codes(&o), o.code),
        (vec![], 0),
        "the nearest config wins"
    );

    // --fail-on beats the config; --config replaces discovery.
    write(
        tmp.path(),
        "agents/.otters.toml",
        "[lint]\nfail-on = \"info\"\n[lint.severity]\nAF201 = \"error\"\n",
    );
    assert_eq!(
        lint(&["--format", "json", "--fail-on", "error", file]).code,
        1
    );
    let explicit = write(
        tmp.path(),
        "elsewhere.toml",
        "[lint.severity]\nAF201 = \"info\"\n",
    );
    let o = lint(&[
        "--format",
        "json",
        "--config",
        explicit.to_str().unwrap(),
        file,
    ]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v[0]["severity"], "info");
    assert_eq!(o.code, 0);

    // An invalid config is a usage error naming the file and the problem.
    write(
        tmp.path(),
        "agents/.otters.toml",
        "[lint.severity]\nAF104 = \"off\"\n",
    );
    pin(&env, "config_invalid", &["lint", file]);
}

#[test]
fn stdin_build_args_and_capabilities() {
    // `--target none`: `web_fetch` is not portable to openotters L (AF232, tests/compat.rs).
    let text = "FROM scratch\nARG V=v1\nRUNTIME ghcr.io/openotters/runtime:${V}\nMODEL a/b\nNAME n\nCAPABILITY web_fetch\n";
    let env = Env::new();
    pin_stdin(
        &env,
        "stdin_json",
        &["lint", "--target", "none", "--format", "json", "-"],
        Some(text),
    );
    let o = run(otters()
        .args(["lint", "--target", "none", "--format", "json", "-"])
        .write_stdin(text));
    assert_eq!(json_codes(&o), ["AF211"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v[0]["file"], "<stdin>");

    let o = run(otters()
        .args([
            "lint",
            "--target",
            "none",
            "--format",
            "json",
            "--build-arg",
            "V=latest",
            "-",
        ])
        .write_stdin(text));
    assert_eq!(
        json_codes(&o),
        ["AF201", "AF211"],
        "the build arg reaches the model"
    );
    // A bare KEY takes its value from the environment, as `otters build --build-arg KEY` does.
    let o = run(otters()
        .args(["lint", "--target", "none", "--format", "json"])
        .args(["--build-arg", "V", "-"])
        .env("V", "latest")
        .write_stdin(text));
    assert_eq!(json_codes(&o), ["AF201", "AF211"], "V from the environment");

    let tmp = tempfile::tempdir().unwrap();
    let caps = write(tmp.path(), "caps.txt", "# ours\nweb_fetch\n");
    let o = run(otters()
        .args([
            "lint",
            "--target",
            "none",
            "--format",
            "json",
            "--capabilities",
            caps.to_str().unwrap(),
            "-",
        ])
        .write_stdin(text));
    assert_eq!(json_codes(&o), Vec::<String>::new());
}

/// A `--build-arg` no linted file declares is warned of on stderr, as `otters build` does; a
/// name one file of several declares is used; `--quiet` says nothing; the exit code and stdout are
/// the same either way.
#[test]
fn a_build_arg_no_linted_file_declares_is_warned_of() {
    let env = Env::new();
    let tmp = &env.dir;
    let with_v = write(
        tmp.path(),
        "a/Agentfile",
        &CLEAN.replace("NAME clean\n", "ARG V=1\nNAME clean${V}\n"),
    );
    let plain = write(tmp.path(), "b/Agentfile", CLEAN);
    let (with_v, plain) = (with_v.to_str().unwrap(), plain.to_str().unwrap());
    let unused = |name: &str| format!("warning: --build-arg {name} is not used");

    pin(
        &env,
        "build_arg_unused",
        &[
            "lint",
            "--build-arg",
            "NOPE=1",
            "--build-arg",
            "V=2",
            with_v,
        ],
    );

    // V is declared by one of the two files: used.
    let o = lint(&["--build-arg", "V=2", plain, with_v]);
    assert!(!o.stderr.contains("is not used"), "{}", o.stderr);
    pin(
        &env,
        "build_arg_unused_by_the_file",
        &["lint", "--build-arg", "V=2", plain],
    );

    let json = lint(&["--format", "json", "--build-arg", "NOPE=1", plain]);
    assert!(json.stderr.contains(&unused("NOPE")), "{}", json.stderr);
    assert_eq!(json.stdout, lint(&["--format", "json", plain]).stdout);
    let quiet = lint(&["-q", "--build-arg", "NOPE=1", plain]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));

    // A name with a control character (say, from a CI variable) is shown escaped, in the warning
    // and in the note that a bare name is not set, never sent to the terminal.
    pin(
        &env,
        "build_arg_control_characters",
        &[
            "lint",
            "--build-arg",
            "\u{1b}]0;x\u{7}A=1",
            "--build-arg",
            "\u{1b}[2JB",
            plain,
        ],
    );
}

#[test]
fn recursive_lints_every_agentfile_sorted() {
    let env = Env::new();
    let tmp = &env.dir;
    write(tmp.path(), "b/Agentfile", CLEAN);
    write(tmp.path(), "a/deep/Agentfile", "NAME x\n");
    write(tmp.path(), ".hidden/Agentfile", "junk\n");
    let o = lint(&["-r", "--format", "concise", tmp.path().to_str().unwrap()]);
    assert_eq!(o.code, 1);
    let files: Vec<&str> = o
        .stdout
        .lines()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert!(
        files.iter().all(|f| f.ends_with("a/deep/Agentfile")),
        "{}",
        o.stdout
    );
    pin(
        &env,
        "recursive",
        &["lint", "-r", tmp.path().to_str().unwrap()],
    );
}

#[test]
fn non_utf8_input_is_af001_with_offset() {
    let env = Env::new();
    let p = env.dir.path().join("Agentfile");
    std::fs::write(&p, b"FROM scratch\nNAME caf\xe9\n").unwrap();
    pin(
        &env,
        "not_utf8_json",
        &["lint", "--format", "json", p.to_str().unwrap()],
    );
    pin(&env, "not_utf8_human", &["lint", p.to_str().unwrap()]);
}

#[test]
fn conformance_agentfiles_lint_with_zero_errors() {
    let Some(dir) =
        crate::support::harness::conformance("conformance_agentfiles_lint_with_zero_errors")
    else {
        return;
    };
    let expected = count_agentfiles(&dir);
    assert!(
        expected >= 14,
        "only {expected} Agentfiles under {}",
        dir.display()
    );
    let o = run(otters().args(["lint", "-r", "--format", "json"]).arg(&dir));
    assert_eq!(o.code, 0, "{}", o.stdout);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let errors: Vec<&Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let summary = run(otters().args(["lint", "-r"]).arg(&dir)).stderr;
    assert!(
        summary.contains(&format!("in {expected} files")),
        "{summary}"
    );
}

/// Agentfiles under `dir`, found the way `lint -r` looks for them (files named `Agentfile`).
fn count_agentfiles(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "Agentfile") {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn explain_prints_exactly_the_docs_page_for_every_code() {
    for r in otters_agentfile::diagnostic::codes::RULES {
        let page =
            std::fs::read_to_string(repo().join(format!("docs/rules/{}.md", r.code))).unwrap();
        let o = run(otters().args(["explain", r.code.as_str()]));
        assert_eq!(o.code, 0);
        assert_eq!(
            o.stdout, page,
            "otters explain {} differs from docs/rules/{}.md",
            r.code, r.code
        );
    }
    let o = run(otters().args(["explain", "missing-from"]));
    assert!(o.stdout.starts_with("# AF101: missing-from\n"));
}

#[test]
fn explain_unknown_code_and_list() {
    let env = Env::new();
    pin(&env, "explain_unknown_code", &["explain", "AF2O5"]);
    pin(&env, "explain_nothing", &["explain"]);
    pin(&env, "explain_list", &["explain", "--list"]);
    pin(
        &env,
        "explain_list_json",
        &["explain", "--list", "--format", "json"],
    );

    let o = run(otters().args(["explain", "--list"]));
    assert_eq!(o.code, 0);
    assert_eq!(
        o.stdout.lines().count(),
        otters_agentfile::diagnostic::codes::RULES.len()
    );
    assert!(o.stdout.contains("AF104  error    name-not-path-safe"));
    let o = run(otters().args(["explain", "--list", "--format", "json"]));
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        v[0],
        serde_json::json!({"code": "AF001", "name": "invalid-utf8", "severity": "error", "summary": "the file is not valid UTF-8"})
    );
}

/// An Agentfile.lock that pins `reference` as the RUNTIME.
fn lock_pinning_runtime(reference: &str) -> otters_pipeline::resolve::lockfile::Lockfile {
    use otters_pipeline::resolve::lockfile::{BinInfo, Entry, Lockfile, Role};
    let mut lock = Lockfile::new("linux/amd64");
    // As otters locks a RUNTIME: with its bin name (without one, lint reports AF403).
    lock.insert(Entry {
        role: Role::Runtime,
        reference: reference.into(),
        digest: otters_oci::Digest::from_hex(&"a".repeat(64)).unwrap(),
        index: None,
        platform: None,
        bin: Some(BinInfo {
            name: "runtime".into(),
            path: None,
            usage_path: None,
        }),
        description: None,
        usage: None,
    });
    lock
}

/// AF201 is about references that move: one that `Agentfile.lock` pins to a digest does not, so it
/// is not reported; with the lock gone it is again.
#[test]
fn a_reference_the_lock_pins_is_not_af201() {
    let dir = tempfile::tempdir().unwrap();
    let agentfile = dir.path().join("Agentfile");
    std::fs::write(
        &agentfile,
        "FROM scratch\nNAME pinned\nRUNTIME ghcr.io/o/runtime:latest\nMODEL m/x\nBIN jq ghcr.io/o/jq\n",
    )
    .unwrap();
    let af201 = || {
        let o = lint(&["--format", "json", agentfile.to_str().unwrap()]);
        let v: Value = serde_json::from_str(&o.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "AF201")
            .map(|d| d["line"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(af201(), vec![3, 5]);
    let lock = lock_pinning_runtime("ghcr.io/o/runtime:latest");
    std::fs::write(dir.path().join("Agentfile.lock"), lock.to_bytes()).unwrap();
    assert_eq!(af201(), vec![5], "the pinned RUNTIME is still reported");
    std::fs::remove_file(dir.path().join("Agentfile.lock")).unwrap();
    assert_eq!(af201(), vec![3, 5]);
}

/// `--stdin-filename PATH` lints standard input as if it were PATH: the findings name PATH,
/// otters.toml is found from PATH's directory, and Agentfile.lock beside PATH counts.
#[test]
fn stdin_filename_finds_the_config_and_names_the_file() {
    let env = Env::new();
    let tmp = &env.dir;
    write(
        tmp.path(),
        "agents/otters.toml",
        "[lint.severity]\nAF201 = \"error\"\n",
    );
    let path = tmp.path().join("agents/a/Agentfile");
    let path_s = path.to_str().unwrap();
    let text = CLEAN.replace("v1.2.0", "latest");
    let stdin = |extra: &[&str]| {
        run(otters()
            .args(["lint", "--target", "none", "--format", "json"])
            .args(extra)
            .arg("-")
            .write_stdin(text.clone()))
    };
    // Without it: `<stdin>`, and the config of the current directory (none).
    let o = stdin(&[]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        (v[0]["file"].as_str(), v[0]["severity"].as_str()),
        (Some("<stdin>"), Some("warning"))
    );
    assert_eq!(o.code, 0);
    // With it: PATH (which need not exist), and agents/otters.toml above it.
    let o = stdin(&["--stdin-filename", path_s]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(json_codes(&o), ["AF201"]);
    assert_eq!(
        (v[0]["file"].as_str(), v[0]["severity"].as_str()),
        (Some(path_s), Some("error"))
    );
    assert_eq!(o.code, 1);
    pin_stdin(
        &env,
        "stdin_filename_concise",
        &[
            "lint",
            "--target",
            "none",
            "--format",
            "concise",
            "--stdin-filename",
            path_s,
            "-",
        ],
        Some(&text),
    );
    // Agentfile.lock beside PATH pins the runtime: no AF201.
    let lock = lock_pinning_runtime("ghcr.io/openotters/runtime:latest");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(tmp.path().join("agents/a/Agentfile.lock"), lock.to_bytes()).unwrap();
    assert_eq!(
        json_codes(&stdin(&["--stdin-filename", path_s])),
        Vec::<String>::new()
    );
    // It names standard input: without `-` it is a usage error.
    pin(
        &env,
        "stdin_filename_without_stdin",
        &["lint", "--stdin-filename", path_s, path_s],
    );
}
