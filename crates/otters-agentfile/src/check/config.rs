//! The project configuration for `otters lint`: the `[lint]` and `[portability]` tables of
//! `otters.toml`.
//!
//! Takes: the file's text. Returns: a [`LintConfig`], or a [`ConfigError`] that says which key
//! is wrong and how to fix it. Must never: read files (the CLI finds and reads `otters.toml`).
//!
//! ```toml
//! [lint]
//! fail-on = "warning"
//! [lint.severity]
//! AF201 = "off"
//! [portability]
//! targets = ["alpha.50", "L"]   # the openotters versions AF230–AF236 check; [] turns them off
//! ```

use super::{SeverityOverride, Target};
use crate::diagnostic::codes::suggestions;
use crate::diagnostic::{Code, Severity};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The names `otters.toml` may have, in the order they are looked for in each directory.
pub const FILE_NAMES: [&str; 2] = ["otters.toml", ".otters.toml"];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LintConfig {
    pub fail_on: Option<Severity>,
    pub severity: BTreeMap<Code, SeverityOverride>,
    /// `[portability] targets`; `None` when the file does not say (the default targets apply).
    pub portability: Option<Vec<Target>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{0}")]
    Toml(String),
    #[error("[lint] fail-on = \"{0}\" is not a severity; use \"error\", \"warning\" or \"info\"")]
    FailOn(String),
    #[error("[lint.severity] {code}: unknown code{hint}")]
    UnknownCode { code: String, hint: String },
    #[error("[lint.severity] {code} = \"{value}\" is not a level; use \"off\", \"info\", \"warning\" or \"error\"")]
    Level { code: String, value: String },
    #[error("[lint.severity] {code} is an error of the language and cannot be lowered; fix the Agentfile instead")]
    ErrorCode { code: String },
    #[error("[portability] targets: {0:?} is not an openotters version otters knows; use \"alpha.50\" and/or \"L\", or [] to turn the portability lints off")]
    Target(String),
}

/// `otters.toml` as [`parse`] reads it; also the source of its JSON Schema (`otters schema
/// otters-toml`), which, unlike the reader, refuses top-level tables no command reads.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields, title = "otters.toml")]
pub struct FileShape {
    /// `otters lint`'s settings.
    lint: Option<LintShape>,
    /// The openotters versions the portability lints (AF230–AF235) check.
    portability: Option<PortabilityShape>,
    /// The project's layer of the organisation policy (docs/policy.md): read and checked by
    /// `otters-policy`, which can only narrow the user's policy with it.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    #[allow(
        dead_code,
        reason = "read by otters-policy; described here for the schema"
    )]
    policy: Option<toml::Table>,
}

/// `[portability]`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PortabilityShape {
    /// The openotters versions checked (`"alpha.50"`, `"L"`); `[]` turns the lints off.
    #[schemars(inner(regex(pattern = r"^(alpha\.50|L)$")))]
    targets: Option<Vec<String>>,
}

/// `[lint]`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LintShape {
    /// Exit 1 when a finding has at least this severity (default `"error"`).
    #[schemars(regex(pattern = r"^(error|warning|info)$"))]
    fail_on: Option<String>,
    /// Severity overrides: a code (`AF201`) and its level (`off`, `info`, `warning`, `error`).
    #[serde(default)]
    #[schemars(extend("propertyNames" = {"pattern": "^AF[0-9]{3}$"}, "additionalProperties" = {"enum": ["off", "info", "warning", "error"]}))]
    severity: BTreeMap<String, String>,
}

/// Parses `otters.toml`. Other top-level tables are ignored (they belong to other commands);
/// unknown keys inside `[lint]` are errors.
pub fn parse(text: &str) -> Result<LintConfig, ConfigError> {
    let shape: FileShape =
        toml::from_str(text).map_err(|e| ConfigError::Toml(one_line(&e.to_string())))?;
    let portability = match shape.portability.and_then(|p| p.targets) {
        None => None,
        Some(names) => Some(parse_targets(&names).map_err(ConfigError::Target)?),
    };
    let Some(lint) = shape.lint else {
        return Ok(LintConfig {
            portability,
            ..LintConfig::default()
        });
    };
    let fail_on = match lint.fail_on {
        None => None,
        Some(s) => Some(Severity::parse(&s).ok_or_else(|| ConfigError::FailOn(clip(&s)))?),
    };
    let mut severity = BTreeMap::new();
    for (code, value) in lint.severity {
        let Ok(known) = code.parse::<Code>() else {
            let hint = match suggestions(&code).first() {
                Some(r) => format!("; did you mean {}?", r.code),
                None => "; run `otters explain --list` for every code".to_owned(),
            };
            return Err(ConfigError::UnknownCode {
                code: clip(&code),
                hint,
            });
        };
        let Some(level) = SeverityOverride::parse(&value) else {
            return Err(ConfigError::Level {
                code,
                value: clip(&value),
            });
        };
        if known.default_severity() == Severity::Error && level != SeverityOverride::Error {
            return Err(ConfigError::ErrorCode { code });
        }
        severity.insert(known, level);
    }
    Ok(LintConfig {
        fail_on,
        severity,
        portability,
    })
}

