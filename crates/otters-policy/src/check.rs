//! The policy held against an Agentfile's model: one [`Violation`] per item that breaks a rule,
//! at the item's span, naming the policy line that refuses it; and the same as `AF5xx` lint
//! diagnostics (the [`ModelCheck`] the check stage runs).
//!
//! Takes: a [`Policy`] and a model (from an Agentfile, or read back from an image's config blob).
//! Returns: the violations, in file order. Must never: pass an image
//! reference it cannot parse (it is a violation of `registries`, not a silent pass), or report one
//! item twice for one rule when several layers refuse it (the first layer that does is named).

use crate::egress;
use crate::model::{Layer, MountLevel, Origin, Policy, Rule};
use otters_agentfile::check::ModelCheck;
use otters_agentfile::diagnostic::{Code, Diagnostic, Span};
use otters_agentfile::ir;
use otters_spec::reference::Reference;
use std::fmt;

/// A rule of `[policy]`, as its key is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleName {
    Registries,
    Providers,
    Capabilities,
    Bins,
    Mounts,
    Egress,
    RequirePinned,
    Signature,
}

impl RuleName {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleName::Registries => "registries",
            RuleName::Providers => "providers",
            RuleName::Capabilities => "capabilities",
            RuleName::Bins => "bins",
            RuleName::Mounts => "mounts",
            RuleName::Egress => "egress",
            RuleName::RequirePinned => "require-pinned",
            RuleName::Signature => "signature",
        }
    }

    /// The lint code of the rule (the signature rule is held on images, not on Agentfiles).
    pub fn code(self) -> Option<Code> {
        match self {
            RuleName::Registries => Some(Code::RegistryNotAllowed),
            RuleName::Providers => Some(Code::ProviderNotAllowed),
            RuleName::Capabilities => Some(Code::CapabilityNotAllowed),
            RuleName::Bins => Some(Code::BinNotAllowed),
            RuleName::Mounts => Some(Code::MountNotAllowed),
            RuleName::RequirePinned => Some(Code::ImageNotPinned),
            RuleName::Egress => Some(Code::EgressNotAllowed),
            RuleName::Signature => None,
        }
    }
}

impl fmt::Display for RuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One item that breaks one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub rule: RuleName,
    /// The item as written (an image reference, a provider, a name, `MOUNT /data rw`).
    pub value: String,
    /// What is wrong, one sentence.
    pub message: String,
    /// Where in the Agentfile (`None`: inherited, read from an image, or about the image itself).
    pub span: Option<Span>,
    /// The policy line that refuses it.
    pub origin: Origin,
    /// How to comply.
    pub help: String,
}

impl Violation {
    /// The lint diagnostic, for a rule that has a code.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        let (span, message) = (self.span, self.message.clone());
        let d = match self.rule {
            RuleName::Registries => Diagnostic::new(Code::RegistryNotAllowed, span, message),
            RuleName::Providers => Diagnostic::new(Code::ProviderNotAllowed, span, message),
            RuleName::Capabilities => Diagnostic::new(Code::CapabilityNotAllowed, span, message),
            RuleName::Bins => Diagnostic::new(Code::BinNotAllowed, span, message),
            RuleName::Mounts => Diagnostic::new(Code::MountNotAllowed, span, message),
            RuleName::RequirePinned => Diagnostic::new(Code::ImageNotPinned, span, message),
            RuleName::Egress => Diagnostic::new(Code::EgressNotAllowed, span, message),
            RuleName::Signature => return None,
        };
        Some(
            d.with_label(format!("refused by the policy at {}", self.origin))
                .with_help(self.help.clone()),
        )
    }
}

/// A RUNTIME, BIN or FROM image of the model, with its instruction and span.
struct Image<'a> {
    keyword: String,
    reference: &'a str,
    span: Option<Span>,
}

fn images(agent: &ir::Agent) -> Vec<Image<'_>> {
    let mut out = Vec::new();
    if let Some(from) = agent.from.as_ref().filter(|_| !agent.is_scratch()) {
        out.push(Image {
            keyword: "FROM".to_owned(),
            reference: &from.value,
            span: from.span,
        });
    }
    if let Some(rt) = &agent.runtime {
        out.push(Image {
            keyword: "RUNTIME".to_owned(),
            reference: &rt.value,
            span: rt.span,
        });
    }
    for b in &agent.bins {
        out.push(Image {
            keyword: format!("BIN {}", b.name),
            reference: &b.image,
            span: b.image_span.or(b.span),
        });
    }
    out
}

