//! Hostile Agentfiles and project files against the real `otters` binary (issue 8, front end):
//! ARG expansion bombs, many ARGs, an Agentfile (or otters.toml, Agentfile.lock, .agentignore)
//! that is a symlink out of its directory, a device or a FIFO, or too large; control characters
//! and bidi overrides in Agentfiles, file names and registry error bodies; many findings.
//!
//! Each test asserts what a user would check: the run ends, within bounded memory (an address-space
//! limit set with `ulimit -v` in a `sh` wrapper), with a clear message naming the file, and
//! nothing secret or raw-control reaches the output. The refusals of linked files are pinned
//! whole (`snapshots/security_frontend/`).

use crate::support::cli::Env;
use crate::support::snap::Transcript;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The otters binary the tests run.
fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_otters"))
}

/// Runs `otters ARGS` in `dir` under an address-space limit of `limit_kib`, with `NO_COLOR`.
fn otters_limited(env: &Env, dir: &Path, limit_kib: u64, args: &[&str]) -> Output {
    otters_bounded(env, dir, limit_kib, 600, args)
}

/// `otters ARGS` under an address-space limit and a CPU-time limit (`ulimit -t`: the kernel ends
/// the process with SIGXCPU past `cpu_secs` seconds of CPU). CPU time, unlike wall time, does not
/// grow when other work shares the machine, so a bound on it holds under any load.
fn otters_bounded(env: &Env, dir: &Path, limit_kib: u64, cpu_secs: u32, args: &[&str]) -> Output {
    let mut script = format!("ulimit -v {limit_kib}; ulimit -t {cpu_secs}; exec \"$0\"");
    for i in 1..=args.len() {
        let _ = write!(script, " \"${i}\"");
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .env("OTTERS_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .expect("run otters under sh")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    crate::support::write(path, bytes);
}

/// The exponential ARG chain of the issue, padded to about 4 KB: 24 levels of
/// `ARG aN=${aN-1}${aN-1}…` (doubling, with 8 references per line at the top levels). Unbounded,
/// it expands to far more than any machine has.
fn arg_bomb() -> String {
    let mut s = String::from("FROM scratch\nNAME bomb\nARG a0=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
    for i in 1..=24 {
        let refs = if i < 20 { 2 } else { 8 };
        let mut line = String::new();
        for _ in 0..refs {
            let _ = write!(line, "${{a{}}}", i - 1);
        }
        let _ = writeln!(s, "ARG a{i}={line}");
    }
    for i in 0..100 {
        let _ = writeln!(s, "LABEL l{i}=${{a24}}${{a24}}${{a24}}${{a24}}");
    }
    s
}

/// The address-space limit these tests run otters under. It covers the debug binary's own mappings
/// (about 40 MiB before any input) plus the bounded work; the attacks it guards against ask for
/// gigabytes. Raised from 100 MiB when the merged binary of issues 17–24 needed 110 MiB on the
/// 200 KB-line lint below (its RSS is 74 MiB, as before, within 4%).
const LIMIT_KIB: u64 = 128 * 1024;

#[test]
fn arg_expansion_bomb_lints_in_bounded_memory_and_reports_af117() {
    let env = Env::new();
    let dir = env.dir.path();
    let bomb = arg_bomb();
    assert!(bomb.len() > 4000 && bomb.len() < 5000, "{}", bomb.len());
    write(&dir.join("Agentfile"), &bomb);
    for format in ["concise", "human", "json"] {
        let out = otters_limited(
            &env,
            dir,
            LIMIT_KIB,
            &["lint", "--format", format, "Agentfile"],
        );
        // Exit 1: the file has errors. A crash (allocation failure under the limit) is not 1.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{format}: {}\n{}",
            text(&out.stderr),
            text(&out.stdout)
        );
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(all.contains("AF117"), "{format}: {all}");
        assert!(
            all.len() < 2 << 20,
            "{format}: {} bytes of output",
            all.len()
        );
    }
    let out = otters_limited(
        &env,
        dir,
        LIMIT_KIB,
        &["lint", "--format", "concise", "Agentfile"],
    );
    let concise = text(&out.stdout);
    let first = concise
        .lines()
        .find(|l| l.contains("AF117"))
        .expect("an AF117 line");
    // The finding is on the ARG line whose reference would overflow, at that reference.
    assert!(
        first.starts_with("Agentfile:") && first.contains("expanding `${a"),
        "{first}"
    );
    assert!(
        concise.contains("substitute more than 1 MiB in this file"),
        "{concise}"
    );
}

#[test]
fn arg_expansion_bomb_builds_nothing() {
    let env = Env::new();
    let dir = env.dir.path();
    write(&dir.join("Agentfile"), arg_bomb());
    let out = otters_limited(&env, dir, LIMIT_KIB, &["build", "."]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("AF117") && err.contains("nothing was built"),
        "{err}"
    );
    assert!(
        !env.store().join("index.json").exists()
            || !text(&std::fs::read(env.store().join("index.json")).unwrap()).contains("bomb")
    );
}

#[test]
fn forty_thousand_args_lint_in_linear_time_without_false_findings() {
    // Each ARG is used by the next one; the last by a LABEL. With the old per-ARG scan of every
    // later line this took minutes; now it takes about a second (the bound below is 50× that).
    let env = Env::new();
    let dir = env.dir.path();
    let mut s = String::from("FROM scratch\nNAME many\nMODEL m\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\nARG a0=v\n");
    let n = 40_000;
    for i in 1..n {
        let _ = writeln!(s, "ARG a{i}=${{a{}}}", i - 1);
    }
    let _ = writeln!(s, "LABEL last=${{a{}}}", n - 1);
    assert!(s.len() < 1 << 20);
    write(&dir.join("Agentfile"), &s);
    let started = Instant::now();
    let out = otters_limited(
        &env,
        dir,
        LIMIT_KIB,
        &["lint", "--format", "concise", "Agentfile"],
    );
    let took = started.elapsed();
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("AF204"), "{stdout}");
    assert!(!stdout.contains("AF203"), "{stdout}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn agentfile_symlinked_to_proc_environ_is_never_printed() {
    let env = Env::new();
    let repo = env.dir.path().join("repo");
    std::fs::create_dir_all(repo.join("agents/a")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", repo.join("Agentfile")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", repo.join("agents/a/Agentfile")).unwrap();
    let marker = "otters-secret-marker-5f1e";
    let mut t = Transcript::on(&env);
    for args in [
        vec!["lint", "repo"],
        vec!["lint", "repo/Agentfile"],
        vec!["lint", "-r", "repo"],
        vec!["lint", "--format", "json", "repo/agents/a/Agentfile"],
        vec!["build", "repo"],
        vec!["lock", "repo"],
    ] {
        let mut cmd = Transcript::otters(&env);
        cmd.current_dir(env.dir.path())
            .env("OTTERS_TEST_SECRET", marker);
        let (ok, out, err) = t.run_cmd(cmd, &args);
        let all = out + &err;
        assert!(!ok, "{args:?}: {all}");
        assert!(
            !all.contains(marker),
            "{args:?} printed the environment: {all}"
        );
    }
    t.assert("security_frontend", "agentfile_linked_to_proc_environ");
}

#[test]
fn build_refuses_an_agentfile_linked_out_of_the_context_and_follows_one_inside() {
    let env = Env::new();
    let root = env.dir.path();
    let secret = "SECRET=do-not-embed-1234";
    write(
        &root.join("outside/secret"),
        format!("FROM scratch\nNAME leak\nLABEL s=\"{secret}\"\n"),
    );
    let ctx = root.join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    std::os::unix::fs::symlink("../outside/secret", ctx.join("Agentfile")).unwrap();
    let mut t = Transcript::on(&env);
    for args in [
        vec!["build", "ctx"],
        vec!["build", "ctx", "-f", "Agentfile"],
    ] {
        let mut cmd = Transcript::otters(&env);
        cmd.current_dir(root);
        let (ok, _, err) = t.run_cmd(cmd, &args);
        assert!(!ok, "{args:?}: {err}");
        assert!(!err.contains(secret), "{err}");
    }
    t.assert("security_frontend", "agentfile_linked_out_of_the_context");
    // Nothing was stored: no blob holds the secret.
    let blobs = env.store().join("blobs/sha256");
    if blobs.exists() {
        for e in std::fs::read_dir(&blobs).unwrap() {
            let b = std::fs::read(e.unwrap().path()).unwrap();
            assert!(!text(&b).contains(secret));
        }
    }
    // A symlink that stays inside the context is followed.
    std::fs::remove_file(ctx.join("Agentfile")).unwrap();
    write(&ctx.join("agents/real"), "FROM scratch\nNAME inside\nMODEL m\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\n");
    std::os::unix::fs::symlink("agents/real", ctx.join("Agentfile")).unwrap();
    let out = env
        .otters()
        .args(["build", "--offline", "--allow-unpinned", "ctx"])
        .current_dir(root)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!err.contains("symlink"), "{err}");
}

#[test]
fn devices_fifos_and_oversized_input_are_refused_quickly() {
    let env = Env::new();
    let dir = env.dir.path();
    let fifo = dir.join("fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    write(&dir.join("big/Agentfile"), vec![b'#'; (1 << 20) + 1]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["lint", "/dev/zero"],
            "/dev/zero is a character device, not a regular file",
        ),
        (
            &["lint", "fifo"],
            "fifo is a named pipe, not a regular file",
        ),
        (
            &["lint", "big"],
            "big/Agentfile is larger than 1 MiB, the Agentfile limit",
        ),
        (
            &["build", "big"],
            "big/Agentfile is larger than 1 MiB, the Agentfile limit",
        ),
    ];
    for (args, want) in cases {
        let started = Instant::now();
        let out = otters_limited(&env, dir, LIMIT_KIB, args);
        let err = crate::support::cli::flat(&text(&out.stderr));
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(30), "{args:?}");
    }
    // Standard input is capped too: 3 MiB of zeros stop after 1 MiB.
    for cmd in [&["lint", "-"][..], &["build", "-"][..]] {
        let mut child = Command::new(bin())
            .args(cmd)
            .env("OTTERS_HOME", env.home())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let chunk = vec![0u8; 64 * 1024];
            for _ in 0..48 {
                if stdin.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        let err = crate::support::cli::flat(&text(&out.stderr));
        assert!(!out.status.success(), "{cmd:?}");
        assert!(
            err.contains("standard input is larger than 1 MiB, the Agentfile limit"),
            "{cmd:?}: {err}"
        );
    }
}

