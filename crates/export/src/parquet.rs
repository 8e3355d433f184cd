//! Parquet output (feature `parquet`): eight tables, written with the `parquet` crate's
//! low-level column writers (no Arrow), Snappy-compressed, dictionary-encoded where it pays.
//!
//! `-o out.parquet` writes the `spans` table to `out.parquet` and the others beside it as
//! `out.events.parquet`, `out.functions.parquet`, `out.code.parquet`, `out.samples.parquet`,
//! `out.stacks.parquet`, `out.frames.parquet` and `out.mappings.parquet`. When the file is
//! named `spans.parquet` the others are `events.parquet`, `functions.parquet` … in the same
//! directory (the layout `docs/fleet.md` uses: one directory per host). All eight files are
//! always written, possibly with no rows. Standard output is not supported (eight files).
//!
//! The schema's version is [`SCHEMA_VERSION`], in every file's key-value metadata as
//! `profkit.schema`. Version 2 added `mappings` and the `frames` columns `tier` and
//! `mapping_id`; every column of version 1 kept its name, type and meaning. The sampled tables
//! follow the OTLP/pprof dictionary: `samples` (one row per sample, its weight and time) →
//! `stacks` (the stack table, as a prefix tree) → `frames` (locations: a function at a line,
//! each inlined function a frame of its own) → `functions`, and `frames` → `mappings`.
//!
//! Every table starts with a `source` column, the trace's name, so files from many hosts and
//! runs can be unioned. Integers are `INT64` (unsigned values are stored bit for bit, so an
//! address above 2^63 reads as negative), strings are UTF-8 `BYTE_ARRAY (STRING)`.
//!
//! | table | columns |
//! |---|---|
//! | `spans` | `source`, `process` (pid), `thread` (tid), `function_id`, `function`, `start_ns`, `end_ns`, `depth` (INT32, 0 = outermost), `self_ns`, `args`? (LIST of INT64: the call's logged arguments, XRay; null when none were logged) |
//! | `events` | `source`, `process`, `thread`, `time_ns`, `category`, `name`, `args` (JSON object text) |
//! | `functions` | `source`, `id`, `name`, `file`?, `line`?, `module`?, `address`? |
//! | `code` | `source`, `pid`, `address`, `size`, `load_ns`, `unload_ns`?, `name` |
//! | `samples` | `source`, `process`, `thread`, `time_ns`, `stack_id`, `weight` |
//! | `stacks` | `source`, `id`, `parent`?, `frame_id`, `depth` (INT32, 0 = outermost) |
//! | `frames` | `source`, `id`, `function_id`, `function`, `line`?, `file`?, `module`?, `kind`, `tier`?, `mapping_id`? |
//! | `mappings` | `source`, `id`, `pid`, `start`, `limit`, `file_offset`, `path`, `build_id`? (hex) |
//!
//! Stacks form a prefix tree: a stack is its leaf node, and its frames are the chain of
//! `parent`s up to the root (`parent` null). A frame is a function at a source line (the
//! sample's line in that frame), `kind` is `native`, `kernel`, `jit`, `unsymbolized` or
//! `unknown`; `tier` the JIT tier that compiled it (jitdump JIT_TIER); `mapping_id` the
//! first recorded mapping of its module (a `mappings` row of any process: the binary and its
//! build id; a process's own range is the row of that `pid` with the same `path`).
//! (`?` = nullable.) Times are ns since the trace's origin; `self_ns` is the call's duration
//! minus its callees' durations. In `code`, a region's `unload_ns`
//! is the time it moved away or another region was loaded at its address, else null.
//!
//! Streaming: `spans` and `events` rows are buffered per column and flushed as a row group
//! every [`ROWS_PER_GROUP`] rows, so memory stays bounded whatever the trace's size; the
//! `code` rows are kept until the end (their `unload_ns` is known only then), and `functions`
//! is written from the function table. `samples`, `stacks` and `frames` stream too; the
//! writer keeps the stack tree's index (one entry per distinct stack node and frame).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use profkit_model::events::{
    ArgValue, CodeEvent, CodeRegion, Enter, EventSink, Instant, MappingInfo, Sample, ThreadInfo,
    TraceInfo,
};
use profkit_model::span::Span;
use profkit_model::{FuncId, FuncInfo, FuncKind, FunctionTable};

