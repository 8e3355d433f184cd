//! A real `perf record --call-graph dwarf` of tests/fixtures/native/src/chain.c (no frame
//! pointers), read with linux-perf-data, unwound with the [`Unwinder`], symbolized with
//! [`Binaries`] — against `perf script`'s own unwinding (libunwind/libdw) and names, sample
//! by sample (matched by timestamp): the same frame addresses (as map-relative addresses and
//! DSOs), the same symbols, the same inline frames for our binaries.
//!
//! Then the same samples again with libmid.so's module replaced by a JIT module made of
//! `level2`'s code range and its real FDE moved into a jitdump-style `.eh_frame` +
//! `.eh_frame_hdr` after the code: every stack must come out the same. A control without
//! any module for libmid.so (frame-pointer fallback) must come out different, so the JIT
//! module is what did the work.

use std::collections::HashMap;
use std::io::Cursor;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use linux_perf_data::linux_perf_event_reader::{EventRecord, Mmap2FileId};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use object::{Object, ObjectSection, ObjectSymbol};
use profkit_native::{Binaries, Binary, BuildId, JitUnwindInfo, Mapping, Unwinder, UserRegs};

use crate::common::{programs, run};

/// One frame as perf script prints it: map-relative address, symbol, DSO, and the inline
/// frames perf listed before it (innermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScriptFrame {
    addr: u64,
    sym: String,
    dso: String,
    inlined: Vec<String>,
}

/// `perf script -F time,ip,sym,dso --ns`: samples by timestamp (ns).
fn perf_script(perf: &Path, data: &Path) -> HashMap<u64, Vec<ScriptFrame>> {
    let out = run(Command::new(perf)
        .args(["script", "-F", "time,ip,sym,dso", "--ns", "-i"])
        .arg(data));
    let mut samples = HashMap::new();
    let mut current: Option<(u64, Vec<ScriptFrame>)> = None;
    let mut pending_inline = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(time) = t.strip_suffix(':') {
            if let Some((_, frames)) = current.as_mut() {
                flush_inline_only(&mut pending_inline, frames);
            }
            if let Some((ts, frames)) = current.take() {
                samples.insert(ts, frames);
            }
            let (s, ns) = time.split_once('.').unwrap();
            let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
            current = Some((ts, Vec::new()));
            continue;
        }
        // "<hex addr> <sym> (<dso>)"; sym may be "[unknown]". Inline frames come before
        // their frame, with its address and "(inlined)" for the DSO.
        let (addr, rest) = t.split_once(' ').unwrap();
        let addr = u64::from_str_radix(addr, 16).unwrap();
        let (sym, dso) = rest.rsplit_once(" (").unwrap();
        let dso = dso.strip_suffix(')').unwrap().to_string();
        let frames = &mut current.as_mut().unwrap().1;
        if pending_inline.last().is_some_and(|&(a, _)| a != addr) {
            flush_inline_only(&mut pending_inline, frames);
        }
        if dso == "inlined" {
            pending_inline.push((addr, sym.to_string()));
            continue;
        }
        frames.push(ScriptFrame {
            addr,
            sym: sym.to_string(),
            dso,
            inlined: pending_inline.drain(..).map(|(_, f)| f).collect(),
        });
    }
    if let Some((ts, mut frames)) = current.take() {
        flush_inline_only(&mut pending_inline, &mut frames);
        samples.insert(ts, frames);
    }
    samples
}

/// perf 6.1 sometimes prints a frame as its inline frames alone, without the frame's own line
/// (`27304 __libc_start_main_impl (inlined)` and no `__libc_start_main` line): the frame is
/// there, its DSO unnamed. Its symbol is the outermost inlined function's.
fn flush_inline_only(pending: &mut Vec<(u64, String)>, frames: &mut Vec<ScriptFrame>) {
    let Some((addr, outer)) = pending.pop() else {
        return;
    };
    frames.push(ScriptFrame {
        addr,
        sym: outer,
        dso: INLINE_ONLY.into(),
        inlined: pending.drain(..).map(|(_, f)| f).collect(),
    });
}

/// The DSO of a frame perf printed only as inline frames.
const INLINE_ONLY: &str = "(inline frames only)";

