//! What inject does with recordings it cannot (fully) inject, without perf: a clock other
//! than CLOCK_MONOTONIC, a missing jitdump (then found with --jit-dir), a perf-map-only
//! process, a pipe-mode recording, cut and corrupt inputs.

use std::path::Path;

use profkit_inject::{inject, Options, Report};
use profkit_perf::PerfData;

use crate::{fixture, fixture_named, stage};

fn run(input: &Path, out: &Path, dirs: &[&Path]) -> Result<Report, profkit_inject::Error> {
    inject(&Options {
        input: input.to_path_buf(),
        output: out.to_path_buf(),
        jit: Some(profkit_jit::JitSearch::new(
            Some(input),
            dirs.iter().map(|d| d.to_path_buf()).collect(),
        )),
        elf_dir: None,
    })
}

/// Clears `use_clockid` (attr flags bit 25) in every copy of the recording's attr.
fn without_clockid(bytes: &mut [u8]) {
    let pd = PerfData::parse(bytes).unwrap();
    let h = pd.header();
    let at = h.attrs.offset as usize;
    let attr = bytes[at..at + (h.attr_size as usize - 16)].to_vec();
    let mut k = 0;
    while let Some(p) = bytes[k..].windows(attr.len()).position(|w| w == attr) {
        let flags = k + p + 40;
        bytes[flags + 3] &= !(1 << 1); // bit 25 = byte 3, bit 1
        k = k + p + 1;
    }
}

#[test]
fn refuses_without_a_monotonic_clock() {
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let mut bytes = std::fs::read(&input).unwrap();
    without_clockid(&mut bytes);
    assert!(!PerfData::parse(&bytes).unwrap().attrs()[0].use_clockid);
    std::fs::write(&input, bytes).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&input, &out, &[]).unwrap();
    assert_eq!(r.processes.len(), 1);
    assert_eq!(r.processes[0].status, "refused");
    assert!(
        r.warnings.iter().any(|w| w.contains("-k 1")),
        "{:?}",
        r.warnings
    );
    assert_eq!((r.mmap2_added, r.elfs_written), (0, 0));
    // The output is still the recording, readable.
    let out = std::fs::read(&out).unwrap();
    assert!(PerfData::parse(&out).unwrap().events().is_ok());
}

#[test]
fn a_missing_jitdump_is_reported_and_found_with_jit_dir() {
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let name = fixture_named("node-fp.jit-");
    let dump = format!(
        "jit-{}.dump",
        name.trim_start_matches("node-fp.jit-")
            .trim_end_matches(".dump.gz")
    );
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::rename(dir.path().join(&dump), elsewhere.path().join(&dump)).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&input, &out, &[]).unwrap();
    assert_eq!(r.processes[0].status, "jitdump not found");
    assert!(r.processes[0].samples_in_anon_exec > 0);
    assert!(r.warnings.iter().any(|w| w.contains("--jit-dir")));
    let r = run(&input, &out, &[elsewhere.path()]).unwrap();
    assert_eq!(r.processes[0].status, "injected");
    assert!(r.mmap2_added > 0);
}

#[test]
fn perf_map_processes_are_injected() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("basic.data");
    std::fs::write(&input, fixture("node-basic-prof.data")).unwrap();
    let map = fixture_named("node-basic-prof.perf-");
    let pid = map
        .trim_start_matches("node-basic-prof.perf-")
        .trim_end_matches(".map");
    let maps = tempfile::tempdir().unwrap();
    std::fs::write(maps.path().join(format!("perf-{pid}.map")), fixture(&map)).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&input, &out, &[maps.path()]).unwrap();
    let p = r
        .processes
        .iter()
        .find(|p| p.pid.to_string() == pid)
        .unwrap();
    // The map's functions go to an ELF (no code: zeros), so that perf report names them
    // wherever the map was found (perf itself reads only /tmp/perf-<pid>.map).
    assert_eq!(p.status, "perf map injected");
    assert!(p
        .perf_map
        .as_deref()
        .unwrap()
        .ends_with(&format!("perf-{pid}.map")));
    assert!(p.functions > 100, "{} functions", p.functions);
    assert!(r.mmap2_added > 0);
    assert!(!p.elfs.is_empty());
    assert!(profkit_inject::default_elf_dir(&out).exists());
}

#[test]
fn pipe_mode_becomes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pipe.data");
    std::fs::write(&input, fixture("node-pipe.data")).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&input, &out, &[]).unwrap();
    assert!(r.records > 300);
    let bytes = std::fs::read(&out).unwrap();
    let pd = PerfData::parse(&bytes).unwrap();
    assert_eq!(pd.header().mode, profkit_perf::Mode::File);
    assert!(pd.meta().problems.is_empty());
}

#[test]
fn cut_and_corrupt_inputs_do_not_panic() {
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let whole = std::fs::read(&input).unwrap();
    let out = dir.path().join("out.data");
    let cut = dir.path().join("cut.data");
    for n in [
        0,
        7,
        104,
        300,
        whole.len() / 3,
        whole.len() / 2,
        whole.len() - 9,
    ] {
        std::fs::write(&cut, &whole[..n]).unwrap();
        let _ = run(&cut, &out, &[]);
    }
    // A cut jitdump: what is complete is injected.
    let name = fixture_named("node-fp.jit-");
    let dump = dir.path().join(format!(
        "jit-{}.dump",
        name.trim_start_matches("node-fp.jit-")
            .trim_end_matches(".dump.gz")
    ));
    let full = std::fs::read(&dump).unwrap();
    for n in [0, 20, 40, 1000, full.len() / 2] {
        std::fs::write(&dump, &full[..n]).unwrap();
        let r = run(&input, &out, &[]).unwrap();
        assert_eq!(r.processes.len(), 1, "cut at {n}");
    }
    // Garbage in the dump's records.
    let mut bad = full.clone();
    for (k, b) in bad.iter_mut().enumerate().skip(40).step_by(97) {
        *b = (k as u8).wrapping_mul(31);
    }
    std::fs::write(&dump, &bad).unwrap();
    let _ = run(&input, &out, &[]).unwrap();
}

