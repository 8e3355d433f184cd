//! The FDR block grammar (llvm's `BlockVerifier`) and other spec checks, with exact offsets.
//!
//! ```text
//! Unknown        -> BufferExtents | NewBuffer
//! BufferExtents  -> NewBuffer
//! NewBuffer      -> WallClockTime
//! WallClockTime  -> PIDEntry | NewCPUId
//! PIDEntry       -> NewCPUId
//! NewCPUId | TSCWrap | CustomEvent | TypedEvent
//!                -> NewCPUId | TSCWrap | CustomEvent | TypedEvent | Function | EndOfBuffer
//! Function | CallArg -> (the same set) | CallArg
//! EndOfBuffer    -> everything is ignored until the next NewBuffer
//! ```
//! A block starts at each NewBuffer (BufferExtents stands outside blocks) and must end in
//! EndOfBuffer, NewCPUId, TSCWrap, CustomEvent, TypedEvent, Function or CallArg.

use crate::error::Error;
use crate::raw::{MetadataKind, TraceType};
use crate::read::events::Trace;
use crate::read::fdr::{FdrEntry, FdrRecord, SkipKind};
use crate::read::header::FileHeader;

/// States of the block grammar (named as in llvm's BlockVerifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Before any record of a block.
    Unknown,
    /// After a BufferExtents.
    BufferExtents,
    /// After a NewBuffer.
    NewBuffer,
    /// After a WalltimeMarker.
    WallClockTime,
    /// After a Pid.
    PidEntry,
    /// After a NewCPUId.
    NewCpuId,
    /// After a TSCWrap.
    TscWrap,
    /// After a custom event.
    CustomEvent,
    /// After a typed event.
    TypedEvent,
    /// After a function record.
    Function,
    /// After a CallArgument.
    CallArg,
    /// After an EndOfBuffer.
    EndOfBuffer,
}

impl BlockState {
    /// The state a record moves to (`None` for unknown metadata kinds).
    pub fn of(record: &FdrRecord<'_>) -> Option<BlockState> {
        Some(match record {
            FdrRecord::Function { .. } => BlockState::Function,
            FdrRecord::NewBuffer { .. } => BlockState::NewBuffer,
            FdrRecord::EndOfBuffer => BlockState::EndOfBuffer,
            FdrRecord::NewCpuId { .. } => BlockState::NewCpuId,
            FdrRecord::TscWrap { .. } => BlockState::TscWrap,
            FdrRecord::WalltimeMarker { .. } => BlockState::WallClockTime,
            FdrRecord::CustomEvent { .. } => BlockState::CustomEvent,
            FdrRecord::CallArgument { .. } => BlockState::CallArg,
            FdrRecord::BufferExtents { .. } => BlockState::BufferExtents,
            FdrRecord::TypedEvent { .. } => BlockState::TypedEvent,
            FdrRecord::Pid { .. } => BlockState::PidEntry,
            FdrRecord::UnknownMetadata { .. } => return None,
        })
    }

    /// Whether the grammar allows `self -> to`.
    pub fn allows(self, to: BlockState) -> bool {
        use BlockState::*;
        let body = matches!(
            to,
            NewCpuId | TscWrap | CustomEvent | TypedEvent | Function | EndOfBuffer
        );
        match self {
            Unknown => matches!(to, BufferExtents | NewBuffer),
            BufferExtents => to == NewBuffer,
            NewBuffer => to == WallClockTime,
            WallClockTime => matches!(to, PidEntry | NewCpuId),
            PidEntry => to == NewCpuId,
            NewCpuId | TscWrap | CustomEvent | TypedEvent => body,
            Function | CallArg => body || to == CallArg,
            EndOfBuffer => true,
        }
    }

    /// Whether a block may end in this state.
    pub fn is_terminal(self) -> bool {
        use BlockState::*;
        matches!(
            self,
            EndOfBuffer | NewCpuId | TscWrap | CustomEvent | TypedEvent | Function | CallArg
        )
    }

