//! Reading one HTTP/1.1 request for `profkit view`'s server ([`super::http`]), within bounds:
//! a 16 KiB head sent within 30 s, a `Content-Length` body of at most 1 MiB (no chunked
//! bodies). What does not parse is a [`Bad::Status`] to answer, never a panic.

use std::io::{BufRead, Read};
use std::time::Duration;

/// The most bytes of a request line and its headers.
const MAX_HEAD: usize = 16 * 1024;
/// The most bytes of a request body (a `/source/v1` or `/symbolicate/v5` query).
const MAX_BODY: usize = 1 << 20;
/// How long a connection may take to send its whole request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(30);

/// A parsed request.
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
}

/// Why a request was not read.
pub enum Bad {
    /// The client went away or timed out: nothing to answer.
    Gone,
    /// A status and its reason.
    Status(u16, &'static str),
}

/// Reads a request line, headers and body within the bounds above.
pub fn read_request(r: &mut impl BufRead) -> Result<Request, Bad> {
    let mut head = Vec::new();
    let mut content_length: Option<usize> = None;
    let mut first: Option<(String, String)> = None;
    let started = std::time::Instant::now();
    loop {
        if started.elapsed() > HEAD_DEADLINE {
            return Err(Bad::Status(408, "request head too slow\n"));
        }
        let mut line = Vec::new();
        let n = r
            .take((MAX_HEAD - head.len().min(MAX_HEAD)) as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|_| Bad::Gone)?;
        if n == 0 {
            return Err(if first.is_none() {
                Bad::Gone
            } else {
                Bad::Status(400, "incomplete request\n")
            });
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(Bad::Status(431, "request head over 16 KiB\n"));
        }
        if !line.ends_with(b"\n") {
            return Err(Bad::Status(400, "incomplete request\n"));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| Bad::Status(400, "request head is not UTF-8\n"))?
            .trim_end_matches(['\r', '\n']);
        if first.is_none() {
            let mut parts = text.split(' ');
            let (Some(method), Some(target), Some(version), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(Bad::Status(400, "malformed request line\n"));
            };
            if !version.starts_with("HTTP/1.") {
                return Err(Bad::Status(505, "HTTP/1.x only\n"));
            }
            first = Some((method.to_string(), target.to_string()));
            continue;
        }
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(Bad::Status(400, "malformed header\n"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| Bad::Status(400, "bad Content-Length\n"))?;
            if content_length.is_some_and(|m| m != n) {
                return Err(Bad::Status(400, "conflicting Content-Length\n"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Bad::Status(411, "chunked bodies are not accepted\n"));
        }
    }
    let Some((method, target)) = first else {
        return Err(Bad::Gone);
    };
    let len = content_length.unwrap_or(0);
    if len > MAX_BODY {
        return Err(Bad::Status(413, "request body over 1 MiB\n"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(|_| Bad::Gone)?;
    let path = target.split(['?', '#']).next().unwrap_or("").to_string();
    Ok(Request { method, path, body })
}
