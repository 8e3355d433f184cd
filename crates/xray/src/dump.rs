//! One line per record: what `profkit dump` prints of a trace ([`dump`]).
//!
//! * FDR, text: `llvm-xray fdr-dump` lines (`<Function Enter: #1 delta = +100>` …), or with
//!   [`DumpOptions::verify`] the blocks as `llvm-xray fdr-dump --verify` groups them
//!   (`[New Block]`, `Preamble:`, `Body:`). Unlike llvm-xray 14, a typed event's line ends in `>`.
//! * Basic, text: the record lines of llvm-xray's YAML (`  - { type: 0, func-id: … }`), thread
//!   after thread.
//! * NDJSON ([`DumpOptions::json`]): one object per record with its `offset` (and FDR `index`),
//!   keys in alphabetical order; FDR skips between buffers as `{"type":"Skip", …}`.

use std::collections::HashSet;
use std::io::{self, Write};

use profkit_common::json::Object;

use crate::error::{Error, Truncation};
use crate::read::events::{Event, ThreadKey, Trace};
use crate::read::fdr::{CustomEventTime, FdrEntry, FdrRecord, SkipKind};
use crate::yaml::trace::write_event;

/// How [`dump`] prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// NDJSON instead of text.
    pub json: bool,
    /// FDR text: group the records into blocks as `llvm-xray fdr-dump --verify` does.
    pub verify: bool,
}

/// What [`dump`] printed and met.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpOutcome {
    /// Lines written for records (FDR: records; basic: events, arg payloads folded in).
    pub records: u64,
    /// Records that could not be decoded (FDR: the rest of their buffer is not printed).
    pub problems: Vec<Error>,
    /// Where the file is cut, if it is (every complete record before the cut was printed).
    pub truncation: Option<Truncation>,
}

/// Prints every record of `trace` to `out` (see the module docs for the layouts). Problems and
/// the cut of a truncated file are returned, not printed. The output is flushed.
pub fn dump(trace: &Trace<'_>, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpOutcome> {
    let outcome = if trace.header.is_fdr() {
        dump_fdr(trace, opts, out)?
    } else {
        dump_basic(trace, opts, out)?
    };
    out.flush()?;
    Ok(outcome)
}

