#![no_main]
//! Kernel symbol tables (`/proc/kallsyms` text, or a recording's copy): `Kallsyms::parse` of
//! any bytes, then lookups at addresses taken from the input and at the table's edges. Never a
//! panic; an answer's address is at or below the one asked.

use libfuzzer_sys::fuzz_target;
use profkit_native::Kallsyms;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let k = Kallsyms::parse(&text);
    let _ = (k.len(), k.is_empty(), k.is_restricted());
    let mut addrs = vec![0u64, 1, u64::MAX, u64::MAX - 1, 0xffff_ffff_8100_0000];
    addrs.extend(
        data.chunks_exact(8)
            .take(64)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))),
    );
    for a in addrs {
        if let Some(s) = k.lookup(a) {
            assert!(s.start <= a, "{:#x} answered by {:#x}", a, s.start);
        }
    }
});
