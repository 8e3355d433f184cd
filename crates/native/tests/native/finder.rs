//! Finding binaries: the recorded path, perf's build-id cache (both layouts), a
//! `/usr/lib/debug`-style directory, search directories; build-id checks; the problems
//! list. Each layout is made in a temporary directory from the real test programs.

use std::os::unix::fs::symlink;
use std::path::Path;

use profkit_native::{Binaries, Binary, BuildId, ProblemKind};

use crate::common::programs;

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

#[test]
fn finds_by_path_cache_debug_dir_and_search_dir() {
    let test = "finder::finds_by_path_cache_debug_dir_and_search_dir";
    let Some(dir) = programs(test) else { return };
    let chain = dir.join("chain");
    let id = Binary::open(&chain).unwrap().build_id().unwrap().clone();
    let (xx, rest) = id.split_hex().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");

    // The recorded path, with and without a build id to check.
    let mut f = Binaries::empty();
    assert_eq!(f.find(&chain, Some(&id)).unwrap().path(), chain);
    assert_eq!(f.find(&chain, None).unwrap().path(), chain);

    // perf's cache today: .build-id/xx/rest -> ../../<path>/<hex> (a directory with `elf`).
    let gone = Path::new("/nonexistent/build/chain");
    let by_path = cache.join("nonexistent/build/chain").join(id.to_hex());
    copy(&chain, &by_path.join("elf"));
    std::fs::create_dir_all(cache.join(".build-id").join(&xx)).unwrap();
    symlink(
        format!("../../nonexistent/build/chain/{}", id.to_hex()),
        cache.join(".build-id").join(&xx).join(&rest),
    )
    .unwrap();
    let mut f = Binaries::empty().with_buildid_dir(Some(cache.clone()));
    let found = f.find(gone, Some(&id)).unwrap();
    assert!(found.path().ends_with("elf"), "{}", found.path().display());
    assert_eq!(found.build_id(), Some(&id));
    // Same answer from the cache of answers.
    assert!(std::sync::Arc::ptr_eq(
        &found,
        &f.find(gone, Some(&id)).unwrap()
    ));
    assert!(f.problems().is_empty());

    // By path only (no .build-id link), and for [vdso] (file `vdso`).
    std::fs::remove_file(cache.join(".build-id").join(&xx).join(&rest)).unwrap();
    let mut f = Binaries::empty().with_buildid_dir(Some(cache.clone()));
    assert_eq!(f.find(gone, Some(&id)).unwrap().path(), by_path.join("elf"));
    let vdso_dir = cache.join("[vdso]").join(id.to_hex());
    copy(&chain, &vdso_dir.join("vdso"));
    assert_eq!(
        f.find(Path::new("[vdso]"), Some(&id)).unwrap().path(),
        vdso_dir.join("vdso")
    );

    // Older perf: .build-id/xx/rest is a symlink to the file itself.
    let old = tmp.path().join("old");
    copy(&chain, &old.join("somewhere/chain"));
    std::fs::create_dir_all(old.join(".build-id").join(&xx)).unwrap();
    symlink(
        old.join("somewhere/chain"),
        old.join(".build-id").join(&xx).join(&rest),
    )
    .unwrap();
    let mut f = Binaries::empty().with_buildid_dir(Some(old));
    assert!(f.find(gone, Some(&id)).is_some());

    // A /usr/lib/debug-style directory: the stripped binary gets its DWARF from there.
    let debug = tmp.path().join("debug");
    copy(
        &dir.join("chain.debug"),
        &debug
            .join(".build-id")
            .join(&xx)
            .join(format!("{rest}.debug")),
    );
    let lone = tmp.path().join("lone/chain");
    copy(&dir.join("chain-stripped"), &lone);
    let mut f = Binaries::empty().with_debug_dirs(vec![debug.clone()]);
    let b = f.find(&lone, Some(&id)).unwrap();
    assert!(b.has_dwarf());
    assert!(b.debug_file().unwrap().starts_with(&debug));
    // With nothing else, the debug file itself stands in for the binary.
    let mut f = Binaries::empty().with_debug_dirs(vec![debug]);
    let b = f.find(gone, Some(&id)).unwrap();
    assert!(b.has_dwarf() && !b.has_unwind_info());

    // A search directory, by file name.
    let mut f = Binaries::empty();
    f.add_search_dir(dir);
    assert_eq!(f.find(gone, Some(&id)).unwrap().path(), chain);
    assert!(f.problems().is_empty());
}

