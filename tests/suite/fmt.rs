//! `otters fmt` through the real binary: writing in place (atomically, keeping the mode),
//! `--check` and `--diff`, standard input, refusal of files with syntax errors, directories, and
//! the conformance corpus (idempotent, no new lint finding, the same built artifact apart from
//! the Agentfile layer, also when formatting a deliberately messy spelling of each file). Diffs
//! and refusals are pinned whole (`snapshots/fmt_cli/`).

use crate::support::cli::{json, ok, Env};
use crate::support::snap::Transcript;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

const MESSY: &str =
    "\n\nfrom   scratch\nname  tidy \n\n\n\nenv A = \"x\"   \"d\"\nexec[\"serve\" ,\"-v\"]\n";
const TIDY: &str = "FROM scratch\nNAME tidy\n\nENV A=\"x\" \"d\"\nEXEC [\"serve\", \"-v\"]\n";

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn otters(env: &Env, dir: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = env.otters();
    cmd.current_dir(dir).args(args);
    if let Some(s) = stdin {
        cmd.write_stdin(s);
    }
    let o = cmd.output().expect("run otters");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `otters args` in `dir` (with `stdin`) as a transcript does and pins its whole output as
/// `snapshots/fmt_cli/<name>.snap` (its exit code with it); returns its stdout.
fn pin(env: &Env, dir: &Path, name: &str, args: &[&str], stdin: Option<&str>) -> String {
    let mut cmd = Transcript::otters(env);
    cmd.current_dir(dir);
    if let Some(s) = stdin {
        cmd.write_stdin(s.to_owned());
    }
    let mut t = Transcript::on(env);
    let (_, out, _) = t.run_cmd(cmd, args);
    t.assert("fmt_cli", name);
    out
}

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, text).unwrap();
    p
}

#[test]
fn formats_in_place_keeping_the_mode_and_is_then_a_no_op() {
    let env = Env::new();
    let dir = env.dir.path();
    let f = write(dir, "Agentfile", MESSY);
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    let o = otters(&env, dir, &["fmt", "Agentfile"], None);
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (0, "", ""));
    assert_eq!(fs::read_to_string(&f).unwrap(), TIDY);
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    // No temporary file is left beside it.
    let names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.to_string_lossy().starts_with(".otters-fmt")),
        "{names:?}"
    );
    // Already formatted: nothing written (the mtime stays), exit 0.
    let before = fs::metadata(&f).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(otters(&env, dir, &["fmt"], None).code, 0);
    assert_eq!(fs::metadata(&f).unwrap().modified().unwrap(), before);
    assert_eq!(fs::read_to_string(&f).unwrap(), TIDY);
}

#[test]
fn check_exits_1_with_a_unified_diff_and_writes_nothing() {
    let env = Env::new();
    let dir = env.dir.path();
    let f = write(dir, "a/Agentfile", MESSY);
    let diff = pin(
        &env,
        dir,
        "check_diff",
        &["fmt", "--check", "a/Agentfile"],
        None,
    );
    assert_eq!(fs::read_to_string(&f).unwrap(), MESSY);
    // --diff prints the same diff, writes nothing, and exits 0.
    let d = otters(&env, dir, &["fmt", "--diff", "a/Agentfile"], None);
    assert_eq!((d.code, d.stdout.as_str()), (0, diff.as_str()));
    assert_eq!(fs::read_to_string(&f).unwrap(), MESSY);
    // A formatted file passes the check silently.
    fs::write(&f, TIDY).unwrap();
    let o = otters(&env, dir, &["fmt", "--check", "a"], None);
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (0, "", ""));
}

#[test]
fn check_shows_control_characters_escaped() {
    let env = Env::new();
    let dir = env.dir.path();
    write(dir, "Agentfile", "FROM scratch\r\nNAME x\r\n");
    let out = pin(
        &env,
        dir,
        "check_control_characters",
        &["fmt", "--check"],
        None,
    );
    assert!(!out.contains('\r'));
}

#[test]
fn stdin_is_formatted_to_stdout() {
    let env = Env::new();
    let dir = env.dir.path();
    let o = otters(&env, dir, &["fmt", "-"], Some(MESSY));
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (0, TIDY, "")
    );
    pin(
        &env,
        dir,
        "check_stdin",
        &["fmt", "--check", "-"],
        Some(MESSY),
    );
    let o = otters(&env, dir, &["fmt", "--check", "-"], Some(TIDY));
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
    // Nothing else was written.
    assert_eq!(fs::read_dir(dir).unwrap().count(), 0);
}

