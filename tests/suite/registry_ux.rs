//! What a user sees when resolution, registries and credentials go wrong (issue 9): offline
//! builds FROM a parent in the local store, one code per failure (an unreadable lock, an
//! unreachable registry, a missing platform), `--offline` advice only where it would work, push
//! with a stale password, `otters login` on a terminal and through a credential store, and the
//! provider-key warning of `otters run`. Every test runs the real binary, against a real
//! `docker-registry` where a registry is involved. What users see is pinned whole
//! (`snapshots/registry_ux/`).

use crate::support::cli::{flat, Env};
use crate::support::images::{self, BinPrefix};
use crate::support::registry::{free_port, Registry};
use crate::support::snap::Transcript;
use std::path::{Path, PathBuf};

const RUNTIME: &str = "#!/bin/sh\necho runtime\n";

/// Writes an Agentfile (and `files`) into `env.dir/name`; returns the context.
fn context(env: &Env, name: &str, agentfile: &str, files: &[(&str, &str)]) -> PathBuf {
    let ctx = env.dir.path().join(name);
    crate::support::write(&ctx.join("Agentfile"), agentfile);
    for (path, body) in files {
        crate::support::write(&ctx.join(path), body);
    }
    ctx
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Pushes a runtime image for this host as an index (with an s390x/ppc64le sibling) under
/// `REG/name:tag`; returns the host manifest's digest.
fn push_runtime_index(env: &Env, reg: &Registry, name: &str, tag: &str) -> String {
    let dir = env.dir.path().join(format!("layouts/{name}-{tag}"));
    let (_, digest) = images::push_bin_index(
        &dir,
        &format!("{}/{name}:{tag}", reg.addr),
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        Some("test runtime"),
    );
    digest
}

/// Pushes a single-manifest (no index) image for this host's platform only.
fn push_runtime_single(env: &Env, reg: &Registry, name: &str, tag: &str) -> String {
    let dir = env.dir.path().join(format!("layouts/{name}-{tag}-single"));
    let digest = images::bin_single(
        &dir,
        tag,
        "runtime",
        RUNTIME.as_bytes(),
        BinPrefix::Io,
        None,
    );
    images::skopeo_push(&dir, tag, &format!("{}/{name}:{tag}", reg.addr), None);
    digest
}

/// An architecture no test image is built for.
fn foreign_arch() -> &'static str {
    if crate::support::host_arch() == "riscv64" {
        "mips64le"
    } else {
        "riscv64"
    }
}

// ---- item 5: offline builds FROM a parent in the local store ------------------------------

