//! The write layer: [`JitDumpWriter`] encodes every record kind in either byte order.
//!
//! The high-level entry point is [`JitDumpWriter::write_code_load`]: it takes a load together
//! with its tier, debug info, DEBUG_INFO2 and unwinding info and writes them in the order
//! consumers need (everything that describes a LOAD comes before it). The `write_*_record`
//! methods write single records, for tools that re-encode files or build unusual ones.
//! [`DebugInfo2Builder`] makes a DEBUG_INFO2 body from an inline tree and a line table.
//! On Linux, [`JitDumpFile::create`] makes `jit-<pid>.dump` and maps its first page
//! executable so `perf record` sees it.

mod debug_info2;

pub use debug_info2::{DebugInfo2Builder, InlineCall, MAX_INLINE_DEPTH};

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::raw::{host_elf_machine, Endian, RecordType, MAGIC, RECORD_HEADER_SIZE, VERSION};
use crate::read::{
    CodeMove, DebugEntry, DebugInfo2, FunctionRecord, InlineCallRecord, LineRecord, Range,
};

/// File header fields for a new dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderOptions {
    /// Byte order of the whole file.
    pub endian: Endian,
    /// `version`; 1 unless you are making a test file.
    pub version: u32,
    /// ELF `e_machine` of the code.
    pub elf_mach: u32,
    /// Reserved field; 0.
    pub pad1: u32,
    /// Process id.
    pub pid: u32,
    /// Creation timestamp.
    pub timestamp: u64,
    /// Flags (bit 0: ARCH_TIMESTAMP).
    pub flags: u64,
    /// Extra header bytes after the 40 the spec defines (`total_size` grows by their length).
    pub extra: Vec<u8>,
}

impl Default for HeaderOptions {
    /// Native byte order, the host's `e_machine`, this process's pid, the current
    /// CLOCK_MONOTONIC time.
    fn default() -> Self {
        HeaderOptions {
            endian: Endian::NATIVE,
            version: VERSION,
            elf_mach: host_elf_machine(),
            pad1: 0,
            pid: std::process::id(),
            timestamp: monotonic_ns(),
            flags: 0,
            extra: Vec::new(),
        }
    }
}

/// The current CLOCK_MONOTONIC time in nanoseconds, the clock `perf record -k 1` uses.
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        if rc == 0 {
            return (ts.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(ts.tv_nsec as u64);
        }
        0
    }
    #[cfg(not(unix))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The tier of a load (becomes a SAMPLY_JIT_TIER record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier<'a> {
    /// Index into [`crate::raw::TIER_COLORS`].
    pub color: u32,
    /// Bit 0: JavaScript-like source.
    pub flags: u32,
    /// Tier name ("Baseline", "Tier0", …).
    pub name: &'a str,
}

/// Unwinding tables of a load (becomes a JIT_CODE_UNWINDING_INFO record). Written as
/// `.eh_frame` then `.eh_frame_hdr`, the layout perf and every producer use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwinding<'a> {
    /// `.eh_frame` bytes.
    pub eh_frame: &'a [u8],
    /// `.eh_frame_hdr` bytes.
    pub eh_frame_hdr: &'a [u8],
    /// Bytes mapped in memory: 0 or the total unwind data size.
    pub mapped_size: u64,
}

/// An owned DEBUG_INFO2 body: files, function names, functions, inline calls, ranges, lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DebugInfo2Data {
    /// File list.
    pub files: Vec<String>,
    /// Function-name list.
    pub function_names: Vec<String>,
    /// Function list; the outer function first.
    pub functions: Vec<FunctionRecord>,
    /// Inline calls in depth-first order.
    pub inline_calls: Vec<InlineCallRecord>,
    /// Ranges, consumed in inline-call order.
    pub ranges: Vec<Range>,
    /// Line records.
    pub lines: Vec<LineRecord>,
}

impl DebugInfo2Data {
    /// Copies a read record (strings with invalid UTF-8 are replaced lossily).
    pub fn from_record(r: &DebugInfo2<'_>) -> DebugInfo2Data {
        DebugInfo2Data {
            files: r
                .files()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
            function_names: r
                .function_names()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
            functions: r.functions().collect(),
            inline_calls: r.inline_calls().collect(),
            ranges: r.ranges().collect(),
            lines: r.lines().collect(),
        }
    }
}