fn dump_basic(
    trace: &Trace<'_>,
    opts: &DumpOptions,
    out: &mut dyn Write,
) -> io::Result<DumpOutcome> {
    // Thread after thread, each in file order (as a decode groups them). A log of a few threads
    // is streamed: one pass lists the threads, then one pass per thread writes its events (one
    // pass in all for the usual one-thread log), so memory does not grow with the log. With
    // more threads those passes would cost threads × records: the log is decoded into memory
    // instead (linear in its events).
    let mut threads: Vec<ThreadKey> = Vec::new();
    let mut seen: HashSet<ThreadKey> = HashSet::new();
    let mut problems = Vec::new();
    let (_, truncation) = trace.visit_basic(&mut problems, &mut |ev| {
        let key = ThreadKey {
            pid: ev.pid,
            tid: ev.tid,
        };
        if threads.last() != Some(&key) && seen.insert(key) {
            threads.push(key);
        }
    });
    let mut line = Vec::with_capacity(256);
    let mut records = 0u64;
    if threads.len() > STREAMED_THREADS {
        for ev in trace.decode().events() {
            records += 1;
            write_basic_event(out, &mut line, ev, opts.json)?;
        }
    } else {
        for &key in &threads {
            let mut failed = None;
            trace.visit_basic(&mut Vec::new(), &mut |ev| {
                if failed.is_some() || ev.pid != key.pid || ev.tid != key.tid {
                    return;
                }
                records += 1;
                failed = write_basic_event(out, &mut line, &ev, opts.json).err();
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
    }
    Ok(DumpOutcome {
        records,
        problems,
        truncation,
    })
}

/// Up to this many threads, a basic log is dumped in one pass per thread.
const STREAMED_THREADS: usize = 8;

/// One basic-mode event: llvm-xray's line, or a JSON object.
fn write_basic_event(
    out: &mut dyn Write,
    line: &mut Vec<u8>,
    ev: &Event<'_>,
    json: bool,
) -> io::Result<()> {
    if !json {
        return write_event(out, ev, ev.func_id, &ev.func_id.to_string());
    }
    line.clear();
    let mut o = Object::new(line);
    o.raw("args", |b| {
        b.push(b'[');
        for (i, a) in ev.args.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.extend_from_slice(itoa::Buffer::new().format(a).as_bytes());
        }
        b.push(b']');
    });
    o.num("cpu", ev.cpu);
    o.num("func_id", ev.func_id);
    o.str("kind", ev.kind.llvm_name());
    o.num("offset", ev.offset);
    o.num("pid", ev.pid);
    o.num("tid", ev.tid);
    o.num("tsc", ev.tsc);
    o.end_line();
    out.write_all(line)
}

/// Where `llvm-xray fdr-dump --verify` is in a block.
#[derive(Default)]
struct Blocks {
    in_block: bool,
    in_body: bool,
}

fn dump_fdr(trace: &Trace<'_>, opts: &DumpOptions, out: &mut dyn Write) -> io::Result<DumpOutcome> {
    let mut outcome = DumpOutcome::default();
    let mut blocks = Blocks::default();
    let mut line = Vec::with_capacity(256);
    let mut walk = trace.fdr_records();
    for entry in walk.by_ref() {
        match entry {
            FdrEntry::Record(item) => {
                outcome.records += 1;
                if opts.json {
                    line.clear();
                    record_json(&mut line, &item.record, item.offset, item.index);
                    out.write_all(&line)?;
                } else if opts.verify {
                    write_verify_line(out, &mut blocks, &item.record)?;
                } else {
                    writeln!(out, "{}", llvm_record(&item.record))?;
                }
            }
            FdrEntry::Skip(s) => {
                if opts.json {
                    line.clear();
                    let mut o = Object::new(&mut line);
                    o.bool("junk", s.kind == SkipKind::Junk);
                    o.num("len", s.len);
                    o.num("offset", s.offset);
                    o.str("type", "Skip");
                    o.end_line();
                    out.write_all(&line)?;
                }
            }
            FdrEntry::Problem(e) => outcome.problems.push(e),
        }
    }
    outcome.truncation = walk.truncation().cloned();
    Ok(outcome)
}

/// One record in `llvm-xray fdr-dump --verify`'s block layout.
fn write_verify_line(out: &mut dyn Write, b: &mut Blocks, rec: &FdrRecord<'_>) -> io::Result<()> {
    let line = llvm_record(rec);
    match rec {
        FdrRecord::BufferExtents { .. } => Ok(()),
        FdrRecord::NewBuffer { .. } => {
            b.in_block = true;
            b.in_body = false;
            writeln!(out, "\n[New Block]\nPreamble: \n{line}")
        }
        FdrRecord::WalltimeMarker { .. } | FdrRecord::Pid { .. } if !b.in_body => {
            writeln!(out, "{line}")
        }
        FdrRecord::NewCpuId { .. } | FdrRecord::TscWrap { .. } => {
            if !b.in_body && b.in_block {
                writeln!(out, "\nBody:")?;
                b.in_body = true;
            }
            writeln!(out, " {line}\n")
        }
        FdrRecord::Function { .. } => writeln!(out, "-  {line}"),
        FdrRecord::CustomEvent { .. } | FdrRecord::TypedEvent { .. } => writeln!(out, "*  {line}"),
        FdrRecord::CallArgument { .. } => writeln!(out, " : {line}"),
        _ => writeln!(out, "{line}"),
    }
}

fn payload(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// One record as `llvm-xray fdr-dump` prints it.
fn llvm_record(rec: &FdrRecord<'_>) -> String {
    match rec {
        FdrRecord::Function {
            kind,
            func_id,
            tsc_delta,
        } => {
            let k = match kind.0 {
                0 => "Function Enter",
                1 => "Function Exit",
                2 => "Function Tail Exit",
                3 => "Function Enter With Arg",
                _ => "Function (invalid kind)",
            };
            format!("<{k}: #{func_id} delta = +{tsc_delta}>")
        }
        FdrRecord::NewBuffer { tid } => format!("<Thread ID: {tid}>"),
        FdrRecord::EndOfBuffer => "<End of Buffer>".into(),
        FdrRecord::NewCpuId { cpu, tsc } => format!("<CPU: id = {cpu}, tsc = {tsc}>"),
        FdrRecord::TscWrap { tsc } => format!("<TSC Wrap: base = {tsc}>"),
        FdrRecord::WalltimeMarker { seconds, micros } => {
            format!("<Wall Time: seconds = {seconds}.{micros:06}>")
        }
        FdrRecord::CustomEvent { size, time, data } => match time {
            CustomEventTime::Delta(d) => format!(
                "<Custom Event: delta = +{d}, size = {size}, data = '{}'>",
                payload(data)
            ),
            CustomEventTime::Absolute { tsc, cpu } => format!(
                "<Custom Event: tsc = {tsc}, cpu = {}, size = {size}, data = '{}'>",
                cpu.unwrap_or(0),
                payload(data)
            ),
        },
        FdrRecord::CallArgument { arg } => {
            format!("<Call Argument: data = {arg} (hex = {arg:#x})>")
        }
        FdrRecord::BufferExtents { size } => format!("<Buffer: size = {size} bytes>"),
        // llvm-xray 14 omits the closing '>' here; profkit prints it.
        FdrRecord::TypedEvent {
            size,
            tsc_delta,
            event_type,
            data,
        } => format!(
            "<Typed Event: delta = +{tsc_delta}, type = {event_type}, size = {size}, data = '{}'>",
            payload(data)
        ),
        FdrRecord::Pid { pid } => format!("<PID: {pid}>"),
        FdrRecord::UnknownMetadata { kind, .. } => format!("<Unknown Metadata: kind = {}>", kind.0),
    }
}

/// One record as an NDJSON line: its fields, `index`, `offset` and `type`, keys in
/// alphabetical order.
fn record_json(line: &mut Vec<u8>, rec: &FdrRecord<'_>, offset: u64, index: u64) {
    let mut o = record_object(line, index, offset);
    let ty = match rec {
        FdrRecord::Function {
            kind,
            func_id,
            tsc_delta,
        } => {
            o.num("delta", *tsc_delta);
            o.num("func_id", *func_id);
            o.num("kind", kind.0);
            "Function"
        }
        FdrRecord::NewBuffer { tid } => {
            o.num("tid", *tid);
            "NewBuffer"
        }
        FdrRecord::EndOfBuffer => "EndOfBuffer",
        FdrRecord::NewCpuId { cpu, tsc } => {
            o.num("cpu", *cpu);
            o.num("tsc", *tsc);
            "NewCPUId"
        }
        FdrRecord::TscWrap { tsc } => {
            o.num("tsc", *tsc);
            "TSCWrap"
        }
        FdrRecord::WalltimeMarker { seconds, micros } => {
            o.num("micros", *micros);
            o.num("seconds", *seconds);
            "WalltimeMarker"
        }
        FdrRecord::CustomEvent { size, time, data } => {
            let (tsc, cpu, delta) = match time {
                CustomEventTime::Delta(d) => (None, None, Some(*d)),
                CustomEventTime::Absolute { tsc, cpu } => (Some(*tsc), *cpu, None),
            };
            o.opt("cpu", cpu);
            o.str("data", &payload(data));
            o.opt("delta", delta);
            o.num("size", *size);
            o.opt("tsc", tsc);
            "CustomEvent"
        }
        FdrRecord::CallArgument { arg } => {
            o.num("arg", *arg);
            "CallArgument"
        }
        FdrRecord::BufferExtents { size } => {
            o.num("size", *size);
            "BufferExtents"
        }
        FdrRecord::TypedEvent {
            size,
            tsc_delta,
            event_type,
            data,
        } => {
            o.str("data", &payload(data));
            o.num("delta", *tsc_delta);
            o.num("event_type", *event_type);
            o.num("size", *size);
            "TypedEvent"
        }
        FdrRecord::Pid { pid } => {
            o.num("pid", *pid);
            "Pid"
        }
        FdrRecord::UnknownMetadata { kind, .. } => {
            o.num("kind", kind.0);
            "UnknownMetadata"
        }
    };
    o.str("type", ty);
    o.end_line();
}

/// An FDR record's object: `index` and `offset` go in among its fields in key order.
fn record_object(buf: &mut Vec<u8>, index: u64, offset: u64) -> Object<'_> {
    Object::with_pending(buf, [("index", index), ("offset", offset)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::FunctionKind;
    use crate::read::basic::BasicRecord;
    use crate::write::BasicTraceWriter;
    use crate::FileHeader;

    /// A basic log of `threads` threads taking turns, four enter/exit pairs each.
    fn interleaved(threads: u32) -> Vec<u8> {
        let mut w = BasicTraceWriter::new(FileHeader::basic(3));
        for round in 0..8u64 {
            for t in 0..threads {
                w.record(&BasicRecord::Function {
                    cpu: 0,
                    kind: FunctionKind((round % 2) as u8),
                    func_id: 1 + t as i32,
                    tsc: round * 100 + u64::from(t),
                    tid: 1000 + t,
                    pid: 7,
                });
            }
        }
        w.finish()
    }

    /// Both ways of dumping a basic log (a pass per thread; decoded into memory past
    /// `STREAMED_THREADS` threads) write the events thread after thread, as a decode groups them.
    #[test]
    fn basic_dump_goes_thread_after_thread() {
        for threads in [
            1,
            3,
            STREAMED_THREADS as u32,
            STREAMED_THREADS as u32 + 1,
            40,
        ] {
            let data = interleaved(threads);
            let trace = Trace::parse(&data).unwrap();
            let mut expected = Vec::new();
            let mut line = Vec::new();
            for ev in trace.decode().events() {
                write_basic_event(&mut expected, &mut line, ev, false).unwrap();
            }
            let mut got = Vec::new();
            let opts = DumpOptions::default();
            let outcome = dump(&trace, &opts, &mut got).unwrap();
            assert_eq!(outcome.records, u64::from(threads) * 8, "{threads} threads");
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(expected).unwrap(),
                "{threads} threads"
            );
        }
    }
}
