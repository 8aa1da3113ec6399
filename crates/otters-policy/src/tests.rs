//! Unit tests of the policy: parsing (and its errors, with file and line), intersection of
//! layers, and each check over a model read from Agentfile text.
use crate::load::parse_layer;
use crate::model::{MountLevel, Policy, Signature, Source};
use crate::{check_agent, PolicyError, RuleName};
use otters_agentfile::check::{analyze, ModelCheck as _, Options};
use otters_agentfile::diagnostic::{Code, SourceFile};
use std::path::Path;

fn layer(text: &str, source: Source) -> crate::Layer {
    parse_layer(text, source, Path::new("/")).unwrap().unwrap()
}

fn policy(texts: &[&str]) -> Policy {
    let mut p = Policy::default();
    for (i, t) in texts.iter().enumerate() {
        p.push(layer(t, Source::File(format!("/p{i}.toml").into())))
            .unwrap();
    }
    p
}

fn parse_err(text: &str) -> String {
    parse_layer(text, Source::File("/p.toml".into()), Path::new("/"))
        .unwrap_err()
        .to_string()
}

/// The violations of `agentfile` (text) under `policy`: (rule, value, line).
fn violations(policy: &Policy, agentfile: &str) -> Vec<(RuleName, String, usize)> {
    let file = SourceFile::new("Agentfile", agentfile);
    let model = analyze(&file, &Options::default()).model;
    check_agent(policy, &model.agent)
        .into_iter()
        .map(|v| (v.rule, v.value, file.line_of(v.span.unwrap().start)))
        .collect()
}

