//! `otters explain CODE` prints a code's documentation page (exactly `docs/rules/CODE.md`);
//! `otters explain --list` prints the table of every code.
use super::CliResult;
use otters_agentfile::diagnostic::codes::{self, RULES};
use std::fmt::Write as _;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A diagnostic code such as AF101 (or a rule name such as missing-from)
    #[arg(required_unless_present = "list")]
    pub code: Option<String>,
    /// List every code with its severity, name and summary
    #[arg(long, conflicts_with = "code")]
    pub list: bool,
    /// Output format of --list
    #[arg(long, value_enum, default_value_t = ListFormat::Human, requires = "list")]
    pub format: ListFormat,
}

// Rationale: the signature is the one every dispatcher in cli/mod.rs has.
#[allow(clippy::unnecessary_wraps)]
pub fn run(a: Args) -> CliResult {
    if a.list {
        out!("{}", list(a.format));
        return Ok(ExitCode::SUCCESS);
    }
    let query = a.code.unwrap_or_default();
    if let Some(rule) = codes::lookup(&query).or_else(|| codes::by_name(&query)) {
        out!("{}", rule.doc);
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("error: unknown code `{query}`");
    let near = codes::suggestions(&query);
    if near.is_empty() {
        eprintln!("help: run `otters explain --list` to see every code");
    } else {
        eprintln!("help: did you mean one of these?");
        for r in near {
            eprintln!("  {}  {}", r.code, r.name);
        }
    }
    Ok(ExitCode::from(2))
}

fn list(format: ListFormat) -> String {
    match format {
        ListFormat::Json => {
            let rows: Vec<serde_json::Value> = RULES
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "code": r.code,
                        "name": r.name,
                        "severity": r.severity.as_str(),
                        "summary": r.summary,
                    })
                })
                .collect();
            let mut s = serde_json::to_string_pretty(&rows).unwrap_or_default();
            s.push('\n');
            s
        }
        ListFormat::Human => {
            let width = RULES.iter().map(|r| r.name.len()).max().unwrap_or(0);
            let mut s = String::new();
            for r in RULES {
                let _ = writeln!(
                    s,
                    "{}  {:<7}  {:<width$}  {}",
                    r.code,
                    r.severity.as_str(),
                    r.name,
                    r.summary
                );
            }
            s
        }
    }
}
