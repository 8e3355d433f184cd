//! What `profkit info` shows of a Mono log profiler file, as the [`Summary`] every format
//! fills: the header fields in the file's order, events per (type, extended info) with log.h's
//! names (`METHOD/ENTER`), threads (named by their thread-name metadata events), the time span,
//! buffers, decoding problems and the cut.

use profkit_common::{Summary, ThreadSummary, TimeSpan, Value};
use rustc_hash::FxHashMap;

use crate::header::Header;
use crate::raw::*;
use crate::read::{EventKind, File, MetaAction};
use crate::source::BufferSource;

/// One pass over the file's buffers and events.
pub fn summary(file: &File<'_>) -> Summary {
    summary_of(&mut file.source())
}

/// [`summary`] of a file in memory or of a stream.
pub fn summary_of(src: &mut dyn BufferSource) -> Summary {
    let h = &src.header().clone();
    let mut s = Summary {
        format: "mlpd",
        kind: format!(
            "Mono log profiler file, profiler version {}.{}, data version {}",
            h.major, h.minor, h.data_version
        ),
        header: header_fields(h),
        ..Summary::default()
    };
    // events per event byte (named at the end, in (type, exinfo) order)
    let mut kinds = [0u64; 256];
    let mut threads: Vec<ThreadSummary> = Vec::new();
    let mut thread_index: FxHashMap<u64, usize> = FxHashMap::default();
    let mut names: FxHashMap<u64, String> = FxHashMap::default();
    let mut buffers = 0u64;
    let (mut first, mut last) = (u64::MAX, 0u64);
    while let Some(b) = src.next() {
        let b = match b {
            Ok(b) => b,
            // a cut inside a buffer header: the scan's truncation says it
            Err(e) if e.is_truncation() => continue,
            Err(e) => {
                problem(&mut s, &e);
                continue;
            }
        };
        buffers += 1;
        let tid = b.header.thread_id;
        let ti = *thread_index.entry(tid).or_insert_with(|| {
            threads.push(ThreadSummary {
                pid: Some(h.pid),
                tid,
                name: None,
                records: 0,
            });
            threads.len() - 1
        });
        first = first.min(b.header.time_base);
        let mut next = b.offset + BUF_HEADER_SIZE as u64;
        let mut incomplete = None;
        let mut n = 0u64;
        for ev in b.events() {
            match ev {
                Ok(e) => {
                    n += 1;
                    next = e.offset + u64::from(e.size);
                    last = last.max(e.time);
                    if let Some(k) = kinds.get_mut(usize::from(e.byte)) {
                        *k += 1;
                    }
                    if let EventKind::Metadata(m) = e.kind {
                        if m.mtype == MTYPE_THREAD && m.action == MetaAction::Name {
                            names.insert(m.ptr, String::from_utf8_lossy(m.name).into_owned());
                        }
                    }
                }
                Err(e) if e.is_truncation() => incomplete = Some((n, e)),
                Err(e) => problem(&mut s, &e),
            }
        }
        s.records += n;
        if let Some(t) = threads.get_mut(ti) {
            t.records += n;
        }
        if b.truncated {
            s.truncation = b.cut_at(next, s.records, incomplete.as_ref().map(|(i, e)| (*i, e)));
        }
    }
    s.truncation = src.cut(s.truncation.take(), s.records);
    for t in &mut threads {
        t.name = names.get(&t.tid).cloned();
    }
    s.threads = threads;
    let mut counted: Vec<(u8, u64)> = (0..=255u8).zip(kinds).filter(|&(_, n)| n > 0).collect();
    counted.sort_by_key(|&(b, _)| (b & TYPE_MASK, b >> 4));
    s.kinds = counted
        .into_iter()
        .map(|(b, n)| (kind_name(b, h.data_version), n))
        .collect();
    if first != u64::MAX {
        let last = last.max(first);
        s.time = Some(TimeSpan {
            first,
            last,
            duration_ns: last - first,
        });
    }
    s.details = vec![("buffers", buffers.into()), ("header_bytes", h.size.into())];
    s
}

/// Counts a decoding problem (the first one in words).
fn problem(s: &mut Summary, e: &crate::Error) {
    s.problems += 1;
    if s.first_problem.is_none() {
        s.first_problem = Some(e.to_string());
    }
}

