//! The validator: spec violations (errors) and known producer quirks (warnings).
//!
//! Every [`Finding`] has a stable kebab-case `code` (listed in [`codes`]), a severity, the
//! byte offset and record index it is about, and a message that names the producer when the
//! problem is a known quirk (V8's +0x40 line-address bias and corrupt DEBUG_INFO file names,
//! LLVM's `vma = 0`, CPython's `elf_mach = 0` and rounded unwinding `mapped_size`, …).
//! Address reuse without MOVE is normal (V8 after GC) and is not a finding; `Summary` counts it.

use std::collections::{BTreeSet, HashMap};
use std::io::BufRead;

pub use profkit_common::{Finding, Findings, Severity, Validation};

mod debug_info;

use crate::error::{Error, Truncation};
use crate::lines::{BiasDecision, PlacedTable, TableSpan};
use crate::raw::{FILE_HEADER_SIZE, FLAG_ARCH_TIMESTAMP, TIER_COLORS};
use crate::read::{
    all_zero, CodeLoad, DebugInfo, DebugInfo2, DebugWalkEnd, Header, JitDump, RawRecord, Record,
    RecordSource, StreamRecords,
};
use profkit_common::finding::MAX_PER_CODE;

/// Every finding code, with its severity and a one-line description.
pub mod codes {
    use super::Severity::{self, Error as E, Warning as W};

