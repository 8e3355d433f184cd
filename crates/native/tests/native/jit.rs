//! JIT unwinding: `.eh_frame` + `.eh_frame_hdr` laid out as jitdump's
//! JIT_CODE_UNWINDING_INFO carries them (see `unwind/jit.rs`), made here by hand the way V8
//! and CPython write them (a CIE, one FDE with pc-relative pointers, a header with a
//! pc-relative `eh_frame_ptr` and a `datarel` table). These tests unwind synthetic stacks
//! whose right answer is known by construction, including from a point inside the
//! prologue, where the frame-pointer fallback gives a different (wrong) answer — so a pass
//! shows the CFI was used. perf.rs runs the same machinery on a real function's FDE and
//! real stacks.

use profkit_native::{JitUnwindInfo, UnwindEnd, Unwinder, UserRegs};

/// Appends a ULEB128.
fn uleb(out: &mut Vec<u8>, mut v: u64) {
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

/// Pads an entry (from `start`, its length field) with DW_CFA_nop to a multiple of 8 and
/// fills in its length.
fn finish_entry(out: &mut [u8], start: usize) -> usize {
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out.len()
}

fn pad(out: &mut Vec<u8>, start: usize) {
    while !(out.len() - start).is_multiple_of(8) {
        out.push(0);
    }
}

/// x86-64's usual CIE instructions: CFA = rsp + 8, return address at CFA - 8.
pub const CIE_INSNS: &[u8] = &[0x0c, 0x07, 0x08, 0x90, 0x01];

/// Builds `.eh_frame` with one CIE (`zR`, FDE pointers pcrel|sdata4) and one FDE for
/// `code_addr..code_addr+code_size`, as if placed at `eh_addr`. Returns the bytes and the
/// FDE's offset.
pub fn eh_frame(
    cie_insns: &[u8],
    fde_insns: &[u8],
    code_addr: u64,
    code_size: u64,
    eh_addr: u64,
) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    // CIE
    let cie = out.len();
    out.extend([0; 4]);
    out.extend(0u32.to_le_bytes()); // CIE id
    out.push(1); // version
    out.extend(b"zR\0");
    uleb(&mut out, 1); // code alignment
    out.push(0x78); // data alignment -8
    uleb(&mut out, 16); // return address register: rip
    uleb(&mut out, 1); // augmentation data length
    out.push(0x1b); // FDE pointer encoding: pcrel | sdata4
    out.extend(cie_insns);
    pad(&mut out, cie);
    finish_entry(&mut out, cie);
    // FDE
    let fde = out.len();
    out.extend([0; 4]);
    out.extend(((fde + 4 - cie) as u32).to_le_bytes()); // CIE pointer
    let field = eh_addr + out.len() as u64;
    out.extend((code_addr.wrapping_sub(field) as i32).to_le_bytes());
    out.extend((code_size as u32).to_le_bytes());
    uleb(&mut out, 0); // augmentation data length
    out.extend(fde_insns);
    pad(&mut out, fde);
    finish_entry(&mut out, fde);
    out.extend(0u32.to_le_bytes()); // terminator
    (out, fde)
}

/// Builds `.eh_frame_hdr` for one FDE, as if placed at `hdr_addr` (V8's layout).
pub fn eh_frame_hdr(code_addr: u64, eh_addr: u64, fde_offset: usize, hdr_addr: u64) -> Vec<u8> {
    let mut out = vec![1, 0x1b, 0x03, 0x3b];
    out.extend((eh_addr.wrapping_sub(hdr_addr + 4) as i32).to_le_bytes());
    out.extend(1u32.to_le_bytes());
    out.extend((code_addr.wrapping_sub(hdr_addr) as i32).to_le_bytes());
    out.extend(((eh_addr + fde_offset as u64).wrapping_sub(hdr_addr) as i32).to_le_bytes());
    out
}

/// `.eh_frame` + `.eh_frame_hdr` for JIT code, laid out after the code with `gap` bytes of
/// padding (the usual layout is align8).
pub fn jit_sections(
    fde_insns: &[u8],
    code_addr: u64,
    code_size: u64,
    eh_addr: u64,
) -> (Vec<u8>, Vec<u8>) {
    let (eh, fde) = eh_frame(CIE_INSNS, fde_insns, code_addr, code_size, eh_addr);
    let hdr = eh_frame_hdr(code_addr, eh_addr, fde, eh_addr + eh.len() as u64);
    (eh, hdr)
}

