//! The writer: encodes a file for any data version (1-17) with the layouts the reader reads.
//! Values are given absolute; the writer picks the bases (the first pointer, object and method
//! of each buffer, as Mono does) and encodes deltas, including wrapped (negative) time deltas.

use crate::header::Header;
use crate::raw::*;
use crate::read::{BufferHeader, CounterDesc, CounterValue, MetaAction, Metadata, Root};

/// Writes a whole file in memory.
#[derive(Debug)]
pub struct Writer {
    header: Header,
    out: Vec<u8>,
}

impl Writer {
    /// A writer for `header` (its `data_version` selects every layout).
    pub fn new(header: Header) -> Self {
        let out = header.encode();
        Writer { header, out }
    }

    /// Starts a buffer for `thread_id` with time base `time_base`.
    pub fn buffer(&mut self, thread_id: u64, time_base: u64) -> BufferWriter<'_> {
        BufferWriter {
            version: self.header.data_version,
            thread_id,
            time_base,
            time: time_base,
            ptr_base: None,
            obj_base: None,
            method_base: None,
            method: 0,
            ev: Vec::with_capacity(4096),
            out: &mut self.out,
        }
    }

    /// Appends raw bytes (for malformed test files).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// The file.
    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }
}

/// Writes the events of one buffer; [`BufferWriter::finish`] appends it to the file.
#[derive(Debug)]
pub struct BufferWriter<'w> {
    version: u8,
    thread_id: u64,
    time_base: u64,
    time: u64,
    ptr_base: Option<u64>,
    obj_base: Option<u64>,
    method_base: Option<u64>,
    method: u64,
    ev: Vec<u8>,
    out: &'w mut Vec<u8>,
}