    /// `(code, severity, description)` for every code the validator emits, besides the two
    /// every format shares ([`profkit_common::finding::COMMON_CODES`]: `truncated`,
    /// `findings-capped`).
    pub const ALL: profkit_common::finding::CodeTable = &[
        ("header-invalid", E, "the file header cannot be decoded (magic, size)"),
        ("unsupported-version", E, "header version is not 1 (Mono once wrote 2; perf rejects it)"),
        ("unknown-flags", E, "header flags other than bit 0 (LLVM ORC left them uninitialized; perf rejects them)"),
        ("arch-timestamp", W, "ARCH_TIMESTAMP flag: timestamps are TSC ticks, perf needs time conversion data"),
        ("header-pad-nonzero", W, "pad1 is not zero (V8 writes 0xDEADBEEF, CPython <= 3.13 garbage)"),
        ("elf-mach-zero", W, "elf_mach is 0 (CPython 3.13.0)"),
        ("header-size-extended", W, "header total_size > 40 (older perf misparses it)"),
        ("header-timestamp-clock", W, "header timestamp looks like wall-clock microseconds while records use CLOCK_MONOTONIC (V8, CPython)"),
        ("record-size-invalid", E, "record total_size below the 16-byte record header"),
        ("record-malformed", E, "a record's body does not match its layout"),
        ("unknown-record-type", W, "record id not defined by the spec or the extension records"),
        ("timestamp-backwards", W, "a record's timestamp is earlier than the previous record's"),
        ("record-after-close", W, "records after JIT_CODE_CLOSE"),
        ("name-not-utf8", E, "a name or path is not valid UTF-8"),
        ("name-empty", W, "a LOAD has an empty function name"),
        ("load-without-code", W, "a LOAD carries no code bytes (perf's JVMTI agent, .NET stubs)"),
        ("load-trailing-bytes", W, "bytes after a LOAD's code"),
        ("vma-zero", W, "LOAD vma is 0 (LLVM's PerfJITEventListener); consumers use code_addr"),
        ("code-range-overflow", E, "code_addr + code_size overflows"),
        ("duplicate-code-index", E, "two LOADs share a code_index"),
        ("pid-mismatch", W, "a LOAD's pid differs from the header's pid"),
        ("pending-without-load", E, "DEBUG_INFO / UNWINDING_INFO / DEBUG_INFO2 / JIT_TIER not followed by a matching LOAD"),
        ("debug-info-addr-mismatch", E, "DEBUG_INFO code_addr differs from the next LOAD's code_addr"),
        ("debug-info-corrupt", E, "DEBUG_INFO entries do not walk exactly to the record's end or hold garbage file names (V8 in Node 20)"),
        ("debug-info-address-bias-0x40", W, "DEBUG_INFO addresses are code address + 0x40 (V8, LLVM: ELF header size)"),
        ("debug-info-address-bias-0x34", W, "DEBUG_INFO addresses are code address + 0x34 (V8, LLVM on 32-bit)"),
        ("debug-info-out-of-range", E, "DEBUG_INFO entry addresses outside the function's code"),
        ("debug-info-before-function", E, "DEBUG_INFO's first entry is just before the function's code (Erlang/OTP BeamAsm: inside its -CodeInfoPrologue)"),
        ("debug-info-end-terminator", W, "DEBUG_INFO tables end with an entry at the code's end, line 0 (Erlang/OTP BeamAsm, QEMU: a deliberate terminator, not a line)"),
        ("debug-info-line-zero", W, "DEBUG_INFO line 0 (lines are 1-based)"),
        ("debug-info-empty", W, "DEBUG_INFO with no entries"),
        ("unwinding-mapped-size", W, "UNWINDING_INFO mapped_size is neither 0 nor unwind_data_size (CPython rounds it up to 16)"),
        ("unwinding-no-eh-frame-hdr", W, "UNWINDING_INFO without .eh_frame_hdr (perf then keeps it pending for the next LOAD)"),
        ("unwinding-hdr-first", W, ".eh_frame_hdr stored before .eh_frame (the spec text's order; perf and producers put it last)"),
        ("unwinding-bad-eh-frame-hdr", E, ".eh_frame_hdr does not start with version 1"),
        ("padding-nonzero", W, "padding bytes that are not zero"),
        ("move-before-load", E, "MOVE of a code_index no earlier LOAD emitted"),
        ("move-size-changed", E, "MOVE changes the code size"),
        ("move-old-addr-mismatch", W, "MOVE old_code_addr is not where that code was"),
        ("debug-info2-list-size", E, "DEBUG_INFO2 string list size is not a multiple of 4 or has non-zero padding"),
        ("debug-info2-string-count", E, "DEBUG_INFO2 string count does not match the strings in the list"),
        ("debug-info2-index", E, "DEBUG_INFO2 index outside its list"),
        ("debug-info2-no-function", E, "DEBUG_INFO2 without the outer function record"),
        ("debug-info2-depth", E, "DEBUG_INFO2 inline depth jumps by more than 1 (or the first is not 0)"),
        ("debug-info2-range-count", E, "DEBUG_INFO2 range counts do not add up (or an inline call has none)"),
        ("debug-info2-out-of-range", E, "DEBUG_INFO2 range or line offset outside the LOAD's code"),
        ("debug-info2-overlap", E, "DEBUG_INFO2 ranges of sibling inline calls overlap"),
        ("debug-info2-size", E, "DEBUG_INFO2 total_size is not the sum of its parts"),
        ("jit-tier-color", E, "JIT_TIER colour index past the 14-colour list"),
        ("jit-tier-flags", W, "JIT_TIER flags other than bit 0"),
        ("extension-padding", W, "JIT_TIER / EMBEDDED_SOURCE_FILE total_size is not a multiple of 8"),
        ("embedded-source-path-size", E, "EMBEDDED_SOURCE_FILE path_size is not a multiple of 4"),
        ("embedded-source-flags", W, "EMBEDDED_SOURCE_FILE flags are not 0"),
        ("embedded-source-unreferenced", W, "EMBEDDED_SOURCE_FILE path is not used by any debug info"),
        ("perf-map-malformed-line", E, "a perf map line is not `START SIZE name`"),
        ("perf-map-zero-size", W, "a perf map entry with size 0"),
        ("perf-map-address-reused", W, "perf map addresses listed more than once: consumers cannot tell which entry was live (V8 reuses addresses after GC)"),
    ];

    /// The severity of `code` (this table's or a common code's), if it exists.
    pub fn severity(code: &str) -> Option<Severity> {
        profkit_common::finding::severity_in(ALL, code)
    }
}

