//! Unit tests of the `ir` stage: typing, overrides, ARG expansion and the config blob.

use super::*;
use crate::diagnostic::{Code, Diagnostic, SourceFile};
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn model(text: &str) -> (Agentfile, Vec<Code>) {
    model_with(text, &BTreeMap::new())
}

fn model_with(text: &str, args: &BTreeMap<String, String>) -> (Agentfile, Vec<Code>) {
    let f = SourceFile::new("Agentfile", text);
    let ast = crate::syntax::parse(&f);
    let (m, d) = from_ast(&ast, &f, args);
    (
        m,
        ast.diagnostics.iter().chain(&d).map(|d| d.code).collect(),
    )
}

fn blob(text: &str) -> String {
    String::from_utf8(config_blob(&model(text).0).unwrap()).unwrap()
}

#[test]
fn config_typing_follows_go() {
    let cases = [
        ("1024", ConfigValue::Int(1024)),
        ("-007", ConfigValue::Int(-7)),
        ("0.7", ConfigValue::Float(0.7)),
        ("1e3", ConfigValue::Float(1000.0)),
        ("true", ConfigValue::Bool(true)),
        ("True", ConfigValue::String("True".into())),
        ("99999999999999999999", ConfigValue::Float(1e20)),
        ("summarize", ConfigValue::String("summarize".into())),
        ("1.2.3", ConfigValue::String("1.2.3".into())),
    ];
    for (text, want) in cases {
        assert_eq!(type_config_value(text), want, "{text}");
    }
}

#[test]
fn runtime_clears_earlier_configs_and_warns() {
    let (m, codes) = model("FROM scratch\nCONFIG a=1\nRUNTIME r\nCONFIG b=2\n");
    let keys: Vec<_> = m.agent.configs.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["b"]);
    assert_eq!(codes, [Code::ConfigClearedByRuntime]);
}

#[test]
fn context_override_keeps_first_position() {
    let (m, codes) =
        model("FROM scratch\nCONTEXT A <<E\none\nE\nCONTEXT B\nCONTEXT A <<E\ntwo\nE\n");
    let names: Vec<_> = m
        .agent
        .contexts
        .iter()
        .map(|c| (c.name.as_str(), c.content.as_deref()))
        .collect();
    assert_eq!(names, [("A", Some("two")), ("B", None)]);
    assert_eq!(codes, [Code::ShadowedDeclaration]);
}

#[test]
fn args_expand_in_order_and_build_args_override() {
    let text = "FROM scratch\nARG V=1\nARG W\nNAME a-${V}-${W}-${U}\n";
    let (m, codes) = model(text);
    assert_eq!(m.agent.name_str(), Some("a-1-${W}-${U}"));
    assert_eq!(codes, [Code::UndefinedArg, Code::UndefinedArg]);
    let args = BTreeMap::from([
        ("V".to_owned(), "2".to_owned()),
        ("W".to_owned(), "x".to_owned()),
    ]);
    let (m, codes) = model_with(text, &args);
    assert_eq!(m.agent.name_str(), Some("a-2-x-${U}"));
    assert_eq!(codes, [Code::UndefinedArg]);
}

#[test]
fn heredoc_bodies_are_never_expanded() {
    let (m, _) = model("FROM scratch\nARG X=1\nCONTEXT S <<E\n${X}\nE\n");
    assert_eq!(m.agent.contexts[0].content.as_deref(), Some("${X}"));
}

#[test]
fn add_destinations_normalise() {
    let (m, codes) = model("FROM scratch\nADD data/a.json\nADD b.json /data/x/b.json\nADD c.txt sub/\nADD d.txt ./e.txt \"desc\"\n");
    let names: Vec<_> = m.agent.adds.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["a.json", "x/b.json", "sub/c.txt", "e.txt"]);
    assert_eq!(codes, [Code::DeprecatedAddForm]);
}

