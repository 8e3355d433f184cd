//! Cut and corrupted ELF files: errors or fewer answers, never a panic. The committed
//! fixture (tests/fixtures/native/small-pie, see its README) is cut at every offset of its
//! headers and at a stride after, and flipped byte by byte in its headers; each result that
//! opens is looked up, mapped and given to an unwinder.

use profkit_native::{Binary, Unwinder, UserRegs};

fn exercise(b: &Binary) {
    let _ = b.build_id();
    let _ = b.debuglink();
    let m = b.mapping(0x5555_0000_0000, 0x10_0000, 0x1000);
    for svma in [0u64, 0x1000, 0x1100, 0x1200, 0x1234, u64::MAX] {
        let _ = b.lookup(svma);
        let _ = b.symbol(svma);
    }
    let syms: Vec<_> = b.symbols().map(|s| s.0).take(50).collect();
    for s in syms {
        let _ = b.lookup(s);
        let _ = b.lookup(s.wrapping_add(3));
    }
    if let Some(m) = m {
        let mut u = Unwinder::new();
        u.add_binary(b, &m);
        let mut out = Vec::new();
        let stack: Vec<u8> = (0..512u32)
            .flat_map(|i| (0x5555_0000_1000u64 + u64::from(i)).to_le_bytes())
            .collect();
        for ip in [m.start, m.start + 0x100, m.start + 0x234] {
            u.unwind(
                UserRegs {
                    ip,
                    sp: 0x7ffd_0000_0000,
                    bp: 0x7ffd_0000_0010,
                },
                &stack,
                &mut out,
            );
        }
    }
}

#[test]
fn truncated_at_many_offsets() {
    let bytes = profkit_testkit::read_fixture("native/small-pie");
    let full = Binary::from_bytes("small-pie", bytes.clone()).unwrap();
    assert!(full.has_dwarf() && full.symbol_count() > 5);
    exercise(&full);
    let mut offsets: Vec<usize> = (0..2048.min(bytes.len())).collect();
    offsets.extend((2048..bytes.len()).step_by(61));
    // The section table is at the end, so object refuses every cut: each must be an error
    // that names the file (and whatever opens must survive every query).
    for cut in offsets {
        match Binary::from_bytes("small-pie", bytes[..cut].to_vec()) {
            Ok(b) => exercise(&b),
            Err(e) => assert!(e.to_string().starts_with("small-pie: "), "{e}"),
        }
    }
}

#[test]
fn corrupted_headers() {
    let bytes = profkit_testkit::read_fixture("native/small-pie");
    for i in 0..bytes.len().min(4096) {
        for v in [0x00, 0xff, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= v | 1;
            if let Ok(b) = Binary::from_bytes("x", b) {
                exercise(&b);
            }
        }
    }
    // Section headers and the symbol table near the end too.
    let n = bytes.len();
    for i in (n.saturating_sub(3000)..n).step_by(3) {
        let mut b = bytes.clone();
        b[i] = !b[i];
        if let Ok(b) = Binary::from_bytes("x", b) {
            exercise(&b);
        }
    }
}

#[test]
fn not_elf() {
    for bytes in [
        &b""[..],
        b"\x7fELF",
        b"#!/bin/sh\necho hi\n",
        &[0u8; 64],
        b"MZ\x90\0",
    ] {
        let e = Binary::from_bytes("garbage", bytes.to_vec()).unwrap_err();
        assert!(e.to_string().starts_with("garbage: "));
    }
    let e = Binary::open("/nonexistent/file").unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/file: "), "{e}");
}

#[test]
fn real_binaries_cut() {
    // The runtime-built programs too (bigger DWARF), at a coarser stride.
    let test = "malformed::real_binaries_cut";
    let Some(dir) = crate::common::programs(test) else {
        return;
    };
    for name in ["chain", "libmid.so", "chain.debug", "chain-stripped"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        for cut in (0..bytes.len()).step_by(97) {
            if let Ok(b) = Binary::from_bytes(name, bytes[..cut].to_vec()) {
                exercise(&b);
            }
        }
    }
}

/// The DWARF of the committed fixture (gcc: `.debug_aranges`, so read one unit at a time),
/// with every byte of its DWARF sections flipped, read both ways: nothing may panic
/// (`harness::check_binary`, the fuzz target's check).
#[test]
fn dwarf_read_by_unit_survives_corrupted_sections() {
    let bytes = profkit_testkit::read_fixture("native/small-pie");
    profkit_native::harness::check_binary(&bytes);
    // .debug_aranges, .debug_info and .debug_abbrev: 0x3047..0x37dd (readelf -S).
    for i in 0x3047..0x37dd {
        for v in [0x01, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= v;
            profkit_native::harness::check_binary(&b);
        }
    }
}

/// A recording can name any path as a binary: procfs files (size 0, read without end), FIFOs
/// (an open blocks), devices, directories and small or non-ELF files are refused before a
/// byte is read, with the path in the error (B2).
#[test]
fn only_regular_elf_files_are_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let text = dir.path().join("text");
    std::fs::write(&text, vec![b'x'; 4096]).unwrap();
    let tiny = dir.path().join("tiny");
    std::fs::write(&tiny, b"\x7fELF").unwrap();
    let started = std::time::Instant::now();
    for p in [
        std::path::PathBuf::from("/proc/self/pagemap"),
        "/dev/zero".into(),
        "/dev/urandom".into(),
        dir.path().to_path_buf(),
        fifo,
        text,
        tiny,
    ] {
        let err = Binary::open(&p).unwrap_err().to_string();
        assert!(err.contains(&*p.to_string_lossy()), "{err}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