#[test]
fn syntax_errors_are_refused_like_lint_shows_them_and_the_file_is_untouched() {
    let env = Env::new();
    let dir = env.dir.path();
    let bad = "from scratch\nNAME x\nFORM y\nENV A=\"\\$\"\n";
    let f = write(dir, "Agentfile", bad);
    pin(&env, dir, "syntax_errors", &["fmt", "Agentfile"], None);
    let o = otters(&env, dir, &["fmt", "Agentfile"], None);
    assert_eq!(fs::read_to_string(&f).unwrap(), bad);
    // The same reports `otters lint` draws for these errors.
    let lint = otters(&env, dir, &["lint", "Agentfile"], None);
    for code in ["AF003", "AF005"] {
        let start = lint
            .stderr
            .find(code)
            .unwrap_or_else(|| panic!("{code} in {}", lint.stderr));
        let block = &lint.stderr[start..];
        let block = &block[..block.find("\n\n").unwrap_or(block.len())];
        assert!(
            o.stderr.contains(block),
            "lint's\n{block}\nnot in fmt's\n{}",
            o.stderr
        );
    }
    assert!(
        !o.stderr.contains("AF208"),
        "only syntax errors are shown: {}",
        o.stderr
    );
    // --check refuses the same way, stdin too.
    assert_eq!(otters(&env, dir, &["fmt", "--check"], None).code, 2);
    pin(&env, dir, "syntax_errors_stdin", &["fmt", "-"], Some(bad));
    // Not UTF-8: AF001.
    fs::write(&f, b"FROM scratch\nNAME caf\xe9\n").unwrap();
    pin(&env, dir, "not_utf8", &["fmt"], None);
    assert_eq!(fs::read(&f).unwrap(), b"FROM scratch\nNAME caf\xe9\n");
}

#[test]
fn a_directory_means_every_agentfile_below_it() {
    let env = Env::new();
    let dir = env.dir.path();
    let a = write(dir, "tree/Agentfile", MESSY);
    let b = write(dir, "tree/x/y/Agentfile", MESSY);
    let hidden = write(dir, "tree/.git/Agentfile", MESSY);
    let target = write(dir, "tree/target/Agentfile", MESSY);
    let other = write(dir, "tree/x/notes.agentfile", MESSY);
    let bad = write(dir, "tree/z/Agentfile", "FORM x\n");
    // A syntax error outranks a needed change (exit 2).
    pin(
        &env,
        dir,
        "check_directory",
        &["fmt", "--check", "tree"],
        None,
    );
    let o = otters(&env, dir, &["fmt", "tree"], None);
    assert_eq!(o.code, 2);
    for p in [&a, &b] {
        assert_eq!(fs::read_to_string(p).unwrap(), TIDY, "{}", p.display());
    }
    for p in [&hidden, &target, &other] {
        assert_eq!(fs::read_to_string(p).unwrap(), MESSY, "{}", p.display());
    }
    assert_eq!(fs::read_to_string(&bad).unwrap(), "FORM x\n");
    fs::remove_file(&bad).unwrap();
    assert_eq!(otters(&env, dir, &["fmt", "--check", "tree"], None).code, 0);
    let o = otters(&env, dir, &["fmt", "tree/x/notes.agentfile"], None);
    assert_eq!(
        o.code, 0,
        "a file named on the command line is formatted whatever its name"
    );
    assert_eq!(fs::read_to_string(&other).unwrap(), TIDY);
    let o = otters(&env, dir, &["fmt", "tree/.git/nothing-here"], None);
    assert_eq!(o.code, 2);
    fs::create_dir_all(dir.join("empty")).unwrap();
    pin(&env, dir, "empty_directory", &["fmt", "empty"], None);
}

