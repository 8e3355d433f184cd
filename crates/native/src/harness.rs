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
}
