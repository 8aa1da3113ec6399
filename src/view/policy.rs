//! `otters policy show` and `otters policy check`: the policy in effect (every rule with the file
//! and line it came from) and the violations of a target, as text, JSON or SARIF.
//!
//! Takes: a policy and violations (with the Agentfile they were found in, if any). Returns: text.
//! Must never: print, or show a value from a file or an image unescaped.
use super::{esc, line, path};
use otters_agentfile::diagnostic::{codes::RULES, render, SourceFile};
use otters_policy::{Layer, Policy, Violation};
use otters_schema::outputs::{PolicyCheck, PolicyViolation, WithSchema};
use serde_json::{json, Value};

/// Each rule of a layer: key, value as written, where.
fn rules(l: &Layer) -> Vec<(&'static str, String, &otters_policy::Origin)> {
    let names = |v: &[String]| v.iter().map(|s| esc(s)).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    if let Some(r) = &l.registries {
        let globs: Vec<String> = r.value.iter().map(|p| p.text.clone()).collect();
        out.push(("registries", names(&globs), &r.origin));
    }
    for (key, rule) in [
        ("providers", &l.providers),
        ("capabilities", &l.capabilities),
        ("bins", &l.bins),
        ("egress", &l.egress),
    ] {
        if let Some(r) = rule {
            let v = if r.value.is_empty() {
                "(none)".to_owned()
            } else {
                names(&r.value)
            };
            out.push((key, v, &r.origin));
        }
    }
    if let Some(r) = &l.mounts {
        out.push(("mounts", r.value.as_str().to_owned(), &r.origin));
    }
    if let Some(r) = &l.require_pinned {
        out.push(("require-pinned", r.value.to_string(), &r.origin));
    }
    if let Some(r) = &l.signature {
        out.push(("signature", esc(&r.value.to_string()), &r.origin));
    }
    out
}

/// The layers in order, each rule on a line with where it came from; the rules every layer sets
/// are all held (each layer only narrows).
pub fn show_text(p: &Policy) -> String {
    let mut s = String::new();
    if p.is_empty() {
        line!(
            s,
            "no policy: no [policy] in config.toml, OTTERS_POLICY, the files named, or otters.toml"
        );
        return s;
    }
    for l in p.layers.iter().filter(|l| !l.is_empty()) {
        line!(s, "{} ({})", path(l.source.path()), l.source.kind());
        for (key, value, origin) in rules(l) {
            line!(s, "  {key:<15} {value}  [line {}]", origin.line);
        }
    }
    line!(s, "effective (every layer holds; each can only narrow):");
    for (key, pick) in [
        (
            "providers",
            (|l: &Layer| l.providers.as_ref())
                as fn(&Layer) -> Option<&otters_policy::Rule<Vec<String>>>,
        ),
        ("capabilities", |l: &Layer| l.capabilities.as_ref()),
        ("bins", |l: &Layer| l.bins.as_ref()),
    ] {
        if let Some(v) = p.allowed_names(pick) {
            let v: Vec<String> = v.iter().map(|n| esc(n)).collect();
            line!(
                s,
                "  {key:<15} {}",
                if v.is_empty() {
                    "(none)".to_owned()
                } else {
                    v.join(", ")
                }
            );
        }
    }
    if let Some(r) = p.mount_level() {
        line!(
            s,
            "  {:<15} {}  [{}]",
            "mounts",
            r.value.as_str(),
            path(&r.origin.path)
        );
    }
    if let Some(r) = p.require_pinned() {
        line!(
            s,
            "  {:<15} true  [{}]",
            "require-pinned",
            path(&r.origin.path)
        );
    }
    let n = p.rules(|l| l.registries.as_ref()).count();
    if n > 0 {
        line!(
            s,
            "  {:<15} an image must match a glob of each of {n} layer(s)",
            "registries"
        );
    }
    let n = p.rules(|l| l.egress.as_ref()).count();
    if n > 0 {
        line!(
            s,
            "  {:<15} an EGRESS destination must be covered by an entry of each of {n} layer(s)",
            "egress"
        );
    }
    let sigs = p.signatures();
    if !sigs.is_empty() {
        line!(
            s,
            "  {:<15} every image must verify for each of {} signer(s)",
            "signature",
            sigs.len()
        );
    }
    s
}

/// The same as JSON: `{"layers": [{"source", "kind", "rules": [{"rule", "value", "line"}]}]}`.
pub fn show_json(p: &Policy) -> String {
    let layers: Vec<Value> = p
        .layers
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let rules: Vec<Value> = rules(l)
                .into_iter()
                .map(|(k, v, o)| json!({"rule": k, "value": v, "line": o.line}))
                .collect();
            json!({"source": l.source.path().display().to_string(), "kind": l.source.kind(), "rules": rules})
        })
        .collect();
    format!("{:#}\n", json!({ "layers": layers }))
}

/// The 1-based line of a violation in `file`, if it has a place there.
fn line_of(file: Option<&SourceFile>, v: &Violation) -> Option<usize> {
    Some(file?.line_of(v.span?.start))
}

/// One violation per paragraph (`FILE:LINE: rule: message`, the policy line, the help), then the
/// count.
pub fn check_text(target: &str, file: Option<&SourceFile>, violations: &[Violation]) -> String {
    let mut s = String::new();
    for v in violations {
        let at = match line_of(file, v) {
            Some(n) => format!("{}:{n}", esc(target)),
            None => esc(target),
        };
        line!(s, "{at}: {}: {}", v.rule, esc(&v.message));
        line!(
            s,
            "  refused by the policy at {}",
            format!("{}:{}", path(&v.origin.path), v.origin.line)
        );
        line!(s, "  help: {}", esc(&v.help));
    }
    match violations.len() {
        0 => line!(s, "{}: no violations of the policy", esc(target)),
        1 => line!(s, "1 violation of the policy"),
        n => line!(s, "{n} violations of the policy"),
    }
    s
}

/// `{"$schema", "target", "violations": [{"rule", "code", "value", "message", "line", "policy",
/// "help"}]}`; its schema is `otters schema policy-check`.
pub fn check_json(target: &str, file: Option<&SourceFile>, violations: &[Violation]) -> String {
    let list = violations
        .iter()
        .map(|v| PolicyViolation {
            rule: v.rule.as_str(),
            code: v
                .rule
                .code()
                .map(otters_agentfile::diagnostic::Code::as_str),
            value: &v.value,
            message: &v.message,
            line: line_of(file, v),
            policy: v.origin.to_string(),
            help: &v.help,
        })
        .collect();
    let doc = PolicyCheck {
        target,
        violations: list,
    };
    let mut text =
        serde_json::to_string_pretty(&WithSchema::new("policy-check", doc)).unwrap_or_default();
    text.push('\n');
    text
}

/// SARIF, as `otters lint --format sarif` writes it: the violations that have a code (a
/// signature violation is about an image, not a line, and has none).
pub fn check_sarif(target: &str, file: Option<&SourceFile>, violations: &[Violation]) -> String {
    let file = file.cloned().unwrap_or_else(|| SourceFile::new(target, ""));
    let diags = violations
        .iter()
        .filter_map(Violation::diagnostic)
        .collect();
    render::sarif(&[(file, diags)], RULES)
}