#[test]
fn a_symlinked_agentfile_is_formatted_through_the_link() {
    let env = Env::new();
    let dir = env.dir.path();
    let real = write(dir, "ctx/real.agentfile", MESSY);
    std::os::unix::fs::symlink("real.agentfile", dir.join("ctx/Agentfile")).unwrap();
    assert_eq!(otters(&env, dir, &["fmt", "ctx"], None).code, 0);
    assert!(fs::symlink_metadata(dir.join("ctx/Agentfile"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&real).unwrap(), TIDY);
}

/// Issue 18.2: a line with a stray carriage return and a raw U+202E in a string had one AF219
/// finding before `otters fmt` and two after it (the U+202E, written as `\u202e`, was reported
/// apart from the line). Formatting brings no new finding.
#[test]
fn formatting_a_line_with_a_carriage_return_and_a_bidi_override_adds_no_finding() {
    let env = Env::new();
    let dir = env.dir.path();
    let f = write(
        dir,
        "Agentfile",
        "FROM scratch\nNAME x\nenv \rC=\"\u{202e}\"\n",
    );
    let before = lint_codes(&env, dir);
    assert_eq!(
        before.iter().filter(|c| *c == "AF219").count(),
        1,
        "{before:?}"
    );
    let o = otters(&env, dir, &["fmt", "Agentfile"], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        fs::read_to_string(&f).unwrap(),
        "FROM scratch\nNAME x\nENV \rC=\"\\u202e\"\n"
    );
    // The same findings, but AF208 (the lower-case `env`), which formatting fixes.
    let expected: Vec<String> = before.into_iter().filter(|c| c != "AF208").collect();
    assert_eq!(lint_codes(&env, dir), expected);
}

/// Issue 17 ("Also"): a read-only Agentfile is not rewritten (the temp-and-rename writer needed
/// only the directory's permission): refused, named, with the command that makes it writable.
#[test]
fn a_read_only_agentfile_is_refused_and_left_as_it_was() {
    let env = Env::new();
    let dir = env.dir.path();
    let f = write(dir, "Agentfile", MESSY);
    fs::set_permissions(&f, fs::Permissions::from_mode(0o444)).unwrap();
    pin(&env, dir, "read_only", &["fmt", "Agentfile"], None);
    assert_eq!(fs::read_to_string(&f).unwrap(), MESSY);
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o444
    );
    // `--check` still shows what would change.
    assert_eq!(
        otters(&env, dir, &["fmt", "--check", "Agentfile"], None).code,
        1
    );
}

/// Issue 17 ("Also"): a hard-linked Agentfile is written in place, through the same inode, so
/// every link sees the formatted text (a rename gave the path a new inode and left the other
/// link on the old text).
#[test]
fn a_hard_linked_agentfile_is_written_through_the_same_inode() {
    use std::os::unix::fs::MetadataExt as _;
    let env = Env::new();
    let dir = env.dir.path();
    let f = write(dir, "a/Agentfile", MESSY);
    let other = dir.join("shared.agentfile");
    fs::hard_link(&f, &other).unwrap();
    let inode = fs::metadata(&f).unwrap().ino();
    let o = otters(&env, dir, &["fmt", "a"], None);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(fs::metadata(&f).unwrap().ino(), inode);
    assert_eq!(fs::metadata(&f).unwrap().nlink(), 2);
    assert_eq!(fs::read_to_string(&other).unwrap(), TIDY);
}

/// A messier spelling of `text` that means the same: lower-case keywords, blanks doubled
/// between tokens (outside strings), indented lines, trailing blanks, CRLF breaks, extra blank
/// lines. Heredoc bodies only get CRLF breaks.
fn mess(text: &str) -> String {
    let ast = otters_agentfile::syntax::parse_str(text);
    let mut out = String::new();
    for line in &ast.lines {
        let raw = &text[line.span.start..line.span.end];
        match &line.kind {
            otters_agentfile::syntax::LineKind::Instruction(i) => {
                let own = &text[i.span.start..i.span.end];
                let kw = i.keyword_token.text.len();
                let mut s = format!(" \t{}", own[..kw].to_ascii_lowercase());
                let mut in_string = false;
                let mut escaped = false;
                for c in own[kw..].chars() {
                    if in_string && c == '\\' && !escaped {
                        escaped = true;
                        s.push(c);
                        continue;
                    }
                    if c == '"' && !escaped {
                        in_string = !in_string;
                    }
                    escaped = false;
                    if c == ' ' && !in_string {
                        s.push_str("  \t");
                    } else {
                        s.push(c);
                    }
                }
                s.push_str(" \t ");
                s.push_str(text[i.span.end..line.span.end].trim_start());
                out.push_str(&s.replace('\n', "\r\n"));
                out.push_str(" \r\n");
            }
            otters_agentfile::syntax::LineKind::Blank => out.push_str("\r\n \r\n\t\r\n"),
            _ => {
                out.push_str("  ");
                out.push_str(raw);
                out.push_str("\r\n");
            }
        }
    }
    out
}