#[test]
fn the_documented_policy_parses_with_every_rule_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("release.pub"),
        "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let text = "[registry.\"x:5000\"]\ninsecure = true\n[policy]\nregistries = [\"registry.example.com/approved/*\"]\nproviders = [\"openai\", \"anthropic\"]\ncapabilities = [\"note_save\"]\nbins = [\"curl\"]\nmounts = \"ro\"\negress = [\"api.example.com:443\", \"*.example.net:443\"]\nrequire-pinned = true\n\n[policy.signature]\nkey = \"release.pub\"\n";
    let l = parse_layer(text, Source::Home("/h/config.toml".into()), dir.path())
        .unwrap()
        .unwrap();
    assert_eq!(l.registries.as_ref().unwrap().origin.line, 4);
    assert_eq!(l.providers.as_ref().unwrap().value, ["openai", "anthropic"]);
    assert_eq!(l.mounts.as_ref().unwrap().value, MountLevel::ReadOnly);
    assert_eq!(l.egress.as_ref().unwrap().value.len(), 2);
    assert!(l.require_pinned.as_ref().unwrap().value);
    let sig = l.signature.unwrap();
    assert_eq!(sig.value, Signature::Key(dir.path().join("release.pub")));
    // The rule is the table: its header's line.
    assert_eq!(sig.origin.line, 12);
    // No [policy] table: no layer.
    assert!(
        parse_layer("[lint]\n", Source::Home("/h".into()), Path::new("/"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn bad_input_names_the_file_and_line_and_never_allows_everything() {
    let cases = [
        ("[policy]\nbinz = []\n", "/p.toml:2: unknown field `binz`"),
        (
            "[policy]\n\nregistries = [\"a/[b\"]\n",
            "/p.toml:3: `registries`: \"a/[b\" is not a glob",
        ),
        (
            "[policy]\nregistries = []\n",
            "/p.toml:2: `registries = []` allows no image",
        ),
        (
            "[policy]\nproviders = []\n",
            "/p.toml:2: `providers = []` allows no MODEL provider",
        ),
        (
            "[policy]\nmounts = \"all\"\n",
            "/p.toml:2: `mounts = \"all\"`: use \"none\", \"ro\" or \"rw\"",
        ),
        (
            "[policy]\negress = [\"example.com\"]\n",
            "/p.toml:2: `egress`: \"example.com\" is not HOST:PORT",
        ),
        (
            "[policy]\nrequire-pinned = \"yes\"\n",
            "/p.toml:2: invalid type",
        ),
        (
            "[policy.signature]\nkey = \"/nonexistent.pub\"\n",
            "/p.toml:2: cannot read /nonexistent.pub",
        ),
        (
            "[policy.signature]\nidentity = \"me\"\n",
            "/p.toml:1: [policy.signature]: a keyless identity needs `issuer`",
        ),
        (
            "[policy.signature]\n",
            "/p.toml:1: [policy.signature] names no signer",
        ),
        (
            "[policy.signature]\nsigner = \"me\"\n",
            "/p.toml:2: unknown field `signer`",
        ),
    ];
    for (text, want) in cases {
        let got = parse_err(text);
        assert!(
            got.starts_with(&format!("invalid policy {want}")),
            "{text:?}: {got}"
        );
    }
    let e = parse_layer(
        "[policy]\nbins = [\"curl\"]\n",
        Source::File("/p.toml".into()),
        Path::new("/"),
    );
    assert!(e.is_ok());
    assert!(matches!(
        parse_layer("[policy\n", Source::File("/p.toml".into()), Path::new("/")),
        Err(PolicyError::At { .. })
    ));
}

#[test]
fn layers_only_narrow() {
    let p = policy(&[
        "[policy]\nproviders = [\"openai\", \"anthropic\"]\nbins = [\"curl\"]\nmounts = \"ro\"\nrequire-pinned = true\n",
        // A later layer lists more, says rw and false: none of it widens.
        "[policy]\nproviders = [\"anthropic\", \"mistral\"]\nbins = [\"curl\", \"jq\"]\nmounts = \"rw\"\nrequire-pinned = false\n",
    ]);
    assert_eq!(
        p.allowed_names(|l| l.providers.as_ref()).unwrap(),
        ["anthropic"]
    );
    assert_eq!(p.allowed_names(|l| l.bins.as_ref()).unwrap(), ["curl"]);
    assert_eq!(p.mount_level().unwrap().value, MountLevel::ReadOnly);
    assert!(p.require_pinned().is_some());
    let v = violations(&p, "FROM scratch\nMODEL openai/gpt-4o\nBIN jq r/jq@sha256:0000000000000000000000000000000000000000000000000000000000000000\nMOUNT /d rw\n");
    assert_eq!(
        v,
        [
            (RuleName::Providers, "openai".to_owned(), 2),
            (RuleName::Bins, "jq".to_owned(), 3),
            (RuleName::Mounts, "/d rw".to_owned(), 4),
        ]
    );
    // Two layers refusing one item: one violation, naming the first.
    let p = policy(&[
        "[policy]\nbins = [\"curl\"]\n",
        "[policy]\nbins = [\"kubectl\"]\n",
    ]);
    let file = SourceFile::new("A", "FROM scratch\nBIN jq r/jq:1\n");
    let model = analyze(&file, &Options::default()).model;
    let v = check_agent(&p, &model.agent);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].origin.path, Path::new("/p0.toml"));
}

#[test]
fn each_rule_is_checked_at_the_line_that_breaks_it() {
    let p = policy(&["[policy]\nregistries = [\"reg.example.com/ok/*\"]\nproviders = [\"anthropic\"]\ncapabilities = [\"note_list\"]\nbins = [\"curl\"]\nmounts = \"none\"\nrequire-pinned = true\n"]);
    let text = "FROM scratch\nRUNTIME ghcr.io/x/runtime:1\nMODEL gpt4\nBIN curl reg.example.com/ok/curl:8\nBIN kubectl reg.example.com/ok/deep/kubectl@sha256:0000000000000000000000000000000000000000000000000000000000000000\nCAPABILITY note_delete\nCAPABILITY note_list\nMOUNT /data ro\n";
    let v = violations(&p, text);
    assert_eq!(
        v,
        [
            (RuleName::Registries, "ghcr.io/x/runtime:1".to_owned(), 2),
            (RuleName::RequirePinned, "ghcr.io/x/runtime:1".to_owned(), 2),
            (RuleName::Providers, "gpt4".to_owned(), 3),
            (RuleName::RequirePinned, "reg.example.com/ok/curl:8".to_owned(), 4),
            (RuleName::Bins, "kubectl".to_owned(), 5),
            // `*` stays inside one path component.
            (RuleName::Registries, "reg.example.com/ok/deep/kubectl@sha256:0000000000000000000000000000000000000000000000000000000000000000".to_owned(), 5),
            (RuleName::Capabilities, "note_delete".to_owned(), 6),
            (RuleName::Mounts, "/data ro".to_owned(), 8),
        ]
    );
    // A compliant agent: nothing. Docker Hub short names are whole repositories.
    let ok = policy(&[
        "[policy]\nregistries = [\"docker.io/library/*\"]\nproviders = [\"anthropic\"]\n",
    ]);
    assert!(violations(
        &ok,
        "FROM scratch\nRUNTIME alpine:3\nMODEL anthropic/claude\n"
    )
    .is_empty());
    // An empty policy allows what otters allows.
    assert!(violations(&Policy::default(), text).is_empty());
}

#[test]
fn findings_are_af5xx_errors_that_no_suppression_lowers() {
    let p = policy(&["[policy]\nbins = [\"curl\"]\n"]);
    let opts = Options {
        model_checks: Some(std::sync::Arc::new(p.clone())),
        ..Options::default()
    };
    let file = SourceFile::new(
        "A",
        "FROM scratch\n# otters:ignore AF504 we need it\nBIN jq r/jq:1\n",
    );
    let a = analyze(&file, &opts);
    let codes: Vec<Code> = a.diagnostics.iter().map(|d| d.code).collect();
    assert!(codes.contains(&Code::BinNotAllowed), "{codes:?}");
    assert!(a.has_errors());
    let d = p.check(&a.model);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].help.as_deref(),
        Some("the policy allows the BINs: curl")
    );
}

