#![no_main]
//! `profkit inject` end to end: the ELF builder, layout, plan, unwind tables, line tables and
//! the perf.data writer. The first byte picks what is hostile: a jitdump (with the committed
//! node recording `tests/fixtures/perf/node-fp.data`, whose marker names pid 30519), or a
//! perf.data (with that recording's jitdump). The output goes to a temporary directory; inject
//! must return (an error or a report), never panic, and leave no temporary file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use profkit_inject::{inject_bytes, Options};
use profkit_model::feed::perf::jit::JitSearch;
use profkit_model::feed::perf::PerfOptions;

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/perf")
        .join(name);
    let raw = std::fs::read(&p).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        raw
    }
}

struct Fixed {
    recording: Vec<u8>,
    dump: Vec<u8>,
}

fn fixed() -> &'static Fixed {
    static F: OnceLock<Fixed> = OnceLock::new();
    F.get_or_init(|| Fixed {
        recording: fixture("node-fp.data"),
        dump: fixture("node-fp.jit-30519.dump.gz"),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = fixed();
    let (recording, dump): (&[u8], &[u8]) = if mode & 1 == 0 {
        (&f.recording, rest)
    } else {
        (rest, &f.dump)
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jit-30519.dump"), dump).unwrap();
    let output: PathBuf = dir.path().join("out.data");
    let options = Options {
        input: dir.path().join("in.data"),
        output: output.clone(),
        jit: Some(JitSearch {
            dirs: vec![dir.path().to_path_buf()],
            ..PerfOptions::isolated().jit
        }),
        elf_dir: None,
    };
    let _ = inject_bytes(&options, "fuzz", recording);
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        assert!(!e.file_name().to_string_lossy().ends_with(".tmp"));
    }
});