use crate::{Dest, Options, Output};

/// The parent of a stack tree root.
const ROOT: i64 = -1;

/// The version of the tables' schema (docs/fleet.md), in each file's key-value metadata as
/// `profkit.schema`.
pub const SCHEMA_VERSION: &str = "2";

/// Rows buffered per table before they are written as one row group.
pub const ROWS_PER_GROUP: usize = 1 << 20;

const SPANS: &str = "message spans {
  required binary source (STRING);
  required int64 process;
  required int64 thread;
  required int64 function_id;
  required binary function (STRING);
  required int64 start_ns;
  required int64 end_ns;
  required int32 depth;
  required int64 self_ns;
  optional group args (LIST) {
    repeated group list {
      required int64 element;
    }
  }
}";

const EVENTS: &str = "message events {
  required binary source (STRING);
  required int64 process;
  required int64 thread;
  required int64 time_ns;
  required binary category (STRING);
  required binary name (STRING);
  required binary args (STRING);
}";

const FUNCTIONS: &str = "message functions {
  required binary source (STRING);
  required int64 id;
  required binary name (STRING);
  optional binary file (STRING);
  optional int64 line;
  optional binary module (STRING);
  optional int64 address;
}";

const SAMPLES: &str = "message samples {
  required binary source (STRING);
  required int64 process;
  required int64 thread;
  required int64 time_ns;
  required int64 stack_id;
  required int64 weight;
}";

const STACKS: &str = "message stacks {
  required binary source (STRING);
  required int64 id;
  optional int64 parent;
  required int64 frame_id;
  required int32 depth;
}";

const FRAMES: &str = "message frames {
  required binary source (STRING);
  required int64 id;
  required int64 function_id;
  required binary function (STRING);
  optional int64 line;
  optional binary file (STRING);
  optional binary module (STRING);
  required binary kind (STRING);
  optional binary tier (STRING);
  optional int64 mapping_id;
}";

const MAPPINGS: &str = "message mappings {
  required binary source (STRING);
  required int64 id;
  required int64 pid;
  required int64 start;
  required int64 limit;
  required int64 file_offset;
  required binary path (STRING);
  optional binary build_id (STRING);
}";

const CODE: &str = "message code {
  required binary source (STRING);
  required int64 pid;
  required int64 address;
  required int64 size;
  required int64 load_ns;
  optional int64 unload_ns;
  required binary name (STRING);
}";

/// A writer into `output` (a path; see the module docs for the files).
pub fn sink(output: &Output, options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    let _ = options;
    match output.dest() {
        Dest::Stdout => Err(crate::unsupported(
            "parquet output writes eight files: give a path (-o out.parquet), not standard output",
        )),
        Dest::Path(p) => Ok(Box::new(ParquetSink::with_row_group_size(
            output,
            p,
            ROWS_PER_GROUP,
        )?)),
    }
}

/// The paths of the eight tables for `-o path`: spans, events, functions, code, samples,
/// stacks, frames, mappings.
pub fn table_paths(path: &Path) -> [PathBuf; 8] {
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = if name.to_ascii_lowercase().ends_with(".parquet") {
        name.get(..name.len() - ".parquet".len())
            .unwrap_or(&name)
            .to_string()
    } else {
        name.clone()
    };
    let other = |table: &str| {
        if stem == "spans" {
            dir.join(format!("{table}.parquet"))
        } else {
            dir.join(format!("{stem}.{table}.parquet"))
        }
    };
    [
        path.to_path_buf(),
        other("events"),
        other("functions"),
        other("code"),
        other("samples"),
        other("stacks"),
        other("frames"),
        other("mappings"),
    ]
}

