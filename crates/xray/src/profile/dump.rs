//! One line per block and record of a profiling-mode file: what `profkit dump` prints
//! ([`dump`]).
//!
//! Text: `block #0 at 0x20: thread 9019, number 0, 732 bytes`, then one indented line per
//! record, its path **root first** (the file stores it leaf first) with function ids joined by
//! ` > `: `  #3 at 0x60: 10 > 7 > 7 calls 5 time 19526` (time: inclusive TSC ticks). NDJSON:
//! `{"cut":false,"index":0,"number":0,"offset":32,"size":732,"tid":9019,"type":"Block"}` and
//! `{"block":0,"calls":5,"index":3,"offset":96,"path":[10,7,7],"tid":9019,"time":19526,"type":"Path"}`
//! (keys in alphabetical order, paths root first).

use std::io::{self, Write};

use profkit_common::json;

use crate::dump::DumpOutcome;
use crate::profile::{Profile, ProfileEntry};

/// Prints every block and record of `profile` to `out` (see the module docs); `json` selects
/// NDJSON. Problems and the cut of a truncated file are returned, not printed. The output is
/// flushed.
pub fn dump(profile: &Profile<'_>, json: bool, out: &mut dyn Write) -> io::Result<DumpOutcome> {
    let mut outcome = DumpOutcome::default();
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut it = profile.entries();
    for entry in it.by_ref() {
        line.clear();
        match entry {
            ProfileEntry::Block(b) => {
                if json {
                    line.extend_from_slice(b"{\"cut\":");
                    line.extend_from_slice(if b.cut { b"true" } else { b"false" });
                    push_num(&mut line, "index", b.index);
                    push_num(&mut line, "number", b.number);
                    push_num(&mut line, "offset", b.offset);
                    push_num(&mut line, "size", b.size);
                    push_num(&mut line, "tid", b.tid);
                    line.extend_from_slice(b",\"type\":");
                    json::push_str(&mut line, "Block");
                    line.extend_from_slice(b"}\n");
                } else {
                    writeln!(
                        line,
                        "block #{} at {:#x}: thread {}, number {}, {} bytes{}",
                        b.index,
                        b.offset,
                        b.tid,
                        b.number,
                        b.size,
                        if b.cut {
                            " (cut by the end of the file)"
                        } else {
                            ""
                        }
                    )?;
                }
            }
            ProfileEntry::Record(r) => {
                outcome.records += 1;
                if json {
                    line.extend_from_slice(b"{\"block\":");
                    line.extend_from_slice(itoa::Buffer::new().format(r.block).as_bytes());
                    push_num(&mut line, "calls", r.call_count);
                    push_num(&mut line, "index", r.index);
                    push_num(&mut line, "offset", r.offset);
                    line.extend_from_slice(b",\"path\":[");
                    for (i, id) in r.path.root_first().enumerate() {
                        if i > 0 {
                            line.push(b',');
                        }
                        line.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
                    }
                    line.push(b']');
                    push_num(&mut line, "tid", r.tid);
                    push_num(&mut line, "time", r.cumulative_time);
                    line.extend_from_slice(b",\"type\":");
                    json::push_str(&mut line, "Path");
                    line.extend_from_slice(b"}\n");
                } else {
                    write!(line, "  #{} at {:#x}: ", r.index, r.offset)?;
                    for (i, id) in r.path.root_first().enumerate() {
                        if i > 0 {
                            line.extend_from_slice(b" > ");
                        }
                        line.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
                    }
                    if r.path.is_empty() {
                        line.extend_from_slice(b"(empty path)");
                    }
                    writeln!(line, " calls {} time {}", r.call_count, r.cumulative_time)?;
                }
            }
            ProfileEntry::Problem(e) => {
                outcome.problems.push(e);
                continue;
            }
        }
        out.write_all(&line)?;
    }
    outcome.truncation = it.truncation().cloned();
    out.flush()?;
    Ok(outcome)
}

fn push_num(line: &mut Vec<u8>, key: &str, v: impl itoa::Integer) {
    line.push(b',');
    json::push_str(line, key);
    line.push(b':');
    line.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}
