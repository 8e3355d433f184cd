//! The borrowed read layer: the file, its buffers, and each buffer's events.
//!
//! Every buffer restarts all delta state (time, pointer, object and method bases, the method
//! cursor) from its 48-byte header, so buffers decode independently (and in parallel).
//! Lists inside events (backtraces, GC moves, heap references, roots, sample IPs, counters)
//! are validated when the event is decoded and iterated lazily, without allocation.

use crate::cursor::Cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::raw::*;

/// A whole file (already decompressed).
#[derive(Clone, Debug)]
pub struct File<'a> {
    /// The file header.
    pub header: Header,
    data: &'a [u8],
}

impl<'a> File<'a> {
    /// Parses the header of `data`.
    pub fn parse(data: &'a [u8]) -> Result<File<'a>> {
        let header = Header::parse(data)?;
        Ok(File { header, data })
    }

    /// The whole file's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The buffers, in file order.
    pub fn buffers(&self) -> Buffers<'a> {
        Buffers {
            data: self.data,
            pos: self.header.size,
            index: 0,
            done: false,
            ctx_version: self.header.data_version,
            ptrsize: self.header.ptrsize,
        }
    }
}

/// A buffer header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferHeader {
    /// Bytes of events after the header.
    pub len: u32,
    /// Time base (ns).
    pub time_base: u64,
    /// Pointer base.
    pub ptr_base: u64,
    /// Object base (already `>> 3`).
    pub obj_base: u64,
    /// Thread id (pthread_t).
    pub thread_id: u64,
    /// Method base: the method cursor's start.
    pub method_base: u64,
}

impl BufferHeader {
    /// Encodes the 48-byte header.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&BUF_ID.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        for v in [
            self.time_base,
            self.ptr_base,
            self.obj_base,
            self.thread_id,
            self.method_base,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// One buffer: the events of one thread.
#[derive(Clone, Copy, Debug)]
pub struct Buffer<'a> {
    /// Index in the file.
    pub index: usize,
    /// File offset of the buffer header.
    pub offset: u64,
    /// The header.
    pub header: BufferHeader,
    /// The event bytes (shorter than `header.len` when the file is cut off).
    pub data: &'a [u8],
    /// True when the file ends before `header.len` bytes.
    pub truncated: bool,
    version: u8,
    ptrsize: u8,
}

impl<'a> Buffer<'a> {
    /// A buffer over `data` (its event bytes) for a file with `header`; `offset` is the file
    /// offset of its 48-byte header. Used by the streaming reader, whose buffers own their bytes.
    pub fn new(
        file: &Header,
        index: usize,
        offset: u64,
        header: BufferHeader,
        data: &'a [u8],
        truncated: bool,
    ) -> Buffer<'a> {
        Buffer {
            index,
            offset,
            header,
            data,
            truncated,
            version: file.data_version,
            ptrsize: file.ptrsize,
        }
    }

    /// The events of this buffer.
    pub fn events(&self) -> Events<'a> {
        let mask = if self.ptrsize == 4 {
            0xffff_ffff
        } else {
            u64::MAX
        };
        Events {
            c: Cursor::new(
                self.data,
                self.offset + BUF_HEADER_SIZE as u64,
                self.truncated,
            ),
            ctx: Ctx {
                ptr_base: self.header.ptr_base,
                obj_base: self.header.obj_base,
                mask,
                version: self.version,
            },
            time: self.header.time_base,
            method: self.header.method_base,
            done: false,
        }
    }

    /// Data version of the file.
    pub fn version(&self) -> u8 {
        self.version
    }
}

/// Iterator over the buffers of a file. A bad buffer magic is reported and the scan resumes
/// at the next `BUF_ID`; a cut-off buffer is yielded (marked truncated) and ends the scan.
#[derive(Clone, Debug)]
pub struct Buffers<'a> {
    data: &'a [u8],
    pos: usize,
    index: usize,
    done: bool,
    ctx_version: u8,
    ptrsize: u8,
}

impl<'a> Buffers<'a> {
    /// Offset of the next buffer.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Buffers<'a> {
    type Item = Result<Buffer<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() {
            return None;
        }
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        let mut c = Cursor::new(rest, self.pos as u64, true);
        let parsed = (|| -> Result<BufferHeader> {
            let id = c.u32le("buffer header")?;
            if id != BUF_ID {
                return Err(Error::new(c.base, ErrorKind::BadBufferMagic(id)));
            }
            Ok(BufferHeader {
                len: c.u32le("buffer header")?,
                time_base: c.u64le("buffer header")?,
                ptr_base: c.u64le("buffer header")?,
                obj_base: c.u64le("buffer header")?,
                thread_id: c.u64le("buffer header")?,
                method_base: c.u64le("buffer header")?,
            })
        })();
        let header = match parsed {
            Ok(h) => h,
            Err(e) => {
                if e.is_truncation() {
                    self.done = true;
                } else {
                    // resync at the next buffer magic
                    let magic = BUF_ID.to_le_bytes();
                    let from = self.pos + 1;
                    match self
                        .data
                        .get(from..)
                        .and_then(|s| s.windows(4).position(|w| w == magic))
                    {
                        Some(p) => self.pos = from + p,
                        None => self.done = true,
                    }
                }
                return Some(Err(e));
            }
        };
        let start = self.pos + BUF_HEADER_SIZE;
        let want = header.len as usize;
        let avail = self.data.len().saturating_sub(start);
        let truncated = want > avail;
        let end = start + want.min(avail);
        let buf = Buffer {
            index: self.index,
            offset: self.pos as u64,
            header,
            data: self.data.get(start..end).unwrap_or(&[]),
            truncated,
            version: self.ctx_version,
            ptrsize: self.ptrsize,
        };
        self.index += 1;
        self.pos = end;
        if truncated {
            self.done = true;
        }
        Some(Ok(buf))
    }
}

