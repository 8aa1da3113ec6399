//! The classifier on models made from Agentfile text: each kind of change lands in its class, and
//! no removal is an escalation.
use super::*;
use crate::side::Data;
use otters_agentfile::diagnostic::SourceFile;
use otters_oci::Digest;

const BASE: &str = "FROM scratch\nRUNTIME ghcr.io/o/runtime:1\nMODEL anthropic/claude\nNAME demo\nCONTEXT SOUL <<EOF\nbe kind\nEOF\nBIN jq ghcr.io/o/jq:1\nCAPABILITY net\nMOUNT /data ro\nCONFIG key=one\nENV MODE=fast\nLABEL team=a\n";

fn side(text: &str) -> Side {
    let file = SourceFile::new("Agentfile", text);
    let ast = otters_agentfile::syntax::parse(&file);
    let (model, _) = otters_agentfile::ir::from_ast(&ast, &file, &BTreeMap::new());
    let contexts = model
        .agent
        .contexts
        .iter()
        .map(|c| (c.name.clone(), c.content.clone().unwrap_or_default()))
        .collect();
    Side {
        reference: "x".into(),
        digest: Digest::of(text.as_bytes()),
        manifest: Digest::of(text.as_bytes()),
        platforms: Vec::new(),
        model,
        pins: Pins::default(),
        contexts,
        data: BTreeMap::new(),
        referrers: BTreeMap::new(),
        signers: BTreeMap::new(),
        chain: crate::side::Chain::default(),
    }
}

fn one(a: &str, b: &str) -> Change {
    let c = changes(&side(a), &side(b), Options::default());
    assert_eq!(c.len(), 1, "{c:#?}");
    c.into_iter().next().unwrap()
}

fn edited(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replace(from, to)
}

#[test]
fn the_same_agent_has_no_change() {
    assert!(changes(&side(BASE), &side(BASE), Options::default()).is_empty());
}

#[test]
fn more_power_is_an_escalation_and_less_is_not() {
    let cases = [
        (
            "BIN jq ghcr.io/o/jq:1\n",
            "BIN jq ghcr.io/o/jq:1\nBIN curl ghcr.io/o/curl:1\n",
            What::Bin,
        ),
        (
            "CAPABILITY net\n",
            "CAPABILITY net\nCAPABILITY exec\n",
            What::Capability,
        ),
        ("MOUNT /data ro\n", "MOUNT /data rw\n", What::Mount),
        (
            "MOUNT /data ro\n",
            "MOUNT /data ro\nMOUNT /tmp ro\n",
            What::Mount,
        ),
    ];
    for (from, to, what) in cases {
        let up = one(BASE, &edited(from, to));
        assert_eq!(
            (up.class, up.what),
            (Class::Escalation, what),
            "{from} → {to}"
        );
        let down = one(&edited(from, to), BASE);
        assert_ne!(down.class, Class::Escalation, "{to} → {from}: {down:?}");
    }
    // Another provider or repository is an escalation whichever way it goes.
    let cases = [
        (
            "MODEL anthropic/claude\n",
            "MODEL openai/gpt\n",
            What::Model,
        ),
        (
            "BIN jq ghcr.io/o/jq:1\n",
            "BIN jq ghcr.io/evil/jq:1\n",
            What::Bin,
        ),
        (
            "RUNTIME ghcr.io/o/runtime:1\n",
            "RUNTIME ghcr.io/x/runtime:1\n",
            What::Runtime,
        ),
    ];
    for (from, to, what) in cases {
        let c = one(BASE, &edited(from, to));
        assert_eq!(
            (c.class, c.what, c.change),
            (Class::Escalation, what, Kind::Changed)
        );
    }
}

#[test]
fn a_removed_bin_is_a_behaviour_change() {
    let c = one(BASE, &edited("BIN jq ghcr.io/o/jq:1\n", ""));
    assert_eq!((c.class, c.change), (Class::Behaviour, Kind::Removed));
    assert_eq!(c.before.as_deref(), Some("ghcr.io/o/jq:1"));
}

#[test]
fn the_same_repository_is_a_pin_and_the_same_provider_a_behaviour_change() {
    let c = one(BASE, &edited("runtime:1", "runtime:2"));
    assert_eq!(
        (c.class, c.what, c.field),
        (Class::Pin, What::Runtime, Some("image"))
    );
    let c = one(BASE, &edited("anthropic/claude", "anthropic/claude-2"));
    assert_eq!((c.class, c.what), (Class::Behaviour, What::Model));
}