/// A function's load with everything that describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLoadData<'a> {
    /// Timestamp of the LOAD and of the records written with it.
    pub timestamp: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Virtual address (normally `code_addr`).
    pub vma: u64,
    /// Code address.
    pub code_addr: u64,
    /// Code size; must equal `code.len()` when `code` is given.
    pub code_size: u64,
    /// The code bytes; `None` writes a LOAD without code bytes.
    pub code: Option<&'a [u8]>,
    /// Unique id of this code.
    pub code_index: u64,
    /// Function name (written with a NUL; must not contain NUL).
    pub name: &'a [u8],
    /// JIT_CODE_DEBUG_INFO entries, written before the LOAD.
    pub debug_info: Option<&'a [DebugEntry<'a>]>,
    /// SAMPLY_JIT_CODE_DEBUG_INFO2, written before the LOAD.
    pub debug_info2: Option<&'a DebugInfo2Data>,
    /// SAMPLY_JIT_TIER, written before the LOAD.
    pub tier: Option<Tier<'a>>,
    /// JIT_CODE_UNWINDING_INFO, written before the LOAD.
    pub unwinding: Option<Unwinding<'a>>,
}

impl<'a> CodeLoadData<'a> {
    /// A load of `code` at `code_addr` named `name`, with vma = code_addr, this process's pid
    /// and thread id 0, and nothing attached.
    pub fn new(code_index: u64, code_addr: u64, code: &'a [u8], name: &'a str) -> Self {
        CodeLoadData {
            timestamp: monotonic_ns(),
            pid: std::process::id(),
            tid: 0,
            vma: code_addr,
            code_addr,
            code_size: code.len() as u64,
            code: Some(code),
            code_index,
            name: name.as_bytes(),
            debug_info: None,
            debug_info2: None,
            tier: None,
            unwinding: None,
        }
    }
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.to_owned())
}

fn record_size(parts: usize) -> io::Result<u32> {
    u32::try_from(parts).map_err(|_| invalid("record larger than 4 GiB cannot be encoded"))
}

const ZEROS: [u8; 8] = [0; 8];

/// Zero bytes needed to round `n` up to a multiple of `to` (a power of two).
fn pad_to(n: usize, to: usize) -> usize {
    n.wrapping_neg() & (to - 1)
}

/// Encodes a jitdump into any [`Write`]. Wrap files in a [`BufWriter`].
#[derive(Debug)]
pub struct JitDumpWriter<W: Write> {
    w: W,
    endian: Endian,
    scratch: Vec<u8>,
    records: u64,
}

impl<W: Write> JitDumpWriter<W> {
    /// Writes the file header and returns a writer for the records.
    pub fn new(mut w: W, header: &HeaderOptions) -> io::Result<Self> {
        let e = header.endian;
        let total = record_size(40 + header.extra.len())?;
        let mut h = Vec::with_capacity(total as usize);
        h.extend_from_slice(&e.u32_bytes(MAGIC));
        h.extend_from_slice(&e.u32_bytes(header.version));
        h.extend_from_slice(&e.u32_bytes(total));
        h.extend_from_slice(&e.u32_bytes(header.elf_mach));
        h.extend_from_slice(&e.u32_bytes(header.pad1));
        h.extend_from_slice(&e.u32_bytes(header.pid));
        h.extend_from_slice(&e.u64_bytes(header.timestamp));
        h.extend_from_slice(&e.u64_bytes(header.flags));
        h.extend_from_slice(&header.extra);
        w.write_all(&h)?;
        Ok(JitDumpWriter {
            w,
            endian: e,
            scratch: Vec::with_capacity(256),
            records: 0,
        })
    }

