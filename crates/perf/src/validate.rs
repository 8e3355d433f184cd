//! The validator: what is wrong with a perf.data file, and what keeps its JIT frames from
//! being named.
//!
//! Every finding has a stable code from [`codes::ALL`] (documented in docs/perf.md). Findings
//! about records give the record's index in delivery (time) order; their offset is 0 when the
//! record came out of linux-perf-data's sorter (it does not keep file offsets). Framing errors
//! and the cut carry exact file offsets.

pub use profkit_common::{Finding, Findings, Severity, Validation};

use crate::error::Error;
use crate::raw::clock_name;
use crate::read::{Meta, PerfData};
use crate::scan::Scan;

/// Every finding code, with its severity and a one-line description.
pub mod codes {
    use super::Severity::{self, Error as E, Warning as W};

    /// `(code, severity, description)` for every code the validator emits, besides the two
    /// every format shares ([`profkit_common::finding::COMMON_CODES`]: `truncated`,
    /// `findings-capped`).
    pub const ALL: profkit_common::finding::CodeTable = &[
        ("header-invalid", E, "the file header, its attrs or the first records of a pipe cannot be decoded"),
        ("data-size-zero", E, "the header's data size is 0: perf record did not finish (killed); records were read to the end of the file and the feature sections are missing"),
        ("data-past-end", E, "the data section runs past the end of the file (a cut file); the feature sections are missing"),
        ("feature-dropped", E, "a feature section is out of bounds or malformed and was not used"),
        ("feature-malformed", E, "a feature section does not decode"),
        ("record-size-invalid", E, "a record's size cannot be right; the records after it are not read"),
        ("record-malformed", E, "a record's body does not hold the fields its type and attr ask for"),
        ("reader-error", E, "linux-perf-data stopped (a zstd block that does not inflate, an attr it cannot use)"),
        ("unknown-record-type", W, "a record type neither the kernel nor perf defines"),
        ("lost-events", W, "PERF_RECORD_LOST: the kernel dropped records (perf could not keep up: raise -m or lower -F)"),
        ("lost-samples", W, "PERF_RECORD_LOST_SAMPLES: the kernel dropped samples"),
        ("no-samples", W, "the file has no samples"),
        ("sample-without-time", W, "an attr's samples carry no time while the file has several attrs: their order cannot be restored"),
        ("attr-ids-missing", W, "several attrs without sample ids: records cannot be matched to their attr (linux-perf-data reads them all as attr 0)"),
        ("sample-read-format", W, "an attr has PERF_SAMPLE_READ: linux-perf-event-reader 0.10 swaps its group and non-group layouts, so the fields after it are read wrong"),
        ("jit-without-clockid", E, "recorded without -k (use_clockid) while a process wrote a jitdump: its timestamps (CLOCK_MONOTONIC) cannot be aligned with the samples (perf inject refuses it)"),
        ("jit-clock-mismatch", W, "a jitdump was written while the samples are on a clock other than CLOCK_MONOTONIC (-k mono is what jitdumps use)"),
        ("jitdump-pid-mismatch", W, "a jitdump marker whose file name pid is not the mapping process's (perf ignores it; samply uses it)"),
        ("anon-exec-without-jitdump", W, "a process with anonymous executable mappings (JIT code) and no jitdump marker: its JIT frames can only be named through /tmp/perf-<pid>.map"),
        ("stack-copy-full", W, "--call-graph dwarf samples whose stack copy is full: the stack was cut off and unwinding stops early (raise the dwarf stack size)"),
    ];

    /// The severity of `code` (this table's or a common code's), if it exists.
    pub fn severity(code: &str) -> Option<Severity> {
        profkit_common::finding::severity_in(ALL, code)
    }
}

/// Validates a whole perf.data file in memory.
pub fn validate(data: &[u8]) -> Validation {
    let mut f = Findings::new(codes::ALL);
    let pd = match PerfData::parse(data) {
        Ok(pd) => pd,
        Err(e) => {
            push_error(&mut f, "header-invalid", &e);
            return f.finish(0, None);
        }
    };
    let scan = match pd.events() {
        Ok(events) => Scan::of(events),
        Err(e) => {
            push_error(&mut f, "header-invalid", &e);
            return f.finish(0, None);
        }
    };
    check(&mut f, pd.meta(), &scan);
    let records = scan.events;
    f.finish(records, scan.truncation)
}

fn push_error(f: &mut Findings, code: &'static str, e: &Error) {
    f.push(code, e.offset, e.record, e.message.clone());
}