fn perr(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e)
}

/// One column's buffered values.
#[derive(Debug)]
enum Col {
    I64 {
        vals: Vec<i64>,
        defs: Option<Vec<i16>>,
    },
    I32(Vec<i32>),
    Str {
        vals: Vec<ByteArray>,
        defs: Option<Vec<i16>>,
    },
    /// An optional list of INT64 (three-level LIST: null = definition level 0, an element =
    /// level 2; repetition level 1 continues the row's list).
    I64List {
        vals: Vec<i64>,
        defs: Vec<i16>,
        reps: Vec<i16>,
    },
}

impl Col {
    fn clear(&mut self) {
        match self {
            Col::I64 { vals, defs } => {
                vals.clear();
                if let Some(d) = defs {
                    d.clear();
                }
            }
            Col::I32(v) => v.clear(),
            Col::Str { vals, defs } => {
                vals.clear();
                if let Some(d) = defs {
                    d.clear();
                }
            }
            Col::I64List { vals, defs, reps } => {
                vals.clear();
                defs.clear();
                reps.clear();
            }
        }
    }
}

/// A Parquet file being written, with its columns' buffers.
struct Table {
    writer: Option<SerializedFileWriter<Box<dyn Write + Send>>>,
    cols: Vec<Col>,
    rows: usize,
    limit: usize,
}

