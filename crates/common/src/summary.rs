//! What `profkit info` shows of a file: one [`Summary`] shape for every format, rendered as
//! text or as the JSON object `profkit.info/2` (docs/cli.md).
//!
//! A format crate fills in what it knows: the header fields in the spec's order, records per
//! kind, threads, the time span, a few format-specific details, problems and the cut.

use std::io::{self, Write};

use crate::json;
use crate::truncation::Truncation;

/// A header field's or a detail's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// A flag.
    Bool(bool),
    /// An unsigned number.
    U64(u64),
    /// A signed number.
    I64(i64),
    /// A floating-point number.
    F64(f64),
    /// An unsigned number best read in hex (flags, addresses); JSON gets the number.
    Hex(u64),
    /// Text.
    Str(String),
    /// A list.
    List(Vec<Value>),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::U64(v)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::U64(u64::from(v))
    }
}
impl From<u16> for Value {
    fn from(v: u16) -> Value {
        Value::U64(u64::from(v))
    }
}
impl From<u8> for Value {
    fn from(v: u8) -> Value {
        Value::U64(u64::from(v))
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::U64(v as u64)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::I64(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl Value {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::U64(v) | Value::Hex(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Value::I64(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Value::F64(v) if v.is_finite() => out.extend_from_slice(v.to_string().as_bytes()),
            Value::F64(_) => out.extend_from_slice(b"null"),
            Value::Str(s) => json::push_str(out, s),
            Value::List(l) => {
                out.push(b'[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write_json(out);
                }
                out.push(b']');
            }
        }
    }

    /// The value as `info` prints it in text.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => "-".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::U64(v) => v.to_string(),
            Value::I64(v) => v.to_string(),
            Value::F64(v) => v.to_string(),
            Value::Hex(v) => format!("{v:#x}"),
            Value::Str(s) => s.clone(),
            Value::List(l) => l.iter().map(Value::to_text).collect::<Vec<_>>().join(", "),
        }
    }
}

/// A thread (or process) that records belong to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadSummary {
    /// Process id, when the format records one.
    pub pid: Option<u32>,
    /// Thread id as the format records it.
    pub tid: u64,
    /// Thread name, when the file names it.
    pub name: Option<String>,
    /// Records (events) of the thread.
    pub records: u64,
}

/// The time covered by the records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeSpan {
    /// Earliest record time, in the format's raw unit.
    pub first: u64,
    /// Latest record time, in the format's raw unit.
    pub last: u64,
    /// `last - first` in nanoseconds.
    pub duration_ns: u64,
}

/// What `profkit info` shows of a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Format name: `jitdump`, `perf-map`, `xray`, `xray-yaml`, `mlpd`, `perf.data`.
    pub format: &'static str,
    /// The variant and version in words, e.g. `jitdump version 1, little-endian`.
    pub kind: String,
    /// Header fields, in the specification's order and with its names.
    pub header: Vec<(&'static str, Value)>,
    /// Complete records (events, lines) in the file.
    pub records: u64,
    /// Records per kind, in the format's order.
    pub kinds: Vec<(String, u64)>,
    /// Threads, in order of first appearance.
    pub threads: Vec<ThreadSummary>,
    /// Time covered, when records carry times.
    pub time: Option<TimeSpan>,
    /// Other facts of the format (code bytes, buffers, …), in a fixed order.
    pub details: Vec<(&'static str, Value)>,
    /// Records or parts that could not be decoded (and were skipped).
    pub problems: u64,
    /// The first such problem, with its offset.
    pub first_problem: Option<String>,
    /// Where the file is cut, if it is.
    pub truncation: Option<Truncation>,
}

/// Facts about the input itself that the format crate does not know.
#[derive(Clone, Copy, Debug, Default)]
pub struct Source<'a> {
    /// The name for messages (a path, or `<stdin>`).
    pub file: &'a str,
    /// Size in bytes (decompressed).
    pub size: u64,
    /// `Some("gzip")` when the input was compressed.
    pub compression: Option<&'static str>,
}

/// The JSON schema name of [`Summary::write_json`].
pub const INFO_SCHEMA: &str = "profkit.info/2";