/// Appends a ULEB128.
pub fn put_uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Appends a SLEB128.
pub fn put_sleb(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

impl BufferWriter<'_> {
    fn byte(&mut self, b: u8) {
        self.ev.push(b);
    }
    fn u(&mut self, v: u64) {
        put_uleb(&mut self.ev, v);
    }
    fn s(&mut self, v: i64) {
        put_sleb(&mut self.ev, v);
    }
    fn z(&mut self, s: &[u8]) {
        self.ev.extend_from_slice(s);
        self.ev.push(0);
    }
    fn time(&mut self, t: u64) {
        let d = t.wrapping_sub(self.time);
        self.time = t;
        self.u(d);
    }
    fn ptr(&mut self, p: u64) {
        let base = *self.ptr_base.get_or_insert(p);
        self.s(p.wrapping_sub(base) as i64);
    }
    fn obj(&mut self, o: u64) {
        let o = o >> 3;
        let base = *self.obj_base.get_or_insert(o);
        self.s(o.wrapping_sub(base) as i64);
    }
    fn method(&mut self, m: u64) {
        if self.method_base.is_none() {
            self.method_base = Some(m);
            self.method = m;
        }
        let d = m.wrapping_sub(self.method) as i64;
        self.method = m;
        self.s(d);
    }
    /// v<13: `[flags][n][absolute ptr]*`; v13+: `[n][running method]*`.
    fn bt(&mut self, frames: &[u64]) {
        if self.version < 13 {
            self.u(0);
            self.u(frames.len() as u64);
            for &f in frames {
                self.ptr(f);
            }
        } else {
            self.u(frames.len() as u64);
            for &f in frames {
                self.method(f);
            }
        }
    }
    fn small(&mut self, v: u64, byte_from: u8, byte_to: u8) {
        if (byte_from..=byte_to).contains(&self.version) {
            self.byte(v as u8);
        } else {
            self.u(v);
        }
    }

    /// ALLOC (class before v15, vtable from v15).
    pub fn alloc(&mut self, t: u64, class: u64, obj: u64, size: u64, bt: Option<&[u64]>) {
        self.byte(
            TYPE_ALLOC
                | if bt.is_some() {
                    TYPE_ALLOC_BT
                } else {
                    TYPE_ALLOC_NO_BT
                },
        );
        self.time(t);
        self.ptr(class);
        self.obj(obj);
        self.u(size);
        if let Some(f) = bt {
            self.bt(f);
        }
    }
    /// GC EVENT.
    pub fn gc_event(&mut self, t: u64, event: u64, generation: u64) {
        self.byte(TYPE_GC | TYPE_GC_EVENT);
        self.time(t);
        self.small(event, 13, 255);
        self.small(generation, 13, 255);
    }
    /// GC RESIZE.
    pub fn gc_resize(&mut self, t: u64, heap_size: u64) {
        self.byte(TYPE_GC | TYPE_GC_RESIZE);
        self.time(t);
        self.u(heap_size);
    }
    /// GC MOVE: (old, new) pairs flattened.
    pub fn gc_move(&mut self, t: u64, objects: &[u64]) {
        self.byte(TYPE_GC | TYPE_GC_MOVE);
        self.time(t);
        self.u(objects.len() as u64);
        for &o in objects {
            self.obj(o);
        }
    }
    /// GC handle created (with a backtrace: v11+).
    pub fn gc_handle_created(
        &mut self,
        t: u64,
        htype: u64,
        handle: u64,
        obj: u64,
        bt: Option<&[u64]>,
    ) {
        self.byte(
            TYPE_GC
                | if bt.is_some() {
                    TYPE_GC_HANDLE_CREATED_BT
                } else {
                    TYPE_GC_HANDLE_CREATED
                },
        );
        self.time(t);
        self.u(htype);
        self.u(handle);
        self.obj(obj);
        if let Some(f) = bt {
            self.bt(f);
        }
    }
    /// GC handle destroyed.
    pub fn gc_handle_destroyed(&mut self, t: u64, htype: u64, handle: u64, bt: Option<&[u64]>) {
        self.byte(
            TYPE_GC
                | if bt.is_some() {
                    TYPE_GC_HANDLE_DESTROYED_BT
                } else {
                    TYPE_GC_HANDLE_DESTROYED
                },
        );
        self.time(t);
        self.u(htype);
        self.u(handle);
        if let Some(f) = bt {
            self.bt(f);
        }
    }
    /// GC finalize events (v13+): `exinfo` one of FINALIZE_START/END (obj ignored) or
    /// FINALIZE_OBJECT_START/END.
    pub fn gc_finalize(&mut self, t: u64, exinfo: u8, obj: u64) {
        self.byte(TYPE_GC | exinfo);
        self.time(t);
        if exinfo >= TYPE_GC_FINALIZE_OBJECT_START {
            self.obj(obj);
        }
    }
    /// METADATA (fields as the version's layout needs).
    pub fn metadata(&mut self, t: u64, m: &Metadata<'_>) {
        let ex = match m.action {
            MetaAction::Name => TYPE_METADATA_NAME,
            MetaAction::Load => TYPE_END_LOAD,
            MetaAction::Unload => TYPE_END_UNLOAD,
        };
        let old = self.version < 13;
        self.byte(TYPE_METADATA | ex);
        self.time(t);
        self.byte(m.mtype);
        self.ptr(m.ptr);
        match m.mtype {
            MTYPE_CLASS => {
                self.ptr(m.image);
                if old {
                    self.u(0);
                }
                self.z(m.name);
            }
            MTYPE_IMAGE => {
                if old {
                    self.u(0);
                }
                self.z(m.name);
                if self.version >= 16 && m.action == MetaAction::Load {
                    self.z(m.mvid);
                }
            }
            MTYPE_ASSEMBLY => {
                if old {
                    self.u(0);
                }
                if self.version >= 14 {
                    self.ptr(m.image);
                }
                self.z(m.name);
            }
            MTYPE_DOMAIN | MTYPE_THREAD => {
                if old {
                    self.u(0);
                }
                if m.action == MetaAction::Name {
                    self.z(m.name);
                }
            }
            MTYPE_CONTEXT => {
                if old {
                    self.u(0);
                }
                self.ptr(m.domain);
            }
            _ => {
                self.ptr(m.domain);
                self.ptr(m.class);
            }
        }
    }
    /// METHOD ENTER.
    pub fn enter(&mut self, t: u64, method: u64) {
        self.byte(TYPE_METHOD | TYPE_ENTER);
        self.time(t);
        self.method(method);
    }
    /// METHOD LEAVE.
    pub fn leave(&mut self, t: u64, method: u64) {
        self.byte(TYPE_METHOD | TYPE_LEAVE);
        self.time(t);
        self.method(method);
    }
    /// METHOD EXC_LEAVE.
    pub fn exc_leave(&mut self, t: u64, method: u64) {
        self.byte(TYPE_METHOD | TYPE_EXC_LEAVE);
        self.time(t);
        self.method(method);
    }
    /// METHOD JIT.
    pub fn jit(&mut self, t: u64, method: u64, code: u64, size: u64, name: &[u8]) {
        self.byte(TYPE_METHOD | TYPE_JIT);
        self.time(t);
        self.method(method);
        self.ptr(code);
        self.u(size);
        self.z(name);
    }
    /// EXCEPTION THROW.
    pub fn throw(&mut self, t: u64, obj: u64, bt: Option<&[u64]>) {
        self.byte(
            TYPE_EXCEPTION
                | if bt.is_some() {
                    TYPE_THROW_BT
                } else {
                    TYPE_THROW_NO_BT
                },
        );
        self.time(t);
        self.obj(obj);
        if let Some(f) = bt {
            self.bt(f);
        }
    }
    /// EXCEPTION CLAUSE (`obj` written in v14+).
    pub fn clause(&mut self, t: u64, clause_type: u64, index: u64, method: u64, obj: u64) {
        self.byte(TYPE_EXCEPTION | TYPE_CLAUSE);
        self.time(t);
        self.small(clause_type, 13, 255);
        self.u(index);
        self.method(method);
        if self.version >= 14 {
            self.obj(obj);
        }
    }
    /// MONITOR (1 contention, 2 done, 3 fail).
    pub fn monitor(&mut self, t: u64, event: u8, obj: u64, bt: Option<&[u64]>) {
        let btf = if bt.is_some() {
            TYPE_MONITOR_BT
        } else {
            TYPE_MONITOR_NO_BT
        };
        if self.version >= 14 {
            self.byte(TYPE_MONITOR | btf);
            self.time(t);
            self.byte(event);
        } else {
            // before v14 the event is in bits 4-6
            self.byte(TYPE_MONITOR | btf | ((event & 7) << 4));
            self.time(t);
        }
        self.obj(obj);
        if let Some(f) = bt {
            self.bt(f);
        }
    }
    /// HEAP START / END.
    pub fn heap_mark(&mut self, t: u64, end: bool) {
        self.byte(TYPE_HEAP | if end { TYPE_HEAP_END } else { TYPE_HEAP_START });
        self.time(t);
    }
    /// HEAP OBJECT; `refs` are (offset, object) with absolute offsets.
    pub fn heap_object(
        &mut self,
        t: u64,
        obj: u64,
        class: u64,
        size: u64,
        generation: u8,
        refs: &[(u64, u64)],
    ) {
        self.byte(TYPE_HEAP | TYPE_HEAP_OBJECT);
        if self.version >= 13 {
            self.time(t);
        }
        self.obj(obj);
        self.ptr(class);
        self.u(size);
        if self.version >= 16 {
            self.byte(generation);
        }
        self.u(refs.len() as u64);
        let mut last = 0u64;
        for &(off, o) in refs {
            if self.version >= 2 {
                self.u(off.wrapping_sub(last));
                last = off;
            }
            self.obj(o);
        }
    }
    /// HEAP ROOT.
    pub fn heap_roots(&mut self, t: u64, num_major_gcs: u64, roots: &[Root]) {
        self.byte(TYPE_HEAP | TYPE_HEAP_ROOT);
        if self.version >= 13 {
            self.time(t);
        }
        self.u(roots.len() as u64);
        if self.version >= 15 {
            for r in roots {
                self.ptr(r.slot);
                self.obj(r.obj);
            }
        } else {
            self.u(num_major_gcs);
            for r in roots {
                self.obj(r.obj);
                self.small(r.root_type, 13, 13);
                self.u(r.extra);
            }
        }
    }
    /// HEAP ROOT_REGISTER (v15+).
    pub fn root_register(
        &mut self,
        t: u64,
        start: u64,
        size: u64,
        source: u8,
        key: u64,
        name: &[u8],
    ) {
        self.byte(TYPE_HEAP | TYPE_HEAP_ROOT_REGISTER);
        self.time(t);
        self.ptr(start);
        self.u(size);
        self.byte(source);
        self.ptr(key);
        self.z(name);
    }
    /// HEAP ROOT_UNREGISTER (v15+).
    pub fn root_unregister(&mut self, t: u64, start: u64) {
        self.byte(TYPE_HEAP | TYPE_HEAP_ROOT_UNREGISTER);
        self.time(t);
        self.ptr(start);
    }
    /// SAMPLE HIT (`timestamp` used before v13; `frames` v6+).
    pub fn sample_hit(
        &mut self,
        t: u64,
        sample_type: u64,
        timestamp: u64,
        thread: u64,
        ips: &[u64],
        frames: &[u64],
    ) {
        self.byte(TYPE_SAMPLE | TYPE_SAMPLE_HIT);
        let v = self.version;
        if v >= 13 {
            self.time(t);
            if v == 13 {
                self.byte(sample_type as u8);
            }
        } else {
            self.u(sample_type);
            self.u(timestamp);
        }
        if v >= 11 {
            self.ptr(thread);
        }
        self.u(ips.len() as u64);
        for &ip in ips {
            self.ptr(ip);
        }
        if v >= 6 {
            self.u(frames.len() as u64);
            for &f in frames {
                self.method(f);
                if v < 13 {
                    self.s(0);
                    self.s(0);
                }
            }
        }
    }
    /// SAMPLE USYM.
    pub fn usym(&mut self, t: u64, addr: u64, size: u64, name: &[u8]) {
        self.byte(TYPE_SAMPLE | TYPE_SAMPLE_USYM);
        if self.version >= 13 {
            self.time(t);
        }
        self.ptr(addr);
        self.u(size);
        self.z(name);
    }
    /// SAMPLE UBIN (v4-15).
    pub fn ubin(&mut self, t: u64, addr: u64, file_offset: u64, size: u64, name: &[u8]) {
        self.byte(TYPE_SAMPLE | TYPE_SAMPLE_UBIN);
        self.time(t);
        if self.version >= 14 {
            self.ptr(addr);
        } else {
            self.s(addr as i64);
        }
        self.u(file_offset);
        self.u(size);
        self.z(name);
    }
    /// SAMPLE COUNTERS_DESC (v5+).
    pub fn counters_desc(&mut self, t: u64, descs: &[CounterDesc<'_>]) {
        self.byte(TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS_DESC);
        if self.version >= 13 {
            self.time(t);
        }
        self.u(descs.len() as u64);
        for d in descs {
            self.u(d.section);
            if d.section == COUNTER_SECTION_PERFCOUNTERS {
                self.z(d.section_name);
            }
            self.z(d.name);
            self.small(d.ctype, 13, 14);
            self.small(d.unit, 13, 14);
            self.small(d.variance, 13, 14);
            self.u(d.index);
        }
    }
    /// SAMPLE COUNTERS (v5+; `timestamp` in ms before v13).
    pub fn counters(&mut self, t: u64, timestamp: u64, values: &[(u64, u64, CounterValue<'_>)]) {
        self.byte(TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS);
        if self.version >= 13 {
            self.time(t);
        } else {
            self.u(timestamp);
        }
        for &(index, ctype, v) in values {
            self.u(index);
            self.small(ctype, 13, 14);
            match v {
                CounterValue::Signed(x) => self.s(x),
                CounterValue::Unsigned(x) => self.u(x),
                CounterValue::Double(x) => self.ev.extend_from_slice(&x.to_bits().to_le_bytes()),
                CounterValue::String(s) => match s {
                    Some(s) => {
                        self.byte(1);
                        self.z(s);
                    }
                    None => self.byte(0),
                },
            }
        }
        self.u(0);
    }
    /// RUNTIME JITHELPER (v8+; `htype` in v14+ numbering, 5 = SPECIFIC_TRAMPOLINE has a name).
    pub fn jit_helper(&mut self, t: u64, htype: u64, addr: u64, size: u64, name: &[u8]) {
        self.byte(TYPE_RUNTIME | TYPE_JITHELPER);
        self.time(t);
        let raw = if self.version < 14 { htype + 1 } else { htype };
        self.small(raw, 13, 255);
        self.ptr(addr);
        self.u(size);
        if htype == 5 {
            self.z(name);
        }
    }
    /// META SYNC_POINT (v13+).
    pub fn sync_point(&mut self, t: u64, kind: u8) {
        self.byte(TYPE_META | TYPE_SYNC_POINT);
        self.time(t);
        self.byte(kind);
    }
    /// META AOT_ID (v16+).
    pub fn aot_id(&mut self, t: u64, id: &[u8]) {
        self.byte(TYPE_META | TYPE_AOT_ID);
        self.time(t);
        self.z(id);
    }

    /// Appends raw event bytes (for malformed test files).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.ev.extend_from_slice(bytes);
    }

    /// Bytes of events so far.
    pub fn len(&self) -> usize {
        self.ev.len()
    }

    /// True before any event.
    pub fn is_empty(&self) -> bool {
        self.ev.is_empty()
    }

    /// Appends the buffer to the file.
    pub fn finish(self) {
        let h = BufferHeader {
            len: self.ev.len() as u32,
            time_base: self.time_base,
            ptr_base: self.ptr_base.unwrap_or(0),
            obj_base: self.obj_base.unwrap_or(0),
            thread_id: self.thread_id,
            method_base: self.method_base.unwrap_or(0),
        };
        h.encode(self.out);
        self.out.extend_from_slice(&self.ev);
    }
}