/// Per-buffer decoding context.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    ptr_base: u64,
    obj_base: u64,
    mask: u64,
    version: u8,
}

impl Ctx {
    #[inline(always)]
    fn ptr(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<u64> {
        Ok(self.ptr_base.wrapping_add(c.sleb(what)? as u64) & self.mask)
    }
    #[inline(always)]
    fn obj(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<u64> {
        Ok(self.obj_base.wrapping_add(c.sleb(what)? as u64) << 3)
    }
}

/// How an allocation or heap object names its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClassRef {
    /// A MonoClass* (data versions 1-14).
    Class(u64),
    /// A MonoVTable* (data version 15+), mapped to a class by a VTABLE metadata event.
    Vtable(u64),
}

/// A backtrace or a sample's managed frames: MonoMethod* values, innermost first.
#[derive(Clone, Copy, Debug)]
pub struct Frames<'a> {
    c: Cursor<'a>,
    n: u32,
    start: u64,
    running: bool,
    triplets: bool,
    ctx: Ctx,
}

impl<'a> Frames<'a> {
    fn empty(ctx: Ctx) -> Self {
        Frames {
            c: Cursor::new(&[], 0, false),
            n: 0,
            start: 0,
            running: false,
            triplets: false,
            ctx,
        }
    }
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True without frames.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl Iterator for Frames<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        let d = self.c.sleb("frame").ok()?;
        if self.triplets {
            self.c.sleb("frame il offset").ok()?;
            self.c.sleb("frame native offset").ok()?;
        }
        if self.running {
            self.start = self.start.wrapping_add(d as u64) & self.ctx.mask;
            Some(self.start)
        } else {
            Some(self.ctx.ptr_base.wrapping_add(d as u64) & self.ctx.mask)
        }
    }
}

/// A lazily decoded list of `n` items (objects, pointers, heap references, roots).
#[derive(Clone, Copy, Debug)]
pub struct List<'a, T> {
    c: Cursor<'a>,
    n: u32,
    ctx: Ctx,
    acc: u64,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T> List<'a, T> {
    fn new(c: Cursor<'a>, n: u32, ctx: Ctx) -> Self {
        List {
            c,
            n,
            ctx,
            acc: 0,
            _t: std::marker::PhantomData,
        }
    }
    /// Number of items.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True without items.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Marker: object addresses.
#[derive(Clone, Copy, Debug)]
pub struct Obj;
/// Marker: pointers.
#[derive(Clone, Copy, Debug)]
pub struct Ptr;

/// A heap-object reference: offset inside the object (0 in data version 1) and the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapRef {
    /// Byte offset of the field from the object start.
    pub offset: u64,
    /// The referenced object.
    pub obj: u64,
}

/// A heap root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Root {
    /// The root object.
    pub obj: u64,
    /// Root type (v3-14; 0 in v15+).
    pub root_type: u64,
    /// Extra info (v3-14).
    pub extra: u64,
    /// Slot address (v15+).
    pub slot: u64,
}

impl Iterator for List<'_, Obj> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        self.ctx.obj(&mut self.c, "object").ok()
    }
}

impl Iterator for List<'_, Ptr> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        self.ctx.ptr(&mut self.c, "pointer").ok()
    }
}

impl Iterator for List<'_, HeapRef> {
    type Item = HeapRef;
    fn next(&mut self) -> Option<HeapRef> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        if self.ctx.version >= 2 {
            self.acc = self.acc.wrapping_add(self.c.uleb("ref offset").ok()?);
        }
        let obj = self.ctx.obj(&mut self.c, "ref object").ok()?;
        Some(HeapRef {
            offset: self.acc,
            obj,
        })
    }
}

impl Iterator for List<'_, Root> {
    type Item = Root;
    fn next(&mut self) -> Option<Root> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        let v = self.ctx.version;
        if v >= 15 {
            let slot = self.ctx.ptr(&mut self.c, "root slot").ok()?;
            let obj = self.ctx.obj(&mut self.c, "root object").ok()?;
            Some(Root {
                obj,
                slot,
                ..Root::default()
            })
        } else {
            let obj = self.ctx.obj(&mut self.c, "root object").ok()?;
            let root_type = if v == 13 {
                u64::from(self.c.u8("root type").ok()?)
            } else {
                self.c.uleb("root type").ok()?
            };
            let extra = self.c.uleb("root extra").ok()?;
            Some(Root {
                obj,
                root_type,
                extra,
                slot: 0,
            })
        }
    }
}

