//! One `.eh_frame` and `.eh_frame_hdr` for all the functions of an ELF, from each function's
//! JIT_CODE_UNWINDING_INFO.
//!
//! A JIT (V8) writes, per function, an `.eh_frame` whose pointers are relative to where it
//! sits in memory: right after the code, at `code + align8(code_size)` (where `perf inject`
//! puts it too). Each is read with gimli, its addresses turned into the function's run-time
//! addresses, and written with gimli into one section meant to be seen at run-time address
//! `eh_frame_addr`; the `.eh_frame_hdr` (at `hdr_addr`) gets the sorted search table that
//! libunwind (perf's `--call-graph dwarf` unwinder) binary-searches. Pointers in both are
//! relative, so the sections work at those run-time addresses — where `profkit inject` maps
//! them (see the crate docs for why there) — and the FDEs name run-time code addresses.

use gimli::write::{Address, EhFrame, EndianVec, FrameTable, Writer};
use gimli::{BaseAddresses, CieOrFde, RunTimeEndian, UnwindSection};

/// `DW_EH_PE_pcrel | DW_EH_PE_sdata4`.
const PCREL_SDATA4: u8 = 0x1b;
/// `DW_EH_PE_udata4`.
const UDATA4: u8 = 0x03;
/// `DW_EH_PE_datarel | DW_EH_PE_sdata4`.
const DATAREL_SDATA4: u8 = 0x3b;

/// One function's unwinding info.
#[derive(Clone, Copy, Debug)]
pub struct FuncUnwind<'a> {
    /// The function's run-time start address.
    pub start: u64,
    /// Its code size.
    pub size: u64,
    /// Its `.eh_frame` (JIT_CODE_UNWINDING_INFO's first part).
    pub eh_frame: &'a [u8],
}

/// The combined sections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// `.eh_frame`, ending with a zero terminator.
    pub eh_frame: Vec<u8>,
    /// `.eh_frame_hdr` with its search table.
    pub eh_frame_hdr: Vec<u8>,
    /// FDEs in the table.
    pub fdes: usize,
    /// Functions whose `.eh_frame` could not be read or converted (left out).
    pub failed: usize,
}

