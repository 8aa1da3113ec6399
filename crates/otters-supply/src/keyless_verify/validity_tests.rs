//! The trusted root's `validFor` windows and the authorities' certificate validity, over a bundle
//! the keyless mock signed (`testdata/keyless`: the mock's `trusted_root.json`, and the bundle of
//! `otters sign --keyless --tsa-url` for an image whose manifest is `sha256:7cab…`; logged and
//! timestamped at 2026-11-27T21:15:00Z).

use super::der::{children, tlv};
use super::root::B64;
use super::*;
use base64::Engine as _;

const BUNDLE: &[u8] = include_bytes!("../../testdata/keyless/bundle.json");
const ROOT: &[u8] = include_bytes!("../../testdata/keyless/trusted_root.json");
const SIGNED: &str = "7cab6f6241cc3c5a337cb6ca76416caab48e6f578bb288217f597d1690ac0efd";
const GITHUB_ID: &str = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";

/// Before the signing time / after it.
const BEFORE: &str = "2026-11-27T21:00:00Z";
const AFTER: &str = "2026-11-27T21:30:00Z";

/// The fixture bundle verified against the fixture root after `edit`.
fn verify_with(edit: impl FnOnce(&mut J)) -> Result<KeylessVerified, String> {
    let mut root: J = serde_json::from_slice(ROOT).unwrap();
    edit(&mut root);
    let identity = Identity::Exact(GITHUB_ID);
    verify(
        BUNDLE,
        &TrustedRoot::new(serde_json::to_vec(&root).unwrap()),
        &Expected {
            identity: &identity,
            issuer: "https://token.actions.githubusercontent.com",
            sha256: SIGNED,
        },
    )
    .map_err(|e| e.to_string())
}

fn window(start: &str, end: &str) -> J {
    serde_json::json!({"start": start, "end": end})
}

#[test]
fn the_fixture_verifies_within_windows_that_hold_the_signing_time() {
    verify_with(|_| ()).unwrap();
    let v = verify_with(|r| {
        r["tlogs"][0]["publicKey"]["validFor"] = window(BEFORE, AFTER);
        r["ctlogs"][0]["publicKey"]["validFor"] = window(BEFORE, AFTER);
        r["certificateAuthorities"][0]["validFor"] = window(BEFORE, AFTER);
        r["timestampAuthorities"][0]["validFor"] = window(BEFORE, AFTER);
    })
    .unwrap();
    assert_eq!(v.identity, GITHUB_ID);
}

#[test]
fn a_transparency_log_key_outside_its_window_is_refused() {
    for w in [
        window("2020-01-01T00:00:00Z", BEFORE),
        window(AFTER, "2030-01-01T00:00:00Z"),
    ] {
        let e = verify_with(|r| r["tlogs"][0]["publicKey"]["validFor"] = w.clone()).unwrap_err();
        assert!(
            e.starts_with("the tlog entry was integrated at 2026-11-27T21:15:00Z, when the trusted root does not trust that log's key (its validFor: from "),
            "{e}"
        );
    }
    // A retired entry beside the current one for the same key (a rotation) is no obstacle.
    verify_with(|r| {
        let mut retired = r["tlogs"][0].clone();
        retired["publicKey"]["validFor"] = window("2020-01-01T00:00:00Z", BEFORE);
        r["tlogs"].as_array_mut().unwrap().insert(0, retired);
    })
    .unwrap();
}

#[test]
fn a_ct_log_key_outside_its_window_at_the_scts_time_is_refused() {
    let e = verify_with(|r| {
        r["ctlogs"][0]["publicKey"]["validFor"] = window("2020-01-01T00:00:00Z", BEFORE);
    })
    .unwrap_err();
    assert!(
        e.starts_with("the certificate's embedded SCT does not verify: an SCT of 2026-11-27T21:15:00Z, when the trusted root does not trust that CT log's key (its validFor: from 2020-01-01T00:00:00Z to 2026-11-27T21:00:00Z)"),
        "{e}"
    );
}

#[test]
fn a_certificate_authority_outside_its_window_is_refused() {
    let e = verify_with(|r| {
        r["certificateAuthorities"][0]["validFor"] = window(AFTER, "2030-01-01T00:00:00Z");
    })
    .unwrap_err();
    assert_eq!(
        e,
        "the trusted root trusts the certificate authority that issued the certificate from 2026-11-27T21:30:00Z to 2030-01-01T00:00:00Z, not at the signing time 2026-11-27T21:15:00Z"
    );
}

#[test]
fn a_timestamp_authority_outside_its_window_is_refused() {
    let e = verify_with(|r| {
        r["timestampAuthorities"][0]["validFor"] = window("2020-01-01T00:00:00Z", BEFORE);
    })
    .unwrap_err();
    assert!(
        e.starts_with("the RFC 3161 timestamp does not verify: the trusted root trusts its timestamp authority from 2020-01-01T00:00:00Z to 2026-11-27T21:00:00Z, not at 2026-11-27T21:"),
        "{e}"
    );
}

/// `der` with the `notAfter` of its validity rewritten to the same kind of time at `yymmdd` (a
/// trusted root's certificates are trusted as they stand: their own signature is not checked, so
/// the edited certificate still names the key that signed the leaf).
fn expire(der: &[u8], yymmdd: &str) -> Vec<u8> {
    let (cert, _) = tlv(der).unwrap();
    let tbs = children(children(cert.body).unwrap()[0].body).unwrap();
    let fields: Vec<_> = tbs.into_iter().skip_while(|t| t.tag == 0xa0).collect();
    let not_after = children(fields[3].body).unwrap()[1];
    let at = not_after.body.as_ptr() as usize - der.as_ptr() as usize;
    let text = match not_after.tag {
        0x17 => format!("{yymmdd}000000Z"),
        _ => format!("20{yymmdd}000000Z"),
    };
    let mut out = der.to_vec();
    out[at..at + text.len()].copy_from_slice(text.as_bytes());
    out
}

/// The trusted root with the certificate at `pointer` (its `rawBytes`) expired on 2026-11-01.
fn with_expired(r: &mut J, pointer: &str) {
    let cert = r.pointer_mut(pointer).unwrap();
    let der = B64.decode(cert.as_str().unwrap()).unwrap();
    *cert = B64.encode(expire(&der, "261101")).into();
}

#[test]
fn an_authoritys_certificate_outside_its_own_validity_is_refused() {
    let e = verify_with(|r| {
        with_expired(
            r,
            "/certificateAuthorities/0/certChain/certificates/0/rawBytes",
        );
    })
    .unwrap_err();
    assert_eq!(
        e,
        "the certificate authority's certificate is valid from 2026-11-27T21:14:55Z to 2026-11-01T00:00:00Z, not at 2026-11-27T21:15:00Z"
    );
    // A timestamp authority's chain: its root certificate counts too.
    let e = verify_with(|r| {
        with_expired(
            r,
            "/timestampAuthorities/0/certChain/certificates/1/rawBytes",
        );
    })
    .unwrap_err();
    assert!(
        e.starts_with("the RFC 3161 timestamp does not verify: its timestamp authority's certificate is valid from "),
        "{e}"
    );
}
