//! `profkit record`: samples a command (or a running process) with perf_event_open and keeps
//! a standard recording — a `perf.data` that unmodified perf reads, every process's JIT
//! metadata, kallsyms and a manifest — in one directory.
//!
//! # Layout
//! * [`sys`]: the attr, one event per CPU following the process tree, each event's ring.
//! * [`workload`]: the command, forked and held before its exec until the events are open.
//! * [`runtimes`]: the environment that turns on each runtime's JIT metadata.
//! * [`collect`]: what the records say as they stream by, and the JIT files kept through
//!   `/proc/<pid>/root` while their processes live.
//! * this file: the loop (poll the rings, copy their records to perf.data with a
//!   FINISHED_ROUND after each pass, as perf does), the feature sections and the manifest.
//!
//! # The recording directory
//! ```text
//! DIR/perf.data        the samples (file mode; BUILD_ID, HOSTNAME, OSRELEASE, ARCH, NRCPUS,
//!                      CMDLINE and EVENT_DESC features)
//! DIR/jit/jit-PID.dump each process's jitdump, named by its host pid
//! DIR/jit/perf-PID.map each process's perf map as it was at the process's exit
//! DIR/kallsyms         /proc/kallsyms, when kernel addresses are readable
//! DIR/manifest.json    command, host, times, event, counts, what was found where
//! ```

pub mod collect;
pub mod runtimes;
pub mod sys;
pub mod workload;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use profkit_perf::{Endian, FileWriter};

use collect::{Collector, Kept};
use sys::{Counter, Event, Sampling};
use workload::{Ended, Workload};

/// The name of the manifest in a recording directory (what marks a directory as one).
pub const MANIFEST: &str = "manifest.json";

/// What to record.
#[derive(Debug, Clone)]
pub struct Options {
    /// Samples per second (per CPU).
    pub frequency: u64,
    /// Bytes of user stack per sample for DWARF unwinding; `None`: frame pointers.
    pub stack_copy: Option<u32>,
    /// The command (program and arguments), or empty with `pid`.
    pub command: Vec<OsString>,
    /// A running process to attach to instead.
    pub pid: Option<i32>,
    /// The recording directory.
    pub dir: PathBuf,
    /// Set each runtime's JIT switches (`--no-jit-env` clears it).
    pub jit_env: bool,
    /// profkit's JIT Profiling API collector library, when installed.
    pub collector: Option<PathBuf>,
}

/// What a recording holds.
#[derive(Debug, serde::Serialize)]
pub struct Manifest {
    /// Format version of this manifest.
    pub profkit_recording: u32,
    /// The command recorded (or the attached pid's command line).
    pub command: Vec<String>,
    /// The pid attached to (`-p`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attached: Option<i32>,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Start and end, in seconds since the epoch.
    pub started: f64,
    /// End of the recording.
    pub ended: f64,
    /// Event sampled.
    pub event: &'static str,
    /// Why that event.
    pub event_note: String,
    /// Samples per second.
    pub frequency: u64,
    /// `fp` or `dwarf`.
    pub call_graph: &'static str,
    /// Whether kernel code was sampled.
    pub kernel_samples: bool,
    /// Samples recorded.
    pub samples: u64,
    /// Samples lost.
    pub lost: u64,
    /// The command's exit status (a signal as 128 + signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// The runtimes the command was recognised as (or names).
    pub runtimes: Vec<&'static str>,
    /// The JIT switches set, and notes.
    pub jit_environment: Vec<String>,
    /// Processes seen: host pid → command name.
    pub processes: BTreeMap<u32, String>,
    /// JIT files kept.
    pub jit_files: Vec<Kept>,
    /// `kallsyms` when kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kallsyms: Option<String>,
    /// XRay logs the command wrote into the directory.
    pub xray_logs: Vec<String>,
    /// The program recorded (the command's path resolved, or the attached process's
    /// executable): where an XRay trace's function ids are named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// A TSC reading, the samples' clock and the wall clock at one instant (x86-64): puts an
    /// XRay log's times on the samples' timeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_reference: Option<ClockReference>,
    /// What could not be kept, and why.
    pub problems: Vec<String>,
}

