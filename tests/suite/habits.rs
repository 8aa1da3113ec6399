//! Docker habits through the real binary (issue 12): tags validated before anything is written,
//! and the flags and commands users of `docker buildx`, `docker image` and `oras` expect.

use crate::support::cli::{flat, ok, Env};
use crate::support::fixture;
use crate::support::snap::Transcript;
use std::fs;
use std::path::{Path, PathBuf};

/// A copy of `testdata/build/minimal` (FROM scratch, a RUNTIME, NAME tiny) in `env`'s dir.
fn minimal(env: &Env) -> PathBuf {
    let ctx = env.dir.path().join("ctx");
    fs::create_dir_all(&ctx).unwrap();
    fs::copy(fixture("minimal").join("Agentfile"), ctx.join("Agentfile")).unwrap();
    ctx
}

fn index_of(store: &Path) -> String {
    fs::read_to_string(store.join("index.json")).unwrap()
}

#[test]
fn bad_tags_are_refused_before_anything_is_written() {
    // The snapshot's name, the tag, the spelling the error suggests.
    let cases = [
        ("upper_case", "Meteo:1.0", "meteo:1.0"),
        ("empty_path_component", "meteo::1", "meteo:1"),
        ("tag_starts_with_a_dash", "meteo:-1", "meteo:1"),
        ("upper_case_repository", "Org/Meteo", "org/meteo"),
    ];
    for (name, tag, fix) in cases {
        let env = Env::new();
        let ctx = minimal(&env);
        // Not offline: without the early check, resolution would run and could write a lock.
        let mut t = Transcript::on(&env);
        let (built, _, err) = t.run(
            &env,
            &[
                "build",
                "--allow-unpinned",
                "-t",
                "ok:1",
                "-t",
                tag,
                ctx.to_str().unwrap(),
            ],
        );
        assert!(!built, "{tag}: {err}");
        t.assert("habits", &format!("bad_tag_{name}"));
        assert!(!env.home().exists(), "{tag}: the store was created");
        assert!(
            !ctx.join("Agentfile.lock").exists(),
            "{tag}: a lock was written"
        );
        // The suggested spelling builds.
        let digest = ok(env
            .otters()
            .args(["build", "--offline", "--allow-unpinned", "-q", "-t", fix])
            .arg(&ctx));
        assert!(digest.starts_with("sha256:"), "{fix}: {digest}");
        assert!(ok(env.otters().args(["images"])).contains(fix.split(':').next().unwrap()));
    }
}

#[test]
fn tag_refuses_a_bad_target_and_keeps_the_index() {
    let env = Env::new();
    let ctx = minimal(&env);
    ok(env
        .otters()
        .args([
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            "-t",
            "meteo:1.0",
        ])
        .arg(&ctx));
    let before = index_of(&env.store());
    crate::support::snap::snapshot(
        "habits",
        "tag_bad_target",
        &env,
        &["tag", "meteo:1.0", "Meteo:2"],
    );
    assert_eq!(index_of(&env.store()), before);
    ok(env.otters().args(["tag", "meteo:1.0", "meteo:2"]));
    assert!(index_of(&env.store()).contains("meteo:2"));
}

fn otters_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("otters")
}