    /// Byte order being written.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// The underlying writer, mutably.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.w
    }

    fn start(&mut self, id: RecordType, total: u32, timestamp: u64) {
        let e = self.endian;
        self.scratch.clear();
        self.scratch.extend_from_slice(&e.u32_bytes(id.0));
        self.scratch.extend_from_slice(&e.u32_bytes(total));
        self.scratch.extend_from_slice(&e.u64_bytes(timestamp));
    }

    fn put32(&mut self, v: u32) {
        let b = self.endian.u32_bytes(v);
        self.scratch.extend_from_slice(&b);
    }

    fn put64(&mut self, v: u64) {
        let b = self.endian.u64_bytes(v);
        self.scratch.extend_from_slice(&b);
    }

    fn put_padding(&mut self, n: usize) {
        self.scratch
            .extend_from_slice(ZEROS.get(..n).unwrap_or(&[]));
    }

    fn finish(&mut self) -> io::Result<()> {
        self.w.write_all(&self.scratch)?;
        self.records += 1;
        Ok(())
    }

    /// Writes a load preceded by its tier, DEBUG_INFO, DEBUG_INFO2 and unwinding records.
    pub fn write_code_load(&mut self, load: &CodeLoadData<'_>) -> io::Result<()> {
        if let Some(tier) = &load.tier {
            self.write_jit_tier_record(load.timestamp, load.code_addr, tier)?;
        }
        if let Some(entries) = load.debug_info {
            self.write_debug_info_record(load.timestamp, load.code_addr, entries)?;
        }
        if let Some(d2) = load.debug_info2 {
            self.write_debug_info2_record(load.timestamp, d2)?;
        }
        if let Some(unwinding) = &load.unwinding {
            self.write_unwinding_info_record(load.timestamp, unwinding)?;
        }
        self.write_code_load_record(load)
    }

    /// Writes only the JIT_CODE_LOAD record of `load` (attached records are ignored).
    pub fn write_code_load_record(&mut self, load: &CodeLoadData<'_>) -> io::Result<()> {
        if load.name.contains(&0) {
            return Err(invalid("function name contains a NUL byte"));
        }
        let code = load.code.unwrap_or(&[]);
        if load.code.is_some() && code.len() as u64 != load.code_size {
            return Err(invalid(
                "code_size differs from the length of the code bytes",
            ));
        }
        let total = record_size(RECORD_HEADER_SIZE + 40 + load.name.len() + 1 + code.len())?;
        self.start(RecordType::CODE_LOAD, total, load.timestamp);
        self.put32(load.pid);
        self.put32(load.tid);
        self.put64(load.vma);
        self.put64(load.code_addr);
        self.put64(load.code_size);
        self.put64(load.code_index);
        self.scratch.extend_from_slice(load.name);
        self.scratch.push(0);
        self.w.write_all(&self.scratch)?;
        self.w.write_all(code)?;
        self.records += 1;
        Ok(())
    }

    /// Writes a JIT_CODE_MOVE record.
    pub fn write_code_move_record(&mut self, timestamp: u64, m: &CodeMove) -> io::Result<()> {
        self.start(
            RecordType::CODE_MOVE,
            (RECORD_HEADER_SIZE + 48) as u32,
            timestamp,
        );
        self.put32(m.pid);
        self.put32(m.tid);
        self.put64(m.vma);
        self.put64(m.old_code_addr);
        self.put64(m.new_code_addr);
        self.put64(m.code_size);
        self.put64(m.code_index);
        self.finish()
    }

    /// Writes a JIT_CODE_CLOSE record.
    pub fn write_code_close_record(&mut self, timestamp: u64) -> io::Result<()> {
        self.start(RecordType::CODE_CLOSE, RECORD_HEADER_SIZE as u32, timestamp);
        self.finish()
    }

    /// Writes a JIT_CODE_DEBUG_INFO record, padded to a multiple of 8 bytes.
    pub fn write_debug_info_record(
        &mut self,
        timestamp: u64,
        code_addr: u64,
        entries: &[DebugEntry<'_>],
    ) -> io::Result<()> {
        if entries.iter().any(|e| e.file.contains(&0)) {
            return Err(invalid("debug entry file name contains a NUL byte"));
        }
        let body = 16 + entries.iter().map(|e| 17 + e.file.len()).sum::<usize>();
        let pad = pad_to(RECORD_HEADER_SIZE + body, 8);
        let total = record_size(RECORD_HEADER_SIZE + body + pad)?;
        self.start(RecordType::CODE_DEBUG_INFO, total, timestamp);
        self.put64(code_addr);
        self.put64(entries.len() as u64);
        for e in entries {
            self.put64(e.addr);
            self.put32(e.line);
            self.put32(e.discrim);
            self.scratch.extend_from_slice(e.file);
            self.scratch.push(0);
        }
        self.put_padding(pad);
        self.finish()
    }

    /// Writes a JIT_CODE_UNWINDING_INFO record (`.eh_frame` then `.eh_frame_hdr`), padded to 8.
    pub fn write_unwinding_info_record(
        &mut self,
        timestamp: u64,
        u: &Unwinding<'_>,
    ) -> io::Result<()> {
        let data = u.eh_frame.len() + u.eh_frame_hdr.len();
        let pad = pad_to(data, 8);
        let total = record_size(RECORD_HEADER_SIZE + 24 + data + pad)?;
        self.start(RecordType::CODE_UNWINDING_INFO, total, timestamp);
        self.put64(data as u64);
        self.put64(u.eh_frame_hdr.len() as u64);
        self.put64(u.mapped_size);
        self.scratch.extend_from_slice(u.eh_frame);
        self.scratch.extend_from_slice(u.eh_frame_hdr);
        self.put_padding(pad);
        self.finish()
    }

    /// Writes a SAMPLY_JIT_TIER record for the load at `code_addr`, padded to 8.
    pub fn write_jit_tier_record(
        &mut self,
        timestamp: u64,
        code_addr: u64,
        tier: &Tier<'_>,
    ) -> io::Result<()> {
        if tier.name.contains('\0') {
            return Err(invalid("tier name contains a NUL byte"));
        }
        let unpadded = RECORD_HEADER_SIZE + 16 + tier.name.len() + 1;
        let pad = pad_to(unpadded, 8);
        self.start(
            RecordType::SAMPLY_JIT_TIER,
            record_size(unpadded + pad)?,
            timestamp,
        );
        self.put64(code_addr);
        self.put32(tier.color);
        self.put32(tier.flags);
        self.scratch.extend_from_slice(tier.name.as_bytes());
        self.scratch.push(0);
        self.put_padding(pad);
        self.finish()
    }

    /// Writes a SAMPLY_EMBEDDED_SOURCE_FILE record, padded to 8.
    pub fn write_embedded_source_record(
        &mut self,
        timestamp: u64,
        path: &str,
        content: &[u8],
    ) -> io::Result<()> {
        if path.contains('\0') {
            return Err(invalid("source path contains a NUL byte"));
        }
        let path_size = path.len() + 1 + pad_to(path.len() + 1, 4);
        let unpadded = RECORD_HEADER_SIZE + 16 + path_size + content.len();
        let pad = pad_to(unpadded, 8);
        let total = record_size(unpadded + pad)?;
        self.start(RecordType::SAMPLY_EMBEDDED_SOURCE_FILE, total, timestamp);
        self.put32(path_size as u32);
        self.put32(0);
        self.put64(content.len() as u64);
        self.scratch.extend_from_slice(path.as_bytes());
        self.put_padding(path_size - path.len());
        self.w.write_all(&self.scratch)?;
        self.w.write_all(content)?;
        self.w.write_all(ZEROS.get(..pad).unwrap_or(&[]))?;
        self.records += 1;
        Ok(())
    }

    /// Writes a SAMPLY_JIT_CODE_DEBUG_INFO2 record.
    pub fn write_debug_info2_record(
        &mut self,
        timestamp: u64,
        d: &DebugInfo2Data,
    ) -> io::Result<()> {
        fn string_list(strings: &[String]) -> io::Result<(usize, usize)> {
            if strings.iter().any(|s| s.contains('\0')) {
                return Err(invalid("DEBUG_INFO2 string contains a NUL byte"));
            }
            let raw = strings.iter().map(|s| s.len() + 1).sum::<usize>();
            Ok((raw, raw + pad_to(raw, 4)))
        }
        let (files_raw, files_size) = string_list(&d.files)?;
        let (names_raw, names_size) = string_list(&d.function_names)?;
        let count = |n: usize| u32::try_from(n).map_err(|_| invalid("DEBUG_INFO2 list too long"));
        let body = 32
            + files_size
            + names_size
            + 20 * d.functions.len()
            + 20 * d.inline_calls.len()
            + 8 * d.ranges.len()
            + 16 * d.lines.len();
        let total = record_size(RECORD_HEADER_SIZE + body)?;
        self.start(RecordType::SAMPLY_DEBUG_INFO2, total, timestamp);
        for v in [
            count(d.files.len())?,
            count(files_size)?,
            count(d.function_names.len())?,
            count(names_size)?,
            count(d.functions.len())?,
            count(d.inline_calls.len())?,
            count(d.ranges.len())?,
            count(d.lines.len())?,
        ] {
            self.put32(v);
        }
        for (list, raw, size) in [
            (&d.files, files_raw, files_size),
            (&d.function_names, names_raw, names_size),
        ] {
            for s in list {
                self.scratch.extend_from_slice(s.as_bytes());
                self.scratch.push(0);
            }
            self.put_padding(size - raw);
        }
        for f in &d.functions {
            for v in [
                f.function_name_index,
                f.file_index,
                f.start_line,
                f.start_column,
                f.flags,
            ] {
                self.put32(v);
            }
        }
        for c in &d.inline_calls {
            for v in [
                c.depth,
                c.range_count,
                c.function_index,
                c.call_line_number,
                c.call_column_number,
            ] {
                self.put32(v);
            }
        }
        for r in &d.ranges {
            self.put32(r.start_offset);
            self.put32(r.size);
        }
        for l in &d.lines {
            for v in [l.code_offset, l.file_index, l.line_number, l.column_number] {
                self.put32(v);
            }
        }
        self.finish()
    }

    /// Writes a record with any id and a body given as bytes (for unknown ids, re-encoding
    /// files byte for byte, and deliberately malformed test files).
    pub fn write_raw_record(
        &mut self,
        id: RecordType,
        timestamp: u64,
        body: &[u8],
    ) -> io::Result<()> {
        let total = record_size(RECORD_HEADER_SIZE + body.len())?;
        self.start(id, total, timestamp);
        self.w.write_all(&self.scratch)?;
        self.w.write_all(body)?;
        self.records += 1;
        Ok(())
    }
}

