//! Signing keys: ECDSA P-256, the private key as unencrypted PKCS#8 PEM, the public key as PKIX
//! (`SubjectPublicKeyInfo`) PEM — what `cosign`, `openssl` and Sigstore's verifiers read.
//!
//! Takes: a path prefix to write a new pair under, or a key file to read. Returns: keys, or a
//! [`KeyError`] that names the file and says what it holds instead and how to convert it. Must
//! never: overwrite an existing file (`O_EXCL`), leave a private key readable by others (0600), or
//! read more than [`MAX_KEY_FILE`] bytes of a file given as a key.

use base64::Engine as _;
use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::pkcs8::der::pem;
use p256::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding,
};
use sha2::{Digest as _, Sha256};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// No PEM key file is larger than this; a bigger file is not a key.
pub const MAX_KEY_FILE: u64 = 64 * 1024;

/// `id-ecPublicKey`, the algorithm of every EC key in PKCS#8 and SPKI.
const OID_EC: &str = "1.2.840.10045.2.1";
/// `prime256v1` (secp256r1, NIST P-256).
const OID_P256: &str = "1.2.840.10045.3.1.7";

/// A key file cannot be read, is not the key asked for, or a new one cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read the key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not {expected} otters can use: {what}")]
    Wrong {
        path: String,
        expected: &'static str,
        what: String,
    },
    #[error("{path} already exists: otters never overwrites a key file; move the old key away or write the new one elsewhere")]
    Exists { path: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot encode the new key: {0}")]
    Encode(String),
}

/// A private signing key and the public key that verifies its signatures.
#[derive(Clone)]
pub struct KeyPair {
    signing: SigningKey,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public", &self.public().hint())
            .finish_non_exhaustive()
    }
}

/// A public key that verifies signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    verifying: VerifyingKey,
}

impl KeyPair {
    /// A new random key from the operating system's generator.
    pub fn generate() -> Self {
        Self {
            signing: SigningKey::random(&mut rand_core::OsRng),
        }
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            verifying: *self.signing.verifying_key(),
        }
    }

    /// The private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), unencrypted.
    pub fn to_pkcs8_pem(&self) -> Result<String, KeyError> {
        self.signing
            .to_pkcs8_pem(LineEnding::LF)
            .map(|s| s.as_str().to_owned())
            .map_err(|e| KeyError::Encode(e.to_string()))
    }

    /// Reads a PKCS#8 PEM private key from PEM text; `path` names it in errors.
    pub fn from_pem(text: &[u8], path: &str) -> Result<Self, KeyError> {
        let der = key_der(Want::Private, text, path)?;
        let signing = SigningKey::from_pkcs8_der(&der).map_err(|e| {
            wrong(
                Want::Private,
                path,
                &format!("its P-256 key does not parse ({e})"),
            )
        })?;
        Ok(Self { signing })
    }

    /// Reads the private key file at `path`.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        Self::from_pem(
            &read_bounded(Want::Private, path)?,
            &path.display().to_string(),
        )
    }

    /// Signs `message` (hashed with SHA-256): an ASN.1 DER ECDSA signature. The nonce is derived
    /// from the key and the message (RFC 6979), so signing the same bytes twice gives the same
    /// signature.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        use p256::ecdsa::signature::Signer as _;
        let sig: p256::ecdsa::Signature = self.signing.sign(message);
        sig.to_der().as_bytes().to_vec()
    }

    /// Writes `PREFIX.key` (mode 0600) and `PREFIX.pub` (0644), refusing to replace either file.
    /// Returns both paths.
    pub fn write_new(&self, prefix: &Path) -> Result<(PathBuf, PathBuf), KeyError> {
        let key_path = with_suffix(prefix, ".key");
        let pub_path = with_suffix(prefix, ".pub");
        for p in [&key_path, &pub_path] {
            if p.symlink_metadata().is_ok() {
                return Err(KeyError::Exists {
                    path: p.display().to_string(),
                });
            }
        }
        let private = self.to_pkcs8_pem()?;
        let public = self.public().to_pem()?;
        write_exclusive(&key_path, private.as_bytes(), 0o600)?;
        if let Err(e) = write_exclusive(&pub_path, public.as_bytes(), 0o644) {
            // Leave no half pair behind: the private key was created by this call.
            let _ = std::fs::remove_file(&key_path);
            return Err(e);
        }
        Ok((key_path, pub_path))
    }
}

