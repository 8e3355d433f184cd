//! JIT code's unwind information: where its `.eh_frame` and `.eh_frame_hdr` are.
//!
//! A jitdump `JIT_CODE_UNWINDING_INFO` record carries `unwinding_size` bytes of data:
//! `.eh_frame` followed by `.eh_frame_hdr` (the last `eh_frame_hdr_size` bytes; profkit-jitdump's
//! `UnwindingInfo::eh_frame()` / `eh_frame_hdr()` split them), plus `mapped_size`. The
//! record does not say at which addresses those sections are, yet their pointers are
//! relative to where they are: `.eh_frame_hdr`'s `eh_frame_ptr` is pc-relative and its table
//! is relative to the header's own start (`datarel`), and each FDE's `initial_location` is
//! pc-relative to its place in `.eh_frame`. Every producer (V8, CPython 3.13, and perf's
//! `genelf`, which writes them into the `jitted-*.so` it makes) lays them out as if mapped
//! right after the code:
//!
//! ```text
//! code_addr                      code
//! code_addr + align8(code_size)  .eh_frame      (eh_frame.len() bytes)
//!   … + eh_frame.len()           .eh_frame_hdr
//! ```
//!
//! [`module_info`] starts from that layout and checks it: the lowest entry of the header's
//! table should be the code's start (each JIT function has its FDE, starting at its first
//! instruction). If it is not, but moving the sections by the difference makes it so (a
//! producer that did not round to 8, say; at most [`MAX_SHIFT`] bytes), they are moved. Without a usable header the FDEs
//! themselves are checked the same way. The placement used is returned as a
//! [`JitPlacement`].

use gimli::{BaseAddresses, EhFrame, EhFrameHdr, LittleEndian, UnwindSection};

use crate::bytes::SectionBytes;
use crate::error::{Error, Result};
use framehop::ExplicitModuleSectionInfo;

/// JIT code and its unwind sections (see the [module docs](self)).
#[derive(Debug, Clone, Copy)]
pub struct JitUnwindInfo<'a> {
    /// The code's address (`JIT_CODE_LOAD`'s `code_addr`).
    pub code_addr: u64,
    /// The code's size (`code_size`).
    pub code_size: u64,
    /// The `.eh_frame` bytes (the start of the record's data).
    pub eh_frame: &'a [u8],
    /// The `.eh_frame_hdr` bytes (the last `eh_frame_hdr_size` bytes of the data; may be
    /// empty).
    pub eh_frame_hdr: &'a [u8],
}

/// Where [`Unwinder::add_jit`](super::Unwinder::add_jit) placed a JIT function's sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitPlacement {
    /// The address `.eh_frame` was given.
    pub eh_frame: u64,
    /// The address `.eh_frame_hdr` was given (`None`: the header was absent or unusable,
    /// and the FDEs were indexed instead).
    pub eh_frame_hdr: Option<u64>,
    /// Whether this differs from the usual layout (see the [module docs](self)).
    pub shifted: bool,
}

/// How far (bytes, either way) the sections may sit from the usual layout.
const MAX_SHIFT: u64 = 4096;

/// Address ranges of the FDEs in `.eh_frame` placed at `eh_addr` (at most a few hundred are
/// read).
fn fde_ranges(eh_frame: &[u8], eh_addr: u64, text: u64) -> Vec<(u64, u64)> {
    let mut section = EhFrame::new(eh_frame, LittleEndian);
    section.set_address_size(8);
    let bases = BaseAddresses::default()
        .set_eh_frame(eh_addr)
        .set_text(text);
    let mut out = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = entry {
            if let Ok(fde) = partial.parse(EhFrame::cie_from_offset) {
                out.push((fde.initial_address(), fde.len()));
            }
        }
        if out.len() >= 512 {
            break;
        }
    }
    out
}

/// The table of `.eh_frame_hdr` placed at `hdr_addr`: (`eh_frame_ptr`, initial locations).
fn hdr_table(hdr: &[u8], hdr_addr: u64, text: u64) -> Option<(u64, Vec<u64>)> {
    let bases = BaseAddresses::default()
        .set_eh_frame_hdr(hdr_addr)
        .set_text(text);
    let parsed = EhFrameHdr::new(hdr, LittleEndian).parse(&bases, 8).ok()?;
    let eh_frame_ptr = match parsed.eh_frame_ptr() {
        gimli::Pointer::Direct(a) => a,
        gimli::Pointer::Indirect(_) => return None,
    };
    let table = parsed.table()?;
    let mut iter = table.iter(&bases);
    let mut starts = Vec::new();
    while let Ok(Some((start, _fde))) = iter.next() {
        match start {
            gimli::Pointer::Direct(a) => starts.push(a),
            gimli::Pointer::Indirect(_) => return None,
        }
        if starts.len() >= 512 {
            break;
        }
    }
    Some((eh_frame_ptr, starts))
}

