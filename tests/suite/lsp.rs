//! `otters lsp` driven over standard input and output as an editor drives it: initialize (UTF-16,
//! and UTF-8 when offered), open a broken file and compare the published diagnostics with
//! `otters lint --format json` on the same file and `otters.toml`, change it, hover, complete,
//! ask for code actions, the outline, folding, a definition and formatting, then shutdown and
//! exit with status 0; Neovim (headless) sees the same diagnostics. Also `otters lint --fix`, which
//! applies the same fixes the server offers.

use crate::support::cli::Env;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// How long any answer may take before the test fails (the server answers in milliseconds).
const PATIENCE: Duration = Duration::from_secs(20);

struct Client {
    child: Child,
    stdin: ChildStdin,
    inbox: Receiver<Value>,
    next_id: i64,
}

impl Client {
    /// Starts `otters lsp` and initializes it, offering `encodings` (none: the LSP default).
    fn start(env: &Env, encodings: Option<&[&str]>) -> (Client, Value) {
        let mut caps = json!({});
        if let Some(e) = encodings {
            caps = json!({"general": {"positionEncodings": e}});
        }
        Client::start_with(env, caps)
    }

    /// Starts `otters lsp` and initializes it with the client capabilities `caps`.
    fn start_with(env: &Env, caps: Value) -> (Client, Value) {
        Client::start_raw(
            env,
            json!({"processId": null, "rootUri": null, "capabilities": caps}),
        )
    }

    /// Starts `otters lsp` and initializes it with `params`.
    fn start_raw(env: &Env, params: Value) -> (Client, Value) {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("otters"));
        cmd.arg("lsp")
            .env("OTTERS_HOME", env.home())
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start otters lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, inbox) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; len.expect("a Content-Length header")];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&body).expect("a JSON message");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            inbox,
            next_id: 0,
        };
        let init = c.request("initialize", params);
        c.notify("initialized", json!({}));
        (c, init)
    }

    fn send(&mut self, v: &Value) {
        let body = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message `want` accepts (others, such as log messages, are skipped).
    fn wait(&self, what: &str, mut want: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let v = self
                .inbox
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|e| panic!("no {what} from otters lsp: {e}"));
            if want(&v) {
                return v;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.wait(method, |v| v["id"] == id);
        assert!(r.get("error").is_none(), "{method}: {r}");
        r["result"].clone()
    }

    fn diagnostics(&self, uri: &str) -> Value {
        self.wait("publishDiagnostics", |v| {
            v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == uri
        })["params"]
            .clone()
    }

    fn open(&mut self, uri: &str, text: &str) -> Value {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "agentfile", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    fn at(&mut self, method: &str, uri: &str, line: usize, character: usize) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    }

    /// Shutdown, exit, and the exit status.
    fn finish(mut self) -> i32 {
        let r = self.request("shutdown", Value::Null);
        assert!(r.is_null(), "{r}");
        self.notify("exit", Value::Null);
        wait_exit(&mut self.child)
    }
}

fn wait_exit(child: &mut Child) -> i32 {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s.code().unwrap_or(-1);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "otters lsp did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn uri_of(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// A broken Agentfile with non-ASCII text before findings on the same line, so UTF-16, UTF-8
/// and character columns all differ.
const BROKEN: &str = "# syntax=openotters/agentfile:1\nFORM scratch\nRUNTIME ghcr.io/o/runtime:latest\nNAME a\nMODEL m/x\nLABEL note=\"héllo 😀\" \nCONTEXT S \"😀\" file://ctx.md\nARG VERSION=1\nBIN jq ghcr.io/o/jq:${VERSION}\nBIN yq ghcr.io/o/yq\nENV path=1\nCAPABILITY note_sav\nCONTEXT P <<EOF\nprompt\nEOF\n";

const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// A project: the Agentfile, an `otters.toml` that turns AF204 off, the CONTEXT file, and a lock
/// pinning the RUNTIME and `jq`.
fn project(env: &Env) -> std::path::PathBuf {
    let dir = env.dir.path().join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Agentfile"), BROKEN).unwrap();
    std::fs::write(dir.join("ctx.md"), "context\n").unwrap();
    std::fs::write(
        env.dir.path().join("otters.toml"),
        "[lint.severity]\nAF204 = \"off\"\n",
    )
    .unwrap();
    let lock = json!({"version": 1, "platform": "linux/amd64", "images": [
        {"role": "runtime", "reference": "ghcr.io/o/runtime:latest", "digest": DIGEST, "bin": {"name": "runtime"}},
        {"role": "bin", "reference": "ghcr.io/o/jq:1", "digest": DIGEST, "bin": {"name": "jq"}},
    ]});
    std::fs::write(dir.join("Agentfile.lock"), lock.to_string()).unwrap();
    dir
}

/// A 0-based LSP column on `line` of `text`, in `unit`, as a 1-based character column.
fn char_column(text: &str, line: u64, col: u64, unit: &str) -> u64 {
    let l = text.split('\n').nth(line as usize).unwrap_or("");
    let mut units = 0;
    let mut chars = 0;
    for c in l.chars() {
        if units >= col {
            break;
        }
        units += match unit {
            "utf-8" => c.len_utf8(),
            _ => c.len_utf16(),
        } as u64;
        chars += 1;
    }
    assert_eq!(units, col, "column {col} ({unit}) is inside a character");
    chars + 1
}

/// `(code, message, line, column, end_line, end_column)` as `otters lint --format json` has them.
type Finding = (String, String, u64, u64, u64, u64);

fn from_lsp(diags: &Value, text: &str, unit: &str) -> Vec<Finding> {
    diags
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let (s, e) = (&d["range"]["start"], &d["range"]["end"]);
            let (sl, el) = (s["line"].as_u64().unwrap(), e["line"].as_u64().unwrap());
            assert_eq!(d["source"], "otters");
            (
                d["code"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
                sl + 1,
                char_column(text, sl, s["character"].as_u64().unwrap(), unit),
                el + 1,
                char_column(text, el, e["character"].as_u64().unwrap(), unit),
            )
        })
        .collect()
}

fn from_lint(env: &Env, file: &Path) -> Vec<Finding> {
    let (_, out, err) = env.run(&["lint", "--format", "json", file.to_str().unwrap()]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let n = |k: &str| f[k].as_u64().unwrap();
            (
                f["code"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
                n("line"),
                n("column"),
                n("end_line"),
                n("end_column"),
            )
        })
        .collect()
}