#[test]
fn project_files_linked_out_or_endless_are_refused() {
    let env = Env::new();
    let root = env.dir.path();
    let secret = "TOKEN=project-file-secret-77";
    write(
        &root.join("outside/secret.toml"),
        format!("[lint]\n{secret}\n"),
    );
    let agent = "FROM scratch\nNAME p\nMODEL m\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\n";

    // otters.toml found by the search but linked elsewhere: a parse error would quote it.
    let a = root.join("a");
    write(&a.join("Agentfile"), agent);
    std::os::unix::fs::symlink("../outside/secret.toml", a.join("otters.toml")).unwrap();
    let mut cmd = Transcript::otters(&env);
    cmd.current_dir(root);
    let mut t = Transcript::on(&env);
    let (_, _, err) = t.run_cmd(cmd, &["lint", "a"]);
    assert!(!err.contains(secret), "{err}");
    t.assert("security_frontend", "otters_toml_linked_out");

    // Agentfile.lock linked to a device: a build must not read it without end.
    let b = root.join("b");
    write(&b.join("Agentfile"), agent);
    std::os::unix::fs::symlink("/dev/zero", b.join("Agentfile.lock")).unwrap();
    let out = otters_limited(&env, root, LIMIT_KIB, &["build", "--offline", "b"]);
    let err = crate::support::cli::flat(&text(&out.stderr));
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("Agentfile.lock is a symlink that leads outside"),
        "{err}"
    );

    // .agentignore linked to a device.
    let c = root.join("c");
    write(&c.join("Agentfile"), "FROM scratch\nNAME c\nMODEL m\n");
    std::os::unix::fs::symlink("/dev/zero", c.join(".agentignore")).unwrap();
    let out = otters_limited(&env, root, LIMIT_KIB, &["build", "c"]);
    let err = crate::support::cli::flat(&text(&out.stderr));
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(".agentignore: is a symlink that leads outside"),
        "{err}"
    );
}

