//! The lists inside events, validated when their event is decoded and then iterated lazily
//! without allocation: backtraces and sample frames ([`Frames`]), GC moves and sample IPs
//! ([`List`] of [`Obj`] / [`Ptr`]), heap references ([`HeapRef`]) and roots ([`Root`]).

use super::events::Ctx;
use crate::cursor::Cursor;
use crate::error::Result;

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
    /// Decodes (and validates) a backtrace: v<13 `[flags u][n u][frame P]*` with absolute
    /// pointers, v13+ `[n u][M]*` on the running method cursor `method`; a sample's managed
    /// frames (`mbt`) have no flags, are running, and are triplets with IL and native offsets
    /// before v13.
    pub(super) fn decode(
        c: &mut Cursor<'a>,
        ctx: Ctx,
        method: &mut u64,
        mbt: bool,
    ) -> Result<Frames<'a>> {
        let v = ctx.version;
        if !mbt && v < 13 {
            c.uleb("backtrace flags")?;
        }
        let n = c.count("frame count", 1)? as u32;
        let start_c = *c;
        let running = mbt || v >= 13;
        let triplets = mbt && v < 13;
        let start = *method;
        for _ in 0..n {
            let d = c.sleb("frame")?;
            if triplets {
                c.sleb("frame il offset")?;
                c.sleb("frame native offset")?;
            }
            if running {
                *method = method.wrapping_add(d as u64) & ctx.mask;
            }
        }
        Ok(Frames {
            c: start_c.up_to(c),
            n,
            start,
            running,
            triplets,
            ctx,
        })
    }

    /// No frames.
    pub(super) fn empty(ctx: Ctx) -> Self {
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
    /// Decodes (and validates) `n` items, each checked by `skip`.
    pub(super) fn decode(
        c: &mut Cursor<'a>,
        n: u32,
        ctx: Ctx,
        mut skip: impl FnMut(&mut Cursor<'a>) -> Result<()>,
    ) -> Result<List<'a, T>> {
        let start = *c;
        for _ in 0..n {
            skip(c)?;
        }
        Ok(List {
            c: start.up_to(c),
            n,
            ctx,
            acc: 0,
            _t: std::marker::PhantomData,
        })
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
