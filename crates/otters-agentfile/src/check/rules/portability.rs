//! AF230–AF236, the portability lints: constructs otters builds into an image that an openotters
//! version cannot read, or reads wrongly. Each finding names the targeted versions and what
//! happens there; versions where nothing goes wrong are not named, and a construct no targeted
//! version trips over is not reported. Targets come from [`super::Options::portability`]
//! (`[portability] targets` in `otters.toml`, `otters lint --target`).
//!
//! What each version does is read from its Go source (see docs/compatibility.md): alpha.50 is
//! `github.com/openotters/agentfile v1.0.0-alpha.50`, the version openotters' daemon pins; L is
//! the newest agentfile read (commit 4cb0b0f).
//!
//! | Code | Construct | alpha.50 | L |
//! |---|---|---|---|
//! | AF230 | directory ADD | files missing | files missing, listed as present |
//! | AF231 | ADD name with `/` | flattened to its base name | image refused |
//! | AF232 | CAPABILITY with `_` | — | image refused |
//! | AF233 | MOUNT | dropped; Agentfile unparsable | dropped |
//! | AF234 | CONTEXT name over 60 characters | — | agent refused |
//! | AF235 | ADD without a destination | Agentfile unparsable | — |
//! | AF236 | EGRESS (once per file) | ignored; Agentfile unparsable | ignored |
//!
//! A directory ADD is known only from the build context: [`super::Options::sources`] answers.

use super::names::{basename, is_label, is_path_safe, is_safe_rel, mount_target};
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};
use std::fmt::Write as _;

/// An openotters version a project targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// agentfile v1.0.0-alpha.50, pinned by openotters' daemon (`go.mod`).
    Alpha50,
    /// The newest agentfile read (commit 4cb0b0f).
    L,
}

impl Target {
    /// Every version otters knows, which is also the default set.
    pub const ALL: [Target; 2] = [Target::Alpha50, Target::L];