impl PublicKey {
    /// Reads a PKIX (`SubjectPublicKeyInfo`) PEM public key from PEM text; `path` names it in errors.
    pub fn from_pem(text: &[u8], path: &str) -> Result<Self, KeyError> {
        let der = key_der(Want::Public, text, path)?;
        let verifying = VerifyingKey::from_public_key_der(&der).map_err(|e| {
            wrong(
                Want::Public,
                path,
                &format!("its P-256 point does not parse ({e})"),
            )
        })?;
        Ok(Self { verifying })
    }

    /// Reads the public key file at `path`.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        Self::from_pem(
            &read_bounded(Want::Public, path)?,
            &path.display().to_string(),
        )
    }

    /// PKIX PEM (`-----BEGIN PUBLIC KEY-----`).
    pub fn to_pem(&self) -> Result<String, KeyError> {
        self.verifying
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| KeyError::Encode(e.to_string()))
    }

    /// The DER `SubjectPublicKeyInfo`.
    pub fn spki_der(&self) -> Vec<u8> {
        self.verifying
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default()
    }

    /// The key's hint in a Sigstore bundle: standard base64 of SHA-256 of its DER SPKI (what
    /// `cosign` prints as a key id).
    pub fn hint(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(self.spki_der()))
    }

    /// True when `signature` (ASN.1 DER ECDSA) is this key's signature of SHA-256(`message`).
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        p256::ecdsa::Signature::from_der(signature)
            .is_ok_and(|sig| self.verifying.verify(message, &sig).is_ok())
    }
}

/// The kind of key a file was read as, for [`KeyError::Wrong`].
#[derive(Clone, Copy)]
enum Want {
    Private,
    Public,
}

impl Want {
    fn text(self) -> &'static str {
        match self {
            Want::Private => "a private key (PKCS#8 PEM, ECDSA P-256)",
            Want::Public => "a public key (PKIX PEM, ECDSA P-256)",
        }
    }
}

fn wrong(want: Want, path: &str, what: &str) -> KeyError {
    KeyError::Wrong {
        path: path.to_owned(),
        expected: want.text(),
        what: what.to_owned(),
    }
}

/// The DER of the one PEM block of `text`, once its label is the kind `want`s and its algorithm is
/// ECDSA on P-256.
fn key_der(want: Want, text: &[u8], path: &str) -> Result<Vec<u8>, KeyError> {
    let (label, der) = pem_block(want, text, path)?;
    let (algorithm, curve) = match (want, label.as_str()) {
        (Want::Private, "PRIVATE KEY") => {
            let info = p256::pkcs8::PrivateKeyInfo::try_from(der.as_slice()).map_err(|e| {
                wrong(want, path, &format!("its PKCS#8 structure does not parse ({e})"))
            })?;
            (info.algorithm.oid, info.algorithm.parameters_oid().ok())
        }
        (Want::Public, "PUBLIC KEY") => {
            let info = p256::pkcs8::SubjectPublicKeyInfoRef::try_from(der.as_slice()).map_err(|e| {
                wrong(want, path, &format!("its `SubjectPublicKeyInfo` does not parse ({e})"))
            })?;
            (info.algorithm.oid, info.algorithm.parameters_oid().ok())
        }
        (Want::Private, "PUBLIC KEY") => return Err(wrong(
            want,
            path,
            "it is a public key (PKIX PEM); signing needs the private key, the PREFIX.key file `otters key generate` wrote beside it",
        )),
        (Want::Public, "PRIVATE KEY" | "EC PRIVATE KEY" | "ENCRYPTED PRIVATE KEY") => return Err(wrong(
            want,
            path,
            "it is a private key; verifying needs the public key (the PREFIX.pub file `otters key generate` wrote beside it); never hand a private key to a verifier",
        )),
        (_, other) => return Err(wrong(want, path, &unsupported_label(other))),
    };
    check_algorithm(
        want,
        path,
        algorithm.to_string(),
        curve.map(|o| o.to_string()),
    )?;
    Ok(der)
}

