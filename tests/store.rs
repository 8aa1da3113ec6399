//! The local store commands through the real binary: images, inspect, tag, rm, save, load.

use assert_cmd::Command;
use std::path::PathBuf;

struct Env {
    home: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("otters").unwrap();
        c.env("OTTERS_HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env_remove("SOURCE_DATE_EPOCH");
        c
    }

    fn stdout(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).assert().success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    }
}

fn minimal() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/build/minimal")
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/build"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn tag_images_inspect_rm() {
    let env = Env::new();
    let digest = env
        .stdout(&[
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            minimal().to_str().unwrap(),
        ])
        .trim()
        .to_owned();
    env.cmd()
        .args(["tag", "tiny", "127.0.0.1:5000/team/tiny:v1"])
        .assert()
        .success();
    env.cmd()
        .args(["tag", &digest[7..19], "alias"])
        .assert()
        .success();
    snapshot("images_json", &env.stdout(&["images", "--format", "json"]));
    let table = env.stdout(&["images"]);
    assert!(table.starts_with("REFERENCE"), "{table}");
    assert!(
        table.contains("127.0.0.1:5000/team/tiny:v1") && table.contains(&digest[7..19]),
        "{table}"
    );

    snapshot(
        "inspect_json",
        &env.stdout(&["inspect", "alias:latest", "--format", "json"]),
    );
    let text = env.stdout(&["inspect", &digest]);
    assert!(
        text.contains("agent.yaml") && text.contains("application/vnd.openotters.agentfile"),
        "{text}"
    );

    env.cmd()
        .args(["rm", "alias", "tiny:latest"])
        .assert()
        .success();
    let left: serde_json::Value =
        serde_json::from_str(&env.stdout(&["images", "--format", "json"])).unwrap();
    assert_eq!(left.as_array().unwrap().len(), 1);
    let out = env.cmd().args(["rm", "alias"]).assert().failure().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr)
        .contains("image `alias` is not in the local store"));
    let out = env
        .cmd()
        .args(["inspect", "nope:1"])
        .assert()
        .failure()
        .code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("otters images"));
    env.cmd()
        .args(["tag", "127.0.0.1:5000/team/tiny:v1", "bad name"])
        .assert()
        .failure();
}

#[test]
fn save_and_load_round_trip_into_an_empty_store() {
    let a = Env::new();
    let digest = a
        .stdout(&[
            "build",
            "--offline",
            "--allow-unpinned",
            "-q",
            "-t",
            "tiny:2",
            minimal().to_str().unwrap(),
        ])
        .trim()
        .to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tiny.tar");
    a.cmd()
        .args(["save", "tiny:2", "-o", file.to_str().unwrap()])
        .assert()
        .success();
    let first = std::fs::read(&file).unwrap();
    a.cmd()
        .args(["save", "tiny:2", "-o", file.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(
        first,
        std::fs::read(&file).unwrap(),
        "save is deterministic"
    );

    let b = Env::new();
    assert_eq!(
        b.stdout(&["load", "-i", file.to_str().unwrap()]).trim(),
        format!("tiny:2 {digest}")
    );
    let v: serde_json::Value =
        serde_json::from_str(&b.stdout(&["inspect", "tiny:2", "--format", "json"])).unwrap();
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["config"]["agent"]["name"], "tiny");

    std::fs::write(&file, b"not a tar").unwrap();
    b.cmd()
        .args(["load", "-i", file.to_str().unwrap()])
        .assert()
        .failure()
        .code(1);
}
