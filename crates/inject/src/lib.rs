//! `profkit inject`: a perf.data whose JIT frames unmodified `perf report`, `perf annotate`
//! and `perf script` resolve — what `perf inject --jit` does — with one ELF per jitdump
//! (per layer of reused addresses) instead of one per function.
//!
//! For every process of the recording with a jitdump (found through its marker mmap, beside
//! the perf.data or in `--jit-dir`s, as [`profkit_jit::discovery::JitSearch`] looks):
//!
//! 1. [`layout`]: its functions go to layers (a layer never holds two functions at one
//!    address), layers to ELFs (at most 1 GiB of address space each), an ELF's functions to
//!    runs (functions at most a page apart).
//! 2. [`elf`]: each ELF gets `.text` (the runs' code, page-aligned), `.symtab` (one `STT_FUNC`
//!    per function), `.debug_line` from DEBUG_INFO ([`lines`]), `.eh_frame`/`.eh_frame_hdr`
//!    from UNWINDING_INFO ([`unwind`]) and a GNU build id.
//! 3. [`plan`]: MMAP2 records map each run (address range → ELF file offset, page-aligned
//!    `pgoff`) at the load time of its first function, or smaller pieces where a run would
//!    hide code that is still live.
//! 4. profkit-perf's writer copies the input's records with the MMAP2s merged in time order
//!    and the ELFs' build ids added to the BUILD_ID feature.
//!
//! **Unwind tables.** perf's libunwind glue (perf 6.1) reads an ELF's `.eh_frame_hdr` at the
//! run-time address `lowest mapping start of the ELF − lowest PT_LOAD vaddr + sh_addr`, through
//! whatever is mapped there. So the ELF's first `PT_LOAD` holds the two sections (from file
//! offset 0) and, when the ELF has FDEs, one more MMAP2 maps that segment at an address below
//! all of the ELF's runs where the process had no mapping (the "unwind map"). The FDEs name
//! run-time code addresses. Functions without FDEs unwind by frame pointer, as after
//! `perf inject`.
//!
//! A process with only a `perf-<pid>.map` gets one ELF of the map's functions (symbols over
//! zero-filled text) mapped after its anonymous executable mapping, so perf names them whether
//! or not the map is still in /tmp. The recording must be on CLOCK_MONOTONIC (`perf record -k 1`), the jitdumps'
//! clock; otherwise no dump is injected (perf inject refuses too).

pub mod dump;
pub mod elf;
pub mod layout;
pub mod lines;
pub mod plan;
pub mod unwind;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use profkit_common::output::Output;
use profkit_jit::discovery::JitSearch;
use profkit_perf::{
    BuildIdEntry, EventData, Insert, JitScan, Mmap2, PerfData, SampleId, WriteOptions,
};
use serde::Serialize;

use crate::dump::JitImage;
use crate::elf::{ElfFunc, ElfSpec, PAGE};
use crate::layout::Span;

/// The JSON schema name of [`Report`].
pub const SCHEMA: &str = "profkit.inject/1";

/// `CLOCK_MONOTONIC`.
const CLOCK_MONOTONIC: u32 = 1;
/// `PERF_RECORD_MISC_USER`.
const MISC_USER: u16 = 2;
/// `PROT_READ | PROT_EXEC`.
const PROT_RX: u32 = 5;
/// `PROT_READ`.
const PROT_R: u32 = 1;
/// `MAP_PRIVATE`.
const MAP_PRIVATE: u32 = 2;
/// How far below an ELF's runs its unwind map may go.
const UNWIND_SEARCH: u64 = 512 << 20;
/// The most bytes a function without code bytes gets (zero-filled).
const CODELESS_MAX: u64 = 64 << 10;

/// What to inject.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The recording (file or pipe mode, gzip allowed; `-`: stdin).
    pub input: PathBuf,
    /// The perf.data to write (file mode).
    pub output: PathBuf,
    /// Where jitdumps and perf maps are looked for (`None`: where the recording says, /tmp
    /// for maps, and beside the input).
    pub jit: Option<JitSearch>,
    /// Where the ELFs go (default: `<output>-jit/`).
    pub elf_dir: Option<PathBuf>,
}

