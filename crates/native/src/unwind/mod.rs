//! Unwinding x86-64 user stacks from `perf record --call-graph dwarf` samples (framehop).
//!
//! One [`Unwinder`] per process (address spaces differ). Feed it the process's code as it
//! appears: [`Unwinder::add_binary`] for each executable file mapping (the binary's
//! `.eh_frame` + `.eh_frame_hdr`, else `.debug_frame`), [`Unwinder::add_jit`] for JIT code
//! with a jitdump `JIT_CODE_UNWINDING_INFO` record, [`Unwinder::remove`] when code goes
//! away. A new module replaces every module it overlaps (the newest mapping of an address
//! wins, as in the process).
//!
//! [`Unwinder::unwind`] takes a sample's user registers ([`UserRegs::from_perf_x86_64`]
//! picks ip, sp and bp out of perf's `sample_regs_user` values) and its user stack copy, and
//! appends the **return addresses** of the caller frames, innermost first; the sample's ip
//! is not repeated. A return address points after the call instruction: symbolize
//! `address - 1`. Where no module covers an address (or a module has no unwind entry for
//! it) framehop falls back to the frame-pointer chain.

mod jit;

use std::collections::BTreeMap;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};

use crate::binary::Binary;
use crate::bytes::SectionBytes;
use crate::error::Result;
use crate::mapping::Mapping;

pub use jit::{JitPlacement, JitUnwindInfo};

/// perf's x86-64 user register numbers (`PERF_REG_X86_*`): the bit of each register in
/// `sample_regs_user`; a sample carries the masked registers in bit order.
pub mod perf_reg {
    /// `PERF_REG_X86_AX`.
    pub const AX: u32 = 0;
    /// `PERF_REG_X86_BX`.
    pub const BX: u32 = 1;
    /// `PERF_REG_X86_CX`.
    pub const CX: u32 = 2;
    /// `PERF_REG_X86_DX`.
    pub const DX: u32 = 3;
    /// `PERF_REG_X86_SI`.
    pub const SI: u32 = 4;
    /// `PERF_REG_X86_DI`.
    pub const DI: u32 = 5;
    /// `PERF_REG_X86_BP`.
    pub const BP: u32 = 6;
    /// `PERF_REG_X86_SP`.
    pub const SP: u32 = 7;
    /// `PERF_REG_X86_IP`.
    pub const IP: u32 = 8;
    /// `PERF_REG_X86_FLAGS`.
    pub const FLAGS: u32 = 9;
    /// `PERF_REG_X86_R8` (R9 … R15 follow: 17 … 23).
    pub const R8: u32 = 16;
    /// `PERF_REG_X86_R15`.
    pub const R15: u32 = 23;
}

/// The registers an x86-64 unwind needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// Instruction pointer.
    pub ip: u64,
    /// Stack pointer: the address of the first byte of the stack copy.
    pub sp: u64,
    /// Frame pointer (0 when the sample did not record it: no frame-pointer fallback then).
    pub bp: u64,
}

impl UserRegs {
    /// Picks ip, sp and bp out of a perf sample's user registers: `mask` is the attr's
    /// `sample_regs_user`, `values` the sample's registers (one per set bit, in bit order).
    /// `None` when ip or sp is not in the mask or `values` is short.
    pub fn from_perf_x86_64(mask: u64, values: &[u64]) -> Option<UserRegs> {
        let get = |reg: u32| -> Option<u64> {
            let bit = 1u64.checked_shl(reg)?;
            if mask & bit == 0 {
                return None;
            }
            let index = (mask & (bit - 1)).count_ones();
            values.get(usize::try_from(index).ok()?).copied()
        };
        Some(UserRegs {
            ip: get(perf_reg::IP)?,
            sp: get(perf_reg::SP)?,
            bp: get(perf_reg::BP).unwrap_or(0),
        })
    }
}

/// How an unwind ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwindEnd {
    /// framehop found the root of the stack (e.g. `_start`'s CFI says so, or bp = 0).
    Complete,
    /// It stopped early: the stack copy ended, a return address was 0 or unreadable, or
    /// the frame limit was reached. What was found before is still right, but framehop
    /// also ends some complete stacks this way, so this is a hint, not an error.
    Truncated,
}

/// At most this many frames per unwind.
pub const MAX_FRAMES: usize = 4096;

/// The framehop unwinder of one process (see the [module docs](self)).
pub struct Unwinder {
    inner: UnwinderX86_64<SectionBytes>,
    cache: CacheX86_64,
    /// Module ranges by start AVMA (framehop removes by start).
    modules: BTreeMap<u64, u64>,
}

impl Default for Unwinder {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("modules", &self.modules.len())
            .finish()
    }
}

