//! `profkit dump` for Mono log profiler files: one line for the header, one per buffer and one
//! per event, as text ([`write_text`]) or NDJSON ([`write_ndjson`]).
//!
//! Text lines:
//! ```text
//! header: 3.0 data 17 ptrsize 8 pid 4242 args "log:calls"
//! buffer #0 at 0x5d: len 473 thread 0x7001 time_base 1000
//!   0x0000a1         1010 enter method=0x5000
//! ```
//! NDJSON objects: `{"record":"header", major, minor, data_version, ptrsize, pid, args}`,
//! `{"record":"buffer", index, offset, len, thread, time_base, truncated}` and
//! `{"record":"event", offset, byte, type, time, event}` (`event` is the text of the line).
//! Decoding problems are not written: both functions return them (in file order) for the
//! caller to report.

use std::io::{self, Write};

use profkit_common::json;

use crate::error::Error;
use crate::raw::{mtype_name, EventType};
use crate::read::{Buffer, EventKind, File};
use crate::source::BufferSource;

/// Writes the text dump of `file`; returns the decoding problems.
pub fn write_text(file: &File<'_>, out: &mut dyn Write) -> io::Result<Vec<Error>> {
    write_text_of(&mut file.source(), out)
}

/// [`write_text`] of a file in memory or of a stream.
pub fn write_text_of(src: &mut dyn BufferSource, out: &mut dyn Write) -> io::Result<Vec<Error>> {
    let h = src.header();
    writeln!(
        out,
        "header: {}.{} data {} ptrsize {} pid {} args {:?}",
        h.major, h.minor, h.data_version, h.ptrsize, h.pid, h.args
    )?;
    each_buffer(src, |b| {
        let bh = b.header;
        writeln!(
            out,
            "buffer #{} at {:#x}: len {} thread {:#x} time_base {}{}",
            b.index,
            b.offset,
            bh.len,
            bh.thread_id,
            bh.time_base,
            if b.truncated { " (truncated)" } else { "" }
        )?;
        each_event(b, |offset, _, time, kind| {
            writeln!(out, "  {offset:#08x} {time:>12} {}", event_text(kind))
        })
    })
}

/// Writes the NDJSON dump of `file`; returns the decoding problems.
pub fn write_ndjson(file: &File<'_>, out: &mut dyn Write) -> io::Result<Vec<Error>> {
    write_ndjson_of(&mut file.source(), out)
}

/// [`write_ndjson`] of a file in memory or of a stream.
pub fn write_ndjson_of(src: &mut dyn BufferSource, out: &mut dyn Write) -> io::Result<Vec<Error>> {
    let h = src.header();
    let mut line: Vec<u8> = Vec::with_capacity(256);
    line.extend_from_slice(
        format!(
            "{{\"record\":\"header\",\"major\":{},\"minor\":{},\"data_version\":{},\"ptrsize\":{},\"pid\":{},\"args\":",
            h.major, h.minor, h.data_version, h.ptrsize, h.pid
        )
        .as_bytes(),
    );
    json::push_str(&mut line, &h.args);
    line.extend_from_slice(b"}\n");
    out.write_all(&line)?;
    each_buffer(src, |b| {
        let bh = b.header;
        writeln!(
            out,
            "{{\"record\":\"buffer\",\"index\":{},\"offset\":{},\"len\":{},\"thread\":{},\"time_base\":{},\"truncated\":{}}}",
            b.index, b.offset, bh.len, bh.thread_id, bh.time_base, b.truncated
        )?;
        each_event(b, |offset, byte, time, kind| {
            line.clear();
            line.extend_from_slice(
                format!(
                    "{{\"record\":\"event\",\"offset\":{offset},\"byte\":{byte},\"type\":\"{}\",\"time\":{time},\"event\":",
                    EventType::of(byte).name()
                )
                .as_bytes(),
            );
            json::push_str(&mut line, &event_text(kind));
            line.extend_from_slice(b"}\n");
            out.write_all(&line)
        })
    })
}

