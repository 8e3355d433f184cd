//! A jitdump read for injection: profkit-jit's [`LoadedDump`] with its code bytes (regions
//! with load and end times, line tables, unwinding info, and each region's code, kept in the
//! mapped file), or a perf map's functions as one.

use std::path::Path;

use profkit_jit::discovery::LoadedMap;
use profkit_jit::{CodeMap, LoadedDump};

/// A jitdump (or a perf map) with its code: profkit-jit's loaded dump.
pub type JitImage = LoadedDump;

/// A perf map as an image to inject: its functions (the code live at the end, as perf reads
/// a map) without code bytes — their `.text` is zeros — each live from `time(start, end)`
/// (after the anonymous mapping it is in was recorded, so that the ELF's MMAP2 is not
/// replaced by it). Perf maps say nothing of the machine: `elf_mach` is the recording's.
pub fn from_perf_map(
    loaded: &LoadedMap,
    pid: u32,
    elf_mach: u32,
    time: impl Fn(u64, u64) -> u64,
) -> JitImage {
    let map = CodeMap::from_entries(
        pid,
        loaded.map.iter().map(|(start, e)| {
            let end = start.saturating_add(e.size);
            (
                start,
                e.size,
                String::from_utf8_lossy(&e.name).into_owned(),
                time(start, end),
            )
        }),
    );
    LoadedDump::without_code(loaded.path.clone(), pid, elf_mach, map)
}

/// Reads the jitdump at `path`, with its code bytes.
pub fn load(path: &Path) -> Result<JitImage, String> {
    profkit_jit::load_jitdump_with_code(path)
}