/// What a PEM block of another kind is, and what to do about it.
fn unsupported_label(label: &str) -> String {
    match label {
        "ENCRYPTED PRIVATE KEY" => "it is an encrypted (password-protected) PKCS#8 key, which otters does not read; write an unencrypted copy with `openssl pkey -in KEY -out KEY.plain` (it asks for the password) and keep that copy at mode 0600".into(),
        "EC PRIVATE KEY" => "it is a SEC1 (`EC PRIVATE KEY`) key; otters reads PKCS#8: convert it with `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8`".into(),
        "RSA PRIVATE KEY" | "RSA PUBLIC KEY" => "it is an RSA key; otters signs with ECDSA P-256 only: make a key with `otters key generate --out PREFIX`".into(),
        "OPENSSH PRIVATE KEY" => "it is an OpenSSH key; otters signs with ECDSA P-256 keys in PKCS#8 PEM: make one with `otters key generate --out PREFIX`".into(),
        l if l.contains("ENCRYPTED") && (l.contains("COSIGN") || l.contains("SIGSTORE")) => {
            "it is a password-protected cosign key, which otters does not read; make a key with `otters key generate --out PREFIX` (cosign verifies its signatures with PREFIX.pub)".into()
        }
        "CERTIFICATE" => "it is an X.509 certificate; otters verifies with a bare public key (PKIX PEM, `-----BEGIN PUBLIC KEY-----`): extract it with `openssl x509 -pubkey -noout -in CERT`".into(),
        l => format!("its PEM block is `{l}`, not a PKCS#8 private key (`PRIVATE KEY`) or a PKIX public key (`PUBLIC KEY`)"),
    }
}

/// Refuses any algorithm but ECDSA on P-256, naming the one found.
fn check_algorithm(
    want: Want,
    path: &str,
    oid: String,
    curve: Option<String>,
) -> Result<(), KeyError> {
    let name = match oid.as_str() {
        OID_EC => {
            return match curve.as_deref() {
                Some(OID_P256) => Ok(()),
                Some("1.3.132.0.34") => Err(wrong(want, path, "it is an ECDSA P-384 key; otters signs with ECDSA P-256 only: make a key with `otters key generate --out PREFIX`")),
                Some("1.3.132.0.35") => Err(wrong(want, path, "it is an ECDSA P-521 key; otters signs with ECDSA P-256 only: make a key with `otters key generate --out PREFIX`")),
                other => Err(wrong(want, path, &format!("it is an EC key on curve {}, not P-256 (1.2.840.10045.3.1.7); make a key with `otters key generate --out PREFIX`", other.unwrap_or("(none named)")))),
            };
        }
        "1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10" => "an RSA key",
        "1.3.101.112" => "an Ed25519 key",
        "1.3.101.113" => "an Ed448 key",
        "1.2.840.10040.4.1" => "a DSA key",
        other => return Err(wrong(want, path, &format!("its algorithm is {other}, not ECDSA P-256; make a key with `otters key generate --out PREFIX`"))),
    };
    Err(wrong(
        want,
        path,
        &format!("it is {name}; otters signs with ECDSA P-256 only: make a key with `otters key generate --out PREFIX`"),
    ))
}

/// The one PEM block of a file: its label and DER bytes.
fn pem_block(want: Want, text: &[u8], path: &str) -> Result<(String, Vec<u8>), KeyError> {
    let start = find(text, b"-----BEGIN ").ok_or_else(|| {
        wrong(
            want,
            path,
            "it holds no PEM block (`-----BEGIN …-----`); otters reads PEM keys as `otters key generate` writes them",
        )
    })?;
    // Comments before the block (as `openssl` writes with -text) are allowed; the block is decoded alone.
    let block = &text[start..];
    let label = pem::decode_label(block)
        .map_err(|e| wrong(want, path, &format!("its PEM block is malformed ({e})")))?
        .to_owned();
    let (_, der) = pem::decode_vec(block).map_err(|e| {
        if label.contains("ENCRYPTED") || block.windows(9).any(|w| w == b"Proc-Type") {
            wrong(want, path, &unsupported_label("ENCRYPTED PRIVATE KEY"))
        } else {
            wrong(
                want,
                path,
                &format!("its `{label}` PEM block is malformed ({e})"),
            )
        }
    })?;
    Ok((label, der))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn read_bounded(want: Want, path: &Path) -> Result<Vec<u8>, KeyError> {
    let err = |source| KeyError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(err)?;
    if !file.metadata().map_err(err)?.is_file() {
        return Err(wrong(
            want,
            &path.display().to_string(),
            "it is not a regular file",
        ));
    }
    let mut buf = Vec::new();
    file.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(err)?;
    if buf.len() as u64 > MAX_KEY_FILE {
        return Err(wrong(
            want,
            &path.display().to_string(),
            &format!("it is larger than {MAX_KEY_FILE} bytes, far more than any PEM key"),
        ));
    }
    Ok(buf)
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn write_exclusive(path: &Path, bytes: &[u8], mode: u32) -> Result<(), KeyError> {
    let err = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::Exists {
                path: path.display().to_string(),
            }
        } else {
            KeyError::Write {
                path: path.display().to_string(),
                source,
            }
        }
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(err)
}