#[test]
fn misses_are_reported_once() {
    let test = "finder::misses_are_reported_once";
    let Some(dir) = programs(test) else { return };
    let chain = dir.join("chain");
    let lib = dir.join("libmid.so");
    let id = Binary::open(&chain).unwrap().build_id().unwrap().clone();
    let mut f = Binaries::empty();
    // libmid.so exists but is not the build asked for.
    assert!(f.find(&lib, Some(&id)).is_none());
    assert!(f.find(&lib, Some(&id)).is_none());
    assert!(f.find(Path::new("/nonexistent/x"), None).is_none());
    let garbage = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(garbage.path(), b"not an ELF file").unwrap();
    assert!(f.find(garbage.path(), None).is_none());
    // Pseudo-paths without a build id are not looked for, and not reported.
    assert!(f.find(Path::new("//anon"), None).is_none());
    assert!(f.find(Path::new("[heap]"), None).is_none());
    let p = f.problems();
    assert_eq!(p.len(), 3, "{p:#?}");
    let lib_id = Binary::open(&lib).unwrap().build_id().cloned();
    assert_eq!(
        p[0].kind,
        ProblemKind::BuildIdMismatch {
            candidate: lib.clone(),
            found: lib_id
        }
    );
    assert!(p[0].to_string().contains("is another build"), "{}", p[0]);
    assert_eq!(p[1].kind, ProblemKind::NotFound);
    assert!(matches!(p[2].kind, ProblemKind::Unreadable { .. }));
    // A 16-byte id zero-padded to perf's 20 bytes still matches; another id does not.
    let padded = {
        let mut b = id.as_bytes().to_vec();
        b.truncate(16);
        b.extend([0; 4]);
        BuildId::new(&b)
    };
    assert!(!padded.matches(&id));
}

#[test]
fn kallsyms_path_prefers_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let id = BuildId::from_hex("00112233445566778899aabbccddeeff00112233").unwrap();
    let p = tmp
        .path()
        .join("[kernel.kallsyms]")
        .join(id.to_hex())
        .join("kallsyms");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "ffffffff81000000 T _stext\n").unwrap();
    let f = Binaries::empty().with_buildid_dir(Some(tmp.path().to_path_buf()));
    assert_eq!(f.kallsyms_path(Some(&id)), Ok(p.clone()));
    // Another kernel's id: not /proc/kallsyms either (unless it is the running kernel's).
    let other = BuildId::from_hex("ff").unwrap();
    assert!(f.kallsyms_path(Some(&other)).is_err());
    // perf inject's copy of this machine's /proc/kallsyms under another kernel's id is not
    // that kernel's symbols.
    let Ok(running) = std::fs::read("/proc/kallsyms") else {
        return;
    };
    std::fs::write(&p, running).unwrap();
    let why = f.kallsyms_path(Some(&id)).unwrap_err();
    assert!(why.contains("this machine's /proc/kallsyms"), "{why}");
}

/// One binary named by many spellings (`dir/./sub/../small-pie`) is searched and held once:
/// answers are keyed by (device, inode), and the prefetching threads are bounded (B3).
#[test]
fn spellings_of_one_file_share_one_binary() {
    let pie = profkit_testkit::fixture("native/small-pie");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    let file = tmp.path().join("small-pie");
    std::fs::copy(&pie, &file).unwrap();
    let spellings: Vec<std::path::PathBuf> = (0..100)
        .map(|i| {
            let mut p = tmp.path().to_path_buf();
            for _ in 0..i {
                p = p.join("sub").join("..");
            }
            p.join("small-pie")
        })
        .collect();
    let mut f = Binaries::empty();
    for p in &spellings {
        f.prefetch(p, None);
    }
    let first = f.find(&spellings[0], None).unwrap();
    for p in &spellings {
        assert!(std::sync::Arc::ptr_eq(&first, &f.find(p, None).unwrap()));
    }
    assert!(f.problems().is_empty());
}
