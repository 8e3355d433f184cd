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

use profkit_common::{Findings, Validation};

use crate::error::Truncation;
use crate::raw::{MetadataKind, TraceType};
use crate::read::basic::BasicRecord;
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

/// The finding codes of [`verify`]: `(code, severity, description)`, documented in
/// docs/xray.md. The codes every format shares (`truncated`, `findings-capped`) are added by
/// [`Findings`].
pub mod codes {
    use profkit_common::finding::CodeTable;
    use profkit_common::Severity::{Error as E, Warning as W};

    /// A record the FDR block grammar does not allow where it is.
    pub const BLOCK_GRAMMAR: &str = "block-grammar";
    /// A block that ends in a state that cannot end a block.
    pub const BLOCK_TERMINAL: &str = "block-terminal";
    /// A function record of kind 4–7.
    pub const FUNCTION_KIND: &str = "function-kind";
    /// A metadata record of kind 10–127.
    pub const METADATA_KIND: &str = "metadata-kind";
    /// An EndOfBuffer record at version 2 or later.
    pub const END_OF_BUFFER: &str = "end-of-buffer-after-v1";
    /// A record kind the header's version does not have yet.
    pub const LATER_VERSION_RECORD: &str = "later-version-record";
    /// A record that cannot be decoded or sized.
    pub const RECORD_UNDECODABLE: &str = "record-undecodable";
    /// Bytes between FDR buffers that are not a buffer.
    pub const JUNK: &str = "junk-between-buffers";
    /// A basic-mode record type other than 0 and 1.
    pub const BASIC_RECORD_TYPE: &str = "basic-record-type";
    /// A basic-mode arg payload that does not belong to the record before it.
    pub const ARG_PAYLOAD_MISMATCH: &str = "arg-payload-mismatch";
    /// Header bitfield bits beyond bits 0 and 1.
    pub const HEADER_BITFIELD: &str = "header-bitfield";
    /// Header cycle frequency 0.
    pub const CYCLE_FREQUENCY_ZERO: &str = "cycle-frequency-zero";
    /// A basic-mode header whose buffer-size field was never written (LLVM 20+).
    pub const HEADER_UNINITIALIZED: &str = "header-uninitialized";

    /// Every code, its severity and what it means.
    pub const ALL: CodeTable = &[
        (BLOCK_GRAMMAR, E, "a record the FDR block grammar does not allow after the previous one (llvm's BlockVerifier); the rest of the block is not checked"),
        (BLOCK_TERMINAL, E, "an FDR block ends after NewBuffer, WalltimeMarker or Pid, before its NewCPUId"),
        (FUNCTION_KIND, E, "a function record of kind 4-7 (0-3 are enter, exit, tail exit, enter with args)"),
        (METADATA_KIND, E, "a metadata record of kind 10-127 (its 16 bytes are skipped)"),
        (END_OF_BUFFER, E, "an EndOfBuffer record in an FDR trace of version 2 or later (only version 1 has them)"),
        (LATER_VERSION_RECORD, W, "a record kind from a later FDR version: BufferExtents before 2, Pid before 3, TypedEventMarker before 5"),
        (RECORD_UNDECODABLE, E, "a record that cannot be sized (an event payload size <= 0, a record running past its buffer's extents); the rest of its buffer is skipped"),
        (JUNK, W, "bytes between FDR buffers that do not start a buffer; skipped up to the next BufferExtents + NewBuffer"),
        (BASIC_RECORD_TYPE, E, "a basic-mode record type other than 0 (function) and 1 (arg payload)"),
        (ARG_PAYLOAD_MISMATCH, E, "a basic-mode arg payload that does not follow a function record (or its payloads) of the same function, thread and pid"),
        (HEADER_BITFIELD, W, "header bitfield bits beyond constant_tsc (bit 0) and nonstop_tsc (bit 1) are set (basic mode leaves garbage there; ignored)"),
        (CYCLE_FREQUENCY_ZERO, W, "the header's cycle frequency is 0: times stay in TSC ticks"),
        (HEADER_UNINITIALIZED, W, "a basic-mode header's buffer-size field holds 0xAAAAAAAAAAAAAAAA, the fill of memory never written (LLVM 20+ basic runtime, clang's pattern initialisation; the field is unused in basic mode and ignored)"),
    ];
}

