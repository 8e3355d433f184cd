//! jitdump files → [`EventSink`]: every JIT_CODE_LOAD and JIT_CODE_MOVE becomes a
//! [`CodeRegion`] on the thread that wrote it, with the tier of a preceding SAMPLY_JIT_TIER for
//! the same code address. A jitdump has no calls; exporters show code
//! regions as JIT activity (instants on a timeline, a library with symbols, a `code` table, a
//! perf map).
//!
//! The origin is the earliest record timestamp (the header's own timestamp is wall-clock time
//! in some producers, see the jitdump note).

use std::collections::HashMap;
use std::io;

use profkit_jitdump::{JitDump, Record};

use super::FeedSummary;
use crate::events::{
    CodeEvent, CodeRegion, CodeTier, EventSink, ProcessInfo, ThreadInfo, TraceInfo,
};
use crate::func::FunctionTable;

/// An owned JIT_TIER.
#[derive(Clone, Debug)]
struct Tier {
    name: String,
    color: u32,
    js: bool,
}

/// Feeds the dump in `data` to `sink`. Records that do not decode are reported in the summary
/// and skipped; a cut-off file yields everything before the cut.
pub fn feed(data: &[u8], name: &str, sink: &mut dyn EventSink) -> io::Result<FeedSummary> {
    let dump = JitDump::parse(data).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut summary = FeedSummary::default();
    let origin = dump
        .records()
        .filter_map(|r| r.ok())
        .map(|r| r.header().timestamp)
        .min()
        .unwrap_or(0);
    let functions = FunctionTable::new();
    sink.begin(&TraceInfo {
        format: "jitdump",
        functions: &functions,
        clock: crate::Clock::NANOSECONDS,
        origin_ns: origin,
        name,
        samples: None,
        origin_unix_ns: None,
    })?;
    let pid = dump.header().pid;
    sink.process(&ProcessInfo { pid, name })?;
    let mut threads: HashMap<u32, u32> = HashMap::new();
    let mut tname = String::new();
    // code_index → name and tier, so a MOVE carries what the LOAD said.
    let mut names: HashMap<u64, (String, Option<Tier>)> = HashMap::new();
    // JIT_TIER records wait for the next LOAD of their code_addr.
    let mut pending_tiers: HashMap<u64, Tier> = HashMap::new();
    let mut records = dump.records();
    for raw in records.by_ref() {
        let raw = match raw {
            Ok(r) => r,
            Err(e) => {
                summary.problems.push(e.to_string());
                continue;
            }
        };
        let time = raw.header().timestamp.saturating_sub(origin);
        let rec = match raw.parse() {
            Ok(r) => r,
            Err(e) => {
                summary.problems.push(e.to_string());
                continue;
            }
        };
        let (rpid, tid, address, size, event, code_index, fname) = match rec {
            Record::JitTier(t) => {
                pending_tiers.insert(
                    t.code_addr,
                    Tier {
                        name: String::from_utf8_lossy(t.name).into_owned(),
                        color: t.color,
                        js: t.flags & 1 != 0,
                    },
                );
                continue;
            }
            Record::CodeLoad(l) => (
                l.pid,
                l.tid,
                l.code_addr,
                l.code_size,
                CodeEvent::Load,
                l.code_index,
                String::from_utf8_lossy(l.name),
            ),
            Record::CodeMove(m) => (
                m.pid,
                m.tid,
                m.new_code_addr,
                m.code_size,
                CodeEvent::Move {
                    old_address: m.old_code_addr,
                },
                m.code_index,
                names
                    .get(&m.code_index)
                    .map_or(std::borrow::Cow::Borrowed(""), |n| {
                        std::borrow::Cow::Owned(n.0.clone())
                    }),
            ),
            _ => continue,
        };
        let tier = match event {
            CodeEvent::Load => {
                let tier = pending_tiers.remove(&address);
                names.insert(code_index, (fname.to_string(), tier.clone()));
                tier
            }
            CodeEvent::Move { .. } => names.get(&code_index).and_then(|n| n.1.clone()),
        };
        let next = threads.len() as u32;
        let index = match threads.get(&tid) {
            Some(&i) => i,
            None => {
                threads.insert(tid, next);
                tname.clear();
                tname.push_str("thread ");
                tname.push_str(itoa::Buffer::new().format(tid));
                sink.thread(&ThreadInfo {
                    index: next,
                    pid: rpid,
                    tid: u64::from(tid),
                    name: &tname,
                })?;
                next
            }
        };
        summary.other_events += 1;
        sink.code(&CodeRegion {
            thread: Some(index),
            pid: rpid,
            time,
            address,
            size,
            name: &fname,
            event,
            code_index: Some(code_index),
            tier: tier.as_ref().map(|t| CodeTier {
                name: &t.name,
                color: t.color,
                js: t.js,
            }),
        })?;
    }
    summary.truncation = records.truncation().cloned();
    summary.threads = threads.len() as u32;
    sink.finish()?;
    Ok(summary)
}