impl Summary {
    /// Adds one record of `kind` (kinds keep the order of their first record).
    pub fn count_kind(&mut self, kind: &str) {
        match self.kinds.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => self.kinds.push((kind.to_string(), 1)),
        }
    }

    /// A detail by name.
    pub fn detail(&self, name: &str) -> Option<&Value> {
        self.details
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// The JSON object `profkit.info/2` (one line, no newline).
    pub fn write_json(&self, out: &mut dyn Write, src: &Source<'_>) -> io::Result<()> {
        let mut o: Vec<u8> = Vec::with_capacity(1024);
        o.extend_from_slice(b"{\"schema\":");
        json::push_str(&mut o, INFO_SCHEMA);
        o.extend_from_slice(b",\"file\":");
        json::push_str(&mut o, src.file);
        o.extend_from_slice(b",\"format\":");
        json::push_str(&mut o, self.format);
        o.extend_from_slice(b",\"kind\":");
        json::push_str(&mut o, &self.kind);
        o.extend_from_slice(b",\"compression\":");
        Value::from(src.compression).write_json(&mut o);
        o.extend_from_slice(format!(",\"size\":{}", src.size).as_bytes());
        write_object(&mut o, "header", &self.header);
        o.extend_from_slice(format!(",\"records\":{}", self.records).as_bytes());
        o.extend_from_slice(b",\"kinds\":{");
        for (i, (k, n)) in self.kinds.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            json::push_str(&mut o, k);
            o.extend_from_slice(format!(":{n}").as_bytes());
        }
        o.extend_from_slice(b"},\"threads\":[");
        for (i, t) in self.threads.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            o.extend_from_slice(b"{\"pid\":");
            Value::from(t.pid).write_json(&mut o);
            o.extend_from_slice(format!(",\"tid\":{},\"name\":", t.tid).as_bytes());
            Value::from(t.name.clone()).write_json(&mut o);
            o.extend_from_slice(format!(",\"records\":{}}}", t.records).as_bytes());
        }
        o.extend_from_slice(b"],\"time\":");
        match &self.time {
            Some(t) => o.extend_from_slice(
                format!(
                    "{{\"first\":{},\"last\":{},\"duration_ns\":{}}}",
                    t.first, t.last, t.duration_ns
                )
                .as_bytes(),
            ),
            None => o.extend_from_slice(b"null"),
        }
        write_object(&mut o, "details", &self.details);
        o.extend_from_slice(
            format!(",\"problems\":{},\"first_problem\":", self.problems).as_bytes(),
        );
        Value::from(self.first_problem.clone()).write_json(&mut o);
        o.extend_from_slice(b",\"truncated\":");
        crate::truncation::push_json(&mut o, self.truncation.as_ref());
        o.push(b'}');
        out.write_all(&o)
    }

    /// The text `profkit info` prints.
    pub fn write_text(&self, out: &mut dyn Write, src: &Source<'_>) -> io::Result<()> {
        writeln!(out, "file:      {}", src.file)?;
        let compression = match src.compression {
            Some(c) => format!(", {c}-compressed"),
            None => String::new(),
        };
        writeln!(
            out,
            "format:    {}{compression}, {} bytes",
            self.kind, src.size
        )?;
        if !self.header.is_empty() {
            let fields: Vec<String> = self
                .header
                .iter()
                .map(|(k, v)| format!("{k} {}", v.to_text()))
                .collect();
            writeln!(out, "header:    {}", fields.join(", "))?;
        }
        writeln!(out, "records:   {}", self.records)?;
        let width = self
            .kinds
            .iter()
            .map(|(k, _)| k.len())
            .max()
            .unwrap_or(0)
            .max(24);
        for (k, n) in &self.kinds {
            writeln!(out, "  {k:<width$} {n:>12}")?;
        }
        writeln!(out, "threads:   {}", self.threads.len())?;
        for t in self.threads.iter().take(64) {
            let pid = t.pid.map_or(String::new(), |p| format!("pid {p:<8} "));
            let name = t
                .name
                .as_deref()
                .map_or(String::new(), |n| format!(" {n:?}"));
            writeln!(
                out,
                "  {pid}tid {:<10}{name} {:>12} records",
                t.tid, t.records
            )?;
        }
        if self.threads.len() > 64 {
            writeln!(out, "  … {} more", self.threads.len() - 64)?;
        }
        match &self.time {
            Some(t) => writeln!(
                out,
                "time:      {} .. {} ({:.6} s)",
                t.first,
                t.last,
                t.duration_ns as f64 / 1e9
            )?,
            None => writeln!(out, "time:      -")?,
        }
        for (k, v) in &self.details {
            let label = format!("{}:", k.replace('_', " "));
            writeln!(out, "{label:<10} {}", v.to_text())?;
        }
        if self.problems > 0 {
            writeln!(
                out,
                "problems:  {} (first: {})",
                self.problems,
                self.first_problem.as_deref().unwrap_or("-")
            )?;
        }
        match &self.truncation {
            Some(t) => writeln!(out, "truncated: {t}")?,
            None => writeln!(out, "truncated: no")?,
        }
        Ok(())
    }
}

fn write_object(o: &mut Vec<u8>, name: &str, fields: &[(&'static str, Value)]) {
    o.push(b',');
    json::push_str(o, name);
    o.extend_from_slice(b":{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        json::push_str(o, k);
        o.push(b':');
        v.write_json(o);
    }
    o.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_text() {
        let mut s = Summary {
            format: "test",
            kind: "test format version 1".into(),
            header: vec![("version", 1u32.into()), ("flags", Value::Hex(0x10))],
            records: 3,
            threads: vec![ThreadSummary {
                pid: Some(7),
                tid: 8,
                name: Some("main".into()),
                records: 3,
            }],
            time: Some(TimeSpan {
                first: 10,
                last: 20,
                duration_ns: 10,
            }),
            details: vec![("code_bytes", 42u64.into())],
            truncation: Some(Truncation::new(99, Some(3), "cut")),
            ..Summary::default()
        };
        s.count_kind("LOAD");
        s.count_kind("LOAD");
        s.count_kind("MOVE");
        let src = Source {
            file: "a \"b\"",
            size: 100,
            compression: Some("gzip"),
        };
        let mut j = Vec::new();
        s.write_json(&mut j, &src).unwrap();
        let j = String::from_utf8(j).unwrap();
        assert_eq!(
            j,
            r#"{"schema":"profkit.info/2","file":"a \"b\"","format":"test","kind":"test format version 1","compression":"gzip","size":100,"header":{"version":1,"flags":16},"records":3,"kinds":{"LOAD":2,"MOVE":1},"threads":[{"pid":7,"tid":8,"name":"main","records":3}],"time":{"first":10,"last":20,"duration_ns":10},"details":{"code_bytes":42},"problems":0,"first_problem":null,"truncated":{"offset":99,"record":3,"reason":"cut"}}"#
        );
        let mut t = Vec::new();
        s.write_text(&mut t, &src).unwrap();
        let t = String::from_utf8(t).unwrap();
        assert!(t.contains("header:    version 1, flags 0x10\n"), "{t}");
        assert!(t.contains("code bytes: 42\n"), "{t}");
        assert!(
            t.contains("truncated: truncated at offset 0x63 (record #3): cut\n"),
            "{t}"
        );
    }
}