/// A TSC reading, CLOCK_MONOTONIC (the samples' clock) and CLOCK_REALTIME taken together: an
/// XRay log is timed by the TSC, or by CLOCK_REALTIME where the runtime cannot tell the TSC's
/// frequency (on many VMs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClockReference {
    /// The time stamp counter.
    pub tsc: u64,
    /// CLOCK_MONOTONIC in nanoseconds.
    pub monotonic_ns: u64,
    /// CLOCK_REALTIME in nanoseconds since the epoch.
    pub realtime_ns: u64,
}

/// How recording failed.
#[derive(Debug)]
pub enum Error {
    /// perf_event_open refused: the setting and the fix are in the message.
    NotAllowed(String),
    /// The command could not be started.
    Command(String),
    /// Anything else (writing the recording, the file system).
    Io(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotAllowed(m) | Error::Command(m) | Error::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

fn io_err(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> Error {
    move |e| Error::Io(format!("{what}: {e}"))
}

/// Signals received (SIGINT, SIGTERM) since the recording started.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

/// Prepares `dir`: a new directory, or an earlier recording (moved to `DIR.old`). Anything
/// else there is refused.
fn prepare_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::Io(format!("{}: {e}", dir.display()))),
        Ok(m) if m.is_dir() && dir.join(MANIFEST).is_file() => {
            let mut old = dir.as_os_str().to_os_string();
            old.push(".old");
            let old = PathBuf::from(old);
            if std::fs::symlink_metadata(old.join(MANIFEST)).is_ok() {
                std::fs::remove_dir_all(&old).map_err(io_err(old.display()))?;
            }
            std::fs::rename(dir, &old).map_err(io_err(dir.display()))?;
        }
        Ok(m) if m.is_dir() && std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) => {
            return Ok(());
        }
        Ok(_) => {
            return Err(Error::Io(format!(
                "{}: exists and is not a profkit recording (no {MANIFEST}); give another -d DIR",
                dir.display()
            )))
        }
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir.display()))
}

/// Opens the events for `pids` on every CPU (a workload's enable at its exec).
fn open_counters(
    sampling: &mut Sampling,
    pids: &[i32],
    on_exec: bool,
) -> Result<(Vec<Counter>, String), Error> {
    let cpus = sys::online_cpus();
    let mut note = String::new();
    loop {
        let attr = sys::attr(sampling, on_exec);
        let mut counters = Vec::new();
        let mut failure = None;
        'open: for pid in pids {
            for cpu in &cpus {
                match sys::open(&attr, *pid, *cpu) {
                    Ok(c) => counters.push(c),
                    Err(e) => {
                        failure = Some(e);
                        break 'open;
                    }
                }
            }
        }
        let Some(e) = failure else {
            if note.is_empty() {
                note = format!("{}: the machine's PMU", sampling.event.name());
            }
            return Ok((counters, note));
        };
        let errno = e.raw_os_error().unwrap_or(0);
        if sampling.event == Event::Cycles
            && matches!(
                errno,
                libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL
            )
        {
            note = format!("cpu-clock: this machine has no hardware cycles event ({e})");
            sampling.event = Event::CpuClock;
            continue;
        }
        if sampling.kernel && matches!(errno, libc::EACCES | libc::EPERM) {
            note.push_str("; kernel not sampled (not allowed)");
            sampling.kernel = false;
            continue;
        }
        if matches!(errno, libc::EACCES | libc::EPERM) {
            return Err(Error::NotAllowed(format!(
                "perf_event_open: {e}: kernel.perf_event_paranoid is {} — sampling your own processes needs 2 or less (and CAP_PERFMON or root for more); fix: `sudo sysctl kernel.perf_event_paranoid=1`, or run as root",
                sys::paranoid()
            )));
        }
        if errno == libc::ESRCH {
            return Err(Error::Command(format!(
                "perf_event_open: {e}: the process is gone"
            )));
        }
        return Err(Error::Io(format!(
            "perf_event_open ({}): {e}",
            sampling.event.name()
        )));
    }
}

/// The threads of process `pid` (`/proc/PID/task`).
fn threads(pid: i32) -> Vec<i32> {
    let mut out: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    if out.is_empty() {
        out.push(pid);
    }
    out
}