#[test]
fn diagnostics_equal_lint_in_utf16_and_utf8() {
    let env = Env::new();
    let dir = project(&env);
    let file = dir.join("Agentfile");
    let want = from_lint(&env, &file);
    let codes: Vec<&str> = want.iter().map(|f| f.0.as_str()).collect();
    // The config turned AF204 off, the lock pins the runtime (no AF201 for it), and the
    // unlocked `yq` still has one.
    assert!(
        codes.contains(&"AF003") && codes.contains(&"AF201"),
        "{codes:?}"
    );
    assert!(!codes.contains(&"AF204"), "{codes:?}");
    assert_eq!(
        codes.iter().filter(|c| **c == "AF201").count(),
        1,
        "{codes:?}"
    );
    for (offer, unit) in [
        (None, "utf-16"),
        (Some(&["utf-16", "utf-8"][..]), "utf-8"),
        (Some(&["utf-32"][..]), "utf-16"),
    ] {
        let (mut c, init) = Client::start(&env, offer);
        assert_eq!(init["capabilities"]["positionEncoding"], unit, "{init}");
        let published = c.open(&uri_of(&file), BROKEN);
        assert_eq!(published["version"], 1);
        // Each finding links to its rule's page (issue 23: codeDescription.href, as ruff does).
        for d in published["diagnostics"].as_array().unwrap() {
            let href = d["codeDescription"]["href"].as_str().unwrap_or_default();
            let page = format!("/blob/main/docs/rules/{}.md", d["code"].as_str().unwrap());
            assert!(href.starts_with("https://") && href.ends_with(&page), "{d}");
        }
        assert_eq!(
            from_lsp(&published["diagnostics"], BROKEN, unit),
            want,
            "{unit}"
        );
        assert_eq!(c.finish(), 0);
    }
}

#[test]
fn a_change_is_checked_on_the_unsaved_text() {
    let env = Env::new();
    let dir = project(&env);
    let uri = uri_of(&dir.join("Agentfile"));
    let (mut c, _) = Client::start(&env, None);
    let first = c.open(&uri, BROKEN);
    assert!(first["diagnostics"].as_array().unwrap().len() > 3);
    let fixed = "FROM scratch\nRUNTIME ghcr.io/o/runtime:latest\nNAME a\nMODEL m/x\n";
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let second = c.diagnostics(&uri);
    assert_eq!(second["version"], 2);
    assert_eq!(second["diagnostics"], json!([]), "{second}");
    // The file on disk was not touched.
    assert_eq!(
        std::fs::read_to_string(dir.join("Agentfile")).unwrap(),
        BROKEN
    );
    // A lower-case keyword is AF208 (info) until otters.toml turns it off; a save re-reads it.
    let lower = fixed.replace("NAME", "name");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": lower}]}),
    );
    assert_eq!(c.diagnostics(&uri)["diagnostics"][0]["code"], "AF208");
    std::fs::write(
        env.dir.path().join("otters.toml"),
        "[lint.severity]\nAF208 = \"off\"\n",
    )
    .unwrap();
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(c.diagnostics(&uri)["diagnostics"], json!([]));
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(c.diagnostics(&uri)["diagnostics"], json!([]));
    assert_eq!(c.finish(), 0);
}

/// A server with the broken project's Agentfile open: (machine, project dir, its URI, client).
fn session() -> (Env, std::path::PathBuf, String, Client) {
    let env = Env::new();
    let dir = project(&env);
    let uri = uri_of(&dir.join("Agentfile"));
    let (mut client, _) = Client::start(&env, None);
    client.open(&uri, BROKEN);
    (env, dir, uri, client)
}

#[test]
fn hover_and_completion() {
    let (_env, _dir, uri, mut client) = session();
    let text = |v: &Value| v["contents"]["value"].as_str().unwrap_or("").to_owned();

    // Hover: the keyword's reference, the finding's explanation, the locked digest.
    let shown = text(&client.at("textDocument/hover", &uri, 2, 2));
    assert!(shown.contains("clears every CONFIG"), "{shown}");
    let shown = text(&client.at("textDocument/hover", &uri, 1, 1));
    assert!(
        shown.contains("AF003") && shown.contains("unknown-instruction"),
        "{shown}"
    );
    let shown = text(&client.at("textDocument/hover", &uri, 2, 12));
    assert!(
        shown.contains(DIGEST) && shown.contains("Agentfile.lock"),
        "{shown}"
    );
    let shown = text(&client.at("textDocument/hover", &uri, 9, 10));
    assert!(shown.contains("not pinned in Agentfile.lock"), "{shown}");
    let shown = text(&client.at("textDocument/hover", &uri, 8, 24));
    assert!(shown.contains("`ARG VERSION` = `1`"), "{shown}");
    assert!(client.at("textDocument/hover", &uri, 13, 2).is_null());

    // Completion: keywords at a line start, ARGs in `${`, capabilities on CAPABILITY.
    let labels = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_owned())
            .collect()
    };
    let keywords = labels(client.at("textDocument/completion", &uri, 3, 0));
    assert!(
        keywords.contains(&"RUNTIME".to_owned())
            && keywords.contains(&"EGRESS".to_owned())
            && keywords.len() == 15,
        "{keywords:?}"
    );
    let args = labels(client.at("textDocument/completion", &uri, 8, 23));
    assert_eq!(args, ["VERSION"]);
    // openotters L is a default target: every built-in name holds `_` (AF232), none is offered.
    let caps = labels(client.at("textDocument/completion", &uri, 11, 13));
    assert!(caps.is_empty(), "{caps:?}");
    assert!(labels(client.at("textDocument/completion", &uri, 13, 3)).is_empty());

    assert_eq!(client.finish(), 0);
}

#[test]
fn actions_outline_definition_and_formatting() {
    let (env, dir, uri, mut client) = session();
    // Code actions: the typo's fix, a suppression, the pin from the lock.
    let actions = |client: &mut Client, line: usize| -> Vec<Value> {
        let range =
            json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}});
        client.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}}),
        )
        .as_array()
        .unwrap()
        .clone()
    };
    let typo = actions(&mut client, 1);
    assert_eq!(typo[0]["title"], "Replace with `FROM`");
    assert_eq!(typo[0]["isPreferred"], true);
    let edit = &typo[0]["edit"]["changes"][&uri][0];
    assert_eq!(edit["newText"], "FROM");
    assert_eq!(edit["range"]["end"], json!({"line": 1, "character": 4}));
    let yq = actions(&mut client, 9);
    let titles: Vec<&str> = yq.iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Suppress AF201 on this line"], "{yq:?}");
    assert_eq!(
        yq[0]["edit"]["changes"][&uri][0]["newText"],
        "# otters:ignore AF201 <reason>\n"
    );
    let runtime = actions(&mut client, 2);
    let pin = runtime
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Pin"))
        .unwrap_or_else(|| panic!("{runtime:?}"));
    assert_eq!(
        pin["edit"]["changes"][&uri][0]["newText"],
        format!("ghcr.io/o/runtime:latest@{DIGEST}")
    );

    // Outline and folding.
    let symbols = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let names: Vec<&str> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"BIN jq") && names.contains(&"CONTEXT P") && names.contains(&"ARG VERSION"),
        "{names:?}"
    );
    let folds = client.request(
        "textDocument/foldingRange",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(folds[0]["startLine"], 12);
    assert_eq!(folds[0]["endLine"], 14);

    // Definitions: `${VERSION}` → its ARG; `file://ctx.md` → the file.
    let def = client.at("textDocument/definition", &uri, 8, 24);
    assert_eq!(def["uri"], uri.as_str());
    assert_eq!(def["range"]["start"], json!({"line": 7, "character": 4}));
    let def = client.at("textDocument/definition", &uri, 6, 20);
    assert_eq!(def["uri"], uri_of(&dir.join("ctx.md")));

    // Formatting: a file with syntax errors is never reformatted; the answer says why.
    let refused = client.request_answer(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(refused["error"]["code"], -32803, "{refused}");
    assert!(refused.get("result").is_none(), "{refused}");
    // A clean but untidy file: one edit, the whole text as `otters fmt -` writes it.
    let messy = "from scratch\nNAME   a\nMODEL m/x\n\n\n\nLABEL k=\"v\"";
    let tidy_uri = uri_of(&dir.join("Tidy.agentfile"));
    client.open(&tidy_uri, messy);
    let edits = client.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": tidy_uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    let mut fmt = env.otters();
    fmt.args(["fmt", "-"]).write_stdin(messy);
    let want = crate::support::cli::ok(&mut fmt);
    assert_ne!(want, messy);
    assert_eq!(edits.as_array().map(Vec::len), Some(1), "{edits}");
    assert_eq!(edits[0]["newText"], want.as_str());
    assert_eq!(
        edits[0]["range"]["start"],
        json!({"line": 0, "character": 0})
    );
    assert_eq!(
        edits[0]["range"]["end"],
        json!({"line": 6, "character": 11})
    );

    // An unknown request is refused, and the session goes on.
    client.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "otters/nothing", "params": {}}));
    let refused = client.wait("an error", |v| v["id"] == 99);
    assert_eq!(refused["error"]["code"], -32601);
    assert_eq!(client.finish(), 0);
}

