//! Whether an authority of the trusted root vouches at a time: which certificate authorities
//! signed a leaf, whether one of them is trusted at the signing time (its `validFor`), and whether
//! an authority's certificates are within their own validity then (a timestamp authority's too).
//!
//! Takes: a leaf certificate, the root's authorities, a verified time. Returns: the issuers, or
//! why none vouches ([`Untrusted`]). Must never: let an authority vouch outside its window, or a
//! chain of which one certificate had expired or was not yet valid at that time.

use super::der::{ecdsa_ok, Cert, DerError};
use super::root::{rfc3339, Authority, Reasons, RootCert, Window};

/// Why an authority of the trusted root does not vouch at a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    #[error("the trusted root trusts the certificate authority that issued the certificate {window}, not at the signing time {}", rfc3339(*.at))]
    CertificateAuthority { window: Window, at: i64 },
    #[error("the trusted root trusts its timestamp authority {window}, not at {}", rfc3339(*.at))]
    TimestampAuthority { window: Window, at: i64 },
    /// `what`: the certificate authority, its timestamp authority.
    #[error("{what}'s certificate is valid from {} to {}, not at {}", rfc3339(*.from), rfc3339(*.to), rfc3339(*.at))]
    Validity {
        what: &'static str,
        from: i64,
        to: i64,
        at: i64,
    },
    #[error(transparent)]
    Certificate(DerError),
}

/// Every certificate of `chain` is within its own validity (`notBefore`..=`notAfter`) at `ms`;
/// else why not, naming `what`.
pub(super) fn chain_valid_at(
    chain: &[Result<RootCert, DerError>],
    ms: i64,
    what: &'static str,
) -> Result<(), Untrusted> {
    for cert in chain {
        let c = cert
            .as_ref()
            .map_err(|e| Untrusted::Certificate(e.clone()))?;
        let (from, to) = (c.not_before * 1000, c.not_after * 1000);
        if !(from..=to).contains(&ms) {
            return Err(Untrusted::Validity {
                what,
                from,
                to,
                at: ms,
            });
        }
    }
    Ok(())
}

/// The certificate authorities of the trusted root whose certificate signed `leaf`, each with the
/// position of that certificate in its chain.
pub(super) fn issuers_of<'t>(leaf: &Cert<'_>, cas: &'t [Authority]) -> Vec<(&'t Authority, usize)> {
    let mut out = Vec::new();
    for ca in cas {
        for (at, cert) in ca.chain.iter().enumerate() {
            let signed = cert.as_ref().is_ok_and(|c| {
                c.subject == leaf.issuer
                    && c.key
                        .as_ref()
                        .is_some_and(|k| ecdsa_ok(k, leaf.sig_alg, leaf.tbs, leaf.signature))
            });
            if signed {
                out.push((ca, at));
            }
        }
    }
    out
}

/// At the signing time `secs` (a verified log or timestamp time), one of `issuers` is trusted
/// (its `validFor`) and its certificate and those above it in its chain are within their
/// validity; else why not, for each.
pub(super) fn issued_by_a_trusted_authority_at(
    issuers: &[(&Authority, usize)],
    secs: i64,
) -> Result<(), Reasons<Untrusted>> {
    let ms = secs.saturating_mul(1000);
    let mut why = Vec::new();
    for (ca, at) in issuers {
        if !ca.window.contains(ms) {
            why.push(Untrusted::CertificateAuthority {
                window: ca.window,
                at: ms,
            });
        } else if let Err(e) = chain_valid_at(&ca.chain[*at..], ms, "the certificate authority") {
            why.push(e);
        } else {
            return Ok(());
        }
    }
    Err(Reasons(why))
}
