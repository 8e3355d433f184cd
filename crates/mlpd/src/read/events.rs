//! The event decoder: [`Events`] walks one buffer's events, [`Event`] / [`EventKind`] are
//! what it yields (every field absolute: pointers, objects and methods resolved against the
//! buffer's bases, times accumulated with wrapping arithmetic).
//!
//! ENTER / LEAVE / EXC_LEAVE, nearly every event of a `calls` file, take a fast path
//! ([`Events::next_call`] for callers that want no [`Event`]: both fields from one load away
//! from the buffer's end; and the iterator's first test); every other event goes through the
//! general decoder, one arm per type, payload layouts by data version (the note's section 3).
//! Every LEB128 goes through one decoder ([`Cursor`]'s; `leb_word` away from the end).

use super::counters::{counter_descs, counter_values, CounterDescs, CounterValues};
use super::lists::{Frames, HeapRef, List, Obj, Ptr, Root};
use super::metadata::{metadata, Metadata};
use crate::cursor::{leb_word, Cursor};
use crate::error::{self, Error, ErrorExt, Result};
use crate::raw::*;

/// Per-buffer decoding context: the bases, the pointer mask and the data version.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    pub(super) ptr_base: u64,
    pub(super) obj_base: u64,
    /// `0xffff_ffff` for 4-byte pointers.
    pub(super) mask: u64,
    pub(super) version: u8,
}

impl Ctx {
    /// The context of a buffer with `ptr_base` and `obj_base` in a file of data `version`
    /// and pointer size `ptrsize`.
    pub(super) fn new(ptr_base: u64, obj_base: u64, version: u8, ptrsize: u8) -> Ctx {
        Ctx {
            ptr_base,
            obj_base,
            mask: if ptrsize == 4 { 0xffff_ffff } else { u64::MAX },
            version,
        }
    }