#[test]
fn exit_without_shutdown_is_status_1() {
    let env = Env::new();
    let (mut c, _) = Client::start(&env, None);
    c.notify("exit", Value::Null);
    assert_eq!(wait_exit(&mut c.child), 1);
}

#[test]
fn lint_fix_applies_the_safe_fixes_and_reports_what_is_left() {
    let env = Env::new();
    let file = env.dir.path().join("Agentfile");
    std::fs::write(
        &file,
        "from scratch\nNAEM a\nRUNTIMEXX r:1\nRUNTIME r:latest\nMODEL m/x\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (ok, out, _) = env.run(&["lint", "--fix", "--format", "concise", path]);
    assert!(!ok, "RUNTIMEXX is left, an error");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "FROM scratch\nNAME a\nRUNTIMEXX r:1\nRUNTIME r:latest\nMODEL m/x\n"
    );
    let codes: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    assert_eq!(codes, ["AF003", "AF201"], "{out}");
    // Nothing left to fix: the file stays as it is.
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    env.run(&["lint", "--fix", path]);
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        before
    );
    let err = env.fails(&["lint", "--fix", "-"]);
    assert!(err.contains("standard input cannot be fixed"), "{err}");
    assert!(
        err.contains("help: --fix rewrites files: name the file itself to fix it"),
        "{err}"
    );
}

#[test]
fn neovim_opens_a_broken_file_and_sees_the_diagnostics() {
    const TEST: &str = "neovim_opens_a_broken_file_and_sees_the_diagnostics";
    let env = Env::new();
    let dir = project(&env);
    let file = dir.join("Agentfile");
    let Some(seen) = neovim(TEST, &env, "diagnostics.lua", &file) else {
        return;
    };
    // What Neovim shows is what `otters lint` reports: the same codes, lines and messages.
    let want: Vec<String> = from_lint(&env, &file)
        .into_iter()
        .map(|(code, message, line, ..)| format!("{line} {code} {message}"))
        .collect();
    let got: Vec<String> = seen
        .lines()
        .map(|l| {
            let (pos, rest) = l.split_once(' ').unwrap_or((l, ""));
            format!("{} {rest}", pos.split(':').next().unwrap_or(""))
        })
        .collect();
    assert!(got.iter().any(|l| l.contains("AF003")), "{seen}");
    let mut sorted_want = want.clone();
    sorted_want.sort();
    let mut sorted_got = got;
    sorted_got.sort();
    assert_eq!(sorted_got, sorted_want);
}

/// The server's peak resident memory (`VmHWM`), in KiB.
fn peak_kib(child: &Child) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// One 128 KB line with a finding every 7 bytes and a 2-byte character in each (issue 17.5 and
/// 17.6): every position used to be counted from the line's start (minutes in UTF-16 for this
/// file), and all ~18 000 findings were published (a 1 MiB file: one 263 MB notification, 3 GB
/// of server memory). Now the first 200 are published, exactly as `otters lint` reports them,
/// and one more counts the rest.
#[test]
fn a_long_line_of_findings_is_published_capped_and_promptly() {
    let env = Env::new();
    let mut names = Vec::new();
    let mut size = 0;
    while size < 128 * 1024 {
        let n = format!("é{}", names.len());
        size += n.len() + 1;
        names.push(n);
    }
    let text = format!(
        "FROM scratch\nNAME a\nMODEL m/x\nRUNTIME r@sha256:{}\nCAPABILITY {}\n",
        "a".repeat(64),
        names.join(" ")
    );
    let file = env.dir.path().join("Agentfile");
    std::fs::write(&file, &text).unwrap();
    let want = from_lint(&env, &file);
    assert_eq!(want.len(), names.len(), "one AF108 per name");
    let (mut c, _) = Client::start(&env, None);
    let published = c.open(&uri_of(&file), &text);
    let all = published["diagnostics"].as_array().unwrap();
    assert_eq!(all.len(), 201, "200 findings and the count of the rest");
    let (shown, rest) = all.split_at(200);
    assert_eq!(from_lsp(&json!(shown), &text, "utf-16"), want[..200]);
    let summary = &rest[0];
    let message = summary["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{} more findings", names.len() - 200))
            && message.contains("otters lint --format concise"),
        "{summary}"
    );
    assert_eq!(summary["severity"], 1, "as severe as the worst it counts");
    let at = (&want[200].2, &want[200].3);
    let start = &summary["range"]["start"];
    assert_eq!(
        (
            start["line"].as_u64().unwrap() + 1,
            char_column(&text, 4, start["character"].as_u64().unwrap(), "utf-16")
        ),
        (*at.0, *at.1),
        "at the first finding it counts"
    );
    // A code action at the end of the line converts positions there; the server keeps little.
    let end = text.lines().nth(4).unwrap().encode_utf16().count();
    let range =
        json!({"start": {"line": 4, "character": end}, "end": {"line": 4, "character": end}});
    c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri_of(&file)}, "range": range, "context": {"diagnostics": []}}),
    );
    let peak = peak_kib(&c.child);
    assert!(peak < 64 * 1024, "the server peaked at {peak} KiB");
    assert_eq!(c.finish(), 0);
}