#[test]
fn an_egress_entry_covers_its_host_and_port_and_a_wildcard_one_label() {
    use crate::egress::{covers, parse_entry};
    use otters_agentfile::ir::egress::parse;
    let yes = |allowed: &str, declared: &str| {
        covers(&parse_entry(allowed).unwrap(), &parse(declared).unwrap())
    };
    // Exact, in any case, the port EGRESS defaults to.
    assert!(yes("api.example.com:443", "API.example.com"));
    assert!(!yes("api.example.com:443", "api.example.com:80"));
    assert!(!yes("api.example.com:443", "x.api.example.com"));
    // A wildcard covers one more label, not the suffix itself nor two labels.
    assert!(yes("*.example.net:443", "a.example.net"));
    assert!(!yes("*.example.net:443", "example.net"));
    assert!(!yes("*.example.net:443", "a.b.example.net"));
    assert!(!yes("*.example.net:443", "a.example.net:8443"));
    // A declared wildcard only by the same wildcard; a name never covers a wildcard.
    assert!(yes("*.example.net:443", "*.Example.net"));
    assert!(!yes("*.example.net:443", "*.sub.example.net"));
    assert!(!yes("a.example.net:443", "*.example.net"));
    // IP literals by address, however written.
    assert!(yes("[2001:db8::1]:853", "[2001:db8:0::1]:853"));
    assert!(yes("[2001:db8::1]:443", "2001:db8::1"));
    assert!(!yes("[2001:db8::1]:853", "[2001:db8::2]:853"));
    assert!(!yes("[2001:db8::1]:853", "[2001:db8::1]:443"));
    assert!(yes("10.0.0.1:80", "10.0.0.1:80"));
    // A policy entry writes its port.
    for bad in [
        "example.com",
        "2001:db8::1",
        "[::1]",
        "*.com:443",
        "a..b:443",
        "a.com:0",
    ] {
        assert!(parse_entry(bad).is_err(), "{bad}");
    }
    assert!(parse_err("[policy]\negress = [\"[::1]\"]\n").contains("has no port"));
    assert!(
        parse_err("[policy]\negress = [\"[::1]:443\", \"x\"]\n").contains("\"x\" is not HOST:PORT")
    );
}