    /// `alpha.50` / `L` (case-insensitive; `alpha50` accepted).
    pub fn parse(s: &str) -> Option<Target> {
        match s.trim().to_ascii_lowercase().as_str() {
            "alpha.50" | "alpha50" | "v1.0.0-alpha.50" => Some(Target::Alpha50),
            "l" => Some(Target::L),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Target::Alpha50 => "alpha.50",
            Target::L => "L",
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// "in openotters alpha.50 and L, <effect>" when the effects agree, else "in openotters
/// alpha.50, <effect>; in openotters L, <effect>". `None` when no targeted version is affected.
fn effects(targets: &[Target], per: &[(Target, String)]) -> Option<String> {
    let hit: Vec<&(Target, String)> = per.iter().filter(|(t, _)| targets.contains(t)).collect();
    match hit.as_slice() {
        [] => None,
        [(a, e1), (b, e2)] if e1 == e2 => Some(format!("in openotters {a} and {b}, {e1}")),
        _ => Some(
            hit.iter()
                .map(|(t, e)| format!("in openotters {t}, {e}"))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// Gives `d` (built with its literal code, so the code table test sees it) its message.
fn finding(mut d: Diagnostic, what: &str, effect: String) -> Diagnostic {
    d.message = format!("{what}: {effect}");
    d
}

const TARGETS_HELP: &str =
    "or drop the versions you do not deploy to from `[portability] targets` in otters.toml";

/// AF230: ADD of a directory (a tar+gzip layer).
pub fn directory_add(
    span: Option<Span>,
    src: &str,
    name: &str,
    targets: &[Target],
) -> Option<Diagnostic> {
    let missing = format!(
        "the tar layer is never extracted (only application/octet-stream layers are written), so the files of `{src}` are missing from etc/data"
    );
    let mut effect = effects(
        targets,
        &[(Target::Alpha50, missing.clone()), (Target::L, missing)],
    )?;
    if targets.contains(&Target::L) {
        let _ = write!(
            effect,
            " (L's AGENT.md and WORKSPACE.md still list `{name}` as present)"
        );
    }
    Some(
        finding(
            Diagnostic::new(Code::DirectoryAddNotPortable, span, String::new()),
            &format!("ADD of the directory `{src}`"),
            effect,
        )
        .with_label("a directory becomes a tar layer")
        .with_help(format!(
            "ADD each file on its own (`ADD {src}/FILE FILE`), {TARGETS_HELP}"
        )),
    )
}

/// AF231: an ADD name with `/`.
pub fn nested_add_name(span: Option<Span>, name: &str, targets: &[Target]) -> Option<Diagnostic> {
    let base = basename(name);
    let effect = effects(
        targets,
        &[
            (
                Target::Alpha50,
                format!("the file is written to etc/data/{base} (only the last part of the name is kept, and files with the same last part overwrite each other)"),
            ),
            (
                Target::L,
                "the whole image is refused: ADD names must be flat (`spec.Validate`: ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$)".to_owned(),
            ),
        ],
    )?;
    Some(
        finding(
            Diagnostic::new(Code::NestedAddNameNotPortable, span, String::new()),
            &format!("ADD name `{name}` holds `/`"),
            effect,
        )
        .with_label("a nested name")
        .with_help(format!("use a flat name such as `{base}`, {TARGETS_HELP}")),
    )
}

/// AF232: a CAPABILITY with `_`.
pub fn capability_underscore(
    span: Option<Span>,
    name: &str,
    targets: &[Target],
) -> Option<Diagnostic> {
    let effect = effects(
        targets,
        &[(
            Target::L,
            "the whole image is refused: capability names must be DNS-1123 labels, lower-case letters, digits and `-` (`spec.Validate`)".to_owned(),
        )],
    )?;
    Some(
        finding(Diagnostic::new(Code::CapabilityUnderscoreNotPortable, span, String::new()), &format!("CAPABILITY `{name}` holds `_`"), effect)
            .with_label("`_` is not allowed in L")
            .with_help(format!(
                "openotters' daemon catalogue names its capabilities with `_` (`note_save`), so an image for L cannot grant them: drop the capability for L, {TARGETS_HELP}"
            )),
    )
}

/// AF233: a MOUNT.
pub fn mount(span: Option<Span>, target: &str, targets: &[Target]) -> Option<Diagnostic> {
    let dropped = "the mount is dropped (the config has no `mounts` field): the agent starts without it and without MOUNTS.md unless the operator passes `-v`";
    let mut effect = effects(
        targets,
        &[
            (Target::Alpha50, dropped.to_owned()),
            (Target::L, dropped.to_owned()),
        ],
    )?;
    if targets.contains(&Target::Alpha50) {
        effect.push_str(" (and alpha.50 cannot parse the Agentfile: MOUNT is not in its grammar)");
    }
    Some(
        finding(Diagnostic::new(Code::MountNotPortable, span, String::new()), &format!("MOUNT {target}"), effect)
            .with_label("declared mounts stay with otters")
            .with_help(format!(
                "tell operators to pass `-v HOST:{target}` (for example in a CONTEXT or a LABEL), {TARGETS_HELP}"
            )),
    )
}

/// AF236: an EGRESS declaration (reported once, at the first EGRESS line).
pub fn egress(span: Option<Span>, targets: &[Target]) -> Option<Diagnostic> {
    let ignored = "EGRESS is not read (the config has no `egress` field): nothing confines the agent's network";
    let mut effect = effects(
        targets,
        &[
            (Target::Alpha50, ignored.to_owned()),
            (Target::L, ignored.to_owned()),
        ],
    )?;
    if targets.contains(&Target::Alpha50) {
        effect.push_str(" (and alpha.50 cannot parse the Agentfile: EGRESS is not in its grammar)");
    }
    Some(
        finding(Diagnostic::new(Code::EgressNotPortable, span, String::new()), "EGRESS", effect)
            .with_label("declared egress is enforced by otters only")
            .with_help(format!(
                "confine the agent's network where openotters runs it (a NetworkPolicy, a firewall), {TARGETS_HELP}"
            )),
    )
}

/// AF234: a CONTEXT name whose layer title `<NAME>.md` is longer than 63 characters.
pub fn long_context_name(span: Option<Span>, name: &str, targets: &[Target]) -> Option<Diagnostic> {
    let effect = effects(
        targets,
        &[(
            Target::L,
            format!(
                "the agent is refused at start: the layer title `{name}.md` is {} characters, and layer titles must be path-safe names of at most 63 (`extractTitledLayers`)",
                name.len() + 3
            ),
        )],
    )?;
    Some(
        finding(
            Diagnostic::new(Code::LongContextNameNotPortable, span, String::new()),
            &format!("CONTEXT name of {} characters", name.len()),
            effect,
        )
        .with_label("longer than 60 characters")
        .with_help(format!(
            "shorten the name to 60 characters or fewer, {TARGETS_HELP}"
        )),
    )
}

/// AF235: an ADD without a destination.
pub fn add_without_destination(
    span: Option<Span>,
    src: &str,
    name: &str,
    targets: &[Target],
) -> Option<Diagnostic> {
    let effect = effects(
        targets,
        &[(
            Target::Alpha50,
            "the Agentfile cannot be parsed (the grammar requires `ADD <src> <dst>`): it cannot be built there, and the daemon fails when it re-reads etc/Agentfile to change the agent's capabilities".to_owned(),
        )],
    )?;
    Some(
        finding(
            Diagnostic::new(Code::AddWithoutDestinationNotPortable, span, String::new()),
            &format!("ADD `{src}` has no destination"),
            effect,
        )
        .with_label("the name is derived from the source")
        .with_help(format!("write it: `ADD {src} {name}`, {TARGETS_HELP}")),
    )
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let targets = cx.opts.portability_targets();
    if targets.is_empty() {
        return;
    }
    let a = &cx.model.agent;
    let mut found = Vec::new();
    for add in &a.adds {
        if cx.opts.sources.as_ref().is_some_and(|s| s.is_dir(&add.src)) {
            found.push(directory_add(add.src_span, &add.src, &add.name, targets));
        }
        // Names the checker refuses (AF104, AF114) are reported there, not here.
        if add.name.contains('/') && is_safe_rel(&add.name) {
            found.push(nested_add_name(add.name_span, &add.name, targets));
        }
        if add.name_span == add.src_span {
            found.push(add_without_destination(
                add.src_span,
                &add.src,
                &add.name,
                targets,
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in a
        .capabilities
        .iter()
        .filter(|c| c.value.contains('_') && is_label(&c.value, true))
    {
        // Once per name: AF217 reports the repeats.
        if seen.insert(c.value.as_str()) {
            found.push(capability_underscore(c.span, &c.value, targets));
        }
    }
    for m in a.mounts.iter().filter(|m| mount_target(&m.target).is_ok()) {
        found.push(mount(m.span, &m.target, targets));
    }
    if let Some(e) = a.egress.first() {
        found.push(egress(e.span, targets));
    }
    for c in a
        .contexts
        .iter()
        .filter(|c| c.name.len() > 60 && is_path_safe(&c.name))
    {
        found.push(long_context_name(c.name_span, &c.name, targets));
    }
    out.extend(found.into_iter().flatten());
}

#[cfg(test)]
mod tests {
    use super::super::lines_of;
    use super::*;
    use crate::check::{Options, SourceKinds};
    use std::sync::Arc;

    #[derive(Debug)]
    struct Dirs(&'static [&'static str]);
    impl SourceKinds for Dirs {
        fn is_dir(&self, src: &str) -> bool {
            self.0.contains(&src)
        }
    }

    fn opts(targets: &[Target]) -> Options {
        Options {
            portability: Some(targets.to_vec()),
            sources: Some(Arc::new(Dirs(&["data", "data/"]))),
            ..Options::default()
        }
    }

    /// code, body after `FROM scratch`, lines with both targets, alpha.50 only, L only
    type Case = (Code, String, Vec<usize>, Vec<usize>, Vec<usize>);

    #[test]
    fn table() {
        let long = "C".repeat(61);
        let max = "C".repeat(60);
        let cases: Vec<Case> = vec![
            (
                Code::DirectoryAddNotPortable,
                "ADD data d".into(),
                vec![2],
                vec![2],
                vec![2],
            ),
            (
                Code::DirectoryAddNotPortable,
                "ADD notes.txt n.txt".into(),
                vec![],
                vec![],
                vec![],
            ),
            (
                Code::NestedAddNameNotPortable,
                "ADD a.md docs/a.md".into(),
                vec![2],
                vec![2],
                vec![2],
            ),
            (
                Code::NestedAddNameNotPortable,
                "ADD a.md a.md".into(),
                vec![],
                vec![],
                vec![],
            ),
            (
                Code::CapabilityUnderscoreNotPortable,
                "CAPABILITY note_save web-fetch".into(),
                vec![2],
                vec![],
                vec![2],
            ),
            (
                Code::MountNotPortable,
                "MOUNT /data ro".into(),
                vec![2],
                vec![2],
                vec![2],
            ),
            (
                Code::MountNotPortable,
                "MOUNT /etc/data/x".into(),
                vec![],
                vec![],
                vec![],
            ),
            (
                Code::LongContextNameNotPortable,
                format!("CONTEXT {long} <<E\nx\nE"),
                vec![2],
                vec![],
                vec![2],
            ),
            (
                Code::LongContextNameNotPortable,
                format!("CONTEXT {max} <<E\nx\nE"),
                vec![],
                vec![],
                vec![],
            ),
            (
                Code::AddWithoutDestinationNotPortable,
                "ADD notes.txt".into(),
                vec![2],
                vec![2],
                vec![],
            ),
            (
                Code::AddWithoutDestinationNotPortable,
                "ADD data/".into(),
                vec![2],
                vec![2],
                vec![],
            ),
            (
                Code::AddWithoutDestinationNotPortable,
                "ADD notes.txt notes.txt".into(),
                vec![],
                vec![],
                vec![],
            ),
            (
                Code::AddWithoutDestinationNotPortable,
                "ADD notes.txt /data/".into(),
                vec![],
                vec![],
                vec![],
            ),
        ];
        for (code, body, both, alpha, l) in cases {
            let text = format!("FROM scratch\n{body}\n");
            for (targets, want) in [
                (&Target::ALL[..], &both),
                (&[Target::Alpha50][..], &alpha),
                (&[Target::L][..], &l),
                (&[][..], &vec![]),
            ] {
                let got = lines_of(code, &text, &opts(targets));
                assert_eq!(&got, want, "{code} with {targets:?} on:\n{text}");
            }
        }
    }

    #[test]
    fn messages_name_each_version_and_what_happens() {
        let msg = |body: &str, targets: &[Target]| {
            let file = crate::diagnostic::SourceFile::new("A", format!("FROM scratch\n{body}\n"));
            crate::check::analyze(&file, &opts(targets))
                .diagnostics
                .into_iter()
                .filter(|d| d.code.as_str().starts_with("AF23"))
                .map(|d| d.message)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let m = msg("ADD a.md docs/a.md", &Target::ALL);
        assert!(
            m.contains("holds `/`: in openotters alpha.50, the file is written to etc/data/a.md"),
            "{m}"
        );
        assert!(
            m.contains("; in openotters L, the whole image is refused"),
            "{m}"
        );
        let m = msg("MOUNT /data", &[Target::L]);
        assert_eq!(m, "MOUNT /data: in openotters L, the mount is dropped (the config has no `mounts` field): the agent starts without it and without MOUNTS.md unless the operator passes `-v`");
        // What the checker refuses is not reported again as a portability problem.
        for body in [
            "ADD a ../x/a",
            "CAPABILITY Note_Save",
            "MOUNT relative",
            "ADD a d/.a",
        ] {
            assert_eq!(msg(body, &Target::ALL), "", "{body}");
        }
        let m = msg("ADD data dir", &Target::ALL);
        assert_eq!(m, "ADD of the directory `data`: in openotters alpha.50 and L, the tar layer is never extracted (only application/octet-stream layers are written), so the files of `data` are missing from etc/data (L's AGENT.md and WORKSPACE.md still list `dir` as present)");
        // Without a source probe (stdin, the build), a directory ADD cannot be told.
        let file = crate::diagnostic::SourceFile::new("A", "FROM scratch\nADD data d\n");
        let o = Options {
            sources: None,
            ..opts(&Target::ALL)
        };
        assert!(!crate::check::analyze(&file, &o)
            .diagnostics
            .iter()
            .any(|d| d.code == Code::DirectoryAddNotPortable));
        assert_eq!(Target::parse(" Alpha.50 "), Some(Target::Alpha50));
        assert_eq!(Target::parse("l"), Some(Target::L));
        assert_eq!(Target::parse("alpha.49"), None);
    }
}