#[test]
fn offline_child_of_a_local_parent_builds_and_reuses_its_layers() {
    let env = Env::new();
    let port = free_port(); // nothing listens here
    let parent_ref = format!("127.0.0.1:{port}/lib/parent:1");
    let parent_ctx = context(
        &env,
        "parent",
        "FROM scratch\nNAME parent\nMODEL anthropic/claude-test\nADD notes.txt\nCONTEXT STYLE file://style.md\n",
        &[("notes.txt", "parent notes\n"), ("style.md", "be terse\n")],
    );
    env.ok(&["build", "-q", "-t", &parent_ref, s(&parent_ctx)]);
    let child_ctx = context(
        &env,
        "child",
        &format!("FROM {parent_ref}\nNAME child\nADD more.txt\n"),
        &[("more.txt", "child notes\n")],
    );

    // --offline: no lock, but the parent is in the store under that tag.
    let (ok, out, err) = env.run(&["build", "-q", "--offline", "-t", "child:1", s(&child_ctx)]);
    assert!(ok, "offline child build failed:\n{err}");
    assert!(out.trim().starts_with("sha256:"), "{out}");
    assert!(!err.contains("AF405"), "{err}");
    assert!(
        !child_ctx.join("Agentfile.lock").exists(),
        "an offline build wrote a lock"
    );
    // The child carries the parent's layers by digest, and the merged model.
    let titles = |r: &str| -> Vec<(String, String)> {
        let v = crate::support::cli::json(&env.ok(&["inspect", "--format", "json", r]));
        v["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .map(|l| {
                (
                    l["title"].as_str().unwrap_or_default().to_owned(),
                    l["digest"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let parent_layers = titles(&parent_ref);
    let child_layers = titles("child:1");
    for title in ["notes.txt", "STYLE.md"] {
        let p = parent_layers.iter().find(|(t, _)| t == title);
        assert!(p.is_some(), "parent has no {title}: {parent_layers:?}");
        assert!(
            child_layers.iter().any(|l| Some(l) == p),
            "child does not reuse {title}: {child_layers:?}"
        );
    }
    assert!(child_layers.iter().any(|(t, _)| t == "more.txt"));

    // With --allow-unpinned too (what `.ci/run` passes): the same image.
    let (ok, out2, err) = env.run(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        "child:2",
        s(&child_ctx),
    ]);
    assert!(ok, "{err}");
    assert_eq!(out2.trim(), out.trim());

    // Online, the registry cannot be reached: AF410 (not "image not found"), and the advice
    // points at the local copy and --offline.
    let mut t = Transcript::on(&env);
    t.filter(format!("127.0.0.1:{port}"), "[DOWN]");
    let (ok, ..) = t.run(&env, &["build", "-q", s(&child_ctx)]);
    assert!(!ok);
    t.assert("registry_ux", "parent_unreachable");
}

#[test]
fn offline_parent_missing_everywhere_never_advises_the_flag_already_given() {
    let env = Env::new();
    let ctx = context(
        &env,
        "child",
        "FROM 127.0.0.1:1/lib/gone:1\nNAME child\n",
        &[],
    );
    let mut t = Transcript::on(&env);
    for args in [
        vec!["build", "--offline", s(&ctx)],
        vec!["build", "--offline", "--allow-unpinned", s(&ctx)],
    ] {
        let (ok, _, err) = t.run(&env, &args);
        assert!(!ok);
        assert!(
            !flat(&err).contains("pass --allow-unpinned"),
            "{args:?}: {err}"
        );
    }
    t.assert("registry_ux", "parent_missing_offline");
}

// ---- item 8: an unreadable lock and a client that cannot be set up have their own codes ----

#[test]
fn unreadable_lock_is_af409_and_a_bad_client_setting_af410() {
    let env = Env::new();
    let ctx = context(
        &env,
        "a",
        "FROM scratch\nNAME a\nRUNTIME 127.0.0.1:1/rt:1\n",
        &[("Agentfile.lock", "<<<<<<< HEAD\n{\"version\": 1}\n")],
    );
    let mut t = Transcript::on(&env);
    for args in [
        vec!["build", "--offline", s(&ctx)],
        vec!["build", s(&ctx)],
        vec!["lock", s(&ctx)],
    ] {
        let (ok, ..) = t.run(&env, &args);
        assert!(!ok, "{args:?}");
    }
    t.assert("registry_ux", "lock_unreadable");
    // `otters explain` knows the code.
    let page = env.ok(&["explain", "AF409"]);
    assert!(page.contains("lock-unreadable"), "{page}");

    // The HTTP client cannot be set up (a timeout that is not a number): AF410, not AF401.
    let ok_ctx = context(
        &env,
        "b",
        "FROM scratch\nNAME b\nRUNTIME 127.0.0.1:1/rt:1\n",
        &[],
    );
    let mut cmd = Transcript::otters(&env);
    cmd.env("OTTERS_REGISTRY_TIMEOUT", "soon");
    let mut t = Transcript::on(&env);
    let (ok, _, err) = t.run_cmd(cmd, &["build", s(&ok_ctx)]);
    assert!(!ok);
    assert!(
        !err.contains("--offline"),
        "no lock, yet --offline is advised: {err}"
    );
    t.assert("registry_ux", "client_setting_bad");
}

// ---- item 16: an unreachable registry is AF410; --offline is advised only when it would work --

#[test]
fn unreachable_registry_is_af410_with_offline_advice_only_when_the_lock_pins_it() {
    let env = Env::new();
    let mut reg = Registry::start();
    push_runtime_index(&env, &reg, "rt", "1");
    let a = reg.addr.clone();
    let pinned = context(
        &env,
        "pinned",
        &format!("FROM scratch\nNAME p\nRUNTIME {a}/rt:1\n"),
        &[],
    );
    env.ok(&["build", "-q", s(&pinned)]);
    assert!(pinned.join("Agentfile.lock").exists());
    let unpinned = context(
        &env,
        "unpinned",
        &format!("FROM scratch\nNAME u\nRUNTIME {a}/rt:1\n"),
        &[],
    );

    // Connection refused.
    reg.kill();
    let mut t = Transcript::on(&env);
    t.filter(a.clone(), "[REG]");
    let (ok, ..) = t.run(&env, &["build", "-q", s(&pinned)]);
    assert!(!ok);
    let (ok, _, err) = t.run(&env, &["build", "-q", s(&unpinned)]);
    assert!(!ok);
    let err = flat(&err);
    assert!(
        !err.contains("with --offline") && !err.contains("build --offline"),
        "{err}"
    );
    t.assert("registry_ux", "registry_unreachable");
    // What it advised works.
    let (ok, _, e) = env.run(&["build", "-q", "--offline", s(&pinned)]);
    assert!(ok, "{e}");

    // A host name that does not resolve (`.invalid` never does, RFC 2606).
    let dns = context(
        &env,
        "dns",
        "FROM scratch\nNAME d\nRUNTIME registry.otters-test.invalid/rt:1\n",
        &[],
    );
    let out = env
        .otters()
        .env("OTTERS_REGISTRY_TIMEOUT", "2")
        .args(["build", "-q", s(&dns)])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success());
    assert!(err.contains("AF410") && !err.contains("AF401"), "{err}");
    assert!(err.contains("registry.otters-test.invalid"), "{err}");
    assert!(!err.contains("build --offline"), "{err}");
}

// ---- item 11: a platform the image does not have fails the build ----------------------------

#[test]
fn build_for_a_platform_the_images_lack_fails_naming_what_they_have() {
    let env = Env::new();
    let reg = Registry::start();
    let a = &reg.addr;
    push_runtime_single(&env, &reg, "single", "1");
    push_runtime_index(&env, &reg, "multi", "1");
    let host = format!("linux/{}", crate::support::host_arch());
    let target = format!("linux/{}", foreign_arch());

    let mut t = Transcript::on(&env);
    t.registry(&reg)
        .filter(host.clone(), "linux/[HOST]")
        .filter(target.clone(), "linux/[OTHER]");
    for name in ["single", "multi"] {
        let ctx = context(
            &env,
            name,
            &format!("FROM scratch\nNAME {name}\nRUNTIME {a}/{name}:1\n"),
            &[],
        );
        let (ok, ..) = t.run(&env, &["build", "--platform", &target, s(&ctx)]);
        assert!(!ok, "{name}");
        assert!(
            !ctx.join("Agentfile.lock").exists(),
            "{name}: a lock was written"
        );
        assert!(
            !env.ok(&["images"]).contains(&format!("{name}:latest")),
            "{name}: an image was stored"
        );
        // The platform the image has builds.
        env.ok(&["build", "-q", "--platform", &host, s(&ctx)]);
    }

    // An offline build for another platform than the lock's is refused, not pinned wrongly.
    let ctx = env.dir.path().join("single");
    let (ok, ..) = t.run(
        &env,
        &["build", "--offline", "--platform", &target, s(&ctx)],
    );
    assert!(!ok);
    t.assert("registry_ux", "platform_missing");
}

// ---- item 9: stale passwords, the login prompt, credential stores ---------------------------

/// Builds a small agent into `env`'s store tagged `tag` (offline: it names no image).
fn build_agent(env: &Env, tag: &str) -> String {
    let ctx = context(
        env,
        "agent",
        "FROM scratch\nNAME agent\nMODEL anthropic/claude-test\n",
        &[],
    );
    env.ok(&["build", "-q", "-t", tag, s(&ctx)])
        .trim()
        .to_owned()
}

#[test]
fn push_with_a_stale_password_says_the_credentials_were_refused() {
    let reg = Registry::start_basic("alice", "new-password");
    let env = Env::new();
    let tag = format!("{}/team/agent:1", reg.addr);
    build_agent(&env, &tag);
    reg.docker_config(&env.docker(), "alice", "old-password");
    let mut t = Transcript::on(&env);
    t.registry(&reg);
    let (ok, _, err) = t.run(&env, &["push", &tag]);
    assert!(!ok);
    assert!(
        !err.contains("old-password"),
        "the password leaked into the message: {err}"
    );
    // The same at pull.
    let (ok, ..) = t.run(&env, &["pull", &tag]);
    assert!(!ok);
    t.assert("registry_ux", "stale_password");
    reg.docker_config(&env.docker(), "alice", "new-password");
    env.ok(&["push", "-q", &tag]);
}

/// A python driver that runs a command on a new pseudo-terminal, answers prompts and reports
/// what the terminal showed, the exit code and whether echo is on again at the end.
const PTY_DRIVER: &str = r#"
import json, os, pty, select, subprocess, sys, termios, time
steps = json.loads(sys.argv[1])
argv = sys.argv[2:]
master, slave = pty.openpty()
p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
seen = b""
deadline = time.time() + 30
def read_until(marker):
    global seen
    while marker.encode() not in seen:
        if time.time() > deadline:
            return False
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            seen += chunk
    return True
for wait_for, send in steps:
    if not read_until(wait_for):
        break
    time.sleep(0.1)
    os.write(master, send.encode())
try:
    rc = p.wait(timeout=max(1, deadline - time.time()))
except subprocess.TimeoutExpired:
    p.kill()
    rc = -9
while True:
    r, _, _ = select.select([master], [], [], 0.2)
    if not r:
        break
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
echo = bool(termios.tcgetattr(slave)[3] & termios.ECHO)
print(json.dumps({"rc": rc, "screen": seen.decode("utf-8", "replace"), "echo": echo}))
"#;

/// Runs `otters args…` (with `env`'s home and docker config) on a pty, answering `steps`
/// (`(wait for this text, then type this)`). Returns (exit code, screen with whitespace
/// collapsed, echo on at the end).
fn on_a_terminal(env: &Env, args: &[&str], steps: &[(&str, &str)]) -> Option<(i64, String, bool)> {
    let driver = env.dir.path().join("pty_driver.py");
    crate::support::write(&driver, PTY_DRIVER);
    let steps = serde_json::to_string(steps).expect("json");
    let bin = assert_cmd::cargo::cargo_bin("otters");
    let out = std::process::Command::new("python3")
        .arg(&driver)
        .arg(&steps)
        .arg(&bin)
        .args(args)
        .env("OTTERS_HOME", env.home())
        .env("DOCKER_CONFIG", env.docker())
        .env("NO_COLOR", "1")
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => panic!("pty driver failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            crate::support::tools::skip("login on a terminal", &format!("python3 cannot run: {e}"));
            return None;
        }
    };
    let v = crate::support::cli::json(&String::from_utf8_lossy(&out.stdout));
    Some((
        v["rc"].as_i64().unwrap_or(-1),
        flat(v["screen"].as_str().unwrap_or_default()),
        v["echo"].as_bool().unwrap_or(false),
    ))
}

#[test]
fn login_on_a_terminal_asks_for_user_and_password_without_echo() {
    let reg = Registry::start_basic("alice", "pty-s3cret");
    let env = Env::new();
    let Some((rc, screen, echo)) = on_a_terminal(
        &env,
        &["login", &reg.addr],
        &[
            ("Username for", "alice\r"),
            ("Password:", "pty-s3cretX\x7f\r"),
        ],
    ) else {
        return;
    };
    assert_eq!(rc, 0, "{screen}");
    assert!(
        screen.contains(&format!("Username for {}: alice", reg.addr)),
        "{screen}"
    );
    assert!(screen.contains("Password:"), "{screen}");
    assert!(
        !screen.contains("pty-s3cret"),
        "the password was echoed: {screen}"
    );
    assert!(screen.contains("login succeeded"), "{screen}");
    assert!(echo, "the terminal was left without echo");
    // The credentials work.
    let tag = format!("{}/team/agent:1", reg.addr);
    build_agent(&env, &tag);
    env.ok(&["push", "-q", &tag]);

    // A wrong password typed on the terminal: refused, nothing stored, echo back on.
    let env2 = Env::new();
    let Some((rc, screen, echo)) = on_a_terminal(
        &env2,
        &["login", "-u", "alice", &reg.addr],
        &[("Password:", "nope\r")],
    ) else {
        return;
    };
    assert_ne!(rc, 0, "{screen}");
    assert!(
        screen.contains("refused credentials for user alice"),
        "{screen}"
    );
    assert!(!screen.contains("nope"), "{screen}");
    assert!(echo);
    assert!(!env2.docker().join("config.json").exists());

    // ^C at the prompt: aborted, nothing stored, echo back on.
    let Some((rc, screen, echo)) = on_a_terminal(
        &env2,
        &["login", "-u", "alice", &reg.addr],
        &[("Password:", "half\x03")],
    ) else {
        return;
    };
    assert_ne!(rc, 0, "{screen}");
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(echo, "^C left the terminal without echo");
    assert!(!env2.docker().join("config.json").exists());

    // Not a terminal and no password: a clear error, no hang.
    let mut cmd = Transcript::otters(&env2);
    cmd.write_stdin("");
    let mut t = Transcript::on(&env2);
    t.registry(&reg);
    let (ok, ..) = t.run_cmd(cmd, &["login", "-u", "alice", &reg.addr]);
    assert!(!ok);
    t.assert("registry_ux", "login_without_a_terminal");
}

#[test]
fn login_password_stdin_refuses_more_than_64_kib() {
    let reg = Registry::start_basic("alice", "s3cret");
    let env = Env::new();
    // A file piped in by mistake (1 MiB): refused by size, not read whole, nothing stored.
    let mut cmd = Transcript::otters(&env);
    cmd.write_stdin(vec![b'x'; 1 << 20]);
    let mut t = Transcript::on(&env);
    t.registry(&reg);
    let (ok, ..) = t.run_cmd(
        cmd,
        &["login", "-u", "alice", "--password-stdin", &reg.addr],
    );
    assert!(!ok);
    t.assert("registry_ux", "login_password_too_long");
    assert!(!env.docker().join("config.json").exists());
    // 64 KiB exactly is still read (and then refused by the registry, as a wrong password).
    let out = env
        .otters()
        .args(["login", "-u", "alice", "--password-stdin", &reg.addr])
        .write_stdin(vec![b'x'; 64 * 1024])
        .output()
        .expect("run");
    let err = flat(&String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("more than 64 KiB"), "{err}");
}

/// A credential helper that records what it is given: `store` keeps the JSON, `get` returns it,
/// `erase` records the server and forgets it.
const FAKE_HELPER: &str = r#"#!/bin/sh
d="$(dirname "$0")"
case "$1" in
  store) cat > "$d/stored.json" ;;
  get) cat > "$d/asked.txt"
       if [ -f "$d/stored.json" ]; then cat "$d/stored.json"; else echo "credentials not found in native keychain"; exit 1; fi ;;
  erase) cat > "$d/erased.txt"; rm -f "$d/stored.json" ;;
  *) exit 2 ;;