/// Validates a whole jitdump in memory.
pub fn validate(data: &[u8]) -> Validation {
    match JitDump::parse(data) {
        Ok(dump) => validate_records(Ok(&mut dump.source())),
        Err(e) => validate_records(Err(e)),
    }
}

/// Validates a jitdump read as a stream (a gzip file, a pipe), one record in memory at a
/// time: the same findings as [`validate`] on the same bytes, the offsets in the stream (a
/// stream that fails is cut where it fails).
pub fn validate_stream(r: impl BufRead) -> Validation {
    match StreamRecords::new(r) {
        Ok(mut records) => validate_records(Ok(&mut records)),
        Err(e) => validate_records(Err(e)),
    }
}

/// Validates the records of a dump whose header was read, or reports the header's error
/// (`header-invalid`).
fn validate_records(opened: core::result::Result<&mut dyn RecordSource, Error>) -> Validation {
    let mut v = Validator::new();
    match opened {
        Ok(records) => v.run(records),
        Err(e) => v.push_error_finding("header-invalid", &e),
    }
    v.finish()
}

#[derive(Debug)]
struct Pending<T> {
    index: u64,
    offset: u64,
    value: T,
}

#[derive(Debug, Clone, Copy)]
struct DebugPending {
    code_addr: u64,
    span: TableSpan,
    corrupt: bool,
}

#[derive(Debug, Clone)]
struct Di2Pending {
    max_range_end: u64,
    max_line_offset: Option<u32>,
}

/// What the bias decision and the range checks gather over the dump (see [`crate::lines`]).
#[derive(Debug, Default)]
struct BiasStats {
    decision: BiasDecision,
    /// The first DEBUG_INFO placed: (index, offset).
    first: Option<(u64, u64)>,
    /// The first DEBUG_INFO that ends with a terminator: (index, offset).
    first_terminator: Option<(u64, u64)>,
    /// Tables that do not fit their code unbiased, the first [`MAX_PER_CODE`] of each kind
    /// kept: (index, offset, table).
    out_of_range: Vec<(u64, u64, PlacedTable)>,
    /// How many did not fit, kept or not: (starting just before the code, other).
    unfit: (u64, u64),
}

/// Walks a dump, pushing findings into a [`Findings`] collector.
#[derive(Debug)]
struct Validator {
    findings: Findings,
    records: u64,
    truncation: Option<Truncation>,
    header_pid: u32,
    last_timestamp: Option<u64>,
    closed_at: Option<u64>,
    pending_debug: Option<Pending<DebugPending>>,
    pending_unwind: Option<Pending<()>>,
    pending_di2: Option<Pending<Di2Pending>>,
    pending_tiers: HashMap<u64, Pending<()>>,
    code_by_index: HashMap<u64, (u64, u64)>,
    debug_files: BTreeSet<Vec<u8>>,
    embedded: Vec<(u64, u64, Vec<u8>)>,
    bias: BiasStats,
}