impl Unwinder {
    /// An unwinder with no modules.
    pub fn new() -> Unwinder {
        Unwinder {
            inner: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            modules: BTreeMap::new(),
        }
    }

    /// The number of modules.
    pub fn module_count(&self) -> usize {
        self.modules.len()
    }

    /// Adds the code of `binary` mapped at `mapping` (from [`Binary::mapping`]), replacing
    /// any module it overlaps. Returns whether the binary had unwind information (without,
    /// the module is not added; framehop then uses frame pointers there).
    pub fn add_binary(&mut self, binary: &Binary, mapping: &Mapping) -> bool {
        let u = binary.unwind_sections();
        if u.eh_frame.is_none() && u.debug_frame.is_none() {
            self.remove_overlapping(mapping.start, mapping.end);
            return false;
        }
        // framehop works with addresses relative to a base (u32). For ELF the natural base is
        // SVMA 0 at AVMA `bias`; when that does not hold (bias would wrap, or SVMAs above
        // 4 GiB) take the mapping's start as the base instead.
        let bias = mapping.bias();
        let (base_avma, base_svma) = if mapping.start >= mapping.svma_start
            && mapping
                .svma_start
                .saturating_add(mapping.end - mapping.start)
                <= u64::from(u32::MAX)
        {
            (bias, 0)
        } else {
            (mapping.start, mapping.svma_start)
        };
        let info = ExplicitModuleSectionInfo {
            base_svma,
            text_svma: u.text,
            got_svma: u.got,
            eh_frame_svma: u.eh_frame.as_ref().map(|s| s.svma.clone()),
            eh_frame: u.eh_frame.map(|s| s.data),
            eh_frame_hdr_svma: u.eh_frame_hdr.as_ref().map(|s| s.svma.clone()),
            eh_frame_hdr: u.eh_frame_hdr.map(|s| s.data),
            debug_frame: u.debug_frame.map(|s| s.data),
            ..Default::default()
        };
        let name = binary.path().to_string_lossy().into_owned();
        self.insert(
            Module::new(name, mapping.start..mapping.end, base_avma, info),
            mapping.start,
            mapping.end,
        );
        true
    }

    /// Adds JIT code with its unwind information (a jitdump `JIT_CODE_UNWINDING_INFO`
    /// record and the `JIT_CODE_LOAD` that follows it), replacing any module it overlaps.
    /// The bytes are copied. See [`JitUnwindInfo`] for where the sections are assumed to
    /// be; the answer says where they were placed.
    pub fn add_jit(&mut self, name: &str, info: &JitUnwindInfo<'_>) -> Result<JitPlacement> {
        let (placement, section_info) = jit::module_info(info)?;
        let end = info.code_addr.saturating_add(info.code_size);
        self.insert(
            Module::new(
                name.to_string(),
                info.code_addr..end,
                info.code_addr,
                section_info,
            ),
            info.code_addr,
            end,
        );
        Ok(placement)
    }

    /// Removes the module that starts at `start` (JIT code freed or moved, a library
    /// unmapped); nothing if there is none.
    pub fn remove(&mut self, start: u64) {
        if self.modules.remove(&start).is_some() {
            self.inner.remove_module(start);
        }
    }

    /// Removes every module that overlaps `start..end`.
    pub fn remove_overlapping(&mut self, start: u64, end: u64) {
        let doomed: Vec<u64> = self
            .modules
            .range(..end)
            .filter(|(_, &e)| e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in doomed {
            self.remove(s);
        }
    }

    fn insert(&mut self, module: Module<SectionBytes>, start: u64, end: u64) {
        self.remove_overlapping(start, end.max(start.saturating_add(1)));
        self.modules.insert(start, end);
        self.inner.add_module(module);
    }

    /// Unwinds one sample: appends the return addresses of the caller frames to `out`,
    /// innermost first (the ip itself is not appended; see the [module docs](self)).
    /// `stack` is the sample's user stack copy, which starts at `regs.sp` (cut to the
    /// sample's `dyn_size`).
    pub fn unwind(&mut self, regs: UserRegs, stack: &[u8], out: &mut Vec<u64>) -> UnwindEnd {
        let sp = regs.sp;
        let mut read_stack = |addr: u64| -> std::result::Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let mut iter = self.inner.iter_frames(
            regs.ip,
            UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp),
            &mut self.cache,
            &mut read_stack,
        );
        let mut n = 0usize;
        loop {
            match iter.next() {
                Ok(Some(FrameAddress::ReturnAddress(addr))) => {
                    out.push(addr.get());
                    n += 1;
                    if n >= MAX_FRAMES {
                        return UnwindEnd::Truncated;
                    }
                }
                Ok(Some(FrameAddress::InstructionPointer(_))) => {}
                Ok(None) => return UnwindEnd::Complete,
                Err(_) => return UnwindEnd::Truncated,
            }
        }
    }
}
