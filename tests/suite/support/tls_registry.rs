//! A real registry (Debian's `docker-registry`) serving HTTPS on 127.0.0.1 with a certificate
//! from a throwaway CA that `openssl` makes per test; the CA's PEM is at [`TlsRegistry::ca`].
//! Killed on drop.

use super::registry::{free_port, serve};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// A running HTTPS registry without authentication.
pub struct TlsRegistry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub dir: tempfile::TempDir,
    child: Option<Child>,
}

/// Makes `ca.pem` (a CA) and `server.pem`/`server.key` (for 127.0.0.1 and localhost, signed by
/// that CA) in `dir`.
pub fn make_certs(dir: &Path) {
    let ossl = |args: &[&str]| {
        super::run_ok(Command::new("openssl").current_dir(dir).args(args));
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=otters test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    ossl(&ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    ossl(&csr);
    super::write(
        &dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    );
    ossl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

impl TlsRegistry {
    pub fn start() -> TlsRegistry {
        let dir = tempfile::tempdir().expect("temp dir");
        make_certs(dir.path());
        let mut last_err = String::new();
        for _ in 0..8 {
            let addr = format!("127.0.0.1:{}", free_port());
            match spawn(dir.path(), &addr) {
                Ok(child) => {
                    return TlsRegistry {
                        addr,
                        dir,
                        child: Some(child),
                    }
                }
                Err(e) => last_err = e,
            }
        }
        panic!("TLS registry did not start: {last_err}");
    }

    /// The PEM of the CA that signed the registry's certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The registry's log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }
}

fn spawn(dir: &Path, addr: &str) -> Result<Child, String> {
    let cfg = format!(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n  tls:\n    certificate: {}\n    key: {}\n",
        dir.join("data").display(),
        dir.join("server.pem").display(),
        dir.join("server.key").display(),
    );
    serve(dir, &cfg, addr)
}

impl Drop for TlsRegistry {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