esac
"#;

#[test]
fn login_stores_through_the_configured_credential_store() {
    use std::os::unix::fs::PermissionsExt as _;
    let reg = Registry::start_basic("alice", "helper-s3cret");
    let env = Env::new();
    let bin = env.dir.path().join("helper-bin");
    let helper = bin.join("docker-credential-test");
    crate::support::write(&helper, FAKE_HELPER);
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // A stale inline login for the same registry must not shadow the store afterwards.
    crate::support::write(
        &env.docker().join("config.json"),
        format!(
            r#"{{"credsStore":"test","auths":{{"{}":{{"auth":"YWxpY2U6b2xk"}}}},"other":1}}"#,
            reg.addr
        ),
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t = std::cell::RefCell::new(Transcript::on(&env));
    t.borrow_mut().registry(&reg);
    let run = |args: &[&str], stdin: &str| {
        let mut cmd = Transcript::otters(&env);
        cmd.env("PATH", &path).write_stdin(stdin.to_owned());
        let (ok, _, err) = t.borrow_mut().run_cmd(cmd, args);
        (ok, flat(&err))
    };
    let (ok, err) = run(
        &["login", "-u", "alice", "--password-stdin", &reg.addr],
        "helper-s3cret\n",
    );
    assert!(ok, "{err}");
    let stored: serde_json::Value = serde_json::from_slice(
        &std::fs::read(bin.join("stored.json")).expect("the helper got nothing"),
    )
    .expect("helper input is JSON");
    assert_eq!(
        stored,
        serde_json::json!({"ServerURL": reg.addr, "Username": "alice", "Secret": "helper-s3cret"})
    );
    let config = std::fs::read_to_string(env.docker().join("config.json")).expect("config");
    assert!(!config.contains("helper-s3cret"), "{config}");
    assert!(
        !config.contains("YWxpY2U6b2xk"),
        "the stale inline auth remains: {config}"
    );
    let doc: serde_json::Value = serde_json::from_str(&config).expect("json");
    assert_eq!(doc["auths"][&reg.addr], serde_json::json!({}));
    assert_eq!(doc["credsStore"], "test");
    assert_eq!(doc["other"], 1);

    // A push reads them back through the helper.
    let tag = format!("{}/team/agent:1", reg.addr);
    build_agent(&env, &tag);
    let (ok, err) = run(&["push", "-q", &tag], "");
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(bin.join("asked.txt"))
            .expect("get was called")
            .trim(),
        reg.addr
    );

    // Logout erases it from the store too.
    let (ok, err) = run(&["logout", &reg.addr], "");
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(bin.join("erased.txt"))
            .expect("erase was called")
            .trim(),
        reg.addr
    );
    assert!(!bin.join("stored.json").exists());

    // A helper that is not installed: a clear error naming it; nothing half-written.
    crate::support::write(
        &env.docker().join("config.json"),
        r#"{"credsStore":"absent"}"#,
    );
    let (ok, err) = run(
        &["login", "-u", "alice", "--password-stdin", &reg.addr],
        "helper-s3cret\n",
    );
    assert!(!ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(env.docker().join("config.json")).expect("config"),
        r#"{"credsStore":"absent"}"#
    );
    // A helper name that is a path is refused before anything runs.
    crate::support::write(
        &env.docker().join("config.json"),
        r#"{"credsStore":"../../tmp/x"}"#,
    );
    let (ok, err) = run(
        &["login", "-u", "alice", "--password-stdin", &reg.addr],
        "helper-s3cret\n",
    );
    assert!(!ok, "{err}");
    t.into_inner().assert("registry_ux", "credential_store");
}