/// The repository an image reference names (`registry.example.com/approved/runtime`), Docker
/// Hub's short names made whole (`docker.io/library/alpine`).
pub fn repository(reference: &str) -> Option<String> {
    let r = Reference::parse(reference).ok()?;
    Some(format!("{}/{}", r.registry, r.repository))
}

fn list(values: &[String]) -> String {
    values.join(", ")
}

/// The first layer whose `pick` list does not contain `value`.
fn refusing<'a>(
    policy: &'a Policy,
    pick: impl Fn(&'a Layer) -> Option<&'a Rule<Vec<String>>>,
    value: &str,
) -> Option<&'a Rule<Vec<String>>> {
    policy
        .layers
        .iter()
        .filter_map(pick)
        .find(|r| !r.value.iter().any(|v| v == value))
}

fn check_images(policy: &Policy, agent: &ir::Agent, out: &mut Vec<Violation>) {
    for img in images(agent) {
        let repo = repository(img.reference);
        for rule in policy.rules(|l| l.registries.as_ref()) {
            let ok = repo
                .as_deref()
                .is_some_and(|r| rule.value.iter().any(|p| p.matcher.is_match(r)));
            if ok {
                continue;
            }
            let globs: Vec<String> = rule.value.iter().map(|p| p.text.clone()).collect();
            let message = match &repo {
                Some(r) => format!(
                    "{} image {} comes from {r}, which the policy does not allow",
                    img.keyword, img.reference
                ),
                None => format!(
                    "{} image {:?} is not an image reference the policy can check",
                    img.keyword, img.reference
                ),
            };
            out.push(Violation {
                rule: RuleName::Registries,
                value: img.reference.to_owned(),
                message,
                span: img.span,
                origin: rule.origin.clone(),
                help: format!(
                    "the policy allows images only from: {}; use an image from there",
                    list(&globs)
                ),
            });
            break;
        }
        if let Some(rule) = policy.require_pinned() {
            let pinned = Reference::parse(img.reference).is_ok_and(|r| r.digest.is_some());
            if !pinned {
                out.push(Violation {
                    rule: RuleName::RequirePinned,
                    value: img.reference.to_owned(),
                    message: format!("{} image {} has no digest, and the policy requires every image pinned", img.keyword, img.reference),
                    span: img.span,
                    origin: rule.origin.clone(),
                    help: "write the digest in the Agentfile (IMAGE:TAG@sha256:…); `otters lock` prints the digest a tag resolves to".to_owned(),
                });
            }
        }
    }
}

fn check_model(policy: &Policy, agent: &ir::Agent, out: &mut Vec<Violation>) {
    let Some(model) = &agent.model else { return };
    let provider = model.value.split_once('/').map(|(p, _)| p);
    let refused = match provider {
        Some(p) => refusing(policy, |l| l.providers.as_ref(), p),
        None => policy.rules(|l| l.providers.as_ref()).next(),
    };
    let Some(rule) = refused else { return };
    let allowed = policy
        .allowed_names(|l| l.providers.as_ref())
        .unwrap_or_default();
    out.push(Violation {
        rule: RuleName::Providers,
        value: provider.unwrap_or(&model.value).to_owned(),
        message: match provider {
            Some(p) => format!(
                "MODEL {}: provider {p:?} is not allowed by the policy",
                model.value
            ),
            None => format!(
                "MODEL {} names no provider (provider/model), and the policy allows only some",
                model.value
            ),
        },
        span: model.span,
        origin: rule.origin.clone(),
        help: format!("the policy allows the providers: {}", list(&allowed)),
    });
}

