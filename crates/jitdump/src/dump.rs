//! `profkit dump`: one line per record, as text or as NDJSON, for jitdumps and perf maps.
//!
//! A [`Dumper`] renders the file header, each [`RawRecord`] and each perf map entry into any
//! `&mut dyn Write`; [`write_dump`] walks a whole dump with it ([`write_records`] a dump in
//! memory or a stream) and [`write_perf_map`] a whole perf map. `profkit dump --follow` feeds
//! the records of a growing file to the same [`Dumper`], so all print the same lines.
//!
//! Text: `HEADER …`, then `#<index> <offset> <TYPE> ts <timestamp> size <total_size>` and the
//! record's fields; DEBUG_INFO entries, DEBUG_INFO2 functions, inline calls and lines, and
//! (with [`DumpOptions::code`]) code bytes, unwinding tables and embedded sources follow on
//! lines indented by four spaces. V8's corrupt DEBUG_INFO records are shown with their entries
//! recovered by the fixed stride and the readable tail of the overwritten file name (`…tail`).
//!
//! NDJSON: one object per line with the keys in alphabetical order: the header
//! (`"type":"HEADER"`), then per record `index`, `offset`, `type`, `timestamp`, `size` and
//! the record's fields (`error` instead when the body does not parse). Byte strings are
//! lowercase hex, names are UTF-8 (invalid bytes replaced).

use std::io::{self, Write};

use profkit_common::json::{self, push_hex, Object as Obj};

use crate::error::{Error, Truncation};
use crate::perfmap::{self, PerfMapEntry, PerfMapLineError};
use crate::read::{DebugInfo, DebugWalkEnd, Header, JitDump, RawRecord, Record, RecordSource};
use crate::validate::recovered_name_tail;

/// How records are rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// NDJSON instead of text.
    pub json: bool,
    /// Also show code bytes, unwinding tables, embedded source contents and unknown bodies.
    pub code: bool,
}

/// Renders headers, records and perf map entries; keeps a scratch buffer between calls.
#[derive(Debug, Default)]
pub struct Dumper {
    options: DumpOptions,
    buf: Vec<u8>,
}

/// How a [`write_dump`] walk ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpOutcome {
    /// Records rendered.
    pub records: u64,
    /// Where the file is cut, if it is (every record before the cut was rendered).
    pub truncation: Option<Truncation>,
    /// The corrupt record that stopped the walk, if any.
    pub error: Option<Error>,
}

/// Renders `dump`: its header, then every record until the end, a cut or a corrupt record.
pub fn write_dump(
    out: &mut dyn Write,
    dump: &JitDump<'_>,
    options: DumpOptions,
) -> io::Result<DumpOutcome> {
    write_records(out, &mut dump.source(), options)
}

/// [`write_dump`] of a dump in memory or of a stream.
pub fn write_records(
    out: &mut dyn Write,
    records: &mut dyn RecordSource,
    options: DumpOptions,
) -> io::Result<DumpOutcome> {
    let mut d = Dumper::new(options);
    d.header(out, &records.header())?;
    let mut outcome = DumpOutcome::default();
    while let Some(raw) = records.next() {
        match raw {
            Ok(raw) => {
                d.record(out, &raw)?;
                outcome.records += 1;
            }
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        }
    }
    outcome.truncation = records.truncation().cloned();
    Ok(outcome)
}

/// Renders every entry of the perf map `text`; malformed lines go to `on_error` (and are not
/// rendered). Returns the number of entries rendered.
pub fn write_perf_map(
    out: &mut dyn Write,
    text: &[u8],
    options: DumpOptions,
    on_error: &mut dyn FnMut(&PerfMapLineError),
) -> io::Result<u64> {
    let mut d = Dumper::new(options);
    let mut n = 0;
    for e in perfmap::entries(text) {
        match e {
            Ok(e) => {
                d.perf_map_entry(out, &e)?;
                n += 1;
            }
            Err(e) => on_error(&e),
        }
    }
    Ok(n)
}