// ---- item 18: `otters run` warns when the provider key is missing -------------------------

#[test]
fn run_warns_when_the_model_provider_key_is_unset() {
    let env = Env::new();
    let ctx = context(
        &env,
        "agent",
        "FROM scratch\nNAME keyed\nRUNTIME 127.0.0.1:1/rt:1\nMODEL anthropic/claude-test\n",
        &[],
    );
    env.ok(&[
        "build",
        "-q",
        "--offline",
        "--allow-unpinned",
        "-t",
        "keyed:1",
        s(&ctx),
    ]);
    // Each dry run's stderr in a transcript (the plan on stdout is `run`'s to pin); the
    // environment holds a key only when set here.
    let t = std::cell::RefCell::new(Transcript::on(&env));
    let run = |extra: &[&str], key: Option<(&str, &str)>| {
        let mut cmd = Transcript::otters(&env);
        if let Some((k, v)) = key {
            cmd.env(k, v);
        }
        let mut args = vec!["run", "--dry-run", "keyed:1"];
        args.extend_from_slice(extra);
        let (ok, _, err) = t.borrow_mut().run_cmd_stderr(cmd, &args);
        assert!(ok, "{err}");
        err
    };
    run(&[], None);
    // Set but empty is not passed on either.
    run(&[], Some(("ANTHROPIC_API_KEY", "")));
    let err = run(&[], Some(("ANTHROPIC_API_KEY", "sk-test")));
    assert!(!err.contains("sk-test"), "{err}");
    // --model switches the provider, and the key it needs.
    run(
        &["--model", "openai/gpt-4o"],
        Some(("ANTHROPIC_API_KEY", "sk-test")),
    );
    // A local provider needs none.
    run(&["--model", "ollama/llama3"], None);
    t.into_inner().assert("registry_ux", "provider_key");
}

