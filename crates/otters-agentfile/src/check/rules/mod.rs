//! The rules of the `check` stage, one file per rule. Each file has the diagnostic's
//! constructor, a `check` function over a [`Ctx`], and a pass/fail test table.
//!
//! Rules read the typed model (spans on every item) and, where the model has forgotten
//! something (a MOUNT's mode word, which instruction referenced an ARG), the AST. Must never:
//! do I/O, or set a severity (it comes from the code, see `diagnostic::codes`).

mod config_key_not_dns1123;
mod duplicate_egress;
mod duplicate_mount_target;
mod egress_none_with_hosts;
mod empty_context;
mod env_key_not_uppercase;
mod env_overrides_config;
mod hidden_control_character;
mod incomplete_scratch_agent;
mod invalid_add_destination;
mod invalid_capability_name;
mod invalid_egress_host;
mod invalid_egress_port;
mod invalid_mount_target;
mod loader_env;
mod name_not_path_safe;
pub(crate) mod not_a_bin_image;
pub(crate) mod portability;
pub(crate) use crate::ir::names;
mod required_config_with_value;
mod reserved_context_name;
mod reserved_env_key;
mod secret_in_value;
mod shadowed_declaration;
mod unknown_capability;
mod unpinned_image_reference;
mod unused_arg;

pub use unknown_capability::BUILTIN_CATALOGUE;

use super::Options;
use crate::diagnostic::{Diagnostic, SourceFile};
use crate::ir::Agentfile;
use crate::syntax::Ast;

/// Everything a rule may look at.
pub(crate) struct Ctx<'a> {
    pub file: &'a SourceFile,
    pub ast: &'a Ast,
    pub model: &'a Agentfile,
    pub opts: &'a Options,
}

type Rule = fn(&Ctx<'_>, &mut Vec<Diagnostic>);

/// Every rule, in code order.
const RULES: &[Rule] = &[
    name_not_path_safe::check,
    reserved_context_name::check,
    config_key_not_dns1123::check,
    required_config_with_value::check,
    invalid_capability_name::check,
    env_key_not_uppercase::check,
    reserved_env_key::check,
    invalid_add_destination::check,
    invalid_mount_target::check,
    duplicate_mount_target::check,
    invalid_egress_host::check,
    invalid_egress_port::check,
    egress_none_with_hosts::check,
    duplicate_egress::check,
    unpinned_image_reference::check,
    not_a_bin_image::check,
    secret_in_value::check,
    unused_arg::check,
    shadowed_declaration::check,
    incomplete_scratch_agent::check,
    unknown_capability::check,
    empty_context::check,
    env_overrides_config::check,
    hidden_control_character::check,
    loader_env::check,
    portability::check,
];

/// Runs every rule.
pub(crate) fn run(cx: &Ctx<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for rule in RULES {
        rule(cx, &mut out);
    }
    out
}

/// Test helper: the 1-based lines at which `code` is reported for `text`, through the whole
/// pipeline (parser, lowering, rules, suppressions).
#[cfg(test)]
pub(crate) fn lines_of(code: crate::diagnostic::Code, text: &str, opts: &Options) -> Vec<usize> {
    let file = SourceFile::new("Agentfile", text);
    super::analyze(&file, opts)
        .diagnostics
        .iter()
        .filter(|d| d.code == code)
        .map(|d| file.line_of(d.start()))
        .collect()
}

/// Test helper: asserts a pass/fail table for one code with default options. Each case is the
/// text after `FROM scratch\n` and the lines (counting `FROM` as line 1) that must be reported.
#[cfg(test)]
pub(crate) fn assert_table(code: crate::diagnostic::Code, cases: &[(&str, &[usize])]) {
    for (body, want) in cases {
        let text = format!("FROM scratch\n{body}\n");
        let got = lines_of(code, &text, &Options::default());
        assert_eq!(&got, want, "{code} on:\n{text}");
    }
}