/// `.eh_frame` and `.eh_frame_hdr` for `funcs`, to be seen at run-time addresses
/// `eh_frame_addr` and `hdr_addr`. With no functions (or `funcs` empty) the table is empty
/// and the `.eh_frame` only a terminator: an unwinder then finds no entry and falls back to
/// frame pointers. Section sizes do not depend on the two addresses as long as the code is
/// within ±2 GiB of them (the pointers are 32-bit offsets; FDEs out of reach are left out).
pub fn tables(
    funcs: &[FuncUnwind<'_>],
    big_endian: bool,
    eh_frame_addr: u64,
    hdr_addr: u64,
) -> Tables {
    let endian = if big_endian {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    let mut out = EhFrame(EndianVec::new(endian));
    let mut failed = 0;
    for f in funcs {
        if f.eh_frame.is_empty() {
            continue;
        }
        // Where the JIT had this `.eh_frame` in memory: pointers are relative to it.
        let base = f.start.wrapping_add(f.size.div_ceil(8) * 8);
        let fixed = without_omitted_lsda(f.eh_frame, big_endian);
        let section = gimli::EhFrame::new(fixed.as_deref().unwrap_or(f.eh_frame), endian);
        let convert = |v: u64| {
            Some(Address::Constant(
                base.wrapping_add(v).wrapping_sub(eh_frame_addr),
            ))
        };
        let mark = out.0.len();
        let ok = FrameTable::from(&section, &convert)
            .ok()
            .is_some_and(|t| t.write_eh_frame(&mut out).is_ok());
        if !ok {
            failed += 1;
            // Drop a half-written table.
            let keep = out
                .0
                .slice()
                .get(..mark)
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            out = EhFrame(EndianVec::new(endian));
            let _ = out.0.write(&keep);
        }
    }
    let _ = out.0.write_u32(0);
    let eh_frame = out.0.into_vec();

    // The search table: (initial location, FDE address), both relative to the header.
    let mut table: Vec<(i64, i64)> = Vec::new();
    let bases = BaseAddresses::default().set_eh_frame(eh_frame_addr);
    let section = gimli::EhFrame::new(&eh_frame, endian);
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(gimli::EhFrame::cie_from_offset) else {
            continue;
        };
        let at = eh_frame_addr.wrapping_add(fde.offset() as u64);
        let loc = fde.initial_address().wrapping_sub(hdr_addr) as i64;
        let fde_rel = at.wrapping_sub(hdr_addr) as i64;
        if i32::try_from(loc).is_ok() && i32::try_from(fde_rel).is_ok() {
            table.push((loc, fde_rel));
        } else {
            failed += 1;
        }
    }
    table.sort_unstable();
    table.dedup_by_key(|e| e.0);

    let mut hdr = Vec::with_capacity(12 + 8 * table.len());
    hdr.extend_from_slice(&[1, PCREL_SDATA4, UDATA4, DATAREL_SDATA4]);
    let eh_ptr = eh_frame_addr.wrapping_sub(hdr_addr.wrapping_add(4)) as i64 as i32;
    let u32b = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    hdr.extend_from_slice(&u32b(eh_ptr as u32));
    hdr.extend_from_slice(&u32b(table.len() as u32));
    for (loc, fde) in &table {
        hdr.extend_from_slice(&u32b(*loc as i32 as u32));
        hdr.extend_from_slice(&u32b(*fde as i32 as u32));
    }
    Tables {
        eh_frame,
        eh_frame_hdr: hdr,
        fdes: table.len(),
        failed,
    }
}

/// V8 writes CIEs of version 3 with augmentation `zLR` and an LSDA encoding of
/// `DW_EH_PE_omit` (no LSDA). gimli 0.31 refuses to read FDEs of such a CIE and writes only
/// version-1 CIEs into `.eh_frame`. Returns the section with each such CIE rewritten to
/// version 1 (the same but for the return-address register's encoding, one byte either way
/// below 128) and `zR` — same length (`DW_CFA_nop`s take the bytes freed), so nothing else
/// moves — or `None` when there is nothing to rewrite.
fn without_omitted_lsda(eh: &[u8], big_endian: bool) -> Option<Vec<u8>> {
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        let a: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    };
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0usize;
    while let Some(len) = u32_at(eh, at) {
        if len == 0 || len == u32::MAX {
            break;
        }
        let end = at.checked_add(4)?.checked_add(len as usize)?;
        let body = eh.get(at + 4..end)?;
        if u32_at(body, 0) == Some(0) {
            if let Some(new) = rewrite_cie(body) {
                let buf = out.get_or_insert_with(|| eh.to_vec());
                buf.get_mut(at + 4..end)?.copy_from_slice(&new);
            }
        }
        at = end;
    }
    out
}

