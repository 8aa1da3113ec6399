//! Keyless signing through the real binary, offline: `otters sign --keyless` against the mock
//! Fulcio, Rekor and timestamp authority of `../shared/supply/keyless/` (npm `@sigstore/mock` on
//! 127.0.0.1: a mock because the real services are on the internet; the test says so), the image
//! pushed to a real `docker-registry`, the bundle pulled back with `pull --referrers` and judged by
//! the independent verifier on npm `@sigstore/verify` (`verify_keyless.mjs`), which must accept the
//! right identity and issuer and refuse a wrong, prefix or other-issuer one.

use crate::support::cli::{json, Env};
use crate::support::registry::Registry;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const GITHUB_ID: &str = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
const GITHUB_ISS: &str = "https://token.actions.githubusercontent.com";

fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/supply/keyless")
}

/// The mock services, killed on drop.
struct Mock {
    child: Child,
    /// Holds the trusted root and the env file while the mock runs.
    _dir: tempfile::TempDir,
    vars: std::collections::HashMap<String, String>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mock {
    /// Starts `node serve.mjs DIR`, or `None` after a skip when node or the harness is missing.
    fn start(test: &str) -> Option<Mock> {
        let npm = std::env::var("KEYLESS_NPM").unwrap_or_else(|_| "/tmp/bars-npm-keyless".into());
        if !Path::new(&npm).join("node_modules/@sigstore/mock").is_dir() {
            crate::support::tools::skip(
                test,
                "the keyless harness is not installed (bash ../shared/supply/keyless/install.sh, or .ci/install)",
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new("node")
            .arg(harness().join("serve.mjs"))
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node serve.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.starts_with("keyless mock ready:"));
        assert!(ready, "the keyless mock did not start");
        let vars = std::fs::read_to_string(dir.path().join("env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Some(Mock {
            child,
            _dir: dir,
            vars,
        })
    }

    fn var(&self, k: &str) -> &str {
        &self.vars[k]
    }

    /// `node token.mjs ARGS…`: a token the mock Fulcio accepts.
    fn token(args: &[&str]) -> String {
        let o = Command::new("node")
            .arg(harness().join("token.mjs"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().trim().to_owned()
    }

    /// `verify_keyless.mjs BUNDLE TRUSTED_ROOT --identity ID --issuer ISS DIGEST`: (ok, output).
    fn verify(&self, bundle: &Path, identity: &str, issuer: &str, digest: &str) -> (bool, String) {
        let o = Command::new("node")
            .arg(harness().join("verify_keyless.mjs"))
            .arg(bundle)
            .arg(self.var("TRUSTED_ROOT"))
            .args(["--identity", identity, "--issuer", issuer, digest])
            .output()
            .unwrap();
        (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    }
}

fn build_and_push(env: &Env, tag: &str) -> String {
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\nCONTEXT SOUL <<EOF\nBe brief.\nEOF\n",
    );
    let digest = env
        .ok(&["build", "-q", "-t", tag, ctx.to_str().unwrap()])
        .trim()
        .to_owned();
    env.ok(&["push", "-q", tag]);
    digest
}

/// The bundle layer of the referrer manifest `referrer` in `env`'s store.
fn bundle_of(env: &Env, referrer: &str) -> PathBuf {
    let manifest = json(&std::fs::read_to_string(env.store_blob(referrer)).unwrap());
    env.store_blob(manifest["layers"][0]["digest"].as_str().unwrap())
}

#[test]
fn keyless_bundle_from_the_registry_passes_the_independent_verifier_by_identity() {
    const TEST: &str =
        "keyless_bundle_from_the_registry_passes_the_independent_verifier_by_identity";
    let Some(mock) = Mock::start(TEST) else {
        return;
    };
    let reg = Registry::start();
    let env = Env::new();
    let tag = format!("{}/agents/demo:1", reg.addr);
    let digest = build_and_push(&env, &tag);
    let token = Mock::token(&["--github", "acme/agents"]);
    let (ok, out, err) = env.run(&[
        "sign",
        "--remote",
        &tag,
        "--keyless",
        "--fulcio-url",
        mock.var("FULCIO_URL"),
        "--rekor-url",
        mock.var("REKOR_URL"),
        "--tsa-url",
        mock.var("TSA_URL"),
        "--identity-token",
        &token,
    ]);
    assert!(ok, "{err}");
    let referrer = out.trim().to_owned();
    // The ephemeral key never reached the disk: the store holds no private key.
    let stored = std::fs::read_dir(env.store().join("blobs/sha256")).unwrap();
    for f in stored {
        let text = std::fs::read(f.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&text).contains("PRIVATE KEY"));
    }

    // Pulled from the registry into a fresh store.
    let puller = Env::new();
    puller.ok(&["pull", "-q", "--referrers", &tag]);
    let bundle = bundle_of(&puller, &referrer);
    let b = json(&std::fs::read_to_string(&bundle).unwrap());
    assert_eq!(
        b["mediaType"],
        "application/vnd.dev.sigstore.bundle.v0.3+json"
    );
    assert!(
        b["verificationMaterial"]["certificate"]["rawBytes"].is_string(),
        "the leaf alone"
    );
    assert!(b["verificationMaterial"]
        .get("x509CertificateChain")
        .is_none());
    let entry = &b["verificationMaterial"]["tlogEntries"][0];
    assert_eq!(entry["kindVersion"]["kind"], "dsse");
    assert!(
        entry["inclusionProof"]["checkpoint"]["envelope"].is_string(),
        "{entry}"
    );
    assert!(
        entry["inclusionPromise"]["signedEntryTimestamp"].is_string(),
        "{entry}"
    );

    let (ok, said) = mock.verify(&bundle, GITHUB_ID, GITHUB_ISS, &digest);
    assert!(
        ok,
        "the independent verifier refused otters' keyless bundle: {said}"
    );
    for (id, iss, why) in [
        (
            &GITHUB_ID[..GITHUB_ID.len() - 1],
            GITHUB_ISS,
            "a prefix of the identity",
        ),
        (
            "https://github.com/acme/other/.github/workflows/ci.yml@refs/heads/main",
            GITHUB_ISS,
            "another identity",
        ),
        (GITHUB_ID, "https://gitlab.com", "another issuer"),
    ] {
        let (ok, said) = mock.verify(&bundle, id, iss, &digest);
        assert!(!ok, "accepted {why}: {said}");
    }
    let other = format!("sha256:{}", "0".repeat(64));
    assert!(
        !mock.verify(&bundle, GITHUB_ID, GITHUB_ISS, &other).0,
        "another digest"
    );
}

#[test]
fn keyless_signing_without_a_token_or_a_trusted_time_says_what_to_do() {
    let env = Env::new();
    let ctx = env.dir.path().join("ctx");
    crate::support::write(
        &ctx.join("Agentfile"),
        "FROM scratch\nNAME demo\nMODEL openai/gpt-4o\n",
    );
    env.ok(&["build", "-q", "-t", "demo:1", ctx.to_str().unwrap()]);
    let err = {
        let o = env
            .otters()
            .env_remove("SIGSTORE_ID_TOKEN")
            .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
            .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
            .args(["sign", "demo:1", "--keyless"])
            .output()
            .unwrap();
        assert!(!o.status.success());
        crate::support::cli::flat(&String::from_utf8_lossy(&o.stderr))
    };
    assert!(
        err.contains("--identity-token") && err.contains("id-token: write"),
        "{err}"
    );
    let err = env.fails(&[
        "sign",
        "demo:1",
        "--keyless",
        "--identity-token",
        "a.e30.c",
        "--rekor-url",
        "none",
    ]);
    assert!(err.contains("no trusted time"), "{err}");
    let err = env.fails(&["sign", "demo:1", "--keyless", "--key", "k.key"]);
    assert!(err.contains("cannot be used with"), "{err}");
    // Plain HTTP to a host that is not this machine is refused before anything is sent.
    let err = env.fails(&[
        "sign",
        "demo:1",
        "--keyless",
        "--identity-token",
        "e30.eyJpc3MiOiJpIiwic3ViIjoicyJ9.c2ln",
        "--fulcio-url",
        "http://fulcio.example",
    ]);
    assert!(err.contains("plain HTTP"), "{err}");
}