/// Records until the command ends (or, attached, until Ctrl-C). `progress` is called about
/// once a second with the samples so far.
pub fn record(opts: &Options, progress: &mut dyn FnMut(u64)) -> Result<Manifest, Error> {
    prepare_dir(&opts.dir)?;
    let started = SystemTime::now();
    let clock_reference =
        sys::clock_readings().map(|(tsc, monotonic_ns, realtime_ns)| ClockReference {
            tsc,
            monotonic_ns,
            realtime_ns,
        });
    let program_path: Option<PathBuf>;
    let kernel_allowed = sys::paranoid() < 2 || is_root();
    let mut sampling = Sampling {
        event: Event::Cycles,
        frequency: opts.frequency,
        stack_copy: opts.stack_copy,
        kernel: kernel_allowed,
    };
    let mut manifest_notes = Vec::new();
    let mut runtime = Vec::new();
    let mut workload = None;
    let mut command: Vec<String> = opts
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (counters, event_note) = match opts.pid {
        Some(pid) => {
            if !workload::alive(pid) {
                return Err(Error::Command(format!("-p {pid}: no such process")));
            }
            command = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| {
                    b.split(|c| *c == 0)
                        .filter(|a| !a.is_empty())
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect()
                })
                .unwrap_or_default();
            program_path = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
            let (c, note) = open_counters(&mut sampling, &threads(pid), false)?;
            (c, note)
        }
        None => {
            let Some(program) = opts.command.first() else {
                return Err(Error::Command(
                    "no command to record (give one after --, or -p PID)".into(),
                ));
            };
            let Some(path) = workload::resolve(program) else {
                return Err(Error::Command(format!(
                    "{}: command not found",
                    program.to_string_lossy()
                )));
            };
            program_path = Some(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()));
            let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            if opts.jit_env {
                let abs_dir = std::fs::canonicalize(&opts.dir).unwrap_or_else(|_| opts.dir.clone());
                let rest = opts.command.get(1..).unwrap_or_default();
                let jit = runtimes::jit_env(&path, rest, &abs_dir, opts.collector.as_deref());
                for (file, text) in &jit.files {
                    if let Some(parent) = file.parent() {
                        std::fs::create_dir_all(parent).map_err(io_err(parent.display()))?;
                    }
                    std::fs::write(file, text).map_err(io_err(file.display()))?;
                }
                for (k, v) in jit.vars {
                    env.retain(|(ek, _)| *ek != k);
                    env.push((k, v));
                }
                runtime = jit.runtimes;
                manifest_notes = jit.notes;
            }
            let w = Workload::fork(&path, &opts.command, &env)
                .map_err(|e| Error::Command(format!("{}: {e}", path.display())))?;
            let opened = open_counters(&mut sampling, &[w.pid], true);
            let opened = match opened {
                Ok(o) => o,
                Err(e) => {
                    w.kill(libc::SIGKILL);
                    let _ = w.wait();
                    return Err(e);
                }
            };
            workload = Some(w);
            opened
        }
    };

    let attr = sys::attr(&sampling, opts.pid.is_none());
    let attr_bytes = sys::attr_bytes(&attr);
    let ids: Vec<u64> = counters.iter().map(|c| c.id).collect();
    let data_path = opts.dir.join("perf.data");
    let tmp_path = opts.dir.join(".perf.data.partial");
    let file = collect::create_new(&tmp_path).map_err(io_err(tmp_path.display()))?;
    let endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };
    let mut out = FileWriter::start(
        io::BufWriter::with_capacity(1 << 20, file),
        endian,
        u64::from(sys::ATTR_SIZE),
        &[(&attr_bytes, &ids)],
    )
    .map_err(io_err(tmp_path.display()))?;
    let write_err = io_err(tmp_path.display());

    let kallsyms = std::fs::read("/proc/kallsyms")
        .ok()
        .filter(|k| sampling.kernel && has_addresses(k));
    if let Some(k) = &kallsyms {
        if let Some(rec) = kernel_mmap(k) {
            out.record(&rec).map_err(io_err(tmp_path.display()))?;
        }
    }
    let mut collector = Collector::default();
    if let Some(pid) = opts.pid {
        for rec in synthesize_process(pid) {
            collector.see(&rec);
            out.record(&rec).map_err(io_err(tmp_path.display()))?;
        }
    }

    catch_signals();
    SIGNALS.store(0, Ordering::SeqCst);
    let mut counters = counters;
    let mut ended = None;
    if let Some(w) = &mut workload {
        if let Err(e) = w.start() {
            let _ = std::fs::remove_file(&tmp_path);
            return Err(Error::Command(format!(
                "{}: {e}",
                command.first().map_or("", String::as_str)
            )));
        }
    } else {
        for c in &counters {
            c.enable().map_err(io_err("enabling the events"))?;
        }
    }
    let ended_fd = workload.as_ref().and_then(Workload::pidfd);
    let mut last_progress = Instant::now();
    let mut signals_seen = 0;
    let mut write_failure = None;
    loop {
        poll(&counters, ended_fd.as_ref(), Duration::from_millis(100));
        let mut any = false;
        for c in &mut counters {
            let n = c.drain(&mut |rec| {
                collector.see(rec);
                if write_failure.is_none() {
                    if let Err(e) = out.record(rec) {
                        write_failure = Some(e);
                    }
                }
            });
            any |= n > 0;
        }
        if any && write_failure.is_none() {
            if let Err(e) = out.record(&finished_round()) {
                write_failure = Some(e);
            }
        }
        if let Some(e) = write_failure.take() {
            // keep the command running but stop recording: the disk is full or gone
            for c in &counters {
                c.disable();
            }
            if let Some(w) = &workload {
                w.kill(libc::SIGTERM);
                let _ = w.wait();
            }
            let _ = std::fs::remove_file(&tmp_path);
            return Err(write_err(e));
        }
        if last_progress.elapsed() >= Duration::from_secs(1) {
            progress(collector.samples);
            last_progress = Instant::now();
        }
        let signals = SIGNALS.load(Ordering::SeqCst);
        match &workload {
            Some(w) => {
                if signals > signals_seen {
                    // the terminal sends Ctrl-C to the command too; a signal sent to profkit
                    // alone is passed on; a second one kills the command
                    w.kill(if signals > 1 {
                        libc::SIGKILL
                    } else {
                        libc::SIGINT
                    });
                    signals_seen = signals;
                }
                match w.try_wait() {
                    Ok(Some(e)) => {
                        ended = Some(e);
                        break;
                    }
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
            None => {
                if signals > 0 || !workload::alive(opts.pid.unwrap_or(0)) {
                    break;
                }
            }
        }
    }
    for c in &counters {
        c.disable();
    }
    for c in &mut counters {
        c.drain(&mut |rec| {
            collector.see(rec);
            if write_failure.is_none() {
                if let Err(e) = out.record(rec) {
                    write_failure = Some(e);
                }
            }
        });
    }
    if let Some(e) = write_failure {
        let _ = std::fs::remove_file(&tmp_path);
        return Err(write_err(e));
    }
    out.record(&finished_round())
        .map_err(io_err(tmp_path.display()))?;
    drop(counters);

    let kept = collector
        .keep(&opts.dir)
        .map_err(io_err(opts.dir.join("jit").display()))?;
    let host = hostname();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut features = features(
        &collector,
        &host,
        &release,
        &command,
        sampling.event,
        &attr_bytes,
        &ids,
    );
    if let Some(c) = clock_reference {
        features.insert(CLOCK_DATA, clock_data(c));
    }
    let bytes_written = out.finish(&features).map_err(io_err(tmp_path.display()))?;
    let _ = bytes_written;
    std::fs::rename(&tmp_path, &data_path).map_err(io_err(data_path.display()))?;
    let kallsyms_kept = match &kallsyms {
        Some(k) => {
            let p = opts.dir.join("kallsyms");
            collect::create_new(&p)
                .and_then(|mut f| io::Write::write_all(&mut f, k))
                .map_err(io_err(p.display()))?;
            Some("kallsyms".to_string())
        }
        None => None,
    };
    let xray_logs = std::fs::read_dir(&opts.dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with("xray-log."))
                .collect()
        })
        .unwrap_or_default();
    let manifest = Manifest {
        profkit_recording: 1,
        command,
        attached: opts.pid,
        host,
        kernel: release,
        started: seconds(started),
        ended: seconds(SystemTime::now()),
        event: sampling.event.name(),
        event_note,
        frequency: sampling.frequency,
        call_graph: if sampling.stack_copy.is_some() {
            "dwarf"
        } else {
            "fp"
        },
        kernel_samples: sampling.kernel,
        samples: collector.samples,
        lost: collector.lost,
        exit_status: ended.map(Ended::code),
        runtimes: runtime.iter().map(|r| r.name()).collect(),
        jit_environment: manifest_notes,
        processes: collector
            .processes
            .iter()
            .map(|(p, proc_)| (*p, proc_.comm.clone()))
            .collect(),
        jit_files: kept,
        kallsyms: kallsyms_kept,
        xray_logs,
        program: program_path.map(|p| p.to_string_lossy().into_owned()),
        clock_reference,
        problems: collector.problems.clone(),
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::Io(e.to_string()))?;
    let mpath = opts.dir.join(MANIFEST);
    collect::create_new(&mpath)
        .and_then(|mut f| io::Write::write_all(&mut f, &text))
        .map_err(io_err(mpath.display()))?;
    Ok(manifest)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits until a ring has data (its watermark), the command ended (`ended`: its pidfd), or
