//! [`Source`]: an opened input that the model can replay, whatever its format — the one place
//! where analyses and writers pick a format's driver. [`Source::open`] builds one from a
//! format of the registry ([`crate::detect`]) and the input's bytes, asking the caller through
//! [`Open`] only for what that format uses (`-m`'s function names, perf.data's search paths), so
//! callers never name a format to open one.

use std::fmt;
use std::io;

use profkit_mlpd::File as MlpdFile;
use profkit_xray::profile::Profile;
use profkit_xray::Trace;

use crate::clock::Clock;
use crate::detect::Format;
use crate::events::{EventSink, ThreadId};
use crate::feed::{self, FeedSummary, FoldOptions, Folded};
use crate::func::FunctionTable;
use crate::replay::pipeline::Workers;
use crate::replay::Fold;

/// An input with calls or code, ready to be replayed.
pub enum Source<'a> {
    /// An XRay trace, with the names of its function ids (empty without `-m`).
    Xray {
        /// The trace.
        trace: Trace<'a>,
        /// Names from the instrumentation map.
        functions: FunctionTable,
    },
    /// An XRay profiling-mode file (call-path totals, no single calls), with the names of its
    /// function ids and the clock of its TSC ticks (unknown unless the user gives it).
    XrayProfile {
        /// The profile.
        profile: Profile<'a>,
        /// Names from the instrumentation map.
        functions: FunctionTable,
        /// Ticks per second of the TSC that timed the calls (the file records none).
        clock: Clock,
    },
    /// A Mono log profiler file, with its methods' ids and names.
    Mlpd {
        /// The file.
        file: MlpdFile<'a>,
        /// Method pointers → ids and names.
        methods: feed::mlpd::Methods,
    },
    /// A perf.data recording (samples), with where to find its JIT metadata and binaries.
    Perf {
        /// The recording's bytes.
        data: &'a [u8],
        /// How to read it (`--jit-dir` …; boxed: the other variants are small).
        opts: Box<feed::perf::PerfOptions>,
        /// No functions up front: the symbolizer declares them as it finds them.
        functions: FunctionTable,
    },
    /// A jitdump (code loads and moves; no calls).
    Jitdump {
        /// The dump's bytes.
        data: &'a [u8],
        /// No functions: code regions carry their names.
        functions: FunctionTable,
    },
}

/// Why an input could not be opened for replay.
#[derive(Debug)]
pub enum OpenError {
    /// The input itself: it does not parse as its format, or it takes no such option (the
    /// caller prefixes the input's name).
    Input(String),
    /// What one of [`Open`]'s providers failed with (passed on as it is).
    Provider(Box<dyn std::error::Error + Send + Sync>),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Input(m) => f.write_str(m),
            OpenError::Provider(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {}

/// A provider of something a format needs to be opened, asked only when the format uses it.
pub type Provider<'o, T> = &'o dyn Fn() -> Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What opening an input may need beyond its bytes (see [`Source::open`]).
pub struct Open<'o> {
    /// Names of XRay function ids (the instrumentation maps of `-m`).
    pub instr_names: Provider<'o, FunctionTable>,
    /// Ticks per second of an XRay profile's TSC (`--tsc-hz`; the file records none); given
    /// for another format, an error.
    pub tsc_hz: Option<u64>,
    /// How to read a perf.data recording (where its JIT metadata and kernel symbols are, which
    /// event).
    pub perf: Provider<'o, feed::perf::PerfOptions>,
}

fn no_names() -> Result<FunctionTable, Box<dyn std::error::Error + Send + Sync>> {
    Ok(FunctionTable::new())
}

fn isolated_perf() -> Result<feed::perf::PerfOptions, Box<dyn std::error::Error + Send + Sync>> {
    Ok(feed::perf::PerfOptions::isolated())
}

impl Open<'static> {
    /// Opening with nothing from this machine: no function names, no JIT metadata or kernel
    /// symbols looked for (fuzzing and tests: only the input's bytes matter).
    pub fn isolated() -> Open<'static> {
        Open {
            instr_names: &no_names,
            tsc_hz: None,
            perf: &isolated_perf,
        }
    }
}

impl<'a> Source<'a> {
    /// Opens `bytes` of `format` for replay (an llvm-xray YAML trace as its binary re-encoding,
    /// [`Format::encode`]); `Ok(None)` for a format with nothing to replay (a perf map, an ELF
    /// binary).
    pub fn open(
        format: Format,
        bytes: &'a [u8],
        open: &Open<'_>,
    ) -> Result<Option<Self>, OpenError> {
        if open.tsc_hz.is_some() && format != Format::XrayProfile {
            return Err(OpenError::Input(format!(
                "--tsc-hz applies to XRay profiling-mode files (which record no clock); this is {}",
                format.description()
            )));
        }
        let input = |e: &dyn fmt::Display| OpenError::Input(e.to_string());
        let names = || (open.instr_names)().map_err(OpenError::Provider);
        Ok(Some(match format {
            Format::Xray | Format::XrayYaml => {
                Source::xray(Trace::parse(bytes).map_err(|e| input(&e))?, names()?)
            }
            Format::XrayProfile => Source::xray_profile(
                Profile::parse(bytes).map_err(|e| input(&e))?,
                names()?,
                Clock::new(open.tsc_hz.unwrap_or(0)),
            ),
            Format::Mlpd => Source::mlpd(MlpdFile::parse(bytes).map_err(|e| input(&e))?),
            Format::Jitdump => Source::jitdump(bytes),
            Format::Perf => Source::perf(bytes, (open.perf)().map_err(OpenError::Provider)?),
            Format::PerfMap | Format::Elf => return Ok(None),
        }))
    }