/// A failure: what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// What [`inject`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The recording read.
    pub input: String,
    /// The perf.data written.
    pub output: String,
    /// The directory of the ELFs.
    pub elf_dir: String,
    /// Processes with JIT code or metadata.
    pub processes: Vec<ProcessReport>,
    /// ELF files written.
    pub elfs_written: usize,
    /// Functions in them.
    pub functions: usize,
    /// MMAP2 records added.
    pub mmap2_added: u64,
    /// Build-id entries added.
    pub build_ids_added: u64,
    /// Input records copied.
    pub records: u64,
    /// Bytes of the output.
    pub bytes: u64,
    /// Problems that did not stop the injection.
    pub warnings: Vec<String>,
}

/// One process.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProcessReport {
    /// Process id.
    pub pid: i32,
    /// Its name (COMM).
    pub comm: Option<String>,
    /// `injected`, `refused`, `jitdump not found`, `perf map` or `no JIT metadata`.
    pub status: String,
    /// Why it was refused or what was not found.
    pub reason: Option<String>,
    /// The jitdump used.
    pub jitdump: Option<String>,
    /// The perf map perf reads (processes without a jitdump).
    pub perf_map: Option<String>,
    /// Samples whose pc is in its anonymous executable memory.
    pub samples_in_anon_exec: u64,
    /// The ELFs written for it.
    pub elfs: Vec<ElfReport>,
    /// Functions injected.
    pub functions: usize,
    /// MMAP2 records added for it.
    pub mmap2: usize,
}

/// One ELF written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ElfReport {
    /// Its path.
    pub path: String,
    /// Its layer (0: addresses used once; n: the n-th reuse).
    pub layer: usize,
    /// Functions (symbols).
    pub functions: usize,
    /// Runs (PT_LOADs of code).
    pub runs: usize,
    /// Lowest and highest run-time address, hex.
    pub range: (String, String),
    /// File size.
    pub bytes: u64,
    /// GNU build id, hex.
    pub build_id: String,
    /// FDEs in its `.eh_frame_hdr` table.
    pub fdes: usize,
    /// Line-table rows.
    pub line_rows: usize,
    /// Where its unwind segment is mapped (hex), when it has FDEs.
    pub unwind_map: Option<String>,
}

/// What the walk over the recording found, per process.
#[derive(Default)]
struct ProcFacts {
    /// Every recorded user mapping: `(start, end)`.
    maps: Vec<(u64, u64)>,
    /// Anonymous executable mappings: start -> end.
    anon: BTreeMap<u64, u64>,
    /// Anonymous executable mappings as recorded: `(start, end, time)`.
    anon_times: Vec<(u64, u64, u64)>,
    samples_in_anon: u64,
}

fn err(m: impl Into<String>) -> Error {
    Error(m.into())
}

/// The default ELF directory of `output`: `<output>-jit`.
pub fn default_elf_dir(output: &Path) -> PathBuf {
    let mut s = output.as_os_str().to_owned();
    s.push("-jit");
    PathBuf::from(s)
}

/// Writes `options.output`: the recording with MMAP2s mapping each jitdump's functions to the
/// ELFs written to the ELF directory. The input is read whole (gzip inflated in memory; the
/// command line inflates through its bounded spool and calls [`inject_bytes`]).
pub fn inject(options: &Options) -> Result<Report, Error> {
    let input = &options.input;
    let shown = input.display().to_string();
    let stdin = input == Path::new("-");
    let raw = if stdin {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map(|_| b)
            .map_err(|e| err(format!("stdin: {e}")))?
    } else {
        std::fs::read(input).map_err(|e| err(format!("{shown}: {e}")))?
    };
    // gzip is unwrapped (perf itself does not read it, but profkit's other commands do).
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| err(format!("{shown}: gzip: {e}")))?;
        out
    } else {
        raw
    };
    inject_bytes(options, &shown, &bytes)
}