/// Verifies a trace. FDR: record kinds per version, the block grammar, record sizes and
/// extents, junk between buffers. Basic: record types and kinds, arg payloads. Both: the
/// header's bitfield and frequency, and the cut of a truncated file (the common `truncated`
/// code; everything before it is checked). `records` counts the records read (FDR:
/// BufferExtents included).
pub fn verify(trace: &Trace<'_>) -> Validation {
    let mut f = Findings::new(codes::ALL);
    let (records, truncation) = if trace.header.trace_type == TraceType::BASIC {
        verify_basic(trace, &mut f)
    } else {
        verify_fdr(trace, &mut f)
    };
    check_header(&trace.header, &mut f);
    f.finish(records, truncation)
}

fn verify_fdr(trace: &Trace<'_>, f: &mut Findings) -> (u64, Option<Truncation>) {
    let header = trace.header;
    let mut records = 0u64;
    let mut state = BlockState::Unknown;
    let mut block_start: Option<(u64, u64)> = None;
    let mut block_failed = false;
    let mut walk = trace.fdr_records();
    for entry in walk.by_ref() {
        match entry {
            FdrEntry::Skip(s) => {
                if s.kind == SkipKind::Junk {
                    f.push(
                        codes::JUNK,
                        s.offset,
                        None,
                        format!("{} bytes between buffers skipped", s.len),
                    );
                }
            }
            FdrEntry::Problem(e) => {
                f.push(
                    codes::RECORD_UNDECODABLE,
                    e.known_offset().unwrap_or(0),
                    e.record,
                    e.to_string(),
                );
                state = BlockState::Unknown;
                block_start = None;
            }
            FdrEntry::Record(item) => {
                records += 1;
                let rec = &item.record;
                let at = (item.offset, item.index);
                // Per-version and per-kind checks.
                if let FdrRecord::Function { kind, .. } = rec {
                    if !kind.is_known() {
                        f.push(
                            codes::FUNCTION_KIND,
                            at.0,
                            Some(at.1),
                            format!("unknown function record kind {}", kind.0),
                        );
                    }
                }
                let version_note = match rec.metadata_kind() {
                    Some(MetadataKind::END_OF_BUFFER) if header.version >= 2 => Some((
                        codes::END_OF_BUFFER,
                        "EndOfBuffer records are no longer supported starting version 2"
                            .to_string(),
                    )),
                    Some(MetadataKind::BUFFER_EXTENTS) if header.version < 2 => Some((
                        codes::LATER_VERSION_RECORD,
                        "BufferExtents before version 2".to_string(),
                    )),
                    Some(MetadataKind::PID) if header.version < 3 => Some((
                        codes::LATER_VERSION_RECORD,
                        "Pid record before version 3".to_string(),
                    )),
                    Some(MetadataKind::TYPED_EVENT_MARKER) if header.version < 5 => Some((
                        codes::LATER_VERSION_RECORD,
                        "TypedEventMarker before version 5".to_string(),
                    )),
                    Some(k) if !k.is_known() => Some((
                        codes::METADATA_KIND,
                        format!("invalid metadata record kind {}", k.0),
                    )),
                    _ => None,
                };
                if let Some((code, msg)) = version_note {
                    f.push(code, at.0, Some(at.1), msg);
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
                            push_terminal(f, off, idx, state);
                        }
                    }
                    block_start = None;
                    state = BlockState::Unknown;
                }
                if to == BlockState::NewBuffer {
                    block_start = Some(at);
                    block_failed = false;
                }
                if state == BlockState::EndOfBuffer || block_failed {
                    continue;
                }
                if state.allows(to) {
                    state = to;
                } else {
                    f.push(
                        codes::BLOCK_GRAMMAR,
                        at.0,
                        Some(at.1),
                        format!("invalid transition from {} to {}", state.name(), to.name()),
                    );
                    block_failed = true;
                    if block_start.is_none() {
                        // A block that did not start with NewBuffer: skip to the next one.
                        state = BlockState::Unknown;
                        block_failed = false;
                    }
                }
            }
        }
    }
    let truncation = walk.truncation().cloned();
    // The block a cut interrupts is incomplete because of the cut, not malformed.
    if let (Some((off, idx)), None) = (block_start, &truncation) {
        if !block_failed && !state.is_terminal() {
            push_terminal(f, off, idx, state);
        }
    }
    (records, truncation)
}

