//! What the perf.data driver tells the user besides the samples: per process, which JIT
//! metadata was found and how many samples it named; whether the clocks match; where kernel
//! names came from; binaries that were not found; unwinding counters; warnings.

use std::fmt::{self, Write as _};
use std::path::PathBuf;

use super::process::Process;

/// Whether the samples' times can be matched with a jitdump's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClockCheck {
    /// The recording used CLOCK_MONOTONIC (`perf record -k 1`), as jitdumps do.
    Monotonic,
    /// perf's own clock: JIT code is named by what is live at the end of the dump.
    #[default]
    PerfClock,
}

/// JIT facts of one process with samples.
#[derive(Clone, Debug, Default)]
pub struct ProcessReport {
    /// Process id.
    pub pid: u32,
    /// Its name.
    pub comm: Option<String>,
    /// Samples of the process.
    pub samples: u64,
    /// Samples whose leaf is JIT code (named or not).
    pub jit_samples: u64,
    /// Samples whose leaf is in anonymous memory nothing names.
    pub unnamed_jit_samples: u64,
    /// The jitdump marker perf recorded.
    pub marker: Option<PathBuf>,
    /// The jitdump used.
    pub jitdump: Option<PathBuf>,
    /// Whether its timestamps are CLOCK_MONOTONIC.
    pub jitdump_monotonic: bool,
    /// Paths tried when no jitdump was found.
    pub jitdump_tried: Vec<PathBuf>,
    /// A jitdump that did not load, and why.
    pub jitdump_error: Option<String>,
    /// Problems inside the jitdump (recovered records, truncation).
    pub jitdump_problems: Vec<String>,
    /// The perf map used.
    pub perf_map: Option<PathBuf>,
    /// Paths tried when no perf map was found.
    pub perf_map_tried: Vec<PathBuf>,
    /// Lines of the perf map that did not parse.
    pub perf_map_bad_lines: u64,
}

impl ProcessReport {
    pub(super) fn of(pid: u32, p: &Process) -> ProcessReport {
        let dump = p.jit.dump.as_ref();
        ProcessReport {
            pid,
            comm: p.comm.clone(),
            samples: p.samples,
            jit_samples: p.jit_samples,
            unnamed_jit_samples: p.unnamed_jit_samples,
            marker: p.jit.marker.clone(),
            jitdump: dump.map(|d| d.path.clone()),
            jitdump_monotonic: dump.is_some_and(|d| d.monotonic),
            jitdump_tried: p.jit.dump_tried.clone(),
            jitdump_error: p.jit.dump_error.clone(),
            jitdump_problems: dump.map(|d| d.problems.clone()).unwrap_or_default(),
            perf_map: p.jit.map.as_ref().map(|m| m.path.clone()),
            perf_map_tried: p.jit.map_tried.clone(),
            perf_map_bad_lines: p.jit.map.as_ref().map_or(0, |m| m.bad_lines),
        }
    }
}

/// Counters of `--call-graph dwarf` unwinding.
#[derive(Clone, Debug, Default)]
pub struct UnwindStats {
    /// Samples unwound from their stack copy.
    pub samples: u64,
    /// Return addresses found, all samples together.
    pub frames: u64,
    /// JIT functions given to the unwinder from JIT_CODE_UNWINDING_INFO.
    pub jit_modules: u64,
    /// JIT functions whose unwinding info could not be used.
    pub jit_unusable: u64,
}

/// Frame-pointer callchains cut at a return address no mapping holds (see `feed::perf`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FpCut {
    /// Samples whose chain was cut.
    pub samples: u64,
    /// Frames left out, all samples together (the bad address and the frames after it).
    pub frames: u64,
}

/// What the perf.data driver found. See `feed::perf`.
#[derive(Clone, Debug, Default)]
pub struct PerfReport {
    /// Samples in the file (every event).
    pub samples: u64,
    /// Samples of events other than the first sampled one (not used).
    pub other_event_samples: u64,
    /// The event whose samples were used (its recorded name).
    pub event: Option<String>,
    /// Records perf reported lost.
    pub lost: u64,
    /// The clocks.
    pub clock: ClockCheck,
    /// Where kernel names came from, or why there are none.
    pub kernel: String,
    /// Processes with samples, by pid.
    pub processes: Vec<ProcessReport>,
    /// Binaries not found or not matching their build id.
    pub missing_binaries: Vec<String>,
    /// Distinct functions named.
    pub functions: usize,
    /// Unwinding counters.
    pub unwind: UnwindStats,
    /// Frame-pointer chains cut at an address no mapping holds.
    pub fp_cut: FpCut,
    /// Decoding problems (also in the driver's summary).
    pub problems: Vec<String>,
    /// Other warnings (a perf map that did not load).
    pub warnings: Vec<String>,
    /// Samples named by the helper on the writer's thread (the naming split between two
    /// threads: see `feed::perf`'s `split.rs`).
    pub helped: u64,
}