/// A counter description (COUNTERS_DESC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDesc<'a> {
    /// Section mask (JIT 1<<8, GC 1<<9, ...).
    pub section: u64,
    /// Section name (PERFCOUNTERS only).
    pub section_name: &'a [u8],
    /// Counter name.
    pub name: &'a [u8],
    /// Value type (INT 0 ... TIME_INTERVAL 7).
    pub ctype: u64,
    /// Unit mask.
    pub unit: u64,
    /// Variance mask.
    pub variance: u64,
    /// Index used by COUNTERS samples.
    pub index: u64,
}

/// A COUNTERS_DESC list.
#[derive(Clone, Copy, Debug)]
pub struct CounterDescs<'a> {
    c: Cursor<'a>,
    n: u32,
    version: u8,
}

impl CounterDescs<'_> {
    /// Number of descriptions.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

fn counter_desc<'a>(c: &mut Cursor<'a>, version: u8) -> Result<CounterDesc<'a>> {
    let section = c.uleb("counter section")?;
    let section_name = if section == COUNTER_SECTION_PERFCOUNTERS {
        c.cstr("counter section name")?
    } else {
        &[]
    };
    let name = c.cstr("counter name")?;
    let byte_fields = (13..=14).contains(&version);
    let mut f = |what| -> Result<u64> {
        if byte_fields {
            Ok(u64::from(c.u8(what)?))
        } else {
            c.uleb(what)
        }
    };
    let ctype = f("counter type")?;
    let unit = f("counter unit")?;
    let variance = f("counter variance")?;
    let index = c.uleb("counter index")?;
    Ok(CounterDesc {
        section,
        section_name,
        name,
        ctype,
        unit,
        variance,
        index,
    })
}

impl<'a> Iterator for CounterDescs<'a> {
    type Item = CounterDesc<'a>;
    fn next(&mut self) -> Option<CounterDesc<'a>> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        counter_desc(&mut self.c, self.version).ok()
    }
}

/// A counter value as written: a delta from the counter's previous value (except strings).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CounterValue<'a> {
    /// INT, WORD, LONG, TIME_INTERVAL: a signed delta.
    Signed(i64),
    /// UINT, ULONG: an unsigned delta (wrapping).
    Unsigned(u64),
    /// DOUBLE: the raw value.
    Double(f64),
    /// STRING: the value, or None.
    String(Option<&'a [u8]>),
}

/// The values of one COUNTERS event: `(index, type, value)`.
#[derive(Clone, Copy, Debug)]
pub struct CounterValues<'a> {
    c: Cursor<'a>,
    version: u8,
    done: bool,
}

fn counter_value<'a>(
    c: &mut Cursor<'a>,
    version: u8,
) -> Result<Option<(u64, u64, CounterValue<'a>)>> {
    let index = c.uleb("counter index")?;
    if index == 0 {
        return Ok(None);
    }
    let ctype = if (13..=14).contains(&version) {
        u64::from(c.u8("counter type")?)
    } else {
        c.uleb("counter type")?
    };
    let v = match ctype {
        COUNTER_INT | COUNTER_WORD | COUNTER_LONG | COUNTER_TIME_INTERVAL => {
            CounterValue::Signed(c.sleb("counter value")?)
        }
        COUNTER_UINT | COUNTER_ULONG => CounterValue::Unsigned(c.uleb("counter value")?),
        COUNTER_DOUBLE => {
            let b = c.u64le("counter value")?;
            CounterValue::Double(f64::from_bits(b))
        }
        COUNTER_STRING => {
            if c.u8("counter string flag")? != 0 {
                CounterValue::String(Some(c.cstr("counter string")?))
            } else {
                CounterValue::String(None)
            }
        }
        other => {
            return Err(Error::new(
                c.offset(),
                ErrorKind::BadValue("counter type", other),
            ))
        }
    };
    Ok(Some((index, ctype, v)))
}

impl<'a> Iterator for CounterValues<'a> {
    type Item = (u64, u64, CounterValue<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match counter_value(&mut self.c, self.version) {
            Ok(Some(x)) => Some(x),
            _ => {
                self.done = true;
                None
            }
        }
    }
}

/// What a METADATA event does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaAction {
    /// exinfo 0: a name (thread, domain).
    Name,
    /// END_LOAD.
    Load,
    /// END_UNLOAD.
    Unload,
}

/// A METADATA event (fields a type does not have are 0 / empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata<'a> {
    /// Name / load / unload.
    pub action: MetaAction,
    /// Metadata type (CLASS 1 ... VTABLE 7).
    pub mtype: u8,
    /// The pointer (MonoClass*, MonoImage*, thread id, ...).
    pub ptr: u64,
    /// Image (class, assembly v14+).
    pub image: u64,
    /// Domain (context, vtable).
    pub domain: u64,
    /// Class (vtable).
    pub class: u64,
    /// Name (class, image file, assembly, domain, thread).
    pub name: &'a [u8],
    /// Module version id (image load, v16+).
    pub mvid: &'a [u8],
}