    /// llvm's name for the state.
    pub fn name(self) -> &'static str {
        use BlockState::*;
        match self {
            Unknown => "Unknown",
            BufferExtents => "BufferExtents",
            NewBuffer => "NewBuffer",
            WallClockTime => "WallClockTime",
            PidEntry => "PIDEntry",
            NewCpuId => "NewCPUId",
            TscWrap => "TSCWrap",
            CustomEvent => "CustomEvent",
            TypedEvent => "TypedEvent",
            Function => "Function",
            CallArg => "CallArg",
            EndOfBuffer => "EndOfBuffer",
        }
    }
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Tolerated by readers but worth knowing (junk between buffers, records from a later version).
    Warning,
    /// A spec violation.
    Error,
}

/// One verifier finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Absolute byte offset of the offending record (or skipped bytes).
    pub offset: u64,
    /// Index of the offending record, when it is a record.
    pub record: Option<u64>,
    /// Stable short code (`grammar`, `terminal`, `truncated`, …).
    pub code: &'static str,
    /// Human-readable text.
    pub message: String,
}

/// What the verifier found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Findings in file order.
    pub findings: Vec<Finding>,
    /// Records read.
    pub records: u64,
    /// Blocks (NewBuffer records) seen.
    pub blocks: u64,
}