    /// A pointer field: SLEB from `ptr_base`.
    #[inline(always)]
    pub(super) fn ptr(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<u64> {
        Ok(self.ptr_at(c.sleb(what)? as u64))
    }

    /// An object field: SLEB `(addr >> 3) - obj_base`.
    #[inline(always)]
    pub(super) fn obj(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<u64> {
        Ok(self.obj_at(c.sleb(what)? as u64))
    }

    /// The pointer of a pointer field's value (the SLEB's bits).
    #[inline(always)]
    fn ptr_at(&self, delta: u64) -> u64 {
        self.ptr_base.wrapping_add(delta) & self.mask
    }

    /// The object of an object field's value (the SLEB's bits).
    #[inline(always)]
    fn obj_at(&self, delta: u64) -> u64 {
        self.obj_base.wrapping_add(delta) << 3
    }

    /// How an allocation or a heap object names its class `p` in this data version.
    #[inline(always)]
    fn class_ref(&self, p: u64) -> ClassRef {
        if self.version >= 15 {
            ClassRef::Vtable(p)
        } else {
            ClassRef::Class(p)
        }
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
    /// Index of the buffer in the file (for errors).
    buffer: u64,
    /// Events decoded so far (the index of the next one in its buffer).
    index: u64,
    done: bool,
}

impl<'a> Events<'a> {
    /// The events in `c` (the event bytes of buffer #`buffer`) with the buffer's context, time
    /// base and method base.
    pub(super) fn new(
        c: Cursor<'a>,
        ctx: Ctx,
        buffer: u64,
        time_base: u64,
        method_base: u64,
    ) -> Self {
        Events {
            c,
            ctx,
            time: time_base,
            method: method_base,
            buffer,
            index: 0,
            done: false,
        }
    }

    /// Events decoded so far: the index in its buffer of the next event.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The running time: the time of the last event decoded that has one (the buffer's time
    /// base before any).
    pub fn current_time(&self) -> u64 {
        self.time
    }

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

    /// A backtrace (`mbt`: a sample's managed frames), moving the method cursor.
    fn frames(&mut self, mbt: bool) -> Result<Frames<'a>> {
        Frames::decode(&mut self.c, self.ctx, &mut self.method, mbt)
    }

    /// A list of `n` items, each checked by `skip`.
    fn list<T>(
        &mut self,
        n: u32,
        skip: impl FnMut(&mut Cursor<'a>) -> Result<()>,
    ) -> Result<List<'a, T>> {
        List::decode(&mut self.c, n, self.ctx, skip)
    }

    /// The fields of ENTER, LEAVE and EXC_LEAVE after the event byte, `[time u][method s]`,
    /// as (time, method), used by [`Iterator::next`] and by the general decoder (where it is
    /// also the start of a JIT event); [`Events::next_call`] reads the same fields with the
    /// same LEB128 decoder, both from one load when it can. On an error the cursor stays where
    /// the error is (as for every event).
    #[inline(always)]
    fn call_fields(&mut self) -> Result<(u64, u64)> {
        let time = self.time()?;
        let method = self.method()?;
        Ok((time, method))
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
        let rest = self.c.data.get(save..)?;
        let (&byte, fields) = rest.split_first()?;
        if !is_call(byte) {
            return None;
        }
        // the fields' deltas and the event's size: away from the end of the buffer, both
        // fields (at most eight bytes each: nearly every call) from two 8-byte loads with no
        // bounds check per byte; else on a copy of the cursor
        let word = leb_pair::<false, true>(fields).map(|(dt, dm, n)| (dt, dm, 1 + n));
        let (dt, dm, size) = match word {
            Some(d) => d,
            None => {
                let mut c = self.c;
                c.pos += 1;
                let dt = c.uleb("time delta").ok()?;
                let dm = c.sleb("method").ok()? as u64;
                (dt, dm, c.pos - save)
            }
        };
        Some(self.call_decoded(byte, save, size, dt, dm))
    }

    /// [`Events::next_call`] without its slow path: `None` (nothing consumed) also for a call
    /// that its fast path does not read (near the end of the buffer, where an 8-byte load
    /// would pass it, or with a field of nine or ten bytes), which [`Events::next_call`] then
    /// decodes. It calls nothing, so that a loop around it can keep its state (and the
    /// decoder's) in registers.
    #[inline(always)]
    pub fn next_call_fast(&mut self) -> Option<(u8, u32, u64, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        let (&byte, fields) = self.c.data.get(save..)?.split_first()?;
        if !is_call(byte) {
            return None;
        }
        let (dt, dm, n) = leb_pair::<false, true>(fields)?;
        Some(self.call_decoded(byte, save, 1 + n, dt, dm))
    }

    /// The next event if it is a LEAVE of the method the cursor is at (the method of the last
    /// call: its delta is the one byte 0), as (size, time), from the fast path: `None`
    /// (nothing consumed) for anything else, checked before its time is decoded but for the
    /// byte after it. For a loop that expects a leaf call's LEAVE after an ENTER, so that
    /// another event is not decoded twice (an event this does not take is a LEAVE of the same
    /// method only when its delta has a longer encoding of 0, or in a file of 4-byte pointers
    /// a multiple of 2^32: the general paths decode those).
    #[inline(always)]
    pub fn next_leave_here(&mut self) -> Option<(u32, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        let (&byte, fields) = self.c.data.get(save..)?.split_first()?;
        if byte != event::METHOD_LEAVE {
            return None;
        }
        let (dt, n) = leb_word::<false>(u64::from_le_bytes(*fields.first_chunk::<8>()?))?;
        if fields.get(n).copied() != Some(0) {
            return None;
        }
        let (_, size, time, _) = self.call_decoded(byte, save, 2 + n, dt, 0);
        Some((size, time))
    }

    /// Moves past the call event at `start` (`size` bytes, field deltas `dt` and `dm`):
    /// (event byte, size, time, method).
    #[inline(always)]
    fn call_decoded(
        &mut self,
        byte: u8,
        start: usize,
        size: usize,
        dt: u64,
        dm: u64,
    ) -> (u8, u32, u64, u64) {
        self.c.pos = start + size;
        self.time = self.time.wrapping_add(dt);
        self.method = self.method.wrapping_add(dm) & self.ctx.mask;
        self.index += 1;
        (byte, size as u32, self.time, self.method)
    }

    /// The fields of an ALLOC after the event byte, `[time u][class/vtable P][obj O][size u]`
    /// (a backtrace may follow), as (time, class, object, size).
    #[inline(always)]
    fn alloc_fields(&mut self) -> Result<(u64, ClassRef, u64, u64)> {
        let ctx = self.ctx;
        let time = self.time()?;
        let class = ctx.class_ref(ctx.ptr(&mut self.c, "alloc class")?);
        let obj = ctx.obj(&mut self.c, "alloc object")?;
        let size = self.c.uleb("alloc size")?;
        Ok((time, class, obj, size))
    }

    /// The next event if it is an allocation without a backtrace (`event::ALLOC`), as
    /// (encoded size, time, class, object, object size), without building an [`Event`].
    /// `None` (nothing consumed) otherwise, like [`Events::next_call`].
    #[inline(always)]
    pub fn next_alloc(&mut self) -> Option<(u32, u64, ClassRef, u64, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        let (&byte, fields) = self.c.data.get(save..)?.split_first()?;
        if byte != event::ALLOC {
            return None;
        }
        // the fields' values and the event's size: away from the end of the buffer, from four
        // 8-byte loads (as next_call); else on a copy of the cursor
        let word = leb_pair::<false, true>(fields).and_then(|(dt, dp, n)| {
            let (dobj, size, m) = leb_pair::<true, false>(fields.get(n..)?)?;
            Some((dt, dp, dobj, size, 1 + n + m))
        });
        let (dt, dp, dobj, size, len) = match word {
            Some(w) => w,
            None => {
                let mut c = self.c;
                c.pos += 1;
                let dt = c.uleb("time delta").ok()?;
                let dp = c.sleb("alloc class").ok()? as u64;
                let dobj = c.sleb("alloc object").ok()? as u64;
                let size = c.uleb("alloc size").ok()?;
                (dt, dp, dobj, size, c.pos - save)
            }
        };
        Some(self.alloc_decoded(save, len, dt, dp, dobj, size))
    }

    /// [`Events::next_alloc`] without its slow path, as [`Events::next_call_fast`]: `None`
    /// (nothing consumed) also for an allocation that its fast path does not read.
    #[inline(always)]
    pub fn next_alloc_fast(&mut self) -> Option<(u32, u64, ClassRef, u64, u64)> {
        if self.done {
            return None;
        }
        let save = self.c.pos;
        let (&byte, fields) = self.c.data.get(save..)?.split_first()?;
        if byte != event::ALLOC {
            return None;
        }
        let (dt, dp, n) = leb_pair::<false, true>(fields)?;
        let (dobj, size, m) = leb_pair::<true, false>(fields.get(n..)?)?;
        Some(self.alloc_decoded(save, 1 + n + m, dt, dp, dobj, size))
    }

    /// Moves past the ALLOC at `start` (`len` bytes, field deltas and size):
    /// (encoded size, time, class, object, object size).
    #[inline(always)]
    fn alloc_decoded(
        &mut self,
        start: usize,
        len: usize,
        dt: u64,
        dp: u64,
        dobj: u64,
        size: u64,
    ) -> (u32, u64, ClassRef, u64, u64) {
        self.c.pos = start + len;
        self.time = self.time.wrapping_add(dt);
        self.index += 1;
        let ctx = self.ctx;
        let class = ctx.class_ref(ctx.ptr_at(dp));
        (len as u32, self.time, class, ctx.obj_at(dobj), size)
    }

    /// Ends the iteration at error `e`, placing it in this buffer and event.
    #[cold]
    fn fail(&mut self, e: Error) -> Error {
        self.done = true;
        e.at(self.buffer, Some(self.index))
    }

    fn unknown(&self, off: u64, byte: u8) -> Error {
        error::unknown_event(off, byte, self.ctx.version)
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
                let (_, class, obj, size) = self.alloc_fields()?;
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
                EventKind::Metadata(metadata(&mut self.c, ctx, ex)?)
            }
            EventType::METHOD => {
                let (_, method) = self.call_fields()?;
                match ex {
                    TYPE_LEAVE | TYPE_ENTER | TYPE_EXC_LEAVE => call_kind(byte, method),
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
                    let class = ctx.class_ref(ctx.ptr(&mut self.c, "heap object class")?);
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
                    EventKind::CountersDesc {
                        descs: counter_descs(&mut self.c, v)?,
                    }
                }
                _ => {
                    let timestamp = if v >= 13 {
                        self.time()?;
                        None
                    } else {
                        Some(self.c.uleb("counters timestamp")?)
                    };
                    EventKind::Counters {
                        timestamp,
                        values: counter_values(&mut self.c, v)?,
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
        let start = self.c.pos;
        let byte = *self.c.data.get(start)?;
        // the fast path: ENTER / LEAVE / EXC_LEAVE are nearly all of a `calls` file
        if is_call(byte) {
            let offset = self.c.offset();
            self.c.pos += 1;
            return match self.call_fields() {
                Ok((time, method)) => {
                    self.index += 1;
                    Some(Ok(Event {
                        offset,
                        byte,
                        size: (self.c.pos - start) as u32,
                        time,
                        kind: call_kind(byte, method),
                    }))
                }
                Err(e) => Some(Err(self.fail(e))),
            };
        }
        match self.decode() {
            Ok(e) => {
                self.index += 1;
                Some(Ok(e))
            }
            Err(e) => Some(Err(self.fail(e))),
        }
    }
}

/// Two LEB128s at the start of `b` (signed as `S1` and `S2`) from two 8-byte loads (the second
/// at the second number's first byte: cheaper than shifting one 16-byte load by the first's
/// length): their values (a signed one's bits) and their total length; `None` near the end of
/// `b` or when one is longer than eight bytes.
#[inline(always)]
fn leb_pair<const S1: bool, const S2: bool>(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (v1, n1) = leb_word::<S1>(u64::from_le_bytes(*b.first_chunk::<8>()?))?;
    let rest = b.get(n1..)?.first_chunk::<8>()?;
    let (v2, n2) = leb_word::<S2>(u64::from_le_bytes(*rest))?;
    Some((v1, v2, n1 + n2))
}

/// Whether an event byte is ENTER, LEAVE or EXC_LEAVE (every data version has the three).
#[inline(always)]
pub(crate) fn is_call(byte: u8) -> bool {
    matches!(
        byte,
        event::METHOD_LEAVE | event::METHOD_ENTER | event::METHOD_EXC_LEAVE
    )
}

/// The kind of a call event byte ([`is_call`]).
#[inline(always)]
fn call_kind(byte: u8, method: u64) -> EventKind<'static> {
    match byte {
        event::METHOD_ENTER => EventKind::Enter { method },
        event::METHOD_LEAVE => EventKind::Leave { method },
        _ => EventKind::ExcLeave { method },
    }
}
