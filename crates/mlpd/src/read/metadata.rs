//! METADATA events: loads, unloads and names of classes, images, assemblies, domains,
//! threads, contexts and vtables (the payload after the event byte and time, by data version).

use super::events::Ctx;
use crate::cursor::Cursor;
use crate::error::{self, Result};
use crate::raw::*;

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

/// Decodes a METADATA payload (after the time delta) for extended info `ex`.
pub(super) fn metadata<'a>(c: &mut Cursor<'a>, ctx: Ctx, ex: u8) -> Result<Metadata<'a>> {
    let v = ctx.version;
    let action = match ex & !TYPE_LOAD_ERR {
        TYPE_METADATA_NAME => MetaAction::Name,
        TYPE_END_LOAD => MetaAction::Load,
        _ => MetaAction::Unload,
    };
    let mtype_off = c.offset();
    let mtype = c.u8("metadata type")?;
    let ptr = ctx.ptr(c, "metadata pointer")?;
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
    // before v13 a flags field follows the pointer (after the image for a class)
    let old = v < 13;
    match mtype {
        MTYPE_CLASS => {
            m.image = ctx.ptr(c, "class image")?;
            if old {
                c.uleb("metadata flags")?;
            }
            m.name = c.cstr("class name")?;
        }
        MTYPE_IMAGE => {
            if old {
                c.uleb("metadata flags")?;
            }
            m.name = c.cstr("image name")?;
            // only loads carry the mvid (mprof-report reads one from unloads: bug 6.4.2)
            if v >= 16 && action == MetaAction::Load {
                m.mvid = c.cstr("image mvid")?;
            }
        }
        MTYPE_ASSEMBLY => {
            if old {
                c.uleb("metadata flags")?;
            }
            if v >= 14 {
                m.image = ctx.ptr(c, "assembly image")?;
            }
            m.name = c.cstr("assembly name")?;
        }
        MTYPE_DOMAIN | MTYPE_THREAD => {
            if old {
                c.uleb("metadata flags")?;
            }
            if action == MetaAction::Name {
                m.name = c.cstr("name")?;
            }
        }
        MTYPE_CONTEXT if v >= 11 => {
            if old {
                c.uleb("metadata flags")?;
            }
            m.domain = ctx.ptr(c, "context domain")?;
        }
        MTYPE_VTABLE if v >= 15 => {
            m.domain = ctx.ptr(c, "vtable domain")?;
            m.class = ctx.ptr(c, "vtable class")?;
        }
        other => {
            return Err(error::bad_value(
                mtype_off,
                "metadata type",
                u64::from(other),
            ));
        }
    }
    Ok(m)
}