/// Go-to-definition opens a CONTEXT or ADD source only where the build would read it (issue 17,
/// "Also"): an absolute path, `..` and a symlink out of the directory were opened as written.
#[test]
fn definition_opens_only_what_the_build_would_read() {
    let env = Env::new();
    let dir = env.dir.path().join("agent");
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/ok.md"), "ok\n").unwrap();
    std::fs::write(env.dir.path().join("secret"), "s\n").unwrap();
    std::os::unix::fs::symlink("../secret", dir.join("leak")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("abs")).unwrap();
    let text = "FROM scratch\nNAME a\nMODEL m/x\n\
        CONTEXT A file:///etc/passwd\n\
        ADD ../../../../../../etc/passwd /x\n\
        ADD ../secret /y\n\
        CONTEXT B file://leak\n\
        ADD abs /z\n\
        ADD /etc/shadow /w\n\
        CONTEXT C file://docs/ok.md\n";
    let file = dir.join("Agentfile");
    std::fs::write(&file, text).unwrap();
    let uri = uri_of(&file);
    let (mut c, _) = Client::start(&env, None);
    c.open(&uri, text);
    for (line, what) in [
        (3, "an absolute file:// path"),
        (4, "../ up to /etc/passwd"),
        (5, "../ to a file beside the directory"),
        (6, "a symlink out of the directory"),
        (7, "a symlink to /etc/passwd"),
        (8, "/etc/shadow"),
    ] {
        let col = text.lines().nth(line).unwrap().len() - 5;
        let src_col = if text.lines().nth(line).unwrap().starts_with("ADD") {
            6
        } else {
            col
        };
        let def = c.at("textDocument/definition", &uri, line, src_col);
        assert!(def.is_null(), "{what} (line {line}) was opened: {def}");
    }
    let def = c.at("textDocument/definition", &uri, 9, 20);
    assert_eq!(def["uri"], uri_of(&dir.join("docs/ok.md")));
    assert_eq!(c.finish(), 0);
}

/// A body that is not JSON is answered `-32700` and the session goes on (it ended the server
/// with status 1); JSON that is not a message is `-32600`, and so is a second `initialize`
/// (it got `-32601`, as if the server did not know the method). Issue 23, set-up 5.
#[test]
fn malformed_messages_and_a_second_initialize_are_answered_not_fatal() {
    let env = Env::new();
    let (mut c, _) = Client::start(&env, None);
    let raw = |c: &mut Client, body: &str| {
        write!(c.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        c.stdin.flush().unwrap();
    };
    raw(&mut c, "{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": ");
    let parse = c.wait("a parse error", |v| v.get("error").is_some());
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null, "{parse}");
    raw(&mut c, "{\"jsonrpc\": \"2.0\", \"id\": 6}");
    let invalid = c.wait("an invalid request", |v| v["id"] == 6);
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    c.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "initialize",
        "params": {"processId": null, "rootUri": null, "capabilities": {}}}));
    let again = c.wait("an answer to the second initialize", |v| v["id"] == 7);
    assert_eq!(again["error"]["code"], -32600, "{again}");
    // Still serving.
    let uri = "untitled:Agentfile";
    let published = c.open(uri, "FORM scratch\n");
    assert_eq!(published["diagnostics"][0]["code"], "AF003");
    assert_eq!(c.finish(), 0);
}

/// The suppression quick fix leaves the reason to the user: a snippet tab stop for a client that
/// takes snippet edits, else `<reason>`, which AF214 now reports (it was accepted as a reason,
/// by the server and by `otters lint`). Issue 23, set-up 6.
#[test]
fn the_suppression_fix_leaves_a_placeholder_that_af214_refuses() {
    let env = Env::new();
    let dir = project(&env);
    let uri = uri_of(&dir.join("Agentfile"));
    let snippets = json!({"workspace": {"workspaceEdit": {"snippetEditSupport": true}}});
    let line9 = json!({"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}});
    let ask = |c: &mut Client| {
        c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": line9, "context": {"diagnostics": []}}),
        )
    };
    let (mut c, _) = Client::start_with(&env, snippets);
    c.open(&uri, BROKEN);
    let actions = ask(&mut c);
    let change = &actions[0]["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], uri.as_str(), "{actions}");
    assert_eq!(
        change["edits"][0]["snippet"],
        json!({"kind": "snippet", "value": "# otters:ignore AF201 ${1:reason}\n"})
    );
    assert_eq!(c.finish(), 0);

    let (mut c, _) = Client::start(&env, None);
    c.open(&uri, BROKEN);
    let actions = ask(&mut c);
    let insert = actions[0]["edit"]["changes"][&uri][0]["newText"]
        .as_str()
        .unwrap();
    assert_eq!(insert, "# otters:ignore AF201 <reason>\n");
    let applied = BROKEN.replace("BIN yq", &format!("{insert}BIN yq"));
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": applied}]}),
    );
    let published = c.diagnostics(&uri);
    let af214: Vec<&Value> = published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "AF214")
        .collect();
    assert_eq!(af214.len(), 1, "{published}");
    assert!(
        af214[0]["message"]
            .as_str()
            .unwrap()
            .contains("`<reason>` is a placeholder"),
        "{published}"
    );
    assert_eq!(c.finish(), 0);
    // `otters lint` says the same of the file.
    std::fs::write(dir.join("Agentfile"), &applied).unwrap();
    let codes: Vec<String> = from_lint(&env, &dir.join("Agentfile"))
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert!(codes.contains(&"AF214".to_owned()), "{codes:?}");
}