#[test]
fn a_re_pinned_digest_is_a_pin() {
    let (mut a, mut b) = (side(BASE), side(BASE));
    let pin = |d: &[u8]| otters_pipeline::lower::pins::Pin {
        reference: "ghcr.io/o/jq:1".into(),
        digest: Digest::of(d),
    };
    a.pins.bins.insert("jq".into(), pin(b"1"));
    b.pins.bins.insert("jq".into(), pin(b"2"));
    let c = changes(&a, &b, Options::default());
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!((c[0].class, c[0].what), (Class::Pin, What::Bin));
    assert!(c[0]
        .after
        .as_deref()
        .unwrap()
        .ends_with(&Digest::of(b"2").to_string()));
}

#[test]
fn a_prompt_line_is_a_behaviour_change_with_its_diff() {
    let c = one(BASE, &edited("be kind\n", "be brief\n"));
    assert_eq!(
        (c.class, c.what, c.name.as_str()),
        (Class::Behaviour, What::Context, "SOUL")
    );
    assert_eq!(
        c.diff.as_deref(),
        Some("--- a/SOUL.md\n+++ b/SOUL.md\n@@ -1,1 +1,1 @@\n-be kind\n\\ No newline at end of file\n+be brief\n\\ No newline at end of file\n")
    );
}

#[test]
fn config_and_env_values_are_hidden_unless_asked() {
    let b = edited("key=one", "key=two");
    let c = one(BASE, &b);
    assert_eq!((c.class, c.what), (Class::Configuration, What::Config));
    assert_eq!(c.before.as_deref(), Some(HIDDEN));
    let shown = changes(&side(BASE), &side(&b), Options { show_values: true });
    assert_eq!(shown[0].before.as_deref(), Some("one"));
    assert_eq!(shown[0].after.as_deref(), Some("two"));
    let c = one(BASE, &edited("MODE=fast", "MODE=slow"));
    assert_eq!(
        (c.class, c.what, c.change),
        (Class::Configuration, What::Env, Kind::Changed)
    );
    assert_eq!(c.after.as_deref(), Some(HIDDEN));
    let c = one(BASE, &edited("team=a", "team=b"));
    assert_eq!((c.what, c.after.as_deref()), (What::Label, Some("b")));
}

#[test]
fn data_layers_are_compared_by_title_size_and_digest() {
    let (mut a, mut b) = (side(BASE), side(BASE));
    let data = |d: &[u8]| Data {
        digest: Digest::of(d),
        size: d.len() as u64,
        directory: false,
    };
    a.data.insert("notes.txt".into(), data(b"one"));
    b.data.insert("notes.txt".into(), data(b"two!"));
    b.data.insert("more".into(), data(b"x"));
    let c = changes(&a, &b, Options::default());
    let got: Vec<_> = c
        .iter()
        .map(|c| (c.class, c.name.as_str(), c.change))
        .collect();
    assert_eq!(
        got,
        [
            (Class::Data, "more", Kind::Added),
            (Class::Data, "notes.txt", Kind::Changed)
        ]
    );
    assert!(c[1]
        .after
        .as_deref()
        .unwrap()
        .starts_with("4 bytes, sha256:"));
}

#[test]
fn platforms_and_referrers_are_provenance_and_the_order_is_by_class() {
    let (mut a, mut b) = (side(BASE), side(&edited("CAPABILITY net\n", "")));
    a.platforms = vec!["linux/amd64".into(), "linux/arm64".into()];
    b.platforms = vec!["linux/amd64".into()];
    b.referrers
        .insert("application/vnd.dev.sigstore.bundle.v0.3+json".into(), 1);
    let c = changes(&a, &b, Options::default());
    let got: Vec<_> = c.iter().map(|c| (c.class, c.what, c.change)).collect();
    assert_eq!(
        got,
        [
            (Class::Behaviour, What::Capability, Kind::Removed),
            (Class::Provenance, What::Platform, Kind::Removed),
            (Class::Provenance, What::Referrer, Kind::Added),
        ]
    );
}

#[test]
fn two_manifests_with_no_other_difference_still_differ() {
    let (a, mut b) = (side(BASE), side(BASE));
    b.manifest = Digest::of(b"other");
    let c = changes(&a, &b, Options::default());
    assert_eq!((c[0].class, c[0].what), (Class::Provenance, What::Manifest));
}

#[test]
fn a_parent_from_another_repository_is_an_escalation_and_a_new_tag_a_pin() {
    let with = |from: &str| BASE.replace("FROM scratch", &format!("FROM {from}"));
    let c = one(&with("ghcr.io/o/base:1"), &with("ghcr.io/o/base:2"));
    assert_eq!((c.class, c.what), (Class::Pin, What::From));
    let c = one(&with("ghcr.io/o/base:1"), &with("ghcr.io/x/base:1"));
    assert_eq!((c.class, c.what), (Class::Escalation, What::From));
    let c = one(&with("ghcr.io/o/base:1"), BASE);
    assert_eq!((c.class, c.change), (Class::Behaviour, Kind::Removed));
}