/// The same frame: address and DSO (any DSO for a frame perf printed only as inline frames).
fn same_frame(ours: &ScriptFrame, perf: &ScriptFrame) -> bool {
    ours.addr == perf.addr && (ours.dso == perf.dso || perf.dso == INLINE_ONLY)
}

/// A sample's unwind inputs.
struct Sample {
    time: u64,
    regs: UserRegs,
    stack: Vec<u8>,
}

/// An executable file mapping of the process.
struct Map {
    path: PathBuf,
    mapping: Mapping,
    binary: Arc<Binary>,
}

fn read_recording(data: &Path, binaries: &mut Binaries) -> (Vec<Map>, Vec<Sample>) {
    let bytes = std::fs::read(data).unwrap();
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(Cursor::new(&bytes[..])).unwrap();
    let ids: HashMap<Vec<u8>, BuildId> = perf_file
        .build_ids()
        .unwrap()
        .into_values()
        .map(|d| (d.path, BuildId::new(&d.build_id)))
        .collect();
    let mask = perf_file.event_attributes()[0].attr.sample_regs_user;
    let mut maps = Vec::new();
    let mut samples = Vec::new();
    while let Some(record) = record_iter.next_record(&mut perf_file).unwrap() {
        let PerfFileRecord::EventRecord { record, .. } = record else {
            continue;
        };
        match record.parse().unwrap() {
            EventRecord::Mmap2(m) if m.pid > 0 && m.protection & 4 != 0 => {
                let raw = m.path.as_slice();
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(&raw));
                let id = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(BuildId::new(b)),
                    Mmap2FileId::InodeAndVersion(_) => ids.get(&raw[..]).cloned(),
                };
                if let Some(binary) = binaries.find(&path, id.as_ref()) {
                    let mapping = binary.mapping(m.address, m.length, m.page_offset).unwrap();
                    maps.push(Map {
                        path,
                        mapping,
                        binary,
                    });
                }
            }
            EventRecord::Sample(s) => {
                let (Some(regs), Some((stack, dyn_size))) = (s.user_regs, s.user_stack) else {
                    continue;
                };
                let values: Vec<u64> = (0..64)
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| regs.get(b).unwrap())
                    .collect();
                let mut stack = stack.as_slice().into_owned();
                stack.truncate(dyn_size as usize);
                samples.push(Sample {
                    time: s.timestamp.unwrap(),
                    regs: UserRegs::from_perf_x86_64(mask, &values).unwrap(),
                    stack,
                });
            }
            _ => {}
        }
    }
    (maps, samples)
}

/// Our frames for one sample, as perf script prints them.
fn our_frames(maps: &[Map], unwinder: &mut Unwinder, s: &Sample) -> Vec<ScriptFrame> {
    let mut addrs = vec![s.regs.ip];
    unwinder.unwind(s.regs, &s.stack, &mut addrs);
    // As the perf.data walk does: a "return address" in the stack (unmapped, within a MiB
    // above sp) ends the stack (the frame-pointer fallback where CFI is missing, as in crti's
    // `_init`, can read a stack address as one; perf stops there).
    let in_stack = |a: u64| {
        a.checked_sub(s.regs.sp).is_some_and(|d| d < 1 << 20)
            && !maps.iter().any(|m| m.mapping.contains(a))
    };
    let keep = addrs.iter().skip(1).take_while(|&&a| !in_stack(a)).count();
    addrs.truncate(keep + 1);
    addrs
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let Some(m) = maps.iter().rev().find(|m| m.mapping.contains(a)) else {
                return ScriptFrame {
                    addr: a,
                    sym: "[unknown]".into(),
                    dso: "[unknown]".into(),
                    inlined: vec![],
                };
            };
            let svma = m.mapping.to_svma(a);
            let probe = if i == 0 { svma } else { svma - 1 };
            let sym = m.binary.symbol(probe).map(|s| s.name.to_string());
            let inlined = m
                .binary
                .lookup(probe)
                .map(|l| {
                    let n = l.frames.len() - 1;
                    l.frames[..n]
                        .iter()
                        .map(|f| f.function.to_string())
                        .collect()
                })
                .unwrap_or_default();
            // perf script prints a return address minus one, as it looks it up.
            ScriptFrame {
                addr: probe,
                sym: sym.unwrap_or_else(|| "[unknown]".into()),
                dso: m.path.to_string_lossy().into_owned(),
                inlined,
            }
        })
        .collect()
}

