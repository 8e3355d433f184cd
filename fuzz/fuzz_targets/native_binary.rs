#![no_main]
//! Any bytes as an ELF binary for perf.data symbolization: DWARF read one unit at a time and
//! whole, `Binary` lookups (cached = first answer), symbols and mappings
//! (`profkit_native::harness::check_binary`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    profkit_native::harness::check_binary(data);
});
