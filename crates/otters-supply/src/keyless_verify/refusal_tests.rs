//! Each stage of [`verify`] refusing, over the bundle the keyless mock signed
//! (`testdata/keyless`, as `validity_tests` reads it): the bundle or the trusted root changed in
//! one place at a time, and the refusal that change must meet. The mock itself (a fake Fulcio,
//! Rekor and TSA) is exercised end to end by the keyless suite.
//!
//! Takes: nothing. Returns: nothing (tests). Must never: be used outside tests.

use super::root::B64;
use super::*;
use base64::Engine as _;

const BUNDLE: &[u8] = include_bytes!("../../testdata/keyless/bundle.json");
const ROOT: &[u8] = include_bytes!("../../testdata/keyless/trusted_root.json");
const SIGNED: &str = "7cab6f6241cc3c5a337cb6ca76416caab48e6f578bb288217f597d1690ac0efd";
const GITHUB_ID: &str = "https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main";
const GITHUB: &str = "https://token.actions.githubusercontent.com";
const ENTRY: &str = "/verificationMaterial/tlogEntries/0";

/// What a test changes and expects.
struct Case<'a> {
    identity: Identity<'a>,
    issuer: &'a str,
    sha256: &'a str,
}

const FIXTURE: Case<'static> = Case {
    identity: Identity::Exact(GITHUB_ID),
    issuer: GITHUB,
    sha256: SIGNED,
};

fn json(bytes: &[u8]) -> J {
    serde_json::from_slice(bytes).unwrap()
}

fn run(
    case: &Case<'_>,
    bundle: impl FnOnce(&mut J),
    root: impl FnOnce(&mut J),
) -> Result<KeylessVerified, KeylessVerifyError> {
    let (mut b, mut r) = (json(BUNDLE), json(ROOT));
    bundle(&mut b);
    root(&mut r);
    verify(
        &serde_json::to_vec(&b).unwrap(),
        &TrustedRoot::new(serde_json::to_vec(&r).unwrap()),
        &Expected {
            identity: &case.identity,
            issuer: case.issuer,
            sha256: case.sha256,
        },
    )
}

/// The fixture's bundle after `edit`, against the fixture's root.
fn bundle_edited(edit: impl FnOnce(&mut J)) -> KeylessVerifyError {
    run(&FIXTURE, edit, |_| ()).expect_err("the edit must be refused")
}

fn set(b: &mut J, pointer: &str, value: J) {
    *b.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = value;
}

#[test]
fn the_fixture_verifies_as_what_it_is() {
    let v = run(&FIXTURE, |_| (), |_| ()).unwrap();
    assert_eq!(
        v,
        KeylessVerified {
            predicate_type: "https://sigstore.dev/cosign/sign/v1".into(),
            identity: GITHUB_ID.into(),
            issuer: GITHUB.into(),
        }
    );
}

#[test]
fn another_identity_a_prefix_of_it_or_another_issuer_is_refused() {
    let prefix = &GITHUB_ID[..GITHUB_ID.len() - "@refs/heads/main".len()];
    for wanted in [
        "https://github.com/evil/agents/.github/workflows/ci.yml@refs/heads/main",
        prefix,
    ] {
        let case = Case {
            identity: Identity::Exact(wanted),
            ..FIXTURE
        };
        let e = run(&case, |_| (), |_| ()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("the certificate is for {GITHUB_ID}, not {wanted}")
        );
    }
    let case = Case {
        issuer: "https://accounts.google.com",
        ..FIXTURE
    };
    assert_eq!(
        run(&case, |_| (), |_| ()).unwrap_err().to_string(),
        format!("the certificate's issuer is {GITHUB}, not https://accounts.google.com")
    );
}

#[test]
fn a_statement_about_another_image_is_refused() {
    let other = "0".repeat(64);
    let case = Case {
        sha256: &other,
        ..FIXTURE
    };
    assert_eq!(
        run(&case, |_| (), |_| ()).unwrap_err(),
        KeylessVerifyError::OtherSubject(other.clone())
    );
}

#[test]
fn a_changed_payload_or_envelope_is_refused_before_the_statement_is_read() {
    // The statement rewritten to name the digest expected: the signature no longer holds.
    let other = "0".repeat(64);
    let case = Case {
        sha256: &other,
        ..FIXTURE
    };
    let e = run(
        &case,
        |b| {
            let payload = B64
                .decode(b["dsseEnvelope"]["payload"].as_str().unwrap())
                .unwrap();
            let forged = String::from_utf8(payload).unwrap().replace(SIGNED, &other);
            set(b, "/dsseEnvelope/payload", J::from(B64.encode(forged)));
        },
        |_| (),
    )
    .unwrap_err();
    assert_eq!(e, KeylessVerifyError::Signature);
    let e = bundle_edited(|b| {
        let sig = b["dsseEnvelope"]["signatures"][0].clone();
        b["dsseEnvelope"]["signatures"]
            .as_array_mut()
            .unwrap()
            .push(sig);
    });
    assert_eq!(e, KeylessVerifyError::Signatures(2));
    let e = bundle_edited(|b| set(b, "/dsseEnvelope/payloadType", J::from("text/plain")));
    assert_eq!(e, KeylessVerifyError::NotInToto);
    let e = bundle_edited(|b| {
        b.as_object_mut().unwrap().remove("dsseEnvelope");
    });
    assert_eq!(e, KeylessVerifyError::NoEnvelope);
}