impl Table {
    fn create(out: &Output, path: &Path, schema: &str, limit: usize) -> io::Result<Table> {
        let schema = Arc::new(parse_message_type(schema).map_err(perr)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_writer_version(WriterVersion::PARQUET_1_0)
                .set_created_by(format!("profkit {}", env!("CARGO_PKG_VERSION")))
                .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                    "profkit.schema".to_string(),
                    SCHEMA_VERSION.to_string(),
                )]))
                .build(),
        );
        let cols = schema
            .get_fields()
            .iter()
            .map(|f| {
                if f.is_group() {
                    return Col::I64List {
                        vals: Vec::new(),
                        defs: Vec::new(),
                        reps: Vec::new(),
                    };
                }
                let optional = f.is_optional();
                let defs = optional.then(Vec::new);
                match f.get_physical_type() {
                    parquet::basic::Type::INT32 => Col::I32(Vec::new()),
                    parquet::basic::Type::INT64 => Col::I64 {
                        vals: Vec::new(),
                        defs,
                    },
                    _ => Col::Str {
                        vals: Vec::new(),
                        defs,
                    },
                }
            })
            .collect();
        let file = out.create_beside(path)?;
        let writer = SerializedFileWriter::new(file, schema, props).map_err(perr)?;
        Ok(Table {
            writer: Some(writer),
            cols,
            rows: 0,
            limit,
        })
    }

    fn i64(&mut self, col: usize, v: i64) {
        if let Some(Col::I64 { vals, defs }) = self.cols.get_mut(col) {
            vals.push(v);
            if let Some(d) = defs {
                d.push(1);
            }
        }
    }

    fn opt_i64(&mut self, col: usize, v: Option<i64>) {
        if let Some(Col::I64 { vals, defs }) = self.cols.get_mut(col) {
            if let Some(v) = v {
                vals.push(v);
            }
            if let Some(d) = defs {
                d.push(i16::from(v.is_some()));
            }
        }
    }

    fn i32(&mut self, col: usize, v: i32) {
        if let Some(Col::I32(vals)) = self.cols.get_mut(col) {
            vals.push(v);
        }
    }

    fn str(&mut self, col: usize, v: ByteArray) {
        self.opt_str(col, Some(v));
    }

    fn opt_str(&mut self, col: usize, v: Option<ByteArray>) {
        if let Some(Col::Str { vals, defs }) = self.cols.get_mut(col) {
            let some = v.is_some();
            if let Some(v) = v {
                vals.push(v);
            }
            if let Some(d) = defs {
                d.push(i16::from(some));
            }
        }
    }

    /// A list of INT64 (`None` = null).
    fn opt_i64_list(&mut self, col: usize, v: Option<&[u64]>) {
        if let Some(Col::I64List { vals, defs, reps }) = self.cols.get_mut(col) {
            match v {
                None => {
                    defs.push(0);
                    reps.push(0);
                }
                Some([]) => {
                    defs.push(1);
                    reps.push(0);
                }
                Some(list) => {
                    for (i, &x) in list.iter().enumerate() {
                        vals.push(x as i64);
                        defs.push(2);
                        reps.push(i16::from(i > 0));
                    }
                }
            }
        }
    }

    /// Ends a row; writes a row group when the buffers are full.
    fn end_row(&mut self) -> io::Result<()> {
        self.rows += 1;
        if self.rows >= self.limit {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let Some(writer) = self.writer.as_mut() else {
            return Ok(());
        };
        let mut rg = writer.next_row_group().map_err(perr)?;
        for col in &mut self.cols {
            let Some(mut cw) = rg.next_column().map_err(perr)? else {
                return Err(io::Error::other("parquet: fewer columns than buffers"));
            };
            match (cw.untyped(), &*col) {
                (ColumnWriter::Int64ColumnWriter(w), Col::I64 { vals, defs }) => {
                    w.write_batch(vals, defs.as_deref(), None).map_err(perr)?;
                }
                (ColumnWriter::Int64ColumnWriter(w), Col::I64List { vals, defs, reps }) => {
                    w.write_batch(vals, Some(defs), Some(reps)).map_err(perr)?;
                }
                (ColumnWriter::Int32ColumnWriter(w), Col::I32(vals)) => {
                    w.write_batch(vals, None, None).map_err(perr)?;
                }
                (ColumnWriter::ByteArrayColumnWriter(w), Col::Str { vals, defs }) => {
                    w.write_batch(vals, defs.as_deref(), None).map_err(perr)?;
                }
                _ => return Err(io::Error::other("parquet: column type mismatch")),
            }
            cw.close().map_err(perr)?;
            col.clear();
        }
        rg.close().map_err(perr)?;
        self.rows = 0;
        Ok(())
    }

    fn close(&mut self) -> io::Result<()> {
        self.flush()?;
        if let Some(w) = self.writer.take() {
            let inner = w.into_inner().map_err(perr)?;
            let mut inner = inner;
            io::Write::flush(&mut inner)?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct ThreadIds {
    pid: i64,
    tid: i64,
}

/// A row of the `code` table, kept until the end.
#[derive(Clone, Debug)]
struct CodeRow {
    pid: u32,
    address: u64,
    size: u64,
    load: u64,
    unload: Option<u64>,
    name: String,
}

/// Writes the eight tables; see the [module docs](self).
pub struct ParquetSink {
    spans: Table,
    events: Table,
    functions_t: Table,
    code_t: Table,
    samples: Table,
    stacks_t: Table,
    frames_t: Table,
    mappings_t: Table,
    /// Mapping ids by module: the recorded path and its file name.
    mapping_of: HashMap<String, i64>,
    mapping_count: i64,
    /// Stack tree nodes by (parent node or [`ROOT`], frame id).
    stacks: HashMap<(i64, i64), i64>,
    /// Frame ids by (function, line).
    frames: HashMap<(FuncId, u32), i64>,
    source: ByteArray,
    functions: FunctionTable,
    names: HashMap<FuncId, ByteArray>,
    threads: HashMap<u32, ThreadIds>,
    code: Vec<CodeRow>,
    live: HashMap<(u32, u64), usize>,
    /// Per thread, the callees' total duration and the logged arguments of each open call.
    open: HashMap<u32, Vec<(u64, Vec<u64>)>>,
}

impl ParquetSink {
    /// Creates the four files for `-o path` (see [`table_paths`]).
    pub fn create(path: &Path) -> io::Result<ParquetSink> {
        Self::with_row_group_size(&Output::path(path), path, ROWS_PER_GROUP)
    }

    /// Like [`ParquetSink::create`], the files written through `out` (whose path is `path`),
    /// a row group every `rows` rows (at least 1).
    pub fn with_row_group_size(out: &Output, path: &Path, rows: usize) -> io::Result<ParquetSink> {
        let rows = rows.max(1);
        let [s, e, f, c, sa, st, fr, ma] = table_paths(path);
        Ok(ParquetSink {
            spans: Table::create(out, &s, SPANS, rows)?,
            events: Table::create(out, &e, EVENTS, rows)?,
            functions_t: Table::create(out, &f, FUNCTIONS, rows)?,
            code_t: Table::create(out, &c, CODE, rows)?,
            samples: Table::create(out, &sa, SAMPLES, rows)?,
            stacks_t: Table::create(out, &st, STACKS, rows)?,
            frames_t: Table::create(out, &fr, FRAMES, rows)?,
            mappings_t: Table::create(out, &ma, MAPPINGS, rows)?,
            mapping_of: HashMap::new(),
            mapping_count: 0,
            stacks: HashMap::new(),
            frames: HashMap::new(),
            source: ByteArray::from(Vec::new()),
            functions: FunctionTable::new(),
            names: HashMap::new(),
            threads: HashMap::new(),
            code: Vec::new(),
            live: HashMap::new(),
            open: HashMap::new(),
        })
    }

    fn name(&mut self, func: FuncId) -> ByteArray {
        if let Some(n) = self.names.get(&func) {
            return n.clone();
        }
        let n = ByteArray::from(self.functions.name(func).into_bytes());
        self.names.insert(func, n.clone());
        n
    }

    /// The id of frame `func` at `line`, writing its row when new.
    fn frame(&mut self, func: FuncId, line: u32) -> io::Result<i64> {
        let next = self.frames.len() as i64;
        let id = *self.frames.entry((func, line)).or_insert(next);
        if id != next {
            return Ok(id);
        }
        let name = self.name(func);
        let info = self.functions.get(func);
        let bytes = |s: Option<&String>| s.map(|s| ByteArray::from(s.as_bytes().to_vec()));
        let (file, module) = (
            bytes(info.and_then(|f| f.file.as_ref())),
            bytes(info.and_then(|f| f.module.as_ref())),
        );
        let tier = bytes(info.and_then(|f| f.tier.as_ref()).map(|t| &t.name));
        let mapping = info
            .and_then(|f| f.module.as_deref())
            .and_then(|m| self.mapping_of.get(m).copied());
        let kind = match info.map_or(FuncKind::Unknown, |f| f.kind) {
            FuncKind::Native => "native",
            FuncKind::Kernel => "kernel",
            FuncKind::Jit => "jit",
            FuncKind::Unsymbolized => "unsymbolized",
            FuncKind::Unknown => "unknown",
        };
        let t = &mut self.frames_t;
        t.str(0, self.source.clone());
        t.i64(1, id);
        t.i64(2, i64::from(func.0));
        t.str(3, name);
        t.opt_i64(4, (line != 0).then_some(i64::from(line)));
        t.opt_str(5, file);
        t.opt_str(6, module);
        t.str(7, ByteArray::from(kind.as_bytes().to_vec()));
        t.opt_str(8, tier);
        t.opt_i64(9, mapping);
        t.end_row()?;
        Ok(id)
    }

    /// The id of the stack node `frame` under `parent`, writing its row when new.
    fn stack_node(&mut self, parent: i64, frame: i64, depth: usize) -> io::Result<i64> {
        let next = self.stacks.len() as i64;
        let id = *self.stacks.entry((parent, frame)).or_insert(next);
        if id != next {
            return Ok(id);
        }
        let t = &mut self.stacks_t;
        t.str(0, self.source.clone());
        t.i64(1, id);
        t.opt_i64(2, (parent != ROOT).then_some(parent));
        t.i64(3, frame);
        t.i32(4, i32::try_from(depth).unwrap_or(i32::MAX));
        t.end_row()?;
        Ok(id)
    }

    fn ids(&self, thread: u32) -> ThreadIds {
        self.threads.get(&thread).copied().unwrap_or(ThreadIds {
            pid: 0,
            tid: i64::from(thread),
        })
    }

    fn write_functions(&mut self) -> io::Result<()> {
        let rows: Vec<_> = self
            .functions
            .iter()
            .map(|(id, f)| (id, f.clone()))
            .collect();
        for (id, f) in rows {
            let t = &mut self.functions_t;
            t.str(0, self.source.clone());
            t.i64(1, i64::from(id.0));
            let name = f.name.clone().unwrap_or_else(|| format!("#{}", id.0));
            t.str(2, ByteArray::from(name.into_bytes()));
            t.opt_str(3, f.file.map(|s| ByteArray::from(s.into_bytes())));
            t.opt_i64(4, (f.line != 0).then_some(i64::from(f.line)));
            t.opt_str(5, f.module.map(|s| ByteArray::from(s.into_bytes())));
            t.opt_i64(6, f.address.map(|a| a as i64));
            t.end_row()?;
        }
        Ok(())
    }

    fn write_code(&mut self) -> io::Result<()> {
        for row in std::mem::take(&mut self.code) {
            let t = &mut self.code_t;
            t.str(0, self.source.clone());
            t.i64(1, i64::from(row.pid));
            t.i64(2, row.address as i64);
            t.i64(3, row.size as i64);
            t.i64(4, row.load as i64);
            t.opt_i64(5, row.unload.map(|u| u as i64));
            t.str(6, ByteArray::from(row.name.into_bytes()));
            t.end_row()?;
        }
        Ok(())
    }
}

/// The arguments of an instant as a JSON object.
pub fn args_json(args: &[(&str, ArgValue<'_>)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        profkit_common::json::push_string(&mut out, k);
        out.push(':');
        match *v {
            ArgValue::U64(n) => out.push_str(&n.to_string()),
            ArgValue::I64(n) => out.push_str(&n.to_string()),
            ArgValue::F64(n) if n.is_finite() => out.push_str(&n.to_string()),
            ArgValue::F64(_) => out.push_str("null"),
            ArgValue::Str(_) | ArgValue::Bytes(_) => {
                profkit_common::json::push_string(&mut out, &v.to_text())
            }
        }
    }
    out.push('}');
    out
}

impl EventSink for ParquetSink {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.source = ByteArray::from(trace.name.as_bytes().to_vec());
        self.functions = trace.functions.clone();
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    fn thread(&mut self, thread: &ThreadInfo<'_>) -> io::Result<()> {
        self.threads.insert(
            thread.index,
            ThreadIds {
                pid: i64::from(thread.pid),
                tid: thread.tid as i64,
            },
        );
        Ok(())
    }

    fn enter(&mut self, &Enter { thread, args, .. }: &Enter<'_>) -> io::Result<()> {
        self.open
            .entry(thread)
            .or_default()
            .push((0, args.to_vec()));
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        // Self time from the spans themselves: the duration minus the callees' durations.
        let duration = span.duration();
        let stack = self.open.entry(span.thread).or_default();
        let (self_ns, args) = match stack.pop() {
            Some((callees, args)) => (duration.saturating_sub(callees), args),
            None => (span.self_time, Vec::new()),
        };
        if let Some((parent, _)) = stack.last_mut() {
            *parent = parent.saturating_add(duration);
        }
        let ids = self.ids(span.thread);
        let name = self.name(span.func);
        let t = &mut self.spans;
        t.str(0, self.source.clone());
        t.i64(1, ids.pid);
        t.i64(2, ids.tid);
        t.i64(3, i64::from(span.func.0));
        t.str(4, name);
        t.i64(5, span.start as i64);
        t.i64(6, span.end as i64);
        t.i32(7, i32::try_from(span.depth).unwrap_or(i32::MAX));
        t.i64(8, self_ns as i64);
        t.opt_i64_list(9, (!args.is_empty()).then_some(&args[..]));
        t.end_row()
    }

    fn instant(&mut self, instant: &Instant<'_>) -> io::Result<()> {
        let ids = self.ids(instant.thread);
        let t = &mut self.events;
        t.str(0, self.source.clone());
        t.i64(1, ids.pid);
        t.i64(2, ids.tid);
        t.i64(3, instant.time as i64);
        t.str(4, ByteArray::from(instant.category.as_bytes().to_vec()));
        t.str(5, ByteArray::from(instant.name.as_bytes().to_vec()));
        t.str(6, ByteArray::from(args_json(instant.args).into_bytes()));
        t.end_row()
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        if s.stack.is_empty() {
            return Ok(());
        }
        let mut node = ROOT;
        for (depth, &func) in s.stack.iter().enumerate() {
            let frame = self.frame(func, s.line(depth))?;
            node = self.stack_node(node, frame, depth)?;
        }
        let ids = self.ids(s.thread);
        let t = &mut self.samples;
        t.str(0, self.source.clone());
        t.i64(1, ids.pid);
        t.i64(2, ids.tid);
        t.i64(3, s.time as i64);
        t.i64(4, node);
        t.i64(5, s.weight as i64);
        t.end_row()
    }

    fn mapping(&mut self, m: &MappingInfo<'_>) -> io::Result<()> {
        let id = self.mapping_count;
        self.mapping_count += 1;
        for key in [m.path, m.path.rsplit('/').next().unwrap_or(m.path)] {
            self.mapping_of.entry(key.to_string()).or_insert(id);
        }
        let build_id = m.build_id.filter(|b| !b.is_empty()).map(|b| {
            let mut hex = Vec::with_capacity(b.len() * 2);
            profkit_common::json::push_hex(&mut hex, b);
            ByteArray::from(hex)
        });
        let t = &mut self.mappings_t;
        t.str(0, self.source.clone());
        t.i64(1, id);
        t.i64(2, i64::from(m.pid));
        t.i64(3, m.start as i64);
        t.i64(4, m.end as i64);
        t.i64(5, m.file_offset as i64);
        t.str(6, ByteArray::from(m.path.as_bytes().to_vec()));
        t.opt_str(7, build_id);
        t.end_row()
    }

    fn code(&mut self, code: &CodeRegion<'_>) -> io::Result<()> {
        if let CodeEvent::Move { old_address } = code.event {
            if let Some(i) = self.live.remove(&(code.pid, old_address)) {
                if let Some(r) = self.code.get_mut(i) {
                    r.unload = Some(code.time);
                }
            }
        }
        if let Some(i) = self.live.remove(&(code.pid, code.address)) {
            if let Some(r) = self.code.get_mut(i) {
                r.unload = Some(code.time);
            }
        }
        self.live.insert((code.pid, code.address), self.code.len());
        self.code.push(CodeRow {
            pid: code.pid,
            address: code.address,
            size: code.size,
            load: code.time,
            unload: None,
            name: code.name.to_string(),
        });
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write_functions()?;
        self.write_code()?;
        self.spans.close()?;
        self.events.close()?;
        self.functions_t.close()?;
        self.code_t.close()?;
        self.samples.close()?;
        self.stacks_t.close()?;
        self.frames_t.close()?;
        self.mappings_t.close()
    }
}