/// `push rbp` (1 byte), `mov rbp, rsp` (3 bytes), body, `pop rbp; ret`.
const FRAME_INSNS: &[u8] = &[
    0x41, // advance 1
    0x0e, 0x10, // CFA offset 16
    0x86, 0x02, // rbp at CFA - 16
    0x43, // advance 3
    0x0d, 0x06, // CFA register rbp
];

const CODE: u64 = 0x7f12_3400_1000;
const CODE_SIZE: u64 = 0x43; // not a multiple of 8: .eh_frame at CODE + 0x48
const SP: u64 = 0x7ffd_0000_1000;
const RA1: u64 = 0x5555_0000_1234;
const RA2: u64 = 0x5555_0000_5678;

/// A stack of u64 slots from SP.
fn stack(slots: &[(u64, u64)]) -> Vec<u8> {
    let mut s = vec![0u8; 0x100];
    for &(off, v) in slots {
        s[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes());
    }
    s
}

fn unwinder_with_jit(eh_gap_aligned: bool) -> (Unwinder, u64) {
    let eh_addr = if eh_gap_aligned {
        (CODE + CODE_SIZE + 7) & !7
    } else {
        CODE + CODE_SIZE
    };
    let (eh, hdr) = jit_sections(FRAME_INSNS, CODE, CODE_SIZE, eh_addr);
    let mut u = Unwinder::new();
    let placement = u
        .add_jit(
            "jit",
            &JitUnwindInfo {
                code_addr: CODE,
                code_size: CODE_SIZE,
                eh_frame: &eh,
                eh_frame_hdr: &hdr,
            },
        )
        .unwrap();
    assert_eq!(placement.eh_frame, eh_addr);
    assert_eq!(placement.eh_frame_hdr, Some(eh_addr + eh.len() as u64));
    assert_eq!(placement.shifted, !eh_gap_aligned);
    (u, eh_addr)
}

fn unwind(u: &mut Unwinder, ip: u64, bp: u64, stack: &[u8]) -> (Vec<u64>, UnwindEnd) {
    let mut out = Vec::new();
    let end = u.unwind(UserRegs { ip, sp: SP, bp }, stack, &mut out);
    (out, end)
}

#[test]
fn jit_cfi_in_body_prologue_and_entry() {
    for aligned in [true, false] {
        let (mut u, _) = unwinder_with_jit(aligned);
        // In the body: rbp = SP + 0x20 holds the caller's rbp (SP + 0x40), then RA1; the
        // caller (no module: frame pointers) has saved rbp 0 and RA2.
        let s = stack(&[(0x20, SP + 0x40), (0x28, RA1), (0x40, 0), (0x48, RA2)]);
        assert_eq!(
            unwind(&mut u, CODE + 0x10, SP + 0x20, &s),
            (vec![RA1, RA2], UnwindEnd::Complete)
        );
        // After `push rbp` only: CFA = SP + 16, RA1 at SP + 8; rbp is still the caller's.
        let s = stack(&[(0, SP + 0x30), (8, RA1), (0x30, 0), (0x38, RA2)]);
        assert_eq!(
            unwind(&mut u, CODE + 1, SP + 0x30, &s),
            (vec![RA1, RA2], UnwindEnd::Complete)
        );
        // Frame pointers alone would skip RA1 there: the CFI made the difference.
        let mut fp_only = Unwinder::new();
        assert_eq!(unwind(&mut fp_only, CODE + 1, SP + 0x30, &s).0, vec![RA2]);
        // At the first instruction: RA1 at SP.
        let s = stack(&[(0, RA1), (0x30, 0), (0x38, RA2)]);
        assert_eq!(
            unwind(&mut u, CODE, SP + 0x30, &s),
            (vec![RA1, RA2], UnwindEnd::Complete)
        );
        // A stack copy that ends before the return address: truncated, nothing invented.
        assert_eq!(
            unwind(&mut u, CODE, SP + 0x30, &s[..4]),
            (vec![], UnwindEnd::Truncated)
        );
    }
}

