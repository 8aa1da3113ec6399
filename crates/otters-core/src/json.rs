//! Canonical JSON: the exact bytes Go's `encoding/json` writes, so digests match openotters.
//!
//! Every hashed JSON blob (config, manifest, index) is written through this module, never through
//! `serde_json`'s printer: object keys keep the order they are given in (callers fix field order),
//! `<`, `>`, `&`, U+2028 and U+2029 are escaped as `\u003c`-style sequences, and floats use Go's
//! shortest form (`0.7`, `1`, `1e+21`, `1e-7`).

use std::fmt::Write as _;

/// A JSON value whose objects keep insertion order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// An empty object, to be filled with [`Value::push`].
    pub fn object() -> Self {
        Value::Object(Vec::new())
    }

    /// Appends a field to an object (no-op on other values).
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        if let Value::Object(fields) = self {
            fields.push((key.into(), value.into()));
        }
    }

    /// Builder form of [`Value::push`].
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(key, value);
        self
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::String(s.clone())
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<u64> for Value {
    fn from(i: u64) -> Self {
        // Above i64::MAX a u64 becomes a float, as Go's decoder would read it back anyway.
        #[allow(clippy::cast_precision_loss)]
        let f = i as f64;
        i64::try_from(i).map_or(Value::Float(f), Value::Int)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}

/// The float cannot be written as JSON (NaN or an infinity).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("JSON cannot encode the number {0}")]
pub struct UnsupportedFloat(pub f64);

/// Go's `json.Marshal`: no whitespace at all.
pub fn to_compact(v: &Value) -> Result<Vec<u8>, UnsupportedFloat> {
    let mut out = String::new();
    write(&mut out, v, None, 0)?;
    Ok(out.into_bytes())
}

/// Go's `json.MarshalIndent(v, "", "  ")`: two-space indent, `"key": value`, no final newline.
pub fn to_indented(v: &Value) -> Result<Vec<u8>, UnsupportedFloat> {
    let mut out = String::new();
    write(&mut out, v, Some("  "), 0)?;
    Ok(out.into_bytes())
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(unit) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(unit);
        }
    }
}

fn write(
    out: &mut String,
    v: &Value,
    indent: Option<&str>,
    depth: usize,
) -> Result<(), UnsupportedFloat> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => write_float(out, *f)?,
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write(out, item, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Object(fields) => {
            if fields.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write(out, item, indent, depth + 1)?;
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
    Ok(())
}

/// `f` in shortest scientific form, split into mantissa and decimal exponent (`1.5e-7` →
/// `("1.5", -7)`), for the two Go float formats below.
fn scientific(f: f64) -> (String, i32) {
    let s = format!("{f:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    (mantissa.to_owned(), exp.parse().unwrap_or(0))
}

/// Go's float encoding: `'f'` format for 1e-6 ≤ |f| < 1e21, else `'e'` with a two-digit-minimum
/// positive exponent and a trimmed negative one (`1e+21`, `1e-7`).
fn write_float(out: &mut String, f: f64) -> Result<(), UnsupportedFloat> {
    if !f.is_finite() {
        return Err(UnsupportedFloat(f));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exp) = scientific(f);
        if exp < 0 {
            let _ = write!(out, "{mantissa}e-{}", -exp);
        } else {
            let _ = write!(out, "{mantissa}e+{exp:02}");
        }
    } else {
        let _ = write!(out, "{f}");
    }
    Ok(())
}

/// Go's `fmt` `%v` of a float64 (used where openotters stringifies CONFIG values): shortest
/// form, `'e'` notation with a two-digit exponent below 1e-4 or from 1e21 up.
pub fn write_float_go_v(out: &mut String, f: f64) -> std::fmt::Result {
    let abs = f.abs();
    if f.is_finite() && abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let (mantissa, exp) = scientific(f);
        let sign = if exp < 0 { '-' } else { '+' };
        write!(out, "{mantissa}e{sign}{:02}", exp.abs())
    } else if f.is_nan() {
        out.write_str("NaN")
    } else if f.is_infinite() {
        out.write_str(if f > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        write!(out, "{f}")
    }
}

/// Go's string escaping with `SetEscapeHTML(true)` (the default).
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(f: f64) -> String {
        String::from_utf8(to_compact(&Value::Float(f)).unwrap()).unwrap()
    }

    #[test]
    fn floats_match_go() {
        assert_eq!(float(0.7), "0.7");
        assert_eq!(float(1.0), "1");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1e-7), "1e-7");
        assert_eq!(float(1.5e-10), "1.5e-10");
        assert_eq!(float(123_456.0), "123456");
        assert_eq!(float(1e20), "100000000000000000000");
        assert!(to_compact(&Value::Float(f64::NAN)).is_err());
    }

    #[test]
    fn strings_escape_html_like_go() {
        let v = Value::from("a<b>&c\u{2028}\"\\\n\u{1}é");
        let s = String::from_utf8(to_compact(&v).unwrap()).unwrap();
        assert_eq!(s, r#""a\u003cb\u003e\u0026c\u2028\"\\\n\u0001é""#);
    }

    #[test]
    fn indented_layout_matches_marshal_indent() {
        let v = Value::object()
            .with("a", 1i64)
            .with("b", Value::Array(vec![Value::from("x")]))
            .with("c", Value::object())
            .with("d", Value::Array(vec![]));
        let s = String::from_utf8(to_indented(&v).unwrap()).unwrap();
        assert_eq!(
            s,
            "{\n  \"a\": 1,\n  \"b\": [\n    \"x\"\n  ],\n  \"c\": {},\n  \"d\": []\n}"
        );
    }
}
