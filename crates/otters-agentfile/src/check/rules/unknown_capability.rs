//! AF211 unknown-capability: a CAPABILITY the catalogue does not have (openotters drops such
//! names silently at deploy). The catalogue is the built-in openotters list (spec §g.7) unless
//! `Options::capability_catalogue` gives another.

use super::names::is_label;
use super::Ctx;
use crate::diagnostic::{Code, Diagnostic, Span};

/// openotters' capability catalogue (spec §g.7), including the daemon-callback `job_*` ones.
pub const BUILTIN_CATALOGUE: &[&str] = &[
    "context_list",
    "context_show",
    "env_list",
    "mount_list",
    "note_save",
    "note_list",
    "note_show",
    "note_delete",
    "note_pin",
    "note_unpin",
    "agent_list",
    "agent_info",
    "agent_exec",
    "agent_create",
    "agent_create_from_source",
    "agent_delete",
    "agent_list_all",
    "agent_info_any",
    "agent_exec_any",
    "agent_delete_any",
    "image_list",
    "bin_list",
    "model_list",
    "self_reload",
    "job_submit",
    "job_status",
    "job_list",
    "job_cancel",
    "job_wait",
    "job_watch",
];

pub fn unknown_capability(span: Option<Span>, name: &str, suggestion: Option<&str>) -> Diagnostic {
    let help = match suggestion {
        Some(s) => format!("did you mean `{s}`?"),
        None => "check the spelling against the runtime's capability list (`otters lint --capabilities FILE` sets the list)".to_owned(),
    };
    Diagnostic::new(
        Code::UnknownCapability,
        span,
        format!("capability `{name}` is not in the catalogue"),
    )
    .with_label("would be dropped at deploy")
    .with_help(help)
}

fn closest<'a>(name: &str, catalogue: &[&'a str]) -> Option<&'a str> {
    let swapped = name.replace('-', "_");
    if let Some(hit) = catalogue.iter().find(|c| **c == swapped) {
        return Some(hit);
    }
    catalogue
        .iter()
        .map(|c| (strsim::levenshtein(name, c), *c))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, c)| c)
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Diagnostic>) {
    let catalogue: Vec<&str> = match &cx.opts.capability_catalogue {
        Some(list) => list.iter().map(String::as_str).collect(),
        None => BUILTIN_CATALOGUE.to_vec(),
    };
    for c in &cx.model.agent.capabilities {
        // Malformed names are AF108's; one finding per problem.
        if is_label(&c.value, true) && !catalogue.contains(&c.value.as_str()) {
            out.push(unknown_capability(
                c.span,
                &c.value,
                closest(&c.value, &catalogue),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::Code;

    use crate::check::Options;

    #[test]
    fn table() {
        super::super::assert_table(
            Code::UnknownCapability,
            &[
                ("CAPABILITY note_save job_wait", &[]),
                ("CAPABILITY note_sav", &[2]),
                ("CAPABILITY note-save", &[2]),
                ("CAPABILITY Bad", &[]),
            ],
        );
    }

    #[test]
    fn custom_catalogue_replaces_builtin() {
        let opts = Options {
            capability_catalogue: Some(vec!["web_fetch".into()]),
            ..Options::default()
        };
        let text = "FROM scratch\nCAPABILITY web_fetch note_save\n";
        assert_eq!(
            super::super::lines_of(Code::UnknownCapability, text, &opts),
            [2]
        );
    }

    #[test]
    fn suggests() {
        assert_eq!(
            super::closest("note-save", super::BUILTIN_CATALOGUE),
            Some("note_save")
        );
        assert_eq!(super::closest("zzz", super::BUILTIN_CATALOGUE), None);
    }
}
