//! What the file names of perf's `MMAP`/`MMAP2` records mean.
//!
//! perf records a file name for every executable mapping, but many are not files:
//! `[vdso]`, `[vsyscall]`, `[heap]`, `[stack]`, `[anon:…]` (named anonymous memory),
//! `[kernel.kallsyms]_text` and `[module]` (the kernel), `//anon` (anonymous memory, where
//! JIT code lives), `/memfd:…` (memfd mappings, e.g. Julia's dual-mapped JIT code),
//! `/dev/zero`, `/SYSV…` (shared memory), `anon_inode:…`. A JIT's `jit-<pid>.dump` is a real
//! file, mapped only as a marker so that perf sees it: it is not code either.
//!
//! Deleted files appear with a ` (deleted)` suffix; [`strip_deleted`] gives the path the file
//! had, which its build id may still find in a build-id cache.

use std::ffi::OsStr;
use std::path::Path;

/// Whether `path` can name an ELF file on disk: not a pseudo-path, not anonymous memory, not
/// a jitdump marker (see the [module docs](self)). A ` (deleted)` suffix is ignored.
pub fn is_file_backed(path: &Path) -> bool {
    if is_anonymous(path) {
        return false;
    }
    let path = strip_deleted(path);
    let Some(s) = path.to_str() else {
        // Not UTF-8: an odd but real file name.
        return path.is_absolute();
    };
    // Devices (`/dev/zero` is anonymous memory; `/dev/dri/…` and the like are no ELF files).
    if is_pseudo(s) || is_anonymous(path) || s.starts_with("/dev/") {
        return false;
    }
    if jitdump_pid(path).is_some() {
        return false;
    }
    s.starts_with('/')
}

/// Whether `path` is a bracketed pseudo-path (`[vdso]`, `[heap]`, `[kernel.kallsyms]_text`,
/// `[anon:name]`, a kernel module `[ext4]` …).
pub fn is_pseudo(path: &str) -> bool {
    path.starts_with('[')
}

/// Whether `path` names anonymous memory (where JIT code lives): the project's one
/// definition, [`profkit_common::anon::is_anonymous_memory`].
pub fn is_anonymous(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    profkit_common::anon::is_anonymous_memory(path.as_os_str().as_bytes())
}

/// Whether `path` is the kernel or a kernel module as perf names them
/// (`[kernel.kallsyms]`, `[kernel.kallsyms]_text`, `[guest.kernel.kallsyms]`, `[ext4]`), as
/// opposed to user-space pseudo-paths (`[vdso]`, `[vsyscall]`, `[heap]`, `[stack]`,
/// `[anon:…]`, `[uprobes]`, `[vvar]`).
pub fn is_kernel(path: &str) -> bool {
    if !path.starts_with('[') {
        return false;
    }
    if path.contains("kernel.kallsyms") {
        return true;
    }
    let user = [
        "[vdso]",
        "[vsyscall]",
        "[vvar]",
        "[vvar_vclock]",
        "[heap]",
        "[stack]",
        "[uprobes]",
        "[sigpage]",
        "[vectors]",
    ];
    !user.contains(&path) && !path.starts_with("[anon:") && !path.starts_with("[stack:")
}

/// The pid of a jitdump marker file name `…/jit-<pid>.dump` (perf's pattern), or `None`.
pub fn jitdump_pid(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix("jit-")?.strip_suffix(".dump")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `path` without a trailing ` (deleted)`.
pub fn strip_deleted(path: &Path) -> &Path {
    match path.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(s) => Path::new(s),
        None => path,
    }
}

/// The file name of `path` as an `OsStr` (for search by basename).
pub(crate) fn basename(path: &Path) -> Option<&OsStr> {
    path.file_name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_paths() {
        let fb = |s: &str| is_file_backed(Path::new(s));
        assert!(fb("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(fb("/tmp/a.out (deleted)"));
        for p in [
            "[vdso]",
            "[vsyscall]",
            "[heap]",
            "[stack]",
            "//anon",
            "/memfd:jit (deleted)",
            "[anon:v8]",
            "[kernel.kallsyms]_text",
            "/tmp/jit-1234.dump",
            "jit-1.dump",
            "",
            "relative/path",
            "/dev/zero",
            "anon_inode:[perf_event]",
        ] {
            assert!(!fb(p), "{p}");
        }
        assert!(fb("/tmp/jit-12a4.dump"));
        assert_eq!(jitdump_pid(Path::new("/tmp/jit-1234.dump")), Some(1234));
        assert_eq!(jitdump_pid(Path::new("/tmp/jit-.dump")), None);
        assert!(is_anonymous(Path::new("//anon")));
        assert!(is_anonymous(Path::new("[anon:JIT]")));
        assert!(!is_anonymous(Path::new("/bin/ls")));
        assert!(is_kernel("[kernel.kallsyms]_text"));
        assert!(is_kernel("[ext4]"));
        assert!(!is_kernel("[vdso]"));
        assert!(!is_kernel("[anon:x]"));
        assert!(!is_kernel("/bin/ls"));
        assert_eq!(
            strip_deleted(Path::new("/a/b (deleted)")),
            Path::new("/a/b")
        );
    }
}
