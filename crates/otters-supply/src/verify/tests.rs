//! The referrer walk of `verify` over an in-memory source that counts what it read: order,
//! budgets, predicate types, the second source, and the trusted root read once.

use super::*;
use crate::keys::KeyPair;
use crate::statement::{Statement, Subject};
use otters_oci::referrers::artifact_manifest;
use otters_spec::descriptor::MANIFEST_V1;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

/// An in-memory source that counts what was read.
struct Mem {
    list: Vec<Descriptor>,
    blobs: HashMap<Digest, Vec<u8>>,
    read: Cell<u64>,
    local: bool,
}

impl Referrers for Mem {
    fn list(&self, _: &Digest) -> Result<Vec<Descriptor>, String> {
        Ok(self.list.clone())
    }
    fn manifest(&self, d: &Descriptor) -> Result<Vec<u8>, String> {
        self.blob(d, u64::MAX)
    }
    fn blob(&self, d: &Descriptor, _: u64) -> Result<Vec<u8>, String> {
        let b = self.blobs.get(&d.digest).cloned().ok_or("missing")?;
        self.read.set(self.read.get() + b.len() as u64);
        Ok(b)
    }
    fn is_local(&self) -> bool {
        self.local
    }
}

fn subject() -> Descriptor {
    Descriptor::new(MANIFEST_V1, Digest::of(b"image"), 5)
}

/// Adds a bundle referrer of `statement` to `m`; `listed_type` is what its index entry says.
fn add(m: &mut Mem, statement: &Statement, key: &KeyPair, listed_type: Option<&str>) {
    let bytes = bundle::sign(statement, key);
    let layer = Descriptor::new(BUNDLE_V03, Digest::of(&bytes), bytes.len() as u64);
    m.blobs.insert(layer.digest.clone(), bytes);
    let manifest = artifact_manifest(&subject(), BUNDLE_V03, &[layer], &BTreeMap::new());
    let mut d = Descriptor::new(MANIFEST_V1, Digest::of(&manifest), manifest.len() as u64);
    d.artifact_type = listed_type.map(str::to_owned);
    m.blobs.insert(d.digest.clone(), manifest);
    m.list.push(d);
}

fn statement(predicate: &str) -> Statement {
    let mut s = Statement::signature(Subject {
        name: "r/x".into(),
        digest: subject().digest,
    });
    s.predicate_type = predicate.to_owned();
    s
}

fn mem() -> Mem {
    Mem {
        list: Vec::new(),
        blobs: HashMap::new(),
        read: Cell::new(0),
        local: false,
    }
}

/// A junk "signature" referrer listed as the real one is: annotated as a signature, its
/// bundle `bundle` (which verifies by no key).
fn add_junk(m: &mut Mem, bundle: Vec<u8>) {
    let layer = Descriptor::new(BUNDLE_V03, Digest::of(&bundle), bundle.len() as u64);
    m.blobs.insert(layer.digest.clone(), bundle);
    let notes = BTreeMap::from([(ANN_BUNDLE_PREDICATE.to_owned(), SIGN_PREDICATE.to_owned())]);
    let manifest = artifact_manifest(&subject(), BUNDLE_V03, &[layer], &notes);
    let mut d = Descriptor::new(MANIFEST_V1, Digest::of(&manifest), manifest.len() as u64);
    d.artifact_type = Some(BUNDLE_V03.to_owned());
    d.annotations = notes;
    m.blobs.insert(d.digest.clone(), manifest);
    m.list.insert(0, d);
}

#[test]
fn junk_listed_first_does_not_hide_the_signature_in_the_store() {
    let key = KeyPair::generate();
    let public = key.public();
    let mut m = mem();
    add(&mut m, &statement(SIGN_PREDICATE), &key, Some(BUNDLE_V03));
    let last = m.list.len() - 1;
    m.list[last]
        .annotations
        .insert(ANN_BUNDLE_PREDICATE.into(), SIGN_PREDICATE.into());
    // Forty small junk bundles listed before it, and two that would each take more than
    // half the byte budget.
    for i in 0..40u8 {
        add_junk(&mut m, vec![b'{', i, b'}']);
    }
    for i in 0..2u8 {
        add_junk(&mut m, vec![i; 600 << 10]);
    }
    let mut opts = VerifyOptions::signature(&public);
    opts.max_bytes = 1 << 20;
    m.local = true;
    verify_image(&m, &subject().digest, &opts).expect("the store's signature verifies");
    assert!(m.read.get() < 256 << 10, "read {} bytes", m.read.get());
    // Without it, a registry is bounded by requests too: past the candidate limit it says so.
    m.list.pop();
    m.local = false;
    let err = verify_image(&m, &subject().digest, &opts).expect_err("junk only");
    assert!(
        err.to_string().contains("at most 32 referrers are read"),
        "{err}"
    );
}