/// `timeout`.
fn poll(counters: &[Counter], ended: Option<&OwnedFd>, timeout: Duration) {
    let mut fds: Vec<libc::pollfd> = counters
        .iter()
        .map(|c| c.raw_fd())
        .chain(ended.map(AsRawFd::as_raw_fd))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(100);
    // SAFETY: poll reads and writes the array of the length given. EINTR (Ctrl-C) just
    // returns early.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// A FINISHED_ROUND record: perf report sorts the records before it by time.
fn finished_round() -> [u8; 8] {
    let [a, b, c, d] = 68u32.to_ne_bytes();
    let [e, f] = 8u16.to_ne_bytes();
    [a, b, c, d, 0, 0, e, f]
}

/// Whether kallsyms shows real addresses (kptr_restrict lets root see them).
fn has_addresses(kallsyms: &[u8]) -> bool {
    kallsyms
        .split(|c| *c == b'\n')
        .take(64)
        .any(|l| l.iter().take_while(|c| **c != b' ').any(|c| *c != b'0'))
}

/// The sample_id_all trailer of a synthesized record: pid, tid, time, cpu (0).
fn trailer(pid: u32, tid: u32) -> Vec<u8> {
    let mut t = Vec::with_capacity(24);
    t.extend_from_slice(&pid.to_ne_bytes());
    t.extend_from_slice(&tid.to_ne_bytes());
    t.extend_from_slice(&0u64.to_ne_bytes());
    t.extend_from_slice(&0u64.to_ne_bytes());
    t
}

/// A record of `kind` and `misc` from its body (the trailer appended, sizes padded).
fn synth(kind: u32, misc: u16, mut body: Vec<u8>, pid: u32, tid: u32) -> Option<Vec<u8>> {
    body.resize(body.len().next_multiple_of(8), 0);
    body.extend_from_slice(&trailer(pid, tid));
    let size = u16::try_from(body.len() + 8).ok()?;
    let mut r = Vec::with_capacity(body.len() + 8);
    r.extend_from_slice(&kind.to_ne_bytes());
    r.extend_from_slice(&misc.to_ne_bytes());
    r.extend_from_slice(&size.to_ne_bytes());
    r.extend_from_slice(&body);
    Some(r)
}

/// perf's kernel map: an MMAP of `[kernel.kallsyms]_text` from `_text` to the top.
fn kernel_mmap(kallsyms: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(kallsyms);
    let start = text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let addr = w.next()?;
        let _kind = w.next()?;
        (w.next()? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
    })?;
    let mut body = Vec::new();
    body.extend_from_slice(&u32::MAX.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    body.extend_from_slice(&start.to_ne_bytes());
    body.extend_from_slice(&(u64::MAX - start).to_ne_bytes());
    body.extend_from_slice(&start.to_ne_bytes());
    body.extend_from_slice(b"[kernel.kallsyms]_text\0");
    // PERF_RECORD_MISC_KERNEL
    synth(1, 1, body, u32::MAX, 0)
}

/// COMM and MMAP2 records for a process profkit attaches to (it was running before the
/// events were opened, so the kernel reports none of them).
fn synthesize_process(pid: i32) -> Vec<Vec<u8>> {
    let Ok(pid) = u32::try_from(pid) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for tid in threads(pid as i32) {
        let tid = tid as u32;
        let comm =
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
        let mut body = Vec::new();
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(comm.trim_end().as_bytes());
        body.push(0);
        out.extend(synth(3, 0, body, pid, tid));
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    for line in maps.lines() {
        let mut w = line.split_whitespace();
        let (Some(range), Some(perms), Some(off), Some(dev), Some(ino)) =
            (w.next(), w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let name: String = w.collect::<Vec<_>>().join(" ");
        if !perms.contains('x') {
            continue;
        }
        let mut r = range.splitn(2, '-').map(|n| u64::from_str_radix(n, 16));
        let (Some(Ok(start)), Some(Ok(end))) = (r.next(), r.next()) else {
            continue;
        };
        let mut d = dev.splitn(2, ':').map(|n| u32::from_str_radix(n, 16));
        let (maj, min) = match (d.next(), d.next()) {
            (Some(Ok(a)), Some(Ok(b))) => (a, b),
            _ => (0, 0),
        };
        let mut body = Vec::new();
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&start.to_ne_bytes());
        body.extend_from_slice(&end.saturating_sub(start).to_ne_bytes());
        body.extend_from_slice(&u64::from_str_radix(off, 16).unwrap_or(0).to_ne_bytes());
        body.extend_from_slice(&maj.to_ne_bytes());
        body.extend_from_slice(&min.to_ne_bytes());
        body.extend_from_slice(&ino.parse::<u64>().unwrap_or(0).to_ne_bytes());
        body.extend_from_slice(&0u64.to_ne_bytes());
        let prot = libc::PROT_READ as u32 | libc::PROT_EXEC as u32;
        body.extend_from_slice(&prot.to_ne_bytes());
        body.extend_from_slice(&(libc::MAP_PRIVATE as u32).to_ne_bytes());
        let shown = if name.is_empty() {
            "//anon"
        } else {
            name.as_str()
        };
        body.extend_from_slice(shown.as_bytes());
        body.push(0);
        out.extend(synth(10, 0, body, pid, pid));
    }
    out
}

/// A perf header string: its length (with the NUL, padded to 64) and the bytes.
fn header_string(s: &str) -> Vec<u8> {
    let len = (s.len() + 1).next_multiple_of(64);
    let mut b = Vec::with_capacity(4 + len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(s.as_bytes());
    b.resize(4 + len, 0);
    b
}

/// perf's CLOCK_DATA feature (`HEADER_CLOCK_DATA`).
const CLOCK_DATA: u32 = 29;

/// The CLOCK_DATA section: version 1, the samples' clock (CLOCK_MONOTONIC), and the wall clock
/// and that clock read at one instant (perf script `-F +tod` and OTLP's UNIX times use it).
fn clock_data(c: ClockReference) -> Vec<u8> {
    let mut b = Vec::with_capacity(24);
    b.extend_from_slice(&1u32.to_ne_bytes());
    b.extend_from_slice(&(libc::CLOCK_MONOTONIC as u32).to_ne_bytes());
    b.extend_from_slice(&c.realtime_ns.to_ne_bytes());
    b.extend_from_slice(&c.monotonic_ns.to_ne_bytes());
    b
}

/// The feature sections: BUILD_ID of every executable mapped, HOSTNAME, OSRELEASE, ARCH,
/// NRCPUS, CMDLINE and EVENT_DESC (CLOCK_DATA is added by the caller).
fn features(
    collector: &Collector,
    host: &str,
    release: &str,
    command: &[String],
    event: Event,
    attr: &[u8],
    ids: &[u64],
) -> BTreeMap<u32, Vec<u8>> {
    let mut f = BTreeMap::new();
    let mut build_ids = Vec::new();
    for path in &collector.exec_paths {
        let Ok(bin) = profkit_native::binary::Binary::open(path) else {
            continue;
        };
        let Some(id) = bin.build_id() else { continue };
        let entry = profkit_perf::BuildIdEntry {
            pid: -1,
            misc: 2, // PERF_RECORD_MISC_USER
            build_id: id.as_bytes().to_vec(),
            path: path.clone(),
        };
        if let Ok(b) = entry.bytes(if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }) {
            build_ids.extend_from_slice(&b);
        }
    }
    if !build_ids.is_empty() {
        f.insert(2, build_ids);
    }
    f.insert(3, header_string(host));
    f.insert(4, header_string(release));
    f.insert(6, header_string(std::env::consts::ARCH));
    let cpus = sys::online_cpus().len() as u32;
    let mut nr = cpus.to_ne_bytes().to_vec();
    nr.extend_from_slice(&cpus.to_ne_bytes());
    f.insert(7, nr);
    let mut cmdline = Vec::new();
    let argv: Vec<String> = std::iter::once("profkit".to_string())
        .chain(["record".into(), "--".into()])
        .chain(command.iter().cloned())
        .collect();
    cmdline.extend_from_slice(&(argv.len() as u32).to_ne_bytes());
    for a in &argv {
        cmdline.extend_from_slice(&header_string(a));
    }
    f.insert(11, cmdline);
    let mut desc = Vec::new();
    desc.extend_from_slice(&1u32.to_ne_bytes());
    desc.extend_from_slice(&(attr.len() as u32).to_ne_bytes());
    desc.extend_from_slice(attr);
    desc.extend_from_slice(&(ids.len() as u32).to_ne_bytes());
    desc.extend_from_slice(&header_string(event.name()));
    for id in ids {
        desc.extend_from_slice(&id.to_ne_bytes());
    }
    f.insert(12, desc);
    f
}

/// The file a command reads for `path`: a recording directory (`profkit record`'s, or any
/// directory holding a `perf.data`) is read through its `perf.data`; any other path is itself.
pub fn recording_file(path: &Path) -> std::borrow::Cow<'_, Path> {
    let data = path.join("perf.data");
    if path.is_dir() && data.is_file() {
        std::borrow::Cow::Owned(data)
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// The XRay traces a recording directory holds beside its samples (an XRay-instrumented
/// command's FDR logs), with what joins them to the samples: the program that names their
/// function ids and the clock pair that puts their TSC times on the samples' clock.
#[derive(Debug, Default)]
pub struct XrayLogs {
    /// The logs, in the directory (regular files only, named `xray-log.*`).
    pub logs: Vec<PathBuf>,
    /// The recorded program.
    pub program: Option<PathBuf>,
    /// The TSC / CLOCK_MONOTONIC pair taken when the recording started.
    pub clock: Option<ClockReference>,
}

/// The XRay logs of the recording whose `perf.data` is `perf_data` (see [`XrayLogs`]); `None`
/// outside a recording directory or when it has none. The manifest is untrusted (a recording
/// from another machine): it is read only as a regular file of at most 16 MiB, and a log is
/// taken only by a plain file name that is a regular file in the directory.
pub fn xray_logs(perf_data: &Path) -> Option<XrayLogs> {
    #[derive(serde::Deserialize)]
    struct Part {
        #[serde(default)]
        xray_logs: Vec<String>,
        program: Option<String>,
        clock_reference: Option<ClockReference>,
    }
    let dir = perf_data.parent()?;
    let text = read_small_regular(&dir.join(MANIFEST), 16 << 20).ok()?;
    let part: Part = serde_json::from_slice(&text).ok()?;
    let logs: Vec<PathBuf> = part
        .xray_logs
        .iter()
        .filter(|n| n.starts_with("xray-log.") && !n.contains('/') && !n.contains('\0'))
        .map(|n| dir.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file()))
        .collect();
    if logs.is_empty() {
        return None;
    }
    Some(XrayLogs {
        logs,
        program: part.program.map(PathBuf::from),
        clock: part.clock_reference,
    })
}

/// A regular file's bytes, up to `limit` (opened without blocking; anything else refused).
fn read_small_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file of its expected size",
        ));
    }
    let mut v = Vec::new();
    f.take(limit).read_to_end(&mut v)?;
    Ok(v)
}

/// The kernel symbols a recording directory kept beside its `perf.data` (the recorder copies
/// `/proc/kallsyms` when it is readable); `None` outside a recording directory.
pub fn recorded_kallsyms(perf_data: &Path) -> Option<PathBuf> {
    let dir = perf_data.parent()?;
    let k = dir.join("kallsyms");
    (dir.join(MANIFEST).is_file() && k.is_file()).then_some(k)
}