/// A name or path for a text line: UTF-8 (invalid bytes replaced) with its control
/// characters escaped (a raw ESC would reach the terminal, a newline would end the line).
fn text(b: &[u8]) -> String {
    json::controls_escaped(&lossy(b)).into_owned()
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// Writes `bytes` as lowercase hex.
fn write_hex(out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(bytes.len().min(1 << 16) * 2);
    for chunk in bytes.chunks(1 << 16) {
        buf.clear();
        push_hex(&mut buf, chunk);
        out.write_all(&buf)?;
    }
    Ok(())
}

/// DEBUG_INFO entries as `(addr, line, discrim, file)`, recovered when the record is corrupt,
/// and the record's status: `ok`, `corrupt-recovered` or `corrupt`.
fn debug_entries(d: &DebugInfo<'_>) -> (Vec<(u64, u32, u32, String)>, &'static str) {
    let walked = || {
        d.entries()
            .map(|e| (e.addr, e.line, e.discrim, lossy(e.file).into_owned()))
            .collect()
    };
    match d.walk_end() {
        DebugWalkEnd::Exact { .. } => (walked(), "ok"),
        _ => match d.fixed_stride() {
            Some(stride) => (
                (0..d.nr_entry as usize)
                    .filter_map(|i| d.entry_at_stride(stride, i))
                    .map(|e| {
                        (
                            e.addr,
                            e.line,
                            e.discrim,
                            format!("…{}", recovered_name_tail(e.file)),
                        )
                    })
                    .collect(),
                "corrupt-recovered",
            ),
            None => (walked(), "corrupt"),
        },
    }
}

fn push_u64(buf: &mut Vec<u8>, v: u64) {
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "{v}");
}

/// A JSON array of `items`, each written by `f`.
fn array<T>(buf: &mut Vec<u8>, items: impl Iterator<Item = T>, mut f: impl FnMut(&mut Vec<u8>, T)) {
    buf.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        f(buf, item);
    }
    buf.push(b']');
}

/// A JSON array of numbers.
fn numbers(buf: &mut Vec<u8>, values: &[u64]) {
    array(buf, values.iter(), |b, v| push_u64(b, *v));
}

impl Dumper {
    /// A renderer with `options`.
    pub fn new(options: DumpOptions) -> Dumper {
        Dumper {
            options,
            buf: Vec::with_capacity(1024),
        }
    }

    /// The options it renders with.
    pub fn options(&self) -> DumpOptions {
        self.options
    }

    /// Renders the file header (`HEADER …`, or the `"type":"HEADER"` object).
    pub fn header(&mut self, out: &mut dyn Write, h: &Header<'_>) -> io::Result<()> {
        if !self.options.json {
            return writeln!(
                out,
                "HEADER {}-endian version {} total_size {} elf_mach {} pad1 {:#x} pid {} timestamp {} flags {:#x}",
                h.endian.name(),
                h.version,
                h.total_size,
                h.elf_mach,
                h.pad1,
                h.pid,
                h.timestamp,
                h.flags
            );
        }
        self.buf.clear();
        let mut o = Obj::new(&mut self.buf);
        o.num("elf_mach", h.elf_mach)
            .str("endian", h.endian.name())
            .num("flags", h.flags)
            .num("offset", 0u64)
            .num("pad1", h.pad1)
            .num("pid", h.pid)
            .num("timestamp", h.timestamp)
            .num("total_size", h.total_size)
            .str("type", "HEADER")
            .num("version", h.version);
        o.end();
        self.buf.push(b'\n');
        out.write_all(&self.buf)
    }

    /// Renders one record (text: one line plus indented detail lines; NDJSON: one line).
    pub fn record(&mut self, out: &mut dyn Write, raw: &RawRecord<'_>) -> io::Result<()> {
        if self.options.json {
            self.buf.clear();
            record_json(&mut self.buf, raw, self.options.code);
            self.buf.push(b'\n');
            out.write_all(&self.buf)
        } else {
            record_text(out, raw, self.options.code)
        }
    }