/// Capability completion offers exactly names `otters lint` then accepts for the project's
/// targets, right after `CAPABILITY ` too (it offered nothing there, and elsewhere names with `_`
/// that AF232 flagged on the next keystroke). Issue 23, set-up 4.
#[test]
fn capability_completion_offers_only_what_lint_accepts() {
    let env = Env::new();
    let dir = env.dir.path().join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("Agentfile");
    let head =
        "FROM scratch\nNAME a\nMODEL m/x\nRUNTIME r@sha256:".to_owned() + &"a".repeat(64) + "\n";
    let text = format!("{head}CAPABILITY \n");
    for (config, expect_some) in [
        ("", false),
        ("[portability]\ntargets = [\"alpha.50\"]\n", true),
        ("[lint.severity]\nAF232 = \"off\"\n", true),
    ] {
        std::fs::write(env.dir.path().join("otters.toml"), config).unwrap();
        let (mut c, _) = Client::start(&env, None);
        c.open(&uri_of(&file), &text);
        let offered: Vec<String> = c
            .at("textDocument/completion", &uri_of(&file), 4, 11)
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["label"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(c.finish(), 0);
        assert_eq!(!offered.is_empty(), expect_some, "{config}: {offered:?}");
        if expect_some {
            assert!(offered.contains(&"note_save".to_owned()), "{offered:?}");
        }
        for name in &offered {
            std::fs::write(&file, format!("{head}CAPABILITY {name}\n")).unwrap();
            let on_line: Vec<String> = from_lint(&env, &file)
                .into_iter()
                .filter(|f| f.2 == 5)
                .map(|f| f.0)
                .collect();
            assert!(
                on_line.is_empty(),
                "{config}: `{name}` was offered and lint reports {on_line:?}"
            );
        }
    }
}

/// `source.fixAll` (fix on save): one edit giving the text `otters lint --fix` writes, offered
/// when the client asks for that kind; `context.only` is honoured (issue 23).
#[test]
fn fix_all_applies_what_lint_fix_applies_and_only_is_honoured() {
    let env = Env::new();
    let text = "from scratch\nNAEM a\nRUNTIMEXX r:1\nRUNTIME r:latest\nMODEL m/x\n";
    let file = env.dir.path().join("Agentfile");
    std::fs::write(&file, text).unwrap();
    let uri = uri_of(&file);
    let (mut c, init) = Client::start(&env, None);
    let kinds = &init["capabilities"]["codeActionProvider"]["codeActionKinds"];
    assert_eq!(
        kinds,
        &json!(["quickfix", "source.fixAll.otters"]),
        "{init}"
    );
    c.open(&uri, text);
    let ask = |c: &mut Client, only: Value| -> Vec<Value> {
        let range =
            json!({"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}});
        c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range,
                   "context": {"diagnostics": [], "only": only}}),
        )
        .as_array()
        .unwrap()
        .clone()
    };
    let fix_all = ask(&mut c, json!(["source.fixAll"]));
    assert_eq!(fix_all.len(), 1, "{fix_all:?}");
    assert_eq!(fix_all[0]["kind"], "source.fixAll.otters");
    let edit = &fix_all[0]["edit"]["changes"][&uri][0];
    assert_eq!(edit["range"]["start"], json!({"line": 0, "character": 0}));
    let offered = edit["newText"].as_str().unwrap().to_owned();
    assert_eq!(
        ask(&mut c, json!(["source"])).len(),
        1,
        "source covers source.fixAll"
    );
    let quick = ask(&mut c, json!(["quickfix"]));
    assert!(
        !quick.is_empty() && quick.iter().all(|a| a["kind"] == "quickfix"),
        "{quick:?}"
    );
    assert!(ask(&mut c, json!(["refactor"])).is_empty());
    assert_eq!(c.finish(), 0);
    // The same text `otters lint --fix` writes.
    env.run(&["lint", "--fix", file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), offered);
    assert_ne!(offered, text);
}

/// Pull diagnostics (`textDocument/diagnostic`, LSP 3.17) for a client that declares them:
/// the same findings as `otters lint`, `unchanged` for a result id that still holds, nothing
/// pushed (no finding shown twice), and a refresh request after a save (issue 23).
#[test]
fn pull_diagnostics_equal_lint_and_nothing_is_pushed() {
    let env = Env::new();
    let dir = project(&env);
    let file = dir.join("Agentfile");
    let uri = uri_of(&file);
    let caps = json!({"textDocument": {"diagnostic": {"dynamicRegistration": false}},
                      "workspace": {"diagnostics": {"refreshSupport": true}}});
    let (mut c, init) = Client::start_with(&env, caps);
    assert_eq!(
        init["capabilities"]["diagnosticProvider"]["interFileDependencies"], false,
        "{init}"
    );
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "agentfile", "version": 1, "text": BROKEN}}),
    );
    // Every message up to the answer: none may be a publishDiagnostics.
    c.next_id += 1;
    let id = c.next_id;
    c.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/diagnostic",
                   "params": {"textDocument": {"uri": uri}}}),
    );
    let report = c.wait("the pulled report", |v| {
        assert_ne!(
            v["method"], "textDocument/publishDiagnostics",
            "pushed: {v}"
        );
        v["id"] == id
    })["result"]
        .clone();
    assert_eq!(report["kind"], "full", "{report}");
    assert_eq!(
        from_lsp(&report["items"], BROKEN, "utf-16"),
        from_lint(&env, &file)
    );
    let previous = report["resultId"].as_str().unwrap().to_owned();
    let again = c.request(
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": uri}, "previousResultId": previous}),
    );
    assert_eq!(again, json!({"kind": "unchanged", "resultId": previous}));
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "FROM scratch\n"}]}),
    );
    let changed = c.request(
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": uri}, "previousResultId": previous}),
    );
    assert_eq!(changed["kind"], "full", "{changed}");
    assert_ne!(changed["resultId"], previous.as_str());
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let refresh = c.wait("a refresh request", |v| {
        v["method"] == "workspace/diagnostic/refresh"
    });
    assert!(refresh.get("id").is_some(), "{refresh}");
    assert_eq!(c.finish(), 0);
}

/// Semantic tokens, full and delta (issue 23): images, the model, capabilities, CONTEXT and ADD
/// names and paths, ARG names and each `${NAME}` (split out of the token holding it); a delta
/// applied to the previous tokens gives the full tokens of the new text.
#[test]
fn semantic_tokens_full_and_delta() {
    let env = Env::new();
    let text = "FROM scratch\nMODEL anthropic/x\nARG V=1\nBIN jq ghcr.io/o/jq:${V}\nCAPABILITY a-b\nCONTEXT S file://s.md\nENV K=${V}\n";
    let uri = "untitled:Agentfile";
    let (mut c, init) = Client::start(&env, None);
    let legend: Vec<String> = init["capabilities"]["semanticTokensProvider"]["legend"]
        ["tokenTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    c.open(uri, text);
    let decode = |data: &[u64]| -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let (mut line, mut col) = (0, 0);
        data.chunks(5)
            .map(|t| {
                if t[0] > 0 {
                    col = 0;
                }
                line += t[0];
                col += t[1];
                let l = lines[line as usize];
                let piece = &l[col as usize..(col + t[2]) as usize];
                format!(
                    "{}:{piece}:{}{}",
                    line,
                    legend[t[3] as usize],
                    if t[4] == 1 { "+decl" } else { "" }
                )
            })
            .collect()
    };
    let numbers = |v: &Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect()
    };
    let full = c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(
        decode(&numbers(&full["data"])),
        [
            "0:scratch:namespace",
            "1:anthropic/x:type",
            "2:V:variable+decl",
            "3:jq:property",
            "3:ghcr.io/o/jq::namespace",
            "3:${V}:variable",
            "4:a-b:enumMember",
            "5:S:property",
            "5:file://s.md:string",
            "6:${V}:variable",
        ]
    );
    let edited = text.replace("CAPABILITY a-b", "CAPABILITY a-b c-d");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    c.diagnostics(uri);
    let delta = c.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": uri}, "previousResultId": full["resultId"]}),
    );
    let mut data = numbers(&full["data"]);
    let edits = delta["edits"].as_array().expect("a delta");
    assert_eq!(edits.len(), 1, "{delta}");
    let (start, count) = (
        edits[0]["start"].as_u64().unwrap() as usize,
        edits[0]["deleteCount"].as_u64().unwrap() as usize,
    );
    data.splice(start..start + count, numbers(&edits[0]["data"]));
    assert!(
        data.len() < numbers(&full["data"]).len() + 6,
        "one token more"
    );
    let fresh = c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(data, numbers(&fresh["data"]));
    assert_eq!(c.finish(), 0);
}