/// `credsStore` becomes part of a program name: a value that names a path is refused before
/// anything runs, on the read path (pull, push) as on login; also when an empty `credHelpers`
/// entry for the registry would make the credential crate fall back to it (issue 17.10).
#[test]
fn a_credential_store_naming_a_path_is_never_executed() {
    use std::os::unix::fs::PermissionsExt as _;
    // Credentials are looked up when the registry asks for them.
    let reg = Registry::start_basic("alice", "pw");
    let path_like = "x/../evil/docker-credential-x";
    for config in [
        format!(r#"{{"credsStore":"{path_like}"}}"#),
        format!(
            r#"{{"credHelpers":{{"{}":""}},"credsStore":"{path_like}"}}"#,
            reg.addr
        ),
    ] {
        let env = Env::new();
        let evil_dir = env.dir.path().join("evil");
        let marker = evil_dir.join("ran");
        let evil = evil_dir.join("docker-credential-x");
        crate::support::write(&evil, format!("#!/bin/sh\ntouch {}\n", marker.display()));
        std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // `docker-credential-` + `x/../evil/docker-credential-x` is a relative path that resolves
        // (from the working directory) to the planted program.
        std::fs::create_dir_all(env.dir.path().join("docker-credential-x")).expect("mkdir");
        crate::support::write(&env.docker().join("config.json"), &config);
        let out = env
            .otters()
            .current_dir(env.dir.path())
            .args(["pull", &format!("{}/team/agent:1", reg.addr)])
            .output()
            .expect("run");
        let err = flat(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{config}: {err}");
        assert!(
            err.contains("credsStore") || err.contains("credential helper"),
            "{config}: {err}"
        );
        assert!(
            !marker.exists(),
            "{config}: a path-like credsStore was executed"
        );
    }
}