/// Whether every address in `starts` is in the code, and there is one.
fn inside(starts: impl IntoIterator<Item = u64>, code: &std::ops::Range<u64>) -> bool {
    let mut any = false;
    for s in starts {
        if !code.contains(&s) {
            return false;
        }
        any = true;
    }
    any
}

/// The placement and framehop section info of a JIT function.
pub(super) fn module_info(
    info: &JitUnwindInfo<'_>,
) -> Result<(JitPlacement, ExplicitModuleSectionInfo<SectionBytes>)> {
    let code_addr = info.code_addr;
    let err = |why: &str| Error::jit(code_addr, why);
    if info.eh_frame.is_empty() {
        return Err(err("no .eh_frame"));
    }
    if info.code_size == 0 || info.code_size > u64::from(u32::MAX) {
        return Err(err("code size is 0 or above 4 GiB"));
    }
    let code = code_addr
        ..code_addr
            .checked_add(info.code_size)
            .ok_or_else(|| err("code wraps"))?;
    let eh_len = u64::try_from(info.eh_frame.len()).map_err(|_| err("huge .eh_frame"))?;
    let usual_eh = code
        .end
        .checked_add(7)
        .map(|v| v & !7)
        .ok_or_else(|| err("code wraps"))?;
    let usual_hdr = usual_eh
        .checked_add(eh_len)
        .ok_or_else(|| err("sections wrap"))?;

    // The usual layout if the lowest entry is the code's start; else the layout moved so
    // that it is (everything in the header, and every FDE pointer, is relative to where the
    // sections are, so a wrong guess moves all entries by the same amount); else the usual
    // layout if its entries at least fall in the code.
    let choose = |entries: &dyn Fn(u64) -> Option<(u64, Vec<u64>)>, usual: u64| {
        let (ptr, starts) = entries(usual)?;
        let min = starts.iter().copied().min()?;
        if min == code_addr && inside(starts.iter().copied(), &code) {
            return Some((usual, ptr, false));
        }
        // Only a small move (a producer's different rounding or padding): an FDE a long way
        // off is for other code, not a misplaced section.
        let shift = code_addr.wrapping_sub(min);
        if shift.wrapping_add(MAX_SHIFT) > 2 * MAX_SHIFT {
            return inside(starts, &code).then_some((usual, ptr, false));
        }
        let moved = usual.wrapping_add(shift);
        if let Some((ptr2, starts2)) = entries(moved) {
            if starts2.iter().copied().min() == Some(code_addr) && inside(starts2, &code) {
                return Some((moved, ptr2, true));
            }
        }
        inside(starts, &code).then_some((usual, ptr, false))
    };
    let mut placement = None;
    if !info.eh_frame_hdr.is_empty() {
        let entries = |hdr: u64| hdr_table(info.eh_frame_hdr, hdr, code_addr);
        if let Some((hdr, eh_ptr, moved)) = choose(&entries, usual_hdr) {
            placement = Some((eh_ptr, Some(hdr), moved || eh_ptr != usual_eh));
        }
    }
    let (eh_addr, hdr_addr, shifted) = match placement {
        Some(p) => p,
        None => {
            // No usable header: place `.eh_frame` by its FDEs the same way.
            let entries = |eh: u64| {
                let starts: Vec<u64> = fde_ranges(info.eh_frame, eh, code_addr)
                    .into_iter()
                    .map(|f| f.0)
                    .collect();
                Some((eh, starts))
            };
            let (eh, _, moved) = choose(&entries, usual_eh)
                .ok_or_else(|| err("no FDE of .eh_frame describes the code"))?;
            (eh, None, moved)
        }
    };
    // The FDEs must describe the code where the header (if any) says `.eh_frame` is.
    let fdes = fde_ranges(info.eh_frame, eh_addr, code_addr);
    if !inside(fdes.iter().map(|f| f.0), &code) {
        return Err(err("the FDEs do not describe the code"));
    }
    let eh_end = eh_addr
        .checked_add(eh_len)
        .ok_or_else(|| err("sections wrap"))?;
    let hdr_len = u64::try_from(info.eh_frame_hdr.len()).map_err(|_| err("huge header"))?;
    let section_info = ExplicitModuleSectionInfo {
        base_svma: code_addr,
        text_svma: Some(code.clone()),
        eh_frame_svma: Some(eh_addr..eh_end),
        eh_frame: Some(SectionBytes::owned(info.eh_frame.to_vec())),
        eh_frame_hdr_svma: hdr_addr.and_then(|h| Some(h..h.checked_add(hdr_len)?)),
        eh_frame_hdr: hdr_addr.map(|_| SectionBytes::owned(info.eh_frame_hdr.to_vec())),
        ..Default::default()
    };
    Ok((
        JitPlacement {
            eh_frame: eh_addr,
            eh_frame_hdr: hdr_addr,
            shifted,
        },
        section_info,
    ))
}