#[test]
fn structural_errors() {
    assert_eq!(model("NAME a\nFROM scratch\n").1, [Code::FromNotFirst]);
    assert_eq!(
        model("FROM scratch\nFROM scratch\n").1,
        [Code::DuplicateFrom]
    );
    assert_eq!(model("# just a comment\n").1, [Code::MissingFrom]);
    assert_eq!(model("FROM scratch\nEXEC []\n").1, [Code::EmptyExec]);
    assert_eq!(
        model("FROM scratch\nCONFIG x=nan\n").1,
        [Code::NonFiniteConfigValue]
    );
    assert_eq!(
        model("FROM scratch\nCONTEXT A file://a.md <<E\nx\nE\n").1,
        [Code::ContextFileAndHeredoc]
    );
    assert_eq!(
        model("FROM scratch\n# syntax=openotters/agentfile:1\n").1,
        [Code::MisplacedSyntaxDirective]
    );
    assert_eq!(
        model("# syntax=other:2\nFROM scratch\n").1,
        [Code::UnsupportedSyntax]
    );
    assert_eq!(model("from scratch\n").1, [Code::KeywordCase]);
    assert_eq!(
        model("FROM scratch\nLABEL a=b <<E\nx\nE\n").1,
        [Code::IgnoredHeredoc]
    );
    assert_eq!(
        model("FROM scratch\nCAPABILITY a b a\n").1,
        [Code::DuplicateCapability]
    );
}