/// An Agentfile that tries to drive the terminal: clear screen, set the title, a bell, a lone
/// carriage return that would overwrite the line, C1 CSI, and a right-to-left override.
const HOSTILE: &str = "FROM scratch\nNAME \"x\u{1b}[2J\u{1b}]0;pwned\u{7}\"\nMODEL m\rFAKE ok\nLABEL c1=\u{9b}31m\nCONTEXT SOUL <<EOF\nNever run \u{202e}txt.exe\u{202c}.\nEOF\n";

fn assert_no_raw_controls(what: &str, s: &str) {
    for c in s.chars() {
        let bad = matches!(c, '\0'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c);
        assert!(!bad, "{what}: raw U+{:04X} in output:\n{s}", u32::from(c));
    }
}

#[test]
fn control_characters_never_reach_the_terminal_raw() {
    let env = Env::new();
    let dir = env.dir.path();
    write(&dir.join("Agentfile"), HOSTILE);
    // A file name with an escape sequence, too.
    write(&dir.join("evil\u{1b}[2J/Agentfile"), HOSTILE);
    for format in [
        "human",
        "concise",
        "github",
        "json",
        "sarif",
        "gitlab",
        "junit",
        "checkstyle",
    ] {
        for path in ["Agentfile", "evil\u{1b}[2J/Agentfile"] {
            let out = env
                .otters()
                .args(["lint", "--format", format, path])
                .current_dir(dir)
                .output()
                .unwrap();
            let stdout = text(&out.stdout);
            let stderr = text(&out.stderr);
            assert_no_raw_controls(&format!("{format} {path:?} stdout"), &stdout);
            assert_no_raw_controls(&format!("{format} {path:?} stderr"), &stderr);
            let all = stdout + &stderr;
            assert!(all.contains("AF219"), "{format}: {all}");
        }
    }
    let out = env
        .otters()
        .args(["lint", "--format", "human", "Agentfile"])
        .current_dir(dir)
        .output()
        .unwrap();
    let human = text(&out.stderr);
    assert!(
        human.contains("x\\u{1b}[2J\\u{1b}]0;pwned\\u{7}"),
        "{human}"
    );
    assert!(
        human.contains("Never run \\u{202e}txt.exe\\u{202c}."),
        "{human}"
    );
    assert!(human.contains("MODEL m\\u{d}FAKE ok"), "{human}");
    // JSON keeps the real characters, escaped the JSON way.
    let out = env
        .otters()
        .args(["lint", "--format", "json", "Agentfile"])
        .current_dir(dir)
        .output()
        .unwrap();
    let v = crate::support::cli::json(&text(&out.stdout));
    let messages: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("x\u{1b}[2J")),
        "{messages:?}"
    );
}

