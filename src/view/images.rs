//! `otters images`: which images a `--filter` keeps, and the table, JSON or template lines.
use super::{esc, human_size, line};
use otters_core::escape::{escape, json_controls};
use otters_oci::store::query::{self, ImageEntry};
use serde_json::json;

/// What a filter or format says wrong, of the values given (the front end names the flag).
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    #[error("`{}`: expected KEY=VALUE (reference=GLOB or dangling=true|false)", escape(.0))]
    NotKeyValue(String),
    #[error("reference=`{}`: {source}", escape(.glob))]
    BadGlob {
        glob: String,
        source: globset::Error,
    },
    #[error("dangling=`{}`: use true or false", escape(.0))]
    BadDangling(String),
    #[error("unknown key `{}`; otters knows reference=GLOB and dangling=true|false", escape(.0))]
    UnknownKey(String),
    #[error("`{}`: use text, json, or a template such as '{{{{.Reference}}}} {{{{.Digest}}}}'", escape(.0))]
    UnknownFormat(String),
    #[error("`{{{{` without `}}}}` in `{}`", escape(.0))]
    Unclosed(String),
    #[error("unknown field `{}`; fields: {}", escape(.0), field_list())]
    UnknownField(String),
}

/// The images a listing keeps: references matching any glob, and/or tagged-ness.
#[derive(Default)]
pub struct Filter {
    references: Vec<globset::GlobMatcher>,
    dangling: Option<bool>,
}

impl Filter {
    /// `reference=GLOB` (several are or-ed) and `dangling=true|false`; different keys must all
    /// match.
    pub fn parse(items: &[String]) -> Result<Filter, ListingError> {
        let mut f = Filter::default();
        for item in items {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| ListingError::NotKeyValue(item.clone()))?;
            match key {
                "reference" => {
                    let glob =
                        globset::Glob::new(value).map_err(|source| ListingError::BadGlob {
                            glob: value.to_owned(),
                            source,
                        })?;
                    f.references.push(glob.compile_matcher());
                }
                "dangling" => {
                    f.dangling = Some(match value {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => return Err(ListingError::BadDangling(value.to_owned())),
                    });
                }
                _ => return Err(ListingError::UnknownKey(key.to_owned())),
            }
        }
        Ok(f)
    }

    /// Whether the image named `name` (empty: untagged) is listed.
    pub fn keeps(&self, name: &str) -> bool {
        let dangling = name.is_empty();
        self.dangling.is_none_or(|d| d == dangling)
            && (self.references.is_empty()
                || (!dangling && self.references.iter().any(|g| g.is_match(name))))
    }
}

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
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

fn field_list() -> String {
    TEMPLATE_FIELDS
        .iter()
        .map(|f| format!("{{{{.{f}}}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `{{.Field}}` placeholders (spaces inside the braces allowed); anything else is text.
pub fn parse_template(t: &str) -> Result<Vec<Piece>, ListingError> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(start) = rest.find("{{") {
        out.push(Piece::Text(rest[..start].to_owned()));
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| ListingError::Unclosed(t.to_owned()))?;
        let inner = after[..end].trim();
        let name = inner.strip_prefix('.').unwrap_or(inner);
        let field = TEMPLATE_FIELDS
            .iter()
            .find(|f| **f == name)
            .ok_or_else(|| ListingError::UnknownField(inner.to_owned()))?;
        out.push(Piece::Field(field));
        rest = &after[end + 2..];
    }
    out.push(Piece::Text(rest.to_owned()));
    Ok(out)
}

/// What a listing's format asks for: a table, JSON, or a line per image from a template.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    Table,
    Json,
    Template(Vec<Piece>),
}

impl Shape {
    /// `text`, `json`, or a template with at least one `{{`.
    pub fn parse(format: &str) -> Result<Shape, ListingError> {
        match format {
            "text" => Ok(Shape::Table),
            "json" => Ok(Shape::Json),
            t if t.contains("{{") => Ok(Shape::Template(parse_template(t)?)),
            other => Err(ListingError::UnknownFormat(other.to_owned())),
        }
    }
}

/// The listing of `rows` in `shape`; `full_digests` widens the table's digest column.
pub fn render(shape: &Shape, mut rows: Vec<ImageEntry>, full_digests: bool) -> String {
    if let Shape::Json = shape {
        return json_of(&rows);
    }
    // Tag names and annotations come from images (`otters load`, pulls): never let them drive
    // the terminal.
    for row in &mut rows {
        row.name = esc(&row.name);
        row.created = row.created.as_deref().map(esc);
    }
    match shape {
        Shape::Template(pieces) => template(&rows, pieces),
        _ => table(&rows, full_digests),
    }
}

fn json_of(rows: &[ImageEntry]) -> String {
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
    // A `Value` of string keys always prints.
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    format!("{}\n", json_controls(text))
}

