//! `otters key generate --out PREFIX`: a new ECDSA P-256 signing key pair, `PREFIX.key` (PKCS#8
//! PEM, mode 0600) and `PREFIX.pub` (PKIX PEM), for `otters sign-blob` and the registry-side
//! signing commands (docs/supply-chain.md).
//!
//! Takes: a path prefix. Returns: the two files and the key's hint on stdout. Must never: replace
//! an existing file (both are created with `O_EXCL`).
use super::CliResult;
use crate::view;
use miette::miette;
use otters_cli::key::{GenerateArgs, KeyCommand};
use otters_supply::keys::KeyPair;
use std::process::ExitCode;

pub fn run(c: KeyCommand) -> CliResult {
    match c {
        KeyCommand::Generate(a) => generate(&a),
    }
}

fn generate(a: &GenerateArgs) -> CliResult {
    if a.out.as_os_str().is_empty() {
        return Err(miette!(
            "--out is empty: give a path prefix such as `ci/signing`"
        ));
    }
    let key = KeyPair::generate();
    let (private, public) = key.write_new(&a.out).map_err(super::fail)?;
    outln!(
        "private key: {} (mode 0600; keep it secret)",
        view::path(&private)
    );
    outln!("public key:  {}", view::path(&public));
    outln!("key hint:    {}", key.public().hint());
    Ok(ExitCode::SUCCESS)
}
