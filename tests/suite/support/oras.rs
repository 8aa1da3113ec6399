//! oras-py (the package `oras` on `PyPI`), an independent OCI artifact client, driven through
//! `python3 -c` against a plain-HTTP registry.
//!
//! Takes: a registry address, a reference and a directory. Returns: what oras-py reports (the
//! files it wrote, the status of a push). Must never: talk to anything but the given registry.

use std::path::Path;
use std::process::Command;

/// Probe: oras-py is importable by `python3`.
pub const PROBE: [&str; 2] = ["-c", "import oras.client"];

/// Pulls `target` into `outdir` with `OrasClient.pull`; prints the returned paths as JSON.
const PULL: &str = r#"
import json, sys
import oras.client
host, target, outdir = sys.argv[1:4]
c = oras.client.OrasClient(hostname=host, insecure=True)
files = c.pull(target=target, outdir=outdir)
print("ORAS-RESULT " + json.dumps(files))
"#;

/// Pushes files (paths relative to the working directory) to `target` with `OrasClient.push`.
const PUSH: &str = r#"
import json, sys
import oras.client
host, target = sys.argv[1:3]
c = oras.client.OrasClient(hostname=host, insecure=True)
r = c.push(target=target, files=sys.argv[3:])
print("ORAS-RESULT " + json.dumps(r.status_code))
"#;

/// The JSON after the `ORAS-RESULT ` marker (oras-py may log other lines to stdout).
fn result(out: &str) -> serde_json::Value {
    let line = out
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("ORAS-RESULT "))
        .unwrap_or_else(|| panic!("oras-py printed no result:\n{out}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bad oras-py result ({e}): {line}"))
}

/// `OrasClient(hostname=addr, insecure=True).pull(target, outdir=outdir)`: the paths it returns.
pub fn pull(addr: &str, target: &str, outdir: &Path) -> Vec<String> {
    let out = super::run_ok(
        Command::new("python3")
            .args(["-c", PULL, addr, target])
            .arg(outdir),
    );
    result(&out)
        .as_array()
        .unwrap_or_else(|| panic!("oras-py pull returned no list:\n{out}"))
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `OrasClient(...).push(target, files=files)` run in `dir`; returns the HTTP status of the
/// manifest PUT. oras-py titles each layer with the path as given.
pub fn push(addr: &str, target: &str, dir: &Path, files: &[&str]) -> u64 {
    let out = super::run_ok(
        Command::new("python3")
            .current_dir(dir)
            .args(["-c", PUSH, addr, target])
            .args(files),
    );
    result(&out).as_u64().unwrap_or(0)
}