fn template(rows: &[ImageEntry], pieces: &[Piece]) -> String {
    let mut out = String::new();
    for row in rows {
        let (name, digest) = (&row.name, &row.descriptor.digest);
        let (repository, tag) = query::repository_and_tag(name);
        let mut text = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => text.push_str(t),
                Piece::Field(f) => text.push_str(&match *f {
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
        line!(out, "{}", esc(&text));
    }
    out
}

fn table(rows: &[ImageEntry], full_digests: bool) -> String {
    let width = rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max("REFERENCE".len());
    let dw = if full_digests { 71 } else { 12 };
    let mut out = String::new();
    line!(
        out,
        "{:width$}  {:dw$}  {:>9}  CREATED",
        "REFERENCE",
        "DIGEST",
        "SIZE"
    );
    for row in rows {
        let digest = esc(row.descriptor.digest.as_str());
        let short = digest.strip_prefix("sha256:").unwrap_or(&digest);
        line!(
            out,
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use otters_oci::{Descriptor, Digest};

    fn filter(items: &[&str]) -> Result<Filter, ListingError> {
        Filter::parse(&items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    fn row(name: &str) -> ImageEntry {
        ImageEntry {
            name: name.to_owned(),
            descriptor: Descriptor::new(
                "application/vnd.oci.image.manifest.v1+json",
                Digest::of(b"x"),
                2,
            ),
            size: 1536,
            created: Some("2024-01-01T00:00:00Z".to_owned()),
        }
    }

    #[test]
    fn filters_or_globs_and_and_keys() {
        let f = filter(&["reference=meteo:*", "reference=*/agents/*"]).unwrap();
        assert!(f.keeps("meteo:1"));
        assert!(f.keeps("ghcr.io/agents/x:2"));
        assert!(!f.keeps("other:1"));
        assert!(!f.keeps(""));
        let f = filter(&["dangling=true"]).unwrap();
        assert!(f.keeps("") && !f.keeps("meteo:1"));
        let f = filter(&["dangling=false", "reference=meteo:*"]).unwrap();
        assert!(f.keeps("meteo:1") && !f.keeps(""));
        assert!(Filter::default().keeps("") && Filter::default().keeps("a:1"));
    }

    #[test]
    fn bad_filters_say_which_value() {
        let said = |items: &[&str]| filter(items).err().map(|e| e.to_string());
        assert_eq!(
            said(&["reference"]).unwrap(),
            "`reference`: expected KEY=VALUE (reference=GLOB or dangling=true|false)"
        );
        assert!(said(&["colour=red"])
            .unwrap()
            .contains("unknown key `colour`"));
        assert!(said(&["dangling=maybe"])
            .unwrap()
            .contains("use true or false"));
        assert!(said(&["reference=[a"])
            .unwrap()
            .starts_with("reference=`[a`: "));
        assert!(said(&["reference=\u{1b}["]).unwrap().contains("\\u{1b}"));
    }

    #[test]
    fn templates_parse_into_text_and_fields() {
        assert_eq!(
            parse_template("{{.Reference}} {{ .Digest }}!").unwrap(),
            [
                Piece::Text(String::new()),
                Piece::Field("Reference"),
                Piece::Text(" ".into()),
                Piece::Field("Digest"),
                Piece::Text("!".into()),
            ]
        );
        let e = parse_template("{{.Nope}}").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown field `.Nope`; fields: {{.Reference}}, "),
            "{e}"
        );
        assert_eq!(
            parse_template("a {{.Tag").unwrap_err().to_string(),
            "`{{` without `}}` in `a {{.Tag`"
        );
        assert_eq!(Shape::parse("text").unwrap(), Shape::Table);
        assert_eq!(Shape::parse("json").unwrap(), Shape::Json);
        assert!(matches!(
            Shape::parse("yaml"),
            Err(ListingError::UnknownFormat(_))
        ));
    }

    #[test]
    fn rows_render_as_table_template_and_json() {
        let rows = vec![row("meteo:1"), row("")];
        let table = render(&Shape::Table, rows.clone(), false);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("REFERENCE  DIGEST"), "{table}");
        assert!(lines[1].starts_with("meteo:1  "), "{table}");
        assert!(lines[1].contains("1.5 KiB"), "{table}");
        assert!(lines[2].starts_with("<none>  "), "{table}");
        let shape = Shape::parse("{{.Repository}}|{{.Tag}}|{{.ShortDigest}}").unwrap();
        let hex: String = Digest::of(b"x").hex().chars().take(12).collect();
        assert_eq!(
            render(&shape, vec![row("meteo:1")], false),
            format!("meteo|1|{hex}\n")
        );
        let json: serde_json::Value =
            serde_json::from_str(&render(&Shape::Json, rows, false)).unwrap();
        assert_eq!(json[0]["reference"], "meteo:1");
        assert_eq!(json[1]["size"], 1536);
    }

    #[test]
    fn names_from_images_are_escaped() {
        let out = render(&Shape::Table, vec![row("evil\u{1b}[2J:1")], false);
        assert!(!out.contains('\u{1b}') && out.contains("\\u{1b}"), "{out}");
    }
}