#[test]
fn hostile_dumps_stay_bounded() {
    use profkit_jitdump::write::{CodeLoadData, HeaderOptions, JitDumpWriter};
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let name = fixture_named("node-fp.jit-");
    let pid: u32 = name
        .trim_start_matches("node-fp.jit-")
        .trim_end_matches(".dump.gz")
        .parse()
        .unwrap();
    let dump = dir.path().join(format!("jit-{pid}.dump"));
    let (t0, _) = profkit_inject::dump::load(&dump)
        .unwrap()
        .time_range
        .unwrap();
    let mut w = JitDumpWriter::new(
        Vec::new(),
        &HeaderOptions {
            pid,
            elf_mach: 62,
            ..HeaderOptions::default()
        },
    )
    .unwrap();
    let code = [0xc3u8; 16];
    let mut load = |t: u64, index: u64, addr: u64, code: Option<&[u8]>, size: u64| {
        let mut l = CodeLoadData::new(index, addr, &[], "f");
        l.timestamp = t0 + t;
        l.pid = pid;
        l.code = code;
        l.code_size = size;
        w.write_code_load(&l).unwrap();
    };
    // One address reused 100 times; a code-less load claiming 1 TiB; 5,000 claiming 1 MiB.
    for k in 0..100 {
        load(k, k, 0x7f00_0000_0000, Some(&code), 16);
    }
    load(200, 200, 0x7f10_0000_0000, None, 1 << 40);
    for k in 0..5000u64 {
        load(
            300 + k,
            300 + k,
            0x7f20_0000_0000 + k * (2 << 20),
            None,
            1 << 20,
        );
    }
    std::fs::write(&dump, w.into_inner()).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&input, &out, &[]).unwrap();
    assert_eq!(r.processes[0].status, "injected");
    assert!(
        r.warnings.iter().any(|w| w.contains("reused more than")),
        "{:?}",
        r.warnings
    );
    assert!(r.warnings.iter().any(|w| w.contains("without code bytes")));
    let elf_dir = profkit_inject::default_elf_dir(&out);
    let total: u64 = std::fs::read_dir(&elf_dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total < 200 << 20, "{total} bytes of ELFs");
    // Code-less functions are zero-filled up to 64 KiB each and 64 MiB in all (here: 1,024
    // of them), the rest left out.
    assert!(
        r.warnings.iter().any(|w| w.contains("left out")),
        "{:?}",
        r.warnings
    );
    // 64 layers at the reused address; layer 0 also has the 1 TiB load and 2 GiB of 64 KiB
    // loads (1-GiB spans).
    assert!(
        r.elfs_written < profkit_inject::layout::LAYER_MAX + 6,
        "{}",
        r.elfs_written
    );
}

#[test]
fn gzip_input_is_unwrapped() {
    let (dir, input) = stage("node-dwarf.data.gz", "node-dwarf.jit-");
    let raw = std::fs::read(&input).unwrap();
    let gz = dir.path().join("perf.data.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &raw).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let out = dir.path().join("out.data");
    let r = run(&gz, &out, &[]).unwrap();
    assert_eq!(r.processes[0].status, "injected");
    assert!(run(&input, Path::new("-"), &[]).is_err());
}

/// Nothing is written outside what the user named (B6, B7): `-o DIR` is an error before any
/// ELF is written, an `OUT-jit` that is a symbolic link is refused (its target untouched), and
/// a successful run leaves no temporary file; ELFs of an earlier run are not deleted.
#[test]
fn writes_only_what_the_user_named() {
    let (dir, input) = stage("node-fp.data", "node-fp.jit-");
    let listing = |p: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // -o DIR.
    let out_dir = dir.path().join("outdir");
    std::fs::create_dir(&out_dir).unwrap();
    let before = listing(dir.path());
    let e = run(&input, &out_dir, &[]).unwrap_err().to_string();
    assert!(e.contains("outdir") && e.contains("directory"), "{e}");
    assert_eq!(listing(dir.path()), before);
    assert!(listing(&out_dir).is_empty());

    // OUT-jit is a link to someone else's directory.
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("profkit-jit-1-0.so"), "theirs").unwrap();
    let out = dir.path().join("out.data");
    std::os::unix::fs::symlink(victim.path(), dir.path().join("out.data-jit")).unwrap();
    let e = run(&input, &out, &[]).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    assert_eq!(listing(victim.path()), ["profkit-jit-1-0.so"]);
    assert!(!out.exists());
    std::fs::remove_file(dir.path().join("out.data-jit")).unwrap();

    // A normal run: the output, its ELFs, no temporary files; an earlier run's stray ELF stays.
    std::fs::create_dir(dir.path().join("out.data-jit")).unwrap();
    std::fs::write(dir.path().join("out.data-jit/profkit-jit-1-0.so"), "old").unwrap();
    let r = run(&input, &out, &[]).unwrap();
    assert!(r.elfs_written > 0);
    let jit = listing(&dir.path().join("out.data-jit"));
    assert!(jit.iter().all(|n| !n.contains(".tmp")), "{jit:?}");
    assert_eq!(jit.len(), r.elfs_written + 1, "{jit:?}");
    assert!(listing(dir.path()).iter().all(|n| !n.contains(".tmp")));
    assert!(PerfData::parse(&std::fs::read(&out).unwrap()).is_ok());
}