/// Serves one canned HTTP answer to every connection on 127.0.0.1, until the test ends.
fn canned_server(status: &str, body: &str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    port
}

#[test]
fn registry_error_bodies_cannot_drive_the_terminal() {
    let env = Env::new();
    let evil = "\u{1b}[2J\u{1b}]0;owned\u{7}\r\u{9b}1m\u{202e}gnp.exe";
    for body in [
        serde_json::json!({"errors": [{"code": "DENIED", "message": evil}]}).to_string(),
        format!("<html>{evil}</html>"),
    ] {
        let port = canned_server("400 Bad Request", &body);
        let out = env
            .otters()
            .args(["pull", &format!("127.0.0.1:{port}/x/y:1")])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert_no_raw_controls("pull stderr", &stderr);
        assert!(
            stderr.contains("\\u{1b}[2j") || stderr.contains("\\u{1b}[2J"),
            "{stderr}"
        );
    }
}

#[test]
fn human_output_is_capped_and_linear_in_findings() {
    let env = Env::new();
    let dir = env.dir.path();
    // 30,000 unused ARGs (30,000 warnings), and one 200 KB line holding 20,000 duplicate
    // capabilities: every finding on it would otherwise print the whole line.
    let mut s = String::from("FROM scratch\nNAME many\nMODEL m\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\nCAPABILITY");
    for _ in 0..20_000 {
        s.push_str(" note_save");
    }
    s.push('\n');
    for i in 0..30_000 {
        let _ = writeln!(s, "ARG unused{i}=1");
    }
    write(&dir.join("Agentfile"), &s);
    let started = Instant::now();
    // `--target none`: `note_save` is not portable to openotters L (AF232, tests/compat.rs).
    let out = otters_limited(
        &env,
        dir,
        LIMIT_KIB,
        &["lint", "--target", "none", "Agentfile"],
    );
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
    assert!(err.len() < 1 << 20, "{} bytes of human output", err.len());
    assert!(
        err.contains("… and 49799 more not shown here (the first 200 are); `--format concise` lists every finding"),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
    assert!(
        err.ends_with("30000 warnings, 19999 info in 1 file\n"),
        "{}",
        &err[err.len().saturating_sub(500)..]
    );
    assert!(err.contains("…"), "the long line is shortened");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // Every other format still lists every finding.
    let out = otters_limited(
        &env,
        dir,
        LIMIT_KIB,
        &[
            "lint",
            "--target",
            "none",
            "--format",
            "concise",
            "Agentfile",
        ],
    );
    assert_eq!(text(&out.stdout).lines().count(), 49_999);
}

/// Fragments that exercise the renderers: controls, bidi, CRLF, long runs, multi-byte text.
const FRAGMENTS: &[&str] = &[
    "\u{1b}[2J",
    "\r",
    "\r\n",
    "\n",
    "\t",
    "\u{202e}",
    "\u{2066}",
    "\u{9b}",
    "\u{7f}",
    "\0",
    "é✓",
    "${a}",
    "ARG a=${a}${a}\n",
    "CAPABILITY x x x\n",
    "CONTEXT A <<E\n",
    "E\n",
    "\"",
    "LABEL k=v\n",
    "FROM scratch\n",
];

fn fuzz_cases() -> u32 {
    std::env::var("OTTERS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// Checks and renders `text` in every format: nothing may panic, and the terminal formats may hold
/// no raw control character.
fn render_all(text: &str) {
    use otters_agentfile::check::{analyze, Options};
    use otters_agentfile::diagnostic::codes;
    use otters_agentfile::diagnostic::render::{
        checkstyle, concise, github, gitlab, human, json, junit, sarif, ColorChoice,
    };
    use otters_agentfile::diagnostic::SourceFile;
    let file = SourceFile::new("fuzz\u{1b}", text);
    let analysis = analyze(&file, &Options::default());
    let reports = vec![(file, analysis.diagnostics)];
    for (what, out) in [
        ("human", human(&reports, codes::RULES, ColorChoice::Never)),
        ("concise", concise(&reports)),
        ("github", github(&reports, codes::RULES)),
        ("json", json(&reports)),
        ("sarif", sarif(&reports, codes::RULES)),
        ("gitlab", gitlab(&reports)),
        ("junit", junit(&reports, codes::RULES)),
        ("checkstyle", checkstyle(&reports)),
    ] {
        assert_no_raw_controls(what, &out);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: fuzz_cases(),
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    #[test]
    fn renderers_never_panic_or_leak_controls(
        pieces in proptest::collection::vec((0usize..FRAGMENTS.len(), "[ -~]{0,12}", 0usize..700), 1..40),
    ) {
        let mut text = String::from("FROM scratch\n");
        for (frag, filler, run) in pieces {
            text.push_str(FRAGMENTS[frag]);
            text.push_str(&filler);
            // Now and then a line long enough to be shortened.
            if run > 600 {
                text.push_str(&"w ".repeat(run));
            }
        }
        render_all(&text);
    }

    #[test]
    fn renderers_handle_arbitrary_text(text in "(?s).{0,300}") {
        render_all(&text);
    }
}

/// Shapes that made parts of the front end quadratic or worse, each about 1 MiB. Before the fixes
/// the first took days (pest retried a look-ahead over the rest of a run of blanks at every blank)
/// and the second minutes; now each takes about a second of CPU in a debug build. The bound is
/// on CPU time, not wall time (a loaded machine stretched wall time past a 30 s bound while the
/// CPU used stayed near 5 s), and generous on purpose; a regression to quadratic blows through it.
#[test]
fn hostile_shapes_lint_in_linear_time() {
    let env = Env::new();
    let dir = env.dir.path();
    let digest = "r@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let mut pairs = format!("FROM scratch\nRUNTIME {digest}\n");
    for i in 0..25_000 {
        let _ = writeln!(pairs, "CONFIG k{i}=1\nENV RUNTIME_K{i}=1");
    }
    let mut sups = String::from("FROM scratch\n");
    for _ in 0..30_000 {
        sups.push_str("# otters:ignore AF204 r\nARG a=1\n");
    }
    let shapes = [
        (
            "blank run in a bad line",
            format!("FROM scratch\nFORM{}y\n", " ".repeat(1_000_000)),
        ),
        (
            "blank run after a LABEL",
            format!("FROM scratch\nLABEL a=b{}y\n", "\t".repeat(1_000_000)),
        ),
        (
            "openers in a bad line",
            format!("FROM scratch\nFORM{}\n", " <<a".repeat(250_000)),
        ),
        ("CONFIG and RUNTIME_ ENV pairs", pairs),
        (
            "MOUNTs",
            format!("FROM scratch\n{}", "MOUNT /a ro\n".repeat(85_000)),
        ),
        ("suppressions", sups),
    ];
    for (what, agentfile) in shapes {
        assert!(agentfile.len() <= 1 << 20, "{what}: {}", agentfile.len());
        write(&dir.join("Agentfile"), &agentfile);
        // Memory is linear too, but a finding on every line costs about 1.3 KB each (85,000
        // AF116 findings peak at 115 MB), hence a wider limit than for the expansion bomb. The
        // portability lints would add a second finding per MOUNT; they are off here, since this
        // test is about the shapes, not the number of rules.
        let out = otters_bounded(
            &env,
            dir,
            256 * 1024,
            30,
            &["lint", "--target", "none", "--format", "json", "Agentfile"],
        );
        // Past 30 s of CPU the kernel ends the process with SIGXCPU: no exit code.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{what}: exit {:?} (a signal means the 30 s CPU bound was hit): {}",
            out.status,
            text(&out.stderr)
        );
        crate::support::cli::json(&text(&out.stdout));
    }
}

/// Image annotations come from whoever built the image (or the registry that served it):
/// `otters inspect` and `otters images` must not print them raw.
#[test]
fn inspect_escapes_image_annotations() {
    let env = Env::new();
    let dir = env.dir.path();
    write(
        &dir.join("insp/Agentfile"),
        "FROM scratch\nNAME insp\nMODEL m\nRUNTIME r@sha256:0000000000000000000000000000000000000000000000000000000000000000\nLABEL evil=\"\\u001b[2J\\u202eboom\"\nLABEL org.opencontainers.image.created=\"\\u001b]0;title\\u0007\"\n",
    );
    let out = env
        .otters()
        .args(["build", "--offline", "--allow-unpinned", "insp"])
        .current_dir(dir)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("AF219"), "the escapes are linted: {err}");
    for args in [
        &["inspect", "insp:latest"][..],
        &["inspect", "--format", "json", "insp:latest"][..],
        &["images"][..],
    ] {
        let out = env.otters().args(args).current_dir(dir).output().unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_no_raw_controls(&format!("{args:?}"), &stdout);
        assert!(
            stdout.contains("[2J") || args == ["images"],
            "{args:?}: {stdout}"
        );
    }
}

/// `lint -r` over a repository of finding-dense files: the streaming formats print each file's
/// findings and drop them before checking the next, so memory is that of one file, not of all.
/// (Five such files held together need more than the limit: `--format json` aborts under it.)
#[test]
fn recursive_lint_keeps_one_file_of_findings_at_a_time() {
    let env = Env::new();
    let dir = env.dir.path();
    for i in 0..5 {
        write(
            &dir.join(format!("repo/agent{i}/Agentfile")),
            format!("FROM scratch\n{}", "X\n".repeat(25_000)),
        );
    }
    for format in ["concise", "human"] {
        let out = otters_limited(
            &env,
            dir,
            80 * 1024,
            &["lint", "-r", "--format", format, "repo"],
        );
        let err = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{format}: {}",
            &err[err.len().saturating_sub(500)..]
        );
        if format == "concise" {
            // One AF003 per bad line, and one AF209 per file (no RUNTIME, MODEL or NAME).
            assert_eq!(text(&out.stdout).lines().count(), 125_005);
        } else {
            assert!(
                err.ends_with("125000 errors, 5 warnings in 5 files\n"),
                "{}",
                &err[err.len().saturating_sub(300)..]
            );
        }
    }
}