fn check_names(policy: &Policy, agent: &ir::Agent, out: &mut Vec<Violation>) {
    for cap in &agent.capabilities {
        if let Some(rule) = refusing(policy, |l| l.capabilities.as_ref(), &cap.value) {
            let allowed = policy
                .allowed_names(|l| l.capabilities.as_ref())
                .unwrap_or_default();
            out.push(Violation {
                rule: RuleName::Capabilities,
                value: cap.value.clone(),
                message: format!("CAPABILITY {} is not allowed by the policy", cap.value),
                span: cap.span,
                origin: rule.origin.clone(),
                help: if allowed.is_empty() {
                    "the policy allows no capability; remove it".to_owned()
                } else {
                    format!("the policy allows the capabilities: {}", list(&allowed))
                },
            });
        }
    }
    for bin in &agent.bins {
        if let Some(rule) = refusing(policy, |l| l.bins.as_ref(), &bin.name) {
            let allowed = policy
                .allowed_names(|l| l.bins.as_ref())
                .unwrap_or_default();
            out.push(Violation {
                rule: RuleName::Bins,
                value: bin.name.clone(),
                message: format!("BIN {} is not allowed by the policy", bin.name),
                span: bin.name_span.or(bin.span),
                origin: rule.origin.clone(),
                help: if allowed.is_empty() {
                    "the policy allows no BIN; remove it".to_owned()
                } else {
                    format!("the policy allows the BINs: {}", list(&allowed))
                },
            });
        }
    }
}

fn check_mounts(policy: &Policy, agent: &ir::Agent, out: &mut Vec<Violation>) {
    let Some(rule) = policy.mount_level() else {
        return;
    };
    for m in &agent.mounts {
        let asks = if m.read_only {
            MountLevel::ReadOnly
        } else {
            MountLevel::ReadWrite
        };
        if asks <= rule.value {
            continue;
        }
        let mode = asks.as_str();
        let (message, help) = match rule.value {
            MountLevel::None => (
                format!(
                    "MOUNT {} is not allowed: the policy allows no mount",
                    m.target
                ),
                "remove the MOUNT; the agent cannot see host data under this policy".to_owned(),
            ),
            _ => (
                format!(
                    "MOUNT {} asks read-write access; the policy allows at most read-only",
                    m.target
                ),
                format!("write `MOUNT {} ro`", m.target),
            ),
        };
        out.push(Violation {
            rule: RuleName::Mounts,
            value: format!("{} {mode}", m.target),
            message,
            span: m.span,
            origin: rule.origin.clone(),
            help,
        });
    }
}

/// Every EGRESS line of `agent` that a layer's `egress` does not cover, the first such layer named;
/// `EGRESS none`, and an agent that declares nothing, pass.
fn check_egress(policy: &Policy, agent: &ir::Agent, out: &mut Vec<Violation>) {
    for line in agent.egress.iter().filter(|e| !e.is_none()) {
        // A malformed target is the validator's finding (AF118, AF119), not the policy's.
        let Ok(dest) = ir::egress::parse(&line.target) else {
            continue;
        };
        let refused = policy.rules(|l| l.egress.as_ref()).find(|rule| {
            !rule
                .value
                .iter()
                .filter_map(|e| egress::parse_entry(e).ok())
                .any(|allowed| egress::covers(&allowed, &dest))
        });
        let Some(rule) = refused else { continue };
        let help = if rule.value.is_empty() {
            "the policy allows no EGRESS destination; declare `EGRESS none`".to_owned()
        } else {
            format!(
                "the policy allows EGRESS only to: {}; declare one of those (or `EGRESS none`)",
                rule.value.join(", ")
            )
        };
        out.push(Violation {
            rule: RuleName::Egress,
            value: line.target.clone(),
            message: format!("EGRESS {dest} is not allowed by the policy"),
            span: line.span,
            origin: rule.origin.clone(),
            help,
        });
    }
}

/// Every violation of `policy` by `agent`, rule by rule. The signature rule is not here: it is
/// about an image, and the pipeline verifies it.
pub fn check_agent(policy: &Policy, agent: &ir::Agent) -> Vec<Violation> {
    let mut out = Vec::new();
    check_images(policy, agent, &mut out);
    check_model(policy, agent, &mut out);
    check_names(policy, agent, &mut out);
    check_mounts(policy, agent, &mut out);
    check_egress(policy, agent, &mut out);
    // In file order (items not written in the file first), each item's rules in rule order.
    out.sort_by_key(|v| v.span.map(|s| s.start));
    out
}

impl ModelCheck for Policy {
    fn check(&self, model: &ir::Agentfile) -> Vec<Diagnostic> {
        check_agent(self, &model.agent)
            .iter()
            .filter_map(Violation::diagnostic)
            .collect()
    }
}