/// [`inject`] of a recording already in memory (`bytes`, named `shown` in messages).
///
/// Nothing appears under the output's name or in the ELF directory unless everything was
/// written: the perf.data and the ELFs are staged (profkit-common's `Output`: new temporary
/// files, renamed over their names at the end). The ELF directory is created if missing and
/// must be a real directory (a symbolic link there is refused, never followed); nothing else
/// in it is touched.
pub fn inject_bytes(options: &Options, shown: &str, bytes: &[u8]) -> Result<Report, Error> {
    let input = &options.input;
    let shown = shown.to_string();
    if let (Ok(a), Ok(b)) = (input.canonicalize(), options.output.canonicalize()) {
        if a == b {
            return Err(err(format!("{shown}: the output must not be the input")));
        }
    }
    if options.output == Path::new("-") {
        return Err(err(
            "the output must be a file: a file-mode perf.data is written with seeks",
        ));
    }
    if std::fs::metadata(&options.output).is_ok_and(|m| m.is_dir()) {
        return Err(err(format!(
            "{}: is a directory; name the perf.data to write",
            options.output.display()
        )));
    }
    let data = PerfData::parse(bytes).map_err(|e| err(format!("{shown}: {e}")))?;

    let mut report = Report {
        schema: SCHEMA,
        input: shown.clone(),
        output: options.output.display().to_string(),
        ..Report::default()
    };
    for p in &data.meta().problems {
        report.warnings.push(format!("{shown}: {p}"));
    }

    // One walk: JIT markers, every process's mappings, samples in anonymous executable memory.
    let mut scan = JitScan::new();
    let mut facts: BTreeMap<i32, ProcFacts> = BTreeMap::new();
    let mut sample_times: Option<(u64, u64)> = None;
    let mut events = data.events().map_err(|e| err(format!("{shown}: {e}")))?;
    while let Some(ev) = events.next_event() {
        let ev = ev.map_err(|e| err(format!("{shown}: {e}")))?;
        scan.observe(&ev);
        match &ev.data {
            EventData::Mmap(m) if !m.is_kernel() => {
                let f = facts.entry(m.pid).or_default();
                f.maps.push((m.start, m.end()));
                if m.executable && m.is_anonymous() {
                    f.anon.insert(m.start, m.end());
                    f.anon_times.push((m.start, m.end(), ev.time.unwrap_or(0)));
                }
            }
            EventData::Sample(s) => {
                if let Some(t) = s.time {
                    sample_times = Some(sample_times.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                }
                if let (Some(pid), Some(ip)) = (s.pid, s.ip) {
                    if let Some(f) = facts.get_mut(&pid) {
                        if f.anon
                            .range(..=ip)
                            .next_back()
                            .is_some_and(|(_, &e)| ip < e)
                        {
                            f.samples_in_anon += 1;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(t) = events.truncation() {
        report.warnings.push(format!("{shown}: {t}"));
    }
    drop(events);

    let clock_ok = !data.attrs().is_empty()
        && data
            .attrs()
            .iter()
            .all(|a| a.use_clockid && a.clockid == Some(CLOCK_MONOTONIC));
    let Some(attr) = data.attrs().first() else {
        return Err(err(format!("{shown}: the recording has no attrs")));
    };
    let endian = data.header().endian;
    // The ELF machine of a perf map's functions: perf maps do not say; the recording's ARCH.
    let machine = match data.features().arch.as_deref() {
        Some("aarch64" | "arm64") => u32::from(object::elf::EM_AARCH64),
        Some("riscv64") => u32::from(object::elf::EM_RISCV),
        Some("s390x" | "s390") => u32::from(object::elf::EM_S390),
        Some("ppc64le" | "ppc64") => u32::from(object::elf::EM_PPC64),
        Some("i386" | "i686" | "x86") => u32::from(object::elf::EM_386),
        _ => u32::from(object::elf::EM_X86_64),
    };

    let elf_dir = options
        .elf_dir
        .clone()
        .unwrap_or_else(|| default_elf_dir(&options.output));
    let stdin = input == Path::new("-");
    let search = options
        .jit
        .clone()
        .unwrap_or_else(|| JitSearch::new((!stdin).then_some(input.as_path()), Vec::new()));

    let mut inserts: Vec<Insert> = Vec::new();
    let mut build_ids: Vec<BuildIdEntry> = Vec::new();
    let mut dir_ready = false;
    let mut elf_dir_abs = elf_dir.clone();
    // An ELF directory made by this run goes again if the run fails (after `out`, declared
    // below and so dropped first, has removed the staged ELFs from it).
    let mut made_dir = MadeDir(None);
    // Everything written is staged here and renamed at the end (dropped on an error: the
    // temporary files go).
    let out = Output::staged(&options.output);

    let procs = scan.processes();
    for p in &procs {
        let f = facts.remove(&p.pid).unwrap_or_default();
        let mut pr = ProcessReport {
            pid: p.pid,
            comm: p.comm.clone(),
            samples_in_anon_exec: f.samples_in_anon,
            ..ProcessReport::default()
        };
        let marker = p.jitdumps.first().map(|m| PathBuf::from(&m.path));
        let mut paths: Vec<&str> = p.jitdumps.iter().map(|m| m.path.as_str()).collect();
        paths.dedup();
        if paths.len() > 1 {
            report.warnings.push(format!(
                "pid {}: {} jitdump markers ({}); using the first",
                p.pid,
                paths.len(),
                paths.join(", ")
            ));
        }
        for m in p.jitdumps.iter().filter(|m| !m.pid_matches) {
            report.warnings.push(format!(
                "pid {}: jitdump marker {} names another pid (a container's?); used anyway",
                p.pid, m.path
            ));
        }
        let pid = u32::try_from(p.pid).unwrap_or(0);
        let found = search.jitdump(pid, marker.as_deref());
        let image = match (found, &marker) {
            (Ok(path), _) => jitdump_image(
                &path,
                p.pid,
                clock_ok,
                sample_times,
                &mut pr,
                &mut report.warnings,
            ),
            (Err(tried), Some(_)) => {
                pr.status = "jitdump not found".into();
                pr.reason = Some(format!("tried {}", list(&tried)));
                report.warnings.push(format!(
                    "pid {}: jitdump not found ({}); its JIT frames stay unnamed (use --jit-dir)",
                    p.pid,
                    pr.reason.clone().unwrap_or_default()
                ));
                None
            }
            (Err(_), None) => {
                perf_map_image(&search, p.pid, &f, machine, &mut pr, &mut report.warnings)
            }
        };
        let Some((image, status)) = image else {
            report.processes.push(pr);
            continue;
        };
        if !dir_ready {
            elf_dir_abs = prepare_elf_dir(&elf_dir, &mut made_dir)?;
            dir_ready = true;
        }
        inject_process(
            &image,
            p.pid,
            &f,
            &elf_dir_abs,
            &out,
            attr,
            endian,
            &mut pr,
            &mut inserts,
            &mut build_ids,
            &mut report.warnings,
        )?;
        pr.status = status.into();
        report.processes.push(pr);
    }

    inserts.sort_by_key(|i| i.time);
    // Written to a staged temporary file and renamed (with the ELFs) when complete.
    let out_name = options.output.display().to_string();
    let written = out
        .create_file()
        .map_err(|e| err(e.to_string()))
        .and_then(|f| {
            profkit_perf::write(
                &data,
                &inserts,
                &build_ids,
                WriteOptions::default(),
                BufWriter::with_capacity(1 << 20, f),
            )
            .map_err(|e| err(format!("{out_name}: {e}")))
        })
        .and_then(|s| out.commit().map(|()| s).map_err(|e| err(e.to_string())));
    let stats = match written {
        Ok(s) => s,
        Err(e) => {
            out.discard();
            return Err(e);
        }
    };
    // The run succeeded: its ELF directory stays.
    made_dir.0 = None;
    report.elf_dir = elf_dir_abs.display().to_string();
    report.elfs_written = report.processes.iter().map(|p| p.elfs.len()).sum();
    report.functions = report.processes.iter().map(|p| p.functions).sum();
    report.mmap2_added = stats.inserted;
    report.build_ids_added = stats.build_ids_added;
    report.records = stats.records;
    report.bytes = stats.bytes;
    Ok(report)
}

/// Makes sure `elf_dir` is a directory to write ELFs in and returns its absolute path: created
/// when missing (noted in `made`), else it must be a real directory — a symbolic link (perhaps
/// to someone else's files) is refused, not followed. Nothing in it is removed: ELFs of this
/// run replace theirs by name, atomically, when the run succeeds.
fn prepare_elf_dir(elf_dir: &Path, made: &mut MadeDir) -> Result<PathBuf, Error> {
    match std::fs::symlink_metadata(elf_dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(err(format!(
                "{}: the ELF directory is a symbolic link; profkit does not write through it (remove it or choose another output name)",
                elf_dir.display()
            )))
        }
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(err(format!(
                "{}: the ELF directory's name is taken by a file that is not a directory",
                elf_dir.display()
            )))
        }
        Err(_) => {
            std::fs::create_dir(elf_dir)
                .map_err(|e| err(format!("{}: {e}", elf_dir.display())))?;
            made.0 = Some(elf_dir.to_path_buf());
        }
    }
    elf_dir
        .canonicalize()
        .map_err(|e| err(format!("{}: {e}", elf_dir.display())))
}

/// The ELF directory this run created, removed (when empty) if the run fails.
struct MadeDir(Option<PathBuf>);

impl Drop for MadeDir {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Paths as one comma-separated list.
fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|t| t.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The jitdump at `path` of process `pid`, ready to inject, and the status to report; `None`
/// (with `pr`'s status and reason set) when it cannot be aligned with the samples or read.
fn jitdump_image(
    path: &Path,
    pid: i32,
    clock_ok: bool,
    sample_times: Option<(u64, u64)>,
    pr: &mut ProcessReport,
    warnings: &mut Vec<String>,
) -> Option<(JitImage, &'static str)> {
    pr.jitdump = Some(path.display().to_string());
    if !clock_ok {
        pr.status = "refused".into();
        pr.reason = Some(
            "the recording is not on CLOCK_MONOTONIC (record with perf record -k 1): its samples cannot be aligned with the jitdump's times".into(),
        );
        warnings.push(format!(
            "pid {pid}: no -k 1 clock: cannot align jitdump {} (perf record -k 1 uses CLOCK_MONOTONIC, the jitdump's clock)",
            path.display()
        ));
        return None;
    }
    let image = match dump::load(path) {
        Ok(i) => i,
        Err(e) => {
            pr.status = "refused".into();
            pr.reason = Some(e.clone());
            warnings.push(format!("pid {pid}: {e}"));
            return None;
        }
    };
    warnings.extend(image.problems.iter().cloned());
    if !image.monotonic {
        pr.status = "refused".into();
        pr.reason = Some(
            "the jitdump's times are TSC ticks (JITDUMP_FLAGS_ARCH_TIMESTAMP), not CLOCK_MONOTONIC"
                .into(),
        );
        warnings.push(format!(
            "pid {pid}: {}: {}",
            path.display(),
            pr.reason.clone().unwrap_or_default()
        ));
        return None;
    }
    if i64::from(image.pid) != i64::from(pid) {
        warnings.push(format!(
            "pid {pid}: {} says it is pid {}'s",
            path.display(),
            image.pid
        ));
    }
    if let (Some((a, b)), Some((c, d))) = (image.time_range, sample_times) {
        if b < c || d < a {
            warnings.push(format!(
                "pid {pid}: {}'s times ({a}..{b}) do not overlap the samples' ({c}..{d}): another clock?",
                path.display()
            ));
        }
    }
    Some((image, "injected"))
}

/// The perf map of process `pid` (a process with no jitdump), ready to inject: its functions
/// without code, each live from just after the last recorded mapping of anonymous memory it
/// is in (perf would let that mapping replace the ELF's otherwise). `None` (with `pr`'s status
/// and reason set) when there is no readable map.
fn perf_map_image(
    search: &JitSearch,
    pid: i32,
    facts: &ProcFacts,
    machine: u32,
    pr: &mut ProcessReport,
    warnings: &mut Vec<String>,
) -> Option<(JitImage, &'static str)> {
    let map_path = match search.perf_map(u32::try_from(pid).unwrap_or(0)) {
        Ok(p) => p,
        Err(tried) => {
            pr.status = "no JIT metadata".into();
            pr.reason = Some(format!(
                "anonymous executable memory and no jitdump or perf map (tried {})",
                list(&tried)
            ));
            if pr.samples_in_anon_exec > 0 {
                warnings.push(format!(
                    "pid {pid}: {} samples in anonymous executable memory and no jitdump or perf map: they stay unnamed ({})",
                    pr.samples_in_anon_exec,
                    pr.reason.clone().unwrap_or_default()
                ));
            }
            return None;
        }
    };
    pr.perf_map = Some(map_path.display().to_string());
    let loaded = match profkit_jit::discovery::load_perf_map(&map_path, search.any_map_owner) {
        Ok(l) => l,
        Err(e) => {
            pr.status = "perf map not read".into();
            pr.reason = Some(e.clone());
            warnings.push(format!("pid {pid}: {e}"));
            return None;
        }
    };
    if loaded.bad_lines > 0 {
        warnings.push(format!(
            "pid {pid}: {}: {} lines are not `START SIZE name`",
            map_path.display(),
            loaded.bad_lines
        ));
    }
    let after_mapping = |start: u64, end: u64| {
        facts
            .anon_times
            .iter()
            .filter(|&&(a, b, _)| a < end.max(start + 1) && start < b)
            .map(|&(_, _, t)| t.saturating_add(1))
            .max()
            .unwrap_or(0)
    };
    let image = dump::from_perf_map(
        &loaded,
        u32::try_from(pid).unwrap_or(0),
        machine,
        after_mapping,
    );
    pr.reason = Some(
        "no jitdump; the perf map's functions are in the ELFs (no code bytes: their .text is zeros)"
            .into(),
    );
    Some((image, "perf map injected"))
}

/// Builds and writes the ELFs of one process and queues its MMAP2s and build ids.
#[allow(clippy::too_many_arguments)]
fn inject_process(
    image: &JitImage,
    pid: i32,
    facts: &ProcFacts,
    elf_dir: &Path,
    out: &Output,
    attr: &profkit_perf::Attr,
    endian: profkit_perf::Endian,
    pr: &mut ProcessReport,
    inserts: &mut Vec<Insert>,
    build_ids: &mut Vec<BuildIdEntry>,
    warnings: &mut Vec<String>,
) -> Result<(), Error> {
    let regions = image.map.regions();
    // What is placed: a function with code gets its size; one without (a producer that does
    // not write code) is zero-filled, up to CODELESS_MAX each and a budget in all, so the
    // ELFs stay proportional to the dump.
    let mut budget = (image.byte_len() as u64).saturating_mul(4).max(64 << 20);
    let (mut codeless, mut dropped) = (0u64, 0u64);
    let spans: Vec<Span> = regions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let size = match image.code(i) {
                Some(_) => r.size,
                None if r.size == 0 => 0,
                None => {
                    let s = r.size.min(CODELESS_MAX);
                    if s <= budget {
                        budget -= s;
                        codeless += 1;
                        s
                    } else {
                        dropped += 1;
                        0
                    }
                }
            };
            Span::of(r, size)
        })
        .collect();
    if codeless > 0 {
        warnings.push(format!(
            "{}: {codeless} functions without code bytes: their .text is zeros",
            image.path.display()
        ));
    }
    if dropped > 0 {
        warnings.push(format!(
            "{}: {dropped} functions without code bytes left out (over the zero-fill budget)",
            image.path.display()
        ));
    }
    let mut boundaries: Vec<u64> = facts.maps.iter().flat_map(|&(a, b)| [a, b]).collect();
    boundaries.sort_unstable();
    boundaries.dedup();
    let lay = layout::layout(&spans, &boundaries);
    if lay.elfs.iter().any(|e| e.overlapping) {
        warnings.push(format!(
            "{}: addresses reused more than {} times: the last ELF holds overlapping functions and no unwind tables",
            image.path.display(),
            layout::LAYER_MAX
        ));
    }

    // Address ranges the unwind maps must avoid: every recorded mapping and every run.
    let mut occupied: Vec<(u64, u64)> = facts.maps.clone();
    for e in &lay.elfs {
        occupied.extend(e.runs.iter().map(|r| (r.start, r.end)));
    }

    let machine = match u16::try_from(image.elf_mach) {
        Ok(0) | Err(_) => {
            warnings.push(format!(
                "{}: elf_mach {} is not an ELF machine; writing EM_X86_64",
                image.path.display(),
                image.elf_mach
            ));
            object::elf::EM_X86_64
        }
        Ok(m) => m,
    };
    let path_of = |k: usize| elf_dir.join(format!("profkit-jit-{pid}-{k}.so"));
    let mut run_offsets: Vec<Vec<u64>> = Vec::with_capacity(lay.elfs.len());
    // Each ELF's path, device major and minor, inode (what the MMAP2s name).
    let mut files: Vec<(PathBuf, u64, u64, u64)> = Vec::new();
    let mut unwind_maps: Vec<Option<(u64, u64)>> = Vec::new();
    for (k, e) in lay.elfs.iter().enumerate() {
        let funcs: Vec<ElfFunc<'_>> = e
            .funcs
            .iter()
            .filter_map(|&i| {
                let r = regions.get(i)?;
                Some(ElfFunc {
                    name: &r.name,
                    start: r.start,
                    size: spans.get(i)?.size,
                    code: image.code(i),
                    lines: r.debug.as_ref(),
                    eh_frame: r
                        .unwind
                        .as_ref()
                        .filter(|_| !e.overlapping)
                        .map(|u| u.eh_frame.as_slice()),
                })
            })
            .collect();
        let spec = ElfSpec {
            machine,
            big_endian: image.big_endian,
            funcs,
            runs: e.runs.clone(),
            name: image.path.display().to_string(),
            seed: (u64::from(image.pid) << 32) ^ (k as u64),
        };
        let mut placed: Option<(u64, u64)> = None;
        let built = elf::build(&spec, |o| {
            let len = o.unwind_end.div_ceil(PAGE) * PAGE;
            let below = e
                .runs
                .iter()
                .zip(&o.runs)
                .map(|(r, &off)| r.start.saturating_sub(off))
                .min()?;
            let at = free_below(&occupied, below, len)?;
            placed = Some((at, o.unwind_end));
            Some(at)
        })
        .map_err(|m| err(format!("{}: {m}", path_of(k).display())))?;
        if let Some((at, len)) = placed.filter(|_| built.unwind_at.is_some()) {
            occupied.push((at, at + len));
        } else if built.offsets.has_fdes {
            warnings.push(format!(
                "{}: no free address range below its code for the unwind tables; perf unwinds its code by frame pointer",
                path_of(k).display()
            ));
        }
        let path = path_of(k);
        // Staged: the temporary file's inode is the name's after the commit's rename.
        let meta = out
            .create_file_beside(&path)
            .and_then(|mut f| {
                f.write_all(&built.bytes)?;
                f.metadata()
            })
            .map_err(|m| err(format!("{}: {m}", path.display())))?;
        let dev = meta.dev();
        let maj = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let min = (dev & 0xff) | ((dev >> 12) & !0xff);
        files.push((path.clone(), maj, min, meta.ino()));
        unwind_maps.push(built.unwind_at.zip(placed.map(|p| p.1)));
        build_ids.push(BuildIdEntry {
            pid: -1,
            misc: MISC_USER,
            build_id: built.build_id.to_vec(),
            path: path.display().to_string(),
        });
        pr.elfs.push(ElfReport {
            path: path.display().to_string(),
            layer: e.layer,
            functions: e.funcs.len(),
            runs: e.runs.len(),
            range: (
                format!("{:#x}", e.runs.first().map_or(0, |r| r.start)),
                format!("{:#x}", e.runs.last().map_or(0, |r| r.end)),
            ),
            bytes: built.bytes.len() as u64,
            build_id: built.build_id.iter().map(|b| format!("{b:02x}")).collect(),
            fdes: built.fdes,
            line_rows: built.line_rows,
            unwind_map: built.unwind_at.map(|a| format!("{a:#x}")),
        });
        pr.functions += e.funcs.len();
        run_offsets.push(built.offsets.runs.clone());
    }

    let maps = plan::plan(&spans, &lay, &run_offsets);
    let id = attr.ids.first().copied().unwrap_or(0);
    let upid = pid as u32;
    let mut first_time: BTreeMap<usize, (u64, u32)> = BTreeMap::new();
    for m in &maps {
        first_time.entry(m.elf).or_insert((m.time, m.tid));
    }
    let mut push = |time: u64,
                    tid: u32,
                    elf: usize,
                    start: u64,
                    len: u64,
                    pgoff: u64,
                    prot: u32|
     -> Result<(), Error> {
        let Some((path, maj, min, ino)) = files.get(elf) else {
            return Ok(());
        };
        let rec = Mmap2 {
            pid: upid,
            tid,
            start,
            len,
            pgoff,
            maj: *maj as u32,
            min: *min as u32,
            ino: *ino,
            ino_generation: 0,
            prot,
            flags: MAP_PRIVATE,
            path: path.display().to_string(),
        }
        .record(
            MISC_USER,
            attr,
            &SampleId {
                pid: upid,
                tid,
                time,
                id,
                ..SampleId::default()
            },
            endian,
        )
        .map_err(|e| err(e.to_string()))?;
        inserts.push(Insert { time, record: rec });
        pr.mmap2 += 1;
        Ok(())
    };
    // The unwind maps first (same time as the ELF's first mapping, inserted before it).
    for (&elf, &(time, tid)) in &first_time {
        if let Some(Some((at, len))) = unwind_maps.get(elf) {
            push(time, tid, elf, *at, *len, 0, PROT_R)?;
        }
    }
    for m in &maps {
        push(m.time, m.tid, m.elf, m.start, m.len, m.pgoff, PROT_RX)?;
    }
    Ok(())
}

/// The highest page-aligned address `a` with `a + len <= below` such that `[a, a + len)` meets
/// none of `occupied`, at most [`UNWIND_SEARCH`] below `below`.
fn free_below(occupied: &[(u64, u64)], below: u64, len: u64) -> Option<u64> {
    let floor = below.saturating_sub(UNWIND_SEARCH).max(PAGE);
    // Disjoint, sorted intervals.
    let mut v: Vec<(u64, u64)> = occupied.iter().copied().filter(|&(s, e)| s < e).collect();
    v.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut top = below;
    loop {
        let a = top.checked_sub(len)? / PAGE * PAGE;
        if a < floor {
            return None;
        }
        let end = a + len;
        // The last interval starting before `end`: it meets [a, end) when it ends after `a`.
        let k = merged.partition_point(|&(s, _)| s < end);
        match k.checked_sub(1).and_then(|k| merged.get(k)) {
            Some(&(s, e)) if e > a => top = s,
            _ => return Some(a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_range_below_code() {
        let occ = [(0x10_0000, 0x20_0000), (0x9000, 0xa000)];
        assert_eq!(free_below(&occ, 0x30_0000, 0x2000), Some(0x2f_e000));
        assert_eq!(free_below(&occ, 0x20_1000, 0x2000), Some(0xf_e000));
        assert_eq!(free_below(&occ, 0xa800, 0x1000), Some(0x8000));
        assert_eq!(free_below(&occ, 0x2000, 0x4000), None);
        assert_eq!(
            default_elf_dir(Path::new("/x/out.data")),
            PathBuf::from("/x/out.data-jit")
        );
    }
}