    /// An XRay trace whose function ids `functions` names.
    pub fn xray(trace: Trace<'a>, functions: FunctionTable) -> Self {
        Source::Xray { trace, functions }
    }

    /// An XRay profiling-mode file whose function ids `functions` names; `clock` converts its
    /// TSC ticks (`Clock::new(0)`: unknown, values stay ticks).
    pub fn xray_profile(profile: Profile<'a>, functions: FunctionTable, clock: Clock) -> Self {
        Source::XrayProfile {
            profile,
            functions,
            clock,
        }
    }

    /// Whether the input has only call-path totals (no single calls, no times): XRay
    /// profiling mode.
    pub fn has_only_call_paths(&self) -> bool {
        matches!(self, Source::XrayProfile { .. })
    }

    /// A Mono file (its methods are collected in a first parallel pass).
    pub fn mlpd(file: MlpdFile<'a>) -> Self {
        let methods = feed::mlpd::methods(&file);
        Source::Mlpd { file, methods }
    }

    /// A jitdump.
    pub fn jitdump(data: &'a [u8]) -> Self {
        Source::Jitdump {
            data,
            functions: FunctionTable::new(),
        }
    }

    /// A perf.data recording.
    pub fn perf(data: &'a [u8], opts: feed::perf::PerfOptions) -> Self {
        Source::Perf {
            data,
            opts: Box::new(opts),
            functions: FunctionTable::new(),
        }
    }

    /// The input format's name (`xray`, `xray-profile`, `mlpd`, `jitdump`, `perf`).
    pub fn format(&self) -> &'static str {
        match self {
            Source::Xray { .. } => "xray",
            Source::XrayProfile { .. } => "xray-profile",
            Source::Mlpd { .. } => "mlpd",
            Source::Jitdump { .. } => "jitdump",
            Source::Perf { .. } => "perf",
        }
    }

    /// Names of the function ids the calls use.
    pub fn functions(&self) -> &FunctionTable {
        match self {
            Source::Xray { functions, .. }
            | Source::XrayProfile { functions, .. }
            | Source::Jitdump { functions, .. }
            | Source::Perf { functions, .. } => functions,
            Source::Mlpd { methods, .. } => &methods.table,
        }
    }

    /// The clock of the raw times folds see.
    pub fn clock(&self) -> Clock {
        match self {
            Source::Xray { trace, .. } => feed::xray::clock(&trace.header),
            Source::XrayProfile { clock, .. } => *clock,
            Source::Mlpd { .. } | Source::Jitdump { .. } | Source::Perf { .. } => {
                Clock::NANOSECONDS
            }
        }
    }

    /// How the format writes a thread id in a frame name (`thread_123`, Mono: `thread_0x7f…`).
    pub fn thread_label(&self, t: &ThreadId) -> String {
        match self {
            Source::Mlpd { .. } => format!("thread_{:#x}", t.tid),
            _ => format!("thread_{}", t.tid),
        }
    }

    /// The heading of a thread's section in text reports (`Thread 123 (pid 45)`, Mono:
    /// `Thread 0x7f…`).
    pub fn thread_title(&self, t: &ThreadId) -> String {
        match self {
            Source::Mlpd { .. } => format!("Thread {:#x}", t.tid),
            _ => format!("Thread {} (pid {})", t.tid, t.pid),
        }
    }

    /// Runs `make`'s fold on every thread (see [`crate::feed`]). A jitdump has no calls:
    /// no threads. An XRay profile gives each thread's call paths to
    /// [`Fold::call_path`] (the options do not apply: there is nothing to replay).
    pub fn fold<F>(
        &self,
        opts: &FoldOptions<'_>,
        make: impl Fn(ThreadId) -> F,
    ) -> Folded<ThreadId, F>
    where
        F: Fold,
        F::Part: Send,
    {
        match self {
            Source::Xray { trace, .. } => {
                let id = |k: profkit_xray::ThreadKey| ThreadId {
                    pid: k.pid,
                    tid: u64::from(k.tid),
                };
                feed::xray::fold(trace, opts, |k| make(id(k))).map_keys(id)
            }
            Source::XrayProfile { profile, .. } => feed::xray_profile::fold(profile, make),
            Source::Mlpd { file, methods } => {
                let pid = file.header.pid;
                let id = |tid: u64| ThreadId { pid, tid };
                feed::mlpd::fold(file, methods, opts, |tid| make(id(tid))).map_keys(id)
            }
            // Samples, not calls: nothing to fold (sampled stacks go through `feed`).
            Source::Jitdump { .. } | Source::Perf { .. } => Folded {
                threads: Vec::new(),
                summary: FeedSummary::default(),
            },
        }
    }

    /// Feeds the whole input to `sink` as a stream; `name` names the trace (and its process).
    /// A perf.data recording's findings come back in [`FeedSummary::perf`].
    pub fn feed(
        &self,
        name: &str,
        workers: Option<Workers>,
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
        sink: &mut dyn EventSink,
    ) -> io::Result<FeedSummary> {
        match self {
            Source::Xray { trace, functions } => {
                let opts = feed::xray::FeedOptions { workers, release };
                feed::xray::feed(trace, functions, name, &opts, sink)
            }
            Source::XrayProfile {
                profile,
                functions,
                clock,
            } => feed::xray_profile::feed(profile, functions, *clock, name, sink),
            Source::Mlpd { file, methods } => feed::mlpd::feed(file, methods, name, workers, sink),
            Source::Jitdump { data, .. } => feed::jitdump::feed(data, name, sink),
            Source::Perf { data, opts, .. } => {
                let (mut summary, report) = feed::perf::feed(data, name, opts, release, sink)?;
                summary.perf = Some(Box::new(report));
                Ok(summary)
            }
        }
    }
}