#[test]
fn a_bundle_without_a_certificate_or_a_tlog_entry_is_refused() {
    let e = bundle_edited(|b| {
        b["verificationMaterial"]
            .as_object_mut()
            .unwrap()
            .remove("certificate");
    });
    assert_eq!(e, KeylessVerifyError::NoCertificate);
    let e = bundle_edited(|b| set(b, "/verificationMaterial/tlogEntries", J::Array(Vec::new())));
    assert_eq!(e, KeylessVerifyError::NoTlogEntry);
    let e = verify(
        b"not json",
        &TrustedRoot::new(ROOT.to_vec()),
        &Expected {
            identity: &FIXTURE.identity,
            issuer: GITHUB,
            sha256: SIGNED,
        },
    )
    .unwrap_err();
    assert!(matches!(e, KeylessVerifyError::NotJson(_)), "{e:?}");
    let huge = vec![b' '; crate::bundle::MAX_BUNDLE + 1];
    let e = verify(
        &huge,
        &TrustedRoot::new(ROOT.to_vec()),
        &Expected {
            identity: &FIXTURE.identity,
            issuer: GITHUB,
            sha256: SIGNED,
        },
    )
    .unwrap_err();
    assert_eq!(e, KeylessVerifyError::TooLarge);
}

#[test]
fn a_tlog_entry_changed_anywhere_is_refused() {
    let tlog = |e: KeylessVerifyError| match e {
        KeylessVerifyError::Tlog(t) => t,
        other => panic!("{other:?}"),
    };
    // The logged time moved (inside the certificate's validity): the SET no longer holds.
    let e = bundle_edited(|b| {
        let pointer = format!("{ENTRY}/integratedTime");
        let t: i64 = b
            .pointer(&pointer)
            .unwrap()
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        set(b, &pointer, J::from((t + 1).to_string()));
    });
    assert!(matches!(tlog(e), TlogError::Set));
    let e = bundle_edited(|b| {
        set(
            b,
            &format!("{ENTRY}/inclusionProof/rootHash"),
            J::from(B64.encode([0u8; 32])),
        );
    });
    assert!(matches!(tlog(e), TlogError::InclusionProof));
    let e = bundle_edited(|b| {
        let pointer = format!("{ENTRY}/inclusionProof/checkpoint/envelope");
        let note = b.pointer(&pointer).unwrap().as_str().unwrap().to_owned();
        let (text, sig) = note.split_once("\n\n").unwrap();
        let forged = text.replacen("\n1\n", "\n2\n", 1);
        set(b, &pointer, J::from(format!("{forged}\n\n{sig}")));
    });
    assert!(matches!(tlog(e), TlogError::CheckpointSignature));
    let e = bundle_edited(|b| {
        set(
            b,
            &format!("{ENTRY}/logId/keyId"),
            J::from(B64.encode([1u8; 32])),
        );
    });
    assert!(matches!(tlog(e), TlogError::UnknownLog));
    let e = bundle_edited(|b| {
        b.pointer_mut(ENTRY)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("inclusionProof");
    });
    assert!(matches!(tlog(e), TlogError::NoInclusionProof));
}

#[test]
fn a_root_that_trusts_no_authority_or_ct_log_for_it_is_refused() {
    let root_edited = |edit: fn(&mut J)| run(&FIXTURE, |_| (), edit).unwrap_err();
    // The authority's certificate replaced by another's (the TSA's root): it did not issue it.
    assert_eq!(
        root_edited(|r| {
            let tsa = r["timestampAuthorities"][0]["certChain"]["certificates"][1].clone();
            set(r, "/certificateAuthorities/0/certChain/certificates/0", tsa);
        }),
        KeylessVerifyError::NotIssuedByRoot
    );
    assert_eq!(
        root_edited(|r| set(r, "/ctlogs", J::Array(Vec::new()))),
        KeylessVerifyError::Sct(SctError::NoCtLog)
    );
    let e = root_edited(|r| set(r, "/tlogs/0/logId/keyId", J::from(B64.encode([2u8; 32]))));
    assert!(
        matches!(e, KeylessVerifyError::Tlog(TlogError::UnknownLog)),
        "{e:?}"
    );
    let e = verify(
        BUNDLE,
        &TrustedRoot::new(b"[]".to_vec()),
        &Expected {
            identity: &FIXTURE.identity,
            issuer: GITHUB,
            sha256: SIGNED,
        },
    )
    .unwrap_err();
    assert!(matches!(e, KeylessVerifyError::Root(_)), "{e:?}");
}

#[test]
fn a_timestamp_that_does_not_verify_is_refused_not_skipped() {
    let stamp =
        "/verificationMaterial/timestampVerificationData/rfc3161Timestamps/0/signedTimestamp";
    let e = bundle_edited(|b| set(b, stamp, J::from(B64.encode(b"not DER"))));
    assert_eq!(
        e.to_string(),
        "the RFC 3161 timestamp does not verify: not DER"
    );
    // One bit of the stamp flipped (its last byte, in the authority's signature).
    let e = bundle_edited(|b| {
        let mut der = B64
            .decode(b.pointer(stamp).unwrap().as_str().unwrap())
            .unwrap();
        let last = der.len() - 1;
        der[last] ^= 1;
        set(b, stamp, J::from(B64.encode(der)));
    });
    assert!(matches!(e, KeylessVerifyError::Timestamp(_)), "{e:?}");
}