/// ARG and ENV navigation (issue 23): references, documentHighlight, prepareRename (refusing
/// what cannot be renamed) and rename, which leaves `otters lint`'s findings as they were.
#[test]
fn arg_references_highlight_and_rename() {
    let env = Env::new();
    let text = "FROM scratch\nNAME a\nMODEL m/x\nARG V=1\nRUNTIME r:${V}\nBIN jq ghcr.io/o/jq:${V}\nENV K=1\nENV K=2\nCONTEXT P <<EOF\n${V} in a body is text\nEOF\n";
    let file = env.dir.path().join("Agentfile");
    std::fs::write(&file, text).unwrap();
    let uri = uri_of(&file);
    let (mut c, _) = Client::start(&env, None);
    c.open(&uri, text);
    let starts = |v: &Value| -> Vec<(u64, u64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let s = if l.get("range").is_some() {
                    &l["range"]["start"]
                } else {
                    &l["start"]
                };
                (
                    s["line"].as_u64().unwrap(),
                    s["character"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let at = |line: u64, character: u64| json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
    let mut refs = at(4, 12);
    refs["context"] = json!({"includeDeclaration": true});
    let found = c.request("textDocument/references", refs.clone());
    assert_eq!(
        starts(&found),
        [(3, 4), (4, 12), (5, 22)],
        "not the heredoc body: {found}"
    );
    refs["context"] = json!({"includeDeclaration": false});
    assert_eq!(
        starts(&c.request("textDocument/references", refs)),
        [(4, 12), (5, 22)]
    );
    let hl = c.request("textDocument/documentHighlight", at(3, 4));
    assert_eq!(hl[0]["kind"], 3, "the declaration is a write: {hl}");
    assert_eq!(hl[1]["kind"], 2);
    let env_refs = c.request("textDocument/documentHighlight", at(6, 4));
    assert_eq!(starts(&env_refs), [(6, 4), (7, 4)]);
    // prepareRename: the name's range, or a refusal.
    let range = c.request("textDocument/prepareRename", at(5, 23));
    assert_eq!(
        range,
        json!({"start": {"line": 5, "character": 22}, "end": {"line": 5, "character": 23}})
    );
    c.next_id += 1;
    let id = c.next_id;
    c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/prepareRename", "params": at(1, 5)}));
    let refused = c.wait("a refusal", |v| v["id"] == id);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("can be renamed"),
        "{refused}"
    );
    let mut bad = at(3, 4);
    bad["newName"] = json!("1x");
    c.next_id += 1;
    let id = c.next_id;
    c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/rename", "params": bad}));
    assert!(c.wait("a refusal", |v| v["id"] == id)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not a valid"));
    let mut rename = at(3, 4);
    rename["newName"] = json!("VERSION");
    let edit = c.request("textDocument/rename", rename);
    let mut edits: Vec<(usize, usize, usize)> = edit["changes"][&uri]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (s, e2) = (&e["range"]["start"], &e["range"]["end"]);
            (
                s["line"].as_u64().unwrap() as usize,
                s["character"].as_u64().unwrap() as usize,
                e2["character"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    edits.sort_unstable();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for (line, s, e) in edits.into_iter().rev() {
        lines[line].replace_range(s..e, "VERSION");
    }
    let renamed = lines.join("\n") + "\n";
    assert!(
        renamed.contains("ARG VERSION=1\nRUNTIME r:${VERSION}\nBIN jq ghcr.io/o/jq:${VERSION}"),
        "{renamed}"
    );
    assert!(renamed.contains("${V} in a body"), "{renamed}");
    let before: Vec<String> = from_lint(&env, &file).into_iter().map(|f| f.0).collect();
    std::fs::write(&file, &renamed).unwrap();
    let after: Vec<String> = from_lint(&env, &file).into_iter().map(|f| f.0).collect();
    assert_eq!(before, after);
    assert_eq!(c.finish(), 0);
}

impl Client {
    /// A request's whole answer, error or result.
    fn request_answer(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(method, |v| v["id"] == id)
    }
}

/// Range formatting changes only the lines of the range; a file with a syntax error is not
/// formatted, and the answer says why (which line), for the client to show. Issue 23.
#[test]
fn range_formatting_and_why_a_file_cannot_be_formatted() {
    let env = Env::new();
    let (mut c, init) = Client::start(&env, None);
    assert_eq!(
        init["capabilities"]["documentRangeFormattingProvider"],
        true
    );
    let uri = "untitled:Agentfile";
    c.open(uri, "from scratch\nNAME   a\nMODEL    m/x\nlabel a=b\n");
    let range = |l0: u32, c0: u32, l1: u32, c1: u32| {
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true},
            "range": {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}})
    };
    let edits = c.request("textDocument/rangeFormatting", range(1, 2, 2, 3));
    let edits = edits.as_array().expect("edits");
    let lines: Vec<(u64, &str)> = edits
        .iter()
        .map(|e| {
            (
                e["range"]["start"]["line"].as_u64().unwrap(),
                e["newText"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines, [(1, "NAME a\n"), (2, "MODEL m/x\n")], "{edits:?}");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": "FROM scratch\nNAME a\nCONTEXT P <<EOF\nx\n"}]}),
    );
    c.diagnostics(uri);
    for (method, params) in [
        ("textDocument/rangeFormatting", range(0, 0, 1, 0)),
        (
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
        ),
    ] {
        let a = c.request_answer(method, params);
        assert_eq!(a["error"]["code"], -32803, "{method}: {a}");
        let why = a["error"]["message"].as_str().unwrap();
        assert!(
            why.contains("cannot format") && why.contains("line 3"),
            "{method}: {why}"
        );
    }
    assert_eq!(c.finish(), 0);
}

/// Runs `tests/suite/lsp_nvim/<script>` in headless Neovim on `file` with the real binary;
/// returns what it wrote, or `None` when Neovim is not installed (`test` names the skip).
fn neovim(test: &str, env: &Env, script: &str, file: &Path) -> Option<String> {
    neovim_with(test, env, script, file, &[])
}

/// [`neovim`] with more environment variables for the script.
fn neovim_with(
    test: &str,
    env: &Env,
    script: &str,
    file: &Path,
    vars: &[(&str, &str)],
) -> Option<String> {
    let install = "install Neovim (Debian: apt-get install neovim)";
    if !crate::support::tools::require(test, "nvim", &["--version"], install) {
        return None;
    }
    let out = env.dir.path().join(format!("{script}.out"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/lsp_nvim")
        .join(script);
    let mut nvim = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("OTTERS_BIN", assert_cmd::cargo::cargo_bin("otters"))
        .env("OTTERS_HOME", env.home())
        .env("AGENTFILE", file)
        .env("OUT", &out)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start nvim");
    assert_eq!(wait_exit(&mut nvim), 0);
    Some(std::fs::read_to_string(&out).expect("nvim wrote what it saw"))
}

/// Neovim range-formats two lines through the server and applies the edits; the rest of the
/// file is untouched. A formatting request on a broken buffer gets the reason as its error.
#[test]
fn neovim_range_formats_and_is_told_why_a_broken_file_is_not_formatted() {
    const TEST: &str = "neovim_range_formats_and_is_told_why_a_broken_file_is_not_formatted";
    let env = Env::new();
    let file = env.dir.path().join("Agentfile");
    std::fs::write(&file, "from scratch\nNAME   a\nMODEL    m/x\nlabel a=b\n").unwrap();
    let Some(seen) = neovim(TEST, &env, "format.lua", &file) else {
        return;
    };
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(
        lines[..4],
        ["from scratch", "NAME a", "MODEL m/x", "label a=b"],
        "{seen}"
    );
    assert!(
        lines[4].starts_with("ERROR otters cannot format") && lines[4].contains("line 5"),
        "{seen}"
    );
}

/// The codes of a publishDiagnostics notification, sorted.
fn codes(published: &Value) -> Vec<String> {
    let mut out: Vec<String> = published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap_or("").to_owned())
        .collect();
    out.sort();
    out
}

/// The editor's settings reach the checks as `otters lint`'s flags do: from
/// `initializationOptions`, from `workspace/didChangeConfiguration`, and from the client's answer
/// to `workspace/configuration`; `run = onSave` holds the findings until a save; a bad setting is
/// shown, not fatal. Issue 23.
#[test]
fn settings_from_initialization_change_and_configuration_pull() {
    let env = Env::new();
    let dir = env.dir.path().join("ws");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("caps.txt"), "# ours\nnote_save\nteleport\n").unwrap();
    let text = "FROM scratch\nNAME a\nMODEL m/x\nCAPABILITY note_save\nCAPABILITY teleport\n";
    let file = dir.join("Agentfile");
    std::fs::write(&file, text).unwrap();
    let uri = uri_of(&file);
    let root = uri_of(&dir);
    let start = |caps: Value, init: Value| {
        let mut cmd = json!({"processId": null, "rootUri": root, "capabilities": caps});
        cmd["initializationOptions"] = init;
        cmd
    };
    // Defaults: `teleport` is not in the built-in catalogue (AF211); `note_save` has `_` (AF232).
    let (mut c, _) = Client::start(&env, None);
    let defaults = codes(&c.open(&uri, text));
    assert!(
        defaults.contains(&"AF211".to_owned()) && defaults.contains(&"AF232".to_owned()),
        "{defaults:?}"
    );
    assert_eq!(c.finish(), 0);

    // initializationOptions: target alpha.50 only, and the capability list (relative to the root).
    let (mut c, _) = Client::start_raw(
        &env,
        start(
            json!({}),
            json!({"otters": {"targets": ["alpha.50"], "capabilities": "caps.txt"}}),
        ),
    );
    let configured = codes(&c.open(&uri, text));
    assert!(
        !configured.contains(&"AF211".to_owned()) && !configured.contains(&"AF232".to_owned()),
        "{configured:?}"
    );
    // didChangeConfiguration back to the defaults: every open document is checked again.
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"otters": {}}}),
    );
    assert_eq!(codes(&c.diagnostics(&uri)), defaults);
    // A setting that does not fit is shown on the first line; the defaults apply.
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"otters": {"targets": ["alpha.49"]}}}),
    );
    let bad = c.diagnostics(&uri);
    let first = bad["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        first.contains("otters settings: targets: \"alpha.49\""),
        "{bad}"
    );
    // run = onSave: an edit is not checked until the save.
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"otters": {"run": "onSave"}}}),
    );
    assert_eq!(codes(&c.diagnostics(&uri)), defaults);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "FORM scratch\n"}]}),
    );
    // Nothing is published before the answer to a request sent after the edit.
    c.next_id += 1;
    let id = c.next_id;
    c.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
        "params": {"textDocument": {"uri": uri}}}),
    );
    let mut early = Vec::new();
    c.wait("documentSymbol", |v| {
        early.push(v["method"].clone());
        v["id"] == id
    });
    assert!(
        !early.contains(&json!("textDocument/publishDiagnostics")),
        "the edit was published before the save: {early:?}"
    );
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let saved = c.diagnostics(&uri);
    assert!(codes(&saved).contains(&"AF003".to_owned()), "{saved}");
    assert_eq!(c.finish(), 0);

    // A client that answers workspace/configuration is asked after `initialized`.
    let (mut c, _) = Client::start_raw(
        &env,
        start(json!({"workspace": {"configuration": true}}), Value::Null),
    );
    let ask = c.wait("workspace/configuration", |v| {
        v["method"] == "workspace/configuration"
    });
    assert_eq!(ask["params"]["items"][0]["section"], "otters", "{ask}");
    c.open(&uri, text);
    c.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": [{"targets": ["alpha.50"], "capabilities": "caps.txt"}]}));
    assert_eq!(codes(&c.diagnostics(&uri)), configured);
    assert_eq!(c.finish(), 0);
}