#[test]
fn completion_scripts_for_every_shell_and_bash_completes_subcommands() {
    let env = Env::new();
    let markers = [
        ("bash", "complete -F _otters"),
        ("zsh", "#compdef otters"),
        ("fish", "complete -c otters"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[otters]"),
    ];
    for (shell, marker) in markers {
        let script = ok(env.otters().args(["completion", shell]));
        assert!(script.contains(marker), "{shell}: {script:.300}");
        assert!(
            script.contains("build") && script.contains("--build-arg"),
            "{shell}"
        );
    }
    // bash loads the script and completes `otters bu` to `build` and `otters build --no-c`.
    let script = format!(
        "source <('{}' completion bash) && complete -p otters && \
         COMP_WORDS=(otters bu); COMP_CWORD=1; _otters otters bu otters; echo \"[${{COMPREPLY[*]}}]\"; \
         COMP_WORDS=(otters build --no-c); COMP_CWORD=2; _otters otters --no-c build; echo \"[${{COMPREPLY[*]}}]\"",
        otters_bin().display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("-F _otters") && text.contains("otters"),
        "{text}"
    );
    assert!(text.contains("[build]"), "{text}");
    assert!(text.contains("[--no-cache]"), "{text}");
    let bad = env.otters().args(["completion", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values"));
}

#[test]
fn version_as_text_and_json() {
    let env = Env::new();
    let text = ok(env.otters().arg("version"));
    assert!(
        text.starts_with(&format!("otters {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let v = crate::support::cli::json(&ok(env.otters().args(["version", "--format", "json"])));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["os"], std::env::consts::OS);
    assert_eq!(v["arch"], std::env::consts::ARCH);
    assert_eq!(
        v["platform"],
        format!("linux/{}", crate::support::host_arch())
    );
    assert!(v["features"].is_array(), "{v}");
    assert!(!env.home().exists(), "version touched the store");
}

#[test]
fn man_pages_one_per_command_readable_by_man() {
    let env = Env::new();
    let dir = env.dir.path().join("man/man1");
    let listed = ok(env
        .otters()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .arg("manpages")
        .arg(&dir));
    let mut names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(listed.lines().count(), names.len(), "{listed}");
    for want in [
        "otters.1",
        "otters-build.1",
        "otters-completion.1",
        "otters-version.1",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for hidden in ["otters-help.1", "otters-manpages.1"] {
        assert!(!names.iter().any(|n| n == hidden), "{hidden} written");
    }
    let page = fs::read_to_string(dir.join("otters-build.1")).unwrap();
    assert!(
        page.contains(".TH otters-build 1 2023-11-14"),
        "{page:.200}"
    );
    assert!(page.contains("\\-\\-build\\-arg"), "{page:.400}");
    // `man -l` renders it (when man is installed; groff is what it runs).
    let man = std::process::Command::new("man")
        .env("MANWIDTH", "100")
        .arg("-l")
        .arg(dir.join("otters-build.1"))
        .output();
    if let Ok(out) = man {
        // Drop overstrike bold (`X\bX`) as `col -b` would.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\u{8}' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains("SYNOPSIS otters build [-f|--file]"), "{text}");
        assert!(
            text.contains("--build-arg <K=V> Set a build argument"),
            "{text}"
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    }
}

/// `otters build --offline --allow-unpinned -q ARGS… CTX` in `env`; returns the digest.
fn build(env: &Env, ctx: &Path, args: &[&str]) -> String {
    ok(env
        .otters()
        .args(["build", "--offline", "--allow-unpinned", "-q"])
        .args(args)
        .arg(ctx))
    .trim()
    .to_owned()
}

#[test]
fn iidfile_and_metadata_file_hold_the_digest_and_names() {
    let env = Env::new();
    let ctx = minimal(&env);
    let plain = build(&env, &ctx, &[]);
    let (iid, meta) = (env.dir.path().join("iid"), env.dir.path().join("meta.json"));
    let digest = build(
        &env,
        &ctx,
        &[
            "-t",
            "meteo:1",
            "-t",
            "127.0.0.1:5000/team/meteo:1",
            "--iidfile",
            iid.to_str().unwrap(),
            "--metadata-file",
            meta.to_str().unwrap(),
        ],
    );
    assert_eq!(digest, plain, "the flags changed the image");
    assert_eq!(fs::read_to_string(&iid).unwrap(), digest);
    let m = crate::support::cli::json(&fs::read_to_string(&meta).unwrap());
    assert_eq!(m["containerimage.digest"], digest.as_str());
    assert_eq!(m["containerimage.descriptor"]["digest"], digest.as_str());
    assert_eq!(
        m["containerimage.descriptor"]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let size = fs::metadata(env.store_blob(&digest)).unwrap().len();
    assert_eq!(m["containerimage.descriptor"]["size"], size);
    assert_eq!(m["image.name"], "meteo:1,127.0.0.1:5000/team/meteo:1");
    assert_eq!(
        m["otters.tags"],
        serde_json::json!(["meteo:1", "127.0.0.1:5000/team/meteo:1"])
    );
    assert_eq!(m["otters.pushed"], serde_json::json!([]));

    // A failed build leaves neither file behind: a stale one is not mistaken for its result.
    fs::write(ctx.join("Agentfile"), "FROM scratch\nFROBNICATE\n").unwrap();
    let out = env
        .otters()
        .args(["build", "--offline", "--iidfile", iid.to_str().unwrap()])
        .args(["--metadata-file", meta.to_str().unwrap()])
        .arg(&ctx)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!iid.exists() && !meta.exists(), "stale result files kept");
}

#[test]
fn build_arg_from_the_environment_and_a_warning_for_an_unused_one() {
    let env = Env::new();
    let ctx = fixture("full");
    // Each build in a transcript (its environment holds REGION only when set here).
    let t = std::cell::RefCell::new(Transcript::on(&env));
    let run = |args: &[&str], region: Option<&str>| {
        let mut cmd = Transcript::otters(&env);
        if let Some(r) = region {
            cmd.env("REGION", r);
        }
        let mut all = vec!["build", "--offline", "--allow-unpinned"];
        all.extend_from_slice(args);
        all.push(ctx.to_str().unwrap());
        let (ok, out, err) = t.borrow_mut().run_cmd(cmd, &all);
        assert!(ok, "{err}");
        (out.trim().to_owned(), flat(&err))
    };
    let (default, _) = run(&[], None);
    let (explicit, err) = run(&["--build-arg", "REGION=us"], None);
    assert_ne!(explicit, default, "the build argument changed nothing");
    assert!(!err.contains("is not used"), "{err}");
    let (from_env, err) = run(&["--build-arg", "REGION"], Some("us"));
    assert_eq!(from_env, explicit, "{err}");
    assert!(!err.contains("not set"), "{err}");
    let (unset, err) = run(&["--build-arg", "REGION"], None);
    assert_eq!(unset, default);
    assert!(
        err.contains("note: --build-arg REGION: REGION is not set in the environment"),
        "{err}"
    );
    let (unused, err) = run(&["--build-arg", "NOPE=1", "--build-arg", "REGION=us"], None);
    assert_eq!(
        unused, explicit,
        "an unused build argument changed the image"
    );
    assert!(
        err.contains("warning: --build-arg NOPE is not used: the Agentfile declares no ARG NOPE"),
        "{err}"
    );
    assert!(!err.contains("REGION is not used"), "{err}");
    let (_, err) = run(&["-q", "--build-arg", "NOPE=1"], None);
    assert!(!err.contains("NOPE"), "-q still warned: {err}");
    let mut t = t.into_inner();
    let (ok, ..) = t.run(
        &env,
        &[
            "build",
            "--offline",
            "--build-arg",
            "=x",
            ctx.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    t.assert("habits", "build_args");
}

#[test]
fn dash_o_follows_buildx_oci_tarball_or_directory() {
    let env = Env::new();
    let ctx = minimal(&env);
    let plain = build(&env, &ctx, &["-t", "x:1"]);
    let dir = env.dir.path();
    // type=oci: an oci-archive tarball, the image also in the store.
    let tarball = dir.join("x.tar");
    let spec = format!("type=oci,dest={}", tarball.display());
    assert_eq!(build(&env, &ctx, &["-t", "x:1", "-o", &spec]), plain);
    let list = crate::support::run_ok(std::process::Command::new("tar").arg("-tf").arg(&tarball));
    for want in [
        "oci-layout".to_owned(),
        "index.json".to_owned(),
        format!("blobs/sha256/{}", plain.trim_start_matches("sha256:")),
    ] {
        assert!(
            list.lines().any(|l| l.trim_start_matches("./") == want),
            "{want}: {list}"
        );
    }
    // type=oci,tar=false and type=oci-layout: a layout directory.
    for (i, kind) in [
        "type=oci,tar=false",
        "type=oci-layout",
        "tar=false,type=oci",
    ]
    .iter()
    .enumerate()
    {
        let layout = dir.join(format!("layout{i}"));
        let spec = format!("{kind},dest={}", layout.display());
        assert_eq!(
            build(&env, &ctx, &["-t", "x:1", "-o", &spec]),
            plain,
            "{kind}"
        );
        assert!(layout.join("oci-layout").is_file(), "{kind}");
        assert!(fs::read_to_string(layout.join("index.json"))
            .unwrap()
            .contains(&plain));
    }
    let mut t = Transcript::on(&env);
    for (spec, why) in [
        (
            "type=oci-layout,tar=false,dest=d",
            "tar= applies to type=oci only",
        ),
        (
            "type=oci,tar=maybe,dest=d",
            "tar=maybe is not true or false",
        ),
        ("type=oci,dest=-", "standard output is not supported"),
        ("type=docker,dest=d", "type `docker` is not supported"),
        ("type=tar,dest=d", "type `tar` is not supported"),
        ("type=oci", "has no dest="),
    ] {
        let (ok, _, err) = t.run(
            &env,
            &[
                "build",
                "--offline",
                "--allow-unpinned",
                "-o",
                spec,
                ctx.to_str().unwrap(),
            ],
        );
        assert!(!ok && err.contains(why), "{spec}: {err}");
        assert!(!ctx.join("d").exists() && !ctx.join("-").exists());
    }
    t.assert("habits", "dash_o_refused");
}

#[test]
fn label_goes_where_label_goes_and_annotation_only_to_the_manifest() {
    let env = Env::new();
    let ctx = fixture("full");
    let plain = build(&env, &ctx, &[]);
    let digest = build(
        &env,
        &ctx,
        &[
            "--label",
            "team=weather",
            "--label",
            "description=over",
            "--annotation",
            "org.opencontainers.image.source=https://example.com/meteo",
            "--annotation",
            "manifest:a=b",
        ],
    );
    assert_ne!(digest, plain);
    let manifest = crate::support::cli::json(&fs::read_to_string(env.store_blob(&digest)).unwrap());
    let ann = &manifest["annotations"];
    assert_eq!(ann["team"], "weather", "{ann}");
    assert_eq!(
        ann["description"], "over",
        "--label does not override LABEL: {ann}"
    );
    assert_eq!(
        ann["org.opencontainers.image.source"],
        "https://example.com/meteo"
    );
    assert_eq!(ann["a"], "b");
    assert_eq!(ann["org.opencontainers.image.title"], "meteo");
    let config =
        fs::read_to_string(env.store_blob(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    assert!(
        config.contains("\"team\"") && config.contains("weather"),
        "{config}"
    );
    assert!(
        !config.contains("example.com/meteo"),
        "an annotation reached the config"
    );
    // Only the annotation: the config blob is the plain build's.
    let only_ann = build(&env, &ctx, &["--annotation", "a=b"]);
    let m2 = crate::support::cli::json(&fs::read_to_string(env.store_blob(&only_ann)).unwrap());
    let m0 = crate::support::cli::json(&fs::read_to_string(env.store_blob(&plain)).unwrap());
    assert_eq!(m2["config"], m0["config"]);
    assert_eq!(m2["layers"], m0["layers"]);
    let mut t = Transcript::on(&env);
    for [flag, value] in [["--label", "noequals"], ["--annotation", "=v"]] {
        let ctx = ctx.to_str().unwrap();
        let (ok, ..) = t.run(
            &env,
            &["build", "--offline", "--allow-unpinned", flag, value, ctx],
        );
        assert!(!ok, "{flag} {value}");
    }
    t.assert("habits", "label_not_key_value");
}

/// `images --filter reference=GLOB|dangling=…` and `--format` templates, as docker users type
/// them; bad keys, values and fields are refused with the accepted forms.
#[test]
fn images_filter_and_format_templates() {
    let env = Env::new();
    let ctx = minimal(&env);
    let digest = build(&env, &ctx, &["-t", "meteo:1.0"]);
    ok(env
        .otters()
        .args(["tag", "meteo:1.0", "localhost:5000/agents/meteo:2"]));
    let lines = |args: &[&str]| -> Vec<String> {
        ok(env.otters().arg("images").args(args))
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let short = &digest["sha256:".len().."sha256:".len() + 12];
    assert_eq!(
        lines(&[
            "--format",
            "{{.Repository}}|{{ .Tag }}|{{.ShortDigest}}|{{.Digest}}"
        ]),
        [
            format!("localhost:5000/agents/meteo|2|{short}|{digest}"),
            format!("meteo|1.0|{short}|{digest}"),
        ]
    );
    assert_eq!(
        lines(&["-f", "reference=meteo:*", "--format", "{{.Reference}}"]),
        ["meteo:1.0"]
    );
    assert_eq!(
        lines(&[
            "--filter",
            "reference=*/agents/*",
            "--filter",
            "reference=nothing",
            "--format",
            "{{.Reference}}"
        ]),
        ["localhost:5000/agents/meteo:2"]
    );
    assert_eq!(
        lines(&["-f", "reference=*/agents/*", "-q"]),
        vec![digest.clone()]
    );
    // No untagged image in this store: only the header.
    assert_eq!(lines(&["-f", "dangling=true"]).len(), 1);
    assert_eq!(lines(&["-f", "dangling=false", "-q"]), vec![digest]);
    let mut t = Transcript::on(&env);
    for args in [
        ["images", "--format", "{{.Nope}}"],
        ["images", "--format", "yaml"],
        ["images", "-f", "colour=red"],
        ["images", "-f", "dangling=maybe"],
        ["images", "-f", "reference"],
    ] {
        let (ok, ..) = t.run(&env, &args);
        assert!(!ok, "{args:?}");
    }
    t.assert("habits", "images_refused");
}

/// `otters lock` finds the Agentfile by the rule `otters build` uses (one rule, in
/// `otters_pipeline::project::locate`): `-f FILE` relative to the context, or as written (from the
/// working directory) when only that exists; an Agentfile with errors writes no lock.
#[test]
fn lock_locates_the_agentfile_as_build_does() {
    let env = Env::new();
    let root = env.dir.path();
    fs::create_dir_all(root.join("ctx")).unwrap();
    fs::create_dir_all(root.join("other")).unwrap();
    fs::write(
        root.join("other/Agentfile.dev"),
        "FROM scratch\nNAME tiny\n",
    )
    .unwrap();
    let mut t = Transcript::on(&env);
    let mut lock = |args: &[&str]| {
        let mut cmd = Transcript::otters(&env);
        cmd.current_dir(root);
        let (ok, _, err) = t.run_cmd(cmd, args);
        (ok, err)
    };

    let (ok, err) = lock(&["lock", "ctx", "-f", "other/Agentfile.dev"]);
    assert!(ok, "{err}");
    assert!(root.join("other/Agentfile.lock").is_file());

    // Relative to the context first, as `build -f` takes it.
    fs::write(root.join("ctx/Agentfile.dev"), "FROM scratch\nFROBNICATE\n").unwrap();
    let (ok, err) = lock(&["lock", "ctx", "-f", "Agentfile.dev"]);
    assert!(!ok, "{err}");
    assert!(!root.join("ctx/Agentfile.lock").exists());
    t.assert("habits", "lock_locates");
}
