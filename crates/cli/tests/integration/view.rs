//! `profkit view`: the server, tested with a plain TcpStream client (no browser: the hosted
//! viewers are on the internet, which the tests do not reach).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{fixture, fixture_dir};

/// A running `profkit view --no-open --port 0` with its own TMPDIR.
struct View {
    child: Child,
    /// The first line of stdout.
    url: String,
    /// The profile's local URL: `http://127.0.0.1:PORT/TOKEN/NAME`.
    local: String,
    /// Its TMPDIR (taken by [`View::stop`]).
    tmp: Option<tempfile::TempDir>,
}

/// A test that fails before [`View::stop`] leaves no server running.
impl Drop for View {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn start(args: &[&str]) -> View {
    start_with(&["--no-open"], args, None)
}

/// `profkit view [flags] --port 0 ARGS` with `$BROWSER` set to `browser` (or unset).
fn start_with(flags: &[&str], args: &[&str], browser: Option<&str>) -> View {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("profkit"));
    match browser {
        Some(b) => cmd.env("BROWSER", b),
        None => cmd.env_remove("BROWSER"),
    };
    let mut child = cmd
        .arg("view")
        .args(flags)
        .args(["--port", "0"])
        .args(args)
        .env("TMPDIR", tmp.path())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(!line.is_empty(), "no URL: {}", stderr_of(&mut child));
    let url = line.trim_end().to_string();
    let local = if let Some(rest) = url.strip_prefix("https://profiler.firefox.com/from-url/") {
        decode(rest.split('/').next().unwrap())
    } else if let Some(rest) = url.strip_prefix("https://ui.perfetto.dev/#!/?url=") {
        rest.to_string()
    } else {
        panic!("not a viewer URL: {url}");
    };
    View {
        child,
        url,
        local,
        tmp: Some(tmp),
    }
}

