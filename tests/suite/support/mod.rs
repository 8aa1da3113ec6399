//! Shared test harness: real registries (no auth, htpasswd, token), a token server, and builders
//! for small OCI images (bins, runtimes, openotters-style agents), oras-py as a third-party client,
//! the skip rule for missing tools, the [`World`] fixture (a temp machine and a registry) and the
//! checkout's paths ([`repo`], [`fixture`]).
//!
//! The one set of helpers of the suite: a helper two test files need lives here, not as a copy in
//! each. Everything lives in temp dirs on free ports, so tests run in parallel. Never used by the
//! library.

pub mod ci_tools;
pub mod cli;
pub mod harness;
pub mod hostile_layers;
pub mod images;
pub mod oras;
pub mod registry;
pub mod runnable;
pub mod snap;
pub mod tls_registry;
pub mod token;
pub mod tools;
pub mod world;

pub use world::World;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (this checkout): where `testdata/`, `examples/`, `snapshots/`, `docs/` and
/// the suite's harness ([`harness`]) are found.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `testdata/build/<case>`: a build context of the checkout (`minimal` is FROM scratch, a RUNTIME,
/// NAME tiny).
pub fn fixture(case: &str) -> PathBuf {
    repo().join("testdata/build").join(case)
}

/// Runs a command and returns its stdout, panicking with stderr when it fails.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `sha256:<hex>` of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Writes a file, creating parent directories.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Sets its flag when dropped: stops the pruner of [`beside_a_pruner`] however the rounds end, a
/// failed assertion too (`thread::scope` waits for the thread before it passes the panic on).
struct Stop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Runs `round(0..rounds)` while another thread runs `otters prune` on `home`'s store again and
/// again (no age rule: only leases protect what a command wrote and has not made reachable), and
/// asserts the pruner freed something, so a race was exercised.
pub fn beside_a_pruner(home: &Path, rounds: usize, round: impl Fn(usize)) {
    let done = std::sync::atomic::AtomicBool::new(false);
    let freed = std::thread::scope(|s| {
        let pruner = s.spawn(|| {
            let mut freed = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let out = cli::ok(cli::otters(home).args(["prune", "--format", "json"]));
                let v: serde_json::Value = serde_json::from_str(&out).expect("prune's JSON");
                freed += v["freedBytes"].as_u64().expect("freedBytes");
            }
            freed
        });
        let stop = Stop(&done);
        (0..rounds).for_each(&round);
        drop(stop);
        pruner.join().expect("the pruner")
    });
    assert!(
        freed > 0,
        "the pruner never removed anything: no race was exercised"
    );
}

/// `n` bytes that do not compress (xorshift), different for each `seed`: a layer whose transfer
/// lasts while others go.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Decodes `%XX` escapes of a URL query value (bytes that are not UTF-8 become U+FFFD); a `+` stays
/// a `+` (form decoding replaces it with a space first).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Bytes, not a `&str` slice: a multi-byte character after `%` must not panic on a
        // char boundary.
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn percent_decode_takes_a_final_escape_and_a_multibyte_character_after_a_percent() {
    assert_eq!(percent_decode("a%2Fb%41"), "a/bA");
    // `%` followed by a two-byte character: kept as written, no panic on the char boundary.
    assert_eq!(percent_decode("%1é"), "%1é");
    assert_eq!(percent_decode("%zz%"), "%zz%");
}

/// The OCI architecture name of this machine.
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "arm" => "arm",
        "x86" => "386",
        other => other,
    }
}
