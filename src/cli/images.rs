//! `otters images`: the images of the local store, as a table, JSON or a template per line.
use super::common::{esc, human_size, open_store};
use super::{fail, CliResult};
use miette::{miette, IntoDiagnostic};
use otters_core::escape::{escape, json_controls};
use otters_oci::store::query::{self, ImageEntry};
use serde_json::json;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    /// Output format: `text`, `json`, or a template of fields, one line per image, e.g.
    /// '{{.Reference}} {{.Digest}}' (fields `Reference`, `Repository`, `Tag`, `Digest`,
    /// `ShortDigest`, `Size`, `Created`)
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Print only the image digests, one per image (for scripts: `otters images -q | …`)
    #[arg(short, long, conflicts_with = "format")]
    pub quiet: bool,
    /// Show the full digest instead of its first 12 hex digits
    #[arg(long)]
    pub digests: bool,
    /// Show only matching images: `reference=GLOB` (e.g. `meteo:*`, `*/agents/*`; several are
    /// or-ed) or `dangling=true|false` (untagged images); different keys must all match
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
}

/// `--filter` of `images`: references matching any glob, and/or tagged-ness.
#[derive(Default)]
struct Filter {
    references: Vec<globset::GlobMatcher>,
    dangling: Option<bool>,
}

impl Filter {
    fn parse(items: &[String]) -> miette::Result<Filter> {
        let mut f = Filter::default();
        for item in items {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                miette!(
                    "--filter `{}`: expected KEY=VALUE (reference=GLOB or dangling=true|false)",
                    esc(item)
                )
            })?;
            match key {
                "reference" => {
                    let glob = globset::Glob::new(value).map_err(|e| {
                        miette!("--filter reference=`{}`: {e}", esc(value))
                    })?;
                    f.references.push(glob.compile_matcher());
                }
                "dangling" => {
                    f.dangling = Some(match value {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => {
                            return Err(miette!(
                                "--filter dangling=`{}`: use true or false",
                                esc(value)
                            ))
                        }
                    });
                }
                _ => {
                    return Err(miette!(
                        "--filter: unknown key `{}`; otters knows reference=GLOB and dangling=true|false",
                        esc(key)
                    ))
                }
            }
        }
        Ok(f)
    }

    fn keeps(&self, name: &str) -> bool {
        let dangling = name.is_empty();
        self.dangling.is_none_or(|d| d == dangling)
            && (self.references.is_empty()
                || (!dangling && self.references.iter().any(|g| g.is_match(name))))
    }
}

/// One piece of an `images --format` template.
enum Piece {
    Text(String),
    Field(&'static str),
}

const TEMPLATE_FIELDS: &[&str] = &[
    "Reference",
    "Repository",
    "Tag",
    "Digest",
    "ShortDigest",
    "Size",
    "Created",
];

/// Parses `{{.Field}}` placeholders (spaces inside the braces allowed); anything else is text.
fn parse_template(t: &str) -> miette::Result<Vec<Piece>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(start) = rest.find("{{") {
        out.push(Piece::Text(rest[..start].to_owned()));
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| miette!("--format: `{{{{` without `}}}}` in `{}`", esc(t)))?;
        let inner = after[..end].trim();
        let name = inner.strip_prefix('.').unwrap_or(inner);
        let field = TEMPLATE_FIELDS
            .iter()
            .find(|f| **f == name)
            .ok_or_else(|| {
                miette!(
                    "--format: unknown field `{}`; fields: {}",
                    esc(inner),
                    TEMPLATE_FIELDS
                        .iter()
                        .map(|f| format!("{{{{.{f}}}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        out.push(Piece::Field(field));
        rest = &after[end + 2..];
    }
    out.push(Piece::Text(rest.to_owned()));
    Ok(out)
}

/// What `images --format` asks for: a table, JSON, or a line per image from a template.
enum Shape {
    Table,
    Json,
    Template(Vec<Piece>),
}

fn shape(format: &str) -> miette::Result<Shape> {
    match format {
        "text" => Ok(Shape::Table),
        "json" => Ok(Shape::Json),
        t if t.contains("{{") => Ok(Shape::Template(parse_template(t)?)),
        other => Err(miette!(
            "--format `{}`: use text, json, or a template such as '{{{{.Reference}}}} {{{{.Digest}}}}'",
            esc(other)
        )),
    }
}

pub fn run_images(a: ImagesArgs) -> CliResult {
    let filter = Filter::parse(&a.filters)?;
    let shape = shape(&a.format)?;
    let store = open_store()?;
    if a.quiet {
        for digest in query::digests(&store, |name| filter.keeps(name)).map_err(fail)? {
            outln!("{}", esc(digest.as_str()));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = query::images(&store, |name| filter.keeps(name)).map_err(fail)?;
    if let Shape::Json = shape {
        return print_json(&rows);
    }
    // Tag names and annotations come from images (`otters load`, pulls): never let them drive
    // the terminal.
    for row in &mut rows {
        row.name = esc(&row.name);
        row.created = row.created.as_deref().map(esc);
    }
    match shape {
        Shape::Template(pieces) => print_template(&rows, &pieces),
        _ => print_table(&rows, a.digests),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(rows: &[ImageEntry]) -> CliResult {
    let v: Vec<_> = rows
        .iter()
        .map(|row| {
            let d = &row.descriptor;
            let mut o = json!({"reference": row.name, "digest": d.digest, "size": row.size});
            if let Some(at) = &d.artifact_type {
                o["artifactType"] = json!(at);
            }
            if let Some(c) = &row.created {
                o["created"] = json!(c);
            }
            o
        })
        .collect();
    outln!(
        "{}",
        json_controls(serde_json::to_string_pretty(&v).into_diagnostic()?)
    );
    Ok(ExitCode::SUCCESS)
}

fn print_template(rows: &[ImageEntry], pieces: &[Piece]) {
    for row in rows {
        let (name, digest) = (&row.name, &row.descriptor.digest);
        let (repository, tag) = query::repository_and_tag(name);
        let mut line = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => line.push_str(t),
                Piece::Field(f) => line.push_str(&match *f {
                    "Reference" if name.is_empty() => "<none>".to_owned(),
                    "Reference" => name.clone(),
                    "Repository" => repository.clone(),
                    "Tag" => tag.clone(),
                    "Digest" => digest.to_string(),
                    "ShortDigest" => digest.hex().chars().take(12).collect(),
                    "Size" => row.size.to_string(),
                    _ => row.created.clone().unwrap_or_default(),
                }),
            }
        }
        // The template's own text is the user's; field values were escaped above, and the
        // digest is escaped here (it comes from index.json).
        outln!("{}", esc(&line));
    }
}

fn print_table(rows: &[ImageEntry], full_digests: bool) {
    let width = rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max("REFERENCE".len());
    let dw = if full_digests { 71 } else { 12 };
    outln!(
        "{:width$}  {:dw$}  {:>9}  CREATED",
        "REFERENCE",
        "DIGEST",
        "SIZE"
    );
    for row in rows {
        let digest = esc(row.descriptor.digest.as_str());
        let short = digest.strip_prefix("sha256:").unwrap_or(&digest);
        outln!(
            "{:width$}  {:dw$}  {:>9}  {}",
            if row.name.is_empty() {
                "<none>"
            } else {
                &row.name
            },
            if full_digests {
                digest.clone()
            } else {
                short.chars().take(12).collect()
            },
            human_size(row.size),
            escape(row.created.as_deref().unwrap_or("-"))
        );
    }
}