fn stderr_of(child: &mut Child) -> String {
    let _ = child.kill();
    let mut s = String::new();
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A response: status, headers (names lower-cased), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

impl View {
    fn port(&self) -> u16 {
        let hostport = self.local.strip_prefix("http://").unwrap();
        hostport.split(['/', ':']).nth(1).unwrap().parse().unwrap()
    }

    /// The path part of the local URL (`/TOKEN/NAME`).
    fn path(&self) -> String {
        let hostport = self.local.strip_prefix("http://").unwrap();
        hostport[hostport.find('/').unwrap()..].to_string()
    }

    /// `/TOKEN`.
    fn base(&self) -> String {
        let p = self.path();
        p[..p.rfind('/').unwrap()].to_string()
    }

    /// Sends `raw` as it is and reads the whole answer (the server closes each connection).
    fn raw(&self, raw: &[u8]) -> Vec<u8> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port())).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(raw);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        out
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if !body.is_empty() {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut raw = req.into_bytes();
        raw.extend_from_slice(body);
        parse(&self.raw(&raw))
    }

    fn get(&self, path: &str) -> Response {
        self.request(
            "GET",
            path,
            &[("Origin", "https://profiler.firefox.com")],
            b"",
        )
    }

    fn source(&self, file: &str) -> Response {
        let body = serde_json::json!({
            "debugName": "jit-30519.dump",
            "debugId": "000000000000000000000000000000000",
            "moduleOffset": "0x80000010",
            "file": file,
        })
        .to_string();
        self.request(
            "POST",
            &format!("{}/source/v1", self.base()),
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    /// Stops the server with `signal`; its exit code and stderr.
    fn stop(mut self, signal: i32) -> (i32, String, tempfile::TempDir) {
        // SAFETY: a signal to the child this test started.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), err, self.tmp.take().unwrap())
    }
}

fn parse(raw: &[u8]) -> Response {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(raw)));
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    Response {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

/// The node recording with its jitdump beside it, the dump carrying an embedded copy of the
/// script its DEBUG_INFO names.
fn node_recording_with_embedded_source(dir: &Path) -> PathBuf {
    let data = dir.join("node-fp.data");
    std::fs::copy(fixture_dir("perf").join("node-fp.data"), &data).unwrap();
    let mut dump = profkit_testkit::read_fixture_gunzipped("perf/node-fp.jit-30519.dump.gz");
    let mut w =
        profkit_jitdump::JitDumpWriter::new(Vec::new(), &profkit_jitdump::HeaderOptions::default())
            .unwrap();
    w.write_embedded_source_record(u64::MAX / 2, BUSY_JS, EMBEDDED.as_bytes())
        .unwrap();
    let bytes = w.into_inner();
    // The header: magic, version, total_size.
    let header = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    dump.extend_from_slice(&bytes[header..]);
    std::fs::write(dir.join("jit-30519.dump"), dump).unwrap();
    data
}

const BUSY_JS: &str = "/tmp/profkit-fixtures-perf/node/busy.js";
const EMBEDDED: &str = "// busy.js as the JIT embedded it\nfunction fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n";

#[test]
fn converted_recording_is_served_behind_a_token_with_its_embedded_sources() {
    let dir = tempfile::tempdir().unwrap();
    let data = node_recording_with_embedded_source(dir.path());
    // Named with --jit-dir: the marker's path (/tmp/profkit-fixtures-perf/…) may hold the
    // fixture's dump without the embedded source (perf's tests put it there).
    let dump = dir.path().join("jit-30519.dump");
    let v = start(&[data.to_str().unwrap(), "--jit-dir", dump.to_str().unwrap()]);
    assert!(
        v.url.ends_with(&format!(
            "/?symbolServer={}",
            v.local[..v.local.rfind('/').unwrap()]
                .replace(':', "%3A")
                .replace('/', "%2F")
        )),
        "{}",
        v.url
    );
    let token = v.base()[1..].to_string();
    assert_eq!(token.len(), 32, "128 bits in hex");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));

    // The profile: the converted file's bytes, gzip, which the front end inflates itself.
    let temp: Vec<PathBuf> = std::fs::read_dir(v.tmp.as_ref().unwrap().path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(temp.len(), 1, "one private directory: {temp:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&temp[0]).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let on_disk = std::fs::read(temp[0].join("profile.json.gz")).unwrap();
    let r = v.get(&v.path());
    assert_eq!(r.status, 200);
    assert_eq!(r.body, on_disk);
    assert!(r.body.starts_with(&[0x1f, 0x8b]));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://profiler.firefox.com")
    );
    let mut json = Vec::new();
    flate2::read::MultiGzDecoder::new(&r.body[..])
        .read_to_end(&mut json)
        .unwrap();
    let p: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(p["meta"]["symbolicated"], true);

    // HEAD: the length, no body. A query string is ignored.
    let h = v.request("HEAD", &format!("{}?x=1", v.path()), &[], b"");
    assert_eq!(h.status, 200);
    assert_eq!(
        h.header("content-length"),
        Some(&*on_disk.len().to_string())
    );
    assert!(h.body.is_empty());

    // The CORS preflight of the source view's POST.
    let o = v.request(
        "OPTIONS",
        &format!("{}/source/v1", v.base()),
        &[
            ("Origin", "https://profiler.firefox.com"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        b"",
    );
    assert_eq!(o.status, 204);
    assert_eq!(
        o.header("access-control-allow-origin"),
        Some("https://profiler.firefox.com")
    );
    assert!(o
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
    assert!(o
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase()
        .contains("content-type"));

    // A wrong token, another path, the token alone, a method the path does not take.
    let mut wrong = token.clone().into_bytes();
    wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).unwrap();
    for path in [
        format!("/{wrong}/profile.json"),
        format!("/{wrong}/source/v1"),
        format!("/{token}"),
        format!("/{token}/"),
        format!("/{token}/profile.json/x"),
        format!("/{token}/../{token}/profile.json"),
        "/".to_string(),
        "/profile.json".to_string(),
        "/etc/passwd".to_string(),
    ] {
        let r = v.get(&path);
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.header("access-control-allow-origin"), None, "{path}");
    }
    assert_eq!(v.request("DELETE", &v.path(), &[], b"").status, 405);
    assert_eq!(v.request("POST", &v.path(), &[], b"{}").status, 405);

    // The source view: the file the profile names, from the jitdump's embedded copy.
    let s = v.source(BUSY_JS);
    assert_eq!(s.status, 200, "{}", String::from_utf8_lossy(&s.body));
    assert_eq!(
        s.header("access-control-allow-origin"),
        Some("https://profiler.firefox.com")
    );
    let j = s.json();
    assert_eq!(j["file"], BUSY_JS);
    assert_eq!(j["source"], EMBEDDED);
    // Anything else is refused, however it is spelled.
    for file in [
        "/etc/passwd",
        "/etc/shadow",
        "/tmp/profkit-fixtures-perf/node/../../../etc/passwd",
        "busy.js",
        "",
    ] {
        let s = v.source(file);
        assert_eq!(s.status, 404, "{file}");
        assert!(s.json()["error"].as_str().unwrap().contains("not a file"));
        assert!(s.json().get("source").is_none());
    }
    let bad = v.request("POST", &format!("{}/source/v1", v.base()), &[], b"not json");
    assert_eq!(bad.status, 400);

    // Symbolication: "no symbols", in the shape the front end checks.
    let q = serde_json::json!({"jobs": [{"memoryMap": [["jit-30519.dump", "0000"]],
        "stacks": [[[0, 16], [0, 4096]]]}]})
    .to_string();
    let r = v.request(
        "POST",
        &format!("{}/symbolicate/v5", v.base()),
        &[],
        q.as_bytes(),
    );
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(
        j["results"][0]["found_modules"]["jit-30519.dump/0000"],
        false
    );
    assert_eq!(j["results"][0]["stacks"][0][1]["module_offset"], "0x1000");

    // Ctrl-C: a clean stop, the temporary profile gone.
    let (code, err, tmp) = v.stop(libc::SIGINT);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Ctrl-C stops it"), "{err}");
    assert!(err.contains("source view can show"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// A processed-format Firefox profile whose one function is in `file`.
fn firefox_profile(file: &str) -> String {
    serde_json::json!({
        "meta": {"version": 24, "preprocessedProfileVersion": 55, "symbolicated": true,
                 "interval": 1, "startTime": 0, "product": "test", "categories": []},
        "libs": [],
        "threads": [{
            "name": "main",
            "funcTable": {"length": 2, "name": [0, 1], "fileName": [2, null],
                          "lineNumber": [1, null]},
            "stringArray": ["main", "other", file],
        }],
    })
    .to_string()
}

#[test]
fn a_firefox_profile_is_served_as_it_is_with_the_files_it_names_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("app.js");
    std::fs::write(&src, "console.log('from disk');\n").unwrap();
    let other = dir.path().join("other.js");
    std::fs::write(&other, "secret").unwrap();
    let profile = dir.path().join("p.json");
    let text = firefox_profile(src.to_str().unwrap());
    std::fs::write(&profile, &text).unwrap();
    let v = start(&[profile.to_str().unwrap()]);
    assert!(v
        .url
        .starts_with("https://profiler.firefox.com/from-url/http%3A%2F%2F127.0.0.1%3A"));
    assert_eq!(v.get(&v.path()).body, text.as_bytes());
    // Nothing converted: no temporary directory.
    assert_eq!(
        std::fs::read_dir(v.tmp.as_ref().unwrap().path())
            .unwrap()
            .count(),
        0
    );

    let s = v.source(src.to_str().unwrap());
    assert_eq!(s.status, 200);
    assert_eq!(s.json()["source"], "console.log('from disk');\n");
    // A file beside it that the profile does not name is refused.
    assert_eq!(v.source(other.to_str().unwrap()).status, 404);
    assert_eq!(v.source("/etc/passwd").status, 404);

    // Garbage does not stop the server, and each gets an answer or a close.
    for raw in [
        &b"garbage\r\n\r\n"[..],
        b"GET / HTTP/2.0\r\n\r\n",
        b"\r\n\r\n",
        b"GET /x HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"GET /x HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
        b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"GET /x HTTP/1.1\r\nno colon\r\n\r\n",
        b"\xff\xfe\x00\x01 / HTTP/1.1\r\n\r\n",
        b"GET /x HTTP/1.1\r\n",
    ] {
        let out = v.raw(raw);
        assert!(
            out.starts_with(b"HTTP/1.1 4") || out.starts_with(b"HTTP/1.1 5"),
            "{:?} -> {:?}",
            String::from_utf8_lossy(raw),
            String::from_utf8_lossy(&out)
        );
    }
    let mut huge = b"GET /x HTTP/1.1\r\n".to_vec();
    for i in 0..2000 {
        huge.extend_from_slice(format!("X-{i}: aaaaaaaaaa\r\n").as_bytes());
    }
    huge.extend_from_slice(b"\r\n");
    assert!(v.raw(&huge).starts_with(b"HTTP/1.1 431"));
    assert_eq!(v.get(&v.path()).status, 200, "still serving");

    let (code, err, _) = v.stop(libc::SIGTERM);
    assert_eq!(code, 0, "{err}");
    assert!(profile.exists(), "the served file is the user's: kept");
}

#[test]
fn a_perfetto_trace_is_served_for_the_perfetto_ui() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.pftrace");
    let (_, err, code) = crate::support::run(&[
        "convert",
        &fixture("xray", "demo-fdr.xray"),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = start(&[trace.to_str().unwrap()]);
    assert!(
        v.url
            .starts_with("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:"),
        "{}",
        v.url
    );
    let r = v.request(
        "GET",
        &v.path(),
        &[("Origin", "https://ui.perfetto.dev")],
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, std::fs::read(&trace).unwrap());
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://ui.perfetto.dev")
    );
    // No symbol-server API for Perfetto.
    assert_eq!(v.source("/etc/passwd").status, 404);
    let (code, err, _) = v.stop(libc::SIGTERM);
    assert_eq!(code, 0, "{err}");
    // --port 0 is not the one port the Perfetto UI fetches from: said.
    assert!(err.contains("9001"), "{err}");
}

#[test]
fn outputs_no_hosted_viewer_loads_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let ss = dir.path().join("s.speedscope.json");
    let (_, err, code) = crate::support::run(&[
        "convert",
        &fixture("xray", "demo-fdr.xray"),
        "-o",
        ss.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (out, err, code) = crate::support::run(&["view", "--no-open", ss.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("speedscope") && err.contains("by URL"),
        "{err}"
    );
    let (_, err, code) = crate::support::run(&["view", "--no-open", "/nonexistent/x.data"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.data"), "{err}");
}

#[test]
fn ctrl_c_while_converting_removes_the_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let tmp = tempfile::tempdir().unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("profkit"))
        .args(["view", "--no-open", "--port", "0"])
        .arg(&fifo)
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The conversion waits for a writer on the FIFO, its directory made.
    let made = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        std::fs::read_dir(tmp.path()).unwrap().count() == 1
    });
    assert!(made, "no temporary directory");
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn the_url_is_opened_with_browser_and_a_missing_opener_is_only_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    std::fs::write(&profile, firefox_profile("/nonexistent.js")).unwrap();
    let opened = dir.path().join("opened");
    let script = dir.path().join("browser.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
            opened.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let v = start_with(
        &[],
        &[profile.to_str().unwrap()],
        Some(script.to_str().unwrap()),
    );
    let seen = (0..200).find_map(|_| {
        std::thread::sleep(Duration::from_millis(25));
        std::fs::read_to_string(&opened).ok()
    });
    assert_eq!(seen.as_deref().map(str::trim_end), Some(v.url.as_str()));
    let (code, err, _) = v.stop(libc::SIGTERM);
    assert_eq!(code, 0, "{err}");

    let v = start_with(
        &[],
        &[profile.to_str().unwrap()],
        Some("/nonexistent/browser"),
    );
    assert_eq!(v.get(&v.path()).status, 200, "serving without a browser");
    let (code, err, _) = v.stop(libc::SIGTERM);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("cannot start a browser") && err.contains("/nonexistent/browser"),
        "{err}"
    );
}