impl PerfReport {
    /// One line on what named the samples: samples, functions, the JIT share left unnamed,
    /// and each JIT process's metadata (what `profkit record -o` and `convert DIR` print).
    pub fn naming_summary(&self) -> String {
        let jit: u64 = self.processes.iter().map(|p| p.jit_samples).sum();
        let unnamed: u64 = self.processes.iter().map(|p| p.unnamed_jit_samples).sum();
        let mut line = format!(
            "{} samples, {} functions named",
            self.samples, self.functions
        );
        if jit > 0 {
            line.push_str(&format!(
                "; {jit} samples in JIT code, {:.1}% of them unnamed",
                100.0 * unnamed as f64 / jit as f64
            ));
        }
        for p in self.processes.iter().filter(|p| p.jit_samples > 0) {
            let from: Vec<String> = p
                .jitdump
                .iter()
                .map(|d| format!("jitdump {}", d.display()))
                .chain(
                    p.perf_map
                        .iter()
                        .map(|m| format!("perf map {}", m.display())),
                )
                .collect();
            line.push_str(&format!(
                "; pid {}{}: {}",
                p.pid,
                p.comm
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                if from.is_empty() {
                    "no JIT metadata".to_string()
                } else {
                    from.join(", ")
                }
            ));
        }
        line
    }

    /// Everything a user should be warned about, one line each: processes whose JIT samples
    /// nothing names, clocks that do not match, a dump that did not load, missing binaries.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        // Kernel frames left unnamed for a reason the user can act on (another machine's
        // kernel, no kallsyms found).
        if self.kernel.contains("--kallsyms FILE") {
            out.push(format!("kernel symbols: {}", self.kernel));
        }
        for p in &self.processes {
            let who = match &p.comm {
                Some(c) => format!("pid {} ({c})", p.pid),
                None => format!("pid {}", p.pid),
            };
            if let Some(e) = &p.jitdump_error {
                out.push(format!("{who}: jitdump did not load: {e}"));
            }
            if p.unnamed_jit_samples > 0 {
                let mut w = format!(
                    "{who}: {} samples in anonymous executable memory and no jitdump or perf map names them",
                    p.unnamed_jit_samples
                );
                let list = |paths: &[PathBuf]| {
                    paths
                        .iter()
                        .map(|t| t.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut looked = Vec::new();
                if !p.jitdump_tried.is_empty() {
                    looked.push(format!("jitdump at {}", list(&p.jitdump_tried)));
                }
                if !p.perf_map_tried.is_empty() {
                    looked.push(format!("perf map at {}", list(&p.perf_map_tried)));
                }
                if !looked.is_empty() {
                    let _ = write!(
                        w,
                        " (looked for a {}; add --jit-dir DIR or FILE)",
                        looked.join(" and a ")
                    );
                }
                out.push(w);
            }
            if p.jitdump.is_some() && (self.clock != ClockCheck::Monotonic || !p.jitdump_monotonic)
            {
                out.push(format!(
                    "{who}: the recording's clock is not CLOCK_MONOTONIC (record with `perf record -k 1`): \
                     JIT code is named by what was live at the end of the jitdump, reused addresses may be misnamed"
                ));
            }
            for problem in &p.jitdump_problems {
                out.push(format!("{who}: jitdump: {problem}"));
            }
        }
        for b in &self.missing_binaries {
            out.push(format!(
                "binary not found: {b} (its frames are module+offset)"
            ));
        }
        if self.other_event_samples > 0 {
            out.push(format!(
                "{} samples of other events were left out (only {} is used; --event picks another)",
                self.other_event_samples,
                self.event.as_deref().unwrap_or("the first event")
            ));
        }
        if self.lost > 0 {
            out.push(format!("perf lost {} records while recording", self.lost));
        }
        if self.fp_cut.samples > 0 {
            out.push(self.fp_cut_line());
        }
        out
    }
}

impl PerfReport {
    /// The line that says how many frame-pointer chains were cut.
    fn fp_cut_line(&self) -> String {
        format!(
            "{} frame-pointer callchains ended at a return address no mapping holds (a walk through code without frame pointers); {} frames from there on were left out",
            self.fp_cut.samples, self.fp_cut.frames
        )
    }
}

impl fmt::Display for PerfReport {
    /// The human summary `profkit info` prints for the JIT side of a recording.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = match self.clock {
            ClockCheck::Monotonic => "CLOCK_MONOTONIC (matches jitdumps)",
            ClockCheck::PerfClock => "perf clock (jitdumps cannot be matched by time; use -k 1)",
        };
        writeln!(f, "clock:             {clock}")?;
        writeln!(f, "kernel symbols:    {}", self.kernel)?;
        writeln!(f, "functions named:   {}", self.functions)?;
        if self.helped > 0 {
            writeln!(
                f,
                "named on 2 threads: {} samples on the writer's",
                self.helped
            )?;
        }
        if self.unwind.samples > 0 {
            writeln!(
                f,
                "dwarf unwinding:   {} samples, {} frames, {} JIT functions with unwinding info ({} unusable)",
                self.unwind.samples, self.unwind.frames, self.unwind.jit_modules, self.unwind.jit_unusable
            )?;
        }
        if self.fp_cut.samples > 0 {
            writeln!(
                f,
                "frame pointers:    {} chains cut at an unmapped return address, {} frames left out",
                self.fp_cut.samples, self.fp_cut.frames
            )?;
        }
        for p in &self.processes {
            writeln!(
                f,
                "process {} {}: {} samples, {} in JIT code ({} unnamed)",
                p.pid,
                p.comm.as_deref().unwrap_or("?"),
                p.samples,
                p.jit_samples,
                p.unnamed_jit_samples
            )?;
            match (&p.jitdump, &p.marker) {
                (Some(d), _) => writeln!(f, "  jitdump:  {}", d.display())?,
                (None, Some(m)) => writeln!(f, "  jitdump:  not found (marker {})", m.display())?,
                (None, None) => {}
            }
            if let Some(m) = &p.perf_map {
                writeln!(f, "  perf map: {}", m.display())?;
            }
        }
        Ok(())
    }
}