    /// Renders one perf map entry (text: line number, start, size, name; NDJSON:
    /// `{"line","name","size","start"}`).
    pub fn perf_map_entry(&mut self, out: &mut dyn Write, e: &PerfMapEntry<'_>) -> io::Result<()> {
        if !self.options.json {
            write!(out, "{:>6} {:#014x} {:#8x} ", e.line, e.start, e.size)?;
            out.write_all(text(e.name).as_bytes())?;
            return writeln!(out);
        }
        self.buf.clear();
        let mut o = Obj::new(&mut self.buf);
        o.num("line", e.line as u64)
            .str("name", &lossy(e.name))
            .num("size", e.size)
            .num("start", e.start);
        o.end();
        self.buf.push(b'\n');
        out.write_all(&self.buf)
    }
}

/// The NDJSON object of one record (without the newline).
fn record_json(buf: &mut Vec<u8>, raw: &RawRecord<'_>, code: bool) {
    let index = raw.index as u64;
    let size = raw.total_size() as u64;
    let type_name = raw.record_type.to_string();
    let mut o = Obj::new(buf);
    let parsed = match raw.parse() {
        Ok(p) => p,
        Err(e) => {
            o.str("error", &e.to_string())
                .num("index", index)
                .num("offset", raw.offset)
                .num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
            o.end();
            return;
        }
    };
    // Every record's keys (index, offset, size, timestamp, type) are interleaved with its
    // own in alphabetical order.
    match parsed {
        Record::CodeLoad(l) => {
            if code {
                if let Some(c) = l.code {
                    o.hex("code", c);
                } else {
                    o.key("code").extend_from_slice(b"null");
                }
            }
            o.num("code_addr", l.code_addr)
                .num("code_index", l.code_index)
                .bool("code_present", l.code.is_some())
                .num("code_size", l.code_size)
                .num("index", index)
                .str("name", &lossy(l.name))
                .num("offset", raw.offset)
                .num("pid", l.pid)
                .num("size", size)
                .num("tid", l.tid)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name)
                .num("vma", l.vma);
        }
        Record::CodeMove(m) => {
            o.num("code_index", m.code_index)
                .num("code_size", m.code_size)
                .num("index", index)
                .num("new_code_addr", m.new_code_addr)
                .num("offset", raw.offset)
                .num("old_code_addr", m.old_code_addr)
                .num("pid", m.pid)
                .num("size", size)
                .num("tid", m.tid)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name)
                .num("vma", m.vma);
        }
        Record::DebugInfo(d) => {
            let (entries, status) = debug_entries(&d);
            o.num("code_addr", d.code_addr);
            array(o.key("entries"), entries.iter(), |b, (a, l, c, f)| {
                let mut e = Obj::new(b);
                e.num("addr", *a)
                    .num("discrim", *c)
                    .str("file", f)
                    .num("line", *l);
                e.end();
            });
            o.num("index", index)
                .num("nr_entry", d.nr_entry)
                .num("offset", raw.offset)
                .num("size", size)
                .str("status", status)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
        }
        Record::UnwindingInfo(u) => {
            if code {
                o.hex("eh_frame", u.eh_frame())
                    .hex("eh_frame_hdr", u.eh_frame_hdr());
            }
            o.num("eh_frame_hdr_size", u.eh_frame_hdr_size)
                .num("index", index)
                .num("mapped_size", u.mapped_size)
                .num("offset", raw.offset)
                .num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name)
                .num("unwind_data_size", u.unwind_data_size);
        }
        Record::DebugInfo2(d) => {
            array(o.key("files"), d.files(), |b, s| {
                json::push_str(b, &lossy(s))
            });
            array(o.key("function_names"), d.function_names(), |b, s| {
                json::push_str(b, &lossy(s))
            });
            array(o.key("functions"), d.functions(), |b, f| {
                let mut e = Obj::new(b);
                e.num("column", f.start_column)
                    .num("file", f.file_index)
                    .num("flags", f.flags)
                    .num("line", f.start_line)
                    .num("name", f.function_name_index);
                e.end();
            });
            o.num("index", index);
            array(o.key("inline_calls"), d.inline_calls(), |b, c| {
                let mut e = Obj::new(b);
                e.num("call_column", c.call_column_number)
                    .num("call_line", c.call_line_number)
                    .num("depth", c.depth)
                    .num("function", c.function_index)
                    .num("ranges", c.range_count);
                e.end();
            });
            array(o.key("lines"), d.lines(), |b, l| {
                numbers(
                    b,
                    &[
                        l.code_offset.into(),
                        l.file_index.into(),
                        l.line_number.into(),
                        l.column_number.into(),
                    ],
                )
            });
            o.num("offset", raw.offset);
            array(o.key("ranges"), d.ranges(), |b, r| {
                numbers(b, &[r.start_offset.into(), r.size.into()])
            });
            o.num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
        }
        Record::JitTier(t) => {
            o.num("code_addr", t.code_addr)
                .num("color", t.color)
                .str("color_name", t.color_name())
                .num("flags", t.flags)
                .num("index", index)
                .str("name", &lossy(t.name))
                .num("offset", raw.offset)
                .num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
        }
        Record::EmbeddedSourceFile(s) => {
            if code {
                o.str("content", &lossy(s.content));
            }
            o.num("content_size", s.content.len() as u64)
                .num("flags", s.flags)
                .num("index", index)
                .num("offset", raw.offset)
                .str("path", &lossy(s.path))
                .num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
        }
        // JIT_CODE_CLOSE and ids this crate does not know.
        other => {
            if !matches!(other, Record::CodeClose) {
                if code {
                    o.hex("body", raw.body);
                }
                o.num("body_size", raw.body.len() as u64);
            }
            o.num("index", index)
                .num("offset", raw.offset)
                .num("size", size)
                .num("timestamp", raw.timestamp)
                .str("type", &type_name);
        }
    }
    o.end();
}