fn push_terminal(f: &mut Findings, offset: u64, index: u64, state: BlockState) {
    f.push(
        codes::BLOCK_TERMINAL,
        offset,
        Some(index),
        format!(
            "invalid terminal condition {}, malformed block",
            state.name()
        ),
    );
}

/// What clang's pattern initialisation leaves in a field never written.
const UNINITIALIZED: u64 = 0xAAAA_AAAA_AAAA_AAAA;

fn check_header(header: &FileHeader, f: &mut Findings) {
    if header.bitfield & !3 != 0 {
        f.push(
            codes::HEADER_BITFIELD,
            4,
            None,
            format!(
                "header bitfield {:#x} has bits beyond constant_tsc/nonstop_tsc set (ignored)",
                header.bitfield
            ),
        );
    }
    if header.trace_type == TraceType::BASIC && header.buffer_size == UNINITIALIZED {
        f.push(
            codes::HEADER_UNINITIALIZED,
            16,
            None,
            "basic-mode header's buffer_size is 0xAAAAAAAAAAAAAAAA, never written (LLVM 20+ basic runtime; unused, ignored)",
        );
    }
    if header.cycle_frequency == 0 {
        f.push(
            codes::CYCLE_FREQUENCY_ZERO,
            8,
            None,
            "cycle frequency is 0: times stay in ticks",
        );
    }
}

/// Basic mode: each record on its own, and arg payloads against the function record they
/// follow (the rule [`Trace::decode`] applies: a payload belongs to the function record right
/// before it, or before the payloads after that record, with the same function, thread and
/// pid).
fn verify_basic(trace: &Trace<'_>, f: &mut Findings) -> (u64, Option<Truncation>) {
    let mut it = trace.basic_records();
    let mut records = 0u64;
    // The function record arg payloads may follow now.
    let mut owner: Option<(i32, u32, u32)> = None;
    for item in it.by_ref() {
        records += 1;
        let (offset, index) = (item.offset, Some(item.index));
        match item.record {
            BasicRecord::Function {
                kind,
                func_id,
                tid,
                pid,
                ..
            } => {
                if kind.is_known() {
                    owner = Some((func_id, tid, pid));
                } else {
                    owner = None;
                    f.push(
                        codes::FUNCTION_KIND,
                        offset,
                        index,
                        format!("unknown function record kind {}", kind.0),
                    );
                }
            }
            BasicRecord::ArgPayload {
                func_id, tid, pid, ..
            } => {
                if owner != Some((func_id, tid, pid)) {
                    owner = None;
                    f.push(
                        codes::ARG_PAYLOAD_MISMATCH,
                        offset,
                        index,
                        format!(
                            "arg payload of function {func_id}, thread {tid}, pid {pid} does not follow a record of that function and thread"
                        ),
                    );
                }
            }
            BasicRecord::Unknown { record_type } => {
                owner = None;
                f.push(
                    codes::BASIC_RECORD_TYPE,
                    offset,
                    index,
                    format!("unknown basic record type {}", record_type.0),
                );
            }
        }
    }
    (records, it.truncation().cloned())
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