/// Target names (`alpha.50`, `L`) → targets, sorted and without repeats; the first unknown name
/// is the error. `none` alone means no target (for `otters lint --target none`).
pub fn parse_targets(names: &[String]) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    for n in names {
        if n.trim().eq_ignore_ascii_case("none") && names.len() == 1 {
            return Ok(out);
        }
        out.push(Target::parse(n).ok_or_else(|| n.clone())?);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// toml's messages span several lines with a source excerpt; keep them on one line.
/// The parser's message on one line, cut to [`MAX_QUOTE`] characters: its snippet quotes the
/// file, whose lines may be a megabyte long.
fn one_line(s: &str) -> String {
    clip(
        &s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The most characters of the file an error quotes.
const MAX_QUOTE: usize = 200;

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTE) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_quote_at_most_a_short_part_of_the_file() {
        let long = format!("a = {}{}\n", "[".repeat(5000), "]".repeat(5000));
        let e = parse(&long).unwrap_err().to_string();
        assert!(e.chars().count() < 2 * MAX_QUOTE, "{}", e.len());
        let e = parse(&format!("[lint]\nfail-on = \"{}\"\n", "x".repeat(5000)))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 2 * MAX_QUOTE, "{}", e.len());
    }

    #[test]
    fn parses_the_documented_example() {
        let c = parse("[lint]\nfail-on = \"warning\"\n[lint.severity]\nAF201 = \"off\"\naf216 = \"warning\"\n").unwrap();
        assert_eq!(c.fail_on, Some(Severity::Warning));
        assert_eq!(
            c.severity.get(&Code::UnpinnedImageReference),
            Some(&SeverityOverride::Off)
        );
        assert_eq!(
            c.severity.get(&Code::EmptyContext),
            Some(&SeverityOverride::Warning)
        );
    }

    #[test]
    fn portability_targets() {
        assert_eq!(parse("").unwrap().portability, None);
        let c = parse("[portability]\ntargets = [\"L\", \"alpha.50\", \"l\"]\n").unwrap();
        assert_eq!(c.portability, Some(vec![Target::Alpha50, Target::L]));
        let c = parse("[portability]\ntargets = []\n[lint]\nfail-on = \"warning\"\n").unwrap();
        assert_eq!(c.portability, Some(vec![]));
        assert_eq!(c.fail_on, Some(Severity::Warning));
        let e = parse("[portability]\ntargets = [\"alpha.49\"]\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "[portability] targets: \"alpha.49\" is not an openotters version otters knows; use \"alpha.50\" and/or \"L\", or [] to turn the portability lints off"
        );
        let e = parse("[portability]\ntarget = [\"L\"]\n").unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
    }

    #[test]
    fn empty_and_foreign_tables_are_fine() {
        assert_eq!(parse("").unwrap(), LintConfig::default());
        assert_eq!(parse("[build]\nx = 1\n").unwrap(), LintConfig::default());
    }

    #[test]
    fn rejects_what_is_wrong() {
        let table: [(&str, &str); 6] = [
            ("[lint]\nfail-on = \"fatal\"\n", "not a severity"),
            ("[lint]\nfailon = \"error\"\n", "unknown field"),
            ("[lint.severity]\nAF2O1 = \"off\"\n", "did you mean AF201"),
            ("[lint.severity]\nAF201 = \"loud\"\n", "not a level"),
            ("[lint.severity]\nAF104 = \"off\"\n", "cannot be lowered"),
            ("[lint\n", "TOML parse error"),
        ];
        for (text, want) in table {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