#[test]
fn egress_is_held_per_line_and_none_or_nothing_passes() {
    let p = policy(&["[policy]\negress = [\"api.example.com:443\", \"*.example.net:443\", \"[2001:db8::1]:853\"]\n"]);
    let text = "FROM scratch\nEGRESS api.example.com \"the API\"\nEGRESS api.example.com:80\nEGRESS a.example.net\nEGRESS a.b.example.net\nEGRESS *.example.net\nEGRESS *.sub.example.net\nEGRESS [2001:db8::1]:853\nEGRESS [2001:db8::2]:853\n";
    let egress = |v: &str, line| (RuleName::Egress, v.to_owned(), line);
    assert_eq!(
        violations(&p, text),
        [
            egress("api.example.com:80", 3),
            egress("a.b.example.net", 5),
            egress("*.sub.example.net", 7),
            egress("[2001:db8::2]:853", 9),
        ]
    );
    assert!(violations(&p, "FROM scratch\nEGRESS none\n").is_empty());
    assert!(violations(&p, "FROM scratch\nNAME a\n").is_empty());
    // A later layer narrows: the first layer that refuses is named, once.
    let p = policy(&[
        "[policy]\negress = [\"*.example.net:443\"]\n",
        "[policy]\negress = [\"a.example.net:443\"]\n",
    ]);
    let file = SourceFile::new(
        "A",
        "FROM scratch\nEGRESS a.example.net\nEGRESS b.example.net\nEGRESS c.example.org\n",
    );
    let model = analyze(&file, &Options::default()).model;
    let v = check_agent(&p, &model.agent);
    let seen: Vec<(&str, &Path)> = v
        .iter()
        .map(|v| (v.value.as_str(), v.origin.path.as_path()))
        .collect();
    assert_eq!(
        seen,
        [
            ("b.example.net", Path::new("/p1.toml")),
            ("c.example.org", Path::new("/p0.toml"))
        ]
    );
    assert_eq!(v[1].help, "the policy allows EGRESS only to: *.example.net:443; declare one of those (or `EGRESS none`)");
    // `egress = []`: only `EGRESS none` (or nothing) passes; the finding is AF507.
    let p = policy(&["[policy]\negress = []\n"]);
    assert!(violations(&p, "FROM scratch\nEGRESS none\n").is_empty());
    let file = SourceFile::new("A", "FROM scratch\nEGRESS api.example.com\n");
    let d = p.check(&analyze(&file, &Options::default()).model);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, Code::EgressNotAllowed);
    assert_eq!(
        d[0].help.as_deref(),
        Some("the policy allows no EGRESS destination; declare `EGRESS none`")
    );
}

#[test]
fn the_published_policy_check_schema_names_every_rule() {
    let all = [
        RuleName::Registries,
        RuleName::Providers,
        RuleName::Capabilities,
        RuleName::Bins,
        RuleName::Mounts,
        RuleName::Egress,
        RuleName::RequirePinned,
        RuleName::Signature,
    ];
    // A new rule does not compile here until it is listed above.
    for r in all {
        match r {
            RuleName::Registries
            | RuleName::Providers
            | RuleName::Capabilities
            | RuleName::Bins
            | RuleName::Mounts
            | RuleName::Egress
            | RuleName::RequirePinned
            | RuleName::Signature => {}
        }
    }
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/v1/policy-check.json");
    let text = std::fs::read_to_string(schema).unwrap();
    let rule = &text[text.find("\"rule\": {").expect("a rule property")..];
    let list = &rule[rule.find("\"enum\": [").expect("an enum") + 9..];
    let list = &list[..list.find(']').unwrap()];
    let listed: Vec<&str> = list
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .collect();
    assert_eq!(listed, all.map(RuleName::as_str));
}