/// The text lines of one record.
fn record_text(out: &mut dyn Write, raw: &RawRecord<'_>, code: bool) -> io::Result<()> {
    write!(
        out,
        "#{:<6} {:#010x} {:<27} ts {} size {}",
        raw.index,
        raw.offset,
        raw.record_type.to_string(),
        raw.timestamp,
        raw.total_size()
    )?;
    let parsed = match raw.parse() {
        Ok(p) => p,
        Err(e) => return writeln!(out, " MALFORMED: {}", e.message),
    };
    match parsed {
        Record::CodeLoad(l) => {
            write!(
                out,
                " pid {} tid {} vma {:#x} code_addr {:#x} code_size {} code_index {} name ",
                l.pid, l.tid, l.vma, l.code_addr, l.code_size, l.code_index
            )?;
            out.write_all(text(l.name).as_bytes())?;
            if l.code.is_none() {
                write!(out, " (no code bytes)")?;
            }
            writeln!(out)?;
            if let Some(bytes) = l.code.filter(|_| code) {
                write!(out, "    code ")?;
                write_hex(out, bytes)?;
                writeln!(out)?;
            }
        }
        Record::CodeMove(m) => writeln!(
            out,
            " pid {} tid {} vma {:#x} old {:#x} new {:#x} code_size {} code_index {}",
            m.pid, m.tid, m.vma, m.old_code_addr, m.new_code_addr, m.code_size, m.code_index
        )?,
        Record::DebugInfo(d) => {
            let (entries, status) = debug_entries(&d);
            writeln!(
                out,
                " code_addr {:#x} nr_entry {}{}",
                d.code_addr,
                d.nr_entry,
                match status {
                    "ok" => "",
                    "corrupt-recovered" =>
                        " CORRUPT (file names overwritten; entries recovered by fixed stride)",
                    _ => " CORRUPT (entries do not walk to the record's end)",
                }
            )?;
            for (a, l, c, f) in entries {
                writeln!(
                    out,
                    "    {a:#x} line {l} discrim {c} {}",
                    json::controls_escaped(&f)
                )?;
            }
        }
        Record::CodeClose => writeln!(out)?,
        Record::UnwindingInfo(u) => {
            writeln!(
                out,
                " unwind_data_size {} eh_frame_hdr_size {} mapped_size {}",
                u.unwind_data_size, u.eh_frame_hdr_size, u.mapped_size
            )?;
            if code {
                write!(out, "    eh_frame ")?;
                write_hex(out, u.eh_frame())?;
                write!(out, "\n    eh_frame_hdr ")?;
                write_hex(out, u.eh_frame_hdr())?;
                writeln!(out)?;
            }
        }
        Record::DebugInfo2(d) => {
            let files: Vec<String> = d.files().map(text).collect();
            let names: Vec<String> = d.function_names().map(text).collect();
            writeln!(
                out,
                " files {} functions {} inline_calls {} ranges {} lines {}",
                files.len(),
                d.counts.function_count,
                d.counts.inline_call_record_count,
                d.counts.range_count,
                d.counts.line_record_count
            )?;
            let name_of = |i: u32| names.get(i as usize).map(String::as_str).unwrap_or("?");
            let file_of = |i: u32| files.get(i as usize).map(String::as_str).unwrap_or("?");
            for (i, f) in d.functions().enumerate() {
                writeln!(
                    out,
                    "    function {i}: {} at {}:{}:{} flags {:#x}",
                    name_of(f.function_name_index),
                    file_of(f.file_index),
                    f.start_line,
                    f.start_column,
                    f.flags
                )?;
            }
            let mut ranges = d.ranges();
            for c in d.inline_calls() {
                let rs: Vec<String> = ranges
                    .by_ref()
                    .take(c.range_count as usize)
                    .map(|r| {
                        format!(
                            "+{:#x}..+{:#x}",
                            r.start_offset,
                            u64::from(r.start_offset) + u64::from(r.size)
                        )
                    })
                    .collect();
                writeln!(
                    out,
                    "    {:indent$}inline function {} called at line {}:{} {}",
                    "",
                    c.function_index,
                    c.call_line_number,
                    c.call_column_number,
                    rs.join(" "),
                    indent = 2 * c.depth.min(64) as usize
                )?;
            }
            for l in d.lines() {
                writeln!(
                    out,
                    "    +{:#x} {}:{}:{}",
                    l.code_offset,
                    file_of(l.file_index),
                    l.line_number,
                    l.column_number
                )?;
            }
        }
        Record::JitTier(t) => {
            write!(
                out,
                " code_addr {:#x} color {} ({}) flags {:#x} name ",
                t.code_addr,
                t.color,
                t.color_name(),
                t.flags
            )?;
            out.write_all(text(t.name).as_bytes())?;
            writeln!(out)?;
        }
        Record::EmbeddedSourceFile(s) => {
            write!(out, " content_size {} path ", s.content.len())?;
            out.write_all(text(s.path).as_bytes())?;
            writeln!(out)?;
            if code {
                out.write_all(s.content)?;
                writeln!(out)?;
            }
        }
        _ => writeln!(
            out,
            " (unknown record id {}, {} body bytes)",
            raw.record_type.0,
            raw.body.len()
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{Endian, RecordType};
    use crate::write::{CodeLoadData, HeaderOptions, JitDumpWriter};

    fn file() -> Vec<u8> {
        let h = HeaderOptions {
            endian: Endian::Little,
            pid: 7,
            timestamp: 5,
            elf_mach: 62,
            ..HeaderOptions::default()
        };
        let mut w = JitDumpWriter::new(Vec::new(), &h).unwrap();
        let mut load = CodeLoadData::new(3, 0x1000, &[0xc3, 0x90], "f \"q\"\n");
        load.timestamp = 9;
        load.tid = 8;
        load.pid = 7;
        w.write_code_load(&load).unwrap();
        // A LOAD body too short for its fixed part, and an unknown id.
        w.write_raw_record(RecordType::CODE_LOAD, 10, &[1, 2, 3])
            .unwrap();
        w.write_raw_record(RecordType(99), 11, &[0xab]).unwrap();
        w.write_code_close_record(12).unwrap();
        w.into_inner()
    }

    fn render(options: DumpOptions) -> String {
        let bytes = file();
        let dump = JitDump::parse(&bytes).unwrap();
        let mut out = Vec::new();
        let o = write_dump(&mut out, &dump, options).unwrap();
        assert_eq!(o.records, 4);
        assert!(o.truncation.is_none() && o.error.is_none());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text() {
        let t = render(DumpOptions {
            json: false,
            code: true,
        });
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "HEADER little-endian version 1 total_size 40 elf_mach 62 pad1 0x0 pid 7 timestamp 5 flags 0x0"
        );
        // The name's newline is escaped: one line per record.
        assert_eq!(lines[1], "#0      0x00000028 JIT_CODE_LOAD               ts 9 size 65 pid 7 tid 8 vma 0x1000 code_addr 0x1000 code_size 2 code_index 3 name f \"q\"\\n");
        assert_eq!(lines[2], "    code c390");
        assert!(
            lines[3].ends_with(
                "size 19 MALFORMED: JIT_CODE_LOAD total_size 19 is below its 56-byte fixed part"
            ),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].ends_with(" (unknown record id 99, 1 body bytes)"),
            "{}",
            lines[4]
        );
        assert!(lines[5].starts_with("#3 ") && lines[5].contains("JIT_CODE_CLOSE"));
    }

    #[test]
    fn json() {
        let t = render(DumpOptions {
            json: true,
            code: true,
        });
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"elf_mach":62,"endian":"little","flags":0,"offset":0,"pad1":0,"pid":7,"timestamp":5,"total_size":40,"type":"HEADER","version":1}"#
        );
        assert_eq!(
            lines[1],
            r#"{"code":"c390","code_addr":4096,"code_index":3,"code_present":true,"code_size":2,"index":0,"name":"f \"q\"\n","offset":40,"pid":7,"size":65,"tid":8,"timestamp":9,"type":"JIT_CODE_LOAD","vma":4096}"#
        );
        assert!(
            lines[2]
                .starts_with(r#"{"error":"record #1 at offset 0x69: JIT_CODE_LOAD total_size 19"#),
            "{}",
            lines[2]
        );
        assert_eq!(
            lines[3],
            r#"{"body":"ab","body_size":1,"index":2,"offset":124,"size":17,"timestamp":11,"type":"UNKNOWN_99"}"#
        );
        assert_eq!(
            lines[4],
            r#"{"index":3,"offset":141,"size":16,"timestamp":12,"type":"JIT_CODE_CLOSE"}"#
        );
    }

    #[test]
    fn perf_map_entries() {
        let text = b"1000 10 a b\nbad\n0x2000 0x20 c\n";
        let mut errors = Vec::new();
        let mut out = Vec::new();
        let n = write_perf_map(&mut out, text, DumpOptions::default(), &mut |e| {
            errors.push(e.line)
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(errors, [2]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "     1 0x000000001000     0x10 a b\n     3 0x000000002000     0x20 c\n"
        );
        let mut out = Vec::new();
        write_perf_map(
            &mut out,
            text,
            DumpOptions {
                json: true,
                code: false,
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap().lines().next().unwrap(),
            r#"{"line":1,"name":"a b","size":16,"start":4096}"#
        );
    }
}