fn conformance_dirs(test: &str) -> Option<Vec<PathBuf>> {
    let root = crate::support::harness::conformance(test)?;
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "Agentfile") {
                found.push(d.clone());
            }
        }
    }
    found.sort();
    Some(found)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            // Writable copies: the corpus may be read-only, and `fmt` refuses read-only files.
            fs::copy(&src, &dst).unwrap();
            fs::set_permissions(&dst, fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// The codes `otters lint` reports for the Agentfile in `dir`, sorted.
fn lint_codes(env: &Env, dir: &Path) -> Vec<String> {
    let o = otters(
        env,
        dir,
        &["lint", "--format", "json", "--target", "none", "."],
        None,
    );
    let mut codes: Vec<String> = json(&o.stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect();
    codes.sort();
    codes
}

/// Builds `dir` and returns everything of its manifest but the Agentfile layer: the config
/// descriptor, the other layers and the annotations.
fn built_without_agentfile(env: &Env, dir: &Path, tag: &str) -> serde_json::Value {
    ok(env
        .otters()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["build", "--offline", "--allow-unpinned", "-q", "-t", tag])
        .arg(dir));
    let v = json(&env.ok(&["inspect", tag, "--format", "json"]));
    let mut m = v["manifest"].clone();
    let layers = m["layers"].as_array_mut().unwrap();
    let before = layers.len();
    layers.retain(|l| l["mediaType"] != "application/vnd.openotters.agentfile");
    assert_eq!(
        layers.len() + 1,
        before,
        "one Agentfile layer in {}",
        dir.display()
    );
    m
}

#[test]
fn conformance_corpus_formats_idempotently_with_the_same_lints_and_artifact() {
    const TEST: &str = "conformance_corpus_formats_idempotently_with_the_same_lints_and_artifact";
    let Some(dirs) = conformance_dirs(TEST) else {
        return;
    };
    assert!(
        dirs.len() >= 14,
        "only {} conformance Agentfiles",
        dirs.len()
    );
    let env = Env::new();
    let work = env.dir.path().join("work");
    let root = crate::support::harness::conformance(TEST).expect("checked above");
    // Three copies: as it is (to format), the original (reference), and a messy spelling.
    for name in ["formatted", "original", "messy"] {
        copy_tree(&root, &work.join(name));
    }
    for d in &dirs {
        let rel = d.strip_prefix(&root).unwrap();
        let p = work.join("messy").join(rel).join("Agentfile");
        let text = fs::read_to_string(&p).unwrap();
        let messy = mess(&text);
        assert!(
            messy.len() > text.len() + 20,
            "{}: not messed up",
            rel.display()
        );
        fs::write(&p, messy).unwrap();
    }
    for name in ["formatted", "messy"] {
        let o = otters(&env, &work, &["fmt", name], None);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        let o = otters(&env, &work, &["fmt", "--check", name], None);
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (0, ""),
            "{name} is not idempotent"
        );
    }
    for (i, d) in dirs.iter().enumerate() {
        let rel = d.strip_prefix(&root).unwrap();
        let [formatted, original, messy] =
            ["formatted", "original", "messy"].map(|n| work.join(n).join(rel));
        let text = fs::read_to_string(formatted.join("Agentfile")).unwrap();
        assert_eq!(
            fs::read_to_string(messy.join("Agentfile")).unwrap(),
            text,
            "{}: the messy spelling formats differently",
            rel.display()
        );
        // No new finding (formatting may remove some, such as keyword case).
        let mut before = lint_codes(&env, &original);
        for c in lint_codes(&env, &formatted) {
            let at = before
                .iter()
                .position(|b| *b == c)
                .unwrap_or_else(|| panic!("{}: new finding {c} after fmt", rel.display()));
            before.remove(at);
        }
        let reference = built_without_agentfile(&env, &original, &format!("o{i}"));
        assert_eq!(
            built_without_agentfile(&env, &formatted, &format!("f{i}")),
            reference,
            "{}",
            rel.display()
        );
        assert_eq!(
            built_without_agentfile(&env, &messy, &format!("m{i}")),
            reference,
            "{} (messy spelling, formatted)",
            rel.display()
        );
    }
}
