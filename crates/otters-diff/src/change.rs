//! The values of a diff: a [`Change`], its [`Class`] (the order of the output), what it is about
//! ([`What`]) and how it changed ([`Kind`]).
//!
//! Takes: nothing. Returns: plain values with stable names (the JSON keys and values of
//! docs/diff.md). Must never: change a name once published; a new kind of change is a new
//! variant.

/// How much a change matters to a reviewer, most first: the output is ordered by class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// The agent may do more than before.
    Escalation,
    /// What the model is told or runs changed.
    Behaviour,
    /// The same repository re-pinned.
    Pin,
    /// CONFIG, ENV, NAME, LABEL, ARG.
    Configuration,
    /// ADD files by path, size and digest.
    Data,
    /// Signatures, attestations, platforms, the manifest itself.
    Provenance,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Escalation,
        Class::Behaviour,
        Class::Pin,
        Class::Configuration,
        Class::Data,
        Class::Provenance,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Escalation => "escalation",
            Class::Behaviour => "behaviour",
            Class::Pin => "pin",
            Class::Configuration => "configuration",
            Class::Data => "data",
            Class::Provenance => "provenance",
        }
    }
}

/// What a change is about, in the order the output lists them within a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum What {
    From,
    Runtime,
    Model,
    Bin,
    Capability,
    Mount,
    Egress,
    Context,
    Exec,
    Name,
    Config,
    Env,
    Label,
    Arg,
    Add,
    Platform,
    Referrer,
    Signer,
    Chain,
    Manifest,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::From => "from",
            What::Runtime => "runtime",
            What::Model => "model",
            What::Bin => "bin",
            What::Capability => "capability",
            What::Mount => "mount",
            What::Egress => "egress",
            What::Context => "context",
            What::Exec => "exec",
            What::Name => "name",
            What::Config => "config",
            What::Env => "env",
            What::Label => "label",
            What::Arg => "arg",
            What::Add => "add",
            What::Platform => "platform",
            What::Referrer => "referrer",
            What::Signer => "signer",
            What::Chain => "chain",
            What::Manifest => "manifest",
        }
    }
}

/// Whether the item is new, gone, or different.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Added,
    Removed,
    Changed,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Removed => "removed",
            Kind::Changed => "changed",
        }
    }
}

/// One classified change. `before` is `None` for an addition, `after` for a removal; `field`
/// names the part of the item that changed (`image`, `usage`, `mode`, …) when it is not the
/// whole item; `diff` is a unified diff for text (a CONTEXT, a BIN's USAGE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub class: Class,
    pub what: What,
    pub name: String,
    pub field: Option<&'static str>,
    pub change: Kind,
    pub before: Option<String>,
    pub after: Option<String>,
    pub diff: Option<String>,
    /// More about the change, read beside the two agents: a re-pinned image's SBOM component
    /// delta.
    pub detail: Option<String>,
}

impl Change {
    pub fn new(class: Class, what: What, name: impl Into<String>, change: Kind) -> Self {
        Change {
            class,
            what,
            name: name.into(),
            field: None,
            change,
            before: None,
            after: None,
            diff: None,
            detail: None,
        }
    }

    #[must_use]
    pub fn field(mut self, field: &'static str) -> Self {
        self.field = Some(field);
        self
    }

    #[must_use]
    pub fn values(mut self, before: Option<String>, after: Option<String>) -> Self {
        self.before = before;
        self.after = after;
        self
    }

    #[must_use]
    pub fn diff(mut self, diff: String) -> Self {
        self.diff = Some(diff).filter(|d| !d.is_empty());
        self
    }
}

/// Whether `changes` holds one of `class` or a more important one (a gate: `Escalation` fails on
/// escalations only, `Behaviour` on escalations and behaviour changes, `Provenance` on any).
pub fn at_or_above(changes: &[Change], class: Class) -> bool {
    changes.iter().any(|c| c.class <= class)
}

/// How many changes of `class` `changes` holds.
pub fn count(changes: &[Change], class: Class) -> usize {
    changes.iter().filter(|c| c.class == class).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_fails_on_its_class_and_the_more_important_ones() {
        let behaviour = [Change::new(
            Class::Behaviour,
            What::Context,
            "SOUL",
            Kind::Changed,
        )];
        assert!(!at_or_above(&behaviour, Class::Escalation));
        assert!(at_or_above(&behaviour, Class::Behaviour));
        assert!(at_or_above(&behaviour, Class::Provenance));
        assert!(!at_or_above(&[], Class::Provenance));
        assert_eq!(count(&behaviour, Class::Behaviour), 1);
    }
}