#[test]
fn jit_without_header_and_removal() {
    let eh_addr = (CODE + CODE_SIZE + 7) & !7;
    let (eh, _) = eh_frame(CIE_INSNS, FRAME_INSNS, CODE, CODE_SIZE, eh_addr);
    let mut u = Unwinder::new();
    for hdr in [&[][..], &[9, 9, 9, 9, 9][..]] {
        // No header, or one that cannot be parsed: the FDEs are indexed instead.
        let p = u
            .add_jit(
                "jit",
                &JitUnwindInfo {
                    code_addr: CODE,
                    code_size: CODE_SIZE,
                    eh_frame: &eh,
                    eh_frame_hdr: hdr,
                },
            )
            .unwrap();
        assert_eq!((p.eh_frame, p.eh_frame_hdr), (eh_addr, None));
        assert_eq!(u.module_count(), 1, "re-adding replaces");
    }
    let s = stack(&[(0, SP + 0x30), (8, RA1), (0x30, 0), (0x38, RA2)]);
    assert_eq!(unwind(&mut u, CODE + 1, SP + 0x30, &s).0, vec![RA1, RA2]);
    u.remove(CODE);
    assert_eq!(u.module_count(), 0);
    assert_eq!(unwind(&mut u, CODE + 1, SP + 0x30, &s).0, vec![RA2]);
}

#[test]
fn jit_unusable_info_is_an_error() {
    let mut u = Unwinder::new();
    let info = |eh: &'static [u8], hdr: &'static [u8]| JitUnwindInfo {
        code_addr: CODE,
        code_size: CODE_SIZE,
        eh_frame: eh,
        eh_frame_hdr: hdr,
    };
    // V8's usual record: an empty .eh_frame and a 20-byte header.
    let e = u.add_jit(
        "v8",
        &info(
            &[],
            &[
                1, 0x1b, 0x03, 0x3b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
    );
    assert!(e.unwrap_err().to_string().contains(&format!("{CODE:#x}")));
    assert!(u
        .add_jit("garbage", &info(&[1, 2, 3, 4, 5, 6, 7, 8], &[]))
        .is_err());
    // An FDE for other code.
    let (eh, hdr) = jit_sections(FRAME_INSNS, CODE + 0x10_0000, CODE_SIZE, 0x1000);
    let eh: &'static [u8] = Box::leak(eh.into_boxed_slice());
    let hdr: &'static [u8] = Box::leak(hdr.into_boxed_slice());
    assert!(u.add_jit("elsewhere", &info(eh, hdr)).is_err());
    assert_eq!(u.module_count(), 0);
}

#[test]
fn perf_registers() {
    use profkit_native::unwind::perf_reg;
    // perf record --call-graph dwarf on x86-64 samples all 24 general registers but the
    // segment ones: mask 0xff0fff (AX..SS minus DS ES FS GS, R8..R15).
    let mask = 0x00ff_0fffu64;
    let values: Vec<u64> = (0..20).map(|i| 100 + i).collect();
    let r = UserRegs::from_perf_x86_64(mask, &values).unwrap();
    assert_eq!((r.ip, r.sp, r.bp), (108, 107, 106));
    // Only ip, sp and bp.
    let mask = (1 << perf_reg::IP) | (1 << perf_reg::SP) | (1 << perf_reg::BP);
    let r = UserRegs::from_perf_x86_64(mask, &[1, 2, 3]).unwrap();
    assert_eq!((r.ip, r.sp, r.bp), (3, 2, 1));
    // No bp: 0; no sp, or too few values: None.
    let r = UserRegs::from_perf_x86_64(mask & !(1 << perf_reg::BP), &[2, 3]).unwrap();
    assert_eq!(r.bp, 0);
    assert!(UserRegs::from_perf_x86_64(1 << perf_reg::IP, &[1]).is_none());
    assert!(UserRegs::from_perf_x86_64(mask, &[1, 2]).is_none());
    assert!(UserRegs::from_perf_x86_64(u64::MAX, &[]).is_none());
}