/// Holds `value` in `slot` as the pending `what` of record `raw`, waiting for its LOAD; the
/// pending record it replaces never met one and is reported.
fn hold<T>(
    findings: &mut Findings,
    slot: &mut Option<Pending<T>>,
    what: &str,
    raw: &RawRecord<'_>,
    value: T,
) {
    let held = Pending {
        index: raw.index as u64,
        offset: raw.offset,
        value,
    };
    if let Some(p) = slot.replace(held) {
        findings.push(
            "pending-without-load",
            p.offset,
            Some(p.index),
            format!(
                "{what} is replaced by record #{} before any LOAD",
                raw.index
            ),
        );
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn valid_name(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok()
}

impl Validator {
    fn new() -> Validator {
        Validator {
            findings: Findings::new(codes::ALL),
            records: 0,
            truncation: None,
            header_pid: 0,
            last_timestamp: None,
            closed_at: None,
            pending_debug: None,
            pending_unwind: None,
            pending_di2: None,
            pending_tiers: HashMap::new(),
            code_by_index: HashMap::new(),
            debug_files: BTreeSet::new(),
            embedded: Vec::new(),
            bias: BiasStats::default(),
        }
    }

    fn push(&mut self, code: &'static str, offset: u64, record: Option<u64>, message: String) {
        self.findings.push(code, offset, record, message);
    }

    fn at(&mut self, raw: &RawRecord<'_>, code: &'static str, message: String) {
        self.push(code, raw.offset, Some(raw.index as u64), message);
    }

    /// Reports `name` (`what` says what it names) when it is not UTF-8.
    fn check_utf8(&mut self, raw: &RawRecord<'_>, what: &str, name: &[u8]) {
        if !valid_name(name) {
            self.at(
                raw,
                "name-not-utf8",
                format!("{what} {:?} is not UTF-8", lossy(name)),
            );
        }
    }

    fn push_error_finding(&mut self, code: &'static str, e: &Error) {
        self.push(code, e.offset, e.record, e.message.clone());
    }

    fn finish(self) -> Validation {
        self.findings.finish(self.records, self.truncation)
    }

    fn run(&mut self, records: &mut dyn RecordSource) {
        self.check_header(&records.header());
        let mut first_ts = None;
        while let Some(raw) = records.next() {
            let raw = match raw {
                Ok(r) => r,
                Err(e) => {
                    self.push_error_finding("record-size-invalid", &e);
                    break;
                }
            };
            self.records += 1;
            first_ts.get_or_insert(raw.timestamp);
            self.check_record(&raw);
        }
        // The cut becomes the common `truncated` error in `finish`.
        self.truncation = records.truncation().cloned();
        self.check_header_clock(&records.header(), first_ts);
        self.flush_pending(None);
        self.report_bias();
        self.check_embedded_references();
    }

    fn check_header(&mut self, h: &Header<'_>) {
        self.header_pid = h.pid;
        if h.version != crate::raw::VERSION {
            self.push(
                "unsupported-version",
                4,
                None,
                format!("header version {} (the spec defines 1; Mono once wrote 2 and perf rejected it)", h.version),
            );
        }
        if h.flags & !FLAG_ARCH_TIMESTAMP != 0 {
            self.push(
                "unknown-flags",
                32,
                None,
                format!(
                    "header flags {:#x} set bits other than ARCH_TIMESTAMP (LLVM ORC's PerfSupportPlugin left flags uninitialized before 2026); perf rejects the file",
                    h.flags
                ),
            );
        }
        if h.flags & FLAG_ARCH_TIMESTAMP != 0 {
            self.push(
                "arch-timestamp",
                32,
                None,
                "ARCH_TIMESTAMP is set: timestamps are architecture ticks (TSC); perf needs time conversion data recorded in perf.data".into(),
            );
        }
        if h.pad1 != 0 {
            let who = if h.pad1 == 0xDEAD_BEEF {
                " (V8 writes 0xdeadbeef)"
            } else {
                " (CPython <= 3.13 leaves it uninitialized)"
            };
            self.push(
                "header-pad-nonzero",
                16,
                None,
                format!("pad1 is {:#x}, expected 0{who}", h.pad1),
            );
        }
        if h.elf_mach == 0 {
            self.push(
                "elf-mach-zero",
                12,
                None,
                "elf_mach is 0 (EM_NONE); CPython 3.13.0 writes this".into(),
            );
        }
        if h.total_size as usize > FILE_HEADER_SIZE {
            self.push(
                "header-size-extended",
                8,
                None,
                format!(
                    "header total_size {} > 40: the {} extra bytes are skipped (perf before 2023 misparsed such files)",
                    h.total_size,
                    h.total_size as usize - FILE_HEADER_SIZE
                ),
            );
        }
    }

    fn check_header_clock(&mut self, h: &Header<'_>, first_ts: Option<u64>) {
        // Wall-clock microseconds between 2001 and 2100.
        const WALL_US: core::ops::Range<u64> = 978_307_200_000_000..4_102_444_800_000_000;
        let Some(first) = first_ts else { return };
        if WALL_US.contains(&h.timestamp) && first.abs_diff(h.timestamp) > 86_400_000_000_000 {
            self.push(
                "header-timestamp-clock",
                24,
                None,
                format!(
                    "header timestamp {} looks like wall-clock microseconds while the first record's is {} (V8 and CPython write gettimeofday µs here; records use CLOCK_MONOTONIC ns)",
                    h.timestamp, first
                ),
            );
        }
    }

    fn check_record(&mut self, raw: &RawRecord<'_>) {
        if let Some(prev) = self.last_timestamp {
            if raw.timestamp < prev {
                self.at(
                    raw,
                    "timestamp-backwards",
                    format!(
                        "{} timestamp {} is before the previous record's {}",
                        raw.record_type, raw.timestamp, prev
                    ),
                );
            }
        }
        self.last_timestamp = Some(raw.timestamp);
        if let Some(close) = self.closed_at {
            self.at(
                raw,
                "record-after-close",
                format!("{} after JIT_CODE_CLOSE (record #{close})", raw.record_type),
            );
        }
        let record = match raw.parse() {
            Ok(r) => r,
            Err(e) => {
                self.push_error_finding("record-malformed", &e);
                return;
            }
        };
        match record {
            Record::CodeLoad(load) => self.check_load(raw, &load),
            Record::CodeMove(m) => {
                match self.code_by_index.get(&m.code_index).copied() {
                    None => self.at(
                        raw,
                        "move-before-load",
                        format!(
                            "JIT_CODE_MOVE of code_index {} before any LOAD with that index",
                            m.code_index
                        ),
                    ),
                    Some((addr, size)) => {
                        if size != m.code_size {
                            self.at(
                            raw,
                            "move-size-changed",
                            format!("JIT_CODE_MOVE code_size {} but the LOAD of code_index {} had {}", m.code_size, m.code_index, size),
                        );
                        }
                        if addr != m.old_code_addr {
                            self.at(
                            raw,
                            "move-old-addr-mismatch",
                            format!("JIT_CODE_MOVE old_code_addr {:#x} but code_index {} is at {:#x}", m.old_code_addr, m.code_index, addr),
                        );
                        }
                        self.code_by_index
                            .insert(m.code_index, (m.new_code_addr, size));
                    }
                }
            }
            Record::DebugInfo(d) => self.check_debug_info(raw, &d),
            Record::CodeClose => {
                self.flush_pending(Some(raw));
                self.closed_at = Some(raw.index as u64);
            }
            Record::UnwindingInfo(u) => {
                if u.mapped_size != 0 && u.mapped_size != u.unwind_data_size {
                    self.at(
                        raw,
                        "unwinding-mapped-size",
                        format!(
                            "mapped_size {} is neither 0 nor unwind_data_size {}{}",
                            u.mapped_size,
                            u.unwind_data_size,
                            if u.mapped_size == u.unwind_data_size.next_multiple_of(16) {
                                " (CPython rounds it up to 16)"
                            } else {
                                ""
                            }
                        ),
                    );
                }
                let hdr = u.eh_frame_hdr();
                if hdr.is_empty() {
                    self.at(raw, "unwinding-no-eh-frame-hdr", "eh_frame_hdr_size is 0: perf keeps this record pending and may attach it to a later LOAD".into());
                } else if hdr.first() != Some(&1) {
                    if u.unwind_data.first() == Some(&1) {
                        self.at(raw, "unwinding-hdr-first", ".eh_frame_hdr (version 1) is at the start of the data: the spec text's order, but perf and every producer put it after .eh_frame".into());
                    } else {
                        self.at(
                            raw,
                            "unwinding-bad-eh-frame-hdr",
                            format!(
                                ".eh_frame_hdr starts with version {}, expected 1",
                                hdr.first().copied().unwrap_or(0)
                            ),
                        );
                    }
                }
                if !all_zero(u.padding) {
                    self.at(
                        raw,
                        "padding-nonzero",
                        "UNWINDING_INFO padding after the data is not zero".into(),
                    );
                }
                hold(
                    &mut self.findings,
                    &mut self.pending_unwind,
                    "JIT_CODE_UNWINDING_INFO",
                    raw,
                    (),
                );
            }
            Record::DebugInfo2(d) => self.check_debug_info2(raw, &d),
            Record::JitTier(t) => {
                if t.color as usize >= TIER_COLORS.len() {
                    self.at(
                        raw,
                        "jit-tier-color",
                        format!(
                            "colour index {} is past the {}-colour list (shown as grey)",
                            t.color,
                            TIER_COLORS.len()
                        ),
                    );
                }
                if t.flags & !1 != 0 {
                    self.at(
                        raw,
                        "jit-tier-flags",
                        format!("flags {:#x} set bits other than bit 0", t.flags),
                    );
                }
                self.check_utf8(raw, "tier name", t.name);
                self.check_extension_padding(raw, t.padding);
                if let Some(p) = self.pending_tiers.insert(
                    t.code_addr,
                    Pending {
                        index: raw.index as u64,
                        offset: raw.offset,
                        value: (),
                    },
                ) {
                    self.push("pending-without-load", p.offset, Some(p.index), format!("SAMPLY_JIT_TIER for {:#x} is replaced by record #{} before a LOAD at that address", t.code_addr, raw.index));
                }
            }
            Record::EmbeddedSourceFile(s) => {
                if s.path_size % 4 != 0 {
                    self.at(
                        raw,
                        "embedded-source-path-size",
                        format!("path_size {} is not a multiple of 4", s.path_size),
                    );
                }
                if s.flags != 0 {
                    self.at(
                        raw,
                        "embedded-source-flags",
                        format!("flags {:#x}, expected 0", s.flags),
                    );
                }
                self.check_utf8(raw, "embedded source path", s.path);
                if !all_zero(s.path_padding) {
                    self.at(
                        raw,
                        "padding-nonzero",
                        "EMBEDDED_SOURCE_FILE path padding is not zero".into(),
                    );
                }
                self.check_extension_padding(raw, s.padding);
                self.embedded
                    .push((raw.index as u64, raw.offset, s.path.to_vec()));
            }
            _ => {
                let hint = if (5..0x1000).contains(&raw.record_type.0) {
                    " (perf ignores ids >= 5 with a warning)"
                } else {
                    ""
                };
                self.at(
                    raw,
                    "unknown-record-type",
                    format!(
                        "record id {} is not a known record type; skipped by its total_size{hint}",
                        raw.record_type.0
                    ),
                );
            }
        }
    }

    fn check_extension_padding(&mut self, raw: &RawRecord<'_>, padding: &[u8]) {
        if !raw.total_size().is_multiple_of(8) {
            self.at(
                raw,
                "extension-padding",
                format!(
                    "{} total_size {} is not a multiple of 8",
                    raw.record_type,
                    raw.total_size()
                ),
            );
        }
        if !all_zero(padding) {
            self.at(
                raw,
                "padding-nonzero",
                format!("{} padding is not zero", raw.record_type),
            );
        }
    }

    fn check_load(&mut self, raw: &RawRecord<'_>, load: &CodeLoad<'_>) {
        if load.name.is_empty() {
            self.at(
                raw,
                "name-empty",
                "JIT_CODE_LOAD has an empty function name".into(),
            );
        } else {
            self.check_utf8(raw, "JIT_CODE_LOAD name", load.name);
        }
        if load.code.is_none() {
            self.at(raw, "load-without-code", format!("JIT_CODE_LOAD of {} declares code_size {} but stores no code bytes (perf's JVMTI agent and .NET stubs do this)", load.name_lossy(), load.code_size));
        }
        if !load.trailing.is_empty() {
            self.at(
                raw,
                "load-trailing-bytes",
                format!("{} bytes after the code", load.trailing.len()),
            );
        }
        if load.vma == 0 && load.code_addr != 0 {
            self.at(raw, "vma-zero", "JIT_CODE_LOAD vma is 0 (LLVM's PerfJITEventListener writes this); consumers use code_addr".into());
        }
        if load.code_addr.checked_add(load.code_size).is_none() {
            self.at(
                raw,
                "code-range-overflow",
                format!(
                    "code_addr {:#x} + code_size {:#x} overflows",
                    load.code_addr, load.code_size
                ),
            );
        }
        if load.pid != self.header_pid {
            self.at(
                raw,
                "pid-mismatch",
                format!(
                    "JIT_CODE_LOAD pid {} differs from the header's pid {}",
                    load.pid, self.header_pid
                ),
            );
        }
        if self
            .code_by_index
            .insert(load.code_index, (load.code_addr, load.code_size))
            .is_some()
        {
            self.at(
                raw,
                "duplicate-code-index",
                format!("code_index {} was used by an earlier LOAD", load.code_index),
            );
        }
        if let Some(p) = self.pending_debug.take() {
            let d = p.value;
            if d.code_addr != load.code_addr {
                self.report_line_zero(p.index, p.offset, d.span.line_zero());
                self.push(
                    "debug-info-addr-mismatch",
                    p.offset,
                    Some(p.index),
                    format!(
                        "DEBUG_INFO code_addr {:#x} but the next LOAD (record #{}) is at {:#x}",
                        d.code_addr, raw.index, load.code_addr
                    ),
                );
            } else if !d.corrupt {
                self.account_bias(p.index, p.offset, d, load.code_addr, load.code_size);
            }
        }
        self.pending_unwind = None;
        if let Some(p) = self.pending_di2.take() {
            if p.value.max_range_end > load.code_size
                || p.value
                    .max_line_offset
                    .is_some_and(|o| u64::from(o) >= load.code_size.max(1))
            {
                self.push(
                    "debug-info2-out-of-range",
                    p.offset,
                    Some(p.index),
                    format!(
                        "ranges end at offset {} / lines reach offset {}, but the LOAD (record #{}) has code_size {}",
                        p.value.max_range_end,
                        p.value.max_line_offset.unwrap_or(0),
                        raw.index,
                        load.code_size
                    ),
                );
            }
        }
        self.pending_tiers.remove(&load.code_addr);
    }

    fn flush_pending(&mut self, close: Option<&RawRecord<'_>>) {
        let at = match close {
            Some(r) => format!("JIT_CODE_CLOSE (record #{})", r.index),
            None => "the end of the file".to_string(),
        };
        let mut left: Vec<(u64, u64, &str)> = Vec::new();
        if let Some(p) = self.pending_debug.take() {
            self.report_line_zero(p.index, p.offset, p.value.span.line_zero());
            left.push((p.offset, p.index, "JIT_CODE_DEBUG_INFO"));
        }
        if let Some(p) = self.pending_unwind.take() {
            left.push((p.offset, p.index, "JIT_CODE_UNWINDING_INFO"));
        }
        if let Some(p) = self.pending_di2.take() {
            left.push((p.offset, p.index, "SAMPLY_JIT_CODE_DEBUG_INFO2"));
        }
        for (_, p) in self.pending_tiers.drain() {
            left.push((p.offset, p.index, "SAMPLY_JIT_TIER"));
        }
        left.sort_unstable();
        for (offset, index, what) in left {
            self.push(
                "pending-without-load",
                offset,
                Some(index),
                format!("{what} is not followed by a matching JIT_CODE_LOAD before {at}"),
            );
        }
    }

    fn check_embedded_references(&mut self) {
        for (index, offset, path) in std::mem::take(&mut self.embedded) {
            if !self.debug_files.contains(&path) {
                self.push(
                    "embedded-source-unreferenced",
                    offset,
                    Some(index),
                    format!(
                        "embedded source {:?} is not named by any DEBUG_INFO or DEBUG_INFO2 file",
                        lossy(&path)
                    ),
                );
            }
        }
    }
}

/// The readable end of a file name whose start was overwritten: the bytes after the last
/// NUL or control character.
pub fn recovered_name_tail(field: &[u8]) -> String {
    // V8's freed name buffer has its first 16 bytes replaced by allocator pointers.
    let field = field.get(16..).filter(|t| !t.is_empty()).unwrap_or(field);
    let start = field
        .iter()
        .rposition(|&b| !(0x20..0x7f).contains(&b))
        .map_or(0, |p| p + 1);
    lossy(field.get(start..).unwrap_or(&[]))
}