/// Calls `f` on every buffer; collects the problems (of the scan and of the events).
fn each_buffer(
    src: &mut dyn BufferSource,
    mut f: impl FnMut(&Buffer<'_>) -> io::Result<Vec<Error>>,
) -> io::Result<Vec<Error>> {
    let mut problems = Vec::new();
    while let Some(b) = src.next() {
        match b {
            Ok(b) => problems.extend(f(&b)?),
            Err(e) => problems.push(e),
        }
    }
    Ok(problems)
}

/// Calls `f` with (offset, byte, time, kind) of every event of `b`; returns its problem.
fn each_event(
    b: &Buffer<'_>,
    mut f: impl FnMut(u64, u8, u64, &EventKind<'_>) -> io::Result<()>,
) -> io::Result<Vec<Error>> {
    let mut problems = Vec::new();
    for ev in b.events() {
        match ev {
            Ok(e) => f(e.offset, e.byte, e.time, &e.kind)?,
            Err(e) => problems.push(e),
        }
    }
    Ok(problems)
}

/// An event's payload as the dump prints it (`enter method=0x5000`).
pub fn event_text(k: &EventKind<'_>) -> String {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match *k {
        EventKind::Enter { method } => format!("enter method={method:#x}"),
        EventKind::Leave { method } => format!("leave method={method:#x}"),
        EventKind::ExcLeave { method } => format!("exc_leave method={method:#x}"),
        EventKind::Jit {
            method,
            code,
            size,
            name,
        } => format!(
            "jit method={method:#x} code={code:#x} size={size} name={:?}",
            s(name)
        ),
        EventKind::Alloc {
            class,
            obj,
            size,
            backtrace,
        } => format!(
            "alloc class={class:x?} obj={obj:#x} size={size} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::Metadata(m) => format!(
            "metadata {:?} {} ptr={:#x} image={:#x} domain={:#x} class={:#x} name={:?}",
            m.action,
            mtype_name(m.mtype),
            m.ptr,
            m.image,
            m.domain,
            m.class,
            s(m.name)
        ),
        EventKind::Throw { obj, backtrace } => format!(
            "throw obj={obj:#x} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::Monitor {
            event,
            obj,
            backtrace,
        } => format!(
            "monitor event={event} obj={obj:#x} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::SampleHit {
            thread,
            ips,
            frames,
            ..
        } => format!(
            "sample thread={thread:#x} ips={:x?} frames={:x?}",
            ips.collect::<Vec<_>>(),
            frames.collect::<Vec<_>>()
        ),
        EventKind::GcMove { objects } => format!("gc_move {:x?}", objects.collect::<Vec<_>>()),
        EventKind::HeapObject {
            obj,
            class,
            size,
            generation,
            refs,
        } => format!(
            "heap_object obj={obj:#x} class={class:x?} size={size} gen={generation:?} refs={}",
            refs.len()
        ),
        EventKind::RootRegister {
            start,
            size,
            source,
            key,
            name,
        } => format!(
            "root_register start={start:#x} size={size} source={source} key={key:#x} name={:?}",
            s(name)
        ),
        EventKind::JitHelper {
            htype,
            addr,
            size,
            name,
        } => format!(
            "jit_helper type={htype} addr={addr:#x} size={size} name={:?}",
            s(name)
        ),
        EventKind::AotId { id } => format!("aot_id {:?}", s(id)),
        EventKind::Usym { addr, size, name } => {
            format!("usym addr={addr:#x} size={size} name={:?}", s(name))
        }
        // the rest in the words (and the numbers) of their Rust names; a lazily decoded list
        // prints only its type
        EventKind::GcEvent { event, generation } => {
            format!("GcEvent {{ event: {event}, generation: {generation} }}")
        }
        EventKind::GcResize { heap_size } => format!("GcResize {{ heap_size: {heap_size} }}"),
        EventKind::GcHandleCreated {
            htype, handle, obj, ..
        } => format!(
            "GcHandleCreated {{ htype: {htype}, handle: {handle}, obj: {obj}, backtrace: Frames"
        ),
        EventKind::GcHandleDestroyed { htype, handle, .. } => {
            format!("GcHandleDestroyed {{ htype: {htype}, handle: {handle}, backtrace: Frames")
        }
        EventKind::GcFinalizeStart => "GcFinalizeStart".to_string(),
        EventKind::GcFinalizeEnd => "GcFinalizeEnd".to_string(),
        EventKind::GcFinalizeObjectStart { obj } => {
            format!("GcFinalizeObjectStart {{ obj: {obj} }}")
        }
        EventKind::GcFinalizeObjectEnd { obj } => format!("GcFinalizeObjectEnd {{ obj: {obj} }}"),
        EventKind::Clause {
            clause_type,
            index,
            method,
            obj,
        } => format!(
            "Clause {{ clause_type: {clause_type}, index: {index}, method: {method}, obj: {obj:?} }}"
        ),
        EventKind::HeapStart => "HeapStart".to_string(),
        EventKind::HeapEnd => "HeapEnd".to_string(),
        EventKind::HeapRoots { num_major_gcs, .. } => {
            format!("HeapRoots {{ num_major_gcs: {num_major_gcs}, roots: List")
        }
        EventKind::RootUnregister { start } => format!("RootUnregister {{ start: {start} }}"),
        EventKind::Ubin {
            addr,
            file_offset,
            size,
            name,
        } => format!(
            "Ubin {{ addr: {addr}, file_offset: {file_offset}, size: {size}, name: {name:?} }}"
        ),
        EventKind::CountersDesc { .. } => "CountersDesc { descs: CounterDescs".to_string(),
        EventKind::Counters { timestamp, .. } => {
            format!("Counters {{ timestamp: {timestamp:?}, values: CounterValues")
        }
        EventKind::Coverage { kind } => format!("Coverage {{ kind: {kind} }}"),
        EventKind::SyncPoint { kind } => format!("SyncPoint {{ kind: {kind} }}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::Writer;
    use crate::Header;

    fn file() -> Vec<u8> {
        let mut w = Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            pid: 7,
            args: "log:\"calls\"\n".into(),
            ..Header::default()
        });
        let mut b = w.buffer(0x7001, 1000);
        b.enter(1010, 0x5000);
        b.gc_event(1020, 0, 1);
        b.jit(1030, 0x5000, 0x9000, 16, b"A\tb\x01");
        b.raw(&[0x6e]);
        b.finish();
        w.into_bytes()
    }

    #[test]
    fn text_lines() {
        let bytes = file();
        let f = File::parse(&bytes).unwrap();
        let mut out = Vec::new();
        let problems = write_text(&f, &mut out).unwrap();
        assert_eq!(problems.len(), 1);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"header: 3.0 data 17 ptrsize 8 pid 7 args "log:\"calls\"\n""#
        );
        assert!(lines[1].starts_with("buffer #0 at 0x"), "{}", lines[1]);
        assert!(
            lines[2].ends_with("         1010 enter method=0x5000"),
            "{}",
            lines[2]
        );
        assert!(lines[3].ends_with(" GcEvent { event: 0, generation: 1 }"));
        assert!(lines[4].ends_with(r#" jit method=0x5000 code=0x9000 size=16 name="A\tb\u{1}""#));
        assert_eq!(lines.len(), 5);
    }

    /// The kinds without a lazy list print as their Rust `Debug` (as the CLI's dump did).
    #[test]
    fn plain_kinds_read_like_their_debug() {
        let kinds = [
            EventKind::GcEvent {
                event: 5,
                generation: 1,
            },
            EventKind::GcResize { heap_size: 99 },
            EventKind::GcFinalizeStart,
            EventKind::GcFinalizeEnd,
            EventKind::GcFinalizeObjectStart { obj: 8 },
            EventKind::GcFinalizeObjectEnd { obj: 16 },
            EventKind::Clause {
                clause_type: 2,
                index: 1,
                method: 0x5000,
                obj: Some(24),
            },
            EventKind::Clause {
                clause_type: 0,
                index: 0,
                method: 1,
                obj: None,
            },
            EventKind::HeapStart,
            EventKind::HeapEnd,
            EventKind::RootUnregister { start: 4096 },
            EventKind::Ubin {
                addr: 1,
                file_offset: 2,
                size: 3,
                name: b"libc.so",
            },
            EventKind::Coverage { kind: 2 },
            EventKind::SyncPoint { kind: 1 },
        ];
        for k in kinds {
            assert_eq!(event_text(&k), format!("{k:?}"));
        }
    }

    #[test]
    fn ndjson_lines_are_json() {
        let bytes = file();
        let f = File::parse(&bytes).unwrap();
        let mut out = Vec::new();
        write_ndjson(&f, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let v: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(v.len(), 5);
        assert_eq!(v[0]["record"], "header");
        assert_eq!(v[0]["args"], "log:\"calls\"\n");
        assert_eq!(v[1]["thread"], 0x7001);
        assert_eq!(v[1]["truncated"], false);
        assert_eq!(v[2]["type"], "METHOD");
        assert_eq!(v[2]["byte"], 0x23);
        assert_eq!(
            v[4]["event"],
            "jit method=0x5000 code=0x9000 size=16 name=\"A\\tb\\u{1}\""
        );
    }
}
