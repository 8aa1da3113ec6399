//! The stdio transport: LSP's base protocol (`Content-Length` headers, JSON bodies) between
//! standard input and output and a [`Connection`].
//!
//! lsp-server's own stdio transport ends the session on the first body that is not JSON; LSP
//! (JSON-RPC 2.0) asks for an answer instead: `-32700` (parse error, `id: null`) for a body that
//! is not JSON or a header that is not LSP's, `-32600` (invalid request) for JSON that is not a
//! message, and the session goes on. A body over [`MAX_BODY`] is skipped unread and answered
//! `-32700` too, so a wrong `Content-Length` cannot make the server allocate gigabytes.

use lsp_server::{Connection, ErrorCode, Message};
use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Mutex};

/// The largest message body read: a 1 MiB Agentfile, JSON-escaped, with room to spare.
pub const MAX_BODY: usize = 64 << 20;

/// What one framed read gave.
enum Frame {
    /// The input ended.
    End,
    /// A body.
    Body(Vec<u8>),
    /// Headers or a body that cannot be used; the reason, for the error's message.
    Bad(String),
}

fn read_frame(r: &mut impl BufRead) -> io::Result<Frame> {
    let mut size: Option<Result<usize, String>> = None;
    let mut bad = None;
    let mut any = false;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(if any {
                Frame::Bad("the input ended inside a header".to_owned())
            } else {
                Frame::End
            });
        }
        any = true;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("Content-Length") => {
                size = Some(value.trim().parse::<usize>().map_err(|e| {
                    format!("Content-Length `{}` is not a length: {e}", value.trim())
                }));
            }
            Some(_) => {}
            None => bad = Some(format!("`{}` is not a header", clip(line))),
        }
    }
    let size = match size {
        None => {
            return Ok(Frame::Bad(
                bad.unwrap_or_else(|| "no Content-Length header".to_owned()),
            ))
        }
        Some(Err(e)) => return Ok(Frame::Bad(e)),
        Some(Ok(n)) => n,
    };
    if size > MAX_BODY {
        io::copy(&mut r.take(size as u64), &mut io::sink())?;
        return Ok(Frame::Bad(format!(
            "the message is {size} bytes, over the {MAX_BODY} otters lsp reads"
        )));
    }
    let mut body = vec![0; size];
    r.read_exact(&mut body)?;
    Ok(match bad {
        Some(b) => Frame::Bad(b),
        None => Frame::Body(body),
    })
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

fn write_body(out: &Mutex<io::Stdout>, body: &str) -> io::Result<()> {
    let mut out = out
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    write!(out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    out.flush()
}

fn error(id: Value, code: ErrorCode, message: String) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code as i32, "message": message}})
        .to_string()
}

/// The message in `body`, or the error response to send back instead.
pub(crate) fn decode(body: &[u8]) -> Result<Message, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        error(
            Value::Null,
            ErrorCode::ParseError,
            format!("the message is not JSON: {e}"),
        )
    })?;
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let invalid = |why: String| error(id.clone(), ErrorCode::InvalidRequest, why);
    let is_response = value.get("result").is_some() || value.get("error").is_some();
    if value.get("method").is_none() && !is_response {
        return Err(invalid(
            "the message has no method (a request or notification) and no result or error (a response)"
                .to_owned(),
        ));
    }
    serde_json::from_value::<Message>(value).map_err(|e| {
        invalid(format!(
            "the message is not a JSON-RPC request, notification or response: {e}"
        ))
    })
}

/// Threads reading standard input into `client.sender` and writing `client.receiver` to
/// standard output; joined by [`Threads::join`].
pub struct Threads {
    reader: std::thread::JoinHandle<io::Result<()>>,
    writer: std::thread::JoinHandle<io::Result<()>>,
}

impl Threads {
    pub fn join(self) -> Result<(), String> {
        for t in [self.writer, self.reader] {
            t.join()
                .map_err(|_| "an I/O thread of otters lsp panicked".to_owned())?
                .map_err(|e| format!("standard input or output: {e}"))?;
        }
        Ok(())
    }
}

/// The server's end of a connection over standard input and output.
pub fn stdio() -> (Connection, Threads) {
    let (server, client) = Connection::memory();
    let out = Arc::new(Mutex::new(io::stdout()));
    let to_client = client.receiver;
    let out_w = Arc::clone(&out);
    let writer = std::thread::spawn(move || {
        for msg in to_client {
            let body = serde_json::to_string(&WithVersion {
                jsonrpc: "2.0",
                msg: &msg,
            })?;
            write_body(&out_w, &body)?;
        }
        Ok(())
    });
    let to_server = client.sender;
    let reader = std::thread::spawn(move || {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        loop {
            let msg = match read_frame(&mut input)? {
                Frame::End => return Ok(()),
                Frame::Bad(why) => {
                    write_body(&out, &error(Value::Null, ErrorCode::ParseError, why))?;
                    continue;
                }
                Frame::Body(body) => match decode(&body) {
                    Ok(m) => m,
                    Err(reply) => {
                        write_body(&out, &reply)?;
                        continue;
                    }
                },
            };
            let exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
            if to_server.send(msg).is_err() || exit {
                return Ok(());
            }
        }
    });
    (server, Threads { reader, writer })
}

#[derive(serde::Serialize)]
struct WithVersion<'a> {
    jsonrpc: &'static str,
    #[serde(flatten)]
    msg: &'a Message,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(input: &str) -> Vec<String> {
        let mut r = io::Cursor::new(input.as_bytes().to_vec());
        let mut out = Vec::new();
        loop {
            match read_frame(&mut r).unwrap() {
                Frame::End => return out,
                Frame::Body(b) => out.push(String::from_utf8(b).unwrap()),
                Frame::Bad(why) => out.push(format!("bad: {why}")),
            }
        }
    }

    #[test]
    fn frames_bad_headers_and_bodies_without_losing_the_next_message() {
        let got = frame(
            "Content-Length: 2\r\n\r\n{}garbage\r\n\r\nContent-Length: x\r\n\r\nContent-Length: 99999999999\r\n\r\nContent-Length: 1\r\n\r\n1",
        );
        assert_eq!(got[0], "{}");
        assert!(got[1].starts_with("bad: `garbage`"), "{got:?}");
        assert!(got[2].contains("not a length"), "{got:?}");
        assert!(got[3].contains("over the"), "{got:?}");
        assert_eq!(
            got.len(),
            4,
            "the oversized body swallowed the rest: {got:?}"
        );
        assert!(decode(b"{oops").unwrap_err().contains("-32700"));
        let invalid = decode(br#"{"jsonrpc":"2.0","id":7}"#).unwrap_err();
        assert!(
            invalid.contains("-32600") && invalid.contains(r#""id":7"#),
            "{invalid}"
        );
    }
}