/// A `jit-<pid>.dump` on disk whose first page is mapped `PROT_READ|PROT_EXEC`, so that
/// `perf record` records an MMAP event for it and `perf inject --jit` finds it.
#[derive(Debug)]
pub struct JitDumpFile {
    writer: JitDumpWriter<BufWriter<File>>,
    path: PathBuf,
    #[cfg(unix)]
    marker: Option<(usize, usize)>,
}

impl JitDumpFile {
    /// Creates (truncating) `<dir>/jit-<header.pid>.dump`, writes the header and maps the marker page.
    pub fn create(dir: &Path, header: &HeaderOptions) -> io::Result<JitDumpFile> {
        let path = dir.join(format!("jit-{}.dump", header.pid));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        #[cfg(unix)]
        let marker = map_marker(&file);
        let writer = JitDumpWriter::new(BufWriter::with_capacity(256 * 1024, file), header)?;
        Ok(JitDumpFile {
            writer,
            path,
            #[cfg(unix)]
            marker,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record writer.
    pub fn writer(&mut self) -> &mut JitDumpWriter<BufWriter<File>> {
        &mut self.writer
    }

    /// Flushes buffered records to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

#[cfg(unix)]
fn map_marker(file: &File) -> Option<(usize, usize)> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let len = usize::try_from(page)
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096);
    // SAFETY: a fresh private read+exec mapping of our own file descriptor; we never touch
    // its memory, we only keep it so perf sees an executable mapping of the dump.
    let addr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        None
    } else {
        Some((addr as usize, len))
    }
}

impl Drop for JitDumpFile {
    fn drop(&mut self) {
        let _ = self.writer.flush();
        #[cfg(unix)]
        if let Some((addr, len)) = self.marker.take() {
            // SAFETY: unmapping exactly the mapping created in `map_marker`.
            unsafe {
                libc::munmap(addr as *mut libc::c_void, len);
            }
        }
    }
}

/// A small dump with one of each record kind, for examples and doc tests.
#[doc(hidden)]
pub fn example_dump() -> Vec<u8> {
    let mut w = match JitDumpWriter::new(Vec::new(), &HeaderOptions::default()) {
        Ok(w) => w,
        Err(_) => return Vec::new(),
    };
    let code = [0x55u8, 0x48, 0x89, 0xe5, 0x5d, 0xc3];
    let entries = [DebugEntry {
        addr: 0x1000,
        line: 1,
        discrim: 0,
        file: b"example.js",
    }];
    let mut load = CodeLoadData::new(0, 0x1000, &code, "example");
    load.debug_info = Some(&entries);
    let _ = w.write_code_load(&load);
    let _ = w.write_code_close_record(monotonic_ns());
    w.into_inner()
}