/// The checks, from metadata and a scan (for streams too).
pub fn check(f: &mut Findings, meta: &Meta, s: &Scan) {
    for p in &meta.problems {
        let code = if p.record.is_some() {
            "record-size-invalid"
        } else if p.known_offset() == Some(48) && meta.header.data.size == 0 {
            "data-size-zero"
        } else if p.known_offset() == Some(48) {
            "data-past-end"
        } else {
            "feature-dropped"
        };
        push_error(f, code, p);
    }
    for p in &meta.features.problems {
        f.push("feature-malformed", 0, None, p.clone());
    }
    // A framing error found while reading (pipe mode) rather than up front.
    if let Some(e) = &s.error {
        let code = if e.message.starts_with("linux-perf-data") {
            "reader-error"
        } else {
            "record-size-invalid"
        };
        if !meta.problems.contains(e) {
            push_error(f, code, e);
        }
    }
    for (i, m) in &s.malformed {
        f.push("record-malformed", 0, Some(*i), m.clone());
    }
    for (&ty, &(first, n)) in &s.unknown {
        f.push(
            "unknown-record-type",
            0,
            Some(first),
            format!("{} records of unknown type {ty}", n),
        );
    }
    if s.lost_records > 0 {
        let first = s.first_lost.map(|l| l.0);
        f.push(
            "lost-events",
            0,
            first,
            format!("{} LOST records: {} events lost", s.lost_records, s.lost),
        );
    }
    if s.lost_samples > 0 {
        f.push(
            "lost-samples",
            0,
            None,
            format!("{} samples lost (LOST_SAMPLES)", s.lost_samples),
        );
    }
    if s.samples() == 0 && s.truncation.is_none() && s.error.is_none() {
        f.push("no-samples", 0, None, "the recording has no samples");
    }
    let several = meta.attrs.len() > 1;
    for a in &meta.attrs {
        if several && !a.has_time() {
            f.push(
                "sample-without-time",
                meta.header.attrs.offset,
                None,
                format!("{} has no PERF_SAMPLE_TIME", a.display_name()),
            );
        }
        if a.has(1 << 4) {
            f.push(
                "sample-read-format",
                meta.header.attrs.offset,
                None,
                format!("{} samples have PERF_SAMPLE_READ", a.display_name()),
            );
        }
    }
    if several && meta.attrs.iter().all(|a| a.ids.is_empty()) {
        f.push(
            "attr-ids-missing",
            meta.header.attrs.offset,
            None,
            format!("{} attrs and no sample ids", meta.attrs.len()),
        );
    }
    // JIT: a jitdump needs the samples on CLOCK_MONOTONIC.
    let markers: Vec<_> = s.jit.markers().collect();
    if let Some(m) = markers.first() {
        match meta.clockid() {
            None => f.push(
                "jit-without-clockid",
                0,
                None,
                format!(
                    "{} was mapped but the recording has no use_clockid: record with `perf record -k 1`",
                    m.path
                ),
            ),
            Some(1) => {}
            Some(c) => f.push(
                "jit-clock-mismatch",
                0,
                None,
                format!(
                    "{} was mapped; samples are on {} ({c}), jitdumps on CLOCK_MONOTONIC unless their header says otherwise",
                    m.path,
                    clock_name(c)
                ),
            ),
        }
    }
    for m in &markers {
        if !m.pid_matches {
            f.push(
                "jitdump-pid-mismatch",
                0,
                None,
                format!(
                    "{} was mapped by pid {} (file name pid {}: its pid in its own pid namespace, when it ran in a container)",
                    m.path,
                    m.pid,
                    m.file_pid.map_or("-".to_string(), |p| p.to_string())
                ),
            );
        }
    }
    for p in s.jit_processes() {
        if p.anon_exec_mappings > 0 && p.jitdumps.is_empty() {
            f.push(
                "anon-exec-without-jitdump",
                0,
                None,
                format!(
                    "pid {}{} has {} anonymous executable mappings ({} bytes) and no jit-*.dump marker; only {} can name them",
                    p.pid,
                    p.comm.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
                    p.anon_exec_mappings,
                    p.anon_exec_bytes,
                    p.perf_map_path()
                ),
            );
        }
    }
    if s.stack_full > 0 {
        f.push(
            "stack-copy-full",
            0,
            None,
            format!(
                "{} of {} samples filled their stack copy",
                s.stack_full, s.stack_samples
            ),
        );
    }
}
