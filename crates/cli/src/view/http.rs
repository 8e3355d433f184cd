//! The HTTP/1.1 server of `profkit view`: one profile on 127.0.0.1 behind a random token.
//!
//! What it answers, and nothing else (every other path, and a wrong token, is a 404):
//!
//! * `GET`/`HEAD /<token>/<name>`: the profile's bytes as they are on disk, streamed (a gzip
//!   profile stays gzip, without `Content-Encoding`: the Firefox Profiler and Perfetto's trace
//!   processor recognise gzip by its magic bytes and inflate it themselves);
//! * `POST /<token>/source/v1` (Firefox Profiler): the text of a source file the profile names
//!   ([`super::sources`]);
//! * `POST /<token>/symbolicate/v5` (Firefox Profiler): "no symbols" for every library asked
//!   for (the profile is symbolicated already; the front end shows what it has);
//! * `OPTIONS` on those paths: the CORS preflight.
//!
//! Every answer on the token's paths carries `Access-Control-Allow-Origin` for the one viewer
//! origin. Requests are read with bounds ([`super::request`]): a 16 KiB head, a 1 MiB body, 10 s per read and 30 s for the head;
//! at most [`MAX_CONNECTIONS`] connections are served at once (one thread each), and a
//! request that does not parse gets a 400, never a panic.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::request::{read_request, Bad, Request};
use super::sources::Sources;

/// The most connections served at once; one more is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one write to a client may block.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// What the server serves.
pub struct Site {
    /// The random path segment every request must start with.
    pub token: String,
    /// The profile's file name in the URL (`profile.json`, `trace.pftrace`).
    pub name: String,
    /// The profile on disk.
    pub file: PathBuf,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// The viewer's origin (`https://profiler.firefox.com`), the one CORS allows.
    pub origin: &'static str,
    /// Source files for the Firefox Profiler's source view (`None`: no symbol-server API).
    pub sources: Option<Sources>,
}

/// Serves `site` on `listener` until `stop` is set (checked at least every 200 ms).
pub fn serve(listener: &TcpListener, site: Arc<Site>, stop: &AtomicBool) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                    busy(stream);
                    continue;
                }
                active.fetch_add(1, Ordering::AcqRel);
                let (site, done) = (Arc::clone(&site), Arc::clone(&active));
                let spawned =
                    std::thread::Builder::new()
                        .name("view-conn".into())
                        .spawn(move || {
                            let _ = connection(stream, &site);
                            done.fetch_sub(1, Ordering::AcqRel);
                        });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_readable(listener),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A connection that went away before it was accepted, or out of descriptors: wait.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    Ok(())
}

/// Waits up to 200 ms for a connection (or a signal).
fn wait_readable(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe {
        libc::poll(&mut fd, 1, 200);
    }
}

fn busy(mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = stream.write_all(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
    );
}

/// Serves one request on `stream` (then closes it: `Connection: close`).
fn connection(stream: TcpStream, site: &Site) -> io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(8192, stream);
    match read_request(&mut reader) {
        Ok(req) => respond(&mut out, site, &req),
        Err(Bad::Gone) => Ok(()),
        Err(Bad::Status(code, why)) => {
            Reply::new(code, "text/plain; charset=utf-8").send(&mut out, false, why.as_bytes())
        }
    }
}

/// What a path under the token is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Profile,
    Source,
    Symbolicate,
}

fn route(site: &Site, path: &str) -> Option<Route> {
    let rest = path.strip_prefix('/')?;
    let (token, rest) = rest.split_once('/')?;
    if !same(token.as_bytes(), site.token.as_bytes()) {
        return None;
    }
    match rest {
        r if r == site.name => Some(Route::Profile),
        "source/v1" if site.sources.is_some() => Some(Route::Source),
        "symbolicate/v5" if site.sources.is_some() => Some(Route::Symbolicate),
        _ => None,
    }
}

/// Compares the token in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn respond(out: &mut TcpStream, site: &Site, req: &Request) -> io::Result<()> {
    let Some(route) = route(site, &req.path) else {
        return Reply::new(404, "text/plain; charset=utf-8").send(out, false, b"not found\n");
    };
    let cors = |r: Reply| r.header("Access-Control-Allow-Origin", site.origin);
    let head = req.method == "HEAD";
    match (req.method.as_str(), route) {
        ("OPTIONS", _) => cors(Reply::new(204, "text/plain"))
            .header("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS")
            .header("Access-Control-Allow-Headers", "Content-Type")
            .header("Access-Control-Allow-Private-Network", "true")
            .header("Access-Control-Max-Age", "600")
            .send(out, false, b""),
        ("GET" | "HEAD", Route::Profile) => {
            let file = File::open(&site.file)?;
            let len = file.metadata()?.len();
            cors(Reply::new(200, site.content_type))
                .header("Cache-Control", "no-store")
                .stream(out, head, file, len)
        }
        ("POST", Route::Source | Route::Symbolicate) => {
            let sources = site.sources.as_ref();
            let (code, json) = match (route, sources) {
                (Route::Source, Some(s)) => s.answer(&req.body),
                _ => super::sources::no_symbols(&req.body),
            };
            cors(Reply::new(code, "application/json")).send(out, false, json.as_bytes())
        }
        _ => cors(Reply::new(405, "text/plain; charset=utf-8"))
            .header(
                "Allow",
                if route == Route::Profile {
                    "GET, HEAD, OPTIONS"
                } else {
                    "POST, OPTIONS"
                },
            )
            .send(out, false, b"method not allowed\n"),
    }
}

/// A response's status line and headers.
struct Reply {
    head: String,
}

impl Reply {
    fn new(code: u16, content_type: &str) -> Reply {
        let reason = match code {
            200 => "OK",
            204 => "No Content",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            411 => "Length Required",
            413 => "Content Too Large",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            505 => "HTTP Version Not Supported",
            _ => "",
        };
        Reply {
            head: format!(
                "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n"
            ),
        }
    }

    fn header(mut self, name: &str, value: &str) -> Reply {
        self.head.push_str(name);
        self.head.push_str(": ");
        self.head.push_str(value);
        self.head.push_str("\r\n");
        self
    }

    fn send(self, out: &mut TcpStream, head_only: bool, body: &[u8]) -> io::Result<()> {
        let mut head = self.header("Content-Length", &body.len().to_string()).head;
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        if !head_only {
            out.write_all(body)?;
        }
        out.flush()
    }

    /// Sends `len` bytes of `file` without reading it whole.
    fn stream(self, out: &mut TcpStream, head_only: bool, file: File, len: u64) -> io::Result<()> {
        let mut head = self.header("Content-Length", &len.to_string()).head;
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        if !head_only {
            io::copy(&mut file.take(len), out)?;
        }
        out.flush()
    }
}