/// `TYPE/EXINFO` with log.h's names without `TYPE_` (`METHOD/ENTER`).
pub fn kind_name(byte: u8, version: u8) -> String {
    match exinfo_name(byte, version) {
        Some(ex) => format!("{}/{ex}", EventType::of(byte).name()),
        None => format!("{}/{:#04x}", EventType::of(byte).name(), byte & EXINFO_MASK),
    }
}

/// The header's fields in the file's order (those of its major's layout).
fn header_fields(h: &Header) -> Vec<(&'static str, Value)> {
    let mut v: Vec<(&'static str, Value)> = vec![
        ("major", h.major.into()),
        ("minor", h.minor.into()),
        ("data_version", h.data_version.into()),
        ("ptrsize", h.ptrsize.into()),
        ("startup_ms", h.startup_ms.into()),
    ];
    if h.major >= 3 {
        v.push(("startup_ns", h.startup_ns.into()));
    }
    v.push(("timer_overhead_ns", h.timer_overhead.into()));
    v.push(("flags", Value::Hex(u64::from(h.flags))));
    v.push(("pid", h.pid.into()));
    if h.major == 0 {
        if h.data_version >= 4 {
            v.push(("port", h.port.into()));
        }
        v.push(("sysid", h.sysid.into()));
    } else {
        v.push(("port", h.port.into()));
        v.push(("args", h.args.as_str().into()));
        v.push(("arch", h.arch.as_str().into()));
        v.push(("os", h.os.as_str().into()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Metadata;
    use crate::write::Writer;

    fn file() -> Vec<u8> {
        let mut w = Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            pid: 42,
            args: "log:calls".into(),
            ..Header::default()
        });
        let mut b = w.buffer(0x7001, 1000);
        b.enter(1010, 0x5000);
        b.metadata(
            1015,
            &Metadata {
                action: MetaAction::Name,
                mtype: MTYPE_THREAD,
                ptr: 0x7001,
                image: 0,
                domain: 0,
                class: 0,
                name: b"Main",
                mvid: b"",
            },
        );
        b.finish();
        let mut b = w.buffer(0x7002, 900);
        b.gc_event(950, GC_EVENT_START, 0);
        b.finish();
        let mut b = w.buffer(0x7001, 1100);
        b.leave(1500, 0x5000);
        b.enter(1600, 0x5000);
        b.finish();
        w.into_bytes()
    }

    #[test]
    fn header_kinds_threads_and_time() {
        let bytes = file();
        let s = summary(&File::parse(&bytes).unwrap());
        assert_eq!(s.format, "mlpd");
        assert_eq!(s.records, 5);
        assert_eq!(
            s.kinds,
            [
                ("GC/GC_EVENT".to_string(), 1),
                ("METADATA/NAME".to_string(), 1),
                ("METHOD/LEAVE".to_string(), 1),
                ("METHOD/ENTER".to_string(), 2),
            ]
        );
        let threads: Vec<_> = s
            .threads
            .iter()
            .map(|t| (t.tid, t.name.as_deref(), t.records, t.pid))
            .collect();
        assert_eq!(
            threads,
            [
                (0x7001, Some("Main"), 4, Some(42)),
                (0x7002, None, 1, Some(42))
            ]
        );
        assert_eq!(
            s.time,
            Some(TimeSpan {
                first: 900,
                last: 1600,
                duration_ns: 700
            })
        );
        assert_eq!(s.detail("buffers"), Some(&Value::U64(3)));
        assert_eq!(s.header.first(), Some(&("major", Value::U64(3))));
        assert!(s.header.contains(&("args", Value::Str("log:calls".into()))));
        assert_eq!((s.problems, s.truncation.as_ref()), (0, None));
    }

    #[test]
    fn a_cut_between_two_events_is_said() {
        let bytes = file();
        let f = File::parse(&bytes).unwrap();
        let last = f.buffers().last().unwrap().unwrap();
        let enter = last.events().nth(1).unwrap().unwrap().offset as usize;
        let s = summary(&File::parse(&bytes[..enter]).unwrap());
        assert_eq!(s.records, 4);
        assert_eq!(s.problems, 0);
        let t = s.truncation.unwrap();
        assert_eq!((t.offset, t.record), (enter as u64, Some(4)));
        // inside the event: the same cut, and no problem
        let s = summary(&File::parse(&bytes[..enter + 2]).unwrap());
        assert_eq!(s.problems, 0);
        let t = s.truncation.unwrap();
        assert_eq!((t.offset, t.record), (enter as u64, Some(4)));
    }
}