/// A CIE body (after its length) as version 1 without an omitted `L` augmentation, same
/// length; `None` when it needs no change or cannot be changed.
fn rewrite_cie(body: &[u8]) -> Option<Vec<u8>> {
    let version = *body.get(4)?;
    let aug_end = 5 + body.get(5..)?.iter().position(|&c| c == 0)?;
    let aug = body.get(5..aug_end)?;
    if aug.first() != Some(&b'z') || aug.contains(&b'P') {
        return None;
    }
    let mut p = aug_end + 1;
    let leb = |p: &mut usize| -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *body.get(*p)?;
            *p += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    leb(&mut p)?; // code alignment
    leb(&mut p)?; // data alignment (sleb: same length rules)
    if version == 1 {
        p += 1;
    } else {
        let at = p;
        leb(&mut p)?; // return address register
        if p != at + 1 {
            return None;
        }
    }
    let fixed_end = p;
    let aug_len_at = p;
    let aug_len = leb(&mut p)?;
    if aug_len >= 0x80 || p != aug_len_at + 1 {
        return None;
    }
    let data = body.get(p..p.checked_add(aug_len as usize)?)?;
    let rest = body.get(p + aug_len as usize..)?;
    // One data byte per augmentation letter after `z` (L and R: an encoding; S: none).
    let mut new_aug = vec![b'z'];
    let mut new_data = Vec::new();
    let mut d = data.iter();
    let mut dropped = false;
    for &c in aug.get(1..)? {
        match c {
            b'L' => {
                let enc = *d.next()?;
                if enc == 0xff {
                    dropped = true;
                } else {
                    new_aug.push(c);
                    new_data.push(enc);
                }
            }
            b'R' => {
                new_aug.push(c);
                new_data.push(*d.next()?);
            }
            b'S' => new_aug.push(c),
            _ => return None,
        }
    }
    if !dropped && version == 1 {
        return None;
    }
    let mut new = body.get(..4)?.to_vec();
    new.push(1);
    new.extend_from_slice(&new_aug);
    new.push(0);
    new.extend_from_slice(body.get(aug_end + 1..fixed_end)?);
    new.push(new_data.len() as u8);
    new.extend_from_slice(&new_data);
    new.extend_from_slice(rest);
    // DW_CFA_nop for the bytes freed.
    new.resize(body.len(), 0);
    (new.len() == body.len()).then_some(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V8-style `.eh_frame` for code at `code` of `size` bytes: CIE `zR` (pcrel sdata4),
    /// one FDE, placed at `code + align8(size)`.
    fn v8_eh_frame(size: u64) -> Vec<u8> {
        let mut cie = vec![0u8, 0, 0, 0, 1, b'z', b'R', 0, 1, 0x78, 16, 1, PCREL_SDATA4];
        cie.extend_from_slice(&[0x0c, 7, 8, 0x90, 1]); // def_cfa rsp+8; rip at cfa-8
        while (cie.len() + 4) % 8 != 0 {
            cie.push(0);
        }
        let mut eh = (cie.len() as u32).to_le_bytes().to_vec();
        eh.extend_from_slice(&cie);
        let fde_at = eh.len();
        let mut fde = ((fde_at + 4) as u32).to_le_bytes().to_vec(); // CIE pointer
        let base = size.div_ceil(8) * 8;
        // pc_begin at eh offset fde_at + 8, relative to itself: -(base + fde_at + 8).
        let rel = -((base + fde_at as u64 + 8) as i64) as i32;
        fde.extend_from_slice(&rel.to_le_bytes());
        fde.extend_from_slice(&(size as u32).to_le_bytes());
        fde.push(0); // augmentation data length
        fde.extend_from_slice(&[0x41, 0x0e, 16]); // advance 1; def_cfa_offset 16
        while !(fde.len() + 4).is_multiple_of(8) {
            fde.push(0);
        }
        eh.extend_from_slice(&(fde.len() as u32).to_le_bytes());
        eh.extend_from_slice(&fde);
        eh.extend_from_slice(&[0, 0, 0, 0]);
        eh
    }

    #[test]
    fn combined_tables_name_run_time_addresses() {
        let a = v8_eh_frame(100);
        let b = v8_eh_frame(40);
        let funcs = [
            FuncUnwind {
                start: 0x7f00_0000_2000,
                size: 40,
                eh_frame: &b,
            },
            FuncUnwind {
                start: 0x7f00_0000_1000,
                size: 100,
                eh_frame: &a,
            },
            FuncUnwind {
                start: 0x7f00_0000_3000,
                size: 8,
                eh_frame: &[],
            },
        ];
        let (eh_addr, hdr_addr) = (0x7eff_f000_0100, 0x7eff_f000_0040);
        let t = tables(&funcs, false, eh_addr, hdr_addr);
        assert_eq!((t.fdes, t.failed), (2, 0));
        // Sizes do not depend on the addresses (as long as they are near the code).
        let t0 = tables(&funcs, false, 0x7f00_0000_0000, 0x7f00_0000_0100);
        assert_eq!(t0.eh_frame.len(), t.eh_frame.len());
        assert_eq!(t0.eh_frame_hdr.len(), t.eh_frame_hdr.len());

        // Read back: each FDE covers its function at its run-time address.
        let bases = BaseAddresses::default()
            .set_eh_frame(eh_addr)
            .set_eh_frame_hdr(hdr_addr);
        let eh = gimli::EhFrame::new(&t.eh_frame, gimli::LittleEndian);
        let hdr = gimli::EhFrameHdr::new(&t.eh_frame_hdr, gimli::LittleEndian)
            .parse(&bases, 8)
            .unwrap();
        let table = hdr.table().unwrap();
        for (pc, start, size) in [
            (0x7f00_0000_1000u64 + 50, 0x7f00_0000_1000u64, 100u64),
            (0x7f00_0000_2000 + 39, 0x7f00_0000_2000, 40),
        ] {
            let fde = table
                .fde_for_address(&eh, &bases, pc, gimli::EhFrame::cie_from_offset)
                .unwrap();
            assert_eq!((fde.initial_address(), fde.len()), (start, size));
        }
        assert!(table
            .fde_for_address(
                &eh,
                &bases,
                0x7f00_0000_3004,
                gimli::EhFrame::cie_from_offset
            )
            .is_err());
    }

    /// A real V8 `.eh_frame` (node 20, `--perf-prof`): CIE `zLR` with the LSDA omitted.
    const V8: &str = "18 00 00 00 00 00 00 00 03 7a 4c 52 00 01 78 10 02 ff 1b 0c 07 08 90 01 00 00 00 00 20 00 00 00 20 00 00 00 14 fd ff ff c8 02 00 00 00 4f 0e 10 86 02 43 0d 06 02 56 0d 07 41 0e 08 52 0c 06 10 00 00 00 00";

    #[test]
    fn v8_cie_with_omitted_lsda() {
        let eh: Vec<u8> = V8
            .split(' ')
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect();
        let fixed = without_omitted_lsda(&eh, false).unwrap();
        assert_eq!(fixed.len(), eh.len());
        assert_eq!(&fixed[9..12], b"zR\0");
        // code 0x1000 of 712 bytes: the FDE covers it.
        let t = tables(
            &[FuncUnwind {
                start: 0x7f00_0000_1000,
                size: 712,
                eh_frame: &eh,
            }],
            false,
            0x7f00_0000_0000,
            0x7f00_0000_0100,
        );
        assert_eq!((t.fdes, t.failed), (1, 0));
        let bases = BaseAddresses::default().set_eh_frame(0x7f00_0000_0000);
        let section = gimli::EhFrame::new(&t.eh_frame, gimli::LittleEndian);
        let mut entries = section.entries(&bases);
        let mut fdes = Vec::new();
        while let Some(e) = entries.next().unwrap() {
            if let CieOrFde::Fde(p) = e {
                let f = p.parse(gimli::EhFrame::cie_from_offset).unwrap();
                fdes.push((f.initial_address(), f.len()));
            }
        }
        assert_eq!(fdes, vec![(0x7f00_0000_1000, 712)]);
        assert!(without_omitted_lsda(&t.eh_frame, false).is_none());
    }

    #[test]
    fn broken_input_is_left_out() {
        let good = v8_eh_frame(16);
        let funcs = [
            FuncUnwind {
                start: 0x1000,
                size: 16,
                eh_frame: &[1, 2, 3, 4, 5, 6, 7, 8, 9],
            },
            FuncUnwind {
                start: 0x2000,
                size: 16,
                eh_frame: &good,
            },
        ];
        let t = tables(&funcs, false, 0x100, 0x80);
        assert_eq!((t.fdes, t.failed), (1, 1));
        let empty = tables(&[], false, 0x100, 0x80);
        assert_eq!(empty.eh_frame, vec![0, 0, 0, 0]);
        assert_eq!(empty.eh_frame_hdr.len(), 12);
    }
}