#[test]
fn an_attestation_is_not_a_signature_unless_asked_for() {
    let key = KeyPair::generate();
    let public = key.public();
    let mut m = mem();
    add(
        &mut m,
        &statement("https://example.com/scan/v1"),
        &key,
        Some(BUNDLE_V03),
    );
    let err = verify_image(&m, &subject().digest, &VerifyOptions::signature(&public))
        .expect_err("an attestation passed as a signature");
    assert!(err.to_string().contains("not a signature"), "{err}");
    let mut opts = VerifyOptions::signature(&public);
    opts.predicate_type = "https://example.com/scan/v1".into();
    let v = verify_image(&m, &subject().digest, &opts).expect("asked for");
    assert_eq!(v.predicate_type(), "https://example.com/scan/v1");
    add(&mut m, &statement(SIGN_PREDICATE), &key, Some(BUNDLE_V03));
    let v = verify_image(&m, &subject().digest, &VerifyOptions::signature(&public))
        .expect("the signature");
    assert_eq!(v.predicate_type(), SIGN_PREDICATE);
}

#[test]
fn an_unclassified_entry_is_classified_by_its_manifest() {
    let key = KeyPair::generate();
    let mut m = mem();
    add(&mut m, &statement(SIGN_PREDICATE), &key, None);
    verify_image(
        &m,
        &subject().digest,
        &VerifyOptions::signature(&key.public()),
    )
    .expect("found by its manifest");
}

#[test]
fn the_budget_stops_the_search_and_says_so() {
    let key = KeyPair::generate();
    let other = KeyPair::generate();
    let mut m = mem();
    for _ in 0..5 {
        add(&mut m, &statement(SIGN_PREDICATE), &other, Some(BUNDLE_V03));
    }
    let public = key.public();
    let mut opts = VerifyOptions::signature(&public);
    opts.max_candidates = 2;
    let err = verify_image(&m, &subject().digest, &opts).expect_err("wrong key");
    assert!(err.to_string().contains("stopped after 2"), "{err}");
    let one = m.list[0].size + m.blobs.values().map(Vec::len).max().unwrap_or(0) as u64;
    m.read.set(0);
    opts.max_candidates = 100;
    opts.max_bytes = one * 2;
    let err = verify_image(&m, &subject().digest, &opts).expect_err("wrong key");
    assert!(err.to_string().contains("bytes of referrers"), "{err}");
    assert!(m.read.get() <= opts.max_bytes, "{}", m.read.get());
}

#[test]
fn the_right_predicate_is_tried_first() {
    let key = KeyPair::generate();
    let public = key.public();
    let mut m = mem();
    for _ in 0..3 {
        add(
            &mut m,
            &statement("https://slsa.dev/provenance/v1"),
            &key,
            Some(BUNDLE_V03),
        );
        let last = m.list.len() - 1;
        m.list[last].annotations.insert(
            ANN_BUNDLE_PREDICATE.into(),
            "https://slsa.dev/provenance/v1".into(),
        );
    }
    add(&mut m, &statement(SIGN_PREDICATE), &key, Some(BUNDLE_V03));
    let last = m.list.len() - 1;
    m.list[last]
        .annotations
        .insert(ANN_BUNDLE_PREDICATE.into(), SIGN_PREDICATE.into());
    let mut opts = VerifyOptions::signature(&public);
    opts.max_candidates = 1;
    verify_image(&m, &subject().digest, &opts).expect("the signature is tried first");
}

#[test]
fn the_second_source_is_opened_only_when_the_first_does_not_do() {
    let key = KeyPair::generate();
    let public = key.public();
    let opts = VerifyOptions::signature(&public);
    let digest = subject().digest;
    let mut signed = mem();
    add(
        &mut signed,
        &statement(SIGN_PREDICATE),
        &key,
        Some(BUNDLE_V03),
    );
    let mut wrong = mem();
    add(
        &mut wrong,
        &statement(SIGN_PREDICATE),
        &KeyPair::generate(),
        Some(BUNDLE_V03),
    );
    let never =
        || -> Box<OpenSource<'static>> { Box::new(|| Err("opened the second source".to_owned())) };
    // Signed in the first: the second is never opened.
    verify_local_first(&signed, never(), &digest, &opts, Fallback::OnAnyFailure)
        .expect("signed locally");
    // A wrong signature in the first: `verify` keeps its answer, the run gate looks further.
    let err = verify_local_first(&wrong, never(), &digest, &opts, Fallback::WhenUnsigned)
        .expect_err("wrong key");
    assert!(
        matches!(err, ImageVerifyError::NoneVerifies { .. }),
        "{err}"
    );
    let second: Box<OpenSource<'_>> = Box::new(|| Ok(Some(Box::new(signed) as Box<dyn Referrers>)));
    verify_local_first(&wrong, second, &digest, &opts, Fallback::OnAnyFailure)
        .expect("signed in the registry");
    // Nothing in the first and nowhere else to look: the first's answer.
    let err = verify_local_first(
        &mem(),
        Box::new(|| Ok(None)),
        &digest,
        &opts,
        Fallback::WhenUnsigned,
    )
    .expect_err("unsigned");
    assert_eq!(err, ImageVerifyError::NotSigned);
}