/// Neovim's `settings` reach the server (its answer to `workspace/configuration`): with the
/// capability list and target alpha.50 set, AF211 and AF232 go away.
#[test]
fn neovim_settings_reach_the_checks() {
    const TEST: &str = "neovim_settings_reach_the_checks";
    let env = Env::new();
    let dir = env.dir.path().join("ws");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("caps.txt"), "note_save\nteleport\n").unwrap();
    let file = dir.join("Agentfile");
    std::fs::write(
        &file,
        "FROM scratch\nNAME a\nMODEL m/x\nCAPABILITY note_save\nCAPABILITY teleport\nENV path=1\n",
    )
    .unwrap();
    let settings = r#"{"otters": {"targets": ["alpha.50"], "capabilities": "caps.txt"}}"#;
    let Some(seen) = neovim_with(
        TEST,
        &env,
        "diagnostics.lua",
        &file,
        &[("SETTINGS", settings), ("GONE", "AF211")],
    ) else {
        return;
    };
    assert!(!seen.is_empty(), "no diagnostics");
    assert!(
        !seen.contains("AF211") && !seen.contains("AF232"),
        "the settings did not reach the checks:\n{seen}"
    );
}

/// Document links (CONTEXT and ADD files where the build would read them, image references to
/// their registry page where one is known), inlay hints (`${NAME}` values, lock-pinned digests)
/// and plain-text hover for a client that takes no markdown. Issue 23.
#[test]
fn links_inlay_hints_and_plain_text_hover() {
    let env = Env::new();
    let dir = project(&env);
    std::fs::write(env.dir.path().join("secret"), "x\n").unwrap();
    let uri = uri_of(&dir.join("Agentfile"));
    let text = "FROM scratch\nRUNTIME ghcr.io/o/runtime:latest\nNAME a\nMODEL m/x\nARG VERSION=1\nBIN jq ghcr.io/o/jq:${VERSION}\nBIN k bitnami/kubectl:1.30\nCONTEXT S file://ctx.md\nADD ../secret\n";
    let caps = json!({"textDocument": {
        "hover": {"contentFormat": ["plaintext"]},
        "completion": {"completionItem": {"documentationFormat": ["plaintext"]}},
    }});
    let (mut c, init) = Client::start_with(&env, caps);
    assert!(
        init["capabilities"]["documentLinkProvider"].is_object(),
        "{init}"
    );
    assert_eq!(init["capabilities"]["inlayHintProvider"], true, "{init}");
    c.open(&uri, text);

    let links = c.request(
        "textDocument/documentLink",
        json!({"textDocument": {"uri": uri}}),
    );
    let got: Vec<(u64, u64, &str)> = links
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["range"]["start"]["character"].as_u64().unwrap(),
                l["target"].as_str().unwrap(),
            )
        })
        .collect();
    let ctx = uri_of(&std::fs::canonicalize(dir.join("ctx.md")).unwrap());
    // No link for ADD ../secret (outside the context: the build refuses it) nor for ghcr.io.
    assert_eq!(
        got,
        [
            (6, 6, "https://hub.docker.com/r/bitnami/kubectl"),
            (7, 10, ctx.as_str()),
        ],
        "{links}"
    );

    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}}}),
    );
    let got: Vec<(u64, u64, &str)> = hints
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["position"]["line"].as_u64().unwrap(),
                h["position"]["character"].as_u64().unwrap(),
                h["label"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, 32, "@sha256:aaaaaaaaaaaa…"),
            (5, 30, "= 1"),
            (5, 30, "@sha256:aaaaaaaaaaaa…"),
        ],
        "{hints}"
    );
    // A range holding only line 4 has none.
    let none = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri},
            "range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 5}}}),
    );
    assert_eq!(none, json!([]));

    let hover = c.at("textDocument/hover", &uri, 1, 0);
    assert_eq!(hover["contents"]["kind"], "plaintext", "{hover}");
    let value = hover["contents"]["value"].as_str().unwrap();
    assert!(
        value.starts_with("RUNTIME") && !value.contains('`') && !value.contains("**"),
        "{value}"
    );
    let items = c.at("textDocument/completion", &uri, 2, 0);
    let doc = &items[0]["documentation"];
    assert_eq!(doc["kind"], "plaintext", "{items}");
    assert!(!doc["value"].as_str().unwrap().contains('`'), "{doc}");
    assert_eq!(c.finish(), 0);
}