impl Report {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// Verifies an FDR trace (header checks, record kinds per version, block grammar, extents,
/// truncation). For basic traces it checks the records (kinds, arg payloads, truncation).
pub fn verify(trace: &Trace<'_>) -> Report {
    if trace.header.trace_type == TraceType::BASIC {
        return verify_basic(trace);
    }
    let header = trace.header;
    let mut r = Report::default();
    let mut state = BlockState::Unknown;
    let mut block_start: Option<(u64, u64)> = None;
    let mut block_failed = false;
    let push = |r: &mut Report, severity, offset, record, code, message: String| {
        r.findings.push(Finding {
            severity,
            offset,
            record,
            code,
            message,
        })
    };
    for entry in trace.fdr_records() {
        match entry {
            FdrEntry::Skip(s) => {
                if s.kind == SkipKind::Junk {
                    push(
                        &mut r,
                        Severity::Warning,
                        s.offset,
                        None,
                        "junk",
                        format!("{} bytes between buffers skipped", s.len),
                    );
                }
            }
            FdrEntry::Problem(e) => {
                let code = if e.is_truncation() {
                    "truncated"
                } else {
                    "invalid"
                };
                push(
                    &mut r,
                    Severity::Error,
                    e.offset().unwrap_or(0),
                    e.record(),
                    code,
                    e.to_string(),
                );
                state = BlockState::Unknown;
                block_start = None;
            }
            FdrEntry::Record(item) => {
                r.records += 1;
                let rec = &item.record;
                let at = (item.offset, item.index);
                // Per-version and per-kind checks.
                if let FdrRecord::Function { kind, .. } = rec {
                    if !kind.is_known() {
                        push(
                            &mut r,
                            Severity::Error,
                            at.0,
                            Some(at.1),
                            "function-kind",
                            format!("unknown function record kind {}", kind.0),
                        );
                    }
                }
                let version_note = match rec.metadata_kind() {
                    Some(MetadataKind::END_OF_BUFFER) if header.version >= 2 => Some((
                        Severity::Error,
                        "EndOfBuffer records are no longer supported starting version 2"
                            .to_string(),
                    )),
                    Some(MetadataKind::BUFFER_EXTENTS) if header.version < 2 => Some((
                        Severity::Warning,
                        "BufferExtents before version 2".to_string(),
                    )),
                    Some(MetadataKind::PID) if header.version < 3 => {
                        Some((Severity::Warning, "Pid record before version 3".to_string()))
                    }
                    Some(MetadataKind::TYPED_EVENT_MARKER) if header.version < 5 => Some((
                        Severity::Warning,
                        "TypedEventMarker before version 5".to_string(),
                    )),
                    Some(k) if !k.is_known() => Some((
                        Severity::Error,
                        format!("invalid metadata record kind {}", k.0),
                    )),
                    _ => None,
                };
                if let Some((sev, msg)) = version_note {
                    push(&mut r, sev, at.0, Some(at.1), "kind", msg);
                }
                let Some(to) = BlockState::of(rec) else {
                    continue;
                };
                // Block boundaries: BufferExtents and NewBuffer end the current block.
                if matches!(to, BlockState::BufferExtents | BlockState::NewBuffer)
                    && !(state == BlockState::BufferExtents && to == BlockState::NewBuffer)
                {
                    if let Some((off, idx)) = block_start {
                        if !block_failed && !state.is_terminal() {
                            push(
                                &mut r,
                                Severity::Error,
                                off,
                                Some(idx),
                                "terminal",
                                format!(
                                    "invalid terminal condition {}, malformed block",
                                    state.name()
                                ),
                            );
                        }
                    }
                    block_start = None;
                    state = BlockState::Unknown;
                }
                if to == BlockState::NewBuffer {
                    r.blocks += 1;
                    block_start = Some(at);
                    block_failed = false;
                }
                if state == BlockState::EndOfBuffer {
                    continue;
                }
                if block_failed {
                    continue;
                }
                if state.allows(to) {
                    state = to;
                } else {
                    push(
                        &mut r,
                        Severity::Error,
                        at.0,
                        Some(at.1),
                        "grammar",
                        format!("invalid transition from {} to {}", state.name(), to.name()),
                    );
                    block_failed = true;
                    if block_start.is_none() {
                        // A block that did not start with NewBuffer: skip to the next one.
                        state = BlockState::Unknown;
                        block_failed = false;
                        block_start = None;
                    }
                }
            }
        }
    }
    if let Some((off, idx)) = block_start {
        if !block_failed && !state.is_terminal() {
            push(
                &mut r,
                Severity::Error,
                off,
                Some(idx),
                "terminal",
                format!(
                    "invalid terminal condition {}, malformed block",
                    state.name()
                ),
            );
        }
    }
    check_header(&header, &mut r);
    r
}

fn check_header(header: &FileHeader, r: &mut Report) {
    if header.bitfield & !3 != 0 {
        r.findings.push(Finding {
            severity: Severity::Warning,
            offset: 4,
            record: None,
            code: "bitfield",
            message: format!(
                "header bitfield {:#x} has bits beyond constant_tsc/nonstop_tsc set (ignored)",
                header.bitfield
            ),
        });
    }
    if header.cycle_frequency == 0 {
        r.findings.push(Finding {
            severity: Severity::Warning,
            offset: 8,
            record: None,
            code: "frequency",
            message: "cycle frequency is 0: times stay in ticks".to_string(),
        });
    }
}

fn verify_basic(trace: &Trace<'_>) -> Report {
    let decoded = trace.decode_sequential();
    let mut r = Report {
        records: decoded.records,
        ..Default::default()
    };
    for e in decoded.problems.iter().chain(decoded.truncation.iter()) {
        r.findings.push(finding_of(e));
    }
    check_header(&trace.header, &mut r);
    r
}

fn finding_of(e: &Error) -> Finding {
    Finding {
        severity: Severity::Error,
        offset: e.offset().unwrap_or(0),
        record: e.record(),
        code: if e.is_truncation() {
            "truncated"
        } else {
            "invalid"
        },
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::BlockState::*;

    #[test]
    fn grammar_table() {
        assert!(Unknown.allows(BufferExtents) && Unknown.allows(NewBuffer));
        assert!(!Unknown.allows(Function));
        assert!(BufferExtents.allows(NewBuffer) && !BufferExtents.allows(WallClockTime));
        assert!(NewBuffer.allows(WallClockTime) && !NewBuffer.allows(NewCpuId));
        assert!(WallClockTime.allows(PidEntry) && WallClockTime.allows(NewCpuId));
        assert!(PidEntry.allows(NewCpuId) && !PidEntry.allows(Function));
        for s in [NewCpuId, TscWrap, CustomEvent, TypedEvent] {
            assert!(
                s.allows(Function)
                    && s.allows(EndOfBuffer)
                    && !s.allows(CallArg)
                    && !s.allows(NewBuffer)
            );
        }
        assert!(Function.allows(CallArg) && CallArg.allows(CallArg) && CallArg.allows(Function));
        assert!(
            !NewBuffer.is_terminal() && !WallClockTime.is_terminal() && !PidEntry.is_terminal()
        );
        assert!(Function.is_terminal() && CallArg.is_terminal() && EndOfBuffer.is_terminal());
    }
}
