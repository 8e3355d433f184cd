//! Checks shared by the fuzz target `native_binary` (`fuzz/fuzz_targets/native_binary.rs`)
//! and the test that replays its saved inputs, so both run exactly the same code. Not part of
//! the supported API: each function panics when the crate breaks one of its own promises
//! (which is what a fuzzer looks for); on any input it must otherwise return normally.
#![allow(clippy::panic)]

use std::sync::Arc;

use profkit_common::FileBytes;

use crate::binary::dwarf;
use crate::Binary;

/// Any bytes as an ELF file: its DWARF read one unit at a time and read whole, at every probe
/// (its function symbols, at most 64, and a few addresses taken from the bytes); then
/// [`Binary`]'s lookups (twice: the cached answer must be the first), symbol lookups and
/// mappings.
///
/// The two DWARF readings are not required to agree here: on a corrupt file they may not
/// (one bad unit header makes addr2line's whole-file context answer nothing, while the units
/// read on their own still answer). That they agree on real files is a test of
/// `binary::dwarf` (glibc's debug file, the test binary).
pub fn check_binary(data: &[u8]) {
    let bytes = Arc::new(FileBytes::Owned(data.to_vec()));
    let mut probes = dwarf::probes(data, 64);
    probes.extend(
        data.chunks_exact(8)
            .take(4)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
    );
    let _ = dwarf::both_ways(&bytes, &probes);
    let Ok(bin) = Binary::from_bytes("fuzz", data.to_vec()) else {
        return;
    };
    for &p in &probes {
        let first = bin.lookup(p);
        if bin.lookup(p) != first {
            panic!("at {p:#x}: a cached lookup differs from the first");
        }
        let _ = bin.symbol(p);
    }
    for s in bin.segments().iter().take(4) {
        let _ = bin.mapping(0x7f00_0000_0000, s.mem_size, s.file_offset);
    }
    check_debug_file(data, &probes);
}

/// The file as the debug file of a copy of itself without DWARF (its section names spoiled):
/// attached by its bytes (DWARF loaded on a thread, symbols read once) and attached opened as a
/// binary, the two must agree on whether it is taken and on every answer.
fn check_debug_file(data: &[u8], probes: &[u64]) {
    let mut stripped = data.to_vec();
    let mut i = 0;
    while let Some(at) = stripped
        .get(i..)
        .and_then(|rest| memchr::memmem::find(rest, b"debug_"))
    {
        if let Some(name) = stripped.get_mut(i + at..i + at + 6) {
            name.copy_from_slice(b"nodbg_");
        }
        i += at + 6;
    }
    let (Ok(mut by_bytes), Ok(mut opened), Ok(debug)) = (
        Binary::from_bytes("stripped", stripped.clone()),
        Binary::from_bytes("stripped", stripped),
        Binary::from_bytes("debug", data.to_vec()),
    ) else {
        return;
    };
    let attached = by_bytes.attach_debug_data(
        std::path::Path::new("debug"),
        Arc::new(FileBytes::Owned(data.to_vec())),
    );
    let set = (debug.has_dwarf() || debug.symbol_count() > opened.symbol_count())
        && opened.set_debug_file(debug);
    if attached != set {
        panic!("attached by bytes: {attached}, opened and set: {set}");
    }
    for &p in probes {
        if by_bytes.lookup(p) != opened.lookup(p) {
            panic!("at {p:#x}: the debug file attached by bytes answers otherwise");
        }
    }
}
