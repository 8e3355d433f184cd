//! One serving session: the listener on 127.0.0.1, the random token, the viewer's URL, the
//! browser, and the signals that end it.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use super::http::{self, Site};

/// The hosted viewer a profile opens in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// https://profiler.firefox.com (Firefox Profiler JSON, gzip or plain).
    Firefox,
    /// https://ui.perfetto.dev (Perfetto protobuf traces, Chrome trace JSON).
    Perfetto,
}

impl Viewer {
    /// The origin CORS allows.
    pub fn origin(self) -> &'static str {
        match self {
            Viewer::Firefox => "https://profiler.firefox.com",
            Viewer::Perfetto => "https://ui.perfetto.dev",
        }
    }
}

/// The first port tried for the Firefox Profiler (samply's), and how many after it.
const FIREFOX_PORTS: (u16, u16) = (3000, 100);
/// The one port the Perfetto UI's Content-Security-Policy lets it fetch from on 127.0.0.1
/// (trace_processor's RPC port; Perfetto's own `open_trace_in_ui` serves there too).
pub const PERFETTO_PORT: u16 = 9001;

/// Set by SIGINT, SIGTERM or SIGHUP.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether SIGINT, SIGTERM or SIGHUP came since [`catch_signals`].
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Makes SIGINT, SIGTERM and SIGHUP end [`run`] (the server checks every 200 ms), and a
/// conversion's wait ([`stopped`]), so the temporaries are removed by this process.
pub fn catch_signals() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a handler that only stores to an atomic (async-signal-safe); the sigaction
        // struct is zeroed and then filled as the API requires.
        let r = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// 128 random bits from the kernel, as 32 hex digits.
fn token() -> io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn bind(viewer: Viewer, port: Option<u16>) -> Result<TcpListener> {
    let at = |p| TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, p));
    match (port, viewer) {
        (Some(p), _) => at(p).with_context(|| format!("cannot listen on 127.0.0.1:{p}")),
        (None, Viewer::Perfetto) => at(PERFETTO_PORT).with_context(|| {
            format!(
                "cannot listen on 127.0.0.1:{PERFETTO_PORT}, the only local port the Perfetto UI may load a trace from (its Content-Security-Policy); is trace_processor --httpd or another viewer running?"
            )
        }),
        (None, Viewer::Firefox) => {
            let (first, n) = FIREFOX_PORTS;
            (first..first.saturating_add(n))
                .find_map(|p| at(p).ok())
                .map_or_else(|| at(0).context("cannot listen on 127.0.0.1"), Ok)
        }
    }
}

/// `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` percent-encoded.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URL that opens `local` (the profile's URL on this machine) in `viewer`; `server` is
/// the symbol server's base for the Firefox Profiler's source view.
pub fn viewer_url(viewer: Viewer, local: &str, server: Option<&str>) -> String {
    match viewer {
        Viewer::Firefox => {
            let mut u = format!(
                "https://profiler.firefox.com/from-url/{}/",
                percent_encode(local)
            );
            if let Some(s) = server {
                u.push_str("?symbolServer=");
                u.push_str(&percent_encode(s));
            }
            u
        }
        Viewer::Perfetto => format!("https://ui.perfetto.dev/#!/?url={local}"),
    }
}

/// Opens `url` with `$BROWSER` (a `:`-separated list of commands, each tried in turn; words
/// split on spaces, the URL appended) or `xdg-open`; says so when none can start. The opener
/// runs in a process group of its own, so the Ctrl-C that stops `view` does not reach a
/// browser it started.
fn open_browser(url: &str) {
    use std::os::unix::process::CommandExt;
    let openers = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| "xdg-open".to_string());
    let mut failures = Vec::new();
    for opener in openers.split(':') {
        let mut words = opener.split_whitespace();
        let Some(program) = words.next() else {
            continue;
        };
        let started = std::process::Command::new(program)
            .args(words)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn();
        match started {
            // Reaped on a thread of its own so that it leaves no zombie.
            Ok(mut child) => {
                let _ = std::thread::Builder::new().spawn(move || child.wait());
                return;
            }
            Err(e) => failures.push(format!("{program}: {e}")),
        }
    }
    crate::output::print_note(&format!(
        "cannot start a browser to open the viewer ({}); open the URL above yourself (set $BROWSER to choose one)",
        failures.join("; ")
    ));
}

/// What to serve and how.
pub struct Plan {
    /// The viewer.
    pub viewer: Viewer,
    /// The file, its name in the URL and its content type.
    pub file: std::path::PathBuf,
    pub name: String,
    pub content_type: &'static str,
    /// The source files (Firefox Profiler only).
    pub sources: Option<super::sources::Sources>,
    /// `--port` (0: any free port).
    pub port: Option<u16>,
    /// Open the browser.
    pub open: bool,
}

/// Serves the plan until SIGINT/SIGTERM/SIGHUP: prints the viewer's URL as the first line of
/// stdout, says on stderr how to stop, opens the browser.
pub fn run(plan: Plan) -> Result<()> {
    catch_signals().context("cannot catch SIGINT/SIGTERM")?;
    if stopped() {
        return Ok(());
    }
    let listener = bind(plan.viewer, plan.port)?;
    let port = listener.local_addr()?.port();
    if plan.viewer == Viewer::Perfetto && port != PERFETTO_PORT {
        crate::output::print_warning(&format!(
            "the Perfetto UI loads local traces only from 127.0.0.1:{PERFETTO_PORT} (its Content-Security-Policy); port {port} serves the trace, but ui.perfetto.dev may refuse to fetch it"
        ));
    }
    let token = token().context("/dev/urandom: cannot read a random token")?;
    let base = format!("http://127.0.0.1:{port}/{token}");
    let local = format!("{base}/{}", plan.name);
    let server = plan.sources.is_some().then_some(base.as_str());
    let url = viewer_url(plan.viewer, &local, server);
    {
        use std::io::Write;
        let mut out = io::stdout().lock();
        writeln!(out, "{url}")
            .and_then(|()| out.flush())
            .context("stdout")?;
    }
    eprintln!(
        "profkit: serving {local} to {}; Ctrl-C stops it",
        plan.viewer.origin()
    );
    if plan.open {
        open_browser(&url);
    }
    let site = Arc::new(Site {
        token,
        name: plan.name,
        file: plan.file,
        content_type: plan.content_type,
        origin: plan.viewer.origin(),
        sources: plan.sources,
    });
    http::serve(&listener, site, &STOP).context("the server stopped")?;
    if !stopped() {
        bail!("the server stopped");
    }
    eprintln!("profkit: stopped");
    Ok(())
}