#[allow(missing_docs)] // field meanings: shared/notes/mono-log-profiler.md §3
/// The kinds of events, with their payloads (absolute values: pointers, objects and methods
/// are resolved against the buffer's bases).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum EventKind<'a> {
    /// An allocation.
    Alloc {
        class: ClassRef,
        obj: u64,
        size: u64,
        backtrace: Frames<'a>,
    },
    /// A GC phase (`event`: START 0 ... POST_START_WORLD_UNLOCKED 11).
    GcEvent { event: u64, generation: u64 },
    /// The heap was resized.
    GcResize { heap_size: u64 },
    /// Objects moved: (old, new) pairs.
    GcMove { objects: List<'a, Obj> },
    /// A GC handle was created.
    GcHandleCreated {
        htype: u64,
        handle: u64,
        obj: u64,
        backtrace: Frames<'a>,
    },
    /// A GC handle was destroyed.
    GcHandleDestroyed {
        htype: u64,
        handle: u64,
        backtrace: Frames<'a>,
    },
    /// Finalization started.
    GcFinalizeStart,
    /// Finalization ended.
    GcFinalizeEnd,
    /// An object's finalizer starts.
    GcFinalizeObjectStart { obj: u64 },
    /// An object's finalizer ended.
    GcFinalizeObjectEnd { obj: u64 },
    /// Metadata load/unload/name.
    Metadata(Metadata<'a>),
    /// A method was entered.
    Enter { method: u64 },
    /// A method returned.
    Leave { method: u64 },
    /// A method was left by an exception.
    ExcLeave { method: u64 },
    /// A method was compiled.
    Jit {
        method: u64,
        code: u64,
        size: u64,
        name: &'a [u8],
    },
    /// An exception was thrown.
    Throw { obj: u64, backtrace: Frames<'a> },
    /// An exception clause ran (0 catch, 1 filter, 2 finally, 4 fault).
    Clause {
        clause_type: u64,
        index: u64,
        method: u64,
        obj: Option<u64>,
    },
    /// A monitor event (1 contention, 2 done, 3 fail).
    Monitor {
        event: u8,
        obj: u64,
        backtrace: Frames<'a>,
    },
    /// A heap shot starts.
    HeapStart,
    /// A heap shot ends.
    HeapEnd,
    /// A live object (size 0: more references of the previous one).
    HeapObject {
        obj: u64,
        class: ClassRef,
        size: u64,
        generation: Option<u8>,
        refs: List<'a, HeapRef>,
    },
    /// Heap roots.
    HeapRoots {
        num_major_gcs: u64,
        roots: List<'a, Root>,
    },
    /// A root range was registered.
    RootRegister {
        start: u64,
        size: u64,
        source: u8,
        key: u64,
        name: &'a [u8],
    },
    /// A root range was unregistered.
    RootUnregister { start: u64 },
    /// A statistical sample.
    SampleHit {
        sample_type: u64,
        timestamp: Option<u64>,
        thread: u64,
        ips: List<'a, Ptr>,
        frames: Frames<'a>,
    },
    /// An unmanaged symbol.
    Usym {
        addr: u64,
        size: u64,
        name: &'a [u8],
    },
    /// An unmanaged binary (v4-15).
    Ubin {
        addr: u64,
        file_offset: u64,
        size: u64,
        name: &'a [u8],
    },
    /// Counter descriptions.
    CountersDesc { descs: CounterDescs<'a> },
    /// Counter values (`timestamp`: ms since startup before v13).
    Counters {
        timestamp: Option<u64>,
        values: CounterValues<'a>,
    },
    /// Runtime code (trampolines, helpers); `htype` in v14+ numbering.
    JitHelper {
        htype: u64,
        addr: u64,
        size: u64,
        name: &'a [u8],
    },
    /// A coverage event (v10-15; payload skipped).
    Coverage { kind: u8 },
    /// A sync point (0 periodic, 1 world stop, 2 world start).
    SyncPoint { kind: u8 },
    /// The AOT id.
    AotId { id: &'a [u8] },
}

/// One decoded event.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// File offset of the event byte.
    pub offset: u64,
    /// The event byte (`exinfo | type`).
    pub byte: u8,
    /// Encoded size in bytes.
    pub size: u32,
    /// Time (ns on the runtime's monotonic clock; events without a time field keep the
    /// previous event's time).
    pub time: u64,
    /// Payload.
    pub kind: EventKind<'a>,
}

/// The events of one buffer. After an error the iterator ends (the rest of the buffer cannot be
/// interpreted).
#[derive(Clone, Debug)]
pub struct Events<'a> {
    c: Cursor<'a>,
    ctx: Ctx,
    time: u64,
    method: u64,
    done: bool,
}

impl<'a> Events<'a> {
    /// Bytes of the buffer not decoded (after an error: the skipped rest).
    pub fn remaining(&self) -> usize {
        self.c.remaining()
    }

    #[inline(always)]
    fn time(&mut self) -> Result<u64> {
        let d = self.c.uleb("time delta")?;
        self.time = self.time.wrapping_add(d);
        Ok(self.time)
    }

    #[inline(always)]
    fn method(&mut self) -> Result<u64> {
        let d = self.c.sleb("method")?;
        self.method = self.method.wrapping_add(d as u64) & self.ctx.mask;
        Ok(self.method)
    }

    fn frames(&mut self, mbt: bool) -> Result<Frames<'a>> {
        let v = self.ctx.version;
        if !mbt && v < 13 {
            self.c.uleb("backtrace flags")?;
        }
        let n = self.c.count("frame count", 1)? as u32;
        let start_c = self.c;
        let running = mbt || v >= 13;
        let triplets = mbt && v < 13;
        let start = self.method;
        for _ in 0..n {
            let d = self.c.sleb("frame")?;
            if triplets {
                self.c.sleb("frame il offset")?;
                self.c.sleb("frame native offset")?;
            }
            if running {
                self.method = self.method.wrapping_add(d as u64) & self.ctx.mask;
            }
        }
        let mut fc = start_c;
        fc.data = start_c.data.get(..self.c.pos).unwrap_or(&[]);
        Ok(Frames {
            c: fc,
            n,
            start,
            running,
            triplets,
            ctx: self.ctx,
        })
    }

    fn list<T>(
        &mut self,
        n: u32,
        mut skip: impl FnMut(&mut Cursor<'a>) -> Result<()>,
    ) -> Result<List<'a, T>> {
        let start = self.c;
        for _ in 0..n {
            skip(&mut self.c)?;
        }
        let mut lc = start;
        lc.data = start.data.get(..self.c.pos).unwrap_or(&[]);
        Ok(List::new(lc, n, self.ctx))
    }

    /// The next event if it is an ENTER, LEAVE or EXC_LEAVE, as (event byte, encoded size,
    /// time, method), without building an [`Event`]: the hot path of a `calls` file. `None`
    /// (nothing consumed) for any other event, at the end, or when a field is cut off; then
    /// [`Iterator::next`] decodes (or reports) it.
    #[inline(always)]
    pub fn next_call(&mut self) -> Option<(u8, u32, u64, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        let byte = *self.c.data.get(save)?;
        if !matches!(
            byte,
            event::METHOD_LEAVE | event::METHOD_ENTER | event::METHOD_EXC_LEAVE
        ) {
            return None;
        }
        let (time0, method0) = (self.time, self.method);
        self.c.pos += 1;
        match (self.time(), self.method()) {
            (Ok(t), Ok(m)) => Some((byte, (self.c.pos - save) as u32, t, m)),
            _ => {
                self.c.pos = save;
                self.time = time0;
                self.method = method0;
                None
            }
        }
    }

    /// The next event if it is an allocation without a backtrace (byte `0x00`), as (encoded
    /// size, time, class, object, object size), without building an [`Event`]. `None`
    /// (nothing consumed) otherwise, like [`Events::next_call`].
    #[inline(always)]
    pub fn next_alloc(&mut self) -> Option<(u32, u64, ClassRef, u64, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        if *self.c.data.get(save)? != event::ALLOC {
            return None;
        }
        let time0 = self.time;
        self.c.pos += 1;
        let ctx = self.ctx;
        let r = (|| -> Result<(u64, u64, u64, u64)> {
            Ok((
                self.time()?,
                ctx.ptr(&mut self.c, "alloc class")?,
                ctx.obj(&mut self.c, "alloc object")?,
                self.c.uleb("alloc size")?,
            ))
        })();
        match r {
            Ok((t, p, obj, size)) => {
                let class = if ctx.version >= 15 {
                    ClassRef::Vtable(p)
                } else {
                    ClassRef::Class(p)
                };
                Some(((self.c.pos - save) as u32, t, class, obj, size))
            }
            Err(_) => {
                self.c.pos = save;
                self.time = time0;
                None
            }
        }
    }

    /// Decodes an ENTER/LEAVE/EXC_LEAVE at the cursor, or `None` (cursor unchanged) when a
    /// field is cut off, leaving the error to the general decoder.
    #[inline(always)]
    fn call_event(&mut self, byte: u8) -> Option<Event<'a>> {
        let save = self.c.pos;
        let (time0, method0) = (self.time, self.method);
        let off = self.c.offset();
        self.c.pos += 1;
        let r = (|| -> Result<(u64, u64)> { Ok((self.time()?, self.method()?)) })();
        match r {
            Ok((time, method)) => Some(Event {
                offset: off,
                byte,
                size: (self.c.pos - save) as u32,
                time,
                kind: match byte {
                    event::METHOD_LEAVE => EventKind::Leave { method },
                    event::METHOD_ENTER => EventKind::Enter { method },
                    _ => EventKind::ExcLeave { method },
                },
            }),
            Err(_) => {
                self.c.pos = save;
                self.time = time0;
                self.method = method0;
                None
            }
        }
    }

    fn unknown(&self, off: u64, byte: u8) -> Error {
        Error::new(
            off,
            ErrorKind::UnknownEvent {
                byte,
                version: self.ctx.version,
            },
        )
    }

    fn decode(&mut self) -> Result<Event<'a>> {
        let off = self.c.offset();
        let start = self.c.pos;
        let byte = self.c.u8("event")?;
        let v = self.ctx.version;
        if !event_defined(byte, v) {
            return Err(self.unknown(off, byte));
        }
        let ex = byte & EXINFO_MASK;
        let ctx = self.ctx;
        let kind = match EventType::of(byte) {
            EventType::ALLOC => {
                self.time()?;
                let p = ctx.ptr(&mut self.c, "alloc class")?;
                let class = if v >= 15 {
                    ClassRef::Vtable(p)
                } else {
                    ClassRef::Class(p)
                };
                let obj = ctx.obj(&mut self.c, "alloc object")?;
                let size = self.c.uleb("alloc size")?;
                let backtrace = if ex == TYPE_ALLOC_BT {
                    self.frames(false)?
                } else {
                    Frames::empty(ctx)
                };
                EventKind::Alloc {
                    class,
                    obj,
                    size,
                    backtrace,
                }
            }
            EventType::GC => {
                self.time()?;
                match ex {
                    TYPE_GC_EVENT => {
                        let (event, generation) = if v >= 13 {
                            (
                                u64::from(self.c.u8("gc event")?),
                                u64::from(self.c.u8("gc generation")?),
                            )
                        } else {
                            (self.c.uleb("gc event")?, self.c.uleb("gc generation")?)
                        };
                        EventKind::GcEvent { event, generation }
                    }
                    TYPE_GC_RESIZE => EventKind::GcResize {
                        heap_size: self.c.uleb("heap size")?,
                    },
                    TYPE_GC_MOVE => {
                        let n = self.c.count("gc move count", 1)? as u32;
                        let objects = self.list(n, |c| c.sleb("moved object").map(|_| ()))?;
                        EventKind::GcMove { objects }
                    }
                    TYPE_GC_HANDLE_CREATED | TYPE_GC_HANDLE_CREATED_BT => {
                        let htype = self.c.uleb("handle type")?;
                        let handle = self.c.uleb("handle")?;
                        let obj = ctx.obj(&mut self.c, "handle object")?;
                        let backtrace = if ex == TYPE_GC_HANDLE_CREATED_BT {
                            self.frames(false)?
                        } else {
                            Frames::empty(ctx)
                        };
                        EventKind::GcHandleCreated {
                            htype,
                            handle,
                            obj,
                            backtrace,
                        }
                    }
                    TYPE_GC_HANDLE_DESTROYED | TYPE_GC_HANDLE_DESTROYED_BT => {
                        let htype = self.c.uleb("handle type")?;
                        let handle = self.c.uleb("handle")?;
                        let backtrace = if ex == TYPE_GC_HANDLE_DESTROYED_BT {
                            self.frames(false)?
                        } else {
                            Frames::empty(ctx)
                        };
                        EventKind::GcHandleDestroyed {
                            htype,
                            handle,
                            backtrace,
                        }
                    }
                    TYPE_GC_FINALIZE_START => EventKind::GcFinalizeStart,
                    TYPE_GC_FINALIZE_END => EventKind::GcFinalizeEnd,
                    TYPE_GC_FINALIZE_OBJECT_START => EventKind::GcFinalizeObjectStart {
                        obj: ctx.obj(&mut self.c, "object")?,
                    },
                    _ => EventKind::GcFinalizeObjectEnd {
                        obj: ctx.obj(&mut self.c, "object")?,
                    },
                }
            }
            EventType::METADATA => {
                self.time()?;
                let action = match ex & !TYPE_LOAD_ERR {
                    TYPE_METADATA_NAME => MetaAction::Name,
                    TYPE_END_LOAD => MetaAction::Load,
                    _ => MetaAction::Unload,
                };
                let mtype_off = self.c.offset();
                let mtype = self.c.u8("metadata type")?;
                let ptr = ctx.ptr(&mut self.c, "metadata pointer")?;
                let mut m = Metadata {
                    action,
                    mtype,
                    ptr,
                    image: 0,
                    domain: 0,
                    class: 0,
                    name: &[],
                    mvid: &[],
                };
                let old = v < 13;
                match mtype {
                    MTYPE_CLASS => {
                        m.image = ctx.ptr(&mut self.c, "class image")?;
                        if old {
                            self.c.uleb("metadata flags")?;
                        }
                        m.name = self.c.cstr("class name")?;
                    }
                    MTYPE_IMAGE => {
                        if old {
                            self.c.uleb("metadata flags")?;
                        }
                        m.name = self.c.cstr("image name")?;
                        if v >= 16 && action == MetaAction::Load {
                            m.mvid = self.c.cstr("image mvid")?;
                        }
                    }
                    MTYPE_ASSEMBLY => {
                        if old {
                            self.c.uleb("metadata flags")?;
                        }
                        if v >= 14 {
                            m.image = ctx.ptr(&mut self.c, "assembly image")?;
                        }
                        m.name = self.c.cstr("assembly name")?;
                    }
                    MTYPE_DOMAIN | MTYPE_THREAD => {
                        if old {
                            self.c.uleb("metadata flags")?;
                        }
                        if action == MetaAction::Name {
                            m.name = self.c.cstr("name")?;
                        }
                    }
                    MTYPE_CONTEXT if v >= 11 => {
                        if old {
                            self.c.uleb("metadata flags")?;
                        }
                        m.domain = ctx.ptr(&mut self.c, "context domain")?;
                    }
                    MTYPE_VTABLE if v >= 15 => {
                        m.domain = ctx.ptr(&mut self.c, "vtable domain")?;
                        m.class = ctx.ptr(&mut self.c, "vtable class")?;
                    }
                    other => {
                        return Err(Error::new(
                            mtype_off,
                            ErrorKind::BadValue("metadata type", u64::from(other)),
                        ));
                    }
                }
                EventKind::Metadata(m)
            }
            EventType::METHOD => {
                self.time()?;
                let method = self.method()?;
                match ex {
                    TYPE_LEAVE => EventKind::Leave { method },
                    TYPE_ENTER => EventKind::Enter { method },
                    TYPE_EXC_LEAVE => EventKind::ExcLeave { method },
                    _ => {
                        let code = ctx.ptr(&mut self.c, "code address")?;
                        let size = self.c.uleb("code size")?;
                        let name = self.c.cstr("method name")?;
                        EventKind::Jit {
                            method,
                            code,
                            size,
                            name,
                        }
                    }
                }
            }
            EventType::EXCEPTION => {
                self.time()?;
                if ex & !TYPE_THROW_BT == TYPE_CLAUSE {
                    let clause_type = if v >= 13 {
                        u64::from(self.c.u8("clause type")?)
                    } else {
                        self.c.uleb("clause type")?
                    };
                    let index = self.c.uleb("clause index")?;
                    let method = self.method()?;
                    let obj = if v >= 14 {
                        Some(ctx.obj(&mut self.c, "clause exception")?)
                    } else {
                        None
                    };
                    EventKind::Clause {
                        clause_type,
                        index,
                        method,
                        obj,
                    }
                } else {
                    let obj = ctx.obj(&mut self.c, "exception object")?;
                    let backtrace = if ex & TYPE_THROW_BT != 0 {
                        self.frames(false)?
                    } else {
                        Frames::empty(ctx)
                    };
                    EventKind::Throw { obj, backtrace }
                }
            }
            EventType::MONITOR => {
                self.time()?;
                let event = if v >= 14 {
                    self.c.u8("monitor event")?
                } else {
                    (ex & !TYPE_MONITOR_BT) >> 4
                };
                let obj = ctx.obj(&mut self.c, "monitor object")?;
                let backtrace = if ex & TYPE_MONITOR_BT != 0 {
                    self.frames(false)?
                } else {
                    Frames::empty(ctx)
                };
                EventKind::Monitor {
                    event,
                    obj,
                    backtrace,
                }
            }
            EventType::HEAP => match ex {
                TYPE_HEAP_START => {
                    self.time()?;
                    EventKind::HeapStart
                }
                TYPE_HEAP_END => {
                    self.time()?;
                    EventKind::HeapEnd
                }
                TYPE_HEAP_OBJECT => {
                    if v >= 13 {
                        self.time()?;
                    }
                    let obj = ctx.obj(&mut self.c, "heap object")?;
                    let p = ctx.ptr(&mut self.c, "heap object class")?;
                    let class = if v >= 15 {
                        ClassRef::Vtable(p)
                    } else {
                        ClassRef::Class(p)
                    };
                    let size = self.c.uleb("heap object size")?;
                    let generation = if v >= 16 {
                        Some(self.c.u8("heap object generation")?)
                    } else {
                        None
                    };
                    let n = self.c.count("heap reference count", 1)? as u32;
                    let refs = if v >= 2 {
                        self.list(n, |c| {
                            c.uleb("ref offset")?;
                            c.sleb("ref object").map(|_| ())
                        })?
                    } else {
                        self.list(n, |c| c.sleb("ref object").map(|_| ()))?
                    };
                    EventKind::HeapObject {
                        obj,
                        class,
                        size,
                        generation,
                        refs,
                    }
                }
                TYPE_HEAP_ROOT => {
                    if v >= 13 {
                        self.time()?;
                    }
                    if v >= 15 {
                        let n = self.c.count("root count", 2)? as u32;
                        let roots = self.list(n, |c| {
                            c.sleb("root slot")?;
                            c.sleb("root object").map(|_| ())
                        })?;
                        EventKind::HeapRoots {
                            num_major_gcs: 0,
                            roots,
                        }
                    } else {
                        let n = self.c.count("root count", 3)? as u32;
                        let num_major_gcs = self.c.uleb("major gc count")?;
                        let roots = self.list(n, |c| {
                            c.sleb("root object")?;
                            if v == 13 {
                                c.u8("root type")?;
                            } else {
                                c.uleb("root type")?;
                            }
                            c.uleb("root extra").map(|_| ())
                        })?;
                        EventKind::HeapRoots {
                            num_major_gcs,
                            roots,
                        }
                    }
                }
                TYPE_HEAP_ROOT_REGISTER => {
                    self.time()?;
                    let start = ctx.ptr(&mut self.c, "root start")?;
                    let size = self.c.uleb("root size")?;
                    let source = self.c.u8("root source")?;
                    let key = ctx.ptr(&mut self.c, "root key")?;
                    let name = self.c.cstr("root name")?;
                    EventKind::RootRegister {
                        start,
                        size,
                        source,
                        key,
                        name,
                    }
                }
                _ => {
                    self.time()?;
                    EventKind::RootUnregister {
                        start: ctx.ptr(&mut self.c, "root start")?,
                    }
                }
            },
            EventType::SAMPLE => match ex {
                TYPE_SAMPLE_HIT => {
                    let (sample_type, timestamp) = if v >= 13 {
                        self.time()?;
                        (
                            if v == 13 {
                                u64::from(self.c.u8("sample type")?)
                            } else {
                                0
                            },
                            None,
                        )
                    } else {
                        (
                            self.c.uleb("sample type")?,
                            Some(self.c.uleb("sample timestamp")?),
                        )
                    };
                    let thread = if v >= 11 {
                        ctx.ptr(&mut self.c, "sample thread")?
                    } else {
                        0
                    };
                    let n = self.c.count("sample ip count", 1)? as u32;
                    let ips = self.list(n, |c| c.sleb("sample ip").map(|_| ()))?;
                    let frames = if v >= 6 {
                        self.frames(true)?
                    } else {
                        Frames::empty(ctx)
                    };
                    EventKind::SampleHit {
                        sample_type,
                        timestamp,
                        thread,
                        ips,
                        frames,
                    }
                }
                TYPE_SAMPLE_USYM => {
                    if v >= 13 {
                        self.time()?;
                    }
                    let addr = ctx.ptr(&mut self.c, "symbol address")?;
                    let size = self.c.uleb("symbol size")?;
                    let name = self.c.cstr("symbol name")?;
                    EventKind::Usym { addr, size, name }
                }
                TYPE_SAMPLE_UBIN => {
                    self.time()?;
                    let addr = if v >= 14 {
                        ctx.ptr(&mut self.c, "binary address")?
                    } else {
                        self.c.sleb("binary address")? as u64
                    };
                    let file_offset = self.c.uleb("binary offset")?;
                    let size = self.c.uleb("binary size")?;
                    let name = self.c.cstr("binary name")?;
                    EventKind::Ubin {
                        addr,
                        file_offset,
                        size,
                        name,
                    }
                }
                TYPE_SAMPLE_COUNTERS_DESC => {
                    if v >= 13 {
                        self.time()?;
                    }
                    let n = self.c.count("counter count", 5)? as u32;
                    let start = self.c;
                    for _ in 0..n {
                        counter_desc(&mut self.c, v)?;
                    }
                    let mut dc = start;
                    dc.data = start.data.get(..self.c.pos).unwrap_or(&[]);
                    EventKind::CountersDesc {
                        descs: CounterDescs {
                            c: dc,
                            n,
                            version: v,
                        },
                    }
                }
                _ => {
                    let timestamp = if v >= 13 {
                        self.time()?;
                        None
                    } else {
                        Some(self.c.uleb("counters timestamp")?)
                    };
                    let start = self.c;
                    while counter_value(&mut self.c, v)?.is_some() {}
                    let mut vc = start;
                    vc.data = start.data.get(..self.c.pos).unwrap_or(&[]);
                    EventKind::Counters {
                        timestamp,
                        values: CounterValues {
                            c: vc,
                            version: v,
                            done: false,
                        },
                    }
                }
            },
            EventType::RUNTIME => {
                self.time()?;
                let raw = if v >= 13 {
                    u64::from(self.c.u8("helper type")?)
                } else {
                    self.c.uleb("helper type")?
                };
                let htype = if v < 14 { raw.wrapping_sub(1) } else { raw };
                let addr = ctx.ptr(&mut self.c, "helper address")?;
                let size = self.c.uleb("helper size")?;
                let name = if htype == 5 {
                    self.c.cstr("helper name")?
                } else {
                    &[]
                };
                EventKind::JitHelper {
                    htype,
                    addr,
                    size,
                    name,
                }
            }
            EventType::COVERAGE => {
                if v >= 13 {
                    self.time()?;
                }
                match ex {
                    TYPE_COVERAGE_ASSEMBLY => {
                        for _ in 0..3 {
                            self.c.cstr("coverage string")?;
                        }
                        for _ in 0..3 {
                            self.c.uleb("coverage number")?;
                        }
                    }
                    TYPE_COVERAGE_METHOD => {
                        for _ in 0..5 {
                            self.c.cstr("coverage string")?;
                        }
                        for _ in 0..3 {
                            self.c.uleb("coverage number")?;
                        }
                    }
                    TYPE_COVERAGE_STATEMENT => {
                        for _ in 0..5 {
                            self.c.uleb("coverage number")?;
                        }
                    }
                    _ => {
                        for _ in 0..2 {
                            self.c.cstr("coverage string")?;
                        }
                        for _ in 0..3 {
                            self.c.uleb("coverage number")?;
                        }
                    }
                }
                EventKind::Coverage { kind: ex >> 4 }
            }
            _ => {
                self.time()?;
                if ex == TYPE_SYNC_POINT {
                    EventKind::SyncPoint {
                        kind: self.c.u8("sync point type")?,
                    }
                } else {
                    EventKind::AotId {
                        id: self.c.cstr("aot id")?,
                    }
                }
            }
        };
        Ok(Event {
            offset: off,
            byte,
            size: (self.c.pos - start) as u32,
            time: self.time,
            kind,
        })
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<Event<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // fast path: ENTER / LEAVE / EXC_LEAVE are nearly all of a `calls` file
        let byte = *self.c.data.get(self.c.pos)?;
        if byte & 0x0f == 3 && matches!(byte, 0x13 | 0x23 | 0x33) {
            if let Some(ev) = self.call_event(byte) {
                return Some(Ok(ev));
            }
        }
        let r = self.decode();
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}