#[test]
fn a_bin_usage_is_a_behaviour_change_with_its_diff() {
    let (a, mut b) = (side(BASE), side(BASE));
    b.model.agent.bins[0].usage = Some("jq FILTER [FILE]\n".into());
    let c = changes(&a, &b, Options::default());
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!((c[0].class, c[0].field), (Class::Behaviour, Some("usage")));
    assert_eq!(
        c[0].diff.as_deref(),
        Some("--- /dev/null\n+++ b/jq.usage\n@@ -0,0 +1,1 @@\n+jq FILTER [FILE]\n")
    );
}

#[test]
fn exec_is_a_behaviour_change_shown_as_its_arguments() {
    let c = one(BASE, &format!("{BASE}EXEC [\"run\", \"a b\"]\n"));
    assert_eq!(
        (c.class, c.what, c.change),
        (Class::Behaviour, What::Exec, Kind::Added)
    );
    assert_eq!(c.after.as_deref(), Some(r#"["run","a b"]"#));
}

#[test]
fn a_new_signer_is_a_provenance_change_naming_both() {
    let (mut a, mut b) = (side(BASE), side(BASE));
    let set = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    a.signers.insert("signature".into(), set(&["key AAA="]));
    b.signers.insert(
        "signature".into(),
        set(&["key BBB=", "me@example.com (https://issuer)"]),
    );
    b.signers
        .insert("https://slsa.dev/provenance/v1".into(), set(&["key BBB="]));
    let c = changes(&a, &b, Options::default());
    let got: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.class,
                c.what,
                c.name.as_str(),
                c.change,
                c.before.as_deref(),
                c.after.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                Class::Provenance,
                What::Signer,
                "https://slsa.dev/provenance/v1",
                Kind::Added,
                None,
                Some("key BBB=")
            ),
            (
                Class::Provenance,
                What::Signer,
                "signature",
                Kind::Changed,
                Some("key AAA="),
                Some("key BBB=, me@example.com (https://issuer)")
            ),
        ]
    );
    a.signers.clear();
    b.signers.clear();
    assert!(changes(&a, &b, Options::default()).is_empty());
}

#[test]
fn a_re_pinned_ancestor_is_named_by_its_level_and_an_unknown_digest_says_nothing() {
    use crate::side::{Chain, Level};
    let level = |r: &str, d: Option<&str>| Level {
        reference: r.into(),
        digest: d.map(|d| Digest::of(d.as_bytes())),
    };
    let (mut a, mut b) = (side(BASE), side(BASE));
    a.chain = Chain {
        levels: vec![level("reg/p:1", Some("p1")), level("reg/g:1", Some("g1"))],
        cut: None,
    };
    b.chain = Chain {
        levels: vec![level("reg/p:1", Some("p2")), level("reg/g:1", Some("g2"))],
        cut: None,
    };
    let got: Vec<(What, String, Option<String>)> = changes(&a, &b, Options::default())
        .into_iter()
        .map(|c| (c.what, c.name, c.after))
        .collect();
    let at = |r: &str, d: &str| Some(format!("{r}@{}", Digest::of(d.as_bytes())));
    assert_eq!(
        got,
        [
            (
                What::Chain,
                "level 1 (the parent)".to_owned(),
                at("reg/p:1", "p2")
            ),
            (
                What::Chain,
                "level 2 (the grandparent)".to_owned(),
                at("reg/g:1", "g2")
            ),
        ]
    );
    // A side whose parent digest is not recorded: the same reference says nothing, and nothing
    // beyond it is compared.
    b.chain = Chain {
        levels: vec![level("reg/p:1", None)],
        cut: Some("not recorded".into()),
    };
    assert!(changes(&a, &b, Options::default()).is_empty());
    // A chain that really ends (FROM scratch) one level earlier: the grandparent was removed.
    b.chain = Chain {
        levels: vec![level("reg/p:1", Some("p1"))],
        cut: None,
    };
    let c = one_of(&a, &b);
    assert_eq!(
        (c.what, c.change, c.name.as_str()),
        (What::Chain, Kind::Removed, "level 2 (the grandparent)")
    );
}

fn one_of(a: &Side, b: &Side) -> Change {
    let c = changes(a, b, Options::default());
    assert_eq!(c.len(), 1, "{c:#?}");
    c.into_iter().next().unwrap()
}