/// Workspace diagnostics: the closed Agentfiles under the root, with the findings `otters lint`
/// reports for them; an open one is left to textDocument/diagnostic, a hidden directory is not
/// entered, an unchanged file is answered `unchanged`, and a save makes every result new.
/// Issue 23.
#[test]
fn workspace_diagnostics_cover_the_closed_agentfiles() {
    let env = Env::new();
    let dir = project(&env);
    let root = env.dir.path();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    std::fs::write(root.join("b/web.agentfile"), "FORM scratch\n").unwrap();
    std::fs::write(root.join(".hidden/Agentfile"), "FORM scratch\n").unwrap();
    std::fs::write(root.join("open.agentfile"), "FORM scratch\n").unwrap();
    let caps = json!({"textDocument": {"diagnostic": {}}});
    let (mut c, init) = Client::start_raw(
        &env,
        json!({"processId": null, "rootUri": uri_of(root), "capabilities": caps}),
    );
    assert_eq!(
        init["capabilities"]["diagnosticProvider"]["workspaceDiagnostics"],
        true
    );
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri_of(&root.join("open.agentfile")), "languageId": "agentfile", "version": 1, "text": "FORM scratch\n"}}),
    );
    let report = c.request("workspace/diagnostic", json!({"previousResultIds": []}));
    let items = report["items"].as_array().unwrap();
    let uris: Vec<&str> = items.iter().map(|i| i["uri"].as_str().unwrap()).collect();
    let agent = uri_of(&dir.join("Agentfile"));
    let web = uri_of(&root.join("b/web.agentfile"));
    assert_eq!(uris, [agent.as_str(), web.as_str()], "{report}");
    let text = std::fs::read_to_string(dir.join("Agentfile")).unwrap();
    let mut got = from_lsp(&items[0]["items"], &text, "utf-16");
    let mut want = from_lint(&env, &dir.join("Agentfile"));
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Asked again with the result ids: nothing changed.
    let previous: Vec<Value> = items
        .iter()
        .map(|i| json!({"uri": i["uri"], "value": i["resultId"]}))
        .collect();
    let again = c.request(
        "workspace/diagnostic",
        json!({"previousResultIds": previous}),
    );
    let kinds: Vec<&str> = again["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unchanged", "unchanged"], "{again}");
    // A save may have changed otters.toml or a lock: every result is new.
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri_of(&root.join("open.agentfile"))}}),
    );
    let after = c.request(
        "workspace/diagnostic",
        json!({"previousResultIds": previous}),
    );
    assert_eq!(after["items"][0]["kind"], "full", "{after}");
    assert_eq!(c.finish(), 0);
}

/// Code lenses "otters lock" and "otters build" above the first instruction; executing one runs
/// the real command for the document's directory and shows how it ended (window/showMessage);
/// a directory that is not an open Agentfile's is refused. Issue 23.
#[test]
fn code_lens_runs_otters_lock_and_says_how_it_ended() {
    let env = Env::new();
    let dir = env.dir.path().join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    let text = "# syntax=openotters/agentfile:1\nFROM scratch\nNAME a\nMODEL m/x\n";
    std::fs::write(dir.join("Agentfile"), text).unwrap();
    let uri = uri_of(&dir.join("Agentfile"));
    let (mut c, init) = Client::start(&env, None);
    assert_eq!(
        init["capabilities"]["executeCommandProvider"]["commands"],
        json!(["otters.lock", "otters.build"])
    );
    c.open(&uri, text);
    let lenses = c.request(
        "textDocument/codeLens",
        json!({"textDocument": {"uri": uri}}),
    );
    let got: Vec<(u64, &str, &str)> = lenses
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["command"]["title"].as_str().unwrap(),
                l["command"]["command"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, "otters lock", "otters.lock"),
            (1, "otters build", "otters.build")
        ],
        "{lenses}"
    );
    let lock = lenses[0]["command"].clone();
    let done = c.request(
        "workspace/executeCommand",
        json!({"command": lock["command"], "arguments": lock["arguments"]}),
    );
    assert!(done.is_null(), "{done}");
    let shown = c.wait("window/showMessage", |v| {
        v["method"] == "window/showMessage"
    });
    assert_eq!(shown["params"]["type"], 3, "{shown}");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("otters lock ") && message.contains("wrote"),
        "{message}"
    );
    assert!(dir.join("Agentfile.lock").is_file());
    let refused = c.request_answer(
        "workspace/executeCommand",
        json!({"command": "otters.lock", "arguments": ["/"]}),
    );
    assert_eq!(refused["error"]["code"], -32803, "{refused}");
    assert_eq!(c.finish(), 0);
}