#[test]
fn config_blob_matches_go_shape() {
    let text = "FROM scratch\nRUNTIME r:1\nNAME probe\nCONTEXT SOUL \"core\" <<E\nReply <host>\nE\nCONFIG max-tokens=256\nCONFIG url! \"hook\"\nCONFIG t=0.7\nBIN ping img:1\nADD data/h.json\nLABEL z=1\nLABEL a=\"x&y\"\nENV LOG=debug\nCAPABILITY note_save\nEXEC [\"serve\", \"-v\"]\nMOUNT /data ro \"the data\"\n";
    insta::assert_snapshot!(blob(text), @r#"
    {
      "syntax": "openotters/agentfile:1",
      "agent": {
        "from": "scratch",
        "runtime": "r:1",
        "name": "probe",
        "contexts": [
          {
            "name": "SOUL",
            "description": "core",
            "content": "Reply \u003chost\u003e"
          }
        ],
        "configs": [
          {
            "key": "max-tokens",
            "value": 256
          },
          {
            "key": "url",
            "description": "hook",
            "required": true
          },
          {
            "key": "t",
            "value": 0.7
          }
        ],
        "bins": [
          {
            "name": "ping",
            "image": "img:1"
          }
        ],
        "adds": [
          {
            "src": "data/h.json",
            "name": "h.json",
            "dst": "h.json"
          }
        ],
        "exec": [
          "serve",
          "-v"
        ],
        "labels": {
          "a": "x\u0026y",
          "z": "1"
        },
        "envs": [
          {
            "key": "LOG",
            "value": "debug"
          }
        ],
        "capabilities": [
          "note_save"
        ],
        "mounts": [
          {
            "target": "/data",
            "description": "the data",
            "read_only": true
          }
        ]
      }
    }
    "#);
}

#[test]
fn config_blob_round_trips() {
    let text = "FROM parent:1\nRUNTIME r\nMODEL a/b\nNAME n\nCONTEXT S \"d\" <<E\nx\nE\nCONTEXT F file://f.md\nCONFIG k=1\nCONFIG f=1.5\nCONFIG s=\"1\"\nCONFIG r!\nBIN b i \"d\" <<U\nu\nU\nADD a.txt\nLABEL l=v\nARG A=1\nENV E=v \"d\"\nCAPABILITY c\nMOUNT /m\n";
    let (m, _) = model(text);
    let bytes = config_blob(&m).unwrap();
    let back = from_config_blob(&bytes).unwrap();
    assert_eq!(config_blob(&back).unwrap(), bytes);
    // Written in the Agentfile: a span. Read from the blob: none.
    let a = &m.agent;
    assert!(a.from.as_ref().is_some_and(|n| n.span.is_some()));
    assert!(a
        .contexts
        .iter()
        .all(|c| c.span.is_some() && c.name_span.is_some()));
    assert!(a
        .envs
        .iter()
        .all(|e| e.span.is_some() && e.key_span.is_some()));
    let b = &back.agent;
    let nodes = [&b.from, &b.runtime, &b.model, &b.name];
    assert!(nodes
        .iter()
        .all(|n| n.as_ref().is_some_and(|n| n.span.is_none())));
    assert!(b
        .contexts
        .iter()
        .all(|c| c.span.is_none() && c.name_span.is_none()));
    assert!(b
        .configs
        .iter()
        .all(|c| c.span.is_none() && c.key_span.is_none()));
    assert!(b
        .bins
        .iter()
        .all(|x| x.span.is_none() && x.image_span.is_none()));
    assert!(b
        .adds
        .iter()
        .all(|x| x.span.is_none() && x.src_span.is_none()));
    assert!(b
        .envs
        .iter()
        .all(|e| e.span.is_none() && e.key_span.is_none()));
    assert!(b.mounts.iter().all(|x| x.span.is_none()));
    assert!(b.capabilities.iter().all(|n| n.span.is_none()));
    assert!(!b.bins.is_empty() && !b.adds.is_empty() && !b.mounts.is_empty());
}

#[test]
fn reads_openotters_alpha_adds() {
    let json = br#"{"syntax":"openotters/agentfile:1","agent":{"from":"scratch","adds":[{"src":"x.json","dst":"/data/x.json"}],"future":1}}"#;
    let m = from_config_blob(json).unwrap();
    assert_eq!(m.agent.adds[0].name, "x.json");
    // alpha.50 writes `etc/data/` + filepath.Base(dst): nested and relative `dst` flatten.
    for (dst, name) in [
        ("/data/sub/y.json", "y.json"),
        ("data/y.json", "y.json"),
        ("./y.json", "y.json"),
        ("/data/dir/", "dir"),
    ] {
        let json =
            format!(r#"{{"agent":{{"from":"scratch","adds":[{{"src":"y","dst":"{dst}"}}]}}}}"#);
        let m = from_config_blob(json.as_bytes()).unwrap();
        assert_eq!(m.agent.adds[0].name, name, "{dst}");
    }
    // `name` wins over `dst` when both are there (otters writes both, equal).
    let json = br#"{"agent":{"from":"scratch","adds":[{"src":"y","name":"docs/y.json","dst":"elsewhere"}]}}"#;
    assert_eq!(
        from_config_blob(json).unwrap().agent.adds[0].name,
        "docs/y.json"
    );
}

/// `ARG a0=x…`, then `ARG aN=${aN-1}${aN-1}` for `levels` levels: doubles at every level.
fn doubling(levels: usize) -> String {
    let mut text = String::from("FROM scratch\nARG a0=xxxxxxxxxxxxxxxx\n");
    for i in 1..=levels {
        let _ = writeln!(text, "ARG a{i}=${{a{}}}${{a{}}}", i - 1, i - 1);
    }
    let _ = writeln!(text, "LABEL top=${{a{levels}}}");
    text
}

#[test]
fn expansion_stops_at_the_value_limit_and_marks_the_reference() {
    let text = doubling(40);
    let f = SourceFile::new("Agentfile", text.as_str());
    let ast = crate::syntax::parse(&f);
    let (m, d) = from_ast(&ast, &f, &BTreeMap::new());
    let af117: Vec<_> = d
        .iter()
        .filter(|d| d.code == Code::ArgExpansionTooLong)
        .collect();
    assert!(!af117.is_empty());
    // Each finding points at the `${aN}` that would have overflowed.
    for d in &af117 {
        let s = d.span.expect("AF117 points into the file");
        let written = &text[s.start..s.end];
        assert!(
            written.starts_with("${a") && written.ends_with('}'),
            "{written}"
        );
    }
    // A value holds at most the limit plus the literal text left unexpanded after it.
    for v in m.agent.args.values() {
        assert!(
            v.value.len() <= MAX_EXPANDED_VALUE + 16,
            "{}",
            v.value.len()
        );
    }
    let total: usize = m.agent.args.values().map(|v| v.value.len()).sum::<usize>()
        + m.agent
            .labels
            .values()
            .map(|v| v.value.len())
            .sum::<usize>();
    assert!(total <= MAX_EXPANDED_TOTAL + text.len(), "{total}");
}

#[test]
fn expansion_stops_at_the_file_limit_once() {
    // 100 KiB value (under the per-value limit) used 20 times: 2 MiB > 1 MiB in all.
    let mut text = format!("FROM scratch\nARG big={}\n", "y".repeat(100 * 1024));
    for i in 0..20 {
        let _ = writeln!(text, "LABEL l{i}=${{big}}");
    }
    let (m, codes) = model(&text);
    assert_eq!(
        codes
            .iter()
            .filter(|c| **c == Code::ArgExpansionTooLong)
            .count(),
        1,
        "{codes:?}"
    );
    let expanded = m
        .agent
        .labels
        .values()
        .filter(|l| l.value.starts_with('y'))
        .count();
    assert_eq!(expanded, 10);
    assert_eq!(m.agent.labels["l19"].value, "${big}");
}

#[test]
fn many_references_in_one_token_are_each_located() {
    let mut text = String::from("FROM scratch\nLABEL x=");
    for _ in 0..3 {
        text.push_str("${nope}-");
    }
    text.push('\n');
    let f = SourceFile::new("Agentfile", text.as_str());
    let ast = crate::syntax::parse(&f);
    let (_, d) = from_ast(&ast, &f, &BTreeMap::new());
    let starts: Vec<_> = d
        .iter()
        .filter(|d| d.code == Code::UndefinedArg)
        .map(Diagnostic::start)
        .collect();
    assert_eq!(starts, [21, 29, 37]);
}

#[test]
fn egress_round_trips_through_the_blob() {
    let with = "FROM scratch\nEGRESS api.example.com \"the API\"\nEGRESS [2001:db8::1]:853\nEGRESS *.example.org:80\n";
    let bytes = config_blob(&model(with).0).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v["agent"]["egress"],
        serde_json::json!([{"host":"api.example.com","port":443,"description":"the API"},{"host":"2001:db8::1","port":853},{"host":"*.example.org","port":80}])
    );
    let back = from_config_blob(&bytes).unwrap();
    assert_eq!(config_blob(&back).unwrap(), bytes);
    assert_eq!(
        back.agent.egress_policy(),
        model(with).0.agent.egress_policy()
    );
    // `none` is an empty list; no EGRESS writes no key at all (blobs of older agents unchanged).
    let none = blob("FROM scratch\nEGRESS none\n");
    let v: serde_json::Value = serde_json::from_str(&none).unwrap();
    assert_eq!(v["agent"]["egress"], serde_json::json!([]));
    let back = from_config_blob(none.as_bytes()).unwrap();
    assert_eq!(back.agent.egress_policy(), egress::Policy::Nothing);
    assert!(!blob("FROM scratch\nMOUNT /m\n").contains("egress"));
}

#[test]
fn hostile_egress_in_a_blob_is_refused() {
    let problem = |agent: &str| {
        let json = format!(
            r#"{{"syntax":"openotters/agentfile:1","agent":{{"from":"scratch","egress":{agent}}}}}"#
        );
        match from_config_blob(json.as_bytes()) {
            Ok(m) => format!("ok {:?}", m.agent.egress_policy()),
            Err(e) => e.to_string(),
        }
    };
    for (agent, want) in [
        (r#"[{"host":"a..b","port":1}]"#, "egress[0]"),
        (r#"[{"host":"a.com","port":70000}]"#, "egress[0]"),
        (r#"[{"host":"a.com","port":"443"}]"#, "egress[0]"),
        (r#"[{"host":"a.com","port":-1}]"#, "egress[0]"),
        (r#"[{"host":"a.com:1","port":2}]"#, "egress[0]"),
        (
            r#"[{"host":"a.com"},{"host":"A.com","port":443}]"#,
            "egress[1]",
        ),
        (r#"[{"host":"none"},{"host":"a.com"}]"#, "egress[0]"),
        (r"[null]", "egress[0] is null"),
        (r#""x""#, "egress"),
    ] {
        let got = problem(agent);
        assert!(
            got.contains(want) && !got.starts_with("ok"),
            "{agent}: {got}"
        );
    }
    assert!(problem(r#"[{"host":"a.com"}]"#).starts_with("ok Allow"));
}