/// Issue 33: the trusted root is read once per verification (its JSON, each key and each
/// authority's certificates), not once per bundle: three keyless bundles in the store and
/// three in the registry, none about this image, are checked against one reading.
#[test]
fn the_trusted_root_is_read_once_for_every_bundle_of_a_verification() {
    let bundle: serde_json::Value =
        serde_json::from_slice(include_bytes!("../../testdata/keyless/bundle.json")).unwrap();
    let root =
        TrustedRoot::new(include_bytes!("../../testdata/keyless/trusted_root.json").to_vec());
    let identity =
        Identity::Exact("https://github.com/acme/agents/.github/workflows/ci.yml@refs/heads/main");
    let opts = VerifyOptions::by(Signer::Keyless {
        identity,
        issuer: "https://token.actions.githubusercontent.com",
        trusted_root: &root,
    });
    let three = |from: u8| {
        let mut m = mem();
        for i in from..from + 3 {
            let mut b = bundle.clone();
            b["unread"] = i.into();
            add_junk(&mut m, serde_json::to_vec(&b).unwrap());
        }
        m
    };
    let (store, registry) = (three(0), three(3));
    let second: Box<OpenSource<'_>> =
        Box::new(|| Ok(Some(Box::new(registry) as Box<dyn Referrers>)));
    let err = verify_local_first(
        &store,
        second,
        &subject().digest,
        &opts,
        Fallback::OnAnyFailure,
    )
    .expect_err("no bundle is about this image");
    let ImageVerifyError::NoneVerifies { tried, .. } = &err else {
        panic!("{err}");
    };
    // Every check up to the statement held: the root was read, and read once.
    assert_eq!(tried.len(), 3, "{err}");
    assert!(
        tried.iter().all(|(_, why)| why
            == &format!(
                "the signed statement is not about sha256:{}",
                subject().digest.hex()
            )),
        "{err}"
    );
    assert_eq!(root.reads(), 1);
    // A root that does not read says so for each bundle, as before, still from one reading.
    let broken = TrustedRoot::new(b"{}".to_vec());
    let opts = VerifyOptions::by(Signer::Keyless {
        identity: Identity::Exact("x"),
        issuer: "y",
        trusted_root: &broken,
    });
    let err = verify_image(&three(6), &subject().digest, &opts).expect_err("no root");
    let ImageVerifyError::NoneVerifies { tried, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        tried.len() == 3
            && tried.iter().all(|(_, why)| why
                == "the trusted root names no certificate authority or no transparency log"),
        "{err}"
    );
    assert_eq!(broken.reads(), 1);
}

#[test]
fn type_names() {
    assert_eq!(
        predicate_type("slsaprovenance1").as_deref(),
        Ok("https://slsa.dev/provenance/v1")
    );
    assert_eq!(
        predicate_type("https://example.com/x").as_deref(),
        Ok("https://example.com/x")
    );
    assert!(predicate_type("nonsense").is_err());
}

#[test]
fn claims_name_each_bundles_signer_unverified_within_the_budget() {
    let (one, two) = (KeyPair::generate(), KeyPair::generate());
    let mut m = mem();
    add(&mut m, &statement(SIGN_PREDICATE), &one, Some(BUNDLE_V03));
    add(
        &mut m,
        &statement("https://slsa.dev/provenance/v1"),
        &two,
        Some(BUNDLE_V03),
    );
    add_junk(&mut m, b"{".to_vec());
    let got = claims(&m, &subject().digest, 1 << 20, 8).unwrap();
    let mut named: Vec<(Option<String>, Result<String, String>)> = got
        .iter()
        .map(|c| {
            (
                c.predicate_type.clone(),
                c.signer.clone().map(|s| s.describe()),
            )
        })
        .collect();
    named.sort();
    assert_eq!(named.len(), 3, "{named:?}");
    assert!(named[0]
        .1
        .as_ref()
        .is_err_and(|e| e.starts_with("the bundle is not JSON")));
    assert_eq!(
        named[1],
        (
            Some("https://sigstore.dev/cosign/sign/v1".into()),
            Ok(format!("key {}", one.public().hint()))
        )
    );
    assert_eq!(
        named[2],
        (
            Some("https://slsa.dev/provenance/v1".into()),
            Ok(format!("key {}", two.public().hint()))
        )
    );
    // The count and the byte budget both bound it; a cut says so.
    assert_eq!(claims(&m, &subject().digest, 1 << 20, 1).unwrap().len(), 1);
    let cut = claims(&m, &subject().digest, 10, 8).unwrap();
    assert!(
        cut[0]
            .signer
            .as_ref()
            .is_err_and(|e| e.contains("at most 10 bytes")),
        "{cut:?}"
    );
}