/// Whether `dso`'s `.eh_frame` has an FDE for the SVMA `svma` (false for a file we did not map).
fn has_cfi(maps: &[Map], dso: &str, svma: u64) -> bool {
    let Some(m) = maps.iter().find(|m| m.path.to_string_lossy() == dso) else {
        return false;
    };
    let data = std::fs::read(m.binary.path()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let Some(section) = file.section_by_name(".eh_frame") else {
        return false;
    };
    let mut eh_frame = gimli::EhFrame::new(section.data().unwrap(), gimli::LittleEndian);
    eh_frame.set_address_size(8);
    let bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
    use gimli::UnwindSection;
    eh_frame
        .fde_for_address(&bases, svma, gimli::EhFrame::cie_from_offset)
        .is_ok()
}

/// `level2`'s code (AVMA range) and its FDE moved to a jitdump-style layout after the code.
fn level2_as_jit(maps: &[Map]) -> (u64, u64, Vec<u8>, Vec<u8>) {
    let m = maps
        .iter()
        .find(|m| m.path.ends_with("libmid.so"))
        .expect("libmid.so mapped");
    let data = std::fs::read(m.binary.path()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let level2 = file.symbols().find(|s| s.name() == Ok("level2")).unwrap();
    let (svma, size) = (level2.address(), level2.size());
    let code_addr = m.mapping.to_avma(svma);
    // Find level2's FDE (and its CIE) in libmid.so's .eh_frame.
    let section = file.section_by_name(".eh_frame").unwrap();
    let eh = section.data().unwrap();
    let mut eh_frame = gimli::EhFrame::new(eh, gimli::LittleEndian);
    eh_frame.set_address_size(8);
    let bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
    use gimli::UnwindSection;
    let fde = eh_frame
        .fde_for_address(&bases, svma, gimli::EhFrame::cie_from_offset)
        .unwrap();
    assert_eq!(fde.initial_address(), svma);
    let cie = fde.cie();
    assert_eq!(
        cie.fde_address_encoding(),
        Some(gimli::constants::DW_EH_PE_pcrel | gimli::constants::DW_EH_PE_sdata4)
    );
    let cie_bytes = &eh[cie.offset()..cie.offset() + 4 + cie.entry_len() as usize];
    let fde_off = fde.offset();
    let mut fde_bytes = eh[fde_off..fde_off + 4 + fde.entry_len() as usize].to_vec();
    // New .eh_frame: the CIE, then the FDE (CIE pointer and pc_begin rewritten), then a
    // terminator; placed at align8(code end), the header right after it.
    let eh_addr = (code_addr + size + 7) & !7;
    let mut new_eh = cie_bytes.to_vec();
    let fde_at = new_eh.len();
    fde_bytes[4..8].copy_from_slice(&((fde_at + 4) as u32).to_le_bytes());
    let field = eh_addr + fde_at as u64 + 8;
    fde_bytes[8..12].copy_from_slice(&(code_addr.wrapping_sub(field) as i32).to_le_bytes());
    new_eh.extend(&fde_bytes);
    new_eh.extend([0; 4]);
    let hdr = crate::jit::eh_frame_hdr(code_addr, eh_addr, fde_at, eh_addr + new_eh.len() as u64);
    (code_addr, size, new_eh, hdr)
}

#[test]
fn unwinds_like_perf_script() {
    let test = "perf::unwinds_like_perf_script";
    let Some(dir) = programs(test) else { return };
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let data = dir.join("perf.data");
    run(Command::new(&perf)
        .args(["record", "-q", "-e", "cpu-clock:u", "-F", "1999"])
        .args(["--call-graph", "dwarf,16384", "-o"])
        .arg(&data)
        .arg("--")
        .arg(dir.join("chain"))
        .arg("0.5"));
    let expected = perf_script(&perf, &data);

    let mut binaries = Binaries::new();
    let (maps, samples) = read_recording(&data, &mut binaries);
    assert!(samples.len() > 100, "only {} samples", samples.len());
    let mut unwinder = Unwinder::new();
    for m in &maps {
        unwinder.add_binary(&m.binary, &m.mapping);
    }

    let chain = dir.join("chain").to_string_lossy().into_owned();
    let libmid = dir.join("libmid.so").to_string_lossy().into_owned();
    // The CFI check below tells libmid.so's `_init` (no FDE) from its functions.
    let symbol = |name: &str| {
        let lib = maps.iter().find(|m| m.path.ends_with("libmid.so")).unwrap();
        let data = std::fs::read(lib.binary.path()).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let s = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        s.address()
    };
    assert!(has_cfi(&maps, &libmid, symbol("level2")));
    assert!(!has_cfi(&maps, &libmid, symbol("_init")));
    let mut full_chain = 0;
    let mut native = Vec::new();
    for s in &samples {
        let ours = our_frames(&maps, &mut unwinder, s);
        let want = expected
            .get(&s.time)
            .unwrap_or_else(|| panic!("perf script has no sample at {}", s.time));
        // The same frames (address and DSO); names and inline frames in our binaries (libc's
        // depend on the debug files perf found). perf stops where a frame has no CFI (a sample
        // in libmid.so's `_init`, run by ld.so); framehop goes on along the frame pointers, so
        // there ours may only add callers.
        let same_prefix =
            ours.len() >= want.len() && ours.iter().zip(want).all(|(o, w)| same_frame(o, w));
        let perf_stopped_without_cfi = want.last().is_some_and(|w| !has_cfi(&maps, &w.dso, w.addr));
        assert!(
            same_prefix && (ours.len() == want.len() || perf_stopped_without_cfi),
            "sample at {}: ours {ours:#?}\nperf script {want:#?}",
            s.time
        );
        for (o, w) in ours.iter().zip(want) {
            // A sample in a PLT stub: perf 6.1 names it `_init` (size 0 in `.init`, which
            // perf's symbol-end fixup stretches over the `.plt` that follows), profkit the stub
            // (`clock_gettime@plt`). Rare (a sample must land in the stub), so it is told here
            // rather than made to happen.
            let plt_stub = o.sym.ends_with("@plt") && w.sym == "_init";
            if (o.dso == chain || o.dso == libmid) && !plt_stub {
                assert_eq!(
                    (&o.sym, &o.inlined),
                    (&w.sym, &w.inlined),
                    "sample at {}",
                    s.time
                );
            }
        }
        let names: Vec<&str> = ours.iter().map(|f| f.sym.as_str()).collect();
        if names.starts_with(&["leaf", "level3", "level2", "level1", "main"]) {
            full_chain += 1;
        }
        native.push(ours);
    }
    assert!(
        full_chain * 10 >= samples.len() * 9,
        "{full_chain} of {} samples have the whole chain",
        samples.len()
    );

    // level2 as JIT code: the same stacks.
    let (code_addr, code_size, eh, hdr) = level2_as_jit(&maps);
    let lib = maps.iter().find(|m| m.path.ends_with("libmid.so")).unwrap();
    unwinder.remove(lib.mapping.start);
    let mut control = Unwinder::new();
    for m in maps.iter().filter(|m| !m.path.ends_with("libmid.so")) {
        control.add_binary(&m.binary, &m.mapping);
    }
    let placement = unwinder
        .add_jit(
            "level2",
            &JitUnwindInfo {
                code_addr,
                code_size,
                eh_frame: &eh,
                eh_frame_hdr: &hdr,
            },
        )
        .unwrap();
    assert!(!placement.shifted);
    let mut differ = 0;
    for (s, native) in samples.iter().zip(&native) {
        let addrs = |u: &mut Unwinder| {
            let mut out = vec![s.regs.ip];
            u.unwind(s.regs, &s.stack, &mut out);
            out
        };
        let jit = addrs(&mut unwinder);
        let want: Vec<u64> = native
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // Frames hold the looked-up address: return addresses minus one.
                let svma = if i == 0 { f.addr } else { f.addr + 1 };
                let m = maps
                    .iter()
                    .rev()
                    .find(|m| m.path.to_string_lossy() == f.dso);
                m.map_or(svma, |m| m.mapping.to_avma(svma))
            })
            .collect();
        assert_eq!(jit, want, "sample at {} with level2 as JIT code", s.time);
        if addrs(&mut control) != want {
            differ += 1;
        }
    }
    assert!(
        differ * 2 > samples.len(),
        "without level2's CFI only {differ} of {} stacks changed: the test proves nothing",
        samples.len()
    );
    for p in binaries.problems() {
        eprintln!("{test}: note: {p}");
    }
}
